"""CREATE TABLE → catalog Table: Doris rules for columns, keys, partitions and distribution."""

from __future__ import annotations

import itertools

import pytest

from galene.catalog.model import DELETE_SIGN, Column
from galene.common.errors import GaleneError
from galene.common.types import ColumnType
from galene.sql.ddl.create_table import table_from_create
from galene.sql.statements.parse import parse_statement


def build(sql: str, **kw):
    ids = itertools.count(1000)
    return table_from_create(parse_statement(sql), db_id=7, alloc_id=lambda: next(ids), now=123.0, **kw)


def error_of(sql: str) -> str:
    with pytest.raises(GaleneError) as info:
        build(sql)
    return info.value.message


def test_full_definition_with_range_partitions():
    t = build(
        """CREATE TABLE IF NOT EXISTS db.t (
             k INT NOT NULL COMMENT 'the key',
             dt DATE,
             v VARCHAR(20) NULL DEFAULT "x",
             amount DECIMALV3(10, 2) DEFAULT "0.5",
             ts DATETIMEV2(3) DEFAULT CURRENT_TIMESTAMP(3)
           ) ENGINE=OLAP
           DUPLICATE KEY(k, dt)
           COMMENT 'my table'
           PARTITION BY RANGE(dt) (
             PARTITION p1 VALUES LESS THAN ("2020-01-01"),
             PARTITION p2 VALUES [("2020-01-01"), ("2021-01-01")),
             PARTITION p3 VALUES LESS THAN MAXVALUE
           )
           DISTRIBUTED BY HASH(k) BUCKETS 3
           PROPERTIES ('replication_num' = '1', "storage_format" = "V2")"""
    )
    assert (t.id, t.db_id, t.name, t.comment, t.create_time) == (1000, 7, "t", "my table", 123.0)
    assert [c.name for c in t.columns] == ["k", "dt", "v", "amount", "ts"]
    k, dt, v, amount, ts = t.columns
    assert (k.type, k.nullable, k.is_key, k.comment) == (ColumnType(name="INT"), False, True, "the key")
    assert dt.is_key and dt.nullable and dt.type.name == "DATE"
    assert (v.type.length, v.default, v.is_key) == (20, "x", False)
    assert (amount.type.precision, amount.type.scale, amount.default) == (10, 2, "0.5")
    assert (ts.type.name, ts.type.precision, ts.default) == ("DATETIME", 3, "CURRENT_TIMESTAMP(3)")
    assert (t.keys_type, t.key_columns) == ("DUP_KEYS", ["k", "dt"])
    assert (t.partition_type, t.partition_columns) == ("RANGE", ["dt"])
    assert [(p.name, p.range_lower, p.range_upper) for p in t.partitions] == [
        ("p1", None, ["2020-01-01"]),
        ("p2", ["2020-01-01"], ["2021-01-01"]),
        ("p3", ["2021-01-01"], None),
    ]
    assert (t.distribution_type, t.distribution_columns, t.buckets, t.buckets_auto) == (
        "HASH",
        ["k"],
        3,
        False,
    )
    # ids: table, then per partition its id and one per bucket
    assert [p.id for p in t.partitions] == [1001, 1005, 1009]
    assert t.partitions[0].tablet_ids == [1002, 1003, 1004]
    assert t.properties == {
        "replication_num": "1",
        "storage_format": "V2",
        "replication_allocation": "tag.location.default: 1",
    }


