"""SQL INSERT through the real FE (MySQL protocol, pymysql) into the real BE, checked by SELECT."""

from __future__ import annotations

import re
import time

import pymysql
import pytest

DUP = "(k INT NOT NULL, v VARCHAR(8), d DATE) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3"
UNIQ = "(k INT NOT NULL, v VARCHAR(8)) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2"
INFO = re.compile(r"^\{'label':'(?P<label>[^']+)', 'status':'(?P<status>[A-Z]+)', 'txnId':'(?P<txn>\d+)'\}$")


def _insert(conn, sql: str) -> tuple[int, dict[str, str]]:
    """Run an INSERT; returns (affected rows, the fields of the OK packet's info string)."""
    with conn.cursor() as cur:
        affected = cur.execute(sql)
    info = conn._result.message  # the OK packet's info text, as the mysql CLI prints it
    info = info.decode() if isinstance(info, bytes) else (info or "")
    m = INFO.match(info)
    assert m, info
    return affected, m.groupdict()


def _rows(galene, db, sql: str) -> list[tuple]:
    return sorted(galene.query(sql, db), key=repr)


def _error(conn, sql: str) -> tuple[int, str]:
    with pytest.raises(pymysql.err.MySQLError) as ei, conn.cursor() as cur:
        cur.execute(sql)
    return ei.value.args[0], ei.value.args[1]


def test_insert_values_is_visible_with_affected_rows_and_doris_info(galene, db):
    galene.query(f"CREATE TABLE t {DUP}", db)
    with galene.mysql(db) as conn:
        affected, info = _insert(
            conn, "INSERT INTO t VALUES (1, 'a', '2024-01-01'), (2, 'b', NULL), (-3, NULL, '2024-02-29')"
        )
    assert affected == 3
    assert re.fullmatch(r"insert_[0-9a-f]{16}_[0-9a-f]{16}", info["label"])
    assert info["status"] == "VISIBLE" and int(info["txn"]) > 0
    assert _rows(galene, db, "SELECT k, v, CAST(d AS STRING) FROM t") == sorted(
        [(1, "a", "2024-01-01"), (2, "b", None), (-3, None, "2024-02-29")], key=repr
    )


def test_insert_with_label_and_column_list_fills_the_other_columns(galene, db):
    galene.query(f"CREATE TABLE t {DUP}", db)
    with galene.mysql(db) as conn:
        affected, info = _insert(
            conn, f"INSERT INTO {db}.t WITH LABEL my_label_1 (v, k) VALUES ('x', 5), ('y', 6)"
        )
    assert affected == 2 and info["label"] == "my_label_1" and info["status"] == "VISIBLE"
    assert _rows(galene, db, "SELECT k, v, d FROM t") == [(5, "x", None), (6, "y", None)]


def test_reused_label_is_refused_and_loads_nothing(galene, db):
    galene.query(f"CREATE TABLE t {DUP}", db)
    with galene.mysql(db) as conn:
        _, first = _insert(conn, "INSERT INTO t WITH LABEL once VALUES (1, 'a', NULL)")
        code, text = _error(conn, "INSERT INTO t WITH LABEL once VALUES (2, 'b', NULL)")
    assert code == 1105
    assert (
        text
        == f"errCode = 2, detailMessage = Label [once] has already been used, relate to txn [{first['txn']}]"
    )
    assert _rows(galene, db, "SELECT k FROM t") == [(1,)]


def test_wrong_value_count_is_an_error_and_nothing_is_visible(galene, db):
    galene.query(f"CREATE TABLE t {DUP}", db)
    with galene.mysql(db) as conn:
        code, text = _error(conn, "INSERT INTO t VALUES (1, 'a', '2024-01-01'), (2, 'b')")
        assert code == 1105 and "Column count doesn't match value count" in text
        code, text = _error(conn, "INSERT INTO t (k, nope) VALUES (1, 'a')")
        assert code == 1105 and "Unknown column 'nope'" in text
    assert galene.query("SELECT count(*) FROM t", db) == [(0,)]


def test_bad_values_fail_the_whole_insert_in_strict_mode(galene, db):
    galene.query(f"CREATE TABLE t {DUP}", db)
    with galene.mysql(db) as conn:
        code, text = _error(conn, "INSERT INTO t VALUES (1, 'a', '2024-01-01'), ('abc', 'b', '2024-01-02')")
        assert code == 1105
        assert "Insert has filtered data in strict mode, tracking_url=http://" in text
        code, text = _error(conn, "INSERT INTO t VALUES (2, 'far too long for varchar 8', NULL)")
        assert code == 1105 and "Insert has filtered data in strict mode" in text
        code, text = _error(conn, "INSERT INTO t VALUES (3, 'ok', '2024-13-45')")
        assert code == 1105 and "Insert has filtered data in strict mode" in text
    assert galene.query("SELECT count(*) FROM t", db) == [(0,)]


def test_non_strict_insert_filters_bad_rows_and_loads_the_rest(galene, db):
    galene.query(f"CREATE TABLE t {DUP}", db)
    with galene.mysql(db) as conn:
        with conn.cursor() as cur:
            cur.execute("SET enable_insert_strict = false")
        affected, info = _insert(
            conn, "INSERT INTO t VALUES (1, 'a', NULL), ('abc', 'b', NULL), (3, 'c', NULL)"
        )
    assert affected == 2 and info["status"] == "VISIBLE"
    assert _rows(galene, db, "SELECT k, v FROM t") == [(1, "a"), (3, "c")]


