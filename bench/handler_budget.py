"""Bench: how much Python work per small load the streamload_small target leaves room for.

streamload_small's RATIO divides Galene's async_mode loads/s by the loads/s of a no-op
endpoint on the same HTTP stack (aiohttp on uvloop) with the same 64-client aiohttp client.
This bench runs that stack alone, outside Galene, with a handler that does only what an
async_mode load cannot skip: read the body, spend `busy` µs of pure-Python work (standing
for auth, options, parsing, WAL bookkeeping and the reply), append the body to a
preallocated file shared by concurrent requests (pwrite + fdatasync in a worker thread, one
fsync for everything pending, as Galene's WAL does) and answer a fixed JSON. For each
`--busy-us` value it prints loads/s and the ratio to the plain no-op of the same run, with
`--procs` server processes sharing the port (SO_REUSEPORT), so the planners can read off the
per-load budget that a ratio of 0.5 needs on this machine.

Last line: `BUDGET_US handler_budget <largest busy µs measured at ratio ≥ 0.5, or 0>`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import free_port
from streamload_small import closed_loop, make_bodies

REPLY = json.dumps({"Status": "Success", "Message": "OK", "NumberLoadedRows": 10}).encode()


def serve(port: int, busy_us: float, wal_dir: str) -> None:
    """One server process: PUT /noop and PUT /load (see the module docstring)."""
    from concurrent.futures import ThreadPoolExecutor

    import uvloop
    from aiohttp import web

    pool = ThreadPoolExecutor(max_workers=2)
    fd = os.open(Path(wal_dir) / f"wal.{os.getpid()}", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.posix_fallocate(fd, 0, 512 << 20)
    os.fsync(fd)
    state: dict = {"pending": [], "drainer": None, "offset": 0}

    def write(data: bytes, offset: int) -> None:
        os.pwrite(fd, data, offset)
        os.fdatasync(fd)

    async def drain() -> None:
        loop = asyncio.get_running_loop()
        while state["pending"]:
            batch, state["pending"] = state["pending"], []
            data = b"".join(body for body, _ in batch)
            offset = state["offset"]
            state["offset"] = (offset + len(data)) % (256 << 20)
            await loop.run_in_executor(pool, write, data, offset)
            for _, fut in batch:
                fut.set_result(None)

    async def noop(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=REPLY, content_type="application/json")

    async def load(request: web.Request) -> web.Response:
        body = await request.read()
        until = time.perf_counter() + busy_us / 1e6
        while time.perf_counter() < until:
            pass
        fut = asyncio.get_running_loop().create_future()
        state["pending"].append((body, fut))
        if state["drainer"] is None or state["drainer"].done():
            state["drainer"] = asyncio.ensure_future(drain())
        await fut
        return web.Response(body=REPLY, content_type="application/json")

    app = web.Application()
    app.router.add_put("/noop", noop)
    app.router.add_put("/load", load)

    async def run() -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port, reuse_port=True).start()
        (Path(wal_dir) / f"ready.{os.getpid()}").touch()  # listening: the client may start
        await asyncio.Event().wait()

    uvloop.run(run())


def measure(path: str, busy_us: float, args, bodies: list[bytes], wal_dir: str) -> float:
    port = free_port()
    procs = [
        subprocess.Popen([sys.executable, __file__, "serve", str(port), str(busy_us), wal_dir])
        for _ in range(args.procs)
    ]
    try:
        url = f"http://127.0.0.1:{port}{path}"
        ready = [Path(wal_dir) / f"ready.{p.pid}" for p in procs]
        deadline = time.monotonic() + 30
        while not all(r.exists() for r in ready):  # every process listening before the clock starts
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise RuntimeError("a bench server did not start")
            time.sleep(0.05)
        asyncio.run(closed_loop(url, {}, bodies, args.clients, 2, "warm-up"))
        res = asyncio.run(closed_loop(url, {}, bodies, args.clients, args.seconds, path))
        if res.errors:
            print(f"  errors: {res.error_text()}")
        return res.loads_per_s
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(10)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        serve(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--procs", type=int, default=1, help="server processes sharing the port")
    ap.add_argument("--busy-us", type=str, default="0,50,100,150,200,300")
    args = ap.parse_args()
    bodies = make_bodies(256, 10)
    wal_dir = tempfile.mkdtemp(prefix="galene-budget-")
    try:
        ceiling = measure("/noop", 0, args, bodies, wal_dir)
        print(f"no-op: {ceiling:.0f} loads/s ({args.procs} server process(es), {args.clients} clients)")
        budget = 0.0
        for busy in (float(x) for x in args.busy_us.split(",")):
            rate = measure("/load", busy, args, bodies, wal_dir)
            ratio = rate / ceiling
            print(f"busy {busy:5.0f} us + group fsync: {rate:7.0f} loads/s  ratio {ratio:.3f}", flush=True)
            if ratio >= 0.5:
                budget = max(budget, busy)
        print(f"BUDGET_US handler_budget {budget:.0f}")
    finally:
        shutil.rmtree(wal_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
