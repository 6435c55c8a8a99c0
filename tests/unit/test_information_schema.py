"""information_schema rows and the metadata SHOW statements, computed from a catalog state
(galene/sql/information_schema.py), and the statements and session behaviour around them."""

from __future__ import annotations

import itertools
from datetime import datetime

import pytest
import sqlglot

from galene.catalog.model import CatalogState, Database, Rowset, Txn
from galene.common.errors import GaleneError
from galene.common.types import ColumnType
from galene.fe.session_sql import GlobalVariables, SessionInfo, SessionSql, SessionVariables
from galene.sql import information_schema as IS
from galene.sql.ddl.create_table import table_from_create
from galene.sql.dialect import Galene
from galene.sql.statements.dml import Explain
from galene.sql.statements.metadata import (
    Describe,
    ShowData,
    ShowIndex,
    ShowPartitions,
    ShowProcesslist,
    ShowStreamLoad,
    ShowTableStatus,
    ShowTransaction,
)
from galene.sql.statements.parse import parse_statement

_ids = itertools.count(100)
CREATED = 1_700_000_000.0


def _add_table(state: CatalogState, db: str, sql: str, rows: int = 0, size: int = 0):
    if db not in state.db_names:
        db_id = next(_ids)
        state.databases[db_id] = Database(id=db_id, name=db, create_time=CREATED)
        state.db_names[db] = db_id
    database = state.databases[state.db_names[db]]
    table = table_from_create(
        parse_statement(sql), db_id=database.id, alloc_id=lambda: next(_ids), now=CREATED
    )
    state.tables[table.id] = table
    database.tables[table.name] = table.id
    if rows:
        p = table.partitions[0]
        table.rowsets.append(
            Rowset(
                id="r1",
                tablet_id=p.tablet_ids[0],
                partition_id=p.id,
                version=2,
                num_rows=rows,
                data_size=size,
            )
        )
    return table


@pytest.fixture
def state() -> CatalogState:
    s = CatalogState()
    _add_table(
        s, "shop",
        "CREATE TABLE orders (id BIGINT NOT NULL COMMENT 'order id', name VARCHAR(20) DEFAULT 'x', "
        "amount DECIMAL(10, 2), ts DATETIME(3), note STRING, ok BOOLEAN, big LARGEINT, d DATE, c CHAR(3), "
        "f FLOAT, x DOUBLE, tiny TINYINT, small SMALLINT, i INT) UNIQUE KEY(id) COMMENT 'the orders' "
        "DISTRIBUTED BY HASH(id) BUCKETS 2",
        rows=10, size=1000,
    )  # fmt: skip
    _add_table(
        s,
        "shop",
        "CREATE TABLE events (k INT, v BIGINT SUM) AGGREGATE KEY(k) "
        "PARTITION BY RANGE(k) (PARTITION p1 VALUES LESS THAN (10), PARTITION p2 VALUES LESS THAN (20)) "
        "DISTRIBUTED BY HASH(k) BUCKETS 3",
    )
    _add_table(
        s, "other", "CREATE TABLE logs (msg VARCHAR(100)) DUPLICATE KEY(msg) DISTRIBUTED BY RANDOM BUCKETS 1"
    )
    return s


def ctx_for(state: CatalogState, **kw) -> IS.MetaContext:
    return IS.MetaContext(state=state, **kw)


def local(state: CatalogState, sql: str, **kw) -> IS.LocalOutput | None:
    return IS.run_local(sqlglot.parse_one(sql, read=Galene), ctx_for(state, **kw))


def as_dicts(out: IS.LocalOutput) -> list[dict]:
    names = [n for n, _ in out.columns]
    return [dict(zip(names, r)) for r in out.rows]


