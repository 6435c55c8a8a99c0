"""Doris-style debug points, for faults the network cannot make (tests only).

With `enable_debug_points = true`, FE and BE serve Doris' API:
`POST /api/debug_point/add/{name}[?timeout=<seconds>&execute=<times>]`,
`POST /api/debug_point/remove/{name}`, `POST /api/debug_point/clear` (answer
`{"msg": "OK", "code": 0}`; 403 when debug points are off). Code reaches a point with
`await points.park(name)`: while the point is set it waits (until the point's timeout passes
or it is removed), then goes on; `execute` bounds how many times it fires.

Points served (see docs/ARCHITECTURE.md "Cluster"): `ingest_worker.wal_fsync` (the BE's ingest
worker parks before each WAL fsync, the canary's too; it lives in the worker process and
is bounded by its timeout), `stream_load.forwarded` (a BE parks a load that another BE
forwarded to it before reading a byte of it: the #64708 signature, TCP connects and the
handler never runs), `stream_load.storage_write` (a BE parks rowset writes of loads and
canaries: storage I/O that does not answer), `heartbeat.handler` (a BE parks the FE's
heartbeats: the FE sees it dead while clients and peer BEs still reach it).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from aiohttp import web


@dataclass
class _Point:
    until: float  # time.monotonic(); inf: no timeout
    remaining: int  # executions left; -1: unbounded


class DebugPoints:
    def __init__(self, enabled: bool, on_change=None):
        self.enabled = enabled
        self.points: dict[str, _Point] = {}
        self.on_change = on_change  # (name, seconds or 0 when removed): e.g. relay to a worker process

    def is_set(self, name: str) -> bool:
        point = self.points.get(name)
        if point is None:
            return False
        if time.monotonic() >= point.until or point.remaining == 0:
            self.points.pop(name, None)
            return False
        return True

    async def park(self, name: str) -> None:
        """Wait while the point `name` is set (no cost when debug points are off or unset)."""
        if not self.points or not self.is_set(name):
            return
        point = self.points[name]
        if point.remaining > 0:
            point.remaining -= 1
        while self.points.get(name) is point and time.monotonic() < point.until:
            await asyncio.sleep(min(0.05, max(0.0, point.until - time.monotonic())))

    def add(self, name: str, timeout_s: float | None, execute: int | None) -> None:
        until = time.monotonic() + timeout_s if timeout_s and timeout_s > 0 else float("inf")
        self.points[name] = _Point(until=until, remaining=execute if execute and execute > 0 else -1)
        if self.on_change is not None:
            self.on_change(name, timeout_s if timeout_s and timeout_s > 0 else 3600.0)

    def remove(self, name: str) -> None:
        self.points.pop(name, None)
        if self.on_change is not None:
            self.on_change(name, 0)

    def clear(self) -> None:
        for name in list(self.points):
            self.remove(name)

    # --- Doris' HTTP API ----------------------------------------------------------------
    def routes(self) -> list:
        return [
            web.post("/api/debug_point/add/{name}", self._add),
            web.post("/api/debug_point/remove/{name}", self._remove),
            web.post("/api/debug_point/clear", self._clear),
        ]

    def _refusal(self) -> web.Response | None:
        if self.enabled:
            return None
        return web.json_response(
            {
                "msg": "Disable debug points. please check config enable_debug_points.",
                "code": 1,
                "data": None,
            },
            status=403,
        )

    async def _add(self, request: web.Request) -> web.Response:
        if (refusal := self._refusal()) is not None:
            return refusal
        try:
            timeout = float(request.query["timeout"]) if "timeout" in request.query else None
            execute = int(request.query["execute"]) if "execute" in request.query else None
        except ValueError as e:
            return web.json_response({"msg": f"bad parameter: {e}", "code": 1, "data": None}, status=400)
        self.add(request.match_info["name"], timeout, execute)
        return web.json_response({"msg": "OK", "code": 0, "data": None, "count": 0})

    async def _remove(self, request: web.Request) -> web.Response:
        if (refusal := self._refusal()) is not None:
            return refusal
        self.remove(request.match_info["name"])
        return web.json_response({"msg": "OK", "code": 0, "data": None, "count": 0})

    async def _clear(self, request: web.Request) -> web.Response:
        if (refusal := self._refusal()) is not None:
            return refusal
        self.clear()
        return web.json_response({"msg": "OK", "code": 0, "data": None, "count": 0})
