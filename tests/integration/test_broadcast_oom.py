"""A query that fails on the optimizer's broadcast choice runs again without broadcast joins
(issue 19, item 9), on a real Spark driver with a small heap.

Spark sizes a table from its Parquet files. The table `b` here is 1M rows of one 700-byte string
(and a key with 8 values): its files are ~100 KB (dictionary + RLE), its rows 700+ MB in memory.
A LEFT JOIN that reads its string on the right is planned as a broadcast hash join, whose hash
table does not fit a 512 MB driver ("Not enough memory to build and broadcast the table"). Galene retries such
a query once on a session of the same engine with broadcast joins disabled (a sort-merge join:
the client gets its rows); a query that fails again, or that kills the driver JVM, reaches the
client as a Doris-style error without Spark's plan or a Java stack, on a connection that stays
usable, and the next query runs. (A failure of the retry that is a memory failure itself, such
as a non-equi outer join that must broadcast b anyway, may as well end the JVM: an
OutOfMemoryError strikes whichever thread allocates next, and a task thread's ends the JVM. The
memory message is checked in tests/unit/test_engine_failures.py.)
"""

from __future__ import annotations

import gzip

import pymysql
import pytest

from tests.support.node import GaleneProcess

pytestmark = pytest.mark.slow

ROWS = 1_000_000
CHUNKS = 4
WIDTH = 700


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    proc = GaleneProcess(
        tmp_path_factory.mktemp("galene-small-driver"),
        conf={"gc_grace_seconds": "3600", "disable_auto_compaction": "true", "spark_driver_memory": "512m"},
        engine="spark",  # the broadcast and its heap are Apache Spark's (Sail plans joins itself)
    )
    proc.start(timeout=300)  # a JVM on a busy 2-core box
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def db(node):
    name = "oom"
    node.query(f"CREATE DATABASE {name}")
    node.query("CREATE TABLE b (k INT, v STRING) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", name)
    node.query(
        "CREATE TABLE p (k INT, w VARCHAR(20)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", name
    )
    value = b"x" * WIDTH
    per_chunk = ROWS // CHUNKS
    lines = [b"%d,%s\n" % (k, value) for k in range(8)]
    for _ in range(CHUNKS):  # gzip: the body on the wire is small, the rows are not
        body = gzip.compress(b"".join(lines) * (per_chunk // 8), compresslevel=1)
        reply = node.stream_load(name, "b", body, {"column_separator": ",", "compress_type": "gz"})
        assert reply["Status"] == "Success", reply
    reply = node.stream_load(name, "p", b"3,three\n100,hundred\n101,hundred one\n", {"column_separator": ","})
    assert reply["Status"] == "Success", reply
    return name


def _plan(conn, sql: str) -> str:
    with conn.cursor() as cur:
        cur.execute("EXPLAIN " + sql)
        return "\n".join(r[0] for r in cur.fetchall())


JOIN = "SELECT p.k, count(b.v) AS n FROM p LEFT JOIN b ON p.k = b.k GROUP BY p.k ORDER BY p.k"


def test_a_broadcast_that_runs_out_of_driver_memory_is_retried_without_broadcast(node, db):
    with node.mysql(db) as conn:
        # The premise: Spark plans b as a broadcast (its files are tiny). count(b.v) reads v:
        # with b.k alone the broadcast holds only the 1M keys, which fit.
        assert "BroadcastHashJoin" in _plan(conn, JOIN)
        with conn.cursor() as cur:
            cur.execute(JOIN)
            assert [d[0] for d in cur.description] == ["k", "n"]
            assert cur.fetchall() == ((3, ROWS // 8), (100, 0), (101, 0))
        # The retry's setting was the retry's alone: the session still plans the broadcast.
        assert "BroadcastHashJoin" in _plan(conn, JOIN)
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM p")
            assert cur.fetchall() == ((3,),)
    assert "retrying it once without broadcast joins" in node.log_path.read_text(errors="replace")


def _doris_error(excinfo) -> str:
    code, text = excinfo.value.args
    assert code == 1105
    assert text.startswith("errCode = 2, detailMessage = ")
    # No Spark plan, no Java stack: one short line of text.
    assert "\n" not in text and "\tat " not in text and "+- " not in text, text
    assert len(text) < 1000, text
    return text


def test_a_query_that_fails_again_without_broadcast_gets_a_doris_error(node, db):
    # The broadcast runs out of memory; the retry joins, and then its HAVING fails (on purpose):
    # the client gets that failure as one line of Doris error.
    sql = JOIN.replace("ORDER BY", "HAVING assert_true(count(b.v) < 10) IS NULL ORDER BY")
    with node.mysql(db) as conn:
        with pytest.raises(pymysql.err.OperationalError) as excinfo, conn.cursor() as cur:
            cur.execute(sql)
        text = _doris_error(excinfo)
        assert "is not true" in text and "run again without broadcast joins" in text, text
        with conn.cursor() as cur:  # the same connection goes on
            cur.execute("SELECT k, w FROM p ORDER BY k")
            assert cur.fetchall() == ((3, "three"), (100, "hundred"), (101, "hundred one"))
    log = node.log_path.read_text(errors="replace")
    assert "Not enough memory to build and broadcast the table" in log  # the whole text: in the FE log
    assert "query failed on Spark (retried)" in log


def test_a_driver_killed_by_an_out_of_memory_error_is_replaced(node, db):
    # A task that allocates more than the heap: in local mode the task's OutOfMemoryError
    # ends the driver JVM (Spark's exit code 52).
    sql = "SELECT max(length(repeat(v, 1000000))) FROM b"
    with node.mysql(db) as conn:
        with pytest.raises(pymysql.err.OperationalError) as excinfo, conn.cursor() as cur:
            cur.execute(sql)
        text = _doris_error(excinfo)
        assert "[CANCELLED]" in text and "out of memory" in text, text
        with conn.cursor() as cur:  # the next query starts a new JVM and gets its rows
            cur.execute("SELECT count(*), max(k) FROM b")
            assert cur.fetchall() == ((ROWS, 7),)