# --- type renderings (Doris' SchemaColumnsScanner / Type) -------------------------------------
@pytest.mark.parametrize(
    "ctype, data_type, column_type, precision, scale, size",
    [
        (ColumnType(name="BOOLEAN"), "tinyint", "tinyint(1)", None, 0, None),
        (ColumnType(name="TINYINT"), "tinyint", "tinyint(4)", 3, 0, 3),
        (ColumnType(name="SMALLINT"), "smallint", "smallint(6)", 5, 0, 5),
        (ColumnType(name="INT"), "int", "int(11)", 10, 0, 10),
        (ColumnType(name="BIGINT"), "bigint", "bigint(20)", 19, 0, 19),
        (ColumnType(name="LARGEINT"), "bigint unsigned", "bigint(20) unsigned", 39, None, 39),
        (ColumnType(name="FLOAT"), "float", "float", 7, 7, 7),
        (ColumnType(name="DOUBLE"), "double", "double", 15, 15, 15),
        (ColumnType(name="DECIMAL", precision=10, scale=2), "decimal", "decimal(10,2)", 10, 2, 10),
        (ColumnType(name="DATE"), "date", "date", None, None, None),
        (ColumnType(name="DATETIME", precision=3), "datetime", "datetime(3)", None, None, None),
        (ColumnType(name="DATETIME"), "datetime", "datetime", None, None, None),
        (ColumnType(name="CHAR", length=3), "char", "char(3)", None, None, 3),
        (ColumnType(name="VARCHAR", length=20), "varchar", "varchar(20)", None, None, 20),
        (ColumnType(name="STRING"), "varchar", "text", None, None, None),
        (ColumnType(name="JSON"), "json", "json", None, None, None),
    ],
)
def test_type_renderings_follow_doris(ctype, data_type, column_type, precision, scale, size):
    assert IS.data_type(ctype) == data_type
    assert IS.column_type(ctype) == column_type
    assert IS.numeric_precision(ctype) == precision
    assert IS.numeric_scale(ctype) == scale
    assert IS.column_size(ctype) == size


