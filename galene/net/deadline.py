"""Deadlines for calls that cross a process boundary.

Owns `DeadlineExceeded` and `with_deadline`. A deadline here is a timer armed on the event
loop (`asyncio.timeout`): when it fires, the awaiting task is cancelled wherever it is blocked,
so a peer that never sends a byte cannot hold a call past its deadline. (The seed incidents
came from deadlines that were only checked when a read happened to return.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


class DeadlineExceeded(TimeoutError):
    """A call did not finish within its deadline.

    `what` names the operation, `peer` the remote side (host:port, may be empty) and
    `seconds` the deadline that was exceeded.
    """

    def __init__(self, what: str, seconds: float, peer: str = ""):
        self.what = what
        self.seconds = seconds
        self.peer = peer
        where = f" to {peer}" if peer else ""
        super().__init__(f"{what}{where} did not finish within its deadline of {seconds:g}s")


async def with_deadline(coro: Awaitable[T], seconds: float, what: str, *, peer: str = "") -> T:
    """Await `coro`, cancelling it when `seconds` have passed and raising DeadlineExceeded.

    Only the expiry of this deadline becomes DeadlineExceeded; a TimeoutError raised by the
    awaited code itself propagates unchanged, so nested deadlines report the right one.
    """
    if seconds <= 0:
        # Close an un-awaited coroutine so Python does not warn that it was never awaited.
        close = getattr(coro, "close", None)
        if close is not None:
            close()
        raise DeadlineExceeded(what, seconds, peer)
    timer = asyncio.timeout(seconds)
    try:
        async with timer:
            return await coro
    except TimeoutError as exc:
        if timer.expired():
            raise DeadlineExceeded(what, seconds, peer) from exc
        raise
