"""Bench: group-commit loads behind a load balancer, BE→BE forwarding off vs on; canary cost.

1. Forwarding. One `galene fe`, three `galene be` and Debian's haproxy (round-robin, `option
   httpchk GET /api/health`) on loopback, every BE's `tag.public_endpoint` = the haproxy
   address. `--clients` (64) closed loops of ~1 KB async group-commit CSV loads for
   `--seconds` (60) each, sent the way curl --location-trusted does (a PUT to the FE, then the
   body to the 307's Location) with `redirect-policy: public`. Once with
   `enable_group_commit_streamload_be_forward` off on FE and BEs (haproxy spreads a table's
   loads over the three BEs: three groups), once on (whichever BE haproxy picks forwards to the
   table's owner: one group). Each run: loads/s, p99 of a load (redirect included), rowsets and
   group-commit commits created, the share of loads that took the BE→BE hop.
2. Canary cost. The `bench/streamload_small.py` workload (64 clients, ~1 KB async group-commit
   loads straight to the BE of a standalone `galene start`) with `be_canary_interval_second=1`
   vs the canary off (0), in alternating rounds (`--canary-rounds`, 2 each).

3. Replicated WAL. One `galene fe` and three `galene be` (no load balancer); two tables, one
   with `replication_num` 1 and one with 3, loaded in alternating rounds
   (`--replication-rounds`, 1 each) by the same closed loops of ~1 KB async group-commit loads
   straight to one BE (the owner of both tables' groups; with R=3 it copies every WAL record
   to the two other BEs and answers once one of them fsynced it). Prints loads/s and
   visible vs acknowledged rows of each, and `replication_num 3 vs 1: …×`.

Last lines: `replication_num 3 vs 1 …`, `canary cost …`, then
`RATIO cluster_forward_rowsets <rowsets off ÷ rowsets on>`. `--replication-only` runs part 3
alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from pathlib import Path

import aiohttp
import httpx
import numpy as np
from common import GaleneProcess, free_port
from streamload_small import AUTH, DDL, PhaseResult, closed_loop, make_bodies, rowset_files
from yarl import URL

from tests.support.client import metric_value
from tests.support.cluster import GaleneCluster
from tests.support.haproxy import Haproxy, ensure_haproxy

DB = "bench_fw"
REQUEST_TIMEOUT_S = 60.0


async def redirected_load(
    session: aiohttp.ClientSession, fe_url: str, body: bytes, headers: dict, res: PhaseResult
) -> None:
    """One load as curl --location-trusted sends it: the FE's 307, then the body to Location."""
    t0 = time.perf_counter()
    try:
        async with session.put(fe_url, data=b"", headers=headers, allow_redirects=False) as resp:
            text = await resp.text()
            location = resp.headers.get("Location")
        if resp.status != 307 or not location:
            res.errors[f"FE HTTP {resp.status}: {text[:200]}"] += 1
            return
        target = URL(location).with_user(None).with_password(None)
        async with session.put(target, data=body, headers=headers) as resp:
            text = await resp.text()
        reply = json.loads(text)
        if resp.status != 200 or reply.get("Status") not in ("Success", "Publish Timeout"):
            res.errors[f"{reply.get('Status')}: {reply.get('Message')}"] += 1
            return
        res.ok += 1
        res.rows += int(reply.get("NumberLoadedRows", 0))
        res.latencies_ms.append((time.perf_counter() - t0) * 1000)
    except (aiohttp.ClientError, TimeoutError, json.JSONDecodeError) as e:
        res.errors[f"{type(e).__name__}: {e}"] += 1


async def redirected_loop(
    fe_url: str, headers: dict, bodies: list[bytes], clients: int, seconds: float, name: str
) -> PhaseResult:
    res = PhaseResult(name)
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
    connector = aiohttp.TCPConnector(limit=2 * clients)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        stop_at = time.perf_counter() + seconds

        async def client(i: int) -> None:
            n = i
            while time.perf_counter() < stop_at:
                await redirected_load(session, fe_url, bodies[n % len(bodies)], headers, res)
                n += clients

        t0 = time.perf_counter()
        await asyncio.gather(*(client(i) for i in range(clients)))
        res.seconds = time.perf_counter() - t0
    return res


def _metric_sum(c: GaleneCluster, name: str, **labels: str) -> float:
    """A counter summed over the cluster's BEs."""
    total = 0.0
    for be in c.bes:
        text = httpx.get(f"http://127.0.0.1:{be.be_http_port}/metrics", timeout=30).text
        total += metric_value(text, name, **labels) or 0.0
    return total


