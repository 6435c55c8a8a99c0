"""The FE process: metadata, the SQL and HTTP endpoints, backends, Spark, housekeeping.

`FeServer.start()` recovers metadata (newest valid image + journal tail), starts the HTTP
API and the MySQL endpoint, starts warming the Spark session in the background (queries
wait for it; DDL and loads do not), and runs the heartbeat, transaction-timeout,
storage-GC and compaction loops and the streaming-job runner.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time

from aiohttp import web

from galene import DORIS_COMPAT_VERSION, VERSION_COMMENT
from galene.common.debug_points import DebugPoints
from galene.config import Config
from galene.fe import auth
from galene.fe.backends import BackendMonitor
from galene.fe.canary import CanaryMonitor
from galene.fe.catalog_service import CatalogService
from galene.fe.compaction import CompactionService
from galene.fe.diagnose import routes as diagnose_routes
from galene.fe.executor import SqlExecutor
from galene.fe.http_api import FeHttpApi
from galene.fe.jobs import JobRunner
from galene.fe.load_routing import internal_routes as load_routing_routes
from galene.fe.mtmv import MvScheduler
from galene.fe.mysql.boundary import ResultColumn, StatementResult
from galene.fe.mysql.server import GaleneMysqlServer
from galene.fe.wal_replicas import ReplicaArbiter
from galene.meta.store import MetaStore
from galene.net.client import RpcClient
from galene.net.failure import FailureDetector
from galene.net.inflight import install_task_ages
from galene.net.metrics import Metrics
from galene.net.server import make_app_runner, make_server_socket, server_socket_options
from galene.storage.fs import filesystem_for
from galene.storage.gc import collect_garbage
from galene.storage.rowset import delete_rowset_files

log = logging.getLogger(__name__)
# Deadline of each step of a stop (see FeServer.stop).
STOP_STEP_S = 15.0


class FeServer:
    def __init__(self, cfg: Config, *, start_engine: bool = True):
        self.cfg = cfg
        self.host = cfg.priority_networks.split(",")[0].split("/")[0] or "127.0.0.1"
        self.http_port = cfg.http_port
        self.query_port = cfg.query_port
        self.start_time = time.time()
        self.metrics = Metrics()
        self.store = MetaStore(
            cfg.meta_path,
            sync_policy=cfg.master_sync_policy,
            roll_num=cfg.edit_log_roll_num,
            node_name=f"fe_{self.host.replace('.', '_')}_{cfg.edit_log_port}",
        )
        self.catalog: CatalogService | None = None
        self.engine = None
        self.engine_ready = threading.Event()
        self.engine_error: BaseException | None = None
        self._start_engine = start_engine
        # Rowset ids of statements whose engine job is writing files now (GC leaves them alone).
        self.running_rowset_ids: set[str] = set()
        self.rpc: RpcClient | None = None
        self.backends = BackendMonitor(
            self,
            interval_s=cfg.heartbeat_interval_second,
            failure_threshold=cfg.max_backend_heartbeat_failure_times,
        )
        self.wal_replicas = ReplicaArbiter(self)
        self.canary = CanaryMonitor(
            self,
            interval_s=cfg.be_canary_interval_second,
            timeout_s=cfg.be_canary_timeout_second,
            failure_times=cfg.be_canary_failure_times,
        )
        self.debug_points = DebugPoints(cfg.enable_debug_points)
        self.executor: SqlExecutor | None = None
        self.mysql: GaleneMysqlServer | None = None
        self._runner: web.AppRunner | None = None
        self._tasks: list[asyncio.Task] = []
        self.fs, self.root = filesystem_for(cfg.storage_uri)
        self.compaction = CompactionService(self)
        self.jobs = JobRunner(self)  # streaming jobs (CREATE JOB … ON STREAMING)
        self.mtmv = MvScheduler(self)  # async materialized views' refreshes

    @property
    def state(self):
        return self.store.state

    # --- lifecycle ------------------------------------------------------------------
    async def start(self) -> None:
        await asyncio.to_thread(self.store.open)
        self.catalog = CatalogService(
            self.store,
            label_keep_max_second=self.cfg.label_keep_max_second,
            default_load_timeout_s=min(self.cfg.stream_load_default_timeout_second, 600),
            precommit_timeout_s=self.cfg.stream_load_default_precommit_timeout_second,
            # Doris lifts the limit where compaction is off (disable_auto_compaction).
            max_tablet_version_num=0 if self.cfg.disable_auto_compaction else self.cfg.max_tablet_version_num,
        )
        self.catalog.txns.on_many_versions = self.compaction.note_many_versions
        # Users: a new cluster's initial root password; the warning while root is open.
        fresh = self.store.last_journal_id == 0 and self.store.last_image_id == 0
        await asyncio.to_thread(
            functools.partial(
                auth.on_fe_start, self.catalog, fresh=fresh,
                initial_root_password=self.cfg.initial_root_password, host=self.host,
            )
        )  # fmt: skip
        self.rpc = RpcClient(
            token=self.store.token,
            default_timeout_s=self.cfg.rpc_timeout_ms / 1000,
            user_timeout_ms=self.cfg.tcp_user_timeout_ms,
            keepalive_idle_s=self.cfg.tcp_keepalive_idle_s,
            detector=FailureDetector(threshold=self.cfg.max_backend_heartbeat_failure_times),
            metrics=self.metrics,
        )
        if self._start_engine:
            threading.Thread(target=self._warm_engine, name="galene-spark-start", daemon=True).start()

        install_task_ages()
        app = web.Application()
        api = FeHttpApi(self)
        app.add_routes(api.routes())
        app.add_routes(self.canary.routes())
        app.add_routes(load_routing_routes(self))
        app.add_routes(self.debug_points.routes())
        app.add_routes(diagnose_routes(self, api))
        self._runner = make_app_runner(app, self.cfg)
        await self._runner.setup()
        sock = make_server_socket(self.host, self.cfg.http_port, **server_socket_options(self.cfg))
        self.http_port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()

        self.executor = SqlExecutor(self)
        self.mysql = GaleneMysqlServer(
            self.executor,
            host=self.host,
            port=self.cfg.query_port,
            version=DORIS_COMPAT_VERSION,
            version_comment=VERSION_COMMENT,
            qe_max_connection=self.cfg.qe_max_connection,
            max_user_connections=self.cfg.max_user_connections,
            connect_timeout=self.cfg.connect_timeout,
            max_allowed_packet=self.cfg.max_allowed_packet,
            wait_timeout=self.cfg.wait_timeout,
            max_sql_nesting_depth=self.cfg.max_sql_nesting_depth,
        )
        await self.mysql.start()
        self.query_port = self.mysql.port

        if self.cfg.standalone_backend and not self.state.backends:
            # `galene start`: the supervisor's BE joins an empty cluster by itself.
            host, _, port = self.cfg.standalone_backend.rpartition(":")
            await asyncio.to_thread(self.catalog.add_backend, host, int(port))
        self.backends.start()
        self.canary.start()
        self._tasks.append(asyncio.create_task(self._housekeeping(), name="fe-housekeeping"))
        self.compaction.start()
        self.jobs.start()
        self.mtmv.start()
        log.info("FE ready: http %s:%s, mysql %s:%s", self.host, self.http_port, self.host, self.query_port)

    async def stop(self) -> None:
        """Stop every service, then the engine and the metadata store. Each step has a deadline
        (a step stuck on the engine — a statement whose job runs on — must not keep the engine,
        whose stop would end that job, from stopping)."""
        for t in self._tasks:
            t.cancel()
        # (name, coroutine, deadline); streaming jobs bound their own stop.
        steps = [("materialized views", self.mtmv.stop(), STOP_STEP_S), ("streaming jobs", self.jobs.stop(), None),
                 ("compaction", self.compaction.stop(), STOP_STEP_S), ("canary", self.canary.stop(), STOP_STEP_S),
                 ("backends", self.backends.stop(), STOP_STEP_S)]  # fmt: skip
        if self.mysql is not None:
            steps.append(("MySQL endpoint", self.mysql.stop(), STOP_STEP_S))
        if self._runner is not None:
            steps.append(("HTTP server", self._runner.cleanup(), STOP_STEP_S))
        if self.rpc is not None:
            steps.append(("RPC client", self.rpc.close(), STOP_STEP_S))
        for name, step, deadline in steps:
            try:
                await asyncio.wait_for(step, deadline)
            except Exception:  # stopping goes on
                log.warning("stopping the %s failed or passed its deadline; going on", name, exc_info=True)
        if self.engine is not None:
            await asyncio.to_thread(self.engine.stop)
        await asyncio.to_thread(self.store.close)

    # --- Spark ----------------------------------------------------------------------
    def _warm_engine(self) -> None:
        try:
            from galene.engine.session import SparkEngine

            conf = {
                "spark.driver.memory": self.cfg.spark_driver_memory,
                "spark.sql.shuffle.partitions": str(self.cfg.spark_shuffle_partitions),
            }
            if self.cfg.spark_driver_java_options.strip():
                conf["spark.driver.extraJavaOptions"] = self.cfg.spark_driver_java_options.strip()
            engine = SparkEngine(
                self.cfg.spark_master or None, conf=conf, engine=self.cfg.engine, work_dir=self.cfg.data_dir
            )
            engine.start()
            self.engine = engine
        except BaseException as e:  # surfaced to queries, not fatal for DDL and loads
            log.exception("Spark failed to start")
            self.engine_error = e
        finally:
            self.engine_ready.set()

    async def wait_engine(self) -> None:
        if not self.engine_ready.is_set():
            await asyncio.to_thread(self.engine_ready.wait, 300)
        if self.engine is None:
            from galene.common.errors import GaleneError

            raise GaleneError(f"query engine (Spark) is not available: {self.engine_error}")

    # --- housekeeping ---------------------------------------------------------------
    async def _housekeeping(self) -> None:
        last_gc = time.monotonic()
        while True:
            await asyncio.sleep(5)
            try:
                await asyncio.to_thread(self.catalog.txns.expire_txns)
                # PRECOMMITTED txns past their timeout: the FE holds their file list.
                freed = await asyncio.to_thread(self.catalog.txns.abort_stale_precommitted)
                if freed:
                    await asyncio.to_thread(delete_rowset_files, self.fs, self.root, freed)
                if time.monotonic() - last_gc > self.cfg.gc_interval_seconds:
                    last_gc = time.monotonic()
                    await self.run_gc()
            except Exception:
                log.exception("housekeeping failed")

    async def run_gc(self, grace_seconds: float | None = None) -> list[str]:
        grace = self.cfg.gc_grace_seconds if grace_seconds is None else grace_seconds
        now = time.time()
        # Retired files stay referenced for the configured grace after their replacement
        # (a running query may read them), whatever grace this run was asked for.
        referenced = self.catalog.referenced_files(self.cfg.gc_grace_seconds, now)
        deleted = await asyncio.to_thread(
            collect_garbage, self.fs, self.root, referenced, grace, None, set(self.running_rowset_ids)
        )
        await asyncio.to_thread(self.catalog.purge_retired_files, now - self.cfg.gc_grace_seconds)
        return deleted

    async def show_proc(self, path: str) -> StatementResult:
        from galene.common.types import ColumnType
        from galene.meta import tools as meta_tools

        s = ColumnType(name="VARCHAR", length=255)
        parts = [p for p in path.strip().strip("'\"").split("/") if p]
        if parts == ["backends"] and self.executor is not None:  # the rows of SHOW BACKENDS
            return await self.executor.show_backends()
        if parts[:1] == ["bdbje"]:
            if len(parts) == 1:
                first = self.store.last_image_id + 1
                count = self.store.last_journal_id - self.store.last_image_id
                rows = [(str(first), str(count), "")]
                return StatementResult(
                    columns=[
                        ResultColumn("DbNames", s),
                        ResultColumn("JournalNumber", s),
                        ResultColumn("Comment", s),
                    ],
                    rows=rows,
                )
            start = int(parts[1]) if parts[1].isdigit() else 1
            entries = await asyncio.to_thread(meta_tools.list_journal, self.cfg.meta_path, start, 100)
            if len(parts) == 2:
                return StatementResult(
                    columns=[ResultColumn("JournalId", s)], rows=[(str(e["id"]),) for e in entries]
                )
            jid = int(parts[2])
            rows = [(str(e["id"]), e["op_type"], str(e["data"])) for e in entries if e["id"] == jid]
            return StatementResult(
                columns=[ResultColumn("JournalId", s), ResultColumn("OpType", s), ResultColumn("Data", s)],
                rows=rows,
            )
        from galene.common.errors import GaleneError

        raise GaleneError(f"Proc path '{path}' doesn't exist")