def test_every_table_has_unique_upper_case_doris_columns():
    assert {"tables", "schemata", "columns", "views", "statistics", "key_column_usage", "routines",
            "user_privileges", "engines", "character_sets", "collations", "processlist", "table_constraints",
            "partitions"} <= set(IS.SCHEMA_TABLES)  # fmt: skip
    for name, t in IS.SCHEMA_TABLES.items():
        names = t.column_names
        assert len(set(names)) == len(names), name
    assert IS.SCHEMA_TABLES["tables"].column_names[:5] == [
        "TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "TABLE_TYPE", "ENGINE"]  # fmt: skip
    assert len(IS.SCHEMA_TABLES["tables"].columns) == 21
    assert len(IS.SCHEMA_TABLES["columns"].columns) == 24
    assert IS.SCHEMA_TABLES["processlist"].column_names[:3] == ["CurrentConnected", "Id", "User"]


# --- row builders ----------------------------------------------------------------------------
def test_tables_rows(state):
    rows = {(r[1], r[2]): r for r in IS.rows("tables", ctx_for(state))}
    orders = rows[("shop", "orders")]
    names = IS.SCHEMA_TABLES["tables"].column_names
    o = dict(zip(names, orders))
    assert (o["TABLE_CATALOG"], o["TABLE_TYPE"], o["ENGINE"]) == ("internal", "BASE TABLE", "Doris")
    assert (o["TABLE_ROWS"], o["DATA_LENGTH"], o["AVG_ROW_LENGTH"]) == (10, 1000, 100)
    assert o["CREATE_TIME"] == datetime.fromtimestamp(CREATED)
    assert (o["TABLE_COLLATION"], o["TABLE_COMMENT"]) == ("utf-8", "the orders")
    assert o["MAX_DATA_LENGTH"] is None and o["INDEX_LENGTH"] is None
    events = dict(zip(names, rows[("shop", "events")]))
    assert (events["TABLE_ROWS"], events["AVG_ROW_LENGTH"]) == (0, 0)
    schema_tables = dict(zip(names, rows[("information_schema", "tables")]))
    assert (schema_tables["TABLE_TYPE"], schema_tables["ENGINE"]) == ("SYSTEM VIEW", "SYSTEM VIEW")
    # databases, then tables, in name order
    assert [k for k in rows if k[0] != "information_schema"] == [
        ("other", "logs"), ("shop", "events"), ("shop", "orders")]  # fmt: skip


def test_columns_rows(state):
    names = IS.SCHEMA_TABLES["columns"].column_names
    cols = [
        dict(zip(names, r)) for r in IS.rows("columns", ctx_for(state), IS.Filters(db="shop", table="orders"))
    ]
    by = {c["COLUMN_NAME"]: c for c in cols}
    assert [c["ORDINAL_POSITION"] for c in cols] == list(range(1, 15))
    assert by["id"]["COLUMN_KEY"] == "UNI" and by["name"]["COLUMN_KEY"] == ""
    assert (by["id"]["IS_NULLABLE"], by["name"]["IS_NULLABLE"]) == ("NO", "YES")
    assert (by["name"]["COLUMN_DEFAULT"], by["id"]["COLUMN_DEFAULT"]) == ("x", None)
    assert by["id"]["COLUMN_COMMENT"] == "order id"
    assert (by["name"]["CHARACTER_MAXIMUM_LENGTH"], by["name"]["CHARACTER_OCTET_LENGTH"]) == (20, 80)
    assert (by["amount"]["NUMERIC_PRECISION"], by["amount"]["NUMERIC_SCALE"]) == (10, 2)
    assert by["ts"]["DATETIME_PRECISION"] == 3 and by["ts"]["COLUMN_TYPE"] == "datetime(3)"
    keys = {c[3]: c[16] for c in IS.rows("columns", ctx_for(state), IS.Filters(db="shop", table="events"))}
    assert keys == {"k": "AGG", "v": ""}
    logs = IS.rows("columns", ctx_for(state), IS.Filters(db="other"))
    assert [r[16] for r in logs] == ["DUP"]


def test_schemata_user_privileges_and_small_tables(state):
    schemata = IS.rows("schemata", ctx_for(state))
    assert [r[1] for r in schemata] == ["information_schema", "other", "shop"]
    assert schemata[0][:4] == ("internal", "information_schema", "utf8", "utf8_general_ci")
    privs = IS.rows("user_privileges", ctx_for(state))
    assert ("'root'@'%'", "def", "SELECT", "YES") in privs
    assert {r[2] for r in privs if r[0] == "'root'@'%'"} >= {"SELECT", "INSERT", "ALTER", "CREATE", "DROP"}
    for empty in ("routines", "statistics", "key_column_usage", "table_constraints", "engines", "triggers"):
        assert IS.rows(empty, ctx_for(state)) == []
    assert IS.rows("collations", ctx_for(state)) == [("utf8mb4_0900_bin", "utf8mb4", 309, "Yes", "Yes", 1)]


def test_partitions_rows_and_show_partitions(state):
    names = IS.SCHEMA_TABLES["partitions"].column_names
    parts = [
        dict(zip(names, r))
        for r in IS.rows("partitions", ctx_for(state), IS.Filters(db="shop", table="events"))
    ]
    assert [(p["PARTITION_NAME"], p["PARTITION_METHOD"], p["BUCKET_NUM"]) for p in parts] == [
        ("p1", "RANGE", 3), ("p2", "RANGE", 3)]  # fmt: skip
    table = state.tables[state.databases[state.db_names["shop"]].tables["events"]]
    rows = IS.partition_rows(table)
    assert [r["PartitionName"] for r in rows] == ["p1", "p2"]
    assert rows[0]["PartitionKey"] == "k" and rows[0]["DistributionKey"] == "k"
    assert rows[1]["Range"] == "[types: [INT]; keys: [10]; ..types: [INT]; keys: [20]; )"
    assert list(rows[0]) == IS.PARTITIONS_COLUMNS
    where = sqlglot.parse_one("SELECT 1 WHERE PartitionName = 'p2'", read=Galene).args["where"].this
    assert [r["PartitionName"] for r in IS.partition_rows(table, where)] == ["p2"]


def test_byte_text_and_show_data(state):
    assert IS.byte_text(0) == "0.000 "
    assert IS.byte_text(1536) == "1.500 KB"
    assert IS.byte_text(3 << 30) == "3.000 GB"
    rows = IS.data_rows(ctx_for(state), "shop", None)
    assert [r[0] for r in rows] == ["events", "orders", "Total", "Quota", "Left"]
    assert rows[1][1:3] == ("1000.000 ", "2")
    assert rows[2][1:3] == ("1000.000 ", "8")
    order = sqlglot.parse_one("SELECT 1 ORDER BY Size DESC", read=Galene).args["order"]
    assert [r[0] for r in IS.data_rows(ctx_for(state), "shop", None, order)][:2] == ["orders", "events"]
    table = state.tables[state.databases[state.db_names["shop"]].tables["orders"]]
    assert IS.data_rows(ctx_for(state), "shop", table)[0][:5] == ("orders", "orders", "1000.000 ", "2", "10")


def test_stream_loads_and_transactions(state):
    db_id = state.db_names["shop"]
    table_id = state.databases[db_id].tables["orders"]
    for txn in (
        Txn(id=1, db_id=db_id, table_id=table_id, label="load_ok", status="VISIBLE", num_rows=5, load_bytes=50,
            begin_time=CREATED, commit_time=CREATED, finish_time=CREATED),
        Txn(id=2, db_id=db_id, table_id=table_id, label="load_bad", status="ABORTED", reason="too many filtered rows"),
        Txn(id=3, db_id=db_id, table_id=table_id, label="insert_0123", status="VISIBLE"),
        Txn(id=4, db_id=db_id, table_id=table_id, label="running", status="PREPARE"),
        Txn(id=5, db_id=db_id, table_id=table_id, label="ctas", status="VISIBLE", load_type="INSERT"),
    ):  # fmt: skip
        state.txns[txn.id] = txn
        state.databases[db_id].labels[txn.label] = txn.id
    loads = IS.stream_load_rows(ctx_for(state), "shop")
    assert [(r["Label"], r["Status"], r["LoadedRows"]) for r in loads] == [
        ("load_ok", "SUCCESS", "5"), ("load_bad", "FAIL", "0")]  # fmt: skip
    assert list(loads[0]) == IS.STREAM_LOAD_COLUMNS
    assert loads[1]["Message"] == "too many filtered rows"
    where = sqlglot.parse_one("SELECT 1 WHERE id = 1", read=Galene).args["where"]
    txn = IS.find_transaction(ctx_for(state), "shop", where)
    row = dict(zip(IS.TRANSACTION_COLUMNS, IS.transaction_row(ctx_for(state), txn)))
    assert (row["TransactionId"], row["Label"], row["TransactionStatus"]) == ("1", "load_ok", "VISIBLE")
    assert (row["LoadJobSourceType"], row["TimeoutMs"]) == ("BACKEND_STREAMING", "600000")
    by_label = sqlglot.parse_one("SELECT 1 WHERE label = 'ctas'", read=Galene).args["where"]
    assert IS.find_transaction(ctx_for(state), "shop", by_label).id == 5
    with pytest.raises(GaleneError, match="transaction with id 99 does not exist"):
        IS.find_transaction(ctx_for(state), "shop", sqlglot.parse_one("SELECT 1 WHERE id = 99").args["where"])
    with pytest.raises(GaleneError, match="Where clause should looks like"):
        IS.find_transaction(ctx_for(state), "shop", sqlglot.parse_one("SELECT 1 WHERE id > 1").args["where"])


def test_processlist_rows():
    info = "select " + "x, " * 60 + "1"
    procs = [
        IS.ProcessInfo(3, "root", "127.0.0.1:5", CREATED, "shop", "Query", 2, "OK", info),
        IS.ProcessInfo(1, "bob", "127.0.0.1:6", CREATED, None, "Sleep", 9, "ERR", "select 1"),
    ]
    ctx = IS.MetaContext(state=CatalogState(), user="root", connection_id=3, processes=lambda: procs)
    full = IS.processlist_rows(ctx, full=True)
    assert [r[1] for r in full] == [1, 3]
    assert full[1][0] == "Yes" and full[0][0] == "No"
    assert full[1][12] == info and len(IS.processlist_rows(ctx, full=False)[1][12]) == 100
    assert full[0][6] == "" and full[1][6] == "shop"


def test_privilege_hook_filters_rows(state):
    ctx = ctx_for(state)
    ctx._can_see = lambda st_, user, db, table=None: db == "shop" and table != "events"
    assert [r[2] for r in IS.rows("tables", ctx) if r[1] != "information_schema"] == ["orders"]
    assert [r[1] for r in IS.rows("schemata", ctx)] == ["information_schema", "shop"]
    assert {r[2] for r in IS.rows("columns", ctx) if r[1] != "information_schema"} == {"orders"}


# --- queries answered on the FE -------------------------------------------------------------
def test_dbt_doris_queries(state):
    relations = local(
        state,
        'select null as "database", table_name as name, table_schema as "schema", '
        "case when table_type = 'BASE TABLE' then 'table' when table_type = 'VIEW' then 'view' "
        "else table_type end as table_type from information_schema.tables where table_schema = 'shop'",
    )
    assert [n for n, _ in relations.columns] == ["database", "name", "schema", "table_type"]
    assert sorted(relations.rows) == [(None, "events", "shop", "table"), (None, "orders", "shop", "table")]
    columns = local(
        state,
        "select column_name as `column`, data_type as 'dtype', character_maximum_length as char_size, "
        "numeric_precision, numeric_scale from information_schema.columns "
        "where table_schema = 'shop' and table_name = 'orders'",
    )
    assert [n for n, _ in columns.columns] == [
        "column",
        "dtype",
        "char_size",
        "numeric_precision",
        "numeric_scale",
    ]
    assert columns.rows[:3] == [("id", "bigint", None, 19, 0), ("name", "varchar", 20, None, None),
                                ("amount", "decimal", None, 10, 2)]  # fmt: skip
    schemas = local(state, "select distinct schema_name from information_schema.schemata")
    assert sorted(r[0] for r in schemas.rows) == ["information_schema", "other", "shop"]
    catalog = local(
        state,
        """with tables as (select null as "table_database", table_schema, table_name,
             case when table_type = 'BASE TABLE' then 'table' when table_type = 'VIEW' then 'view'
             else table_type end as table_type, null as table_owner from information_schema.tables),
           columns as (select null as "table_database", table_schema as "table_schema",
             table_name as "table_name", null as "table_comment", column_name as "column_name",
             ordinal_position as "column_index", data_type as "column_type", null as "column_comment"
             from information_schema.columns)
           select columns.table_database, columns.table_schema, columns.table_name, tables.table_type,
             columns.table_comment, tables.table_owner, columns.column_name, columns.column_index,
             columns.column_type, columns.column_comment
           from tables join columns using (table_schema, table_name)
           where tables.table_schema not in ('information_schema') and (upper(tables.table_schema) = upper('shop'))
           order by column_index""",
    )
    assert [n for n, _ in catalog.columns][:3] == ["table_database", "table_schema", "table_name"]
    assert len(catalog.rows) == 14 + 2
    assert [r[7] for r in catalog.rows] == sorted(r[7] for r in catalog.rows)


def test_labels_types_and_functions(state):
    out = local(
        state,
        "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'shop' AND table_name = 'orders'",
    )
    assert out.columns == [("COUNT(*)", IS.BIGINT)] and out.rows == [(1,)]
    out = local(state, "select table_name, TABLE_ROWS, create_time from INFORMATION_SCHEMA.Tables where table_schema = database()",
                database="shop")  # fmt: skip
    # Labelled as written (Doris, MySQL 5.7): DorisClient reads rows by `table_name`.
    assert [n for n, _ in out.columns] == ["table_name", "TABLE_ROWS", "create_time"]
    assert [t.name for _, t in out.columns] == ["VARCHAR", "BIGINT", "DATETIME"]
    assert sorted(out.rows)[1][:2] == ("orders", 10)
    star = local(state, "select * from tables where table_schema = 'other'", database="information_schema")
    assert [n for n, _ in star.columns] == IS.SCHEMA_TABLES["tables"].column_names
    assert star.rows[0][2] == "logs"
    joined = local(
        state,
        "select t.table_name, count(c.column_name) n from information_schema.tables t "
        "join information_schema.columns c on t.table_schema = c.table_schema and t.table_name = c.table_name "
        "where t.table_schema = 'shop' group by t.table_name order by n desc",
    )
    assert joined.rows == [("orders", 14), ("events", 2)]
    assert local(state, "select user(), connection_id()", connection_id=7) is None  # no table: not ours
    none = local(state, "select table_name from information_schema.tables where 1 = 0")
    assert none.rows == [] and none.columns[0][0] == "table_name"
    spelled = local(state, "select Table_Schema, t.table_name from information_schema.TABLES t limit 1")
    assert [n for n, _ in spelled.columns] == ["Table_Schema", "table_name"]


def test_queries_left_to_the_engine(state):
    # another table, a table function, or SQL the Python executor does not know
    assert local(state, "select * from information_schema.tables t join shop.orders o on 1 = 1") is None
    assert local(state, "select * from shop.orders") is None
    assert (
        local(state, "select table_name from information_schema.tables where table_name regexp '^o'") is None
    )
    assert local(state, "select * from information_schema.nope") is None
    names, other = IS.query_tables(
        sqlglot.parse_one("with tables as (select 1) select * from tables", read=Galene), None
    )
    assert names == set() and other is False
    names, other = IS.query_tables(
        sqlglot.parse_one("select * from columns c, shop.t", read=Galene), "information_schema"
    )
    assert names == {"columns"} and other is True


def test_pushdown_does_not_change_answers(state):
    sql = "select table_name from information_schema.columns where table_schema = 'shop' and table_name = 'events'"
    assert local(state, sql).rows == [("events",), ("events",)]
    assert local(state, sql.replace("table_schema = 'shop'", "'shop' = table_schema")).rows == [
        ("events",),
        ("events",),
    ]
    assert (
        local(state, "select table_name from information_schema.columns where table_schema = 'nope'").rows
        == []
    )


def test_arrow_table_for_the_engine_path(state):
    table = IS.arrow_table("tables", ctx_for(state))
    assert table.column_names == IS.SCHEMA_TABLES["tables"].column_names
    assert str(table.schema.field("TABLE_ROWS").type) == "int64"
    assert str(table.schema.field("CREATE_TIME").type) == "timestamp[us]"
    assert table.num_rows == 3 + len(IS.SCHEMA_TABLES)


def test_show_table_status(state):
    rows = IS.table_status(ctx_for(state), "shop", None, None)
    assert [r[0] for r in rows] == ["events", "orders"]
    orders = dict(zip([n for n, _ in IS.TABLE_STATUS_COLUMNS], rows[1]))
    assert (orders["Engine"], orders["Rows"], orders["Collation"], orders["Comment"]) == (
        "Doris",
        10,
        "utf-8",
        "the orders",
    )
    assert [r[0] for r in IS.table_status(ctx_for(state), "shop", "ord%", None)] == ["orders"]
    where = sqlglot.parse_one("SELECT 1 WHERE Rows > 5", read=Galene).args["where"].this
    assert [r[0] for r in IS.table_status(ctx_for(state), "shop", None, where)] == ["orders"]
    where = sqlglot.parse_one("SELECT 1 WHERE TABLE_NAME = 'events'", read=Galene).args["where"].this
    assert [r[0] for r in IS.table_status(ctx_for(state), "shop", None, where)] == ["events"]


# --- statements --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "sql, cls, fields",
    [
        ("SHOW TABLE STATUS FROM d LIKE 'x%'", ShowTableStatus, {"db": "d", "like": "x%"}),
        ("SHOW INDEX FROM d.t", ShowIndex, {"db": "d", "table": "t"}),
        ("SHOW INDEXES FROM t IN d", ShowIndex, {"db": "d", "table": "t"}),
        ("SHOW KEYS FROM t", ShowIndex, {"db": None, "table": "t"}),
        ("SHOW PARTITIONS FROM d.t LIMIT 2", ShowPartitions, {"db": "d", "table": "t", "limit": 2}),
        ("SHOW DATA", ShowData, {"db": None, "table": None}),
        ("SHOW DATA FROM d.t", ShowData, {"db": "d", "table": "t"}),
        ("SHOW STREAM LOAD FROM d LIMIT 3", ShowStreamLoad, {"db": "d", "limit": 3}),
        ("SHOW TRANSACTION FROM d WHERE id = 3", ShowTransaction, {"db": "d"}),
        ("SHOW PROCESSLIST", ShowProcesslist, {"full": False}),
        ("SHOW FULL PROCESSLIST", ShowProcesslist, {"full": True}),
        ("EXPLAIN SELECT 1", Explain, {"level": ""}),
        ("EXPLAIN VERBOSE SELECT * FROM t", Explain, {"level": "VERBOSE"}),
        ("explain shape plan with a as (select 1) select * from a", Explain, {"level": "SHAPE PLAN"}),
        ("DESC verbose", Describe, {"table": "verbose"}),
    ],
)
def test_metadata_statements_parse(sql, cls, fields):
    s = parse_statement(sql)
    assert isinstance(s, cls), s
    for k, v in fields.items():
        assert getattr(s, k) == v


