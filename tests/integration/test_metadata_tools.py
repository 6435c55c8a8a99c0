"""Metadata for tools, against a real Galene through real clients: information_schema as
dbt-doris, the Doris SQLAlchemy dialect, DorisClient, pandas and DBeaver-style browsers read it;
Doris' metadata SHOW statements; session variables; SHOW WARNINGS; EXPLAIN; multi-statement
texts (pymysql, mysql-connector, the mariadb CLI's `-e "a; b; c"` and `\\s`); PROCESSLIST and
KILL."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from datetime import datetime

import mysql.connector
import pandas as pd
import pymysql
import pytest
import sqlalchemy as sa
from pymysql.constants import CLIENT

from tests.support.node import GaleneProcess

DB = "shop_meta"
MARIADB = shutil.which("mariadb") or shutil.which("mysql")


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    proc = GaleneProcess(tmp_path_factory.mktemp("metadata-tools"), conf={"disable_auto_compaction": "true"})
    proc.start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def shop(node):
    """A database with a table of each key model (loaded by stream load and INSERT)."""
    node.query(f"CREATE DATABASE {DB}")
    node.query(
        "CREATE TABLE orders (id BIGINT NOT NULL COMMENT 'order id', name VARCHAR(20) DEFAULT 'x', "
        "amount DECIMAL(10, 2), ts DATETIME(3), note STRING, ok BOOLEAN) UNIQUE KEY(id) "
        "COMMENT 'the orders' DISTRIBUTED BY HASH(id) BUCKETS 2",
        DB,
    )
    node.query(
        "CREATE TABLE events (k INT, v BIGINT SUM) AGGREGATE KEY(k) PARTITION BY RANGE(k) "
        "(PARTITION p1 VALUES LESS THAN (10), PARTITION p2 VALUES LESS THAN (20)) DISTRIBUTED BY HASH(k) BUCKETS 3",
        DB,
    )
    node.query("CREATE TABLE logs (msg VARCHAR(100)) DUPLICATE KEY(msg) DISTRIBUTED BY RANDOM BUCKETS 1", DB)
    reply = node.stream_load(
        DB,
        "orders",
        b"1,a,1.50,2024-01-01 00:00:00,n1,1\n2,b,2.50,2024-01-02 00:00:00,n2,0\n3,c,3.50,2024-01-03 00:00:00,,1\n",
        {"column_separator": ",", "label": "meta_load_1"},
    )
    assert reply["Status"] == "Success", reply
    node.query("INSERT INTO logs VALUES ('one'), ('two')", DB)
    node.query("INSERT INTO events VALUES (1, 10), (15, 5)", DB)
    return {"txn_id": reply["TxnId"]}


def connect(node: GaleneProcess, database: str | None = None, **kw) -> pymysql.Connection:
    return node.mysql(database, **kw)


def query(conn, sql: str, args=None) -> tuple[list[str], list[tuple]]:
    with conn.cursor() as cur:
        cur.execute(sql, args)
        names = [d[0] for d in cur.description] if cur.description else []
        return names, list(cur.fetchall())


def error_of(conn, sql: str) -> tuple[int, str]:
    with pytest.raises(pymysql.MySQLError) as e, conn.cursor() as cur:
        cur.execute(sql)
    return e.value.args[0], e.value.args[1]


# --- information_schema --------------------------------------------------------------------------
def test_information_schema_is_a_database_every_client_sees(node, shop):
    with connect(node) as conn:
        _, dbs = query(conn, "SHOW DATABASES")
        assert ("information_schema",) in dbs and (DB,) in dbs
    with connect(node, "information_schema") as conn:  # USE at connect
        names, tables = query(conn, "SHOW TABLES")
        assert names == ["Tables_in_information_schema"]
        assert {"tables", "columns", "schemata", "views", "statistics", "key_column_usage", "routines",
                "user_privileges", "processlist", "partitions"} <= {t for (t,) in tables}  # fmt: skip
        _, full = query(conn, "SHOW FULL TABLES FROM information_schema")
        assert ("tables", "SYSTEM VIEW") in full
        _, rows = query(
            conn, "SELECT TABLE_NAME FROM tables WHERE TABLE_SCHEMA = %s ORDER BY TABLE_NAME", (DB,)
        )
        assert rows == [("events",), ("logs",), ("orders",)]
        fields, desc = query(conn, "DESC columns")
        assert fields[:2] == ["Field", "Type"] and [r[0] for r in desc][:4] == [
            "TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "COLUMN_NAME"]  # fmt: skip
        _, cols = query(conn, "SHOW FULL COLUMNS FROM schemata")
        assert [r[0] for r in cols] == ["CATALOG_NAME", "SCHEMA_NAME", "DEFAULT_CHARACTER_SET_NAME",
                                        "DEFAULT_COLLATION_NAME", "SQL_PATH", "DEFAULT_ENCRYPTION"]  # fmt: skip
    with connect(node) as conn:
        conn.select_db("information_schema")  # COM_INIT_DB
        for spelling in (
            "INFORMATION_SCHEMA.TABLES",
            "Information_Schema.Tables",
            "information_schema.`tables`",
        ):
            _, rows = query(
                conn, f"SELECT table_name FROM {spelling} WHERE table_schema = '{DB}' AND table_name = 'logs'"
            )
            assert rows == [("logs",)], spelling


def test_dbt_doris_macros(node, shop):
    """The queries of dbt-doris' metadata macros (list_schemas, list_relations_without_caching,
    get_columns_in_relation, get_catalog), verbatim."""
    with connect(node) as conn:
        _, schemas = query(conn, "select distinct schema_name from information_schema.schemata")
        assert (DB,) in schemas and ("information_schema",) in schemas
        names, relations = query(
            conn,
            'select null as "database", table_name as name, table_schema as "schema", '
            "case when table_type = 'BASE TABLE' then 'table' when table_type = 'VIEW' then 'view' "
            f"else table_type end as table_type from information_schema.tables where table_schema = '{DB}'",
        )
        assert names == ["database", "name", "schema", "table_type"]
        assert sorted(relations) == [(None, "events", DB, "table"), (None, "logs", DB, "table"),
                                     (None, "orders", DB, "table")]  # fmt: skip
        names, columns = query(
            conn,
            "select column_name as `column`, data_type as 'dtype', character_maximum_length as char_size, "
            "numeric_precision, numeric_scale from information_schema.columns "
            f"where table_schema = '{DB}' and table_name = 'orders'",
        )
        assert names[:3] == ["column", "dtype", "char_size"]
        assert columns == [
            ("id", "bigint", None, 19, 0), ("name", "varchar", 20, None, None), ("amount", "decimal", None, 10, 2),
            ("ts", "datetime", None, None, None), ("note", "varchar", None, None, None),
            ("ok", "tinyint", None, None, 0),
        ]  # fmt: skip
        names, catalog = query(
            conn,
            f"""with tables as (
                select null as "table_database", table_schema, table_name,
                  case when table_type = 'BASE TABLE' then 'table' when table_type = 'VIEW' then 'view'
                       else table_type end as table_type,
                  null as table_owner
                from information_schema.tables),
            columns as (
                select null as "table_database", table_schema as "table_schema", table_name as "table_name",
                  null as "table_comment", column_name as "column_name", ordinal_position as "column_index",
                  data_type as "column_type", null as "column_comment"
                from information_schema.columns)
            select columns.table_database, columns.table_schema, columns.table_name, tables.table_type,
              columns.table_comment, tables.table_owner, columns.column_name, columns.column_index,
              columns.column_type, columns.column_comment
            from tables join columns using (table_schema, table_name)
            where tables.table_schema not in ('information_schema') and (upper(tables.table_schema) = upper('{DB}'))
            order by column_index""",
        )
        assert names == ["table_database", "table_schema", "table_name", "table_type", "table_comment",
                         "table_owner", "column_name", "column_index", "column_type", "column_comment"]  # fmt: skip
        assert len(catalog) == 6 + 2 + 1
        assert {(r[2], r[6], r[7], r[8]) for r in catalog} >= {
            ("orders", "id", 1, "bigint"),
            ("logs", "msg", 1, "varchar"),
        }
        assert [r[7] for r in catalog] == sorted(r[7] for r in catalog)


def test_doris_sqlalchemy_dialect_and_pandas(node, shop):
    """What the Doris SQLAlchemy dialect (pydoris / apache-doris' sqlalchemy dialect) sends to
    reflect: has_table counts in information_schema.tables, table comments, SHOW FULL TABLES,
    SHOW COLUMNS, SHOW INDEX; and SQLAlchemy's inspector and pandas over the MySQL dialect."""
    with connect(node) as conn:
        sql = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = %s AND table_name = %s"
        assert query(conn, sql, (DB, "orders"))[1] == [(1,)]
        assert query(conn, sql, (DB, "missing"))[1] == [(0,)]
        comment = (
            "SELECT table_comment FROM information_schema.tables WHERE table_schema = %s AND table_name = %s"
        )
        assert query(conn, comment, (DB, "orders"))[1] == [("the orders",)]
        _, full = query(conn, f"SHOW FULL TABLES FROM `{DB}`")
        assert sorted(full) == [("events", "BASE TABLE"), ("logs", "BASE TABLE"), ("orders", "BASE TABLE")]
        _, cols = query(conn, f"SHOW COLUMNS FROM `{DB}`.`orders`")
        assert [(r[0], r[2]) for r in cols][:2] == [("id", "NO"), ("name", "YES")]
        names, index = query(conn, f"SHOW INDEX FROM `{DB}`.`orders`")
        assert names == ["Table", "Non_unique", "Key_name", "Seq_in_index", "Column_name", "Collation",
                         "Cardinality", "Sub_part", "Packed", "Null", "Index_type", "Comment", "Properties"]  # fmt: skip
        assert index == []
    engine = sa.create_engine(f"mysql+pymysql://root@127.0.0.1:{node.query_port}/{DB}")
    try:
        inspector = sa.inspect(engine)
        assert DB in inspector.get_schema_names()
        assert sorted(inspector.get_table_names()) == ["events", "logs", "orders"]
        assert inspector.has_table("orders")
        with engine.connect() as c:
            frame = pd.read_sql(
                sa.text(
                    "SELECT TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION, COLUMN_TYPE FROM information_schema.COLUMNS "
                    "WHERE TABLE_SCHEMA = :db ORDER BY TABLE_NAME, ORDINAL_POSITION"
                ),
                c,
                params={"db": DB},
            )
    finally:
        engine.dispose()
    assert list(frame.columns) == ["TABLE_NAME", "COLUMN_NAME", "ORDINAL_POSITION", "COLUMN_TYPE"]
    assert frame["TABLE_NAME"].tolist()[:2] == ["events", "events"]
    assert frame[frame.TABLE_NAME == "orders"]["COLUMN_TYPE"].tolist() == [
        "bigint(20)", "varchar(20)", "decimal(10,2)", "datetime(3)", "text", "tinyint(1)"]  # fmt: skip


def test_metadata_browsing_as_bi_tools_do(node, shop):
    """DBeaver / Superset / DorisClient-style browsing: whole information_schema tables with their
    Doris columns and types, joins with user tables, and SQL only the engine evaluates."""
    with connect(node) as conn:
        names, schemata = query(conn, "SELECT * FROM information_schema.SCHEMATA ORDER BY SCHEMA_NAME")
        assert names == ["CATALOG_NAME", "SCHEMA_NAME", "DEFAULT_CHARACTER_SET_NAME", "DEFAULT_COLLATION_NAME",
                         "SQL_PATH", "DEFAULT_ENCRYPTION"]  # fmt: skip
        assert ("internal", DB, "utf8", "utf8_general_ci", None, "NO") in schemata

        names, rows = query(
            conn,
            "SELECT * FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND ENGINE = 'Doris' ORDER BY TABLE_NAME",
            (DB,),
        )
        t = {r[2]: dict(zip(names, r)) for r in rows}
        assert sorted(t) == ["events", "logs", "orders"]
        orders = t["orders"]
        assert (orders["TABLE_CATALOG"], orders["TABLE_TYPE"], orders["ENGINE"]) == (
            "internal",
            "BASE TABLE",
            "Doris",
        )
        assert (
            orders["TABLE_ROWS"] == 3
            and orders["DATA_LENGTH"] > 0
            and isinstance(orders["CREATE_TIME"], datetime)
        )
        assert (orders["TABLE_COMMENT"], orders["TABLE_COLLATION"]) == ("the orders", "utf-8")

        names, rows = query(
            conn,
            "SELECT COLUMN_NAME, ORDINAL_POSITION, COLUMN_DEFAULT, IS_NULLABLE, DATA_TYPE, CHARACTER_MAXIMUM_LENGTH, "
            "NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION, COLUMN_TYPE, COLUMN_KEY, COLUMN_COMMENT "
            "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
            (DB, "orders"),
        )
        assert names[0] == "COLUMN_NAME"
        assert rows[0] == ("id", 1, None, "NO", "bigint", None, 19, 0, None, "bigint(20)", "UNI", "order id")
        assert rows[1] == ("name", 2, "x", "YES", "varchar", 20, None, None, None, "varchar(20)", "", "")
        assert rows[3][8:10] == (3, "datetime(3)")
        _, keys = query(
            conn,
            f"SELECT COLUMN_NAME, COLUMN_KEY FROM information_schema.columns WHERE TABLE_SCHEMA = '{DB}' AND TABLE_NAME = 'events'",
        )
        assert keys == [("k", "AGG"), ("v", "")]

        for empty, width in (("ROUTINES", 23), ("STATISTICS", 16), ("KEY_COLUMN_USAGE", 12), ("TABLE_CONSTRAINTS", 6),
                             ("TRIGGERS", 22), ("ENGINES", 6), ("VIEWS", 10)):  # fmt: skip
            names, rows = query(conn, f"SELECT * FROM information_schema.{empty}")
            assert (len(names), rows) == (width, []), empty
        _, charsets = query(conn, "SELECT * FROM information_schema.character_sets")
        assert charsets == [("utf8mb4", "utf8mb4_0900_bin", "UTF-8 Unicode", 4)]
        _, privs = query(
            conn, "SELECT GRANTEE, PRIVILEGE_TYPE, IS_GRANTABLE FROM information_schema.user_privileges"
        )
        assert ("'root'@'%'", "SELECT", "YES") in privs
        _, parts = query(
            conn, "SELECT PARTITION_NAME, PARTITION_METHOD, TABLE_ROWS FROM information_schema.partitions "
            f"WHERE TABLE_SCHEMA = '{DB}' AND TABLE_NAME = 'events' ORDER BY PARTITION_NAME",
        )  # fmt: skip
        assert parts == [("p1", "RANGE", 1), ("p2", "RANGE", 1)]

        # Mixed with a user table: the engine joins it with the Arrow-backed view.
        _, mixed = query(
            conn,
            f"SELECT o.id, t.TABLE_ROWS FROM {DB}.orders o JOIN information_schema.tables t "
            f"ON t.TABLE_SCHEMA = '{DB}' AND t.TABLE_NAME = 'orders' ORDER BY o.id",
        )
        assert mixed == [(1, 3), (2, 3), (3, 3)]
        # SQL the FE's evaluator does not know: the engine answers the same.
        _, regexp = query(
            conn,
            f"SELECT TABLE_NAME FROM information_schema.tables WHERE TABLE_SCHEMA = '{DB}' AND TABLE_NAME REGEXP '^o'",
        )
        assert [r[0] for r in regexp] == ["orders"]


def test_show_table_status(node, shop):
    with connect(node, DB) as conn:
        with conn.cursor() as cur:
            cur.execute("SHOW TABLE STATUS")
            names = [d[0] for d in cur.description]
            rows = cur.fetchall()
        assert names == ["Name", "Engine", "Version", "Row_format", "Rows", "Avg_row_length", "Data_length",
                         "Max_data_length", "Index_length", "Data_free", "Auto_increment", "Create_time",
                         "Update_time", "Check_time", "Collation", "Checksum", "Create_options", "Comment"]  # fmt: skip
        status = {r[0]: dict(zip(names, r)) for r in rows}
        assert sorted(status) == ["events", "logs", "orders"]
        assert (status["orders"]["Engine"], status["orders"]["Rows"], status["orders"]["Comment"]) == (
            "Doris",
            3,
            "the orders",
        )
        assert isinstance(status["orders"]["Create_time"], datetime)
        assert [r[0] for r in query(conn, "SHOW TABLE STATUS LIKE 'ord%'")[1]] == ["orders"]
        assert [r[0] for r in query(conn, "SHOW TABLE STATUS WHERE Name = 'logs'")[1]] == ["logs"]
    with connect(node) as conn:
        assert [r[0] for r in query(conn, f"SHOW TABLE STATUS FROM {DB} WHERE Rows > 2")[1]] == ["orders"]
        assert error_of(conn, "SHOW TABLE STATUS")[0] == 1046  # no database selected


def test_show_partitions_data_and_desc_all(node, shop):
    with connect(node, DB) as conn:
        names, parts = query(conn, "SHOW PARTITIONS FROM events")
        assert names[:8] == ["PartitionId", "PartitionName", "VisibleVersion", "VisibleVersionTime", "State",
                             "PartitionKey", "Range", "DistributionKey"]  # fmt: skip
        assert names[-2:] == ["CommittedVersion", "RowCount"] and len(names) == 22
        assert [(r[1], r[8], r[21]) for r in parts] == [("p1", "3", "1"), ("p2", "3", "1")]
        assert [r[1] for r in query(conn, "SHOW PARTITIONS FROM events WHERE PartitionName = 'p2'")[1]] == [
            "p2"
        ]
        assert [
            r[1] for r in query(conn, "SHOW PARTITIONS FROM events ORDER BY PartitionName DESC LIMIT 1")[1]
        ] == ["p2"]
        _, single = query(conn, f"SHOW PARTITIONS FROM {DB}.orders")
        assert [(r[1], r[21]) for r in single] == [("orders", "3")]

        names, data = query(conn, "SHOW DATA")
        assert names == ["TableName", "Size", "ReplicaCount", "RemoteSize", "BinlogSize"]
        assert [r[0] for r in data] == ["events", "logs", "orders", "Total", "Quota", "Left"]
        assert data[2][2] == "2" and data[3][2] == "9"  # tablets: 2 x 3 + 1 + 2
        names, data = query(conn, f"SHOW DATA FROM {DB}.orders")
        assert names == [
            "TableName",
            "IndexName",
            "Size",
            "ReplicaCount",
            "RowCount",
            "RemoteSize",
            "BinlogSize",
        ]
        assert data[0][:2] == ("orders", "orders") and data[0][4] == "3" and data[1][1] == "Total"

        names, desc = query(conn, "DESC orders ALL")
        assert names[:4] == ["IndexName", "IndexKeysType", "Field", "Type"]
        assert desc[0][:3] == ("orders", "UNIQUE_KEYS", "id")


def test_show_stream_load_and_transaction(node, shop):
    with connect(node, DB) as conn:
        names, loads = query(conn, "SHOW STREAM LOAD")
        assert names == ["Label", "Db", "Table", "ClientIp", "Status", "Message", "Url", "TotalRows", "LoadedRows",
                         "FilteredRows", "UnselectedRows", "LoadBytes", "StartTime", "FinishTime", "User", "Comment"]  # fmt: skip
        by_label = {r[0]: dict(zip(names, r)) for r in loads}
        assert list(by_label) == ["meta_load_1"]  # INSERT … VALUES are not stream loads to Doris
        load = by_label["meta_load_1"]
        assert (load["Db"], load["Table"], load["Status"], load["TotalRows"], load["LoadedRows"]) == (
            DB,
            "orders",
            "SUCCESS",
            "3",
            "3",
        )
        assert query(conn, "SHOW STREAM LOAD WHERE Label = 'nope'")[1] == []

        names, txns = query(conn, f"SHOW TRANSACTION WHERE id = {shop['txn_id']}")
        assert names == ["TransactionId", "Label", "Coordinator", "TransactionStatus", "LoadJobSourceType",
                         "PrepareTime", "PreCommitTime", "CommitTime", "PublishTime", "FinishTime", "Reason",
                         "ErrorReplicasCount", "ListenerId", "TimeoutMs", "ErrMsg"]  # fmt: skip
        txn = dict(zip(names, txns[0]))
        assert (txn["TransactionId"], txn["Label"], txn["TransactionStatus"]) == (
            str(shop["txn_id"]),
            "meta_load_1",
            "VISIBLE",
        )
        assert txn["LoadJobSourceType"] == "BACKEND_STREAMING" and txn["Coordinator"].startswith("BE: ")
        assert query(conn, f"SHOW TRANSACTION FROM {DB} WHERE label = 'meta_load_1'")[1] == txns
        code, message = error_of(conn, "SHOW TRANSACTION WHERE id = 987654321")
        assert code == 1105 and "transaction with id 987654321 does not exist" in message


def test_session_variables_set_and_show(node):
    with connect(node) as conn:
        query(conn, "SET query_timeout = 123")
        assert query(conn, "SHOW VARIABLES LIKE 'query_timeout'")[1] == [("query_timeout", "123")]
        assert query(conn, "SELECT @@query_timeout")[1] == [(123,)]
        assert query(conn, "SELECT @@session.query_timeout, @@global.query_timeout")[1] == [(123, 900)]
        _, changed = query(
            conn,
            "SELECT VARIABLE_VALUE, DEFAULT_VALUE, CHANGED FROM information_schema.session_variables WHERE VARIABLE_NAME = 'query_timeout'",
        )
        assert changed == [("123", "900", "1")]
        query(conn, "SET enable_nereids_planner = true")  # a Doris variable Galene keeps as given
        assert query(conn, "SHOW VARIABLES LIKE 'enable_nereids%'")[1] == [("enable_nereids_planner", "true")]
        code, message = error_of(conn, "SET no_such_variable = 1")
        assert (code, message) == (1193, "Unknown system variable 'no_such_variable'")
        code, _ = error_of(conn, "SELECT @@no_such_variable")
        assert code == 1193
    with connect(node) as other:  # another session starts from the defaults
        assert query(other, "SELECT @@query_timeout")[1] == [(900,)]


def test_show_warnings_and_errors_report_the_last_error(node, shop):
    with connect(node, DB) as conn:
        assert query(conn, "SHOW WARNINGS")[1] == []
        code, message = error_of(conn, "SELECT * FROM no_such_table")
        names, warnings = query(conn, "SHOW WARNINGS")
        assert names == ["Level", "Code", "Message"]
        assert warnings == [("Error", code, message)]
        assert query(conn, "SHOW ERRORS")[1] == [("Error", code, message)]
        assert query(conn, "SHOW WARNINGS")[1] == [("Error", code, message)]  # SHOW WARNINGS keeps them
        query(conn, "SELECT 1")
        assert query(conn, "SHOW WARNINGS")[1] == []


def test_explain_returns_the_engine_plan(node, shop):
    with connect(node, DB) as conn:
        names, plain = query(conn, "EXPLAIN SELECT name, COUNT(*) FROM orders WHERE id > 1 GROUP BY name")
        assert names == ["Explain String(Nereids Planner)"]
        assert plain and all(isinstance(r[0], str) for r in plain)
        _, verbose = query(conn, "EXPLAIN VERBOSE SELECT * FROM orders WHERE id = 1")
        assert len(verbose) >= 2
        code, message = error_of(conn, "EXPLAIN SELECT * FROM no_such_table")
        assert code == 1105 and "Unknown table" in message


def test_multi_statement_texts(node, shop):
    with connect(node, DB, client_flag=CLIENT.MULTI_STATEMENTS) as conn, conn.cursor() as cur:
        cur.execute("SELECT 1 AS a; SELECT 2 AS b, 3 AS c; SHOW TABLES; INSERT INTO logs VALUES ('multi')")
        results = [([d[0] for d in cur.description], list(cur.fetchall()))]
        while cur.nextset():
            results.append(
                ([d[0] for d in cur.description] if cur.description else None, list(cur.fetchall()))
            )
        assert results[0] == (["a"], [(1,)])
        assert results[1] == (["b", "c"], [(2, 3)])
        assert results[2][1] == [("events",), ("logs",), ("orders",)]
        assert results[3] == (None, []) and cur.rowcount == 1
        # An error ends the sequence; the session lives on.
        cur.execute("SELECT 10; SELECT nope FROM orders; SELECT 30")
        assert cur.fetchall() == ((10,),)
        with pytest.raises(pymysql.MySQLError):
            cur.nextset()
        cur.execute("SELECT 'ok'")
        assert cur.fetchall() == (("ok",),)
        cur.execute("SELECT 'a;b' AS s; SELECT 2 -- c;omment\n")  # semicolons in strings and comments
        assert cur.fetchall() == (("a;b",),)
        assert cur.nextset() and cur.fetchall() == ((2,),)
    conn = mysql.connector.connect(
        host="127.0.0.1", port=node.query_port, user="root", password="", database=DB
    )
    try:
        cur = conn.cursor()
        cur.execute("SELECT 1; SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = %s", (DB,))
        sets = [cur.fetchall()]
        while cur.nextset():
            sets.append(cur.fetchall())
        assert sets == [[(1,)], [(3,)]]
    finally:
        conn.close()


def _cli(node: GaleneProcess, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    assert MARIADB, "the mariadb CLI is required (make test installs mariadb-client)"
    cmd = [MARIADB, "-h127.0.0.1", f"-P{node.query_port}", "-uroot", "--skip-ssl", *args]
    return subprocess.run(cmd, capture_output=True, text=True, input=stdin, check=False, timeout=300)


def test_mariadb_cli_statements_and_status(node, shop):
    res = _cli(
        node, "--batch", "-e",
        f"USE {DB}; INSERT INTO logs VALUES ('cli'); SELECT COUNT(*) FROM logs WHERE msg = 'cli'; SHOW WARNINGS",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[:2] == ["COUNT(*)", "1"]
    res = _cli(
        node, "--batch", "-e",
        f"SELECT TABLE_NAME FROM information_schema.tables WHERE TABLE_SCHEMA = '{DB}' ORDER BY TABLE_NAME; "
        "SELECT 'second'",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["TABLE_NAME", "events", "logs", "orders", "second", "second"]
    status = _cli(node, "-D", DB, stdin="\\s\n")
    assert status.returncode == 0, status.stderr
    assert f"Current database:\t{DB}" in status.stdout
    assert "Server version:\t\t5.7.99" in status.stdout and "Uptime:" in status.stdout
    assert "Threads:" in status.stdout  # COM_STATISTICS


def test_processlist_and_kill(node, shop):
    victim = connect(node)
    victim_id = victim.thread_id()
    outcome: dict = {}

    def long_query():
        try:
            with victim.cursor() as cur:
                # Long on both engines (Sail counts a cross join without running it; not a sum).
                cur.execute("SELECT SUM(a.id * b.id % 7) FROM range(200000) a CROSS JOIN range(200000) b")
                outcome["rows"] = cur.fetchall()
        except pymysql.MySQLError as e:
            outcome["error"] = e.args

    worker = threading.Thread(target=long_query)
    worker.start()
    try:
        with connect(node) as admin:
            deadline = time.monotonic() + 120
            running = None
            while time.monotonic() < deadline and running is None:
                names, rows = query(admin, "SHOW FULL PROCESSLIST")
                running = next(
                    (dict(zip(names, r)) for r in rows if r[1] == victim_id and r[7] == "Query"), None
                )
                time.sleep(0.2)
            assert running is not None, rows
            assert names[:4] == ["CurrentConnected", "Id", "User", "Host"] and len(names) == 15
            assert running["Info"].startswith("SELECT SUM(a.id * b.id % 7)") and running["User"] == "root"
            assert running["CurrentConnected"] == "No"
            mine = [r for r in rows if r[0] == "Yes"]
            assert len(mine) == 1 and mine[0][12] == "SHOW FULL PROCESSLIST"
            _, listed = query(
                admin, "SELECT Id, Command FROM information_schema.processlist WHERE Id = %s", (victim_id,)
            )
            assert listed == [(victim_id, "Query")]

            query(admin, f"KILL QUERY {victim_id}")
            worker.join(120)
            assert outcome.get("error", (None,))[0] == 1317, outcome
            assert query(victim, "SELECT 'still here'")[1] == [
                ("still here",)
            ]  # KILL QUERY keeps the session

            query(admin, f"KILL {victim_id}")
            with pytest.raises(pymysql.MySQLError):
                query(victim, "SELECT 1")
            assert error_of(admin, "KILL 987654")[0] == 1094
            _, rows = query(admin, "SHOW PROCESSLIST")
            assert victim_id not in [r[1] for r in rows]
    finally:
        worker.join(120)
        victim.close()


def test_show_collation_character_set_and_engines(node):
    with connect(node) as conn:
        names, rows = query(conn, "SHOW COLLATION")
        assert names == ["Collation", "Charset", "Id", "Default", "Compiled", "Sortlen"]
        assert ("utf8mb4_0900_bin", "utf8mb4", 309, "Yes", "Yes", 1) in rows
        names, rows = query(conn, "SHOW CHARACTER SET")
        assert names == ["Charset", "Description", "Default collation", "Maxlen"]
        assert rows == [("utf8mb4", "UTF-8 Unicode", "utf8mb4_0900_bin", 4)]
        names, rows = query(conn, "SHOW ENGINES")
        assert names == ["Engine", "Support", "Comment", "Transactions", "XA", "Savepoints"]
        assert rows[0] == ("Olap engine", "YES", "Default storage engine of Doris", "NO", "NO", "NO")


def test_views_and_materialized_views_in_information_schema(node, shop):
    """A view is a VIEW (engine View, its definition in VIEWS, its columns in COLUMNS) and an
    async materialized view is a VIEW too, as Doris reports them; dbt's relation listing maps
    them accordingly."""
    with connect(node, DB) as conn:
        query(conn, "CREATE VIEW big_orders (order_id COMMENT 'the id', amount) COMMENT 'large ones' AS "
                    "SELECT id, amount FROM orders WHERE amount > 2")  # fmt: skip
        query(conn, "CREATE MATERIALIZED VIEW order_counts BUILD IMMEDIATE REFRESH COMPLETE ON MANUAL "
                    "DISTRIBUTED BY HASH(name) BUCKETS 1 AS SELECT name, COUNT(*) AS n FROM orders GROUP BY name")  # fmt: skip
        try:
            _, tables = query(
                conn, "SELECT TABLE_NAME, TABLE_TYPE, ENGINE, TABLE_COMMENT FROM information_schema.tables "
                f"WHERE TABLE_SCHEMA = '{DB}' AND TABLE_NAME IN ('big_orders', 'order_counts') ORDER BY TABLE_NAME",
            )  # fmt: skip
            assert tables == [("big_orders", "VIEW", "View", "large ones"),
                              ("order_counts", "VIEW", "MATERIALIZED_VIEW", "")]  # fmt: skip
            names, views = query(conn, f"SELECT * FROM information_schema.views WHERE TABLE_SCHEMA = '{DB}'")
            view = dict(zip(names, views[0]))
            assert len(views) == 1 and view["TABLE_NAME"] == "big_orders"
            assert "amount > 2" in view["VIEW_DEFINITION"] and view["CHECK_OPTION"] == "NONE"
            _, cols = query(
                conn, "SELECT COLUMN_NAME, ORDINAL_POSITION, DATA_TYPE, COLUMN_COMMENT FROM information_schema.columns "
                f"WHERE TABLE_SCHEMA = '{DB}' AND TABLE_NAME = 'big_orders' ORDER BY ORDINAL_POSITION",
            )  # fmt: skip
            assert cols == [("order_id", 1, "bigint", "the id"), ("amount", 2, "decimal", "")]
            _, relations = query(
                conn, 'select table_name as name, case when table_type = \'BASE TABLE\' then \'table\' '
                "when table_type = 'VIEW' then 'view' else table_type end as table_type "
                f"from information_schema.tables where table_schema = '{DB}' order by name",
            )  # fmt: skip
            assert relations == [("big_orders", "view"), ("events", "table"), ("logs", "table"),
                                 ("order_counts", "view"), ("orders", "table")]  # fmt: skip
            _, status = query(conn, "SHOW TABLE STATUS LIKE 'big%'")
            assert status[0][:2] == ("big_orders", "View")
        finally:
            query(conn, "DROP VIEW IF EXISTS big_orders")
            query(conn, "DROP MATERIALIZED VIEW IF EXISTS order_counts")