def forward_run(work: Path, forward: bool, args, bodies: list[bytes]) -> dict:
    """One cluster behind haproxy, forwarding `forward`; the measured closed loop."""
    flag = "true" if forward else "false"
    c = GaleneCluster(
        work / ("on" if forward else "off"),
        n_backends=3,
        fe_conf={
            "enable_group_commit_streamload_be_forward": flag,
            "be_canary_interval_second": str(args.canary_interval),
        },
        be_conf={"enable_group_commit_streamload_be_forward": flag},
        engine=args.engine,
    )
    lb = None
    try:
        c.start(join=False)
        lb = Haproxy(c.dir / "haproxy", free_port(), [("127.0.0.1", b.be_http_port) for b in c.bes]).start()
        hosts = ", ".join(f"'127.0.0.1:{b.be_http_port}'" for b in c.bes)
        c.fe.query(
            f"ALTER SYSTEM ADD BACKEND {hosts} PROPERTIES ('tag.public_endpoint' = '127.0.0.1:{lb.port}')"
        )
        c.wait_backends(
            lambda rows: (
                len(rows) == 3 and all(r["Alive"] == "true" and r["Writable"] == "true" for r in rows)
            ),
            timeout=120,
        )
        time.sleep(1.5)  # haproxy's checks (inter 500ms, rise 1) see every BE up
        c.fe.query(f"CREATE DATABASE {DB}")
        c.fe.query(
            f"CREATE TABLE {DB}.t {DDL.format(buckets=args.buckets)} "
            f'PROPERTIES ("group_commit_interval_ms" = "{args.interval_ms}")'
        )
        data_root = c.dir / "storage" / "data"
        before = rowset_files(data_root)
        commits0 = _metric_sum(c, "galene_be_group_commit_txns_total")
        fwd0 = _metric_sum(c, "galene_be_stream_load_forward_total", outcome="forwarded")
        headers = {
            **AUTH,
            "column_separator": ",",
            "Content-Type": "text/plain",
            "Expect": "100-continue",
            "group_commit": "async_mode",
            "redirect-policy": "public",
        }
        fe_url = f"http://127.0.0.1:{c.fe.http_port}/api/{DB}/t/_stream_load"
        res = asyncio.run(
            redirected_loop(
                fe_url,
                headers,
                bodies,
                args.clients,
                args.seconds,
                "forward on" if forward else "forward off",
            )
        )
        time.sleep(2 * args.interval_ms / 1000 + 1)  # the last merged commits land
        created = [r for r in rowset_files(data_root) if r not in before]
        commits = _metric_sum(c, "galene_be_group_commit_txns_total") - commits0
        forwarded = _metric_sum(c, "galene_be_stream_load_forward_total", outcome="forwarded") - fwd0
        visible = c.fe.query(f"SELECT count(*) FROM {DB}.t")[0][0]
        lat = np.array(res.latencies_ms) if res.latencies_ms else np.array([float("nan")])
        out = {
            "loads_s": res.loads_per_s,
            "p50": float(np.percentile(lat, 50)),
            "p99": float(np.percentile(lat, 99)),
            "rowsets": len(created),
            "commits": int(commits),
            "forwarded_share": forwarded / res.ok if res.ok else 0.0,
            "visible": visible,
            "acked_rows": res.rows,
            "errors": res.error_text(),
        }
        print(
            f"FORWARD {'on ' if forward else 'off'}: {out['loads_s']:.1f} loads/s, p50 {out['p50']:.1f} ms, "
            f"p99 {out['p99']:.1f} ms, rowsets {out['rowsets']}, commits {out['commits']}, "
            f"forwarded {100 * out['forwarded_share']:.0f}%, visible rows {visible} "
            f"(acknowledged {res.rows}); {out['errors']}",
            flush=True,
        )
        return out
    finally:
        if lb is not None:
            lb.stop()
        c.stop()


def replication_run(work: Path, args, bodies: list[bytes]) -> dict[int, list[PhaseResult]]:
    """Async loads/s into a replication_num 1 and a replication_num 3 table on 3 BEs."""
    c = GaleneCluster(
        work / "replication",
        n_backends=3,
        fe_conf={"be_canary_interval_second": str(args.canary_interval)},
        engine=args.engine,
    )
    rounds: dict[int, list[PhaseResult]] = {1: [], 3: []}
    try:
        c.start()
        c.fe.query(f"CREATE DATABASE {DB}")
        for r in (1, 3):
            c.fe.query(
                f"CREATE TABLE {DB}.r{r} {DDL.format(buckets=args.buckets)} "
                f'PROPERTIES ("group_commit_interval_ms" = "{args.interval_ms}", "replication_num" = "{r}")'
            )
        time.sleep(2)  # every BE has its peers from a heartbeat
        headers = {
            **AUTH,
            "column_separator": ",",
            "Content-Type": "text/plain",
            "group_commit": "async_mode",
        }
        be = c.bes[0]
        for _ in range(args.replication_rounds):
            for r in (1, 3):
                url = f"http://127.0.0.1:{be.be_http_port}/api/{DB}/r{r}/_stream_load"
                res = asyncio.run(closed_loop(url, headers, bodies, args.clients, args.seconds, f"R={r}"))
                rounds[r].append(res)
                print(f"REPLICATION_NUM {r}: {res.loads_per_s:.1f} loads/s; {res.error_text()}", flush=True)
        time.sleep(2 * args.interval_ms / 1000 + 1)  # the last merged commits land
        for r in (1, 3):
            visible = c.fe.query(f"SELECT count(*) FROM {DB}.r{r}")[0][0]
            acked = sum(x.rows for x in rounds[r])
            print(f"REPLICATION_NUM {r}: visible rows {visible} (acknowledged {acked})", flush=True)
    finally:
        c.stop()
    return rounds


