"""SHOW CREATE TABLE / DESC / SHOW COLUMNS rendering, and the SHOW CREATE round trip."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from galene.sql.ddl.create_table import table_from_create
from galene.sql.ddl.render import show_create_table
from galene.sql.show import desc_rows, describe, show_columns
from galene.sql.statements.parse import parse_statement


def build(sql: str):
    ids = itertools.count(1)
    return table_from_create(parse_statement(sql), db_id=1, alloc_id=lambda: next(ids), now=0.0)


def definition(t):
    """Everything of a table that its DDL defines (ids and times are allocated per create)."""
    return {
        "name": t.name,
        "columns": t.columns,
        "keys": (t.keys_type, t.key_columns),
        "partitioning": (t.partition_type, t.partition_columns),
        "partitions": [
            (p.name, p.range_lower, p.range_upper, p.list_values, len(p.tablet_ids)) for p in t.partitions
        ],
        "distribution": (t.distribution_type, t.distribution_columns, t.buckets, t.buckets_auto),
        "properties": t.properties,
        "comment": t.comment,
    }


def assert_round_trip(sql: str) -> str:
    table = build(sql)
    text = show_create_table(table, "db")
    again = build(text)
    assert definition(again) == definition(table), text
    assert show_create_table(again, "db") == text
    return text


def test_unique_table_layout_matches_doris():
    text = assert_round_trip(
        "CREATE TABLE t (k INT NOT NULL, v VARCHAR(20), dt DATE NOT NULL) UNIQUE KEY(k, v, dt) "
        "PARTITION BY RANGE(dt) (PARTITION p1 VALUES [('2020-01-01'), ('2021-01-01')), "
        "PARTITION p2 VALUES LESS THAN MAXVALUE) DISTRIBUTED BY HASH(k) BUCKETS 4"
    )
    assert text == (
        "CREATE TABLE `t` (\n"
        '  `k` int NOT NULL COMMENT "",\n'
        '  `v` varchar(20) NULL COMMENT "",\n'
        '  `dt` date NOT NULL COMMENT ""\n'
        ") ENGINE=OLAP\n"
        "UNIQUE KEY(`k`, `v`, `dt`)\n"
        "COMMENT 'OLAP'\n"
        "PARTITION BY RANGE(`dt`)\n"
        '(PARTITION p1 VALUES [("2020-01-01"), ("2021-01-01")),\n'
        'PARTITION p2 VALUES [("2021-01-01"), (MAXVALUE)))\n'
        "DISTRIBUTED BY HASH(`k`) BUCKETS 4\n"
        "PROPERTIES (\n"
        '"replication_allocation" = "tag.location.default: 1"\n'
        ");"
    )
    assert "\nUNIQUE KEY(" in text  # what dbt-doris looks for
    assert "__DORIS_DELETE_SIGN__" not in text


def test_aggregate_columns_print_their_type_after_the_type():
    text = assert_round_trip(
        "CREATE TABLE t (k INT, v BIGINT SUM, m DECIMAL(12, 3) MAX NOT NULL DEFAULT '0', "
        "r VARCHAR(5) REPLACE_IF_NOT_NULL) AGGREGATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS AUTO"
    )
    assert '  `v` bigint SUM NULL COMMENT "",' in text
    assert '  `m` decimal(12,3) MAX NOT NULL DEFAULT "0" COMMENT "",' in text
    assert "\nAGGREGATE KEY(`k`)\n" in text
    assert "DISTRIBUTED BY HASH(`k`) BUCKETS AUTO" in text


def test_round_trip_duplicate_list_and_random():
    text = assert_round_trip(
        "CREATE TABLE logs (ts DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), city VARCHAR(8) NOT NULL, "
        "msg STRING COMMENT 'say \"hi\" it''s \\\\ ok') DUPLICATE KEY(ts, city) COMMENT 'app logs' "
        "PARTITION BY LIST(city) (PARTITION p_a VALUES IN ('a', 'b'), PARTITION `select` VALUES IN ('c')) "
        "DISTRIBUTED BY RANDOM BUCKETS 3 PROPERTIES ('replication_num' = '1', 'group_commit_interval_ms' = '2000')"
    )
    assert "DEFAULT CURRENT_TIMESTAMP(3)" in text
    assert "PARTITION `select` VALUES IN" in text
    assert "COMMENT 'app logs'" in text
    assert_round_trip(
        "CREATE TABLE t (a INT, b INT, v INT) PARTITION BY LIST(a, b) "
        "(PARTITION p1 VALUES IN ((1, 2), (3, 4)), PARTITION p2 VALUES IN ((5, 6))) DISTRIBUTED BY HASH(a) BUCKETS 2"
    )


def test_round_trip_multi_column_and_gapped_ranges():
    assert_round_trip(
        "CREATE TABLE t (a INT, b BIGINT, v INT) DUPLICATE KEY(a, b) PARTITION BY RANGE(a, b) "
        "(PARTITION p1 VALUES LESS THAN (10, 5), PARTITION p2 VALUES LESS THAN (10, MAXVALUE), "
        "PARTITION p3 VALUES [(50, 0), (60, 0)), PARTITION p4 VALUES LESS THAN (MAXVALUE)) "
        "DISTRIBUTED BY HASH(a) BUCKETS 1"
    )
    assert_round_trip(
        "CREATE TABLE t (d DATETIME NOT NULL, v INT) DUPLICATE KEY(d) PARTITION BY RANGE(d) ("
        "PARTITION p3 VALUES [('2022-01-01'), ('2023-01-01 12:00:00')), "
        "PARTITION p1 VALUES [('2020-01-01'), ('2021-01-01'))) DISTRIBUTED BY HASH(d) BUCKETS 2"
    )


def test_desc_rows():
    t = build(
        "CREATE TABLE t (k INT NOT NULL, v VARCHAR(20) DEFAULT 'x', d DECIMAL(10, 2) SUM, "
        "ts DATETIME(3) MAX) AGGREGATE KEY(k, v) DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    assert desc_rows(t) == [
        ["k", "INT", "No", "true", None, ""],
        ["v", "VARCHAR(20)", "Yes", "true", "x", ""],
        ["d", "DECIMAL(10, 2)", "Yes", "false", None, "SUM"],
        ["ts", "DATETIME(3)", "Yes", "false", None, "MAX"],
    ]
    names, rows = describe(t, all=True)
    assert names[:4] == ["IndexName", "IndexKeysType", "Field", "Type"]
    assert rows[0][:5] == ["t", "AGG_KEYS", "k", "INT", "INT"]
    assert rows[2][:5] == ["", "", "d", "DECIMAL(10, 2)", "DECIMALV3(10, 2)"]


def test_hidden_columns_are_not_described():
    t = build("CREATE TABLE t (k INT, v STRING) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    assert [r[0] for r in desc_rows(t)] == ["k", "v"]
    assert [r[0] for r in show_columns(t)[1]] == ["k", "v"]
    assert desc_rows(t)[1][1] == "TEXT"


def test_show_columns_mysql_order():
    t = build(
        "CREATE TABLE t (k INT NOT NULL COMMENT 'id', v BIGINT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k)"
    )
    names, rows = show_columns(t, full=True)
    assert names == ["Field", "Type", "Collation", "Null", "Key", "Default", "Extra", "Privileges", "Comment"]
    assert rows[0] == ["k", "int", "", "NO", "YES", None, "", "", "id"]
    names, rows = show_columns(t, full=False)
    assert names == ["Field", "Type", "Null", "Key", "Default", "Extra"]
    assert rows[1] == ["v", "bigint", "YES", "NO", None, ""]


# --- property: any definition Galene accepts prints back to itself -----------------------
_TYPES = [
    "INT",
    "BIGINT",
    "TINYINT",
    "LARGEINT",
    "DATE",
    "DATETIME",
    "DATETIME(6)",
    "VARCHAR(30)",
    "CHAR(4)",
    "DECIMAL(18, 4)",
    "BOOLEAN",
]
_VALUE_TYPES = _TYPES + ["STRING", "DOUBLE", "FLOAT", "JSON"]
_text = st.text(alphabet=st.sampled_from("ab'\"\\ ;%é\n"), max_size=6)


@st.composite
def create_sql(draw) -> str:
    n_keys = draw(st.integers(1, 3))
    n_values = draw(st.integers(1, 3))
    model = draw(st.sampled_from(["DUPLICATE", "UNIQUE", "AGGREGATE"]))
    cols = []
    for i in range(n_keys):
        type_ = "INT" if i == 0 else draw(st.sampled_from(_TYPES))
        null = draw(st.sampled_from(["", " NULL", " NOT NULL"]))
        cols.append(f"`k{i}` {type_}{null} COMMENT '{_escape(draw(_text))}'")
    for i in range(n_values):
        type_ = draw(st.sampled_from(_VALUE_TYPES))
        agg = ""
        if model == "AGGREGATE":
            numeric = type_ in ("INT", "BIGINT", "TINYINT", "LARGEINT", "DECIMAL(18, 4)", "DOUBLE", "FLOAT")
            agg = " " + draw(
                st.sampled_from(["SUM", "MIN", "MAX", "REPLACE"] if numeric else ["REPLACE", "MAX"])
            )
        default = draw(st.sampled_from(["", " DEFAULT NULL", " DEFAULT '1'"]))
        if type_ in ("JSON", "STRING"):
            default = ""
        cols.append(f"`v{i}` {type_}{agg}{default}")
    keys = ", ".join(f"k{i}" for i in range(n_keys))
    sql = f"CREATE TABLE `t` ({', '.join(cols)}) {model} KEY({keys})"
    partitioning = draw(st.sampled_from(["none", "range", "list"]))
    if partitioning == "range":
        bounds = sorted(draw(st.sets(st.integers(-1000, 1000), min_size=1, max_size=4)))
        parts = [f"PARTITION p{j} VALUES LESS THAN ({b})" for j, b in enumerate(bounds)]
        if draw(st.booleans()):
            parts.append("PARTITION pmax VALUES LESS THAN MAXVALUE")
        sql += f" PARTITION BY RANGE(k0) ({', '.join(parts)})"
    elif partitioning == "list":
        values = sorted(draw(st.sets(st.integers(-50, 50), min_size=1, max_size=6)))
        groups = [values[j : j + 2] for j in range(0, len(values), 2)]
        parts = [f"PARTITION p{j} VALUES IN ({', '.join(map(str, g))})" for j, g in enumerate(groups)]
        sql += f" PARTITION BY LIST(k0) ({', '.join(parts)})"
    if model == "DUPLICATE" and draw(st.booleans()):
        sql += f" DISTRIBUTED BY RANDOM BUCKETS {draw(st.sampled_from(['AUTO', '1', '7']))}"
    else:
        sql += f" DISTRIBUTED BY HASH(k0) BUCKETS {draw(st.sampled_from(['AUTO', '1', '7']))}"
    if draw(st.booleans()):
        sql += f" PROPERTIES ('replication_num' = '1', \"x.y\" = '{_escape(draw(_text))}')"
    return sql


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")


@settings(max_examples=150, deadline=None)
@given(create_sql())
def test_show_create_round_trips_any_definition(sql):
    assert_round_trip(sql)