# --- session: SET of unknown variables, SHOW WARNINGS / ERRORS ----------------------------------
def _session() -> SessionSql:
    return SessionSql(SessionVariables(GlobalVariables(version="5.7.99", version_comment="Doris")))


INFO = SessionInfo(user="root", host="127.0.0.1", database=None, connection_id=1)


def test_set_unknown_variable_is_dorises_error_and_doris_variables_are_kept():
    s = _session()
    with pytest.raises(GaleneError) as e:
        s.handle("SET foo_bar = 1", INFO)
    assert e.value.code == 1193 and e.value.message == "Unknown system variable 'foo_bar'"
    s.handle("SET enable_nereids_planner = true", INFO)
    s.handle("SET query_timeout = 60", INFO)
    shown = dict(s.handle("SHOW VARIABLES", INFO).rows)
    assert shown["enable_nereids_planner"] == "true" and shown["query_timeout"] == "60"


def test_set_sql_mode_as_connector_j_sends_it():
    """MariaDB Connector/J's connect statement: a CONCAT over @@sql_mode; Doris keeps the modes
    as a canonical list (SqlModeHelper) and refuses an unknown one with 1231."""
    s = _session()
    s.handle("set autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES')", INFO)
    assert s.handle("SELECT @@sql_mode, @@autocommit", INFO).rows == [("ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES", 1)]
    s.handle("SET sql_mode = ''", INFO)
    s.handle("SET SESSION sql_mode = CONCAT(@@sql_mode, ',STRICT_TRANS_TABLES')", INFO)
    assert s.handle("SELECT @@sql_mode", INFO).rows == [("STRICT_TRANS_TABLES",)]
    s.handle("SET sql_mode = concat_ws(',', 'pipes_as_concat', @@session.sql_mode, 'ansi_quotes')", INFO)
    assert s.variables.get("sql_mode") == "ANSI_QUOTES,PIPES_AS_CONCAT,STRICT_TRANS_TABLES"
    s.handle("SET @suffix = ',NO_ENGINE_SUBSTITUTION'", INFO)
    s.handle("SET sql_mode = CONCAT('TRADITIONAL', @suffix)", INFO)
    assert s.variables.get("sql_mode") == (
        "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION,NO_ZERO_DATE,NO_ZERO_IN_DATE,STRICT_ALL_TABLES,"
        "STRICT_TRANS_TABLES,TRADITIONAL"
    )
    with pytest.raises(GaleneError) as e:
        s.handle("SET sql_mode = concat(@@sql_mode, ',NO_SUCH_MODE')", INFO)
    assert e.value.code == 1231 and e.value.message == "Variable 'sql_mode' can't be set to the value of 'NO_SUCH_MODE'"
    s.handle("SET @nothing = NULL", INFO)
    s.handle("SET @joined = concat('a', @nothing)", INFO)  # NULL in, NULL out, as MySQL
    assert s.handle("SELECT @joined", INFO).rows == [(None,)]


