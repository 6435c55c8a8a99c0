"""A started node takes a load at once (issue 19, item 1).

`galene start` answered `SELECT 1` while every load through the FE failed with "No available
backends to load data" for seconds: the FE's first heartbeat reached a BE that was still
starting, and the next one came a heartbeat interval (5 s) later. Real cold starts of
`galene start` (fresh data dir each), driven by the clients the issue names:

* 20 cold starts, each followed as soon as the node answers `SELECT 1` (the earliest sign of
  life a script can see; the banner comes later) by DorisClient's stream load: its empty-body
  PUT to the FE, which must answer 307, then the load to the BE it names; the rows are then
  read back through DorisClient's own MySQL connection;
* `INSERT … VALUES` through pymysql as soon as `SELECT 1` answers;
* a Parquet stream load as soon as `galene start --engine sail` answers `SELECT 1`;
* the banner (what `make run` prints) and the harness's ready (the FE's /api/health) appear only
  once a load would succeed: the BE has passed its first write canary (checked on the INSERT's
  node: a cold start costs seconds).

The cold starts use Sail: the load path never touches the query engine, and Sail starts without
a JVM. Each of the twenty checks the committed row count in the FE's metadata (SHOW DATA) and is
then killed: nothing waits for the engine; the last one reads its rows back through the engine.
"""

from __future__ import annotations

import io
import os
import signal
import time
import uuid

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pymysql
import pytest

from tests.support.client import auth_header
from tests.support.node import GaleneProcess

pytestmark = pytest.mark.slow

PASSWORD = "ready-pw"  # DorisClient refuses an empty password
COLD_STARTS = 20
TABLE_DDL = (
    "CREATE TABLE t (k INT, v VARCHAR(16)) DUPLICATE KEY(k) "
    'DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ("replication_num"="1")'
)


def _node(path, engine: str = "sail") -> GaleneProcess:
    return GaleneProcess(path, engine=engine, conf={"initial_root_password": PASSWORD})


def _connect(g: GaleneProcess, database: str | None = None) -> pymysql.Connection:
    return pymysql.connect(
        host=g.host, port=g.query_port, user="root", password=PASSWORD, database=database,
        autocommit=True, connect_timeout=5, read_timeout=300,
    )  # fmt: skip


def start_until_sql_answers(g: GaleneProcess, deadline_s: float = 180) -> pymysql.Connection:
    """Start `galene start` and return the first connection on which `SELECT 1` answered."""
    g.start(wait=False)
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if g.proc is not None and g.proc.poll() is not None:
            raise RuntimeError(f"galene exited with {g.proc.returncode}:\n{g.log_tail()}")
        try:
            conn = _connect(g)
        except pymysql.MySQLError:
            time.sleep(0.05)
            continue
        with conn.cursor() as cur:
            cur.execute("SELECT 1")
            assert cur.fetchall() == ((1,),)
        return conn
    raise TimeoutError(f"SELECT 1 never answered:\n{g.log_tail()}")


def _make_table(conn: pymysql.Connection, db: str) -> None:
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        cur.execute(f"USE {db}")
        cur.execute(TABLE_DDL)


def _doris_session(g: GaleneProcess, db: str):
    from DorisClient import DorisSession

    return DorisSession([f"{g.host}:{g.http_port}"], db, "root", PASSWORD, mysql_port=g.query_port)


def _doris_client_load(g: GaleneProcess, db: str, rows: list[dict]) -> None:
    """DorisClient's stream load, unchanged: `_streamload` is `streamload` without its retry
    decorator, which sleeps 3 s before the first try and tries again: that would hide a node
    that is not ready."""
    session = _doris_session(g, db)
    assert session._streamload("t", rows) is True  # raises "No available BE nodes ..." without a 307


def _read_back(g: GaleneProcess, db: str) -> list[tuple]:
    session = _doris_session(g, db)
    got = session.read("SELECT k, v FROM t ORDER BY k", cursors=pymysql.cursors.Cursor)
    session.conn.close()
    return [tuple(r) for r in got]


def _committed_rows(conn: pymysql.Connection, db: str) -> int:
    """The table's committed row count from the FE's metadata (SHOW DATA: no query engine)."""
    with conn.cursor(pymysql.cursors.DictCursor) as cur:
        cur.execute(f"SHOW DATA FROM {db}.t")
        return int(cur.fetchall()[0]["RowCount"])


def test_twenty_cold_starts_each_take_doris_client_load_at_once(tmp_path):
    pytest.importorskip("DorisClient", reason="DorisClient (PyPI) is not installed: make tools")
    rows = [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}, {"k": 3, "v": "c"}]
    t0 = time.monotonic()
    for run in range(COLD_STARTS):
        g = _node(tmp_path / f"run{run}")
        last = run == COLD_STARTS - 1
        try:
            conn = start_until_sql_answers(g)
            db = f"ready{run}"
            _make_table(conn, db)
            try:
                _doris_client_load(g, db, rows)
            except Exception as e:
                raise AssertionError(f"cold start {run + 1}: the load after SELECT 1 failed: {e}") from e
            assert _committed_rows(conn, db) == len(rows), f"cold start {run + 1}"
            conn.close()
            if last:  # and the rows read back through the query engine, once
                assert _read_back(g, db) == [(r["k"], r["v"]) for r in rows]
                g.stop()
        finally:
            # The next start is cold anyway: no clean stop needed (and the query engine, still
            # starting, is not waited for).
            g.kill()
    print(f"{COLD_STARTS} cold starts with a DorisClient load each: {time.monotonic() - t0:.1f} s")


