"""The BE process: HTTP stream load, error logs, heartbeat answers, metrics.

A BE owns the ingest edge and nothing the FE decides: it learns the cluster token and the
FE's address from the FE's heartbeat (or from configuration in standalone mode) and asks
the FE to begin/commit/abort every transaction. Its identity lives in `<be dir>/cluster.json`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from galene import NODE_VERSION
from galene.be import compaction_api
from galene.be.error_log import ErrorLogStore
from galene.be.forward import HOP_HEADER, Forwarder
from galene.be.group_commit.manager import GroupCommitManager
from galene.be.health import BeHealth
from galene.be.load_body import read_body
from galene.be.stream_load import StreamLoadReply, execute_stream_load
from galene.be.stream_load_2pc import handle_be_2pc
from galene.be.wal_replica import ReplicaStore
from galene.common.debug_points import DebugPoints
from galene.common.errors import LoadError
from galene.config import Config
from galene.load.headers import parse_basic_auth
from galene.net.client import TOKEN_HEADER, RpcClient
from galene.net.failure import FailureDetector
from galene.net.inflight import install_task_ages
from galene.net.metrics import Metrics
from galene.net.server import (
    GaleneRequestHandler,
    make_app_runner,
    make_server_socket,
    read_json_object,
    server_socket_options,
)
from galene.net.tasks_dump import TASKS_EXTRA, tasks_dump_handler
from galene.storage.fs import filesystem_for

log = logging.getLogger(__name__)
# How long /api/_tasks waits for the ingest worker's own thread dump (a stuck worker gives none).
DUMP_WAIT_S = 1.0

_NOOP_REPLY = json.dumps({"Status": "Success", "Message": "OK"}, indent=4) + "\n"
# A heartbeat is a few hundred bytes of JSON; anything near this is not one.
HEARTBEAT_MAX_BYTES = 64 << 10


class BeServer:
    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.host = cfg.priority_networks.split(",")[0].split("/")[0] or "127.0.0.1"
        self.http_port = cfg.be_http_port
        self.identity_path = cfg.be_path / "cluster.json"
        self.identity: dict = {}
        self.fs, self.root = filesystem_for(cfg.storage_uri)
        self.max_body_bytes = cfg.streaming_load_max_mb * 1024 * 1024
        self.max_error_rows = cfg.load_error_log_max_rows
        self.metrics = Metrics()
        self.start_time = time.time()
        self.rpc: RpcClient | None = None
        self.error_log: ErrorLogStore | None = None
        self._runner: web.AppRunner | None = None
        self.last_heartbeat = 0.0
        self.group_commit: GroupCommitManager | None = None
        self.health = BeHealth(self)
        self.forwarder = Forwarder(self)
        # The other BEs (address, alive, writable), as the FE's heartbeat lists them: WAL
        # replicas of replication_num > 1 groups go there (be/wal_replica.py).
        self.peers: list[dict] = []
        # Set by the first heartbeat since this process started (it lists the peers): until
        # then a replicated group would see no peer and cap its R at 1.
        self.peers_known = asyncio.Event()
        self.wal_replicas = ReplicaStore(self)
        self.debug_points = DebugPoints(cfg.enable_debug_points, on_change=self._debug_point_changed)

    # --- identity -------------------------------------------------------------------
    @property
    def backend_id(self) -> int:
        return int(self.identity.get("backend_id", 0))

    @property
    def token(self) -> str:
        return self.identity.get("token") or self.cfg.cluster_token

    def peer_client(self, limit_per_host: int) -> RpcClient:
        """A client for BE→BE calls (forwarding, WAL copies) with this BE's socket settings,
        failure detector and metrics, and a connection pool of its own."""
        return RpcClient(
            user_timeout_ms=self.cfg.tcp_user_timeout_ms,
            keepalive_idle_s=self.cfg.tcp_keepalive_idle_s,
            limit_per_host=limit_per_host,
            detector=self.rpc.detector if self.rpc is not None else None,
            metrics=self.metrics,
        )

    def fe_peer(self) -> str:
        host = self.identity.get("fe_host") or self.cfg.fe_host
        port = self.identity.get("fe_http_port") or self.cfg.fe_http_port
        return f"{host}:{port}"

    def fe_base(self) -> str:
        return f"http://{self.fe_peer()}"

    def _load_identity(self) -> None:
        if self.identity_path.exists():
            self.identity = json.loads(self.identity_path.read_text())

    def _save_identity(self) -> None:
        self.identity_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.identity_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.identity))
        os.replace(tmp, self.identity_path)

    async def fe_call(self, method: str, path: str, payload: dict, timeout_s: float | None = None):
        assert self.rpc is not None
        return await self.rpc.call_json(
            method,
            self.fe_base() + path,
            json=payload,
            headers={TOKEN_HEADER: self.token},
            timeout_s=timeout_s or self.cfg.rpc_timeout_ms / 1000,
        )

    # --- lifecycle ------------------------------------------------------------------
    async def start(self) -> None:
        self.cfg.be_path.mkdir(parents=True, exist_ok=True)
        self._load_identity()
        self.rpc = RpcClient(
            default_timeout_s=self.cfg.rpc_timeout_ms / 1000,
            user_timeout_ms=self.cfg.tcp_user_timeout_ms,
            keepalive_idle_s=self.cfg.tcp_keepalive_idle_s,
            detector=FailureDetector(threshold=3),
            metrics=self.metrics,
        )
        # Replays the previous run's group-commit WAL in the background; group-commit loads
        # wait for it, everything else is served at once (heartbeats tell us who we are).
        self.group_commit = GroupCommitManager(self)
        self.group_commit.start()
        app = web.Application()
        app.add_routes(
            [
                web.put("/api/{db}/{table}/_stream_load", self.handle_stream_load),
                web.put("/api/{db}/{table}/_stream_load/", self.handle_stream_load),
                web.put("/api/_noop_load", self.handle_noop_load),
                *(
                    web.put(path, self.handle_stream_load_2pc)
                    for path in (
                        "/api/{db}/{table}/_stream_load_2pc",
                        "/api/{db}/{table}/_stream_load_2pc/",
                        "/api/{db}/_stream_load_2pc",
                        "/api/{db}/_stream_load_2pc/",
                    )
                ),
                web.get("/api/_load_error_log", self.handle_error_log),
                *self.health.routes(),
                *self.forwarder.routes(),
                *self.wal_replicas.routes(),
                *self.debug_points.routes(),
                web.post("/api/_internal/heartbeat", self.handle_heartbeat),
                web.get("/api/health", self.handle_health),
                web.get("/metrics", self.handle_metrics),
                # Admin routes: ADMIN_PRIV or NODE_PRIV, checked by the FE (the BE keeps no users).
                # Compaction's read-only GETs stay open as in Doris (enable_all_http_auth is off
                # by default): SHOW TABLETS hands out their URL as CompactionStatus.
                web.get("/api/_tasks", self._admin_only(tasks_dump_handler)),
                *(
                    web.route(
                        r.method, r.path, r.handler if r.method == "GET" else self._admin_only(r.handler)
                    )
                    for r in compaction_api.routes(self)
                ),
            ]
        )
        app[TASKS_EXTRA] = self._tasks_extra
        install_task_ages()
        self._runner = make_app_runner(app, self.cfg, handler_class=_DorisErrorRequestHandler)
        await self._runner.setup()
        sock = make_server_socket(self.host, self.http_port, **server_socket_options(self.cfg))
        self.http_port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        if self.cfg.heartbeat_service_port and self.cfg.heartbeat_service_port != self.http_port:
            hb = make_server_socket(self.host, self.cfg.heartbeat_service_port, **server_socket_options(self.cfg))
            await web.SockSite(self._runner, hb).start()
        self.error_log = ErrorLogStore(self.cfg.error_log_path, self.host, self.http_port)
        self.health.start()
        self.wal_replicas.start()
        log.info("BE listening on %s:%s", self.host, self.http_port)

    async def stop(self) -> None:
        await self.health.stop()
        await self.forwarder.close()
        if self.group_commit is not None:
            await self.group_commit.stop()
        await self.wal_replicas.stop()
        if self._runner is not None:
            await self._runner.cleanup()
        if self.rpc is not None:
            await self.rpc.close()

    async def _tasks_extra(self) -> tuple[str, dict]:
        """The ingest worker's part of /api/_tasks: its oldest unanswered request (as a call in
        flight whose deadline is the BE's own "stuck" threshold, the canary timeout) and its
        threads, or why it cannot say."""
        gc = self.group_commit
        worker = gc.worker if gc is not None else None
        calls: list[dict] = []
        if worker is None or not worker.running():
            text = "ingest worker: not running\n"
        else:
            oldest = worker.oldest_pending()
            waiting = ""
            if oldest is not None:
                op, age = oldest
                limit = self.health.canary_timeout_s
                waiting = f"oldest unanswered request: {op}, {age:.1f}s\n"
                calls.append(
                    {
                        "kind": "ipc",
                        "method": op,
                        "path": "request",
                        "peer": f"ingest worker pid {worker.pid}",
                        "start_time": time.time() - age,
                        "age_s": round(age, 3),
                        "deadline_s": limit,
                        "overdue": age > limit,
                        "task": worker.name,
                    }
                )
            try:
                text = waiting + await asyncio.wait_for(worker.request("dump"), DUMP_WAIT_S)
            except TimeoutError:
                text = f"== ingest worker pid {worker.pid}: no answer to a dump in {DUMP_WAIT_S:g}s ==\n{waiting}"
            except Exception as e:  # noqa: BLE001 - shown in the dump
                text = f"== ingest worker pid {worker.pid}: {e} ==\n{waiting}"
        return "\n" + text, {"ingest_worker": text, "calls": calls}

    def _debug_point_changed(self, name: str, seconds: float) -> None:
        """Points of the ingest worker live in its process (it parks its own thread there)."""
        gc = self.group_commit
        if name.startswith("ingest_worker.") and gc is not None and gc.worker.running():
            fut = gc.worker.request("debug_point", name, seconds)
            fut.add_done_callback(lambda f: f.cancelled() or f.exception())

    # --- admin routes ---------------------------------------------------------------
    def _admin_only(self, handler):
        async def guarded(request: web.Request) -> web.StreamResponse:
            refusal = await self._admin_refusal(request)
            return refusal if refusal is not None else await handler(request)

        return guarded

    async def _admin_refusal(self, request: web.Request) -> web.Response | None:
        """None when the request may use an admin route: Basic auth of a user with ADMIN_PRIV or
        NODE_PRIV (the FE decides), or the cluster's inter-node token."""
        token = request.headers.get(TOKEN_HEADER)
        if token and self.token and token == self.token:
            return None
        pair = parse_basic_auth(request.headers.get("Authorization"))
        if pair is None:
            return web.json_response(
                {
                    "status": "FAILED",
                    "msg": "Access denied for user. Please check your username and password.",
                },
                status=401,
                headers={"WWW-Authenticate": 'Basic realm="galene"'},
            )
        try:
            status, body = await self.fe_call(
                "POST", "/api/_internal/auth/check", {"user": pair[0], "password": pair[1]}
            )
        except Exception as e:  # noqa: BLE001 - no FE, no privilege check: refused, saying why
            return web.json_response(
                {"status": "FAILED", "msg": f"could not check privileges at the FE: {e}"}, status=503
            )
        if status == 200 and isinstance(body, dict) and body.get("status") == "OK":
            return None
        body = body if isinstance(body, dict) else {}
        return web.json_response(
            {"status": "FAILED", "msg": str(body.get("message") or f"the FE refused the check ({status})")},
            status=int(body.get("http_status") or 401),
        )

    # --- handlers -------------------------------------------------------------------
    async def handle_stream_load(self, request: web.Request) -> web.Response:
        db = request.match_info["db"]
        table = request.match_info["table"]
        self.metrics.inc("galene_be_stream_load_requests_total")
        health = self.health
        health.in_flight_loads += 1
        try:
            if HOP_HEADER in request.headers:  # a load another BE forwarded here (be/forward.py)
                await self.debug_points.park("stream_load.forwarded")
            reply = await execute_stream_load(self, request, db, table)
        finally:
            health.in_flight_loads -= 1
        health.note_load(db, table, reply.load_bytes)
        self.metrics.inc("galene_be_stream_load_rows_total", reply.number_loaded_rows)
        if reply.status not in ("Success", "Publish Timeout"):
            self.metrics.inc("galene_be_stream_load_failures_total")
        return web.Response(body=reply.to_json(), content_type="application/json", charset="utf-8")

    async def handle_stream_load_2pc(self, request: web.Request) -> web.Response:
        return await handle_be_2pc(self, request)

    async def handle_error_log(self, request: web.Request) -> web.Response:
        assert self.error_log is not None
        text = self.error_log.read(request.query.get("file", ""))
        if text is None:
            return web.Response(status=404, text="error log not found\n")
        return web.Response(text=text)

    async def handle_heartbeat(self, request: web.Request) -> web.Response:
        # The FE cut off from this BE while clients and peers still reach it (a partition).
        await self.debug_points.park("heartbeat.handler")
        payload = await read_json_object(request, HEARTBEAT_MAX_BYTES)
        known = self.identity.get("cluster_id")
        if known and payload.get("cluster_id") and int(known) != int(payload["cluster_id"]):
            return web.json_response(
                {
                    "status": "ERROR",
                    "message": f"invalid cluster id. ignore. cluster id: {payload['cluster_id']}",
                },
                status=403,
            )
        changed = {
            "cluster_id": payload.get("cluster_id"),
            "token": payload.get("token"),
            "fe_host": payload.get("fe_host"),
            "fe_http_port": payload.get("fe_http_port"),
            "backend_id": payload.get("backend_id"),
        }
        if any(self.identity.get(k) != v for k, v in changed.items()):
            self.identity.update(changed)
            await asyncio.to_thread(self._save_identity)
        self.identity["heartbeat_interval_s"] = payload.get("heartbeat_interval_s")
        self.identity["registered_host"] = payload.get("be_host")
        peers = payload.get("peers")
        if isinstance(peers, list):
            self.peers = [p for p in peers if isinstance(p, dict) and p.get("addr")]
            self.peers_known.set()
        self.last_heartbeat = time.time()
        lease = payload.get("wal_lease_until")
        if isinstance(lease, (int, float)) and lease > 0:
            self.wal_replicas.lease.renew(float(lease))
        self.health.set_draining(bool(payload.get("decommissioned")))
        return web.json_response(
            {
                "status": "OK",
                "http_port": self.http_port,
                "be_port": self.cfg.be_port,
                "brpc_port": self.cfg.brpc_port,
                "version": NODE_VERSION,  # SHOW BACKENDS `Version`, in Doris' shape
                "start_time": self.start_time,
                "cpu_cores": os.cpu_count(),
                # The BE's own view of its write path (SHOW BACKENDS), bytes received per table
                # since the last heartbeat (the FE's group-commit affinity), and the drain.
                "health": self.health.report(),
                "table_bytes": self.health.take_table_bytes(),
                "drain": await self.health.drain_status() if self.health.draining else None,
            }
        )

    async def handle_noop_load(self, request: web.Request) -> web.Response:
        """Reads the body and answers a fixed JSON: the ceiling of this HTTP stack (bench/streamload_small.py)."""
        await read_body(request, self.max_body_bytes)  # as a stream load reads its body
        return web.Response(text=_NOOP_REPLY, content_type="application/json")

    async def handle_health(self, request: web.Request) -> web.Response:
        """200, or 503 naming why while this BE knows its write path is broken (be/health.py)."""
        return await self.health.handle_health(request)

    async def handle_metrics(self, request: web.Request) -> web.Response:
        return web.Response(text=self.metrics.render(), content_type="text/plain")


