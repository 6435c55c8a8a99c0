"""information_schema rows and the metadata SHOW statements, computed from a catalog state
(galene/sql/information_schema/), and the statements around them."""

from __future__ import annotations

import itertools
from datetime import datetime

import pytest
import sqlglot

from galene.catalog.model import CatalogState, Database, Grants, Rowset, Txn, UserAccount, account_key
from galene.common.errors import GaleneError
from galene.common.types import ColumnType
from galene.fe import auth
from galene.sql.ddl.create_table import table_from_create
from galene.sql.dialect import Galene
from galene.sql.information_schema import context as isc
from galene.sql.information_schema import query as isq
from galene.sql.information_schema import show_rows
from galene.sql.information_schema import tables as ist
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


def ctx_for(state: CatalogState, user: str = "root", user_host: str = "%", **kw) -> isc.MetaContext:
    """The context the FE builds for a session of 'user'@'user_host': its privileges from fe/auth."""
    privileges = auth.SessionPrivileges(state, auth.Identity(user, user_host))
    return isc.MetaContext(state=state, privileges=privileges, user=user, **kw)


def local(state: CatalogState, sql: str, **kw) -> isq.LocalOutput | None:
    return isq.run_local(sqlglot.parse_one(sql, read=Galene), ctx_for(state, **kw))


def as_dicts(out: isq.LocalOutput) -> list[dict]:
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
    assert ist.data_type(ctype) == data_type
    assert ist.column_type(ctype) == column_type
    assert ist.numeric_precision(ctype) == precision
    assert ist.numeric_scale(ctype) == scale
    assert ist.column_size(ctype) == size