def test_insert_values_right_after_select_1_and_the_banner_only_once_a_load_would_succeed(tmp_path):
    """INSERT … VALUES through pymysql as soon as SELECT 1 answers. Then the banner (what `make
    run` prints): it waits for the BE's first write canary, and so does the harness's ready
    (the FE's /api/health): at that moment SHOW BACKENDS has a LastCanaryTime and a stream load
    through the FE succeeds."""
    g = _node(tmp_path / "insert")
    try:
        conn = start_until_sql_answers(g)
        _make_table(conn, "ins")
        with conn.cursor() as cur:
            cur.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
            assert cur.rowcount == 2
        deadline = time.monotonic() + 180
        while "Galene is running" not in g.log_path.read_text(errors="replace"):
            assert g.proc is not None and g.proc.poll() is None, g.log_tail()
            assert time.monotonic() < deadline, f"no banner:\n{g.log_tail()}"
            time.sleep(0.02)
        health = httpx.get(f"http://{g.host}:{g.http_port}/api/health", timeout=10).json()
        with conn.cursor(pymysql.cursors.DictCursor) as cur:
            cur.execute("SHOW BACKENDS")
            (be,) = cur.fetchall()
        assert be["Alive"] == "true" and be["Writable"] == "true" and be["LastCanaryTime"] != "N/A", be
        assert health["data"]["load_ready"] is True, health
        g.wait_ready(60)  # the harness agrees
        label = "l" + uuid.uuid4().hex[:8]
        reply = g.stream_load(
            "ins", "t", b"3,c\n", {**auth_header("root", PASSWORD), "label": label, "column_separator": ","}
        )
        assert reply["Status"] == "Success", reply
        with conn.cursor() as cur:
            cur.execute("SELECT k, v FROM t ORDER BY k")
            assert cur.fetchall() == ((1, "a"), (2, "b"), (3, "c"))
        conn.close()
    finally:
        g.stop()


def test_parquet_stream_load_right_after_start_on_sail(tmp_path):
    g = _node(tmp_path / "parquet", engine="sail")
    try:
        conn = start_until_sql_answers(g)
        _make_table(conn, "pq")
        buf = io.BytesIO()
        pq.write_table(pa.table({"k": pa.array([1, 2, 3], pa.int32()), "v": ["x", "y", "z"]}), buf)
        headers = {**auth_header("root", PASSWORD), "Expect": "100-continue", "format": "parquet"}
        with httpx.Client(timeout=120) as c:
            r = c.put(f"http://{g.host}:{g.http_port}/api/pq/t/_stream_load", content=b"", headers=headers)
            assert r.status_code == 307, r.text
            reply = c.put(r.headers["location"], content=buf.getvalue(), headers=headers).json()
        assert reply["Status"] == "Success" and reply["NumberLoadedRows"] == 3, reply
        with conn.cursor() as cur:
            cur.execute("SELECT k, v FROM t ORDER BY k")
            assert cur.fetchall() == ((1, "x"), (2, "y"), (3, "z"))
        conn.close()
    finally:
        g.stop()


def test_a_restarted_be_is_probed_at_once(tmp_path):
    """With a canary interval of an hour, only "probed when it comes up" can run a second canary:
    the BE killed under `galene start` and restarted by the supervisor gets one (LastCanaryTime
    moves on), and the node is load-ready again."""
    g = GaleneProcess(
        tmp_path / "restart", engine="sail",
        conf={"initial_root_password": PASSWORD, "be_canary_interval_second": "3600"},
    ).start()  # fmt: skip
    try:

        def backend() -> dict:
            with _connect(g) as conn, conn.cursor(pymysql.cursors.DictCursor) as cur:
                cur.execute("SHOW BACKENDS")
                (row,) = cur.fetchall()
                return row

        def be_pid_or_none() -> int | None:
            try:
                return g.role_pid("be")
            except LookupError:
                return None

        def wait_for(pred, what: str) -> dict:
            deadline = time.monotonic() + 120
            while not pred(row := backend()):
                assert time.monotonic() < deadline, (what, row, g.log_tail())
                time.sleep(0.2)
            return row

        first = wait_for(lambda r: r["LastCanaryTime"] != "N/A", "a first canary")["LastCanaryTime"]
        time.sleep(1.1)  # LastCanaryTime has a resolution of a second
        be_pid = g.role_pid("be")
        os.kill(be_pid, signal.SIGKILL)
        wait_for(
            lambda r: (
                r["Alive"] == "true"
                and r["Writable"] == "true"
                and r["LastCanaryTime"] != first
                and r["CanaryError"] == ""
                and be_pid_or_none() not in (None, be_pid)
            ),
            "a canary of the restarted BE",
        )
        g.wait_ready(60)
    finally:
        g.stop()
