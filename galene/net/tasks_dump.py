"""The task dump behind `/api/_tasks`: the calls in flight (RPC, storage), every running asyncio
task with its age and await chain, and every thread's stack, so a hang can be read off a live
process without a debugger.
"""

from __future__ import annotations

import asyncio
import linecache
import sys
import threading
import traceback
from typing import Any

from aiohttp import web

from galene.net import inflight


def _frame_lines(frame: Any, lineno: int | None = None) -> list[str]:
    code = frame.f_code
    lineno = frame.f_lineno if lineno is None else lineno
    lines = [f'  File "{code.co_filename}", line {lineno}, in {code.co_name}']
    source = linecache.getline(code.co_filename, lineno).strip()
    if source:
        lines.append(f"    {source}")
    return lines


def _await_chain(task: asyncio.Task) -> list[str]:
    """The frames of a task from its outer coroutine down to the innermost await point.

    `Task.get_stack()` shows only the outermost frame of a suspended task; the hang is
    usually at the innermost one, so the `cr_await` chain is followed instead.
    """
    lines: list[str] = []
    awaitable: Any = task.get_coro()
    for _ in range(200):  # bound the walk; chains are short in practice
        frame = (
            getattr(awaitable, "cr_frame", None)
            or getattr(awaitable, "gi_frame", None)
            or getattr(awaitable, "ag_frame", None)
        )
        if frame is not None:
            lines.extend(_frame_lines(frame))
        inner = (
            getattr(awaitable, "cr_await", None)
            or getattr(awaitable, "gi_yieldfrom", None)
            or getattr(awaitable, "ag_await", None)
        )
        if inner is None:
            break
        awaitable = inner
    waiting_on = getattr(task, "_fut_waiter", None)
    if waiting_on is not None:
        lines.append(f"  waiting on {waiting_on!r}")
    return lines


def _calls_text(calls: list[dict]) -> list[str]:
    out = [f"== {len(calls)} calls in flight (RPC, storage) =="]
    for c in calls:
        deadline = f"deadline {c['deadline_s']:g}s" if c["deadline_s"] is not None else "no deadline"
        flag = " OVERDUE" if c["overdue"] else ""
        out.append(
            f"{c['kind']} {c['method']} {c['path']} -> {c['peer']}: {c['age_s']:.1f}s ({deadline}){flag} [task {c['task']}]"
        )
    out.append("")
    return out


def tasks_dump_text() -> str:
    """The calls in flight (RPC and storage, with peer and deadline), all asyncio tasks of the
    running loop with their ages and await chains, then all threads."""
    out: list[str] = _calls_text(inflight.calls())
    try:
        tasks = sorted(asyncio.all_tasks(), key=lambda t: t.get_name())
    except RuntimeError:  # no running loop in this thread
        tasks = []
    current = asyncio.current_task() if tasks else None
    out.append(f"== {len(tasks)} asyncio tasks ==")
    for task in tasks:
        marker = " (this dump)" if task is current else ""
        state = "done" if task.done() else "pending"
        age = inflight.task_age(task)
        aged = f" age {age:.1f}s" if age is not None else ""
        out.append(f"Task {task.get_name()} [{state}]{aged}{marker}: {task.get_coro()!r}")
        out.extend(_await_chain(task))
        out.append("")
    frames = sys._current_frames()
    threads = sorted(threading.enumerate(), key=lambda t: t.name)
    out.append(f"== {len(threads)} threads ==")
    for thread in threads:
        frame = frames.get(thread.ident) if thread.ident is not None else None
        out.append(f"Thread {thread.name} (ident {thread.ident}, daemon={thread.daemon}):")
        if frame is not None:
            out.extend(line.rstrip("\n") for line in traceback.format_stack(frame))
        out.append("")
    return "\n".join(out) + "\n"


def tasks_dump_json() -> dict:
    """The task dump as data: calls in flight, tasks (name, age, state, await chain), threads."""
    try:
        tasks = sorted(asyncio.all_tasks(), key=lambda t: t.get_name())
    except RuntimeError:
        tasks = []
    frames = sys._current_frames()
    return {
        "calls": inflight.calls(),
        "tasks": [
            {
                "name": t.get_name(),
                "state": "done" if t.done() else "pending",
                "age_s": None if (age := inflight.task_age(t)) is None else round(age, 3),
                "coro": repr(t.get_coro()),
                "stack": _await_chain(t),
            }
            for t in tasks
        ],
        "threads": [
            {
                "name": th.name,
                "stack": [ln.rstrip("\n") for ln in traceback.format_stack(f)]
                if (f := frames.get(th.ident))
                else [],
            }
            for th in threading.enumerate()
        ],
    }


# An app may add to its dump: app[TASKS_EXTRA] is an async function returning (text, data),
# e.g. the BE adds its ingest worker's threads and its oldest unanswered request (data["calls"]
# joins the calls in flight).
TASKS_EXTRA = web.AppKey("galene_tasks_extra", object)


async def tasks_dump_handler(request: web.Request) -> web.Response:
    """GET /api/_tasks[?format=json]: calls in flight, asyncio tasks with ages and stacks, threads."""
    extra = request.app.get(TASKS_EXTRA)
    more_text, more_data = await extra() if extra is not None else ("", {})
    if request.query.get("format") == "json":
        data = tasks_dump_json()
        more_calls = more_data.pop("calls", [])
        data["calls"] = sorted(data["calls"] + more_calls, key=lambda c: -c["age_s"])
        return web.json_response({**data, **more_data})
    return web.Response(text=tasks_dump_text() + more_text, content_type="text/plain")


