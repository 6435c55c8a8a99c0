"""`galene doctor --fe host:http_port [-u user:pass] [--json]`: one verdict line per hop.

Probes, each with its own deadline: client→FE (`/api/health`), client→each BE, FE→each BE
(health, a write canary), and through the FE's `/api/_doctor` every BE's own hops: BE→FE (the
txn API), BE→each other BE (the forward path), BE→storage (write, fsync, read, delete a probe
file), BE→its ingest worker. Then the oldest stuck operation of any node, naming both ends,
e.g. `STUCK be 198.18.0.12:8040 -> be 198.18.0.13:8040 PUT /api/d/t/_stream_load_forward 12.4s
(deadline 10s)`.

Exit status: 0 healthy, 1 degraded (a hop failed with an answer, a BE not alive or not
writable), 2 stuck (a hop gave no answer within its deadline, or a call is past its deadline).
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import time

from galene.net.client import RpcClient
from galene.net.deadline import DeadlineExceeded

HEALTHY, DEGRADED, STUCK = 0, 1, 2
NO_DEADLINE_STUCK_S = 60.0


def _verdict(ok: bool, timeout: bool) -> str:
    return "OK   " if ok else ("STUCK" if timeout else "FAIL ")


async def _client_hop(rpc: RpcClient, to: str, path: str, timeout_s: float, **kw) -> tuple[dict, object]:
    """GET http://{to's address}{path} from this client: (its hop verdict, the JSON answer or None)."""
    what = "GET " + path.split("?", 1)[0]
    url = f"http://{to.split(' ', 1)[1]}{path}"
    hop = {"from": "client", "to": to, "what": what, "ok": False, "timeout": False, "error": "",
           "deadline_s": timeout_s}  # fmt: skip
    t0 = time.monotonic()
    body = None
    try:
        status, body = await rpc.call_json("GET", url, timeout_s=timeout_s, **kw)
        hop["ok"] = status == 200
        if status != 200:
            hop["error"] = f"HTTP {status}: {str(body)[:200]}"
    except DeadlineExceeded:
        hop.update(timeout=True, error=f"no answer in {timeout_s:g} s")
    except Exception as e:  # noqa: BLE001 - the verdict
        hop["error"] = str(e) or type(e).__name__
    hop["ms"] = round((time.monotonic() - t0) * 1000, 1)
    return hop, body


async def gather(fe: str, user: str, password: str, timeout_s: float) -> tuple[list[dict], dict | None]:
    """(hops, the FE's report or None)."""
    auth = {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}
    async with RpcClient(default_timeout_s=timeout_s) as rpc:
        hop, _ = await _client_hop(rpc, f"fe {fe}", "/api/health", timeout_s)
        hops = [hop]
        if not hop["ok"]:
            return hops, None
        # The FE probes every hop it and the BEs can reach, each under `timeout_s`, in parallel.
        hop, report = await _client_hop(
            rpc, f"fe {fe}", f"/api/_doctor?timeout={timeout_s:g}", timeout_s * 3 + 5, headers=auth
        )
        hops.append(hop)
        if not hop["ok"] or not isinstance(report, dict):
            return hops, None
        bes = report.get("be", [])
        client_hops = await asyncio.gather(
            *(_client_hop(rpc, f"be {be['addr']}", "/api/health", timeout_s) for be in bes)
        )
    fe_node = f"fe {report['fe']['addr']}"
    for be, (hop, _) in zip(bes, client_hops, strict=True):
        node = f"be {be['addr']}"
        hops.append(hop)
        for key, what in (("health", "GET /api/health"), ("canary", "write canary")):
            hops.append({"from": fe_node, "to": node, "what": what, **be[key]})
        probe = be["probe"]
        if not probe.get("ok"):
            hops.append({"from": fe_node, "to": node, "what": "POST /api/_internal/probe", **probe})
        for target, result in (probe.get("hops") or {}).items():
            if target.startswith("storage"):
                what = "write, fsync, read, delete"
            elif target.startswith("fe"):
                what = "txn API"
            elif target.startswith("be"):
                what = "forward path"
            else:
                what = "ping"
            hops.append({"from": node, "to": target, "what": what, **result})
    return hops, report