def test_less_than_lower_bound_is_the_range_below_it():
    t = build(
        "CREATE TABLE t (k BIGINT) PARTITION BY RANGE(k) (PARTITION p1 VALUES LESS THAN (100), "
        "PARTITION p2 VALUES [('200'), ('300')), PARTITION p3 VALUES LESS THAN (400)) "
        "DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    # [100, 200) stays a gap: rows there fit no partition.
    assert [(p.name, p.range_lower, p.range_upper) for p in t.partitions] == [
        ("p1", None, ["100"]),
        ("p2", ["200"], ["300"]),
        ("p3", ["300"], ["400"]),
    ]
    # Listed out of order, LESS THAN partitions overlap (as in Doris).
    assert "intersected" in error_of(
        "CREATE TABLE t (k BIGINT) PARTITION BY RANGE(k) (PARTITION p3 VALUES LESS THAN (300), "
        "PARTITION p1 VALUES LESS THAN (100)) DISTRIBUTED BY HASH(k) BUCKETS 1"
    )


def test_multi_column_range_bounds():
    t = build(
        "CREATE TABLE t (a INT, b INT) PARTITION BY RANGE(a, b) (PARTITION p1 VALUES LESS THAN (10, 5), "
        "PARTITION p2 VALUES LESS THAN (10, MAXVALUE), PARTITION p3 VALUES LESS THAN (20)) "
        "DISTRIBUTED BY HASH(a) BUCKETS 1"
    )
    assert [(p.range_lower, p.range_upper) for p in t.partitions] == [
        (None, ["10", "5"]),
        (["10", "5"], ["10", "MAXVALUE"]),
        (["10", "MAXVALUE"], ["20"]),
    ]


def test_overlapping_ranges_are_rejected():
    msg = error_of(
        "CREATE TABLE t (k INT) PARTITION BY RANGE(k) (PARTITION a VALUES [(0), (10)), "
        "PARTITION b VALUES [(5), (20))) DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    assert "intersected" in msg and "partition b" in msg
    msg = error_of(
        "CREATE TABLE t (k INT) PARTITION BY RANGE(k) (PARTITION a VALUES LESS THAN (10), "
        "PARTITION b VALUES LESS THAN (10)) DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    assert "intersected" in msg
    msg = error_of(
        "CREATE TABLE t (k INT) PARTITION BY RANGE(k) (PARTITION a VALUES [(10), (5))) DISTRIBUTED BY HASH(k)"
    )
    assert "lower values must smaller than upper values" in msg


def test_partition_values_are_normalized_and_validated():
    t = build(
        "CREATE TABLE t (d DATETIME, k INT) PARTITION BY RANGE(d) (PARTITION p VALUES LESS THAN ('2020-01-01')) "
        "DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    assert t.partitions[0].range_upper == ["2020-01-01 00:00:00"]
    msg = error_of(
        "CREATE TABLE t (d DATE) PARTITION BY RANGE(d) (PARTITION p VALUES LESS THAN ('soon')) "
        "DISTRIBUTED BY HASH(d) BUCKETS 1"
    )
    assert "soon" in msg


def test_list_partitions():
    t = build(
        "CREATE TABLE t (k INT, city VARCHAR(10), v INT) UNIQUE KEY(k, city) PARTITION BY LIST(city) "
        '(PARTITION p_east VALUES IN ("sh", "hz"), PARTITION p_north VALUES IN ("bj")) '
        "DISTRIBUTED BY HASH(k) BUCKETS 2"
    )
    assert t.partition_type == "LIST" and t.partition_columns == ["city"]
    assert [(p.name, p.list_values) for p in t.partitions] == [
        ("p_east", [["sh"], ["hz"]]),
        ("p_north", [["bj"]]),
    ]
    t = build(
        "CREATE TABLE t (k INT, c VARCHAR(5)) PARTITION BY LIST(k, c) "
        "(PARTITION p1 VALUES IN ((1, 'a'), (2, 'b'))) DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    assert t.partitions[0].list_values == [["1", "a"], ["2", "b"]]
    msg = error_of(
        "CREATE TABLE t (k INT) PARTITION BY LIST(k) (PARTITION a VALUES IN (1, 2), PARTITION b VALUES IN (2)) "
        "DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    assert "conflict" in msg


def test_unpartitioned_table_has_one_partition_named_after_it():
    t = build(
        "CREATE TABLE orders (id BIGINT, note STRING) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 4"
    )
    assert t.partition_type == "UNPARTITIONED"
    assert [p.name for p in t.partitions] == ["orders"]
    assert len(t.partitions[0].tablet_ids) == 4
    assert t.partitions[0].range_lower is None and t.partitions[0].range_upper is None


def test_unique_table_gets_hidden_delete_sign():
    t = build("CREATE TABLE t (k INT, v STRING) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    sign = t.columns[-1]
    assert sign.name == DELETE_SIGN
    assert (sign.hidden, sign.nullable, sign.default, sign.is_key) == (True, False, "0", False)
    assert [c.name for c in t.visible_columns()] == ["k", "v"]


def test_aggregate_table():
    t = build(
        "CREATE TABLE t (k INT, s VARCHAR(4), pv BIGINT SUM DEFAULT '0', lo INT MIN, hi INT MAX, "
        "last VARCHAR(9) REPLACE, nn INT REPLACE_IF_NOT_NULL) AGGREGATE KEY(k, s) "
        "DISTRIBUTED BY HASH(k) BUCKETS AUTO"
    )
    assert t.keys_type == "AGG_KEYS" and t.key_columns == ["k", "s"]
    assert [c.aggregation for c in t.columns] == [
        None,
        None,
        "SUM",
        "MIN",
        "MAX",
        "REPLACE",
        "REPLACE_IF_NOT_NULL",
    ]
    assert (t.buckets, t.buckets_auto) == (1, True)


def test_aggregate_rules():
    assert "should specify aggregate type" in error_of(
        "CREATE TABLE t (k INT, v INT) AGGREGATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    assert "should not specify aggregate type" in error_of(
        "CREATE TABLE t (k INT, v INT SUM) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    assert "should not specify aggregate type" in error_of(
        "CREATE TABLE t (k INT, v INT SUM) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    assert "Key column[k] should not specify aggregate type" in error_of(
        "CREATE TABLE t (k INT SUM, v INT SUM) AGGREGATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    assert "HLL_UNION" in error_of(
        "CREATE TABLE t (k INT, v INT HLL_UNION) AGGREGATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    assert "SUM" in error_of(
        "CREATE TABLE t (k INT, v VARCHAR(3) SUM) AGGREGATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    # Without a KEY clause, aggregate columns make an AGGREGATE table keyed on the rest.
    t = build("CREATE TABLE t (a INT, b INT, v BIGINT SUM) DISTRIBUTED BY HASH(a) BUCKETS 1")
    assert (t.keys_type, t.key_columns) == ("AGG_KEYS", ["a", "b"])


def test_key_rules():
    assert (
        error_of("CREATE TABLE t (a INT, b INT, c INT) DUPLICATE KEY(b) DISTRIBUTED BY HASH(b) BUCKETS 1")
        == "Key columns should be a ordered prefix of the schema."
    )
    assert "doesn't exist" in error_of(
        "CREATE TABLE t (a INT) UNIQUE KEY(z) DISTRIBUTED BY HASH(a) BUCKETS 1"
    )
    assert "Float or double" in error_of(
        "CREATE TABLE t (a DOUBLE, b INT) DUPLICATE KEY(a) DISTRIBUTED BY HASH(b)"
    )
    assert "String Type" in error_of("CREATE TABLE t (a STRING, b INT) UNIQUE KEY(a) DISTRIBUTED BY HASH(a)")
    assert (
        error_of("CREATE TABLE t (a INT, A INT) DISTRIBUTED BY HASH(a) BUCKETS 1")
        == "Duplicate column name 'A'"
    )


def test_default_duplicate_keys_follow_doris_short_key_rule():
    t = build("CREATE TABLE t (a INT, b BIGINT, c INT, d INT) DISTRIBUTED BY HASH(a) BUCKETS 1")
    assert (t.keys_type, t.key_columns) == ("DUP_KEYS", ["a", "b", "c"])
    t = build("CREATE TABLE t (a INT, s VARCHAR(10), c INT)")
    assert t.key_columns == ["a", "s"]  # a VARCHAR ends the short key
    t = build("CREATE TABLE t (a INT, f DOUBLE, c INT)")
    assert t.key_columns == ["a"]
    assert "first column could not be float" in error_of("CREATE TABLE t (f DOUBLE, a INT)")
    # No DISTRIBUTED clause: Doris' RANDOM BUCKETS AUTO for duplicate tables.
    assert (t.distribution_type, t.distribution_columns, t.buckets_auto) == ("RANDOM", [], True)


def test_distribution_rules():
    assert "is not key column" in error_of(
        "CREATE TABLE t (k INT, v INT) UNIQUE KEY(k) DISTRIBUTED BY HASH(v) BUCKETS 1"
    )
    assert "is not found" in error_of("CREATE TABLE t (k INT) DISTRIBUTED BY HASH(nope) BUCKETS 1")
    assert "Random distribution" in error_of(
        "CREATE TABLE t (k INT, v INT) UNIQUE KEY(k) DISTRIBUTED BY RANDOM"
    )
    assert "larger than zero" in error_of("CREATE TABLE t (k INT) DISTRIBUTED BY HASH(k) BUCKETS 0")
    t = build("CREATE TABLE t (k INT, v INT) DUPLICATE KEY(k) DISTRIBUTED BY RANDOM BUCKETS 5")
    assert (t.distribution_type, t.buckets, t.buckets_auto) == ("RANDOM", 5, False)
    assert all(len(p.tablet_ids) == 5 for p in t.partitions)
    # A duplicate table may hash on a value column.
    t = build("CREATE TABLE t (k INT, v INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(v) BUCKETS 2")
    assert t.distribution_columns == ["v"]


def test_partition_column_rules():
    assert "must be key column" in error_of(
        "CREATE TABLE t (k INT, d DATE) UNIQUE KEY(k) PARTITION BY RANGE(d) (PARTITION p VALUES LESS THAN "
        "('2020-01-01')) DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    assert "does not exist" in error_of(
        "CREATE TABLE t (k INT) PARTITION BY RANGE(x) (PARTITION p VALUES LESS THAN (1)) DISTRIBUTED BY HASH(k)"
    )
    assert "aggregated column" in error_of(
        "CREATE TABLE t (k INT, v INT SUM) AGGREGATE KEY(k) PARTITION BY RANGE(v) "
        "(PARTITION p VALUES LESS THAN (1)) DISTRIBUTED BY HASH(k)"
    )


def test_type_errors():
    assert "Encountered: FOO" in error_of("CREATE TABLE t (k INT, a FOO) DUPLICATE KEY(k)")
    assert "FOO" in error_of("CREATE TABLE t (k INT, a ARRAY<FOO>) DUPLICATE KEY(k)")
    assert "Varchar size" in error_of("CREATE TABLE t (k INT, a VARCHAR(70000)) DUPLICATE KEY(k)")
    assert "Precision of decimal" in error_of("CREATE TABLE t (k INT, a DECIMAL(50, 2)) DUPLICATE KEY(k)")
    t = build("CREATE TABLE t (k INT(11), a VARCHAR, b TEXT, c JSON, d BOOLEAN, e LARGEINT, f CHAR)")
    assert [c.type.to_desc() for c in t.columns] == [
        "INT",
        "VARCHAR(65533)",
        "TEXT",
        "JSON",
        "BOOLEAN",
        "LARGEINT",
        "CHAR(1)",
    ]


def test_engine_and_olap_comment():
    assert "ENGINE" in error_of("CREATE TABLE t (k INT) ENGINE=mysql")
    t = build("CREATE TABLE t (k INT) COMMENT 'OLAP'")
    assert t.comment == ""


def test_ctas_columns_come_from_the_caller():
    given = [
        Column(name="a", type=ColumnType(name="INT")),
        Column(name="b", type=ColumnType(name="VARCHAR", length=65533)),
    ]
    t = build(
        "CREATE TABLE t UNIQUE KEY(a) DISTRIBUTED BY HASH(a) BUCKETS 2 AS SELECT 1 AS a, 'x' AS b",
        columns=given,
    )
    assert [c.name for c in t.visible_columns()] == ["a", "b"]
    assert t.columns[0].is_key and not given[0].is_key  # the caller's columns are left alone
    t = build("CREATE TABLE t (x, y) AS SELECT 1, 'x'", columns=given)
    assert [c.name for c in t.columns] == ["x", "y"]


def test_doris_types_nested_network_and_aggregate_states():
    t = build(
        "CREATE TABLE t (k INT, a ARRAY<INT>, m MAP<STRING,INT>, s STRUCT<a:INT,b:STRING>, v VARIANT,"
        " i4 IPV4, i6 IPV6, n ARRAY<MAP<STRING,ARRAY<STRUCT<x:DECIMAL(10,2)>>>>, j JSONB, d DATETIME(6)) DUPLICATE KEY(k)"
    )
    assert [c.type.to_desc() for c in t.columns[1:]] == [
        "ARRAY<INT>", "MAP<TEXT,INT>", "STRUCT<a:INT,b:TEXT>", "VARIANT", "IPV4", "IPV6",
        "ARRAY<MAP<TEXT,ARRAY<STRUCT<x:DECIMAL(10, 2)>>>>", "JSON", "DATETIME(6)",
    ]  # fmt: skip
    assert t.columns[7].type.to_sql() == "array<map<text,array<struct<x:decimal(10,2)>>>>"
    agg = build(
        "CREATE TABLE t (k INT, b BITMAP BITMAP_UNION, h HLL HLL_UNION, q QUANTILE_STATE QUANTILE_UNION) AGGREGATE KEY(k)"
    )
    assert [(c.type.name, c.aggregation) for c in agg.columns[1:]] == [
        ("BITMAP", "BITMAP_UNION"), ("HLL", "HLL_UNION"), ("QUANTILE_STATE", "QUANTILE_UNION"),
    ]  # fmt: skip
    assert build("CREATE TABLE t (k INT, d DECIMAL(76, 10)) DUPLICATE KEY(k)", decimal256=True).columns[1].type.precision == 76


def test_doris_type_rules():
    key = "Array can only be used in the non-key column of the duplicate table at present."
    assert error_of("CREATE TABLE t (a ARRAY<INT>, k INT) DUPLICATE KEY(a)") == key
    assert "Key column can not set complex type:b" in error_of("CREATE TABLE t (b BITMAP, k INT) DUPLICATE KEY(b)")
    assert "Aggregate type BITMAP_UNION is not compatible with primitive type INT" in error_of(
        "CREATE TABLE t (k INT, b INT BITMAP_UNION) AGGREGATE KEY(k)"
    )
    assert "Array column can't support aggregation MAX" in error_of(
        "CREATE TABLE t (k INT, a ARRAY<INT> MAX) AGGREGATE KEY(k)"
    )
    assert error_of("CREATE TABLE t (k INT, x TIME) DUPLICATE KEY(k)") == "Time type is not supported for olap table"
    assert "MAP unsupported sub-type" in error_of("CREATE TABLE t (k INT, m MAP<ARRAY<INT>,INT>) DUPLICATE KEY(k)")
    deep = "ARRAY<" * 10 + "INT" + ">" * 10
    assert "maximum nesting depth of 9" in error_of(f"CREATE TABLE t (k INT, a {deep}) DUPLICATE KEY(k)")
    assert "Duplicate field name" in error_of("CREATE TABLE t (k INT, s STRUCT<a:INT,A:INT>) DUPLICATE KEY(k)")
