"""The FE's half of `galene doctor`: `GET /api/_doctor` (ADMIN_PRIV or NODE_PRIV).

Answers the cluster as SHOW FRONTENDS/BACKENDS show it, then probes every hop it can reach
with a deadline of its own, in parallel: FE→each BE (its `/api/health`, a canary), and has each
BE probe its own hops (`POST /api/_internal/probe`: BE→FE txn API, BE→each other BE's forward
path, BE→storage write/fsync/read/delete, BE→ingest worker); it collects every node's
`/api/_tasks?format=json` (calls in flight with peer and deadline, tasks with ages) and
`/metrics`. A node that does not answer within its deadline is reported as such: the doctor
never waits on a stuck peer longer than that.
"""

from __future__ import annotations

import asyncio
import time

from aiohttp import web

from galene.net.client import TOKEN_HEADER
from galene.net.deadline import DeadlineExceeded
from galene.net.tasks_dump import tasks_dump_json

PROBE_TIMEOUT_S = 3.0


class HopTimeout(Exception):
    """A hop whose far end gave no answer within a deadline (its own message)."""


def routes(fe, api) -> list:
    """`api`: the FE's `FeHttpApi` (its ADMIN_PRIV/NODE_PRIV check, `admin_only`)."""

    async def doctor(request: web.Request) -> web.Response:
        try:
            seconds = min(60.0, max(0.1, float(request.query.get("timeout", PROBE_TIMEOUT_S))))
        except ValueError:
            return web.json_response({"status": "FAILED", "msg": "timeout must be a number"}, status=400)
        return web.json_response(await report(fe, seconds))

    return [web.get("/api/_doctor", api.admin_only(doctor))]


async def _hop(aw, seconds: float, peer: str) -> dict:
    t0 = time.monotonic()
    try:
        async with asyncio.timeout(seconds):
            value = await aw
    except HopTimeout as e:
        return {"ok": False, "timeout": True, "ms": round((time.monotonic() - t0) * 1000, 1),
                "error": str(e), "deadline_s": seconds}  # fmt: skip
    except DeadlineExceeded as e:  # the call's own deadline, shorter than the hop's
        return {"ok": False, "timeout": True, "ms": round((time.monotonic() - t0) * 1000, 1),
                "error": f"no answer from {peer} in {e.seconds:.1f} s", "deadline_s": e.seconds}  # fmt: skip
    except TimeoutError:
        return {"ok": False, "timeout": True, "ms": round((time.monotonic() - t0) * 1000, 1),
                "error": f"no answer from {peer} in {seconds:.1f} s", "deadline_s": seconds}  # fmt: skip
    except Exception as e:  # noqa: BLE001 - the hop's verdict
        return {"ok": False, "timeout": False, "ms": round((time.monotonic() - t0) * 1000, 1),
                "error": str(e) or type(e).__name__, "deadline_s": seconds}  # fmt: skip
    out = {"ok": True, "timeout": False, "ms": round((time.monotonic() - t0) * 1000, 1), "error": "",
           "deadline_s": seconds}  # fmt: skip
    if isinstance(value, dict):
        out.update(value)
    return out


async def report(fe, seconds: float) -> dict:
    monitor = fe.backends
    rpc = fe.rpc
    token = {TOKEN_HEADER: fe.store.token}
    fe_node = f"{fe.host}:{fe.http_port}"
    show = await fe.executor.show_backends()
    names = [c.name for c in show.columns]
    backends = [dict(zip(names, row, strict=True)) for row in show.rows]
    frontends_res = await fe.executor.show_frontends()
    fnames = [c.name for c in frontends_res.columns]
    frontends = [dict(zip(fnames, row, strict=True)) for row in frontends_res.rows]
    addrs = []
    for be in sorted(fe.state.backends.values(), key=lambda b: b.id):
        rt = monitor.status(be.id)
        addrs.append((be, rt, f"{be.host}:{rt.http_port or be.heartbeat_port}"))

    async def health(addr: str) -> dict:
        status, body = await rpc.call_json("GET", f"http://{addr}/api/health", timeout_s=seconds)
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {body}")
        return {}

    async def canary(be, rt) -> dict:
        result = await fe.canary.call(be, rt, timeout_s=seconds)
        if result["error"]:
            if result["timeout"]:
                raise HopTimeout(result["error"])
            raise RuntimeError(result["error"])
        return {"stages_ms": result["stages"]}

    async def probe(addr: str) -> dict:
        peers = [a for _, _, a in addrs if a != addr]
        status, body = await rpc.call_json(
            "POST", f"http://{addr}/api/_internal/probe", json={"timeout_s": seconds, "peers": peers},
            headers=token, timeout_s=seconds + 1,
        )  # fmt: skip
        if status != 200 or not isinstance(body, dict):
            raise RuntimeError(f"HTTP {status}: {body}")
        return {"hops": body.get("hops") or {}}

    async def tasks(addr: str) -> dict:
        status, body = await rpc.call_json(
            "GET", f"http://{addr}/api/_tasks?format=json", headers=token, timeout_s=seconds + 1
        )
        if status != 200 or not isinstance(body, dict):
            raise RuntimeError(f"HTTP {status}")
        return {"calls": body.get("calls") or [], "ingest_worker": body.get("ingest_worker", "")}

    async def metrics(addr: str) -> dict:
        status, _, raw = await rpc.call("GET", f"http://{addr}/metrics", timeout_s=seconds)
        return {"text": raw.decode(errors="replace")} if status == 200 else {}

    async def one(be, rt, addr: str) -> dict:
        h, c, p, t, m = await asyncio.gather(
            _hop(health(addr), seconds, f"BE {addr}"),
            _hop(canary(be, rt), seconds + 0.5, f"BE {addr}"),
            _hop(probe(addr), seconds + 1.5, f"BE {addr}"),
            _hop(tasks(addr), seconds + 1.5, f"BE {addr}"),
            _hop(metrics(addr), seconds, f"BE {addr}"),
        )
        return {
            "addr": addr,
            "backend_id": be.id,
            "health": h,
            "canary": c,
            "probe": p,
            "tasks": t,
            "metrics": m,
        }

    bes = await asyncio.gather(*(one(be, rt, addr) for be, rt, addr in addrs))
    fe_tasks = tasks_dump_json()
    return {
        "fe": {"addr": fe_node, "calls": fe_tasks["calls"], "metrics": fe.metrics.render()},
        "frontends": frontends,
        "backends": backends,
        "be": list(bes),
    }
