"""`galene start` as a supervisor of separate FE and BE processes.

The BE process is SIGKILLed (and SIGSEGVed) under `galene start` while clients query and load:
queries keep answering from the FE throughout, the supervisor restarts the BE by itself, SHOW
BACKENDS shows it not alive and then alive again, and every acknowledged async load is visible
exactly once. The FE dying is survived the same way. SIGTERM stops everything cleanly; a
supervisor killed outright takes its children with it.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
import uuid

import httpx
import pymysql
import pytest

from tests.support.client import auth_header
from tests.support.node import GaleneProcess
from tests.support.procs import children_of

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    g = GaleneProcess(
        tmp_path_factory.mktemp("supervised"),
        conf={"heartbeat_interval_second": "1", "gc_grace_seconds": "3600"},
    )
    g.start()
    yield g
    g.stop()


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise TimeoutError(f"timed out waiting for {what}")


def _pid_or_none(g: GaleneProcess, role: str) -> int | None:
    try:
        return g.role_pid(role)
    except LookupError:
        return None


def _be_alive(g: GaleneProcess) -> str:
    with g.mysql() as conn, conn.cursor(pymysql.cursors.DictCursor) as cur:
        cur.execute("SHOW BACKENDS")
        (row,) = cur.fetchall()
        return f"{row['Alive']}|{row['ErrMsg']}"


def _be_serves(g: GaleneProcess) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{g.be_http_port}/api/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


class Loader(threading.Thread):
    """Sends labelled async group-commit loads through the FE (307 -> BE) and retries each label
    until it is acknowledged (Success, or Label Already Exists for a retry of a loaded label)."""

    def __init__(self, g: GaleneProcess, db: str, name: str, first_id: int, stop: threading.Event):
        super().__init__(daemon=True)
        self.g, self.db, self.name, self.next_id, self.stop_event = g, db, name, first_id, stop
        self.acked: dict[str, list[int]] = {}
        self.failures: list[str] = []

    def _send(self, label: str, body: bytes) -> dict | None:
        headers = {
            **auth_header(), "label": label, "column_separator": ",", "group_commit": "async_mode",
        }  # fmt: skip
        try:
            with httpx.Client(timeout=30) as c:
                r = c.put(f"http://127.0.0.1:{self.g.http_port}/api/{self.db}/t/_stream_load", headers=headers)
                if r.status_code != 307:
                    return r.json()  # e.g. no backend alive right now
                r = c.put(r.headers["location"], content=body, headers=headers)
                return r.json()
        except (httpx.HTTPError, ValueError) as e:  # the BE died under this request
            self.failures.append(repr(e))
            return None

    def run(self) -> None:
        while not self.stop_event.is_set():
            ids = list(range(self.next_id, self.next_id + 5))
            self.next_id += 5
            label = f"{self.name}_{ids[0]}"
            body = "".join(f"{i},{self.name}\n" for i in ids).encode()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                reply = self._send(label, body)
                if reply and (
                    reply.get("Status") == "Success" or reply.get("Status") == "Label Already Exists"
                ):
                    self.acked[label] = ids
                    break
                if reply is not None:
                    self.failures.append(str(reply.get("Message")))
                time.sleep(0.2)
            else:
                raise AssertionError(f"label {label} never acknowledged: {self.failures[-3:]}")


class Querier(threading.Thread):
    """Queries the FE the whole time: every statement must answer."""

    def __init__(self, g: GaleneProcess, db: str, stop: threading.Event):
        super().__init__(daemon=True)
        self.g, self.db, self.stop_event = g, db, stop
        self.answered = 0
        self.errors: list[str] = []

    def run(self) -> None:
        conn = self.g.mysql(self.db)
        try:
            with conn.cursor() as cur:
                while not self.stop_event.is_set():
                    try:
                        cur.execute("SELECT COUNT(*) FROM t")
                        cur.fetchall()
                        cur.execute("SHOW TABLES")
                        cur.fetchall()
                        self.answered += 1
                    except pymysql.MySQLError as e:
                        self.errors.append(repr(e))
                    time.sleep(0.05)
        finally:
            conn.close()


def test_be_killed_under_start_is_restarted_while_the_fe_keeps_serving(node):
    db = "sv_" + uuid.uuid4().hex[:8]
    node.query(f"CREATE DATABASE {db}")
    node.query(
        "CREATE TABLE t (id BIGINT NOT NULL, src VARCHAR(16)) DUPLICATE KEY(id) "
        'DISTRIBUTED BY HASH(id) BUCKETS 2 PROPERTIES ("group_commit_interval_ms"="500")',
        db,
    )
    stop = threading.Event()
    loaders = [Loader(node, db, f"c{n}", n * 1_000_000, stop) for n in range(2)]
    querier = Querier(node, db, stop)
    for t in (*loaders, querier):
        t.start()
    seen_dead = seen_back = 0
    rng = random.Random(10)
    try:
        for n, sig in enumerate((signal.SIGKILL, signal.SIGSEGV, signal.SIGKILL)):
            time.sleep(rng.uniform(0.5, 2.0))
            be_pid = node.role_pid("be")
            worker_pids = children_of(be_pid)
            os.kill(be_pid, sig)
            # The FE hears of the death from the supervisor: Alive=false with the reason (a
            # heartbeat may notice the closed port first; the reason follows and then stays).
            state = _wait(
                lambda sig=sig: (s := _be_alive(node)).lower().startswith("false") and sig.name in s and s,
                30,
                f"Alive=false naming {sig.name}",
            )
            assert sig.name in state, state
            seen_dead += 1
            new_pid = _wait(
                lambda be_pid=be_pid: (p := _pid_or_none(node, "be")) not in (None, be_pid) and p, 60, "BE restart"
            )
            assert new_pid != be_pid
            _wait(lambda: _be_serves(node), 60, "restarted BE to serve")
            _wait(lambda: _be_alive(node).lower().startswith("true"), 30, "Alive=true again")
            seen_back += 1
            for w in worker_pids:  # the BE's ingest worker died with it
                _wait(lambda w=w: not os.path.exists(f"/proc/{w}") or _zombie(w), 30, f"worker {w} gone")
    finally:
        time.sleep(1.0)
        stop.set()
        for t in (*loaders, querier):
            t.join(180)
    assert seen_dead == seen_back == 3
    assert querier.errors == [], querier.errors[:5]
    assert querier.answered > 0
    expected = sorted(i for ld in loaders for ids in ld.acked.values() for i in ids)
    assert len(expected) >= 10
    got = _wait(
        lambda: (rows := node.query("SELECT id FROM t", db)) and len(rows) >= len(expected) and rows,
        120,
        "acknowledged rows to become visible",
    )
    assert sorted(r[0] for r in got) == expected  # all of them, each once
    node.query(f"DROP DATABASE {db}")


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def test_fe_killed_under_start_is_restarted_and_the_be_keeps_running(node):
    be_pid = node.role_pid("be")
    fe_pid = node.role_pid("fe")
    os.kill(fe_pid, signal.SIGKILL)
    _wait(lambda: _pid_or_none(node, "fe") not in (None, fe_pid), 60, "FE restart")
    node.wait_ready(180)
    assert node.role_pid("be") == be_pid  # the BE was not touched
    assert node.query("SELECT 1") == [(1,)]


def test_sigterm_stops_everything_and_a_killed_supervisor_takes_its_children(tmp_path):
    g = GaleneProcess(tmp_path / "a").start()
    pids = children_of(g.proc.pid)
    assert len(pids) >= 3  # FE, BE, the FE's Spark JVM
    g.proc.send_signal(signal.SIGTERM)
    assert g.proc.wait(120) == 0
    assert "Galene stopped." in g.log_tail()
    _wait(lambda: all(not os.path.exists(f"/proc/{p}") or _zombie(p) for p in pids), 30, "children to exit")

    g = GaleneProcess(tmp_path / "b").start()
    pids = [g.role_pid("fe"), g.role_pid("be")]
    g.proc.kill()  # SIGKILL: no chance to stop anything itself
    g.proc.wait(30)
    _wait(lambda: all(not os.path.exists(f"/proc/{p}") or _zombie(p) for p in pids), 90, "orphans to exit")
