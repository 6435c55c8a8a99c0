"""The FE's write canary: liveness is not writability (the lesson of apache/doris#64708).

In that incident a BE-to-BE socket went bad, every write parked for 534 s and failed, while
heartbeats and reads stayed healthy and SHOW BACKENDS said `Alive=true` for hours. Here the FE
sends every BE, every `be_canary_interval_second`, a one-row load through the BE's real write
path (`galene/be/health.py`: header parse → FE txn begin → parse → routing → WAL record +
fdatasync in the ingest worker → rowset write + fsync to the storage root → FE commit, plus
the BE→BE path when forwarding or WAL replication is on), each stage under its own deadline within
`be_canary_timeout_second`. A BE whose canary failed `be_canary_failure_times` rounds in a
row is `Writable=false`: no load is routed to it (`BackendMonitor.load_available`) until a
canary succeeds again.

Timing: a canary starts every interval; after a failure the next one starts at once, and
while a BE is not writable every second (so it heals within about a second of its fault
ending). A write path that breaks is therefore seen at the latest 2 × interval + timeout
later. A BE that comes up (first heartbeat answer, back from down, restarted) is probed at
once (`probe_now`, from the heartbeat): the node is ready for loads
(`BackendMonitor.load_ready`: the banner, /api/health) once a BE passed a canary since it came
up. A BE never probed yet stays writable: only a failed canary takes it out of routing.

The canary's transactions are of a CANARY kind (`CanaryTxns`): begun and committed through
the FE's internal API like any load's, under the catalog lock, but never journaled and never
visible; the BE deletes the canary's files after its answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import threading
import time

from aiohttp import web

from galene.catalog.properties import replication_num
from galene.net.deadline import DeadlineExceeded
from galene.net.server import read_json_object

log = logging.getLogger(__name__)

HEAL_PERIOD_S = 1.0  # canary cadence while a BE is not writable
MARGIN_S = 0.3  # the BE answers this long before the FE's deadline of the call


class CanaryTxns:
    """Transactions of the CANARY kind: ids, begin and commit under the catalog lock, no journal."""

    def __init__(self, catalog_lock: threading.RLock | threading.Lock | None):
        self._lock = catalog_lock
        self._ids = itertools.count(1)
        self.open: dict[int, float] = {}

    def _locked(self, fn):
        if self._lock is None:
            return fn()
        with self._lock:
            return fn()

    def begin(self) -> int:
        txn_id = -next(self._ids)  # negative: never a real txn id

        def take() -> None:
            self.open[txn_id] = time.monotonic()
            cutoff = time.monotonic() - 600
            for stale in [t for t, at in self.open.items() if at < cutoff]:
                self.open.pop(stale, None)

        self._locked(take)
        return txn_id

    def commit(self, txn_id: int) -> bool:
        return self._locked(lambda: self.open.pop(txn_id, None) is not None)


class CanaryMonitor:
    def __init__(self, fe, *, interval_s: float, timeout_s: float, failure_times: int):
        self.fe = fe
        self.interval_s = float(interval_s)
        self.timeout_s = float(timeout_s)
        self.failure_times = max(1, int(failure_times))
        self.txns = CanaryTxns(getattr(fe.catalog, "lock", None) if getattr(fe, "catalog", None) else None)
        self._loops: dict[int, asyncio.Task] = {}
        self._wake: dict[int, asyncio.Event] = {}  # probe_now: run a BE's next canary at once
        self._task: asyncio.Task | None = None

    @property
    def enabled(self) -> bool:
        return self.interval_s > 0

    # --- lifecycle ------------------------------------------------------------------
    def start(self) -> None:
        if self.fe.catalog is not None:
            self.txns = CanaryTxns(getattr(self.fe.catalog, "lock", None))
        if self.enabled:
            self._task = asyncio.create_task(self._reconcile(), name="fe-canary")

    async def stop(self) -> None:
        tasks = [t for t in (self._task, *self._loops.values()) if t is not None]
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t

    def probe_now(self, be_id: int) -> None:
        """Run `be_id`'s canary now (it just came up), starting its loop if there is none yet."""
        if not self.enabled or self._task is None:
            return
        self._ensure_loop(be_id)
        self._wake.setdefault(be_id, asyncio.Event()).set()

    def _ensure_loop(self, be_id: int) -> None:
        if be_id not in self._loops:
            self._loops[be_id] = asyncio.create_task(self._be_loop(be_id), name=f"fe-canary-{be_id}")

    async def _sleep(self, be_id: int, until: float) -> None:
        """Sleep until `until` (monotonic) or until probe_now(be_id)."""
        wake = self._wake.setdefault(be_id, asyncio.Event())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), timeout=max(0.0, until - time.monotonic()))
        wake.clear()

    async def _reconcile(self) -> None:
        """One canary loop per backend: started when it appears, cancelled when it is dropped."""
        while True:
            ids = set(self.fe.state.backends)
            for be_id in ids - set(self._loops):
                self._ensure_loop(be_id)
            for be_id in set(self._loops) - ids:
                self._loops.pop(be_id).cancel()
                self._wake.pop(be_id, None)
            await asyncio.sleep(0.5)

    async def _be_loop(self, be_id: int) -> None:
        monitor = self.fe.backends
        next_start = time.monotonic()
        while True:
            await self._sleep(be_id, next_start)
            be = self.fe.state.backends.get(be_id)
            if be is None:
                return
            rt = monitor.status(be_id)
            if not rt.http_port or not rt.last_heartbeat:
                next_start = time.monotonic() + 0.5  # not joined yet: the BE has no token to check
                continue
            started = time.monotonic()
            try:
                ok = await self.canary_once(be, rt)
            except Exception:  # keep the loop alive whatever one canary did
                log.exception("canary of backend %s failed to run", be_id)
                ok = False
            if ok and rt.writable:
                next_start = started + self.interval_s
            elif not ok and rt.writable:
                next_start = time.monotonic()  # confirm at once: detection stays within the bound
            else:
                next_start = started + min(self.interval_s, HEAL_PERIOD_S)

    # --- one canary -----------------------------------------------------------------
    def _peers(self, be) -> list[str]:
        """The BEs whose BE→BE path this canary pings: with forwarding on, or while a table
        has replication_num > 1 (its WAL records go BE→BE too: be/wal_replica.py)."""
        if not self.fe.cfg.enable_group_commit_streamload_be_forward and not any(
            replication_num(t) > 1 for t in list(self.fe.state.tables.values())
        ):
            return []
        monitor = self.fe.backends
        out = []
        for other in self.fe.state.backends.values():
            if other.id == be.id:
                continue
            ort = monitor.status(other.id)
            if ort.alive and ort.http_port:
                out.append(f"{other.host}:{ort.http_port}")
        return sorted(out)

    async def call(self, be, rt, timeout_s: float | None = None) -> dict:
        """One canary against `be` (no state changed): error ('' when good), stages, peers,
        latency_ms, health, timeout (whether it was a missing answer)."""
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        peer = f"{be.host}:{rt.http_port}"
        t0 = time.monotonic()
        payload = {"timeout_s": max(0.2, timeout_s - MARGIN_S), "peers": self._peers(be)}
        out = {"error": "", "stages": {}, "peers": {}, "health": None, "timeout": False}
        try:
            status, body = await self.fe.rpc.call_json(
                "POST", f"http://{peer}/api/_internal/canary", json=payload, timeout_s=timeout_s
            )
            if status != 200 or not isinstance(body, dict):
                out["error"] = f"http: HTTP {status} {str(body)[:200]}"
            else:
                out["stages"] = body.get("stages_ms") or {}
                out["peers"] = body.get("peers") or {}
                if body.get("status") != "OK":
                    out["error"] = str(body.get("error") or body.get("message") or body)[:400]
                    out["timeout"] = "no answer from" in out["error"]
                if isinstance(body.get("health"), dict):
                    out["health"] = body["health"]
        except DeadlineExceeded:
            out["error"] = f"http: no answer from BE {peer} in {timeout_s:.1f} s"
            out["timeout"] = True
        except Exception as e:  # noqa: BLE001 - RpcUnavailable and the like: the hop to the BE
            out["error"] = f"http: BE {peer}: {e}"[:400]
        out["latency_ms"] = (time.monotonic() - t0) * 1000
        return out

    async def canary_once(self, be, rt) -> bool:
        """Run one canary against `be`; updates its runtime (Writable, error, latency). True if good."""
        peer = f"{be.host}:{rt.http_port}"
        metrics = self.fe.metrics
        result = await self.call(be, rt)
        error, stages, peers, latency = (
            result["error"],
            result["stages"],
            result["peers"],
            result["latency_ms"],
        )
        if result["health"] is not None:
            rt.health = result["health"]
        rt.last_canary_time = time.time()
        rt.canary_latency_ms = latency
        rt.canary_stages = stages
        rt.canary_peers = peers
        for stage, ms in stages.items():
            metrics.observe("galene_fe_be_canary_ms", float(ms), be=peer, stage=stage)
        metrics.observe("galene_fe_be_canary_ms", latency, be=peer, stage="total")
        bad_peers = {p: v for p, v in peers.items() if v != "OK"}
        if not error and len(peers) >= 2 and len(bad_peers) == len(peers):
            # It can reach none of several other BEs: it is cut off (forwarding falls back to
            # loading locally, but a BE whose own network is broken should take no loads).
            first = next(iter(bad_peers.items()))
            error = f"forward_hop: {first[0]}: {first[1]}"
        rt.canary_ok = not error
        if error:
            rt.canary_failures += 1
            rt.canary_error = error
            if rt.writable and rt.canary_failures >= self.failure_times:
                rt.writable = False
                log.warning("backend %s is not writable: %s", peer, error)
                self.fe.backends.affinity.forget_backend(be.id)
        else:
            if not rt.writable:
                log.info("backend %s is writable again", peer)
            rt.writable = True
            rt.canary_failures = 0
            rt.canary_error = (
                "; ".join(f"forward_hop: {p}: {v}" for p, v in sorted(bad_peers.items()))[:400]
                if bad_peers
                else ""
            )
        metrics.set("galene_fe_be_writable", 1 if rt.writable else 0, be=peer)
        return not error

    # --- the CANARY txn API the BE calls ------------------------------------------------
    def routes(self) -> list:
        return [
            web.post("/api/_internal/canary/begin", self.handle_begin),
            web.post("/api/_internal/canary/commit", self.handle_commit),
        ]

    def _token_ok(self, request: web.Request) -> bool:
        from galene.net.client import TOKEN_HEADER

        return request.headers.get(TOKEN_HEADER, "") == self.fe.store.token

    async def handle_begin(self, request: web.Request) -> web.Response:
        if not self._token_ok(request):
            return web.json_response({"status": "ERROR", "message": "invalid token"}, status=403)
        await read_json_object(request, 1 << 16)
        txn_id = await asyncio.to_thread(self.txns.begin)
        return web.json_response({"status": "OK", "txn_id": txn_id})

    async def handle_commit(self, request: web.Request) -> web.Response:
        if not self._token_ok(request):
            return web.json_response({"status": "ERROR", "message": "invalid token"}, status=403)
        p = await read_json_object(request, 1 << 16)
        ok = await asyncio.to_thread(self.txns.commit, int(p.get("txn_id") or 0))
        if not ok:
            return web.json_response({"status": "ERROR", "message": f"unknown canary txn {p.get('txn_id')}"})
        return web.json_response({"status": "OK"})
