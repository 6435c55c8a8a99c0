"""The MySQL encodings of Doris' nested and special types (galene/fe/mysql/result_encoding.py,
nested_text.py) and the reading of the engine's type names (types.from_spark_type_name).

Expected texts are Doris' (regression-test/data/datatype_p0/complex_types/*.out: `[1, null]`,
`["a", "b"]`, `{"a":1, "b":null}`, `{"f1":1, "f2":"x"}`, `[["x"], [], null]`,
`["2024-01-01", "2024-02-02"]`, `[1, 0]`, strings unescaped; PrimitiveType.toMysqlType and
MysqlSerializer for the column definitions)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from mysql_mimic.types import ColumnType as MysqlType

from galene.common.types import ColumnType, from_spark_type_name
from galene.fe.mysql.result_encoding import arrow_text, binary_payloads, mysql_column_spec, python_text


def T(spark: str) -> ColumnType:
    return from_spark_type_name(spark)


def text(values, arrow_type, ctype):
    return arrow_text(pa.array(values, arrow_type), ctype).to_pylist()


# --- from_spark_type_name ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "spark, desc",
    [
        ("int", "INT"),
        ("decimal(76,2)", "DECIMAL(76, 2)"),
        ("decimal(38,0)", "DECIMAL(38, 0)"),
        ("timestamp", "DATETIME"),
        ("timestamp_ntz", "DATETIME"),
        ("variant", "VARIANT"),
        ("binary", "TEXT"),
        ("void", "TEXT"),
        ("array<int>", "ARRAY<INT>"),
        ("map<string,int>", "MAP<TEXT,INT>"),
        ("struct<a:int,b:string>", "STRUCT<a:INT,b:TEXT>"),
        ("array<map<string,struct<x:array<bigint>,y:decimal(10,2)>>>",
         "ARRAY<MAP<TEXT,STRUCT<x:ARRAY<BIGINT>,y:DECIMAL(10, 2)>>>"),
        ("struct<`a b`:int,`c``d`:date>", "STRUCT<a b:INT,c`d:DATE>"),
        # not type strings: STRING, never an error
        ("array<>", "TEXT"),
        ("struct<a:int", "TEXT"),
        ("map<int>>", "TEXT"),
        ("", "TEXT"),
    ],
)  # fmt: skip
def test_from_spark_type_name_reads_nested_types(spark, desc):
    assert from_spark_type_name(spark).to_desc() == desc


# --- text values ------------------------------------------------------------------------------
def test_arrays_of_numbers_strings_and_nulls():
    assert text([[1, 2, None], None, []], pa.list_(pa.int32()), T("array<int>")) == [
        "[1, 2, null]",
        None,
        "[]",
    ]
    assert text([["a", 'with"q', None]], pa.list_(pa.string()), T("array<string>")) == [
        '["a", "with"q", null]'
    ]
    assert text([[True, False]], pa.list_(pa.bool_()), T("array<boolean>")) == ["[1, 0]"]
    assert text([[Decimal("1.5")]], pa.list_(pa.decimal128(5, 2)), T("array<decimal(5,2)>")) == ["[1.50]"]


def test_dates_and_datetimes_inside_are_quoted_at_their_precision():
    ctype = ColumnType.array(ColumnType(name="DATETIME", precision=3))
    stamps = [[dt.datetime(2024, 1, 1, 10, 0, 0, 123456), None]]
    assert text(stamps, pa.list_(pa.timestamp("us")), ctype) == ['["2024-01-01 10:00:00.123", null]']
    days = [[dt.date(2024, 1, 1), dt.date(2024, 2, 2)]]
    assert text(days, pa.list_(pa.date32()), T("array<date>")) == ['["2024-01-01", "2024-02-02"]']


def test_maps_and_structs():
    maps = [[("a", 1), ("b", None)], None, []]
    assert text(maps, pa.map_(pa.string(), pa.int32()), T("map<string,int>")) == [
        '{"a":1, "b":null}',
        None,
        "{}",
    ]
    assert text([[(1, "x")]], pa.map_(pa.int32(), pa.string()), T("map<int,string>")) == ['{1:"x"}']
    st = pa.struct([("f1", pa.int32()), ("f2", pa.string())])
    values = [{"f1": 1, "f2": "x"}, None, {"f1": None, "f2": None}]
    assert text(values, st, T("struct<f1:int,f2:string>")) == [
        '{"f1":1, "f2":"x"}',
        None,
        '{"f1":null, "f2":null}',
    ]


def test_nesting_and_slices():
    nested = pa.array([[[1], [], None], None, [[2, 3]]], pa.list_(pa.list_(pa.int64())))
    ctype = T("array<array<bigint>>")
    assert arrow_text(nested, ctype).to_pylist() == ["[[1], [], null]", None, "[[2, 3]]"]
    assert arrow_text(nested.slice(1), ctype).to_pylist() == [None, "[[2, 3]]"]
    st = pa.array(
        [{"a": [{"k": [1]}], "b": None}, {"a": None, "b": "z"}],
        pa.struct([("a", pa.list_(pa.map_(pa.string(), pa.list_(pa.int8())))), ("b", pa.string())]),
    )
    ctype = T("struct<a:array<map<string,array<tinyint>>>,b:string>")
    assert arrow_text(st, ctype).to_pylist() == ['{"a":[{"k":[1]}], "b":null}', '{"a":null, "b":"z"}']
    assert arrow_text(st.slice(1), ctype).to_pylist() == ['{"a":null, "b":"z"}']
    maps = pa.array(
        [[("a", [1])], [("b", None), ("c", [])], None], pa.map_(pa.string(), pa.list_(pa.int32()))
    )
    assert arrow_text(maps.slice(1), T("map<string,array<int>>")).to_pylist() == ['{"b":null, "c":[]}', None]
    chunked = pa.chunked_array([nested.slice(0, 1), nested.slice(2)])
    assert arrow_text(chunked.combine_chunks(), ctype=T("array<array<bigint>>")).to_pylist() == [
        "[[1], [], null]",
        "[[2, 3]]",
    ]


def test_nine_levels_and_a_declared_type_that_lost_its_nesting():
    arrow_type, value, ctype = pa.int32(), 7, ColumnType(name="INT")
    for _ in range(9):
        arrow_type, value, ctype = pa.list_(arrow_type), [value], ColumnType.array(ctype)
    assert text([value], arrow_type, ctype) == ["[" * 9 + "7" + "]" * 9]
    # a column declared STRING whose values are a list: typed by its Arrow type
    assert text([[1, 2]], pa.list_(pa.int64()), ColumnType(name="STRING")) == ["[1, 2]"]


def test_binary_inside_is_hex():
    assert text([[b"\x00\xff\x80", b"", None]], pa.list_(pa.binary()), T("array<binary>")) == [
        "[0x00FF80, 0x, null]"
    ]
    lists = pa.array([[b"\x01"], [None, b"\xab"], [b"\x0f\x10"]], pa.list_(pa.binary()))
    assert arrow_text(lists.slice(1), T("array<binary>")).to_pylist() == ["[null, 0xAB]", "[0x0F10]"]


def test_aggregate_states_are_null():
    for name, values, arrow_type in [
        ("BITMAP", [[1, 2]], pa.list_(pa.int64())),
        ("HLL", [b"\x01"], pa.binary()),
        ("QUANTILE_STATE", [[1.5]], pa.list_(pa.float64())),
    ]:
        assert text(values, arrow_type, ColumnType(name=name)) == [None]
        assert python_text(values[0], ColumnType(name=name)) is None


def test_wide_decimals_print_plainly():
    ctype = ColumnType(name="DECIMAL", precision=76, scale=10)
    wide = Decimal("-123456789012345678901234567890123456789012345678901234567890.0000000001")
    values = [Decimal("0.0000000001"), Decimal(0), wide, None]
    assert text(values, pa.decimal256(76, 10), ctype) == ["0.0000000001", "0.0000000000", str(wide), None]


def test_time_of_day_at_its_precision():
    times = [dt.time(10, 0, 1, 500000), None]
    assert text(times, pa.time64("us"), ColumnType(name="TIME", precision=3)) == ["10:00:01.500", None]
    assert text(times, pa.time64("us"), ColumnType(name="TIME")) == ["10:00:01", None]


# --- column definitions -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "ctype, mysql_type, length, decimals",
    [
        (T("array<int>"), MysqlType.STRING, 255, 0),
        (T("map<string,int>"), MysqlType.STRING, 255, 0),
        (T("struct<a:int>"), MysqlType.STRING, 255, 0),
        (ColumnType(name="IPV4"), MysqlType.STRING, 255, 0),
        (ColumnType(name="IPV6"), MysqlType.STRING, 255, 0),
        (ColumnType(name="LARGEINT"), MysqlType.STRING, 255, 0),
        (ColumnType(name="BITMAP"), MysqlType.STRING, 255, 0),
        (ColumnType(name="HLL"), MysqlType.STRING, 255, 0),
        (ColumnType(name="QUANTILE_STATE"), MysqlType.STRING, 255, 0),
        (ColumnType(name="JSON"), MysqlType.JSON, 255, 0),
        (ColumnType(name="VARIANT"), MysqlType.JSON, 255, 0),
        (ColumnType(name="TIME", precision=3), MysqlType.TIME, 255, 3),
        (ColumnType(name="DECIMAL", precision=76, scale=10), MysqlType.NEWDECIMAL, 78, 10),
        (ColumnType(name="DECIMAL", precision=50, scale=0), MysqlType.NEWDECIMAL, 51, 0),
    ],
)
def test_column_definitions_are_doris(ctype, mysql_type, length, decimals):
    spec = mysql_column_spec(ctype)
    assert (spec.mysql_type, spec.length, spec.decimals) == (mysql_type, length, decimals)


# --- binary rows ---------------------------------------------------------------------------------
def test_binary_rows_of_nested_time_and_states():
    table = pa.table(
        {
            "a": pa.array([[[1], [], None], None], pa.list_(pa.list_(pa.int64()))),
            "t": pa.array(["-838:59:59.5", "10:00:00"]),
            "b": pa.array([[1], [2]], pa.list_(pa.int64())),
        }
    )
    types = [T("array<array<bigint>>"), ColumnType(name="TIME", precision=1), ColumnType(name="BITMAP")]
    payloads, lengths = binary_payloads(table, types)
    first, second = payloads.to_pylist()
    # 0x00, the NULL bitmap (column i at bit i + 2: BITMAP always NULL), then the values
    assert first == (
        b"\x00\x10"
        + b"\x0f[[1], [], null]"
        + b"\x0c\x01" + (34).to_bytes(4, "little") + bytes([22, 59, 59]) + (500000).to_bytes(4, "little")
    )  # fmt: skip
    assert second == b"\x00\x14" + b"\x08\x00" + (0).to_bytes(4, "little") + bytes([10, 0, 0])
    assert list(lengths) == [len(first), len(second)]


# --- result types of expressions the engine types by a plainer one ----------------------------
def test_expression_types_of_casts_and_doris_functions():
    import sqlglot

    from galene.sql.dialect import Galene
    from galene.sql.source_types import source_column_types

    sql = (
        "SELECT to_bitmap(1), hll_hash(1), to_quantile_state(1.0, 2048), CAST('1' AS TIME(3)),"
        " CAST('1.2.3.4' AS IPV4), json_object('a', 1), json_array(1), CAST('{}' AS JSON),"
        " CAST(x AS DATETIME(3)), CAST(x AS DATETIME), sec_to_time(3), 1, upper('a')"
    )
    got = source_column_types(sqlglot.parse_one(sql, read=Galene), lambda db, name: None)
    assert [t and t.to_sql() for t in got] == [
        "bitmap", "hll", "quantile_state", "time(3)", "ipv4", "json", "json", "json", "datetime(3)",
        None, "time", None, None,
    ]  # fmt: skip
    # a query with none of them (and no catalog table) leaves every column to the engine
    assert source_column_types(sqlglot.parse_one("SELECT 1, 'a'", read=Galene), lambda db, name: None) == []
