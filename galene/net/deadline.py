"""Deadlines for calls that cross a process boundary.

Owns `DeadlineExceeded`, `with_deadline` and `SharedDeadlines`. A deadline here is a timer armed on the event
loop (`asyncio.timeout`): when it fires, the awaiting task is cancelled wherever it is blocked,
so a peer that never sends a byte cannot hold a call past its deadline. (The seed incidents
came from deadlines that were only checked when a read happened to return.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Self, TypeVar

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


class SharedDeadlines:
    """Deadlines for many concurrent waits on one event loop, armed with one timer per
    `resolution` slot instead of one per wait.

    At thousands of small loads a second, each with a `timeout` of seconds to minutes that
    almost never fires, arming and cancelling a timer per load (`asyncio.timeout`) was a
    tenth of a load's Python time. Here a wait joins the slot its deadline falls in (a set
    insertion); the slot's timer cancels whatever is still waiting in it, at most
    `resolution` seconds late. `scope(seconds)` is used like `asyncio.timeout`: on expiry
    the block raises TimeoutError and `scope.expired()` is true.
    """

    def __init__(self, resolution: float = 0.05):
        self.resolution = resolution
        self._slots: dict[int, set[_SharedScope]] = {}

    def scope(self, seconds: float) -> _SharedScope:
        return _SharedScope(self, seconds)

    def _join(self, scope: _SharedScope, deadline: float) -> None:
        slot = int(deadline / self.resolution) + 1
        waiting = self._slots.get(slot)
        if waiting is None:
            waiting = self._slots[slot] = set()
            loop = asyncio.get_running_loop()
            loop.call_at(slot * self.resolution, self._expire, slot)
        waiting.add(scope)
        scope._slot = waiting

    def _expire(self, slot: int) -> None:
        for scope in self._slots.pop(slot, ()):
            scope._expire()


class _SharedScope:
    __slots__ = ("_cancelling", "_expired", "_owner", "_seconds", "_slot", "_task")

    def __init__(self, owner: SharedDeadlines, seconds: float):
        self._owner = owner
        self._seconds = seconds
        self._task: asyncio.Task | None = None
        self._slot: set | None = None
        self._expired = False
        self._cancelling = 0

    def expired(self) -> bool:
        return self._expired

    async def __aenter__(self) -> Self:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("SharedDeadlines scopes need a task")
        self._task = task
        self._cancelling = task.cancelling()
        loop = asyncio.get_running_loop()
        self._owner._join(self, loop.time() + self._seconds)
        return self

    async def __aexit__(self, exc_type, exc, tb) -> bool | None:
        if self._slot is not None:
            self._slot.discard(self)
            self._slot = None
        # As asyncio.timeout: our cancellation becomes TimeoutError, anyone else's stays.
        if (
            self._expired
            and self._task is not None
            and self._task.uncancel() <= self._cancelling
            and exc_type is asyncio.CancelledError
        ):
            raise TimeoutError from exc
        return None

    def _expire(self) -> None:
        self._slot = None
        if self._task is not None and not self._task.done():
            self._expired = True
            self._task.cancel()
