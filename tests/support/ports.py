"""Loopback ports for the servers tests start: each handed out once per test process, from a
slice of its own per pytest-xdist worker.

Ports come from below the kernel's ephemeral range: a port the kernel picked for `bind(0)` can
be given again to any outgoing connection (a Spark JVM, an HTTP client) in the moment before the
server binds it, which failed CI once with EADDRINUSE. Galene's processes take 22000-30000;
SeaweedFS (seaweed.py) takes pairs p, p + 10000 with p in 20000-22000 (so 30000-32000 too).
"""

from __future__ import annotations

import os
import random
import socket
import time

GALENE_RANGE = (22000, 30000)
_handed_out: set[int] = set()


def worker_slice(lo: int, hi: int) -> tuple[int, int]:
    """This test process's share of [lo, hi): all of it, or one slice per pytest-xdist worker."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if not worker.startswith("gw") or count <= 1:
        return lo, hi
    index = int(worker[2:]) % count
    span = (hi - lo) // count
    return lo + index * span, lo + (index + 1) * span


def bindable(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def free_ports(count: int = 1, offsets: tuple[int, ...] = (0,), span: tuple[int, int] = GALENE_RANGE) -> list[int]:
    """`count` ports p from this worker's slice of `span`, each with p + every offset free on
    loopback and never handed out before (they are all claimed)."""
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    lo, hi = worker_slice(*span)
    out: list[int] = []
    for _ in range(1000 * count):
        if len(out) == count:
            return out
        p = rng.randrange(lo, hi)
        wanted = [p + o for o in offsets]
        if any(q in _handed_out for q in wanted) or not all(bindable(q) for q in wanted):
            continue
        _handed_out.update(wanted)
        out.append(p)
    raise RuntimeError(f"no {count} free ports in {(lo, hi)} (offsets {offsets})")


def free_port() -> int:
    """A loopback TCP port nobody listens on, outside the ephemeral range, never handed out twice."""
    return free_ports(1)[0]
