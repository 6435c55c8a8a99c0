"""Helpers every Galene HTTP server uses: listening sockets and request bounds.

Owns `make_server_socket` (tuned listening sockets for `aiohttp.web.SockSite`),
`make_app_runner` and `GaleneRequestHandler` (the bounds on every request head, from
`http_max_headers` / `http_max_header_bytes`, and the one answer to broken HTTP framing: a clear
4xx, one WARNING line, the connection closed, and a body read that fails at once instead of
hanging), and `read_json_object` (a JSON request body read within a bound). The task dump behind
`/api/_tasks` is `net/tasks_dump.py`; the Prometheus registry behind `/metrics`, `net/metrics.py`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from typing import TYPE_CHECKING, Any

import msgspec
from aiohttp import web
from aiohttp.http_exceptions import BadHttpMessage, HttpProcessingError, LineTooLong
from aiohttp.streams import EMPTY_PAYLOAD
from aiohttp.web_protocol import RequestHandler, RequestPayloadError, _ErrInfo
from aiohttp.web_server import Server

from galene.net.client import tune_socket

if TYPE_CHECKING:
    from galene.config import Config

log = logging.getLogger(__name__)


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
