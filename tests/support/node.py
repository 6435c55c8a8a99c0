"""A real Galene process on loopback ports: `GaleneProcess` runs `python -m galene.cli
start|fe|be` as a child process with its own data dir and free ports, waits for readiness
through the real HTTP health endpoint, and stops it with SIGTERM (or SIGKILL for crash tests).
Nothing here imports Galene's server code: the tests see Galene only through its network
interfaces (client.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pymysql

from tests.support.client import mysql_connect, stream_load
from tests.support.ports import free_port
from tests.support.procs import children_of

ROOT = Path(__file__).resolve().parents[2]


# The Spark drivers tests start live for seconds to minutes: C2 compilations they never amortize
# were a third of the suite's CPU (tests/integration/test_stream_load.py: 73 -> 50 CPU-seconds).
# JIT tiers change no result; Galene's own default keeps tiered compilation.
TEST_DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
TEST_ENGINE_CONF = {"spark.driver.memory": "1g", "spark.driver.extraJavaOptions": TEST_DRIVER_JAVA_OPTIONS}


def default_engine() -> str:
    """The query engine test processes use: GALENE_ENGINE (spark | sail; set by pytest's
    --galene-engine option), else Galene's default."""
    return os.environ.get("GALENE_ENGINE", "").strip().lower() or "spark"


def galene_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a Galene process (or a `galene` CLI run): this checkout first on
    PYTHONPATH, PySpark's workers on this Python, Spark on loopback."""
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


class GaleneProcess:
    def __init__(
        self,
        data_dir: Path,
        role: str = "start",
        conf: dict[str, str] | None = None,
        engine: str | None = None,
        env: dict[str, str] | None = None,
        host: str = "127.0.0.1",
        netns: str | None = None,
        **ports,
    ):
        self.data_dir = Path(data_dir)
        self.role = role
        self.conf = {"spark_driver_java_options": TEST_DRIVER_JAVA_OPTIONS, **(conf or {})}
        # Where it listens, and the network namespace it runs in (netlab.py), if any.
        self.host = host
        self.netns = netns
        if host != "127.0.0.1":
            self.conf.setdefault("priority_networks", host)
        self.engine = engine or default_engine()
        self.env = dict(env or {})  # extra environment for the process (SPARK_MASTER=…)
        self.http_port = ports.get("http_port") or free_port()
        self.query_port = ports.get("query_port") or free_port()
        self.be_http_port = ports.get("be_http_port") or free_port()
        self.proc: subprocess.Popen | None = None
        self.log_path = self.data_dir / f"galene-{role}.log"

    # --- lifecycle ------------------------------------------------------------------
    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "galene.cli", self.role, "--data-dir", str(self.data_dir)]
        if self.role in ("start", "fe"):
            cmd += ["--http-port", str(self.http_port), "--query-port", str(self.query_port)]
        if self.role in ("start", "be"):
            cmd += ["--be-http-port", str(self.be_http_port)]
        if self.role in ("start", "fe"):
            # Always explicit: GALENE_ENGINE in the environment is also Galene's own override.
            cmd += ["--engine", self.engine]
        for k, v in self.conf.items():
            cmd += ["--conf", f"{k}={v}"]
        if self.netns is not None:
            cmd = ["ip", "netns", "exec", self.netns, *cmd]  # exec: the pid stays Galene's
        return cmd

    def start(self, wait: bool = True, timeout: float = 180) -> GaleneProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        env = galene_env(self.env)
        with open(self.log_path, "ab") as logf:
            self.proc = subprocess.Popen(
                self.command(), cwd=ROOT, env=env, stdout=logf, stderr=subprocess.STDOUT
            )
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"galene exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if self.role == "be":
                    r = httpx.get(f"http://{self.host}:{self.be_http_port}/api/health", timeout=2)
                    if r.status_code == 200:
                        return
                else:
                    r = httpx.get(f"http://{self.host}:{self.http_port}/api/health", timeout=2)
                    data = r.json()["data"]
                    # `galene start` is ready once a load would succeed (its banner waits for
                    # the same): the BE passed its first write canary.
                    want_be = self.role == "start"
                    if data["query_engine_ready"] and (not want_be or data["load_ready"]):
                        return
                    last = data
            except (httpx.HTTPError, ValueError, KeyError) as e:
                last = e
            time.sleep(0.3)
        raise TimeoutError(f"galene not ready after {timeout}s (last: {last}):\n{self.log_tail()}")

    def stop(self, timeout: float = 60) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def signal_tree(self, sig: int) -> None:
        """Send `sig` to the process and every child (SIGSTOP/SIGCONT of a whole node)."""
        if self.proc is None:
            return
        for pid in [self.proc.pid, *children_of(self.proc.pid)]:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        """SIGKILL the process and every child (the Spark JVM) — a crash, not a shutdown."""
        if self.proc is None:
            return
        for child in children_of(self.proc.pid):
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.proc.kill()
        except ProcessLookupError:
            pass
        self.proc.wait(30)

    def role_pid(self, role: str) -> int:
        """The pid of the process serving `role` ("fe" or "be"): under `galene start` the
        supervisor's child running that role; a single-role process is itself."""
        assert self.proc is not None
        if self.role == role:
            return self.proc.pid
        for child in children_of(self.proc.pid):
            try:
                argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"galene.cli" in argv and role.encode() in argv:
                return child
        raise LookupError(f"no {role} process under pid {self.proc.pid}")

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    # --- clients --------------------------------------------------------------------
    def mysql(
        self, database: str | None = None, user: str = "root", password: str = "", **kw
    ) -> pymysql.Connection:
        return mysql_connect(self.host, self.query_port, database, user, password, **kw)

    def query(self, sql: str, database: str | None = None) -> list[tuple]:
        with self.mysql(database) as conn, conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())

    def data_files(self) -> set[str]:
        """Every file of the tables' rowsets under the storage root, as paths. The BE's write
        canary (galene/be/health.py, db id 0) writes and deletes a probe rowset under data/0
        every few seconds: not table data, so not listed."""
        out: set[str] = set()
        root = self.data_dir / "storage" / "data"
        for dirpath, dirnames, files in os.walk(root):
            if Path(dirpath) == root and "0" in dirnames:
                dirnames.remove("0")
            out.update(os.path.join(dirpath, f) for f in files)
        return out

    def stream_load(
        self,
        db: str,
        table: str,
        body: bytes,
        headers: dict[str, str] | None = None,
        via_fe: bool = True,
        timeout: float = 300,
    ) -> dict:
        """A stream load the way curl --location-trusted sends it (FE 307 -> BE), or straight to
        this node's BE; the BE's JSON reply (an FE that does not redirect fails the test)."""
        port = self.http_port if via_fe else self.be_http_port
        r = stream_load(self.host, port, db, table, body, headers, via_fe=via_fe, timeout=timeout, must_redirect=True)
        r.raise_for_status()
        return r.json()
