"""Helpers every Galene HTTP server uses: listening sockets, request bounds, the task dump, metrics.

Owns `make_server_socket` (tuned listening sockets for `aiohttp.web.SockSite`),
`make_app_runner` and `GaleneRequestHandler` (the bounds on every request head, from
`http_max_headers` / `http_max_header_bytes`, and the one answer to broken HTTP framing: a clear
4xx, one WARNING line, the connection closed, and a body read that fails at once instead of
hanging), `read_json_object` (a JSON request body read within a bound), `tasks_dump_text` /
`tasks_dump_handler` (every running asyncio task with its await chain, and every thread's stack,
so a hang can be read off `/api/_tasks` without a debugger), and the Prometheus text exposition
(`metrics_text`, `Metrics`) behind `/metrics`.
"""

from __future__ import annotations

import asyncio
import json
import linecache
import logging
import math
import re
import socket
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec
from aiohttp import web
from aiohttp.http_exceptions import BadHttpMessage, HttpProcessingError, LineTooLong
from aiohttp.streams import EMPTY_PAYLOAD
from aiohttp.web_protocol import RequestHandler, RequestPayloadError, _ErrInfo
from aiohttp.web_server import Server

from galene.net import inflight
from galene.net.client import tune_socket

if TYPE_CHECKING:
    from galene.config import Config

log = logging.getLogger(__name__)

PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


# ---------------------------------------------------------------------------------------------
# Listening sockets


