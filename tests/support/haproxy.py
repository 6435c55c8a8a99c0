"""A real haproxy (Debian's, installed by `make tools`) in front of Galene BEs, for tests:
round-robin, health-checked with `GET /api/health` (a BE that knows its write path is broken
answers 503 and is taken out), bound to 127.0.0.1 only (or to an address in a network lab). A
test skips, naming `make tools`, where haproxy is missing."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

from tests.support.tools import require_tool


def ensure_haproxy() -> str:
    """The haproxy binary; skips the test if there is none."""
    return require_tool("haproxy")


class Haproxy:
    def __init__(self, workdir: Path, port: int, servers: list[tuple[str, int]], netns: str | None = None):
        self.workdir = Path(workdir)
        self.port = port
        self.servers = list(servers)
        self.netns = netns
        self.bind = "127.0.0.1"
        self.proc: subprocess.Popen | None = None

    def config(self) -> str:
        lines = [
            "global",
            "    maxconn 4096",
            "defaults",
            "    mode http",
            "    timeout connect 3s",
            "    timeout client 120s",
            "    timeout server 120s",
            "    timeout http-request 30s",
            "frontend galene_be",
            f"    bind {self.bind}:{self.port}",
            "    default_backend bes",
            "backend bes",
            "    balance roundrobin",
            "    option httpchk GET /api/health",
        ]
        for i, (host, port) in enumerate(self.servers):
            lines.append(f"    server be{i} {host}:{port} check inter 500ms fall 2 rise 1")
        return "\n".join(lines) + "\n"

    def start(self) -> Haproxy:
        binary = ensure_haproxy()
        self.workdir.mkdir(parents=True, exist_ok=True)
        cfg = self.workdir / "haproxy.cfg"
        cfg.write_text(self.config())
        cmd = [binary, "-f", str(cfg), "-db"]
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns, *cmd]
        log = open(self.workdir / "haproxy.log", "ab")  # noqa: SIM115 - kept open for the process
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"haproxy exited: {(self.workdir / 'haproxy.log').read_text()[-2000:]}")
            if self.netns is not None:
                return self
            try:
                with socket.create_connection((self.bind, self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.1)
        raise TimeoutError("haproxy did not listen")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
