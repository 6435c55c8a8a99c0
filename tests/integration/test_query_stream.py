"""A query's result streams from the engine to the MySQL client (galene/fe/result_stream.py).

A result many times the FE's queue of batches arrives whole and in order through buffered and
unbuffered (SSCursor) clients, also when the client pauses mid-result; an engine error after
rows were sent reaches the client as an error packet on a connection that stays usable; and
`query_timeout` still ends a result the client reads too slowly.
"""

from __future__ import annotations

import os
import time

import mysql.connector
import pymysql
import pymysql.cursors
import pytest

ROWS = 300_000  # 30 Arrow batches of 10k rows: far more than the FE's queue of 4


@pytest.fixture(scope="module")
def big(galene):
    """A database with `big` (id 0 … ROWS-1), loaded once for the module."""
    db = "stream_big"
    galene.query(f"DROP DATABASE IF EXISTS {db}")
    galene.query(f"CREATE DATABASE {db}")
    galene.query(
        "CREATE TABLE big (id INT NOT NULL, s VARCHAR(16)) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 4", db
    )
    body = "".join(f"{i},s{i}\n" for i in range(ROWS)).encode()
    reply = galene.stream_load(db, "big", body, {"column_separator": ","})
    assert reply["Status"] == "Success", reply
    yield db
    galene.query(f"DROP DATABASE IF EXISTS {db}")


def _expected() -> list[tuple]:
    return [(i, f"s{i}") for i in range(ROWS)]


@pytest.mark.parametrize("cursor", [pymysql.cursors.Cursor, pymysql.cursors.SSCursor])
def test_a_large_result_arrives_whole_and_in_order(galene, big, cursor):
    with galene.mysql(big) as conn, conn.cursor(cursor) as cur:
        cur.execute("SELECT id, s FROM big ORDER BY id")
        assert list(cur.fetchall()) == _expected()
        cur.execute("SELECT COUNT(*) FROM big")  # the connection goes on
        assert list(cur.fetchall()) == [(ROWS,)]


def test_the_binary_protocol_streams_a_prepared_statement(galene, big):
    conn = mysql.connector.connect(host=galene.host, port=galene.query_port, user="root", password="", database=big)
    try:
        cur = conn.cursor(prepared=True)
        cur.execute("SELECT id, s FROM big WHERE id >= ? ORDER BY id", (ROWS - 50_000,))
        assert [tuple(r) for r in cur.fetchall()] == _expected()[ROWS - 50_000 :]
        cur.close()
    finally:
        conn.close()


def test_a_slow_reader_stalls_the_stream_and_loses_nothing(galene, big):
    with galene.mysql(big) as conn, conn.cursor(pymysql.cursors.SSCursor) as cur:
        cur.execute("SELECT id, s FROM big ORDER BY id")
        got = [cur.fetchone() for _ in range(10)]
        time.sleep(2)  # the FE's queue and the socket fill; the engine reader waits
        got.extend(cur.fetchmany(1000))
        time.sleep(1)
        got.extend(cur.fetchall())
    assert got == _expected()


def test_an_error_after_rows_were_sent_reaches_the_client(galene, big):
    # UNION ALL: the first branches' partitions are read before the last's, which fails. Spark
    # runs the partitions a group of one per core at a time: the first group must not reach
    # the failing branch (each scan of `big` has two partitions or more).
    quick = " UNION ALL ".join(["SELECT id, 1 AS ok FROM big"] * ((os.cpu_count() or 1) // 2 + 2))
    sql = f"{quick} UNION ALL SELECT id, assert_true(id < 0) AS ok FROM big"
    with galene.mysql(big) as conn:
        for cursor in (pymysql.cursors.SSCursor, pymysql.cursors.Cursor):
            got = []
            with pytest.raises(pymysql.MySQLError) as e, conn.cursor(cursor) as cur:
                cur.execute(sql)
                while (row := cur.fetchone()) is not None:
                    got.append(row)
            assert "is not true" in str(e.value), e.value  # assert_true's message
            if cursor is pymysql.cursors.SSCursor and galene.engine == "spark":
                assert len(got) > 0  # the error came after rows, in place of the EOF
            with conn.cursor() as cur:  # the connection is usable
                cur.execute("SELECT COUNT(*) FROM big")
                assert list(cur.fetchall()) == [(ROWS,)]


def test_query_timeout_ends_a_result_read_too_slowly(galene, big):
    with galene.mysql(big) as conn:
        with conn.cursor() as cur:
            cur.execute("SET query_timeout = 3")
        try:
            with pytest.raises(pymysql.MySQLError) as e, conn.cursor(pymysql.cursors.SSCursor) as cur:
                # ~45 MB of text: more than the socket buffers hold, so the FE is still
                # streaming when the client comes back after the timeout.
                cur.execute("SELECT id, repeat('x', 150) AS pad FROM big ORDER BY id")
                cur.fetchone()
                time.sleep(5)
                while cur.fetchone() is not None:
                    pass
            assert "query_timeout (3 s)" in str(e.value), e.value
        finally:
            with conn.cursor() as cur:
                cur.execute("SET query_timeout = 900")
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM big")
            assert list(cur.fetchall()) == [(ROWS,)]


def test_kill_query_ends_a_result_being_streamed(galene, big):
    with galene.mysql(big) as victim, galene.mysql(big) as admin:
        with pytest.raises(pymysql.MySQLError) as e, victim.cursor(pymysql.cursors.SSCursor) as cur:
            cur.execute("SELECT id, repeat('x', 150) AS pad FROM big ORDER BY id")  # ~45 MB: still streaming
            assert cur.fetchone() == (0, "x" * 150)
            with admin.cursor() as kill:
                kill.execute(f"KILL QUERY {victim.thread_id()}")
            while cur.fetchone() is not None:
                pass
        assert e.value.args[0] == 1317, e.value
        with victim.cursor() as cur:  # KILL QUERY keeps the session
            cur.execute("SELECT COUNT(*) FROM big")
            assert list(cur.fetchall()) == [(ROWS,)]
