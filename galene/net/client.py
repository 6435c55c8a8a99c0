"""The one HTTP client for every call that crosses a process boundary (FE<->BE, BE<->BE).

Owns `tune_socket`, `RpcUnavailable` and `RpcClient`. Every call made through `RpcClient`:

* has one deadline, armed as an event-loop timer (`with_deadline`), covering connect, sending
  the whole request body and receiving the whole response body;
* runs on a socket with TCP keepalive and `TCP_USER_TIMEOUT`, so a peer that vanishes is
  noticed by the kernel in seconds even between calls;
* on any timeout, connection error or cancellation, closes the connection it was using, so a
  connection in an unknown state never goes back to the pool;
* reports the outcome to an optional `FailureDetector` and `Metrics` registry;
* is listed, while it runs, with its peer and deadline in `/api/_tasks` (`net/inflight.py`).

Timeouts raise `DeadlineExceeded`; a peer that cannot be reached or drops the connection
raises `RpcUnavailable`. HTTP error statuses are answers, not failures: they are returned.
Redirects are not followed (the stream-load 307 is the caller's to handle).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterable
from typing import TYPE_CHECKING, Any, Self

import aiohttp
import msgspec
from yarl import URL

from galene.net import inflight
from galene.net.deadline import DeadlineExceeded, with_deadline

if TYPE_CHECKING:
    from galene.net.failure import FailureDetector
    from galene.net.metrics import Metrics

TOKEN_HEADER = "X-Galene-Token"


def tune_socket(
    sock: socket.socket,
    *,
    user_timeout_ms: int,
    keepalive_idle_s: int,
    keepalive_interval_s: int = 1,
    keepalive_count: int = 3,
) -> None:
    """Set keepalive, TCP_USER_TIMEOUT (Linux) and TCP_NODELAY on a TCP socket.

    Keepalive finds a dead peer on an idle connection after about
    idle + interval * count seconds; TCP_USER_TIMEOUT fails a connection whose sent data
    stays unacknowledged for `user_timeout_ms`, instead of the kernel's ~15 minutes of
    retransmissions. Options missing on the platform are skipped. Non-TCP sockets are left
    alone.
    """
    if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
        return
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    idle_option = getattr(socket, "TCP_KEEPIDLE", None) or getattr(socket, "TCP_KEEPALIVE", None)
    if idle_option is not None:
        sock.setsockopt(socket.IPPROTO_TCP, idle_option, max(1, int(keepalive_idle_s)))
    if hasattr(socket, "TCP_KEEPINTVL"):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, max(1, int(keepalive_interval_s)))
    if hasattr(socket, "TCP_KEEPCNT"):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, max(1, int(keepalive_count)))
    if hasattr(socket, "TCP_USER_TIMEOUT"):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, max(0, int(user_timeout_ms)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class RpcUnavailable(ConnectionError):
    """The peer could not be reached, refused, reset or dropped the connection mid-call."""

    def __init__(self, peer: str, reason: str):
        self.peer = peer
        self.reason = reason
        super().__init__(f"{peer} unavailable: {reason}")


class TunedConnector(aiohttp.TCPConnector):
    """A pooled TCP connector whose every socket goes through `tune_socket` before connect."""

    def __init__(self, *, user_timeout_ms: int, keepalive_idle_s: int, **kwargs: Any):
        self.user_timeout_ms = user_timeout_ms
        self.keepalive_idle_s = keepalive_idle_s
        super().__init__(socket_factory=self._make_socket, **kwargs)

    def _make_socket(self, addr_info: tuple) -> socket.socket:
        family, type_, proto, _, _ = addr_info
        sock = socket.socket(family=family, type=type_, proto=proto)
        try:
            tune_socket(sock, user_timeout_ms=self.user_timeout_ms, keepalive_idle_s=self.keepalive_idle_s)
        except OSError:
            sock.close()
            raise
        return sock


def _peer_of(url: URL) -> str:
    host = url.host or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return f"{host}:{url.port}" if url.port is not None else host


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _decode_json_body(body: bytes) -> Any:
    """The JSON value of `body`; None when empty; the text when it is not JSON (error pages)."""
    if not body.strip():
        return None
    try:
        return msgspec.json.decode(body)
    except msgspec.DecodeError:
        return body.decode("utf-8", errors="replace")


class RpcClient:
    """aiohttp-based JSON/bytes client shared by a process; one per event loop.

    The session is created on first use inside the running loop and is bound to that loop;
    using it from another loop raises RuntimeError.
    """

    def __init__(
        self,
        *,
        token: str = "",
        default_timeout_s: float = 10.0,
        user_timeout_ms: int = 5000,
        keepalive_idle_s: int = 5,
        limit_per_host: int = 64,
        detector: FailureDetector | None = None,
        metrics: Metrics | None = None,
    ):
        self.token = token
        self.default_timeout_s = default_timeout_s
        self.user_timeout_ms = user_timeout_ms
        self.keepalive_idle_s = keepalive_idle_s
        self.limit_per_host = limit_per_host
        self.detector = detector
        self.metrics = metrics
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    def _ensure_session(self) -> aiohttp.ClientSession:
        if self._closed:
            raise RuntimeError("RpcClient is closed")
        loop = asyncio.get_running_loop()
        if self._session is None:
            connector = TunedConnector(
                user_timeout_ms=self.user_timeout_ms,
                keepalive_idle_s=self.keepalive_idle_s,
                limit=0,
                limit_per_host=self.limit_per_host,
            )
            # aiohttp's own timeouts are off: the one deadline is with_deadline's timer.
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=aiohttp.ClientTimeout(total=None, connect=None, sock_read=None, sock_connect=None),
                auto_decompress=True,
            )
            self._loop = loop
        elif loop is not self._loop:
            raise RuntimeError("RpcClient is bound to another event loop; create one per loop")
        return self._session

    async def call_json(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        params: dict | None = None,
        headers: dict[str, str] | None = None,
        timeout_s: float | None = None,
    ) -> tuple[int, Any]:
        """Send `json` (when not None) as the body and return (status, decoded JSON body).

        The body is decoded as JSON; an empty body gives None and a body that is not JSON is
        returned as text.
        """
        all_headers = {"Accept": "application/json"}
        data = None
        if json is not None:
            data = msgspec.json.encode(json)
            all_headers["Content-Type"] = "application/json"
        all_headers.update(headers or {})
        status, _, body = await self.call(
            method, url, data=data, headers=all_headers, params=params, timeout_s=timeout_s
        )
        return status, _decode_json_body(body)

    async def call(
        self,
        method: str,
        url: str,
        *,
        data: bytes | AsyncIterable[bytes] | None = None,
        headers: dict[str, str] | None = None,
        params: dict | None = None,
        timeout_s: float | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        """One HTTP exchange; returns (status, response headers, whole response body).

        `timeout_s` (default `default_timeout_s`) bounds the whole exchange. Raises
        DeadlineExceeded or RpcUnavailable; the connection used is closed in both cases.
        """
        session = self._ensure_session()
        target = URL(url)
        peer = _peer_of(target)
        seconds = self.default_timeout_s if timeout_s is None else timeout_s
        all_headers = dict(headers or {})
        if self.token:
            all_headers[TOKEN_HEADER] = self.token
        responses: list[aiohttp.ClientResponse] = []

        async def exchange() -> tuple[int, dict[str, str], bytes]:
            async with session.request(
                method, target, data=data, headers=all_headers, params=params, allow_redirects=False
            ) as resp:
                responses.append(resp)
                body = await resp.read()
                return resp.status, dict(resp.headers), body

        try:
            with inflight.track("rpc", method, target.path, peer, seconds):
                result = await with_deadline(exchange(), seconds, f"{method} {target.path}", peer=peer)
        except DeadlineExceeded as exc:
            self._evict(responses)
            self._note(peer, "timeout", str(exc))
            raise
        except aiohttp.InvalidURL:
            raise
        except (aiohttp.ClientError, OSError) as exc:
            self._evict(responses)
            reason = _describe(exc)
            self._note(peer, "unavailable", reason)
            raise RpcUnavailable(peer, reason) from exc
        except BaseException:
            # Cancelled by our caller (or a bug): the connection's state is unknown.
            self._evict(responses)
            raise
        self._note(peer, "ok", "")
        return result

    @staticmethod
    def _evict(responses: list[aiohttp.ClientResponse]) -> None:
        # aiohttp already closes the connection when an exception interrupts a request; this
        # makes the guarantee ours rather than a property of one aiohttp version.
        for resp in responses:
            resp.close()

    def _note(self, peer: str, outcome: str, reason: str) -> None:
        if self.detector is not None:
            if outcome == "ok":
                self.detector.record_success(peer)
            else:
                self.detector.record_failure(peer, reason)
        if self.metrics is not None:
            self.metrics.inc("galene_rpc_requests_total", peer=peer, outcome=outcome)

    async def close(self) -> None:
        self._closed = True
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