# The doctor's own calls (its probes), left out when looking for what is stuck.
_DOCTOR_PATHS = ("/api/_internal/probe", "/api/_tasks", "/metrics", "/api/health", "/api/_internal/canary",
                 "/api/_internal/forward_ping", "/api/_internal/canary/begin", "/api/_internal/canary/commit")  # fmt: skip


def stuck_calls(report: dict | None) -> list[dict]:
    """Every call in flight on any node but the doctor's own, with the node it runs on, oldest first."""
    if report is None:
        return []
    out = []
    for call in report["fe"].get("calls", []):
        out.append({**call, "node": f"fe {report['fe']['addr']}"})
    for be in report.get("be", []):
        for call in (be.get("tasks") or {}).get("calls", []) or []:
            out.append({**call, "node": f"be {be['addr']}"})
    out = [c for c in out if c.get("path") not in _DOCTOR_PATHS]
    return sorted(out, key=lambda c: -c.get("age_s", 0))


def _peer_name(report: dict, peer: str) -> str:
    if peer == report["fe"]["addr"]:
        return f"fe {peer}"
    if any(be["addr"] == peer for be in report.get("be", [])):
        return f"be {peer}"
    return peer


def _is_stuck(call: dict) -> bool:
    """Past its deadline (or, without one, older than a minute): it waits on a peer that does
    not answer. A long call still within its deadline is work, not a hang."""
    deadline = call.get("deadline_s")
    if deadline is None:
        return call.get("age_s", 0) > NO_DEADLINE_STUCK_S
    return bool(call.get("overdue"))


def _hop_rank(h: dict) -> tuple:
    """Which failed hop names the fault best: the deepest end of a chain (BE→X, then FE→BE,
    then client→X), a direct hop before the FE's probe call that only relays the BE's, then
    the longest wait."""
    origin = h["from"].split(" ", 1)[0]
    relay = h.get("what") == "POST /api/_internal/probe"
    return ({"be": 0, "fe": 1}.get(origin, 2), relay, -(h.get("ms") or 0))


def evaluate(hops: list[dict], report: dict | None) -> tuple[int, list[str]]:
    lines = []
    status = HEALTHY
    for h in hops:
        ms = f" {h['ms']:.0f} ms" if h.get("ms") is not None else ""
        detail = f": {h['error']}" if h.get("error") else ""
        lines.append(
            f"{_verdict(h['ok'], h.get('timeout', False))} {h['from']} -> {h['to']} ({h['what']}){ms}{detail}"
        )
        if not h["ok"]:
            status = max(status, STUCK if h.get("timeout") else DEGRADED)
    if report is not None:
        for row in report.get("backends", []):
            if row.get("Alive") != "true" or row.get("Writable") != "true":
                status = max(status, DEGRADED)
                why = row.get("CanaryError") or row.get("ErrMsg")
                lines.append(
                    f"FAIL  be {row['Host']}:{row['HttpPort']} Alive={row['Alive']} Writable={row.get('Writable')}"
                    + (f": {why}" if why else "")
                )
    stuck = [c for c in stuck_calls(report) if _is_stuck(c)]
    if stuck:
        status = STUCK
        c = stuck[0]
        deadline = f"deadline {c['deadline_s']:g}s" if c.get("deadline_s") is not None else "no deadline"
        lines.append(
            f"STUCK {c['node']} -> {_peer_name(report, c['peer'])} {c['method']} {c['path']} {c['age_s']:.1f}s ({deadline})"
        )
    else:
        slow = sorted((h for h in hops if h.get("timeout")), key=_hop_rank)
        if slow:
            h = slow[0]
            lines.append(
                f"STUCK {h['from']} -> {h['to']} {h['what']} {(h.get('ms') or 0) / 1000:.1f}s "
                f"(deadline {h.get('deadline_s') or 0:g}s)"
            )
    lines.append({HEALTHY: "healthy", DEGRADED: "degraded", STUCK: "stuck"}[status])
    return status, lines


def main(args) -> int:
    user, _, password = (args.user or "root:").partition(":")
    hops, report = asyncio.run(gather(args.fe, user, password, float(args.timeout)))
    status, lines = evaluate(hops, report)
    if args.json:
        print(
            json.dumps(
                {"status": status, "hops": hops, "calls": stuck_calls(report), "lines": lines}, default=str
            )
        )
    else:
        print("\n".join(lines))
    sys.stdout.flush()
    return status
