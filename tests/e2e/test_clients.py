"""Real MySQL clients against a real Galene: what they send on connect, errors, labels."""

from __future__ import annotations

import mysql.connector
import pymysql
import pytest
import sqlalchemy as sa


def test_pymysql_connect_sequence_and_labels(galene, db):
    with galene.mysql(db) as conn, conn.cursor() as cur:
        cur.execute("SET NAMES utf8mb4")
        cur.execute("SET AUTOCOMMIT = 1")
        cur.execute("SELECT DATABASE()")
        assert cur.fetchone() == (db,)
        assert cur.description[0][0] == "DATABASE()"
        cur.execute("SELECT VERSION()")
        assert cur.description[0][0] == "VERSION()"
        cur.execute("CREATE TABLE t (k INT, v VARCHAR(10)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
        cur.execute("SELECT COUNT(*) FROM t")
        assert cur.fetchone() == (0,)
        assert cur.description[0][0] == "COUNT(*)"


def test_errors_are_doris_style(galene, db):
    with galene.mysql(db) as conn, conn.cursor() as cur:
        with pytest.raises(pymysql.err.MySQLError) as e:
            cur.execute("SELEC 1 FROM")
        assert e.value.args[0] == 1105 and "errCode = 2, detailMessage = " in e.value.args[1]
        with pytest.raises(pymysql.err.MySQLError) as e:
            cur.execute("SELECT * FROM missing_table")
        assert e.value.args[0] == 1105
        assert "detailMessage = Unknown table" in e.value.args[1]
        cur.execute("CREATE TABLE t (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
        with pytest.raises(pymysql.err.MySQLError) as e:
            cur.execute("SELECT nope FROM t")
        assert e.value.args[0] == 1105 and "nope" in e.value.args[1]
        with pytest.raises(pymysql.err.MySQLError) as e:
            cur.execute(
                "CREATE TABLE bad (k INT, v INT SUM) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
            )
        assert e.value.args[0] == 1105
        cur.execute("SHOW TABLES")
        assert cur.fetchall() == (("t",),)  # nothing half-created
        cur.execute("SELECT 1")  # the connection is still usable
        assert cur.fetchone() == (1,)


def test_unknown_database_and_wrong_password(galene):
    with pytest.raises(pymysql.err.OperationalError) as e:
        galene.mysql("no_such_db")
    assert e.value.args[0] == 1049
    with pytest.raises(pymysql.err.OperationalError) as e:
        galene.mysql(password="wrong")
    assert e.value.args[0] == 1045


def test_mysql_connector_with_prepared_statements(galene, db):
    galene.query(
        "CREATE TABLE t (k INT, v VARCHAR(20)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", db
    )
    galene.stream_load(db, "t", b"1,it's\n2,back\\\\slash\n3,plain\n", {"column_separator": ","})
    conn = mysql.connector.connect(
        host="127.0.0.1", port=galene.query_port, user="root", password="", database=db
    )
    try:
        cur = conn.cursor(prepared=True)
        cur.execute("SELECT k FROM t WHERE v = %s", ("it's",))
        assert cur.fetchall() == [(1,)]
        cur.close()
        cur = conn.cursor()
        cur.execute("SELECT @@session.autocommit")
        cur.fetchall()
        cur.execute("SELECT k, v FROM t ORDER BY k")
        assert [r[0] for r in cur.fetchall()] == [1, 2, 3]
    finally:
        conn.close()


def test_sqlalchemy_engine(galene, db):
    galene.query("CREATE TABLE t (k INT, v DOUBLE) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", db)
    galene.stream_load(db, "t", b"1,1.5\n2,2.5\n", {"column_separator": ","})
    engine = sa.create_engine(f"mysql+pymysql://root:@127.0.0.1:{galene.query_port}/{db}")
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT sum(v) AS s FROM t")).scalar() == 4.0
        with engine.connect() as conn:  # pool return issued ROLLBACK; reuse works
            assert conn.execute(sa.text("SELECT count(*) FROM t")).scalar() == 2
    finally:
        engine.dispose()


def test_show_and_desc(galene, db):
    galene.query(
        "CREATE TABLE t (k INT NOT NULL COMMENT 'key', v DECIMAL(10, 2), d DATETIME(3)) "
        "UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
        db,
    )
    assert ("t", "BASE TABLE") in galene.query("SHOW FULL TABLES", db)
    desc = galene.query("DESC t", db)
    assert [r[0] for r in desc] == ["k", "v", "d"]
    assert desc[0][1].upper().startswith("INT") and desc[0][2] == "No" and desc[0][3] == "true"
    full = galene.query(f"SHOW FULL COLUMNS FROM t FROM {db}")
    assert [r[0] for r in full] == ["k", "v", "d"] and len(full[0]) == 9 and full[0][8] == "key"
    assert db in [r[0] for r in galene.query("SHOW DATABASES")]
