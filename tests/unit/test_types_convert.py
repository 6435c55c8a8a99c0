"""Issue 21's write side without servers: Doris' text forms of nested, JSON, IP, LARGEINT,
decimal256 and aggregate-state values into their storage types (galene.load.convert /
nested / text_types / state_functions), through `parse_body` and `convert_arrow`."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal

import datasketches as ds
import pyarrow as pa
import pyarrow.parquet as papq
import pytest

from galene.catalog.model import Column, Partition, Table
from galene.common.errors import LoadError
from galene.common.types import ColumnType, make_type
from galene.load.convert import coerce, convert_strings
from galene.load.options import LoadOptions
from galene.load.parse import convert_arrow, parse_body
from galene.load.state_functions import murmur3_32
from galene.load.text_types import INVALID, parse_doris_nested

INT = ColumnType(name="INT")
BIGINT = ColumnType(name="BIGINT")
STRING = ColumnType(name="STRING")
ARR_INT = ColumnType.array(INT)
ARR_STR = ColumnType.array(STRING)
MAP_STR_INT = ColumnType.map(STRING, INT)
MAP_INT_STR = ColumnType.map(INT, STRING)
STRUCT_AB = ColumnType.struct([("a", INT), ("b", STRING)])


def t(name: str, *nums: int, wide: bool = False) -> ColumnType:
    return make_type(name, list(nums), decimal256=wide)


def table(*cols: tuple[str, ColumnType], keys_type="DUP_KEYS", aggs=None) -> Table:
    aggs = aggs or {}
    return Table(
        id=20,
        db_id=10,
        name="t",
        columns=[Column(name=n, type=ty, aggregation=aggs.get(n)) for n, ty in cols],
        keys_type=keys_type,
        key_columns=[cols[0][0]],
        partitions=[Partition(id=30, name="t", tablet_ids=[40])],
    )


def values(conv):
    return conv.values.to_pylist(), (None if conv.bad is None else conv.bad.tolist())


# --- nested text ------------------------------------------------------------------------------


def test_array_text_forms():
    text = pa.array(
        ["[1, 2, 3]", "[]", "[null, NULL]", '["4", 5]', None, "[1, x]", "nope", "[1,", "[1111, 12, ]"]
    )
    got, bad = values(convert_strings(text, ARR_INT))
    # An element that does not convert is a NULL element (Doris' ComplexTypeSerdeTextTest:
    # "[ed, 2,]" -> [null, 2, null]) and flags its row for strict mode; text that is no array
    # at all is NULL.
    assert got == [[1, 2, 3], [], [None, None], [4, 5], None, [1, None], None, None, [1111, 12, None]]
    assert bad == [False, False, False, False, False, True, True, True, False]
    got, bad = values(convert_strings(pa.array(["[1111, 12, ]", "[ed, 2,]"]), ColumnType.array(t("TINYINT"))))
    assert got == [[None, 12, None], [None, 2, None]] and bad == [True, True]


def test_array_of_strings_quoted_single_quoted_and_bare():
    text = pa.array(['["a", "b"]', "['c', 'd,e']", "[f, g]", "[1, 2]"])
    assert convert_strings(text, ARR_STR).values.to_pylist() == [
        ["a", "b"],
        ["c", "d,e"],
        ["f", "g"],
        ["1", "2"],
    ]


def test_nested_arrays_and_null_inner_array():
    text = pa.array(["[[1], [2, 3]]", "[[1], null, []]"])
    got, bad = values(convert_strings(text, ColumnType.array(ARR_INT)))
    assert got == [[[1], [2, 3]], [[1], None, []]] and bad is None


def test_map_text_forms():
    got, bad = values(
        convert_strings(pa.array(['{"k1":1, "k2":2}', "{'a':1}", "{a:null}", "{null:1}", "{}"]), MAP_STR_INT)
    )
    assert got == [[("k1", 1), ("k2", 2)], [("a", 1)], [("a", None)], None, []]
    assert bad == [False, False, False, True, False]  # a NULL key makes the value bad
    got, _ = values(convert_strings(pa.array(["{1:'x', 2:\"y\"}"]), MAP_INT_STR))
    assert got == [[(1, "x"), (2, "y")]]


def test_struct_by_name_and_by_position():
    text = pa.array(['{"a":1, "b":"x"}', '{1, "y"}', '{"A":2}', "{1, 2, 3}"])
    got, bad = values(convert_strings(text, STRUCT_AB))
    assert got == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2, "b": None}, None]
    assert bad == [False, False, False, True]


def test_struct_holding_array_and_map():
    ctype = ColumnType.struct([("xs", ARR_INT), ("m", MAP_STR_INT)])
    got, bad = values(
        convert_strings(pa.array(['{"xs": [1, 2], "m": {"k": 3}}', '{"xs": ["q"], "m": {}}']), ctype)
    )
    assert got == [{"xs": [1, 2], "m": [("k", 3)]}, {"xs": [None], "m": []}] and bad == [False, True]


def test_parser_is_bounded_in_depth():
    deep = "[" * 20 + "]" * 20
    assert parse_doris_nested(deep) is INVALID
    assert parse_doris_nested("[[[[[[[[[1]]]]]]]]]") == [[[[[[[[["1"]]]]]]]]]


def test_decimal_elements_round_and_wide_decimal_array():
    got, bad = values(
        convert_strings(pa.array(["[1.234, 2]", "[1e400]"]), ColumnType.array(t("DECIMAL", 10, 2)))
    )
    assert got == [[Decimal("1.23"), Decimal("2.00")], [None]] and bad == [False, True]


# --- JSON, VARIANT, IP ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["JSON", "VARIANT"])
def test_json_text_compact_and_validated(name):
    got, bad = values(
        convert_strings(pa.array(['{"a": 1.50, "b": [1, 2]}', "x", None, "12345678901234567890123"]), t(name))
    )
    assert got == ['{"a":1.50,"b":[1,2]}', None, None, "12345678901234567890123"]
    assert bad == [False, True, False, False]


def test_ipv4_normalized_and_checked():
    got, bad = values(
        convert_strings(pa.array(["1.2.3.4", " 01.002.3.255 ", "1.2.3.256", "x", None]), t("IPV4"))
    )
    assert got == ["1.2.3.4", "1.2.3.255", None, None, None]
    assert bad == [False, False, True, True, False]


def test_ipv6_canonical_form():
    text = pa.array(
        [
            "2001:DB8::1",
            "::ffff:1.2.3.4",
            "2001:db8:0:0:1:0:0:1",
            "1.2.3.4",
            "::1",
            "zz",
            "::1.2.3.4",
            "::0.0.1.2",
            "::",
        ]
    )
    got, bad = values(convert_strings(text, t("IPV6")))
    assert got == [
        "2001:db8::1", "::ffff:1.2.3.4", "2001:db8::1:0:0:1", None, "::1", None, "::1.2.3.4", "::102", "::",
    ]  # fmt: skip
    assert bad == [False, False, False, True, False, True, False, False, False]


# --- numbers --------------------------------------------------------------------------------------


def test_largeint_full_range():
    text = pa.array([str(2**127 - 1), str(-(2**127)), str(2**127)])
    got, bad = values(convert_strings(text, t("LARGEINT")))
    assert got == [Decimal(2**127 - 1), Decimal(-(2**127)), None] and bad == [False, False, True]


def test_decimal256_text_and_from_arrow():
    ctype = t("DECIMAL", 50, 2, wide=True)
    got, _ = values(
        convert_strings(pa.array(["123456789012345678901234567890123456789012.505", "1.005"]), ctype)
    )
    assert got == [Decimal("123456789012345678901234567890123456789012.51"), Decimal("1.01")]
    wide = pa.array([Decimal("1" * 45 + ".5")], pa.decimal256(60, 1))
    assert coerce(wide, ctype).values.to_pylist() == [Decimal("1" * 45 + ".50")]


def test_datetime6_keeps_micros():
    got, _ = values(convert_strings(pa.array(["2024-01-02 03:04:05.123456"]), t("DATETIME", 6)))
    assert got == [dt.datetime(2024, 1, 2, 3, 4, 5, 123456)]


# --- Arrow values (Parquet, engine writes) ---------------------------------------------------------


def test_arrow_nested_values_cast_to_storage_types():
    assert coerce(pa.array([[1, 2], None, [3]], pa.list_(pa.int64())), ARR_INT).values.to_pylist() == [
        [1, 2],
        None,
        [3],
    ]
    m = pa.array([[(1, "a")], None, [(2, None)]], pa.map_(pa.int64(), pa.string()))
    assert coerce(m, MAP_INT_STR).values.to_pylist() == [[(1, "a")], None, [(2, None)]]
    s = pa.array([{"x": 1, "y": "q"}, None])  # an engine's struct(…) names its fields col1…
    assert coerce(s, STRUCT_AB).values.to_pylist() == [{"a": 1, "b": "q"}, None]
    got, bad = values(coerce(pa.array([[1, 2**40]], pa.list_(pa.int64())), ARR_INT))
    assert got == [[1, None]] and bad == [True]
    assert coerce(pa.array(["[1,2]"]), ARR_INT).values.to_pylist() == [[1, 2]]


def test_arrow_state_values():
    bitmap = coerce(pa.array([[3, 1, 3], None, []], pa.list_(pa.int64())), t("BITMAP"))
    assert bitmap.values.to_pylist() == [[1, 3], None, []]
    assert coerce(pa.array([b"\x01", None]), t("HLL")).values.to_pylist() == [b"\x01", None]
    assert coerce(pa.array([[1.0, 2.0]]), t("QUANTILE_STATE")).values.to_pylist() == [[1.0, 2.0]]


def test_convert_arrow_validates_ips_like_a_load():
    tbl = table(("k", INT), ("ip", t("IPV4")))
    rows = pa.table({"k": pa.array([1, 2], pa.int32()), "ip": pa.array(["10.0.0.1", "300.1.1.1"])})
    strict = convert_arrow(rows, tbl, LoadOptions(strict_mode=True))
    assert strict.data.to_pylist() == [{"k": 1, "ip": "10.0.0.1"}] and strict.num_filtered == 1


# --- stream-load bodies ------------------------------------------------------------------------


def _all_types_table() -> Table:
    return table(
        ("k", INT),
        ("a", ARR_INT),
        ("m", MAP_STR_INT),
        ("s", STRUCT_AB),
        ("j", t("JSON")),
        ("v", t("VARIANT")),
        ("ip4", t("IPV4")),
        ("ip6", t("IPV6")),
        ("big", t("LARGEINT")),
    )


CSV_BODY = (
    '1\t[1, 2]\t{"x":1}\t{"a":1, "b":"p"}\t{"q": [1]}\t{"v": {"w": 2}}\t1.2.3.4\t2001:DB8::1\t'
    + str(2**127 - 1)
    + "\n"
    + "2\t[1, oops]\t{}\t{2, 'r'}\t[]\t1\t5.6.7.8\t::1\t1\n"
    + "3\t[]\t\\N\t\\N\tnot json\t2\t9.9.9.9\t::2\t2\n"
).encode()


def test_csv_body_of_every_type_strict_filters_bad_nested_rows():
    batch = parse_body(CSV_BODY, _all_types_table(), LoadOptions(strict_mode=True))
    assert batch.num_total == 3 and batch.num_filtered == 2
    (row,) = batch.data.to_pylist()
    assert row == {
        "k": 1,
        "a": [1, 2],
        "m": [("x", 1)],
        "s": {"a": 1, "b": "p"},
        "j": '{"q":[1]}',
        "v": '{"v":{"w":2}}',
        "ip4": "1.2.3.4",
        "ip6": "2001:db8::1",
        "big": Decimal(2**127 - 1),
    }
    reasons = " ".join(e.reason for e in batch.errors)
    assert "column(a)" in reasons and "column(j)" in reasons


def test_csv_body_non_strict_nulls_bad_values():
    batch = parse_body(CSV_BODY, _all_types_table(), LoadOptions())
    assert batch.num_filtered == 0
    got = {r["k"]: r for r in batch.data.to_pylist()}
    assert got[2]["a"] == [1, None] and got[2]["s"] == {"a": 2, "b": "r"}
    assert got[3]["j"] is None and got[3]["m"] is None


def test_json_body_maps_arrays_objects_to_nested_columns():
    body = (
        b'{"k": 1, "a": [1, 2], "m": {"x": 1}, "s": {"a": 5, "b": "z"}, "j": {"q": 1}, "v": [1, {"r": 2}],'
        b' "ip4": "1.1.1.1", "ip6": "::FFFF:1.2.3.4", "big": -170141183460469231731687303715884105728}\n'
        b'{"k": 2, "a": null, "s": null, "j": "[1,2]"}\n'
    )
    batch = parse_body(body, _all_types_table(), LoadOptions(format="json", read_json_by_line=True))
    rows = {r["k"]: r for r in batch.data.to_pylist()}
    assert rows[1]["a"] == [1, 2] and rows[1]["m"] == [("x", 1)] and rows[1]["s"] == {"a": 5, "b": "z"}
    assert rows[1]["j"] == '{"q":1}' and rows[1]["v"] == '[1,{"r":2}]'
    assert rows[1]["ip6"] == "::ffff:1.2.3.4" and rows[1]["big"] == Decimal(-(2**127))
    assert rows[2]["a"] is None and rows[2]["j"] == "[1,2]"


def test_parquet_body_with_nested_columns():
    data = pa.table(
        {
            "k": pa.array([1, 2], pa.int64()),
            "a": pa.array([[1, 2], None], pa.list_(pa.int64())),
            "m": pa.array([[("x", 1)], []], pa.map_(pa.string(), pa.int64())),
            "s": pa.array([{"a": 1, "b": "p"}, {"a": 2, "b": None}]),
        }
    )
    buf = io.BytesIO()
    papq.write_table(data, buf)
    tbl = table(("k", INT), ("a", ARR_INT), ("m", MAP_STR_INT), ("s", STRUCT_AB))
    batch = parse_body(buf.getvalue(), tbl, LoadOptions(format="parquet"))
    assert batch.data.to_pylist() == [
        {"k": 1, "a": [1, 2], "m": [("x", 1)], "s": {"a": 1, "b": "p"}},
        {"k": 2, "a": None, "m": [], "s": {"a": 2, "b": None}},
    ]


# --- aggregate-state columns ---------------------------------------------------------------------


def _state_table() -> Table:
    return table(
        ("k", INT),
        ("b", t("BITMAP")),
        ("h", t("HLL")),
        ("q", t("QUANTILE_STATE")),
        keys_type="AGG_KEYS",
        aggs={"b": "BITMAP_UNION", "h": "HLL_UNION", "q": "QUANTILE_UNION"},
    )


def _hll(value) -> bytes:
    sketch = ds.hll_sketch(12, ds.tgt_hll_type.HLL_8)
    if value is not None:
        sketch.update(value)
    return sketch.serialize_compact()


def test_state_functions_in_columns_header():
    opts = LoadOptions.from_headers(
        {
            "column_separator": ",",
            "columns": "k, u, x, b=to_bitmap(u), h=hll_hash(x), q=to_quantile_state(u, 2048)",
        }
    )
    batch = parse_body(b"1,7,a\n2,-1,b\n3,\\N,a\n", _state_table(), opts)
    rows = batch.data.to_pylist()
    assert [r["b"] for r in rows] == [[7], None, None]
    assert [r["h"] for r in rows] == [_hll("a"), _hll("b"), _hll("a")]
    assert [r["q"] for r in rows] == [[7.0], [-1.0], None]
    assert ds.hll_sketch.deserialize(rows[0]["h"]).get_estimate() == pytest.approx(1.0)


def test_bitmap_hash_empty_from_string_and_hll_empty():
    opts = LoadOptions.from_headers(
        {
            "column_separator": ",",
            "columns": "k, u, b=bitmap_hash(u), h=hll_empty(), q=to_quantile_state(k, 2048)",
        }
    )
    rows = parse_body(b"1,hello\n", _state_table(), opts).data.to_pylist()
    assert rows[0]["b"] == [int(murmur3_32(pa.array(["hello"]), 104729)[0])] and rows[0]["h"] == _hll(None)
    opts = LoadOptions.from_headers(
        {"column_separator": "|", "columns": "k, u, b=bitmap_from_string(u), h=hll_empty()"}
    )
    rows = parse_body(b"1|3,1,2,3\n2|x\n", _state_table(), opts).data.to_pylist()
    assert [r["b"] for r in rows] == [[1, 2, 3], None]
    opts = LoadOptions.from_headers(
        {"column_separator": ",", "columns": "k, b=bitmap_empty(), h=hll_empty()"}
    )
    assert parse_body(b"1\n", _state_table(), opts).data.to_pylist()[0]["b"] == []


def test_murmur3_32_known_values():
    got = murmur3_32(pa.array(["", "hello", "a", "abc", "abcd", "hello world!"]), 0).tolist()
    assert got == [0, 613153351, 1009084850, 3017643002, 1139631978, 774705101]


def test_hll_column_without_function_is_refused():
    with pytest.raises(LoadError, match="HLL column must use hll function"):
        parse_body(b"1,2,a,3\n", _state_table(), LoadOptions(column_separator=b","))


def test_bitmap_column_reads_bitmap_from_string_text():
    tbl = table(("k", INT), ("b", t("BITMAP")), keys_type="AGG_KEYS", aggs={"b": "BITMAP_UNION"})
    batch = parse_body(b"1\t5,3,5\n2\t-1\n", tbl, LoadOptions(strict_mode=True))
    assert batch.data.to_pylist() == [{"k": 1, "b": [3, 5]}] and batch.num_filtered == 1


def _nested_columns_table() -> pa.Table:
    return pa.table(
        {
            "k": pa.array([1, 2], pa.int64()),
            "a": pa.array([[1, 2], None], pa.list_(pa.int64())),
            "m": pa.array([[("x", 1)], []], pa.map_(pa.string(), pa.int64())),
            "s": pa.array([{"a": 1, "b": "p"}, {"a": 2, "b": None}]),
        }
    )


EXPECTED_NESTED_ROWS = [
    {"k": 1, "a": [1, 2], "m": [("x", 1)], "s": {"a": 1, "b": "p"}},
    {"k": 2, "a": None, "m": [], "s": {"a": 2, "b": None}},
]


def test_orc_body_with_nested_columns():
    import pyarrow.orc as paorc

    buf = io.BytesIO()
    paorc.write_table(_nested_columns_table(), buf)
    tbl = table(("k", INT), ("a", ARR_INT), ("m", MAP_STR_INT), ("s", STRUCT_AB))
    assert parse_body(buf.getvalue(), tbl, LoadOptions(format="orc")).data.to_pylist() == EXPECTED_NESTED_ROWS


@pytest.mark.parametrize("kind", ["stream", "file"])
def test_arrow_body_with_nested_columns(kind):
    data = _nested_columns_table()
    sink = pa.BufferOutputStream()
    writer = pa.ipc.new_stream(sink, data.schema) if kind == "stream" else pa.ipc.new_file(sink, data.schema)
    writer.write_table(data)
    writer.close()
    tbl = table(("k", INT), ("a", ARR_INT), ("m", MAP_STR_INT), ("s", STRUCT_AB))
    batch = parse_body(sink.getvalue().to_pybytes(), tbl, LoadOptions(format="arrow"))
    assert batch.data.to_pylist() == EXPECTED_NESTED_ROWS


def test_json_body_arrays_and_structs_stay_typed_and_filter_bad_elements():
    tbl = table(("k", INT), ("a", ColumnType.array(t("TINYINT"))), ("s", STRUCT_AB))
    body = b'{"k": 1, "a": [1, 2], "s": {"a": 1, "b": "x"}}\n{"k": 2, "a": [1, 300], "s": null}\n'
    batch = parse_body(body, tbl, LoadOptions(format="json", read_json_by_line=True, strict_mode=True))
    assert batch.data.to_pylist() == [{"k": 1, "a": [1, 2], "s": {"a": 1, "b": "x"}}]
    assert batch.num_filtered == 1
    assert "column(a)" in batch.errors[0].reason and '"a":[1,300]' in batch.errors[0].raw


def test_engine_nested_values_into_json_columns_become_json_text():
    j = t("JSON")
    assert coerce(pa.array([[1, 2], None]), j).values.to_pylist() == ["[1,2]", None]
    assert coerce(pa.array([{"a": 1, "b": "x"}]), j).values.to_pylist() == ['{"a":1,"b":"x"}']
    m = pa.array([[("a", 1), ("b", 2)], []], pa.map_(pa.string(), pa.int64()))
    assert coerce(m, t("VARIANT")).values.to_pylist() == ['{"a":1,"b":2}', "{}"]


def test_ipv4_from_its_number():
    got, bad = values(coerce(pa.array([16909060, 0, 2**32 - 1, -1, None, 2**32], pa.int64()), t("IPV4")))
    assert got == ["1.2.3.4", "0.0.0.0", "255.255.255.255", None, None, None]
    assert bad == [False, False, False, True, False, True]


@pytest.mark.parametrize("ctype", [ARR_INT, t("JSON")])
def test_text_nested_past_any_limit_is_a_bad_value_not_a_crash(ctype):
    deep = "[" * 100_000 + "]" * 100_000
    got, bad = values(convert_strings(pa.array([deep, "[1]"]), ctype))
    assert got[0] is None and bad == [True, False]


def test_deep_text_is_refused_before_any_decoder_even_on_a_small_stack():
    """msgspec and pyarrow recurse per level: on a thread with a small stack, 100,000 levels
    crashed the process. The depth is checked first, so this thread survives."""
    import threading

    deep = "[" * 100_000 + "]" * 100_000
    out = {}

    def run():
        for ctype in (ARR_INT, t("JSON"), ARR_STR):
            out[ctype.name + ctype.to_sql()] = convert_strings(
                pa.array([deep, "[1]"]), ctype
            ).values.to_pylist()

    old = threading.stack_size(512 * 1024)
    try:
        worker = threading.Thread(target=run)
        worker.start()
        worker.join()
    finally:
        threading.stack_size(old)
    assert [v[0] for v in out.values()] == [None, None, None] and len(out) == 3


def test_json_body_with_jsonpaths_into_nested_columns():
    tbl = table(("k", INT), ("a", ARR_INT), ("m", MAP_STR_INT))
    body = b'{"id": 1, "data": {"xs": [1, 2], "kv": {"p": 3}}}\n'
    opts = LoadOptions(format="json", read_json_by_line=True, jsonpaths='["$.id", "$.data.xs", "$.data.kv"]')
    assert parse_body(body, tbl, opts).data.to_pylist() == [{"k": 1, "a": [1, 2], "m": [("p", 3)]}]


def test_fixed_size_lists_convert_like_lists():
    fixed = pa.array([[1, 2], [3, 4]], pa.list_(pa.int64(), 2))
    assert coerce(fixed, ARR_INT).values.to_pylist() == [[1, 2], [3, 4]]


def test_cast_to_a_nested_type_in_columns_header():
    opts = LoadOptions.from_headers({"column_separator": "|", "columns": "k, raw, a=cast(raw as array<int>)"})
    rows = parse_body(b"1|[1, 2]\n2|x\n", table(("k", INT), ("a", ARR_INT)), opts).data.to_pylist()
    assert rows == [{"k": 1, "a": [1, 2]}, {"k": 2, "a": None}]
