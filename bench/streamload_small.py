"""Bench: many ~1 KB stream loads (10 rows each) sent straight to one BE, per group-commit mode.

Starts a standalone Galene on free loopback ports and, with an asyncio aiohttp client:

1. closed loop, `--clients` (64) concurrent clients, `--seconds` (60) per mode: loads/s,
   rows/s and the rowsets the mode created, for off_mode, sync_mode and async_mode (one
   table each), then the loads/s of the BE's no-op endpoint `/api/_noop_load` (reads the
   body, answers a fixed JSON) on the same HTTP stack and client: the ceiling of the
   server stack on this machine;
2. open loop at `--rate` (200) loads/s offered in async_mode for `--seconds`: reply latency
   p50 and p99, measured from each request's scheduled send time (so a slow server is not
   hidden by a client that waits for it).

A mode whose loads fail is reported with its error counts and first messages; the bench
goes on with the next mode. Last line: `RATIO streamload_small <async loads/s ÷ no-op loads/s>`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import math
import os
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import numpy as np
from common import GaleneProcess

DB = "bench_small"
DDL = (
    "(ts DATETIME NOT NULL, host VARCHAR(32), level VARCHAR(8), code INT, latency_ms DOUBLE, msg VARCHAR(128)) "
    "DUPLICATE KEY(ts) DISTRIBUTED BY HASH(host) BUCKETS {buckets}"
)
MODES = ("off_mode", "sync_mode", "async_mode")
AUTH = {"Authorization": "Basic " + base64.b64encode(b"root:").decode()}
REQUEST_TIMEOUT_S = 60.0


def make_bodies(count: int, rows: int, seed: int = 11) -> list[bytes]:
    """`count` distinct CSV bodies of `rows` log lines each (about 100 bytes a line)."""
    rng = np.random.default_rng(seed)
    levels = ["INFO", "WARN", "ERROR", "DEBUG"]
    words = [
        "request served",
        "cache miss on key",
        "upstream timed out",
        "retrying connection",
        "user logged in",
    ]
    bodies = []
    for b in range(count):
        lines = []
        for r in range(rows):
            sec = int(rng.integers(0, 86400))
            lines.append(
                f"2024-05-{1 + b % 28:02d} {sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d},"
                f"web-{int(rng.integers(0, 64)):02d}.example.internal,{levels[int(rng.integers(0, 4))]},"
                f"{int(rng.integers(100, 600))},{float(rng.random() * 1000):.3f},"
                f"{words[int(rng.integers(0, len(words)))]} id={int(rng.integers(0, 10**9))} path=/api/v1/items/{r}"
            )
        bodies.append(("\n".join(lines) + "\n").encode())
    return bodies


@dataclass
class PhaseResult:
    name: str
    seconds: float = 0.0
    ok: int = 0
    rows: int = 0
    errors: Counter = field(default_factory=Counter)
    latencies_ms: list[float] = field(default_factory=list)

    @property
    def loads_per_s(self) -> float:
        return self.ok / self.seconds if self.seconds else 0.0

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds else 0.0

    def error_text(self) -> str:
        if not self.errors:
            return "errors 0"
        first = "; ".join(f"{n}x {msg[:160]}" for msg, n in self.errors.most_common(3))
        return f"errors {sum(self.errors.values())} ({first})"


async def one_load(
    session: aiohttp.ClientSession, url: str, body: bytes, headers: dict, res: PhaseResult
) -> bool:
    try:
        async with session.put(url, data=body, headers=headers) as resp:
            text = await resp.text()
        if resp.status != 200:
            res.errors[f"HTTP {resp.status}: {text[:200]}"] += 1
            return False
        reply = json.loads(text)
        if reply.get("Status") not in ("Success", "Publish Timeout"):
            res.errors[f"{reply.get('Status')}: {reply.get('Message')}"] += 1
            return False
        res.ok += 1
        res.rows += int(reply.get("NumberLoadedRows", 0))
        return True
    except (aiohttp.ClientError, TimeoutError, json.JSONDecodeError) as e:
        res.errors[f"{type(e).__name__}: {e}"] += 1
        return False


async def closed_loop(
    url: str, headers: dict, bodies: list[bytes], clients: int, seconds: float, name: str
) -> PhaseResult:
    res = PhaseResult(name)
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
    connector = aiohttp.TCPConnector(limit=clients, force_close=False)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        stop_at = time.perf_counter() + seconds

        async def client(i: int) -> None:
            n = i
            while time.perf_counter() < stop_at:
                await one_load(session, url, bodies[n % len(bodies)], headers, res)
                n += clients

        t0 = time.perf_counter()
        await asyncio.gather(*(client(i) for i in range(clients)))
        res.seconds = time.perf_counter() - t0
    return res


async def open_loop(
    url: str, headers: dict, bodies: list[bytes], rate: float, seconds: float, max_in_flight: int
) -> PhaseResult:
    res = PhaseResult("async_open_loop")
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
    connector = aiohttp.TCPConnector(limit=max_in_flight)
    total = int(rate * seconds)
    in_flight = asyncio.Semaphore(max_in_flight)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        # One warm-up request so the first measured ones do not pay for connection setup alone.
        await one_load(session, url, bodies[0], headers, PhaseResult("warmup"))
        t0 = time.perf_counter()

        async def send(i: int, scheduled: float) -> None:
            async with in_flight:
                if await one_load(session, url, bodies[i % len(bodies)], headers, res):
                    res.latencies_ms.append((time.perf_counter() - scheduled) * 1000)

        tasks = []
        for i in range(total):
            scheduled = t0 + i / rate
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(send(i, scheduled)))
        await asyncio.gather(*tasks)
        res.seconds = time.perf_counter() - t0
    return res


def disk_fsync_ms(work: Path, seconds: float) -> np.ndarray:
    """Latencies (ms) of 1 KB pwrite + fdatasync into a preallocated file, ~200 a second."""
    path = work / "fsync-probe"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.posix_fallocate(fd, 0, 8 << 20)
        os.fsync(fd)
        record, out, offset = os.urandom(1024), [], 0
        stop_at = time.perf_counter() + seconds
        while time.perf_counter() < stop_at:
            t = time.perf_counter()
            os.pwrite(fd, record, offset)
            os.fdatasync(fd)
            out.append((time.perf_counter() - t) * 1000)
            offset = (offset + len(record)) % (8 << 20)
            time.sleep(0.005)
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    return np.array(out)


def rowset_files(data_root: Path) -> dict[str, str]:
    """rowset id -> tablet dir, for every data file under the storage root."""
    out = {}
    for dirpath, _, files in os.walk(data_root):
        for f in files:
            if f.endswith(".parquet"):
                out[f.rsplit("_", 1)[0]] = dirpath
    return out


def run_sql(g: GaleneProcess, sql: str) -> str | None:
    try:
        g.query(sql, DB)
        return None
    except Exception as e:  # noqa: BLE001 - reported, the bench goes on
        return f"{type(e).__name__}: {e}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0, help="length of each phase")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--rate", type=float, default=200.0, help="offered loads/s of the open-loop phase")
    ap.add_argument("--rows", type=int, default=10, help="rows per load (10 rows ≈ 1 KB)")
    ap.add_argument("--buckets", type=int, default=1)
    ap.add_argument("--interval-ms", type=int, default=1000, help="group_commit_interval_ms of the tables")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="galene-bench-small-"))
    g = GaleneProcess(work / "galene")
    try:
        g.start()
        g.query(f"CREATE DATABASE {DB}")
        for mode in MODES:
            g.query(f"CREATE TABLE t_{mode} {DDL.format(buckets=args.buckets)}", DB)
            if mode != "off_mode":
                err = run_sql(
                    g, f'ALTER TABLE t_{mode} SET ("group_commit_interval_ms" = "{args.interval_ms}")'
                )
                if err:
                    print(f"NOTE t_{mode}: could not set group_commit_interval_ms: {err}")
        bodies = make_bodies(256, args.rows)
        print(f"body: {args.rows} rows, {sum(map(len, bodies)) // len(bodies)} bytes on average; "
              f"{args.clients} clients, {args.seconds:g} s per phase, buckets {args.buckets}, "
              f"group_commit_interval_ms {args.interval_ms}")  # fmt: skip
        be = f"http://127.0.0.1:{g.be_http_port}"
        data_root = g.data_dir / "storage" / "data"
        base_headers = {**AUTH, "column_separator": ",", "Content-Type": "text/plain"}

        results: dict[str, PhaseResult] = {}
        for mode in MODES:
            headers = dict(base_headers)
            if mode != "off_mode":
                headers["group_commit"] = mode
            before = rowset_files(data_root)
            res = asyncio.run(
                closed_loop(
                    f"{be}/api/{DB}/t_{mode}/_stream_load", headers, bodies, args.clients, args.seconds, mode
                )
            )
            if mode != "off_mode":
                time.sleep(2 * args.interval_ms / 1000 + 1)  # let the last merged commit land
            created = {r: d for r, d in rowset_files(data_root).items() if r not in before}
            tablets = len(set(created.values()))
            intervals = max(1, math.ceil(res.seconds * 1000 / args.interval_ms)) if mode != "off_mode" else 0
            per = (
                f", {len(created) / (tablets * intervals):.2f} rowsets per tablet per interval"
                if intervals and tablets
                else ""
            )
            results[mode] = res
            print(f"MODE {mode}: {res.loads_per_s:.1f} loads/s, {res.rows_per_s:.0f} rows/s, "
                  f"rowsets created {len(created)} on {tablets} tablets{per}; {res.error_text()}", flush=True)  # fmt: skip

        noop = asyncio.run(
            closed_loop(f"{be}/api/_noop_load", base_headers, bodies, args.clients, args.seconds, "noop")
        )
        print(f"NOOP: {noop.loads_per_s:.1f} loads/s; {noop.error_text()}", flush=True)

        visible = {}
        for mode in MODES:
            try:
                visible[mode] = g.query(f"SELECT count(*) FROM t_{mode}", DB)[0][0]
            except Exception as e:  # noqa: BLE001
                visible[mode] = f"? ({e})"
        print(
            "visible rows: " + ", ".join(f"{m} {visible[m]} (acknowledged {results[m].rows})" for m in MODES)
        )

        ol = asyncio.run(
            open_loop(
                f"{be}/api/{DB}/t_async_mode/_stream_load",
                {**base_headers, "group_commit": "async_mode"},
                bodies, args.rate, args.seconds, max_in_flight=1024,
            )
        )  # fmt: skip
        lat = np.array(ol.latencies_ms) if ol.latencies_ms else np.array([float("nan")])
        print(f"OPEN LOOP async_mode: offered {args.rate:g} loads/s, achieved {ol.loads_per_s:.1f} loads/s; "
              f"{ol.error_text()}")  # fmt: skip
        print(f"P50_ASYNC_MS {np.percentile(lat, 50):.2f}")
        print(f"P99_ASYNC_MS {np.percentile(lat, 99):.2f}")
        # The floor under that p99: the same disk's bare fdatasync latency right after.
        disk = disk_fsync_ms(work, seconds=min(10.0, args.seconds))
        print(
            f"disk alone (1 KB pwrite + fdatasync at ~200/s, {len(disk)} syncs): p50 {np.percentile(disk, 50):.2f} ms, "
            f"p99 {np.percentile(disk, 99):.2f} ms, max {disk.max():.1f} ms"
        )

        off, asyn = results["off_mode"].loads_per_s, results["async_mode"].loads_per_s
        print(
            f"async_mode / off_mode loads/s: {asyn / off:.2f}"
            if off
            else "async_mode / off_mode: off_mode had no successful loads"
        )
        ratio = asyn / noop.loads_per_s if noop.loads_per_s else 0.0
        print(f"RATIO streamload_small {ratio:.3f}")
    finally:
        g.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
