"""`galene start`: a standalone Galene as an FE process and a BE process under a small supervisor.

Why separate processes: in Doris the FE and the BE are separate processes, so a BE fault (a
crash in a native parser, an OOM kill) never takes the metadata service, the MySQL endpoint or
the query engine with it. The supervisor is the only process of `galene start` that does not
serve anything: it imports nothing heavy (no pyarrow, no Spark), starts `galene fe` and
`galene be` as children, restarts whichever dies (with a backoff when one keeps dying), and
stops them in order on Ctrl-C / SIGTERM: the BE first (its clean stop commits open group-commit
groups through the FE), then the FE.

What the FE learns: the standalone FE adds the BE (`standalone_backend`) to an empty cluster at
start. When the BE dies the supervisor tells the FE at once (`/api/_internal/backend_event`,
authenticated by the cluster token from the FE's VERSION file), so SHOW BACKENDS says
`Alive=false` with the reason instead of waiting for missed heartbeats; when the BE (the first
one, or a restarted one) answers its health check the supervisor tells the FE, which heartbeats
it right away. The banner appears once the query engine is ready and a load would succeed
(`load_ready` in the FE's /api/health: the BE passed its first write canary).
The restarted BE replays its group-commit WAL as any restarted BE does.

Children run in their own process groups (a terminal's Ctrl-C reaches only the supervisor,
which decides the order) and get SIGTERM from the kernel if the supervisor dies
(PR_SET_PDEATHSIG), so nothing is left running without it. The BE's ingest worker is the BE's
own child and dies with it (see galene.be.ingest_worker).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from galene.config import Config

log = logging.getLogger("galene.supervisor")

# A child that lived this long before dying is restarted at once; one that keeps dying sooner
# waits RESTART_BASE_DELAY_S * 2^n (at most RESTART_MAX_DELAY_S) so a crash loop does not spin.
STABLE_AFTER_S = 60.0
RESTART_BASE_DELAY_S = 0.5
RESTART_MAX_DELAY_S = 30.0
# How long a child may take to stop after SIGTERM before it is killed.
BE_STOP_TIMEOUT_S = 60.0
FE_STOP_TIMEOUT_S = 60.0
# Deadline of one supervisor -> FE/BE HTTP call (health checks and events).
CALL_TIMEOUT_S = 3.0
POLL_S = 0.2

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """preexec_fn of a child: the kernel sends it SIGTERM when the supervisor dies."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def describe_exit(returncode: int) -> str:
    """'exited with code 3' / 'killed by signal SIGKILL' for a Popen return code."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        return f"killed by signal {name}"
    return f"exited with code {returncode}"


@dataclass
class Child:
    """One supervised role: how to start it, the running process, and its restart history."""

    role: str  # "fe" | "be"
    argv: list[str]
    proc: subprocess.Popen | None = None
    started_at: float = 0.0
    quick_deaths: int = 0  # consecutive deaths within STABLE_AFTER_S of a start
    restart_at: float | None = None  # when a dead child is due to be started again
    restarts: int = 0
    last_exit: str = ""
    env: dict = field(default_factory=dict)

    def start(self) -> None:
        self.proc = subprocess.Popen(
            self.argv,
            env=self.env,
            process_group=0,  # Ctrl-C in a terminal reaches the supervisor only
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - the supervisor is single-threaded
        )
        self.started_at = time.monotonic()
        self.restart_at = None
        log.info("started %s (pid %s)", self.role.upper(), self.proc.pid)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def note_death(self) -> float:
        """Record that the process ended; returns the delay before it is started again."""
        assert self.proc is not None
        self.last_exit = describe_exit(self.proc.returncode)
        lived = time.monotonic() - self.started_at
        self.quick_deaths = self.quick_deaths + 1 if lived < STABLE_AFTER_S else 0
        delay = 0.0
        if self.quick_deaths > 1:
            delay = min(RESTART_MAX_DELAY_S, RESTART_BASE_DELAY_S * 2 ** (self.quick_deaths - 2))
        self.restart_at = time.monotonic() + delay
        self.proc = None
        return delay

    def stop(self, timeout_s: float) -> None:
        if not self.running():
            return
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            log.warning("%s did not stop within %.0f s: killing it", self.role.upper(), timeout_s)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


class Supervisor:
    """Runs the standalone FE and BE until a stop signal; see the module docstring."""

    def __init__(self, cfg: Config, role_args: list[str]):
        self.cfg = cfg
        self.host = cfg.priority_networks.split(",")[0].split("/")[0] or "127.0.0.1"
        env = dict(os.environ)
        # The children find the galene package the way this process did.
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        base = [sys.executable, "-m", "galene.cli"]
        common = [*role_args, "--supervised"]
        self.fe = Child(
            "fe",
            [
                *base, "fe", *common,
                "--http-port", str(cfg.http_port), "--query-port", str(cfg.query_port),
                "--conf", f"standalone_backend={self.host}:{cfg.be_http_port}",
            ],
            env=env,
        )  # fmt: skip
        self.be = Child(
            "be",
            [
                *base, "be", *common,
                "--be-http-port", str(cfg.be_http_port),
                "--conf", f"fe_http_port={cfg.http_port}",
            ],
            env=env,
        )  # fmt: skip
        self.stopping = False
        self.announced = False
        # The FE is told when the BE answers its health check: at the first start too, so the
        # FE heartbeats it at once instead of at its next probe.
        self._be_up_reported = False

    # --- signals --------------------------------------------------------------------
    def _on_signal(self, signum, frame) -> None:
        if self.stopping:  # a second Ctrl-C: stop waiting for a clean stop
            for child in (self.be, self.fe):
                if child.running():
                    assert child.proc is not None
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(child.proc.pid, signal.SIGKILL)
            return
        self.stopping = True

    # --- talking to the children ----------------------------------------------------
    def _token(self) -> str:
        try:
            text = (self.cfg.meta_path / "image" / "VERSION").read_text()
        except OSError:
            return ""
        for line in text.splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "token":
                return value.strip()
        return ""

    def _get_json(self, url: str) -> dict | None:
        try:
            with urllib.request.urlopen(url, timeout=CALL_TIMEOUT_S) as r:
                return json.loads(r.read())
        except (OSError, ValueError):
            return None

    def fe_health(self) -> dict | None:
        body = self._get_json(f"http://{self.host}:{self.cfg.http_port}/api/health")
        return body.get("data") if isinstance(body, dict) else None

    def be_healthy(self) -> bool:
        return self._get_json(f"http://{self.host}:{self.cfg.be_http_port}/api/health") is not None

    def tell_fe(self, event: str, reason: str = "") -> bool:
        """Report a BE event to the FE ("exited" / "started"); False if the FE did not take it."""
        payload = {
            "host": self.host,
            "heartbeat_port": self.cfg.be_http_port,
            "event": event,
            "reason": reason,
        }
        req = urllib.request.Request(
            f"http://{self.host}:{self.cfg.http_port}/api/_internal/backend_event",
            data=json.dumps(payload).encode(),
            headers={"Content-Type": "application/json", "X-Galene-Token": self._token()},
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=CALL_TIMEOUT_S) as r:
                return r.status == 200
        except (OSError, ValueError):
            return False

    # --- the loop -------------------------------------------------------------------
    def run(self) -> int:
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        self.fe.start()
        self.be.start()
        try:
            while not self.stopping:
                self._tick()
                time.sleep(POLL_S)
        finally:
            print("Galene stopping...", flush=True)
            self.be.stop(BE_STOP_TIMEOUT_S)
            self.fe.stop(FE_STOP_TIMEOUT_S)
            print("Galene stopped.", flush=True)
        return 0

    def _tick(self) -> None:
        for child in (self.fe, self.be):
            if child.proc is not None and child.proc.poll() is not None:
                delay = child.note_death()
                log.error(
                    "%s process %s; restarting it%s",
                    child.role.upper(),
                    child.last_exit,
                    f" in {delay:.1f} s" if delay else "",
                )
                if child is self.be:
                    self._be_up_reported = False
                    if not self.tell_fe("exited", f"BE process {child.last_exit}; restarting"):
                        log.warning("could not tell the FE that the BE died (heartbeats will)")
            if child.proc is None and child.restart_at is not None and time.monotonic() >= child.restart_at:
                child.restarts += 1
                child.start()
        if not self._be_up_reported and self.be.running() and self.be_healthy():
            self._be_up_reported = self.tell_fe("started")
        if not self.announced:
            health = self.fe_health()
            # Ready means a load would succeed: the BE passed its first write canary.
            if health and health.get("query_engine_ready") and health.get("load_ready"):
                self.announced = True
                self._banner(health)

    def _banner(self, health: dict) -> None:
        engine = (
            "ready"
            if health.get("query_engine_error") is None
            else (f"NOT available ({health['query_engine_error']})")
        )
        engine_name = {"sail": "Sail"}.get(self.cfg.engine.strip().lower(), "Spark")
        host, cfg = self.host, self.cfg
        print(
            f"""
