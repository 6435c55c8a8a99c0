"""Test harness: real Galene processes on loopback ports, and clients that talk to them.

`GaleneProcess` runs `python -m galene.cli start|fe|be` as a child process with its own data
dir and free ports, waits for readiness through the real HTTP health endpoint, and stops it
with SIGTERM (or SIGKILL for crash tests). Nothing here imports Galene's server code: the
tests see Galene only through its network interfaces.
"""

from __future__ import annotations

import base64
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pymysql

ROOT = Path(__file__).resolve().parents[1]


# Ports handed to servers come from below the kernel's ephemeral range: a port the kernel picked
# for `bind(0)` can be given again to any outgoing connection (a Spark JVM, an HTTP client) in the
# moment before the server binds it, which failed CI once with EADDRINUSE.
# SeaweedFS takes 20000-22000 and those + 10000 (tests/s3_server.py). Parallel pytest workers
# (pytest-xdist) each draw from a slice of their own, so no two workers race for one port.
_PORT_RANGE = (22000, 30000)
_handed_out: set[int] = set()


def worker_slice(lo: int, hi: int) -> tuple[int, int]:
    """This test process's share of [lo, hi): all of it, or one slice per pytest-xdist worker."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if not worker.startswith("gw") or count <= 1:
        return lo, hi
    index = int(worker[2:]) % count
    span = (hi - lo) // count
    return lo + index * span, lo + (index + 1) * span


def free_port() -> int:
    """A loopback TCP port nobody listens on, outside the ephemeral range, never handed out twice."""
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    lo, hi = worker_slice(*_PORT_RANGE)
    for _ in range(1000):
        port = rng.randrange(lo, hi)
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free port in {(lo, hi)}")


def auth_header(user: str = "root", password: str = "") -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def default_engine() -> str:
    """The query engine test processes use: GALENE_ENGINE (spark | sail; set by pytest's
    --galene-engine option), else Galene's default."""
    return os.environ.get("GALENE_ENGINE", "").strip().lower() or "spark"


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
        self.conf = dict(conf or {})
        # Where it listens, and the network namespace it runs in (tests/netfault.py), if any.
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
        env = dict(os.environ)
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env.update(self.env)
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
        return pymysql.connect(
            host=self.host, port=self.query_port, user=user, password=password, database=database,
            autocommit=True, read_timeout=300, **kw,
        )  # fmt: skip

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
        self, db: str, table: str, body: bytes, headers: dict[str, str] | None = None, via_fe: bool = True
    ) -> dict:
        """PUT a stream load the way curl --location-trusted does: FE 307 -> BE."""
        h = {**auth_header(), "Expect": "100-continue", **(headers or {})}
        port = self.http_port if via_fe else self.be_http_port
        url = f"http://{self.host}:{port}/api/{db}/{table}/_stream_load"
        with httpx.Client(timeout=300) as c:
            r = c.put(url, content=b"" if via_fe else body, headers=h)
            if via_fe:
                assert r.status_code == 307, (r.status_code, r.text)
                r = c.put(r.headers["location"], content=body, headers=h)
            r.raise_for_status()
            return r.json()


