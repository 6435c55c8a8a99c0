"""The embedded Sail engine: one Sail Spark Connect server, run as a child process of the FE.

Sail (PyPI `pysail`) is a Spark Connect server written in Rust. With `engine = sail` the FE
starts one on 127.0.0.1 and a free port and talks to it through PySpark's Connect client, as it
would to any `sc://` server. `SailServer` owns that process: it starts it, waits until it
accepts connections, says whether it is still running and how it ended, and stops it. Sessions
are not made here (`galene.engine.session` is the one place that creates sessions).

Why a child process, not `pysail.spark.SparkConnectServer` inside the FE: a crash, an abort or
an out-of-memory kill of the engine must not take the metadata service and the MySQL endpoint
with it, and a dead server can simply be replaced by a new process.

The child runs `python -m galene.engine.sail --serve …` with the FE's own interpreter (the
venv), so Python code that Sail runs in its own process (mapInArrow functions, Python data
sources) can `import galene` and everything the FE can import. One difference: Sail 0.7 reads
`pyspark.__version__` of its own interpreter to pick its Spark dialect and refuses PySpark 4.3,
the FE's client. The child therefore finds `pyspark` first in a directory holding PySpark's
4.2 Connect client (`pyspark-client`, pure Python, installed by `make` into
`<venv>/sail-pyspark`); the FE keeps its own PySpark 4.3. The 4.3 client speaks to that server
without trouble (the protocol is the same; pickled functions unpickle under 4.2).

The child dies with the FE: the kernel sends it SIGKILL when the thread that forked it ends
(PR_SET_PDEATHSIG follows the forking *thread*, so every start happens on one long-lived
spawner thread), and it runs in its own process group so a terminal's Ctrl-C reaches only the
FE, which stops it in order.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from galene.common.errors import GaleneError

log = logging.getLogger(__name__)

# The PySpark that Sail 0.7.2 accepts in its own process (it supports 3.5 - 4.2).
SAIL_PYSPARK_VERSION = "4.2.0"
SAIL_PYSPARK_DIR = "sail-pyspark"
# Tokio worker threads beyond one per core, so that the server answers while a query runs.
SPARE_RUNTIME_THREADS = 2
# How long a new server may take to accept connections (it starts in well under a second here).
START_TIMEOUT_S = 60.0
# How long a stopping server may take after SIGTERM before it is killed.
STOP_TIMEOUT_S = 10.0
# A server that could not bind its port (taken between our probe and its bind) is tried again.
START_ATTEMPTS = 3
# Sail drops a Connect session idle for `spark.session_timeout_secs` (900 s by default); the FE
# keeps one session for as long as the server lives, and an idle night must not break it.
SESSION_TIMEOUT_S = 10 * 365 * 24 * 3600

_PR_SET_PDEATHSIG = 1
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the directory holding `galene/`


class SailError(GaleneError):
    """The Sail engine could not be started."""


def sail_pyspark_dir() -> Path:
    """Where the Sail child finds PySpark 4.2 (GALENE_SAIL_PYSPARK, else <venv>/sail-pyspark)."""
    configured = os.environ.get("GALENE_SAIL_PYSPARK")
    path = Path(configured) if configured else Path(sys.prefix) / SAIL_PYSPARK_DIR
    if not (path / "pyspark" / "__init__.py").is_file():
        raise SailError(
            f"the Sail engine needs PySpark's {SAIL_PYSPARK_VERSION} Connect client in {path} "
            f"(Sail 0.7 refuses PySpark {_pyspark_version()} in its process): run `make`, or "
            f"`pip install --no-deps --target {path} pyspark-client=={SAIL_PYSPARK_VERSION}`"
        )
    return path


def _pyspark_version() -> str:
    try:
        import pyspark

        return pyspark.__version__
    except ImportError:
        return "?"


def describe_exit(returncode: int) -> str:
    """'exited with code 3' / 'killed by signal SIGKILL' for a Popen return code."""
    if returncode < 0:
        try:
            return f"killed by signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with code {returncode}"


class SailServer:
    """One Sail Spark Connect server process; `start()` replaces a previous one."""

    def __init__(self, *, host: str = "127.0.0.1", work_dir: str | None = None):
        self.host = host
        self.work_dir = work_dir
        self.port: int | None = None
        self.starts = 0  # servers started so far
        self.last_exit: str | None = None  # how the previous server ended, once it has
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        # One long-lived thread forks every server: PR_SET_PDEATHSIG fires when the forking
        # thread exits, so a short-lived thread (the FE's warm-up, a query's worker) must not.
        self._spawner: ThreadPoolExecutor | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise SailError("the Sail server is not running")
        return f"sc://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def running(self) -> bool:
        proc = self._proc
        return proc is not None and proc.poll() is None

    def exit_reason(self, wait_s: float = 0.0) -> str | None:
        """How the current server ended ('killed by signal SIGKILL'), None while it runs
        (after waiting up to `wait_s` for it to end)."""
        proc = self._proc
        if proc is None:
            return self.last_exit
        try:
            code = proc.wait(wait_s) if wait_s > 0 else proc.poll()
        except subprocess.TimeoutExpired:
            return None
        return None if code is None else describe_exit(code)

    # --- lifecycle ------------------------------------------------------------------
    def start(self) -> str:
        """Start a new server (stopping any previous one); its `sc://` URL once it accepts."""
        with self._lock:
            self._stop_locked()
            pythonpath = sail_pyspark_dir()
            last_error = ""
            for _ in range(START_ATTEMPTS):
                port = _free_port(self.host)
                proc = self._spawn(port, pythonpath)
                error = _wait_listening(proc, self.host, port, START_TIMEOUT_S)
                if error is None:
                    self._proc, self.port = proc, port
                    self.starts += 1
                    log.info(
                        "Sail server %d started (pid %d) on %s:%d", self.starts, proc.pid, self.host, port
                    )
                    return self.url
                last_error = error
                _kill(proc)
                log.warning("Sail server on port %d did not start: %s", port, error)
            raise SailError(f"the Sail server did not start: {last_error}")

    def stop(self) -> None:
        with self._lock:
            self._stop_locked()
            if self._spawner is not None:
                self._spawner.shutdown(wait=True)
                self._spawner = None

    def _stop_locked(self) -> None:
        proc, self._proc, self.port = self._proc, None, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                log.warning(
                    "Sail server (pid %d) did not stop within %.0f s: killing it", proc.pid, STOP_TIMEOUT_S
                )
                _kill(proc)
        self.last_exit = describe_exit(proc.returncode)

    def _spawn(self, port: int, pythonpath: Path) -> subprocess.Popen:
        env = dict(os.environ)
        paths = [str(pythonpath), _PACKAGE_ROOT]
        if env.get("PYTHONPATH"):
            paths.append(env["PYTHONPATH"])
        env["PYTHONPATH"] = os.pathsep.join(paths)
        env.setdefault("SAIL_SPARK__SESSION_TIMEOUT_SECS", str(SESSION_TIMEOUT_S))
        # Sail serves gRPC on the same Tokio runtime its query tasks run on, one worker thread per
        # core by default; a CPU-bound query (one task per core) then holds every worker and the
        # server stops answering — an interrupt, a config call, a new connection's handshake
        # ("timed out before receiving SETTINGS frame") — until the query ends. Spare workers
        # keep it answering; partitions still follow the cores (execution.default_parallelism).
        env.setdefault("TOKIO_WORKER_THREADS", str((os.cpu_count() or 1) + SPARE_RUNTIME_THREADS))
        argv = [
            sys.executable, "-m", "galene.engine.sail", "--serve",
            "--ip", self.host, "--port", str(port), "--parent-pid", str(os.getpid()),
        ]  # fmt: skip
        if self._spawner is None:
            self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="galene-sail-spawner")
        return self._spawner.submit(
            subprocess.Popen,
            argv,
            env=env,
            cwd=self.work_dir or _PACKAGE_ROOT,
            stdin=subprocess.DEVNULL,
            process_group=0,  # the terminal's Ctrl-C is the FE's; the FE stops the server
        ).result()


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _wait_listening(proc: subprocess.Popen, host: str, port: int, timeout_s: float) -> str | None:
    """None once the server accepts a connection; else why not (it exited, or the deadline)."""
    deadline = time.monotonic() + timeout_s
    while True:
        code = proc.poll()
        if code is not None:
            return f"the server process {describe_exit(code)}"
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return None
        except OSError:
            pass
        if time.monotonic() >= deadline:
            return f"no answer on {host}:{port} within {timeout_s:.0f} s"
        time.sleep(0.05)


def _kill(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(STOP_TIMEOUT_S)


# --- the child process ----------------------------------------------------------------


def _die_with_parent(parent_pid: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the FE's stop() still ends the server
        pass
    if os.getppid() != parent_pid:  # the FE died before the prctl took effect
        os._exit(0)


def _serve(argv: list[str]) -> None:
    import argparse

    p = argparse.ArgumentParser(prog="galene.engine.sail")
    p.add_argument("--serve", action="store_true", required=True)
    p.add_argument("--ip", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--parent-pid", type=int, required=True)
    args = p.parse_args(argv)
    _die_with_parent(args.parent_pid)
    from pysail import _native

    # Runs until the process is signalled; argv[0] is the program name, as for the `sail` CLI.
    _native.main(["sail", "spark", "server", "--ip", args.ip, "--port", str(args.port)])


if __name__ == "__main__":
    _serve(sys.argv[1:])