def test_show_warnings_and_errors_list_the_last_error():
    s = _session()
    assert s.handle("SHOW WARNINGS", INFO).rows == []
    s.diagnostics = [("Error", 1105, "errCode = 2, detailMessage = boom")]
    assert s.handle("SHOW WARNINGS", INFO).rows == [("Error", 1105, "errCode = 2, detailMessage = boom")]
    assert s.handle("SHOW ERRORS", INFO).rows == [("Error", 1105, "errCode = 2, detailMessage = boom")]
    assert [c for c, _ in s.handle("SHOW ERRORS", INFO).columns] == ["Level", "Code", "Message"]


def test_auth_module_hook(state, monkeypatch):
    """With galene.fe.auth present, rows pass its can_see with the session's account, and
    PROCESSLIST / USER_PRIVILEGES show others' rows to admins only."""
    import sys
    import types

    calls = []
    fake = types.ModuleType("galene.fe.auth")
    fake.identity_of = lambda user, host="%": f"'{user}'@'{host}'"

    def can_see(st_, who, db, table=None):
        calls.append((who, db, table))
        return db != "other"

    fake.can_see = can_see
    fake.is_admin = lambda st_, who: who == "'root'@'%'"
    monkeypatch.setitem(sys.modules, "galene.fe.auth", fake)
    import galene.fe

    monkeypatch.setattr(galene.fe, "auth", fake, raising=False)
    bob = ctx_for(state, user="bob", user_host="10.0.0.%")
    assert [r[1] for r in IS.rows("schemata", bob)] == ["information_schema", "shop"]
    assert {r[2] for r in IS.rows("tables", bob) if r[1] != "information_schema"} == {"orders", "events"}
    assert ("'bob'@'10.0.0.%'", "shop", "orders") in calls
    procs = [
        IS.ProcessInfo(1, "root", "h:1", CREATED, None, "Sleep", 0, "OK", ""),
        IS.ProcessInfo(2, "bob", "h:2", CREATED, None, "Sleep", 0, "OK", ""),
    ]
    bob.processes = lambda: procs
    assert [r[1] for r in IS.processlist_rows(bob)] == [2]
    root = ctx_for(state, user="root", processes=lambda: procs)
    assert [r[1] for r in IS.processlist_rows(root)] == [1, 2]