# Doris' BE text for a request that declares both body framings (its stream-load checks run
# on the headers; aiohttp's parser refuses such a request before any handler).
BOTH_FRAMINGS_MESSAGE = "[INTERNAL_ERROR]please do not set both content_length and transfer-encoding"


class _DorisErrorRequestHandler(GaleneRequestHandler):
    """The BE's per-connection handler: broken HTTP is answered in Doris' stream-load JSON.

    A request the parser refuses gets `{"Status": "Fail", "Message": ...}` with the 431/400 of
    `GaleneRequestHandler` (a request with both Content-Length and Transfer-Encoding gets Doris'
    own text with 200, as Doris answers it from its load handler); a body that breaks or ends
    early fails the load with a LoadError, which the load answers and cleans up like any other
    failure (txn aborted, files deleted).
    """

    def framing_reply(self, status: int, message: str, exc: HttpProcessingError) -> web.Response:
        if "Transfer-Encoding" in exc.message and "Content-Length" in exc.message:
            status, message = 200, BOTH_FRAMINGS_MESSAGE
        else:
            message = f"[INVALID_ARGUMENT]{message}"
        reply = StreamLoadReply(status="Fail", message=message)
        return web.Response(status=status, body=reply.to_json(), content_type="application/json")

    def body_error(self, message: str) -> BaseException:
        return LoadError(message)