def peak_rss_bytes(pid: int) -> int:
    """The peak resident set size of a live process (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise LookupError(f"no VmHWM for pid {pid}")


def children_of(pid: int) -> list[int]:
    out = []
    try:
        res = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False)
        for line in res.stdout.split():
            child = int(line)
            out.append(child)
            out.extend(children_of(child))
    except FileNotFoundError:
        pass
    return out


# --- clusters: one `galene fe` and several `galene be` processes on loopback --------------------
class GaleneCluster:
    """An FE and `n` BEs as separate processes (roles `fe` and `be`), the BEs joined with one
    `ALTER SYSTEM ADD BACKEND`. Each BE finds its FE with `--conf fe_http_port=P`."""

    def __init__(
        self,
        data_dir: Path,
        n_backends: int = 2,
        fe_conf: dict[str, str] | None = None,
        be_conf: dict[str, str] | None = None,
        engine: str = "sail",
        placement: list[tuple[str | None, str]] | None = None,
    ):
        """`placement`: (network namespace, address) of the FE, then of each BE (tests/netfault.py)."""
        self.dir = Path(data_dir)
        places = placement or [(None, "127.0.0.1")] * (n_backends + 1)
        # One storage root for every node (rowsets are shared; each BE keeps its WAL locally).
        shared = {"storage_root": f"file://{(self.dir / 'storage').resolve()}"}
        fe_conf = {"heartbeat_interval_second": "1", **shared, **(fe_conf or {})}
        self.fe = GaleneProcess(
            self.dir / "fe", role="fe", conf=fe_conf, engine=engine, netns=places[0][0], host=places[0][1]
        )
        self.be_conf = {**shared, **(be_conf or {})}
        if places[0][1] != "127.0.0.1":
            self.be_conf["fe_host"] = places[0][1]
        self.bes = [
            GaleneProcess(
                self.dir / f"be{i}",
                role="be",
                conf=dict(self.be_conf),
                netns=places[i + 1][0],
                host=places[i + 1][1],
            )
            for i in range(n_backends)
        ]

    def start(self, join: bool = True) -> GaleneCluster:
        try:
            self.fe.start()
            for be in self.bes:
                be.conf["fe_http_port"] = str(self.fe.http_port)
                be.start(wait=False)
            for be in self.bes:
                be.wait_ready()
            if join:
                hosts = ", ".join(f"'{b.host}:{b.be_http_port}'" for b in self.bes)
                self.fe.query(f"ALTER SYSTEM ADD BACKEND {hosts}")
                self.wait_backends(
                    lambda rows: len(rows) == len(self.bes) and all(r["Alive"] == "true" for r in rows)
                )
        except BaseException:
            self.stop()  # nothing outlives a cluster that did not start
            raise
        return self

    def stop(self) -> None:
        for be in self.bes:
            if be.proc is not None and be.proc.poll() is None:
                for pid in [be.proc.pid, *children_of(be.proc.pid)]:  # a SIGSTOPped process would not exit
                    try:
                        os.kill(pid, signal.SIGCONT)
                    except ProcessLookupError:
                        pass
            be.stop()
        self.fe.stop()

    def backends(self) -> list[dict]:
        """SHOW BACKENDS as dicts by column name."""
        with self.fe.mysql() as conn, conn.cursor() as cur:
            cur.execute("SHOW BACKENDS")
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def backend(self, be: GaleneProcess) -> dict | None:
        return next((r for r in self.backends() if r["HttpPort"] == str(be.be_http_port)), None)

    def wait_backends(self, pred, timeout: float = 60, poll: float = 0.2) -> list[dict]:
        deadline = time.monotonic() + timeout
        rows: list[dict] = []
        while time.monotonic() < deadline:
            rows = self.backends()
            if pred(rows):
                return rows
            time.sleep(poll)
        raise TimeoutError(f"SHOW BACKENDS never matched: {rows}")

    def redirect(
        self, db: str, table: str, headers: dict[str, str] | None = None, host: str | None = None
    ) -> httpx.Response:
        """The FE's answer to an empty-body stream-load PUT (the 307, or a JSON refusal)."""
        h = {**auth_header(), "Expect": "100-continue", **(headers or {})}
        if host is not None:
            h["Host"] = host
        url = f"http://{self.fe.host}:{self.fe.http_port}/api/{db}/{table}/_stream_load"
        return httpx.put(url, content=b"", headers=h, timeout=30)

    def load(
        self, db: str, table: str, body: bytes, headers: dict[str, str] | None = None, timeout: float = 60
    ) -> dict:
        """A stream load through the FE's 307, as curl --location-trusted sends it."""
        r = self.redirect(db, table, headers)
        if r.status_code != 307:
            return r.json()
        h = {**auth_header(), **(headers or {})}
        r = httpx.put(r.headers["location"], content=body, headers=h, timeout=timeout)
        r.raise_for_status()
        return r.json()

    def doctor(self, timeout_s: float = 2, json_out: bool = False) -> tuple[int, str]:
        """`galene doctor --fe …` against this cluster, as an operator runs it: (exit status, output)."""
        cmd = [sys.executable, "-m", "galene.cli", "doctor", "--fe", f"{self.fe.host}:{self.fe.http_port}"]
        cmd += ["--timeout", f"{timeout_s:g}", *(["--json"] if json_out else [])]
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=120, check=False, cwd=ROOT, env=env
        )
        return done.returncode, done.stdout + done.stderr

    @staticmethod
    def ingest_worker_pid(be: GaleneProcess) -> int:
        assert be.proc is not None
        for child in children_of(be.proc.pid):
            try:
                argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"galene.be.ingest_worker" in argv:
                return child
        raise LookupError(f"no ingest worker under BE pid {be.proc.pid}")


def metric_value(text: str, name: str, **labels: str) -> float | None:
    """The value of one sample in Prometheus text (labels given must all match), or None."""
    for line in text.splitlines():
        if not line.startswith(name) or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        metric, _, rest = head.partition("{")
        if metric != name:
            continue
        if all(f'{k}="{v}"' in rest for k, v in labels.items()):
            return float(value)
    return None
