"""The FE's one long-lived SparkSession, and its recovery when the engine under it dies.

`SparkEngine` owns the session: it creates it, warms it so the first user query does not pay
engine start-up, answers whether it is still alive, and — when the engine has died (killed,
OOM, crashed) — forgets the dead session so the next `spark()` call starts a fresh engine
instead of handing out a session bound to a dead one. Engines:

* Apache Spark (`engine = spark`, the default): a JVM the FE launches (`local[*]`, or a
  cluster master such as `spark://host:7077` from `spark_master` / SPARK_MASTER), or an
  external Spark Connect server (`sc://…`, SPARK_REMOTE). After a JVM death PySpark's
  process-wide singletons are dropped so a new JVM can start.
* Sail (`engine = sail`): a Sail Spark Connect server run as a child process of the FE
  (`galene.engine.sail`); after its death a new server is started on a new port.

`generation` increases every time a new session is created, so callers that keep
session-bound objects (cached DataFrames) know when to throw them away.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading

from pyspark.sql import SparkSession

from galene.common.errors import GaleneError
from galene.engine import class_archive

log = logging.getLogger(__name__)

# Defaults for a fast start on a small box. Anything in `conf` overrides them.
DEFAULT_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.driver.memory": "2g",
    "spark.sql.session.timeZone": "UTC",
    # Doris answers NULL for a bad cast or an overflow; ANSI mode would raise instead.
    "spark.sql.ansi.enabled": "false",
    "spark.sql.parquet.inferTimestampNTZ.enabled": "true",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Pipelines' mapInArrow tasks convert and route 128K rows at a time: batches of Spark's
    # default 10K were gathered and copied into one chunk (a third of the tasks' time).
    "spark.sql.execution.arrow.maxRecordsPerBatch": "131072",
    # Tables are read from explicit file lists; listing them serially on the driver is
    # cheaper than the Spark job Spark would otherwise start for more than 32 paths.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "1024",
    "spark.sql.adaptive.enabled": "true",
}

# Settings that only make sense for a JVM we launch ourselves; Spark Connect refuses
# static/driver settings, so only runtime SQL settings are sent to a Connect server.
_CONNECT_CONF_PREFIX = "spark.sql."

# A session whose planner never picks a broadcast join by size (Spark's two thresholds; the
# adaptive one defaults to the other, and is set in case a deployment set it apart).
NO_BROADCAST_CONF: dict[str, str] = {
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.adaptive.autoBroadcastJoinThreshold": "-1",
}
# A JVM the FE launches broadcasts tables estimated at most max heap / this (or Spark's 10 MB if
# smaller). A broadcast is built on the driver from an estimate that undercounts compressible
# data several times over, once for its hash table and once serialized, for every query that
# runs at once: 1/64 of a 512 MB heap is 7 MB, of a 2 GB heap 32 MB (so Spark's 10 MB).
BROADCAST_HEAP_FRACTION = 64
SPARK_EXIT_OOM = 52  # SparkExitCode.OOM: an executor (in local mode, the driver) ran out of heap

ENGINES = ("spark", "sail")
# How long an engine whose connection dropped may take to be seen as exited (for the message).
_DEATH_WAIT_S = 5.0
# How long a JVM we launched may take to exit once its gateway closes before it is killed.
_JVM_EXIT_WAIT_S = 10.0
# How long SparkContext.stop may take (it waits for running tasks) before the JVM is killed.
_CONTEXT_STOP_S = 15.0


def _local_server_retry_policy(server):
    """The Connect client's retry policy for a server that is our own child process.

    PySpark retries an unreachable server (UNAVAILABLE) for 10+ minutes, which suits a remote
    server that restarts. Our Sail child is either running — then a hiccup is retried briefly —
    or dead, and then the query must fail at once with a clear error instead of waiting.
    """
    from pyspark.sql.connect.client.retries import DefaultPolicy

    class LocalServerPolicy(DefaultPolicy):
        def __init__(self):
            super().__init__(max_retries=8, max_backoff=2000)

        def can_retry(self, e: BaseException) -> bool:
            return server.running() and super().can_retry(e)

    return LocalServerPolicy()


class SparkEngine:
    """One SparkSession for the whole FE, on a new engine after the previous one died."""

    def __init__(
        self,
        master: str | None = None,
        *,
        app_name: str = "galene",
        conf: dict[str, str] | None = None,
        engine: str = "spark",
        work_dir: str | None = None,
    ):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        self.engine = (engine or "spark").strip().lower()
        if self.engine not in ENGINES:
            raise GaleneError(f"unknown engine '{engine}': expected one of {', '.join(ENGINES)}")
        self._sail = None
        if self.engine == "sail":
            from galene.engine.sail import SailServer

            self._sail = SailServer(work_dir=work_dir)
            master = "sail"  # the server's sc:// URL is known once it runs
        elif master is None:
            master = os.environ.get("SPARK_REMOTE") or os.environ.get("SPARK_MASTER") or "local[*]"
        self.master = master
        self.app_name = app_name
        self.conf = {**DEFAULT_CONF, **(conf or {})}
        self.generation = 0  # bumped on every new session
        self._session: SparkSession | None = None
        self._no_broadcast: SparkSession | None = None  # spark_without_broadcast(), this generation's
        self._failed_probe = False  # is_alive() found the session dead: replace it
        self._lock = threading.RLock()

    @property
    def is_connect(self) -> bool:
        return self._sail is not None or self.master.startswith("sc://")

    @property
    def file_names(self) -> bool | None:
        """Whether the engine reports each row's file (`_metadata`): Apache Spark does, Sail
        does not; None for an external Connect server, which may be either (scan.py asks)."""
        if self._sail is not None:
            return False
        return None if self.is_connect else True

    @property
    def name(self) -> str:
        """The engine as error messages name it."""
        return "Sail" if self._sail is not None else "Spark"

    # --- lifecycle ------------------------------------------------------------------
    def start(self) -> None:
        """Create the session and run a tiny query so the JVM, planner and codegen are warm."""
        spark = self.spark()
        spark.range(1).selectExpr("id + 1 AS x").toArrow()

    def spark(self) -> SparkSession:
        """The live session; a new one (new JVM) if the previous one died."""
        with self._lock:
            # Our own Sail child is alive while its process runs: no round trip per call.
            if (
                self._session is not None
                and not self._failed_probe
                and self._alive_locked(probe=self._sail is None)
            ):
                return self._session
            if self._session is not None:
                log.warning("%s session is dead (%s); starting a new one", self.name, self.death_reason())
                self._discard_locked()
            self._session = self._create_locked()
            self._failed_probe = False
            self.generation += 1
            return self._session

    def spark_without_broadcast(self) -> SparkSession | None:
        """A session of the same engine that plans no broadcast join by size: a query whose
        broadcast failed runs again there (engine/query.py). None on Sail, which reads no Spark
        join setting (DataFusion chooses its joins; its memory pool is unbounded by default).

        Its own SQL settings and temporary views, so running a query there changes nothing for
        the queries on `spark()` (a session setting is every concurrent query's): a classic
        `newSession()` on the same SparkContext, or a second Connect session. Kept for the
        engine's generation and shared by retries, whose view names are their own."""
        if self._sail is not None:
            return None
        with self._lock:
            main = self.spark()
            if self._no_broadcast is not None:
                return self._no_broadcast
            if self.is_connect:
                builder = SparkSession.builder.remote(self.master)
                conf = {k: v for k, v in self.conf.items() if k.startswith(_CONNECT_CONF_PREFIX)}
                for k, v in {**conf, **NO_BROADCAST_CONF}.items():
                    builder = builder.config(k, v)
                session = builder.create()
            else:
                session = main.newSession()
                for k, v in NO_BROADCAST_CONF.items():
                    session.conf.set(k, v)
            self._no_broadcast = session
            return session

    def sessions(self) -> list[SparkSession]:
        """The engine's live sessions (for cancelling a query's jobs, whichever ran them)."""
        with self._lock:
            return [s for s in (self._session, self._no_broadcast) if s is not None]

    def is_alive(self) -> bool:
        with self._lock:
            if self._session is None:
                return False
            alive = self._alive_locked(probe=True)
            # A server process that runs but no longer knows our session is as good as dead.
            self._failed_probe = not alive
            return alive

    def death_reason(self) -> str:
        """Why the engine is gone, as far as the FE can tell ('killed by signal SIGKILL')."""
        from galene.engine.sail import describe_exit

        # A dropped connection is often seen before the dying process is reaped: wait a little.
        if self._sail is not None:
            reason = self._sail.exit_reason(wait_s=_DEATH_WAIT_S)
            return f"the Sail server {reason}" if reason else "the Sail server stopped answering"
        if not self.is_connect:
            from pyspark import SparkContext

            proc = getattr(SparkContext._gateway, "proc", None)
            if proc is not None:
                try:
                    code = proc.wait(_DEATH_WAIT_S)
                except subprocess.TimeoutExpired:
                    pass
                else:
                    if code == SPARK_EXIT_OOM:
                        memory = self.conf.get("spark.driver.memory")
                        return f"the Spark JVM ran out of memory (exit code {code}; spark_driver_memory = {memory})"
                    return f"the Spark JVM {describe_exit(code)}"
        return "the Spark driver stopped answering"

    def stop(self, exit_wait_s: float = _JVM_EXIT_WAIT_S) -> None:
        """Stop the session and its engine; a JVM we launched gets `exit_wait_s` to exit before
        it is killed."""
        with self._lock:
            try:
                self._stop_session_locked(exit_wait_s)
            finally:
                if self._sail is not None:
                    self._sail.stop()

    def _stop_session_locked(self, exit_wait_s: float = _JVM_EXIT_WAIT_S) -> None:
        self._drop_no_broadcast_locked()
        if self._session is None:
            return
        if self._alive_locked(probe=True):
            if self.is_connect:
                try:
                    self._session.stop()
                except Exception:  # stopping must not fail the caller
                    log.warning("error while stopping %s", self.name, exc_info=True)
            elif self._stop_context_within(_CONTEXT_STOP_S):
                self._shutdown_gateway(exit_wait_s)
            else:
                log.warning("%s did not stop within %.0f s; killing its JVM", self.name, _CONTEXT_STOP_S)
                self._discard_locked()
        else:
            self._discard_locked()
        self._session = None

    def _stop_context_within(self, deadline_s: float) -> bool:
        """Cancel the JVM's jobs and stop its SparkContext; False when that outlives `deadline_s`.

        SparkContext.stop waits for running tasks, and a task deep in a write (or a
        nested-loop join, which checks for cancellation only between input batches) can run
        for minutes after its job was cancelled: the FE's exit must not wait for it.
        """
        session = self._session

        def stop() -> None:
            try:
                session.sparkContext.cancelAllJobs()
                session.stop()
            except Exception:  # stopping must not fail the caller
                log.warning("error while stopping %s", self.name, exc_info=True)

        stopper = threading.Thread(target=stop, name="spark-stop", daemon=True)
        stopper.start()
        stopper.join(deadline_s)
        return not stopper.is_alive()

    def server_pid(self) -> int | None:
        """Process id of the embedded Sail server (None for other engines or when not running)."""
        return self._sail.pid if self._sail is not None else None

    def jvm_pid(self) -> int | None:
        """Process id of the local Spark JVM (None for Spark Connect or when not running)."""
        if self.is_connect:
            return None
        with self._lock:
            if self._session is None:
                return None
            try:
                return int(self._session._jvm.java.lang.ProcessHandle.current().pid())
            except Exception:  # noqa: BLE001 - a dead JVM has no pid
                return None

    # --- internals ------------------------------------------------------------------
    def _create_locked(self) -> SparkSession:
        if self._sail is not None:
            return self._create_sail_locked()
        builder = SparkSession.builder.appName(self.app_name)
        if self.is_connect:
            builder = builder.remote(self.master)
            for k, v in self.conf.items():
                if k.startswith(_CONNECT_CONF_PREFIX):
                    builder = builder.config(k, v)
            # create(), not getOrCreate(): always a session of our own, never another's default.
            return builder.create()
        # PySpark marks the whole process as Connect-mode (an environment variable) once any
        # Connect session was made; a classic session asked for afterwards (tests that run
        # both engines in one process) would then fail with CONNECT_URL_NOT_SET.
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
        builder = builder.master(self.master)
        for k, v in class_archive.driver_conf(self.conf).items():
            builder = builder.config(k, v)
        session = builder.getOrCreate()
        session.sparkContext.setLogLevel("WARN")
        self._bound_broadcasts(session)
        return session

    def _bound_broadcasts(self, session: SparkSession) -> None:
        """Broadcast joins of at most max heap / BROADCAST_HEAP_FRACTION in a JVM we launched,
        unless `conf` sets the threshold (a failure that happens anyway is retried without)."""
        key = "spark.sql.autoBroadcastJoinThreshold"
        if key in self.conf:
            return
        try:
            heap = int(session._jvm.java.lang.Runtime.getRuntime().maxMemory())
            current = int(session._jsparkSession.sessionState().conf().autoBroadcastJoinThreshold())
        except Exception:  # another Spark: keep its default
            log.debug("reading the driver heap failed", exc_info=True)
            return
        bound = heap // BROADCAST_HEAP_FRACTION
        if 0 < bound < current:
            session.conf.set(key, str(bound))
            log.info("broadcast joins bounded to %d bytes (driver heap %d bytes)", bound, heap)

    def _create_sail_locked(self) -> SparkSession:
        url = self._sail.start()  # a new server process (a previous one is stopped first)
        # Through the classic builder: it also switches pyspark.sql.functions to Connect mode.
        builder = SparkSession.builder.remote(url)
        for k, v in self.conf.items():
            if k.startswith(_CONNECT_CONF_PREFIX):
                builder = builder.config(k, v)
        # create(), not getOrCreate(): a cached default session would point at the old server.
        session = builder.create()
        session.client.set_retry_policies([_local_server_retry_policy(self._sail)])
        return session

    def _alive_locked(self, probe: bool) -> bool:
        """Whether the session's engine is alive; `probe` also asks a Connect server to answer."""
        session = self._session
        assert session is not None
        if self._sail is not None and not self._sail.running():
            return False
        if self.is_connect:
            if not probe:
                return True
            try:
                session.conf.get("spark.sql.shuffle.partitions")
                return True
            except Exception:  # noqa: BLE001 - any failure to reach the server = dead
                return False
        from pyspark import SparkContext

        gateway = SparkContext._gateway
        if gateway is None or SparkContext._active_spark_context is None:
            return False
        proc = getattr(gateway, "proc", None)
        if proc is not None and proc.poll() is not None:  # the JVM process has exited
            return False
        try:
            sc = session.sparkContext
            return sc._jsc is not None and not sc._jsc.sc().isStopped()
        except Exception:  # noqa: BLE001 - py4j errors / connection refused = dead
            return False

    def _drop_no_broadcast_locked(self) -> None:
        session, self._no_broadcast = self._no_broadcast, None
        if session is not None and self.is_connect:  # a Connect session of its own: release it
            try:
                session.stop()
            except Exception:
                log.debug("stopping the no-broadcast Spark Connect session failed", exc_info=True)

    def _discard_locked(self) -> None:
        """Forget a dead session and every PySpark singleton that still points at its JVM."""
        self._drop_no_broadcast_locked()
        if self.is_connect:
            if self._sail is not None and not self._sail.running():
                # Nothing to release on a server that is gone; just close the channel.
                self._session.release_session_on_close = False
            try:
                self._session.stop()
            except Exception:
                log.debug("stopping a dead Spark Connect session failed", exc_info=True)
            self._session = None
            return
        from pyspark import SparkContext
        from pyspark.sql import SQLContext

        sc = SparkContext._active_spark_context
        if sc is not None:
            acc = getattr(sc, "_accumulatorServer", None)
            if acc is not None:
                try:
                    acc.shutdown()
                except Exception:
                    log.debug("accumulator server shutdown failed", exc_info=True)
                sc._accumulatorServer = None
            sc._jsc = None
        self._shutdown_gateway()
        SparkContext._active_spark_context = None
        SparkContext._gateway = None
        SparkContext._jvm = None
        SparkSession._instantiatedSession = None
        SparkSession._activeSession = None
        SQLContext._instantiatedContext = None
        # The JVM-side default/active session lives in the dead JVM; nothing to clear there.
        self._session = None

    @staticmethod
    def _shutdown_gateway(exit_wait_s: float = _JVM_EXIT_WAIT_S) -> None:
        """Close the py4j gateway and reap the JVM process (kills it if still running)."""
        from pyspark import SparkContext

        gateway = SparkContext._gateway
        if gateway is None:
            return
        try:
            gateway.close()
        except Exception:
            log.debug("py4j gateway close failed", exc_info=True)
        proc = getattr(gateway, "proc", None)
        if proc is not None:
            try:
                # The gateway JVM exits when its stdin closes; kill it if it does not.
                if proc.stdin is not None:
                    proc.stdin.close()
                proc.wait(timeout=exit_wait_s)
            except Exception:  # noqa: BLE001
                proc.kill()
                proc.wait(timeout=10)
        SparkContext._gateway = None
        SparkContext._jvm = None