Galene is running (standalone: FE pid {self.fe.proc.pid if self.fe.proc else "-"}, \
BE pid {self.be.proc.pid if self.be.proc else "-"}, {engine_name} {engine}).
  data dir : {os.path.abspath(cfg.data_dir)}
  SQL      : mariadb -h{host} -P{cfg.query_port} -uroot          (or: mysql -h{host} -P{cfg.query_port} -uroot)
  load     : curl --location-trusted -u root: -H "label:l1" -H "column_separator:," \\
               -T data.csv http://{host}:{cfg.http_port}/api/<db>/<table>/_stream_load
  stop     : Ctrl-C
""",
            flush=True,
        )
        warning = self.open_root_warning()
        if warning:
            print(warning, flush=True)

    def root_has_password(self) -> bool | None:
        """Asks the FE (token-authenticated) whether root has a password; None if it cannot."""
        req = urllib.request.Request(
            f"http://{self.host}:{self.cfg.http_port}/api/_internal/auth/status",
            data=b"{}",
            headers={"Content-Type": "application/json", "X-Galene-Token": self._token()},
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=CALL_TIMEOUT_S) as r:
                body = json.loads(r.read())
        except (OSError, ValueError):
            return None
        return bool(body.get("root_has_password")) if isinstance(body, dict) else None

    def open_root_warning(self) -> str | None:
        """The banner's warning while root has no password and the node listens beyond loopback."""
        if self.host in ("127.0.0.1", "::1", "localhost") or self.host.startswith("127."):
            return None
        if self.root_has_password() is not False:
            return None
        return (
            f"  WARNING  : root has NO PASSWORD and Galene listens on {self.host}: anyone who reaches it is root.\n"
            "             Set one: mariadb ... -uroot -e \"SET PASSWORD FOR 'root' = PASSWORD('...')\"\n"
            "             (or create clusters with initial_root_password / GALENE_INITIAL_ROOT_PASSWORD)."
        )
