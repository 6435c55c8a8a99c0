"""A Galene cluster on loopback (or in a network lab, netlab.py): one `galene fe` and several
`galene be` processes, the BEs joined with one `ALTER SYSTEM ADD BACKEND`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support.client import auth_header
from tests.support.node import ROOT, GaleneProcess
from tests.support.procs import children_of


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
        """`placement`: (network namespace, address) of the FE, then of each BE (netlab.py)."""
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