def test_views_and_materialized_views(state):
    from galene.catalog.model import Column, MaterializedView, View

    shop = state.databases[state.db_names["shop"]]
    shop.views["v_orders"] = View(
        id=900, db_id=shop.id, name="v_orders", sql="select id from `internal`.`shop`.`orders`",
        columns=[Column(name="id", type=ColumnType(name="BIGINT"), comment="the id")], comment="a view",
        definer="root", create_time=CREATED,
    )  # fmt: skip
    events = state.tables[shop.tables["events"]]
    events.mtmv = MaterializedView(query_sql="select 1")
    names = IS.SCHEMA_TABLES["tables"].column_names
    tables = {r[2]: dict(zip(names, r)) for r in IS.rows("tables", ctx_for(state), IS.Filters(db="shop"))}
    assert list(tables) == ["events", "orders", "v_orders"]
    assert (tables["v_orders"]["TABLE_TYPE"], tables["v_orders"]["ENGINE"]) == ("VIEW", "View")
    assert (tables["v_orders"]["TABLE_ROWS"], tables["v_orders"]["TABLE_COMMENT"]) == (0, "a view")
    assert (tables["events"]["TABLE_TYPE"], tables["events"]["ENGINE"]) == ("VIEW", "MATERIALIZED_VIEW")
    views = IS.rows("views", ctx_for(state))
    assert views == [
        ("internal", "shop", "v_orders", "select id from `internal`.`shop`.`orders`", "NONE", "NO", "root@%",
         "DEFINER", "utf8", "utf8_general_ci")
    ]  # fmt: skip
    cols = IS.rows("columns", ctx_for(state), IS.Filters(db="shop", table="v_orders"))
    assert [(c[3], c[4], c[7], c[16], c[19]) for c in cols] == [("id", 1, "bigint", "", "the id")]
    assert [r[0] for r in IS.data_rows(ctx_for(state), "shop", None)][:3] == ["events", "orders", "Total"]
