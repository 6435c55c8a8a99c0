"""The FE's one long-lived SparkSession, and its recovery when the Spark JVM dies.

`SparkEngine` owns the session: it creates it (classic `local[*]` / cluster master, or Spark
Connect `sc://…`), warms it so the first user query does not pay JVM start-up, answers
whether it is still alive, and — when the JVM has died (killed, OOM, crashed) — drops
PySpark's process-wide singletons so the next `spark()` call starts a fresh JVM instead of
handing out a session bound to a dead py4j gateway.

`generation` increases every time a new session is created, so callers that keep
session-bound objects (cached DataFrames) know when to throw them away.
"""

from __future__ import annotations

import logging
import os
import sys
import threading

from pyspark.sql import SparkSession

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
    # Tables are read from explicit file lists; listing them serially on the driver is
    # cheaper than the Spark job Spark would otherwise start for more than 32 paths.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "1024",
    "spark.sql.adaptive.enabled": "true",
}

# Settings that only make sense for a JVM we launch ourselves; Spark Connect refuses
# static/driver settings, so only runtime SQL settings are sent to a Connect server.
_CONNECT_CONF_PREFIX = "spark.sql."


class SparkEngine:
    """One SparkSession for the whole FE, restarted transparently after its JVM dies."""

    def __init__(
        self,
        master: str | None = None,
        *,
        app_name: str = "galene",
        conf: dict[str, str] | None = None,
    ):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        if master is None:
            master = os.environ.get("SPARK_REMOTE") or os.environ.get("SPARK_MASTER") or "local[*]"
        self.master = master
        self.app_name = app_name
        self.conf = {**DEFAULT_CONF, **(conf or {})}
        self.generation = 0  # bumped on every new session
        self._session: SparkSession | None = None
        self._lock = threading.RLock()

    @property
    def is_connect(self) -> bool:
        return self.master.startswith("sc://")

    # --- lifecycle ------------------------------------------------------------------
    def start(self) -> None:
        """Create the session and run a tiny query so the JVM, planner and codegen are warm."""
        spark = self.spark()
        spark.range(1).selectExpr("id + 1 AS x").toArrow()

    def spark(self) -> SparkSession:
        """The live session; a new one (new JVM) if the previous one died."""
        with self._lock:
            if self._session is not None and self._alive_locked():
                return self._session
            if self._session is not None:
                log.warning("Spark session is dead; starting a new one")
                self._discard_locked()
            self._session = self._create_locked()
            self.generation += 1
            return self._session

    def is_alive(self) -> bool:
        with self._lock:
            return self._session is not None and self._alive_locked()

    def stop(self) -> None:
        with self._lock:
            if self._session is None:
                return
            if self._alive_locked():
                try:
                    self._session.stop()
                except Exception:  # stopping must not fail the caller
                    log.warning("error while stopping Spark", exc_info=True)
                if not self.is_connect:
                    self._shutdown_gateway()
            else:
                self._discard_locked()
            self._session = None

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
        builder = SparkSession.builder.appName(self.app_name)
        if self.is_connect:
            builder = builder.remote(self.master)
            for k, v in self.conf.items():
                if k.startswith(_CONNECT_CONF_PREFIX):
                    builder = builder.config(k, v)
            return builder.getOrCreate()
        builder = builder.master(self.master)
        for k, v in self.conf.items():
            builder = builder.config(k, v)
        session = builder.getOrCreate()
        session.sparkContext.setLogLevel("WARN")
        return session

    def _alive_locked(self) -> bool:
        session = self._session
        assert session is not None
        if self.is_connect:
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

    def _discard_locked(self) -> None:
        """Forget a dead session and every PySpark singleton that still points at its JVM."""
        if self.is_connect:
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
    def _shutdown_gateway() -> None:
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
                proc.wait(timeout=10)
            except Exception:  # noqa: BLE001
                proc.kill()
                proc.wait(timeout=10)
        SparkContext._gateway = None
        SparkContext._jvm = None