def test_every_table_has_unique_upper_case_doris_columns():
    assert {"tables", "schemata", "columns", "views", "statistics", "key_column_usage", "routines",
            "user_privileges", "engines", "character_sets", "collations", "processlist", "table_constraints",
            "partitions"} <= set(ist.SCHEMA_TABLES)  # fmt: skip
    for name, t in ist.SCHEMA_TABLES.items():
        names = t.column_names
        assert len(set(names)) == len(names), name
    assert ist.SCHEMA_TABLES["tables"].column_names[:5] == [
        "TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "TABLE_TYPE", "ENGINE"]  # fmt: skip
    assert len(ist.SCHEMA_TABLES["tables"].columns) == 21
    assert len(ist.SCHEMA_TABLES["columns"].columns) == 24
    assert ist.SCHEMA_TABLES["processlist"].column_names[:3] == ["CurrentConnected", "Id", "User"]


# --- row builders ----------------------------------------------------------------------------
def test_tables_rows(state):
    rows = {(r[1], r[2]): r for r in ist.rows("tables", ctx_for(state))}
    orders = rows[("shop", "orders")]
    names = ist.SCHEMA_TABLES["tables"].column_names
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
    names = ist.SCHEMA_TABLES["columns"].column_names
    cols = [
        dict(zip(names, r)) for r in ist.rows("columns", ctx_for(state), isc.Filters(db="shop", table="orders"))
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
    keys = {c[3]: c[16] for c in ist.rows("columns", ctx_for(state), isc.Filters(db="shop", table="events"))}
    assert keys == {"k": "AGG", "v": ""}
    logs = ist.rows("columns", ctx_for(state), isc.Filters(db="other"))
    assert [r[16] for r in logs] == ["DUP"]


def test_schemata_user_privileges_and_small_tables(state):
    schemata = ist.rows("schemata", ctx_for(state))
    assert [r[1] for r in schemata] == ["information_schema", "other", "shop"]
    assert schemata[0][:4] == ("internal", "information_schema", "utf8", "utf8_general_ci")
    privs = ist.rows("user_privileges", ctx_for(state))
    assert ("'root'@'%'", "def", "SELECT", "YES") in privs
    assert {r[2] for r in privs if r[0] == "'root'@'%'"} >= {"SELECT", "INSERT", "ALTER", "CREATE", "DROP"}
    for empty in ("routines", "statistics", "key_column_usage", "table_constraints", "engines", "triggers"):
        assert ist.rows(empty, ctx_for(state)) == []
    assert ist.rows("collations", ctx_for(state)) == [("utf8mb4_0900_bin", "utf8mb4", 309, "Yes", "Yes", 1)]


def test_partitions_rows_and_show_partitions(state):
    names = ist.SCHEMA_TABLES["partitions"].column_names
    parts = [
        dict(zip(names, r))
        for r in ist.rows("partitions", ctx_for(state), isc.Filters(db="shop", table="events"))
    ]
    assert [(p["PARTITION_NAME"], p["PARTITION_METHOD"], p["BUCKET_NUM"]) for p in parts] == [
        ("p1", "RANGE", 3), ("p2", "RANGE", 3)]  # fmt: skip
    table = state.tables[state.databases[state.db_names["shop"]].tables["events"]]
    rows = show_rows.partition_rows(table)
    assert [r["PartitionName"] for r in rows] == ["p1", "p2"]
    assert rows[0]["PartitionKey"] == "k" and rows[0]["DistributionKey"] == "k"
    assert rows[1]["Range"] == "[types: [INT]; keys: [10]; ..types: [INT]; keys: [20]; )"
    assert list(rows[0]) == show_rows.PARTITIONS_COLUMNS
    where = sqlglot.parse_one("SELECT 1 WHERE PartitionName = 'p2'", read=Galene).args["where"].this
    assert [r["PartitionName"] for r in show_rows.partition_rows(table, where)] == ["p2"]


def test_byte_text_and_show_data(state):
    assert show_rows.byte_text(0) == "0.000 "
    assert show_rows.byte_text(1536) == "1.500 KB"
    assert show_rows.byte_text(3 << 30) == "3.000 GB"
    rows = show_rows.data_rows(ctx_for(state), "shop", None)
    assert [r[0] for r in rows] == ["events", "orders", "Total", "Quota", "Left"]
    assert rows[1][1:3] == ("1000.000 ", "2")
    assert rows[2][1:3] == ("1000.000 ", "8")
    order = sqlglot.parse_one("SELECT 1 ORDER BY Size DESC", read=Galene).args["order"]
    assert [r[0] for r in show_rows.data_rows(ctx_for(state), "shop", None, order)][:2] == ["orders", "events"]
    table = state.tables[state.databases[state.db_names["shop"]].tables["orders"]]
    assert show_rows.data_rows(ctx_for(state), "shop", table)[0][:5] == ("orders", "orders", "1000.000 ", "2", "10")


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
    loads = show_rows.stream_load_rows(ctx_for(state), "shop")
    assert [(r["Label"], r["Status"], r["LoadedRows"]) for r in loads] == [
        ("load_ok", "SUCCESS", "5"), ("load_bad", "FAIL", "0")]  # fmt: skip
    assert list(loads[0]) == show_rows.STREAM_LOAD_COLUMNS
    assert loads[1]["Message"] == "too many filtered rows"
    where = sqlglot.parse_one("SELECT 1 WHERE id = 1", read=Galene).args["where"]
    txn = show_rows.find_transaction(ctx_for(state), "shop", where)
    row = dict(zip(show_rows.TRANSACTION_COLUMNS, show_rows.transaction_row(ctx_for(state), txn)))
    assert (row["TransactionId"], row["Label"], row["TransactionStatus"]) == ("1", "load_ok", "VISIBLE")
    assert (row["LoadJobSourceType"], row["TimeoutMs"]) == ("BACKEND_STREAMING", "600000")
    by_label = sqlglot.parse_one("SELECT 1 WHERE label = 'ctas'", read=Galene).args["where"]
    assert show_rows.find_transaction(ctx_for(state), "shop", by_label).id == 5
    with pytest.raises(GaleneError, match="transaction with id 99 does not exist"):
        show_rows.find_transaction(ctx_for(state), "shop", sqlglot.parse_one("SELECT 1 WHERE id = 99").args["where"])
    with pytest.raises(GaleneError, match="Where clause should looks like"):
        show_rows.find_transaction(ctx_for(state), "shop", sqlglot.parse_one("SELECT 1 WHERE id > 1").args["where"])


def test_processlist_rows():
    info = "select " + "x, " * 60 + "1"
    procs = [
        isc.ProcessInfo(3, "root", "127.0.0.1:5", CREATED, "shop", "Query", 2, "OK", info),
        isc.ProcessInfo(1, "bob", "127.0.0.1:6", CREATED, None, "Sleep", 9, "ERR", "select 1"),
    ]
    ctx = ctx_for(CatalogState(), user="root", connection_id=3, processes=lambda: procs)
    full = ist.processlist_rows(ctx, full=True)
    assert [r[1] for r in full] == [1, 3]
    assert full[1][0] == "Yes" and full[0][0] == "No"
    assert full[1][12] == info and len(ist.processlist_rows(ctx, full=False)[1][12]) == 100
    assert full[0][6] == "" and full[1][6] == "shop"


class _ShopButEvents:
    """A privilege hook that shows database shop and its tables but events."""

    def can_see(self, db: str, table: str | None = None) -> bool:
        return db == "shop" and table != "events"

    def is_admin(self) -> bool:
        return False


def test_privilege_hook_filters_rows(state):
    ctx = isc.MetaContext(state=state, privileges=_ShopButEvents(), user="root")
    assert [r[2] for r in ist.rows("tables", ctx) if r[1] != "information_schema"] == ["orders"]
    assert [r[1] for r in ist.rows("schemata", ctx)] == ["information_schema", "shop"]
    assert {r[2] for r in ist.rows("columns", ctx) if r[1] != "information_schema"} == {"orders"}


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
    assert out.columns == [("COUNT(*)", isc.BIGINT)] and out.rows == [(1,)]
    out = local(state, "select table_name, TABLE_ROWS, create_time from INFORMATION_SCHEMA.Tables where table_schema = database()",
                database="shop")  # fmt: skip
    # Labelled as written (Doris, MySQL 5.7): DorisClient reads rows by `table_name`.
    assert [n for n, _ in out.columns] == ["table_name", "TABLE_ROWS", "create_time"]
    assert [t.name for _, t in out.columns] == ["VARCHAR", "BIGINT", "DATETIME"]
    assert sorted(out.rows)[1][:2] == ("orders", 10)
    star = local(state, "select * from tables where table_schema = 'other'", database="information_schema")
    assert [n for n, _ in star.columns] == ist.SCHEMA_TABLES["tables"].column_names
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
    names, other = isq.query_tables(
        sqlglot.parse_one("with tables as (select 1) select * from tables", read=Galene), None
    )
    assert names == set() and other is False
    names, other = isq.query_tables(
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
    table = ist.arrow_table("tables", ctx_for(state))
    assert table.column_names == ist.SCHEMA_TABLES["tables"].column_names
    assert str(table.schema.field("TABLE_ROWS").type) == "int64"
    assert str(table.schema.field("CREATE_TIME").type) == "timestamp[us]"
    assert table.num_rows == 3 + len(ist.SCHEMA_TABLES)


def test_show_table_status(state):
    rows = show_rows.table_status(ctx_for(state), "shop", None, None)
    assert [r[0] for r in rows] == ["events", "orders"]
    orders = dict(zip([n for n, _ in show_rows.TABLE_STATUS_COLUMNS], rows[1]))
    assert (orders["Engine"], orders["Rows"], orders["Collation"], orders["Comment"]) == (
        "Doris",
        10,
        "utf-8",
        "the orders",
    )
    assert [r[0] for r in show_rows.table_status(ctx_for(state), "shop", "ord%", None)] == ["orders"]
    where = sqlglot.parse_one("SELECT 1 WHERE Rows > 5", read=Galene).args["where"].this
    assert [r[0] for r in show_rows.table_status(ctx_for(state), "shop", None, where)] == ["orders"]
    where = sqlglot.parse_one("SELECT 1 WHERE TABLE_NAME = 'events'", read=Galene).args["where"].this
    assert [r[0] for r in show_rows.table_status(ctx_for(state), "shop", None, where)] == ["events"]


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


def test_privileges_come_from_the_session_account(state):
    """Rows pass the privileges the FE builds for the session's account ('bob'@'10.0.0.%':
    SELECT on shop only), and PROCESSLIST / USER_PRIVILEGES show others' rows to admins only."""
    bob_account = UserAccount(name="bob", host="10.0.0.%", grants=Grants(tables={"internal.shop.*": ["SELECT_PRIV"]}))
    state.accounts[account_key("bob", "10.0.0.%")] = bob_account
    bob = ctx_for(state, user="bob", user_host="10.0.0.%")
    assert bob.privileges == auth.SessionPrivileges(state, auth.Identity("bob", "10.0.0.%"))
    assert [r[1] for r in ist.rows("schemata", bob)] == ["information_schema", "shop"]
    assert {r[2] for r in ist.rows("tables", bob) if r[1] != "information_schema"} == {"orders", "events"}
    assert ctx_for(state, user="bob", user_host="%").can_see("shop") is False  # another account
    procs = [
        isc.ProcessInfo(1, "root", "h:1", CREATED, None, "Sleep", 0, "OK", ""),
        isc.ProcessInfo(2, "bob", "h:2", CREATED, None, "Sleep", 0, "OK", ""),
    ]
    bob.processes = lambda: procs
    assert [r[1] for r in ist.processlist_rows(bob)] == [2]
    root = ctx_for(state, user="root", processes=lambda: procs)
    assert [r[1] for r in ist.processlist_rows(root)] == [1, 2]


def test_a_context_without_privileges_is_an_error(state):
    """information_schema never decides on its own what a session may see: a context without
    the session's privileges is refused (it used to show everything when fe/auth was missing)."""
    with pytest.raises(TypeError):
        isc.MetaContext(state=state, user="bob")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        isc.MetaContext(state=state, privileges=None, user="bob")  # type: ignore[arg-type]


class _Broken:
    def can_see(self, db: str, table: str | None = None) -> bool:
        raise RuntimeError("privilege store unreadable")

    def is_admin(self) -> bool:
        raise RuntimeError("privilege store unreadable")


def test_a_failing_privilege_check_hides_rows_and_fails_admin_checks(state):
    ctx = isc.MetaContext(state=state, privileges=_Broken(), user="bob")
    assert [r[1] for r in ist.rows("schemata", ctx)] == ["information_schema"]
    assert [r for r in ist.rows("tables", ctx) if r[1] != "information_schema"] == []
    with pytest.raises(RuntimeError):
        ist.processlist_rows(ctx)


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
    names = ist.SCHEMA_TABLES["tables"].column_names
    tables = {r[2]: dict(zip(names, r)) for r in ist.rows("tables", ctx_for(state), isc.Filters(db="shop"))}
    assert list(tables) == ["events", "orders", "v_orders"]
    assert (tables["v_orders"]["TABLE_TYPE"], tables["v_orders"]["ENGINE"]) == ("VIEW", "View")
    assert (tables["v_orders"]["TABLE_ROWS"], tables["v_orders"]["TABLE_COMMENT"]) == (0, "a view")
    assert (tables["events"]["TABLE_TYPE"], tables["events"]["ENGINE"]) == ("VIEW", "MATERIALIZED_VIEW")
    views = ist.rows("views", ctx_for(state))
    assert views == [
        ("internal", "shop", "v_orders", "select id from `internal`.`shop`.`orders`", "NONE", "NO", "root@%",
         "DEFINER", "utf8", "utf8_general_ci")
    ]  # fmt: skip
    cols = ist.rows("columns", ctx_for(state), isc.Filters(db="shop", table="v_orders"))
    assert [(c[3], c[4], c[7], c[16], c[19]) for c in cols] == [("id", 1, "bigint", "", "the id")]
    assert [r[0] for r in show_rows.data_rows(ctx_for(state), "shop", None)][:3] == ["events", "orders", "Total"]
