"""Named worker-thread pools for the blocking steps of the load path.

`asyncio.to_thread` shares one default executor (a handful of threads) among every caller
in the process: when the shared disk stalls, threads blocked in fsync (WAL appends, rowset
writes, the FE journal in a standalone process) fill it, and a CSV parse that needs no disk
at all queues behind them for as long as the stall lasts. The steps on a small load's reply
path therefore get pools of their own:

- `PARSE`: CPU work that releases the GIL (pyarrow parsing of stream-load bodies);
- `WAL`: WAL appends and WAL file creation (fsync-bound).

`run(pool, fn, *args)` is `asyncio.to_thread` for a given pool (context variables included).
Also here: the process-wide switch that keeps pyarrow's per-call signal handling off the
load path (`disable_pyarrow_signal_handlers`).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from concurrent.futures import ThreadPoolExecutor

PARSE = ThreadPoolExecutor(max_workers=2, thread_name_prefix="galene-parse")
WAL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="galene-wal")


async def run(pool: ThreadPoolExecutor, fn, /, *args):
    """Run `fn(*args)` in `pool` and await its result."""
    ctx = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(pool, functools.partial(ctx.run, fn, *args))


def disable_pyarrow_signal_handlers() -> None:
    """pyarrow installs and restores SIGINT handlers around every read it does on a
    process's main thread (so Ctrl-C can interrupt it): ~50 µs per CSV parse, which the
    many small loads pay. Galene's servers handle their signals themselves."""
    import pyarrow

    pyarrow.enable_signal_handlers(False)
