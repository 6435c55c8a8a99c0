"""Calls in flight across a process boundary (RPCs, storage I/O), for `/api/_tasks` and `galene doctor`.

Every call made through `RpcClient`, and the storage writes of loads, canaries and group-commit
flushes, is registered here for its duration with what it is (kind, method, path), whom it
waits on (peer) and its deadline, so a hang names both ends: `be 198.18.0.12:8040 -> be
198.18.0.13:8040 PUT /api/d/t/_stream_load 12.4s (deadline 10s)`. Also: the start time of every
asyncio task (`install_task_ages`), so the task dump shows how long each has been running.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
import weakref
from dataclasses import dataclass


@dataclass
class Call:
    kind: str  # rpc | storage
    method: str
    path: str
    peer: str
    started: float  # time.monotonic()
    started_wall: float  # time.time()
    deadline_s: float | None
    task: str

    def as_dict(self, now: float | None = None) -> dict:
        age = (time.monotonic() if now is None else now) - self.started
        return {
            "kind": self.kind,
            "method": self.method,
            "path": self.path,
            "peer": self.peer,
            "start_time": self.started_wall,
            "age_s": round(age, 3),
            "deadline_s": self.deadline_s,
            "overdue": self.deadline_s is not None and age > self.deadline_s,
            "task": self.task,
        }


_CALLS: dict[int, Call] = {}
_IDS = itertools.count(1)
_LOCK = threading.Lock()


def _task_name() -> str:
    try:
        task = asyncio.current_task()
    except RuntimeError:
        task = None
    return task.get_name() if task is not None else threading.current_thread().name


@contextlib.contextmanager
def track(kind: str, method: str, path: str, peer: str, deadline_s: float | None = None):
    """Register one call for the duration of the block."""
    call_id = next(_IDS)
    call = Call(kind, method, path, peer, time.monotonic(), time.time(), deadline_s, _task_name())
    with _LOCK:
        _CALLS[call_id] = call
    try:
        yield call
    finally:
        with _LOCK:
            _CALLS.pop(call_id, None)


def calls() -> list[dict]:
    """Every call in flight, oldest first."""
    now = time.monotonic()
    with _LOCK:
        current = list(_CALLS.values())
    return [c.as_dict(now) for c in sorted(current, key=lambda c: c.started)]


# --- task ages -------------------------------------------------------------------------------
TASK_STARTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def install_task_ages(loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Record when each task of the loop was created (a task factory)."""
    loop = loop or asyncio.get_running_loop()
    previous = loop.get_task_factory()

    def factory(loop, coro, **kwargs):
        task = (
            previous(loop, coro, **kwargs)
            if previous is not None
            else asyncio.Task(coro, loop=loop, **kwargs)
        )
        try:
            TASK_STARTS[task] = time.monotonic()
        except TypeError:  # not weak-referenceable (a foreign task type)
            pass
        return task

    loop.set_task_factory(factory)


def task_age(task: asyncio.Task) -> float | None:
    started = TASK_STARTS.get(task)
    return None if started is None else time.monotonic() - started