def make_server_socket(
    host: str,
    port: int,
    *,
    user_timeout_ms: int = 5000,
    keepalive_idle_s: int = 5,
    backlog: int = 1024,
) -> socket.socket:
    """A bound, listening, non-blocking TCP socket for `web.SockSite` (port 0 picks a free one).

    Keepalive and TCP_USER_TIMEOUT are set on the listening socket; Linux copies them to every
    accepted connection, so a client that vanishes mid-request is noticed by the server too.
    """
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, type_, proto, _, address = infos[0]
    sock = socket.socket(family, type_, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tune_socket(sock, user_timeout_ms=user_timeout_ms, keepalive_idle_s=keepalive_idle_s)
        sock.bind(address)
        sock.listen(backlog)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def server_socket_options(cfg: Config) -> dict[str, int]:
    """`make_server_socket`'s socket settings from a node's config (see
    `Config.tcp_server_user_timeout_ms` for why accepted connections wait longer than calls)."""
    return {"user_timeout_ms": cfg.tcp_server_user_timeout_ms, "keepalive_idle_s": cfg.tcp_keepalive_idle_s}


# ---------------------------------------------------------------------------------------------
# HTTP servers: request-head bounds and answers to broken framing


def make_app_runner(
    app: web.Application, cfg: Config, *, handler_class: type[GaleneRequestHandler] | None = None
) -> web.AppRunner:
    """The runner of a Galene HTTP server (FE 8030, BE 8040): aiohttp with the request-head
    bounds of `cfg` and `handler_class` (default `GaleneRequestHandler`) per connection."""
    return _GaleneAppRunner(
        app,
        handler_class or GaleneRequestHandler,
        access_log=None,
        handler_cancellation=True,
        # aiohttp's C parser (llhttp) counts max_field_size over a header's name plus value and
        # max_line_size over the request line; the head is parsed as it streams in, so a
        # connection holds at most max_headers x max_field_size of it, whatever the client sends.
        max_line_size=cfg.http_max_header_bytes,
        max_field_size=cfg.http_max_header_bytes,
        max_headers=cfg.http_max_headers,
        max_head_bytes=HTTP_MAX_HEAD_BYTES,
    )


class _GaleneAppRunner(web.AppRunner):
    def __init__(self, app: web.Application, handler_class: type[GaleneRequestHandler], **kwargs: Any):
        super().__init__(app, **kwargs)
        self._handler_class = handler_class

    async def _make_server(self) -> Server:
        server = await super()._make_server()
        # Same state as the app's server; only the per-connection handler class differs
        # (aiohttp has no parameter for it).
        server.__class__ = _GaleneServer
        server.handler_class = self._handler_class  # type: ignore[attr-defined]
        return server


class _GaleneServer(Server):
    handler_class: type[GaleneRequestHandler]

    def __call__(self) -> RequestHandler:
        return self.handler_class(self, loop=self._loop, **self._kwargs)


# The whole request head (request line and headers): without it a head could hold
# http_max_headers x http_max_header_bytes (8 MB, twice that once parsed) per connection.
# Doris' FE caps its heads the same way (jetty_server_max_http_header_size, 1 MB).
HTTP_MAX_HEAD_BYTES = 1 << 20


class HeadTooLarge(BadHttpMessage):
    """A request head past HTTP_MAX_HEAD_BYTES (the parser bounds only its lines)."""

    def __init__(self, limit: int):
        super().__init__(f"request head over {limit} bytes")
        self.limit = limit


# Handler tasks of closed connections that finish on their own (see connection_lost).
_RUNNING_ON: set[asyncio.Task] = set()

# Doris-style texts for a body that cannot be read to its end.
BODY_CLOSED_MESSAGE = "[CANCELLED]the client closed the connection before the whole body arrived"


def framing_error_reply(
    exc: HttpProcessingError, max_headers: int, max_header_bytes: int
) -> tuple[int, str, str]:
    """HTTP status, its phrase, and a one-line reason for a request aiohttp's parser refused."""
    if isinstance(exc, HeadTooLarge):
        return 431, "Request Header Fields Too Large", f"the request head is longer than {exc.limit} bytes"
    if isinstance(exc, LineTooLong):
        reason = (
            f"the request line or a header is longer than {max_header_bytes} bytes (http_max_header_bytes)"
        )
        return 431, "Request Header Fields Too Large", reason
    if exc.message.startswith("Too many headers"):
        return 431, "Request Header Fields Too Large", f"more than {max_headers} headers (http_max_headers)"
    # llhttp's texts are "<reason>:\n\n  <the bytes>\n  ^": the first line is the reason; the
    # echoed bytes are the client's own and can be 64 KB of garbage.
    reason = exc.message.split("\n", 1)[0].strip().rstrip(":")[:200] or "malformed request"
    return 400, "Bad Request", reason


class GaleneRequestHandler(RequestHandler):
    """aiohttp's per-connection protocol, with Galene's answers to broken HTTP.

    * A request the parser refuses (a head over the bounds, a bad request line, a bad
      Content-Length, bad chunked framing, garbage after a body) gets 431 or 400 with a
      one-line reason (`framing_reply`) and is logged as one WARNING line (the client's bytes
      are not a server fault worth a traceback). Nothing more is parsed on that connection:
      what still arrives is read and dropped until the client closes or `lingering_time`
      passes (a lingering close, after our FIN), so a client still sending a huge head reads
      the reply instead of a reset, and memory stays bounded whatever it sends.
    * When the framing breaks in the middle of a body, or the connection closes before the
      body's end, the handler reading that body gets `body_error(...)` at once (aiohttp would
      leave it waiting until its deadline for bytes that never come, or cancel it wherever it
      is). The connection closes after the handler's reply: the bytes after a broken body are
      not a request.
    """

    __slots__ = (
        "_body_failure",
        "_head_bytes",
        "_last_payload",
        "_linger_waiter",
        "_max_head_bytes",
        "_refused",
    )

    def __init__(self, *args: Any, max_head_bytes: int = HTTP_MAX_HEAD_BYTES, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._max_head_bytes = max_head_bytes
        # Bytes received since the last request's head completed while no body was arriving:
        # a bound on the head still being parsed (within one read of the truth).
        self._head_bytes = 0
        # The body of the newest request parsed: the only one the parser can still be feeding.
        self._last_payload: Any = None
        # What `_fail_body` gave a body; aiohttp logs it if its own lingering read meets it.
        self._body_failure: BaseException | None = None
        self._refused = False
        self._linger_waiter: asyncio.Future[None] | None = None

    # --- hooks ------------------------------------------------------------------------------
    def framing_reply(self, status: int, message: str, exc: HttpProcessingError) -> web.Response:
        """The reply to a request the parser refused (the connection is closed after it)."""
        return web.Response(status=status, text=message + "\n")

    def body_error(self, message: str) -> BaseException:
        """What a read of a body that cannot be completed raises in the handler."""
        return RequestPayloadError(message)

    # --- aiohttp overrides ------------------------------------------------------------------
    def handle_error(self, request, status=500, exc=None, message=None):  # type: ignore[no-untyped-def]
        if not isinstance(exc, HttpProcessingError):
            return super().handle_error(request, status, exc, message)
        self._refused = True
        status, phrase, reason = framing_error_reply(exc, self.max_headers, self.max_field_size)
        text = f"{phrase}: {reason}"
        log.warning("refused an HTTP request from %s: %s", request.remote, text)
        if request.writer.output_size > 0:  # as aiohttp: a reply is already on the wire
            raise ConnectionError("Response is sent already, cannot send another response")
        resp = self.framing_reply(status, text, exc)
        resp.force_close()
        return resp

    def data_received(self, data: bytes) -> None:
        if self._refused or self._close or self._force_close:
            return  # dropped: see the class docstring (aiohttp drops them when closing, too)
        messages = self._messages
        queued = len(messages)
        super().data_received(data)
        if len(messages) == queued:  # no request's head completed: body, or a head arriving
            payload = self._last_payload
            if payload is None or payload.is_eof():
                self._head_bytes += len(data)
                if self._head_bytes > self._max_head_bytes:
                    self._refuse(HeadTooLarge(self._max_head_bytes))
            return
        self._head_bytes = 0
        message, payload = messages[-1]
        if message.__class__ is not _ErrInfo:
            self._last_payload = payload
            return
        self._refused = True
        payload = self._last_payload
        if payload is None or payload.is_eof():
            return  # the refusal is the next "request" and gets its own 400
        # The refusal is in the body of the newest request: fail its reader instead (and end
        # the body, so aiohttp does not linger reading it); the handler's reply is the last.
        _, _, reason = framing_error_reply(message.exc, self.max_headers, self.max_field_size)  # type: ignore[arg-type]
        self._fail_body(payload, f"[INVALID_ARGUMENT]malformed request body: {reason}")
        # After the exception, never before: a reader woken by EOF alone would take the bytes
        # so far for the whole body.
        payload.feed_eof()
        while messages and messages[-1][0].__class__ is _ErrInfo:
            messages.pop()
        self.close()

    async def finish_response(self, request, resp, start_time):  # type: ignore[no-untyped-def]
        result = await super().finish_response(request, resp, start_time)
        if self._refused and not self._messages:
            await self._lingering_close()
        return result

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._linger_waiter is not None and not self._linger_waiter.done():
            self._linger_waiter.set_result(None)
        payload, self._last_payload = self._last_payload, None
        if payload is None or payload.is_eof() or payload.exception() is not None:
            super().connection_lost(exc)
            return
        # The body never ends: its reader fails at its next read and cleans up after itself (a
        # load aborts the txn it began, even one whose begin was in flight when the client
        # left). aiohttp would cancel the handler instead, which can land between an RPC's
        # effect and its bookkeeping (a begun txn nobody knows the id of); so the handler's
        # task is taken out of aiohttp's hands (and kept referenced until it ends).
        task, self._task_handler = self._task_handler, None
        if task is not None and not task.done():
            _RUNNING_ON.add(task)
            task.add_done_callback(_RUNNING_ON.discard)
        # Before aiohttp sets its ConnectionResetError on the body (the waiting reader gets the
        # first exception) and again after it (later reads get the last one).
        failure = self._fail_body(payload, BODY_CLOSED_MESSAGE)
        super().connection_lost(exc)
        payload.set_exception(failure)

    def log_exception(self, *args: Any, **kw: Any) -> None:
        if self._body_failure is not None and kw.get("exc_info") is self._body_failure:
            # aiohttp's lingering read of a body this handler failed: the client's doing.
            log.warning("dropped the rest of a request body: %s", self._body_failure)
            return
        super().log_exception(*args, **kw)

    # --- internals --------------------------------------------------------------------------
    def _refuse(self, exc: HttpProcessingError) -> None:
        """Refuse what is arriving as aiohttp refuses what its parser cannot parse."""
        self._refused = True
        self._request_count += 1
        self._messages.append((_ErrInfo(status=exc.code, exc=exc, message=exc.message), EMPTY_PAYLOAD))
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _fail_body(self, payload: Any, message: str) -> BaseException:
        self._body_failure = failure = self.body_error(message)
        payload.set_exception(failure)
        return failure

    async def _lingering_close(self) -> None:
        """Send FIN after the last reply and wait (reading and dropping) for the client's close.

        Closing at once with the client's bytes still unread makes the kernel answer with a
        reset, which can destroy the reply before the client reads it."""
        transport = self.transport
        if transport is None or transport.is_closing() or not transport.can_write_eof():
            return
        self._linger_waiter = waiter = self._loop.create_future()
        transport.write_eof()
        try:
            await asyncio.wait_for(waiter, self._lingering_time)
        except TimeoutError:
            pass


async def read_json_object(request: web.Request, max_bytes: int) -> dict:
    """The request's body as a JSON object, read within `max_bytes`.

    Refuses a larger body with 413 before reading it when Content-Length says so, else as soon
    as `max_bytes` have arrived (the rest is never read); a body that is not a JSON object or
    cannot be read gets 400. Both replies are JSON `{"status": "ERROR", "message": ...}`, the
    error shape of the internal APIs that call this.
    """
    declared = request.content_length
    if declared is not None and declared > max_bytes:
        raise _json_refusal(
            request, web.HTTPRequestEntityTooLarge, f"body of {declared} bytes, max size: {max_bytes}"
        )
    body = bytearray()
    try:
        while len(body) <= max_bytes and (chunk := await request.content.readany()):
            body += chunk
    except Exception as e:  # noqa: BLE001 - whatever the body was failed with (GaleneRequestHandler.body_error)
        raise _json_refusal(request, web.HTTPBadRequest, str(e)) from None
    if len(body) > max_bytes:
        raise _json_refusal(request, web.HTTPRequestEntityTooLarge, f"body over max size {max_bytes}")
    try:
        payload = msgspec.json.decode(body)
    except msgspec.DecodeError as e:
        raise _json_refusal(request, web.HTTPBadRequest, f"the body is not JSON: {e}") from None
    if not isinstance(payload, dict):
        raise _json_refusal(request, web.HTTPBadRequest, "the body is not a JSON object")
    return payload


def _json_refusal(request: web.Request, kind: type[web.HTTPException], detail: str) -> web.HTTPException:
    too_large = kind is web.HTTPRequestEntityTooLarge
    message = f"{'Request Entity Too Large' if too_large else 'Bad Request'}: {detail}"
    log.warning("refused %s %s from %s: %s", request.method, request.path, request.remote, message)
    kwargs = {"text": json.dumps({"status": "ERROR", "message": message}), "content_type": "application/json"}
    exc = web.HTTPRequestEntityTooLarge(0, **kwargs) if too_large else kind(**kwargs)
    # Part of the body may be unread: the connection cannot carry another request.
    exc.force_close()
    return exc


# ---------------------------------------------------------------------------------------------
# Task dump


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


# ---------------------------------------------------------------------------------------------
# Prometheus text exposition

_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def _check_metric_name(name: str) -> None:
    if not _METRIC_NAME.match(name):
        raise ValueError(f"invalid Prometheus metric name: {name!r}")


def _escape_label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _format_labels(labels: Mapping[str, Any]) -> str:
    if not labels:
        return ""
    parts = []
    for key in sorted(labels):
        if not _LABEL_NAME.match(key):
            raise ValueError(f"invalid Prometheus label name: {key!r}")
        parts.append(f'{key}="{_escape_label_value(str(labels[key]))}"')
    return "{" + ",".join(parts) + "}"


def _format_value(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def metrics_text(
    metrics: Mapping[str, float | int],
    labels: Mapping[str, str] | None = None,
    *,
    types: Mapping[str, str] | None = None,
    help: Mapping[str, str] | None = None,
) -> str:
    """One sample per metric, all with the same `labels`, in Prometheus text format.

    `types` maps a name to "counter" or "gauge" (default gauge); `help` adds # HELP lines.
    """
    label_text = _format_labels(labels or {})
    out: list[str] = []
    for name in sorted(metrics):
        _check_metric_name(name)
        if help and name in help:
            out.append(f"# HELP {name} {help[name]}")
        out.append(f"# TYPE {name} {(types or {}).get(name, 'gauge')}")
        out.append(f"{name}{label_text} {_format_value(metrics[name])}")
    return "\n".join(out) + "\n" if out else ""


class Metrics:
    """A small thread-safe registry of counters and gauges with labels.

    `const_labels` (e.g. role and node) are added to every sample. A name is a counter when
    first used with `inc`, a gauge when first used with `set`/`set_function` and a summary
    (`<name>_count` and `<name>_sum`) when first used with `observe`, unless `describe` said
    otherwise; a counter cannot be `set` or decreased.
    """

    def __init__(self, const_labels: Mapping[str, str] | None = None):
        self.const_labels = dict(const_labels or {})
        _format_labels(self.const_labels)  # validate label names early
        self._kinds: dict[str, str] = {}
        self._help: dict[str, str] = {}
        self._values: dict[str, dict[tuple[tuple[str, str], ...], float | int]] = {}
        self._functions: dict[str, dict[tuple[tuple[str, str], ...], Callable[[], float | int]]] = {}
        self._summaries: dict[str, dict[tuple[tuple[str, str], ...], list[float]]] = {}  # [count, sum]
        self._lock = threading.Lock()

    def _kind(self, name: str, wanted: str) -> str:
        kind = self._kinds.get(name)
        if kind is None:
            _check_metric_name(name)
            self._kinds[name] = kind = wanted
        return kind

    @staticmethod
    def _key(labels: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
        if not labels:  # most counters (several per stream load) have no labels
            return ()
        return tuple(sorted((k, str(v)) for k, v in labels.items()))

    def describe(self, name: str, kind: str, help: str = "") -> None:
        if kind not in ("counter", "gauge", "summary"):
            raise ValueError(f"metric kind must be counter, gauge or summary, not {kind!r}")
        with self._lock:
            _check_metric_name(name)
            existing = self._kinds.get(name)
            if existing is not None and existing != kind:
                raise ValueError(f"metric {name} is already a {existing}")
            self._kinds[name] = kind
            if help:
                self._help[name] = help

    def inc(self, name: str, value: float = 1, **labels: Any) -> None:
        if not labels and value >= 0:
            # The common case (several per stream load): an existing counter without labels.
            series = self._values.get(name)
            if series is not None and self._kinds.get(name) == "counter":
                with self._lock:
                    series[()] = series.get((), 0) + value
                return
        with self._lock:
            kind = self._kind(name, "counter")
            if kind == "summary":
                raise ValueError(f"metric {name} is a summary; use observe")
            if kind == "counter" and value < 0:
                raise ValueError(f"counter {name} cannot decrease")
            series = self._values.setdefault(name, {})
            key = self._key(labels)
            series[key] = series.get(key, 0) + value

    def set(self, name: str, value: float, **labels: Any) -> None:
        with self._lock:
            if self._kind(name, "gauge") != "gauge":
                raise ValueError(f"metric {name} is a counter; use inc")
            self._values.setdefault(name, {})[self._key(labels)] = value

    def set_function(self, name: str, function: Callable[[], float | int], **labels: Any) -> None:
        """A gauge whose value is read from `function` each time the metrics are rendered."""
        with self._lock:
            if self._kind(name, "gauge") != "gauge":
                raise ValueError(f"metric {name} is a counter; use inc")
            self._functions.setdefault(name, {})[self._key(labels)] = function

    def observe(self, name: str, value: float, **labels: Any) -> None:
        """Add one observation to a summary (count and sum, as Prometheus summaries without
        quantiles)."""
        with self._lock:
            if self._kind(name, "summary") != "summary":
                raise ValueError(f"metric {name} is not a summary")
            series = self._summaries.setdefault(name, {}).setdefault(self._key(labels), [0, 0.0])
            series[0] += 1
            series[1] += value

    def observe_ms(self, name: str, milliseconds: float, **labels: Any) -> None:
        """A duration in milliseconds, recorded in the summary `<name>_ms`."""
        self.observe(f"{name}_ms", milliseconds, **labels)

    def summary(self, name: str, **labels: Any) -> tuple[int, float]:
        """(count, sum) of one summary series; (0, 0.0) when nothing was observed."""
        with self._lock:
            count, total = self._summaries.get(name, {}).get(self._key(labels), (0, 0.0))
            return int(count), float(total)

    def value(self, name: str, **labels: Any) -> float | int:
        """The current value of one series (0 when it has never been touched)."""
        key = self._key(labels)
        with self._lock:
            function = self._functions.get(name, {}).get(key)
            if function is None:
                return self._values.get(name, {}).get(key, 0)
        return function()

    def render(self) -> str:
        with self._lock:
            kinds = dict(self._kinds)
            helps = dict(self._help)
            values = {name: dict(series) for name, series in self._values.items()}
            functions = {name: dict(series) for name, series in self._functions.items()}
            summaries = {
                name: {key: tuple(pair) for key, pair in series.items()}
                for name, series in self._summaries.items()
            }
        out: list[str] = []
        for name in sorted(kinds):
            if kinds[name] == "summary":
                out.extend(self._render_summary(name, helps.get(name), summaries.get(name, {})))
                continue
            samples: dict[tuple[tuple[str, str], ...], float | int] = dict(values.get(name, {}))
            for key, function in functions.get(name, {}).items():
                try:
                    samples[key] = function()
                except Exception:  # noqa: BLE001 -- a broken gauge must not take /metrics down
                    samples[key] = math.nan
            if not samples:
                continue
            if name in helps:
                out.append(f"# HELP {name} {helps[name]}")
            out.append(f"# TYPE {name} {kinds[name]}")
            for key in sorted(samples):
                labels = {**self.const_labels, **dict(key)}
                out.append(f"{name}{_format_labels(labels)} {_format_value(samples[key])}")
        return "\n".join(out) + "\n" if out else ""

    def _render_summary(self, name: str, help: str | None, series: Mapping[tuple, tuple]) -> list[str]:
        if not series:
            return []
        out = [f"# HELP {name} {help}"] if help else []
        out.append(f"# TYPE {name} summary")
        for key in sorted(series):
            count, total = series[key]
            labels = _format_labels({**self.const_labels, **dict(key)})
            out.append(f"{name}_count{labels} {_format_value(int(count))}")
            out.append(f"{name}_sum{labels} {_format_value(float(total))}")
        return out

    async def handler(self, request: web.Request) -> web.Response:
        """GET /metrics."""
        return web.Response(body=self.render().encode(), headers={"Content-Type": PROMETHEUS_CONTENT_TYPE})
