"""BE→BE forwarding of group-commit loads behind a load balancer (Doris #55326).

Behind a load balancer every BE receives a share of a table's loads, and group commit
(which merges a table's loads on one BE) would make one group, one rowset and one commit per
BE per interval. The FE therefore redirects such a load to
`<endpoint>/api/{db}/{table}/_stream_load_forward?<query>&forward_to=<owner host:http_port>`
(`fe/load_routing.py`), and whichever BE the balancer picks sends it on to the owner:

* a BE that is `forward_to` loads it itself; so does a BE that receives a request already
  forwarded once (the `X-Galene-Forwarded-By` hop header: a request never takes a second hop)
  or with forwarding switched off;
* any other BE streams the body to the owner's `_stream_load` over the internal client (one
  pooled, tuned connection per call; keepalive and TCP_USER_TIMEOUT; the connection evicted on
  any error) and relays the owner's reply byte for byte;
* the owner not reachable within `be_forward_connect_timeout_second` (refused, black-holed,
  reset) while no byte of the body was sent: this BE loads the data itself (any BE can group)
  and tells the FE, which picks a new owner for the table;
* a failure once body bytes went out: the load fails with an error naming the hop,
  `forward to 198.18.0.13:8040 failed after 3.0 s: …` (nothing acknowledged; a retry with the
  same label loads exactly once through the label machinery).

The owner's answer is awaited for `be_forward_timeout_second` for async_mode loads, else for
the load's own `timeout` (a sync_mode load waits for the merged commit).

Metrics: `galene_be_stream_load_forward_total{outcome}` (forwarded, owner_failed, self,
second_hop, fallback_local, failed), `galene_be_stream_load_forward_bytes_total`, and the
summary `galene_be_stream_load_forward_ms`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from urllib.parse import urlencode

from aiohttp import web

from galene.be.stream_load import StreamLoadReply
from galene.net.client import TOKEN_HEADER, RpcClient
from galene.net.deadline import DeadlineExceeded

log = logging.getLogger(__name__)

HOP_HEADER = "X-Galene-Forwarded-By"
# Headers of the client's request that describe its connection, not the load.
_HOP_BY_HOP = {
    "host",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "expect",
    "upgrade",
    "proxy-connection",
    "content-length",
}
_CHUNK = 1 << 16
DEFAULT_LOAD_TIMEOUT_S = 600


class Forwarder:
    def __init__(self, be):
        self.be = be
        self._rpc: RpcClient | None = None

    @property
    def rpc(self) -> RpcClient:
        """A client of its own: a table's loads arrive many at a time, each holding one
        connection to the owner while its body streams (the FE calls keep their pool)."""
        if self._rpc is None:
            self._rpc = self.be.peer_client(limit_per_host=1024)
        return self._rpc

    async def close(self) -> None:
        if self._rpc is not None:
            await self._rpc.close()

    def routes(self) -> list:
        h = self.handle
        return [
            web.put("/api/{db}/{table}/_stream_load_forward", h),
            web.put("/api/{db}/{table}/_stream_load_forward/", h),
            web.post("/api/_internal/forward_ping", self.handle_ping),
        ]

    def me(self) -> set[str]:
        be = self.be
        names = {f"{be.host}:{be.http_port}"}
        registered = be.identity.get("registered_host")
        if registered:
            names.add(f"{registered}:{be.http_port}")
        return names

    async def handle_ping(self, request: web.Request) -> web.Response:
        """The canary's BE→BE hop: this BE's forward path answers."""
        if request.headers.get(TOKEN_HEADER, "") != self.be.token or not self.be.token:
            return web.json_response({"status": "ERROR", "message": "invalid token"}, status=403)
        return web.json_response({"status": "OK"})

    async def handle(self, request: web.Request) -> web.StreamResponse:
        be = self.be
        forward_to = request.query.get("forward_to", "").strip()
        if not forward_to or forward_to in self.me():
            be.metrics.inc("galene_be_stream_load_forward_total", outcome="self")
            return await be.handle_stream_load(request)
        if request.headers.get(HOP_HEADER) or not be.cfg.enable_group_commit_streamload_be_forward:
            # A second hop is never taken (a load balancer pointing back at the BEs, a forward
            # loop): the load is this BE's.
            be.metrics.inc("galene_be_stream_load_forward_total", outcome="second_hop")
            return await be.handle_stream_load(request)
        return await self._forward(request, forward_to)

    def _deadline_s(self, request: web.Request) -> float:
        cfg = self.be.cfg
        if (request.headers.get("group_commit") or "").strip().lower() == "async_mode":
            return float(cfg.be_forward_timeout_second)
        try:
            return float(int(request.headers.get("timeout") or DEFAULT_LOAD_TIMEOUT_S))
        except ValueError:
            return float(DEFAULT_LOAD_TIMEOUT_S)

    async def _forward(self, request: web.Request, forward_to: str) -> web.StreamResponse:
        be = self.be
        db, table = request.match_info["db"], request.match_info["table"]
        query = [(k, v) for k, v in request.query.items() if k != "forward_to"]
        url = f"http://{forward_to}/api/{db}/{table}/_stream_load"
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        if request.content_length is not None:
            headers["Content-Length"] = str(request.content_length)
        headers[HOP_HEADER] = f"{be.host}:{be.http_port}"
        connect_s = float(be.cfg.be_forward_connect_timeout_second)
        t0 = time.monotonic()
        state = {"sent": 0}
        connected = asyncio.Event()

        async def body():
            connected.set()  # the owner accepted the connection and has the request head
            async for chunk in request.content.iter_chunked(_CHUNK):
                state["sent"] += len(chunk)
                yield chunk

        if query:
            url += "?" + urlencode(query)
        call = asyncio.ensure_future(
            self.rpc.call(
                "PUT", url, data=body(), headers=headers, timeout_s=connect_s + self._deadline_s(request)
            )
        )
        waiter = asyncio.ensure_future(connected.wait())
        try:
            await asyncio.wait({call, waiter}, timeout=connect_s, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            call.cancel()
            raise
        finally:
            waiter.cancel()
        if not call.done() and not connected.is_set():
            call.cancel()
            with contextlib.suppress(BaseException):
                await call
            return await self._fallback(request, forward_to, f"no connection within {connect_s:.1f} s", t0)
        try:
            status, resp_headers, payload = await call
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - DeadlineExceeded, RpcUnavailable: the hop failed
            if not state["sent"]:
                return await self._fallback(request, forward_to, _reason(e), t0)
            elapsed = time.monotonic() - t0
            be.metrics.inc("galene_be_stream_load_forward_total", outcome="failed")
            message = f"forward to {forward_to} failed after {elapsed:.1f} s: {_reason(e)}"
            log.warning("%s/%s: %s", db, table, message)
            reply = StreamLoadReply(status="Fail", message=message, label=request.headers.get("label") or "")
            reply.load_time_ms = int(elapsed * 1000)
            return web.Response(body=reply.to_json(), content_type="application/json", charset="utf-8")
        elapsed_ms = (time.monotonic() - t0) * 1000
        be.metrics.inc(
            "galene_be_stream_load_forward_total", outcome="forwarded" if status == 200 else "owner_failed"
        )
        be.metrics.inc("galene_be_stream_load_forward_bytes_total", state["sent"])
        be.metrics.observe("galene_be_stream_load_forward_ms", elapsed_ms)
        be.health.note_load(db, table, 0)
        # The owner's reply, byte for byte (its status, body and content type).
        ctype = resp_headers.get("Content-Type", "application/json")
        resp = web.Response(status=status, body=payload)
        resp.headers["Content-Type"] = ctype
        return resp

    async def _fallback(
        self, request: web.Request, forward_to: str, reason: str, t0: float
    ) -> web.StreamResponse:
        """The owner cannot be reached and no byte of the body left: load it here, tell the FE."""
        be = self.be
        db, table = request.match_info["db"], request.match_info["table"]
        log.warning(
            "forward of a load into %s.%s to %s failed before any body byte (%s): loading it here",
            db, table, forward_to, reason,
        )  # fmt: skip
        be.metrics.inc("galene_be_stream_load_forward_total", outcome="fallback_local")
        be.metrics.observe("galene_be_stream_load_forward_ms", (time.monotonic() - t0) * 1000)
        task = asyncio.ensure_future(self._tell_fe(db, table, forward_to, reason))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return await be.handle_stream_load(request)

    async def _tell_fe(self, db: str, table: str, owner: str, reason: str) -> None:
        try:
            await self.be.fe_call(
                "POST",
                "/api/_internal/group_commit/owner_unreachable",
                {
                    "db": db,
                    "table": table,
                    "owner": owner,
                    "reason": reason,
                    "backend_id": self.be.backend_id,
                },
                timeout_s=5,
            )
        except Exception as e:  # noqa: BLE001 - the FE learns it from the canary anyway
            log.info("could not tell the FE that %s is unreachable: %s", owner, e)


def _reason(e: BaseException) -> str:
    if isinstance(e, DeadlineExceeded):
        return f"no answer within {e.seconds:g} s"
    text = str(e)
    return text if text else type(e).__name__