def canary_round(work: Path, interval: int, args, bodies: list[bytes]) -> PhaseResult:
    """The streamload_small async workload against a standalone Galene with this canary interval."""
    g = GaleneProcess(
        work / f"canary-{interval}-{time.monotonic_ns()}",
        conf={"be_canary_interval_second": str(interval)},
        engine=args.engine,
    )
    try:
        g.start()
        g.query("CREATE DATABASE bench_small")
        g.query(
            f"CREATE TABLE t {DDL.format(buckets=args.buckets)} "
            f'PROPERTIES ("group_commit_interval_ms" = "{args.interval_ms}")',
            "bench_small",
        )
        headers = {
            **AUTH,
            "column_separator": ",",
            "Content-Type": "text/plain",
            "group_commit": "async_mode",
        }
        url = f"http://127.0.0.1:{g.be_http_port}/api/bench_small/t/_stream_load"
        time.sleep(min(3.0, interval + 1.0))  # the canary is running when the loop starts
        return asyncio.run(
            closed_loop(url, headers, bodies, args.clients, args.seconds, f"canary {interval}")
        )
    finally:
        g.stop()
        shutil.rmtree(g.data_dir, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0, help="length of each measured loop")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--rows", type=int, default=10, help="rows per load (10 rows ≈ 1 KB)")
    ap.add_argument("--buckets", type=int, default=1)
    ap.add_argument("--interval-ms", type=int, default=1000, help="group_commit_interval_ms of the table")
    ap.add_argument(
        "--canary-interval", type=int, default=5, help="be_canary_interval_second of the clusters"
    )
    ap.add_argument("--canary-rounds", type=int, default=2, help="alternating rounds of canary off / 1 s")
    ap.add_argument("--replication-rounds", type=int, default=1, help="alternating rounds of R=1 / R=3")
    ap.add_argument("--replication-only", action="store_true", help="run only the replicated-WAL part")
    ap.add_argument("--engine", default="sail")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    ensure_haproxy()

    work = Path(tempfile.mkdtemp(prefix="galene-bench-forward-"))
    try:
        bodies = make_bodies(256, args.rows)
        print(
            f"body: {args.rows} rows, {sum(map(len, bodies)) // len(bodies)} bytes on average; "
            f"{args.clients} clients, {args.seconds:g} s per loop, 1 FE + 3 BEs + haproxy, "
            f"group_commit_interval_ms {args.interval_ms}",
            flush=True,
        )
        rep = replication_run(work, args, bodies)
        r1 = sum(r.ok for r in rep[1]) / max(1e-9, sum(r.seconds for r in rep[1]))
        r3 = sum(r.ok for r in rep[3]) / max(1e-9, sum(r.seconds for r in rep[3]))
        rep_line = (
            f"replication_num 3 vs 1: {r3 / r1 if r1 else float('nan'):.2f}x "
            f"({r3:.1f} vs {r1:.1f} async loads/s on 3 BEs)"
        )
        print(rep_line, flush=True)
        if args.replication_only:
            return
        off = forward_run(work, False, args, bodies)
        on = forward_run(work, True, args, bodies)
        tp = on["loads_s"] / off["loads_s"] if off["loads_s"] else 0.0
        print(f"throughput on ÷ off: {tp:.2f}")
        print(
            f"rowsets off ÷ on: {off['rowsets']} / {on['rowsets']}; commits off ÷ on: {off['commits']} / {on['commits']}"
        )

        rounds: dict[int, list[PhaseResult]] = {0: [], 1: []}
        for _ in range(args.canary_rounds):
            for interval in (0, 1):
                res = canary_round(work, interval, args, bodies)
                rounds[interval].append(res)
                print(
                    f"CANARY {'off' if interval == 0 else '1 s'}: {res.loads_per_s:.1f} loads/s; {res.error_text()}",
                    flush=True,
                )
        off_s = sum(r.ok for r in rounds[0]) / max(1e-9, sum(r.seconds for r in rounds[0]))
        on_s = sum(r.ok for r in rounds[1]) / max(1e-9, sum(r.seconds for r in rounds[1]))
        cost = 1 - on_s / off_s if off_s else float("nan")
        print(rep_line)
        print(
            f"canary cost at 1 s: {100 * cost:.1f}% ({on_s:.1f} vs {off_s:.1f} loads/s with the canary off)"
        )
        ratio = off["rowsets"] / on["rowsets"] if on["rowsets"] else float("inf")
        print(f"RATIO cluster_forward_rowsets {ratio:.3f}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