def test_values_with_expressions_and_awkward_strings(galene, db):
    galene.query(f"CREATE TABLE t {DUP}", db)
    awkward = "'\"\\\t\n€"
    literal = awkward.replace("\\", "\\\\").replace("'", "\\'").replace("\t", "\\t").replace("\n", "\\n")
    with galene.mysql(db) as conn:
        affected, _ = _insert(
            conn,
            f"INSERT INTO t VALUES (1 + 2, concat('a', 'b'), date_add(CAST('2024-01-31' AS DATE), 1)), "
            f"(4, '{literal}', NULL)",
        )
    assert affected == 2
    assert _rows(galene, db, "SELECT k, v, CAST(d AS STRING) FROM t") == sorted(
        [(3, "ab", "2024-02-01"), (4, awkward, None)], key=repr
    )


def test_insert_select_between_duplicate_tables(galene, db):
    galene.query(f"CREATE TABLE src {DUP}", db)
    galene.query(f"CREATE TABLE dst {DUP}", db)
    galene.query(
        "INSERT INTO src VALUES (1, 'a', '2024-01-01'), (2, 'b\\nc', NULL), (3, 'c', '2024-01-03')", db
    )
    with galene.mysql(db) as conn:
        affected, info = _insert(conn, "INSERT INTO dst WITH LABEL copy_1 SELECT * FROM src WHERE k >= 2")
        assert affected == 2 and info["label"] == "copy_1" and info["status"] == "VISIBLE"
        affected, _ = _insert(
            conn, "INSERT INTO dst (v, k) SELECT concat(v, '!'), k * 10 FROM src WHERE k = 1"
        )
        assert affected == 1
        with conn.cursor() as cur:
            assert cur.execute("INSERT INTO dst SELECT * FROM src WHERE k > 100") == 0
        code, text = _error(conn, "INSERT INTO dst SELECT k, v FROM src")
        assert code == 1105 and "insert into cols should be corresponding to the query output" in text
    assert _rows(galene, db, "SELECT k, v, CAST(d AS STRING) FROM dst") == sorted(
        [(2, "b\nc", None), (3, "c", "2024-01-03"), (10, "a!", None)], key=repr
    )


def test_insert_select_into_unique_table_replaces_by_key(galene, db):
    galene.query(f"CREATE TABLE src {DUP}", db)
    galene.query(f"CREATE TABLE u {UNIQ}", db)
    galene.query("INSERT INTO u VALUES (1, 'old'), (9, 'keep')", db)
    galene.query("INSERT INTO src VALUES (1, 'new', NULL), (2, 'b', NULL)", db)
    with galene.mysql(db) as conn:
        affected, info = _insert(conn, "INSERT INTO u SELECT k, v FROM src")
    assert affected == 2 and info["status"] == "VISIBLE"
    assert _rows(galene, db, "SELECT k, v FROM u") == [(1, "new"), (2, "b"), (9, "keep")]


def _wait_for(galene, db, sql: str, expected, timeout: float = 60) -> list[tuple]:
    deadline = time.monotonic() + timeout
    while True:
        got = _rows(galene, db, sql)
        if got == expected or time.monotonic() > deadline:
            return got
        time.sleep(0.2)


def test_group_commit_session_variable(galene, db):
    galene.query(f"CREATE TABLE t {DUP}", db)
    galene.query('ALTER TABLE t SET ("group_commit_interval_ms" = "200")', db)
    with galene.mysql(db) as conn:
        with conn.cursor() as cur:
            cur.execute("SET group_commit = sync_mode")
        affected, info = _insert(conn, "INSERT INTO t VALUES (1, 'sync', NULL), (2, 'sync', NULL)")
        assert affected == 2 and info["label"].startswith("group_commit_") and info["status"] == "PREPARE"
        # sync_mode replies once the merged transaction is visible.
        assert _rows(galene, db, "SELECT k FROM t") == [(1,), (2,)]

        with conn.cursor() as cur:
            cur.execute("SET group_commit = async_mode")
        affected, info = _insert(conn, "INSERT INTO t (k, v) VALUES (3, 'async')")
        assert affected == 1 and info["label"].startswith("group_commit_") and info["status"] == "PREPARE"
    expected = [(1, "sync"), (2, "sync"), (3, "async")]
    assert _wait_for(galene, db, "SELECT k, v FROM t", expected) == expected


def test_insert_select_keeps_values_of_every_common_type(galene, db):
    ddl = (
        "(k BIGINT NOT NULL, b BOOLEAN, f DOUBLE, m DECIMAL(12, 3), ts DATETIME, s STRING) "
        "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2"
    )
    galene.query(f"CREATE TABLE src {ddl}", db)
    galene.query(f"CREATE TABLE dst {ddl}", db)
    galene.query(
        "INSERT INTO src VALUES (9007199254740993, true, 0.1, -123456789.125, '2024-03-01 12:34:56', 'x'), "
        "(2, false, 1e300, 0.001, '1970-01-01 00:00:00', ''), (3, NULL, NULL, NULL, NULL, NULL)",
        db,
    )
    with galene.mysql(db) as conn:
        affected, _ = _insert(conn, "INSERT INTO dst SELECT * FROM src")
    assert affected == 3
    cols = "k, b, f, CAST(m AS STRING), CAST(ts AS STRING), s"
    assert _rows(galene, db, f"SELECT {cols} FROM dst") == _rows(galene, db, f"SELECT {cols} FROM src")
    assert (9007199254740993, 1, 0.1, "-123456789.125", "2024-03-01 12:34:56", "x") in _rows(
        galene, db, f"SELECT {cols} FROM dst"
    )
