"""Stream-load parsing: Doris filtering semantics, formats, separators, JSON, header options."""

from __future__ import annotations

import datetime as dt
import gzip
from decimal import Decimal

import pyarrow as pa
import pytest

from galene.catalog.model import DELETE_SIGN, Column, Partition, Table
from galene.common.errors import LoadError
from galene.common.types import parse_type
from galene.load.csv_reader import INVALID_UTF8_MAX_ROWS
from galene.load.options import LoadOptions
from galene.load.parse import parse_body
from tests.support.samples import JSON_VALUES


def col(name, type_text, **kw) -> Column:
    return Column(name=name, type=parse_type(type_text), **kw)


def make_table(columns, keys_type="DUP_KEYS", key_columns=None) -> Table:
    return Table(
        id=20,
        db_id=10,
        name="t",
        columns=columns,
        keys_type=keys_type,
        key_columns=key_columns or [columns[0].name],
        partitions=[Partition(id=30, name="t", tablet_ids=[40])],
    )


def csv_opts(**kw) -> LoadOptions:
    kw.setdefault("column_separator", b",")
    return LoadOptions(**kw)


def rows(batch):
    return batch.data.to_pylist()


# --- the Doris regression case ----------------------------------------------------------------


DORIS_CASE = (
    b"1,10,2020-01-01\n2,20,2020-01-02\n3,abc,2020-01-03\n4,40,2020-01-04\n5,50,2020-13-45\n"
    b"6,60,2020-01-06\n7,7x7,2020-01-07\n8,80,2020-01-08\n9,90,2020-01-09\n10,100,2020-01-10\n"
)


def doris_table():
    return make_table([col("id", "int", nullable=False), col("v", "int"), col("d", "date")])


def test_strict_mode_filters_unconvertible_rows_with_reasons():
    batch = parse_body(DORIS_CASE, doris_table(), csv_opts(strict_mode=True))
    assert (batch.num_total, batch.num_filtered, batch.data.num_rows) == (10, 3, 7)
    assert batch.data.column("id").to_pylist() == [1, 2, 4, 6, 8, 9, 10]
    assert [e.raw for e in batch.errors] == ["3,abc,2020-01-03", "5,50,2020-13-45", "7,7x7,2020-01-07"]
    assert "column(v)" in batch.errors[0].reason and "abc" in batch.errors[0].reason
    assert "strict mode" in batch.errors[0].reason and "INT" in batch.errors[0].reason
    assert "column(d)" in batch.errors[1].reason and "2020-13-45" in batch.errors[1].reason


def test_non_strict_mode_loads_unconvertible_values_as_null():
    batch = parse_body(DORIS_CASE, doris_table(), csv_opts(strict_mode=False))
    assert (batch.num_total, batch.num_filtered, batch.data.num_rows) == (10, 0, 10)
    assert batch.data.column("v").to_pylist()[2] is None
    assert batch.data.column("v").to_pylist()[6] is None
    assert batch.data.column("d").to_pylist()[4] is None
    assert batch.data.column("d").to_pylist()[0] == dt.date(2020, 1, 1)


def test_max_error_rows_bounds_the_error_list_not_the_count():
    body = b"".join(b"%d,bad,2020-01-01\n" % i for i in range(100))
    batch = parse_body(body, doris_table(), csv_opts(strict_mode=True), max_error_rows=5)
    assert batch.num_filtered == 100
    assert len(batch.errors) == 5


# --- NULL and NOT NULL ----------------------------------------------------------------------


@pytest.mark.parametrize("strict", [False, True])
def test_null_into_not_null_is_filtered_in_both_modes(strict):
    table = make_table([col("id", "int", nullable=False), col("name", "varchar(10)", nullable=False)])
    batch = parse_body(b"1,a\n\\N,b\n3,\\N\n4,d\n", table, csv_opts(strict_mode=strict))
    assert batch.data.column("id").to_pylist() == [1, 4]
    assert batch.num_filtered == 2
    assert all("values is null while columns is not nullable" in e.reason for e in batch.errors)
    assert batch.errors[0].raw == "\\N,b"


def test_unconvertible_value_into_not_null_column_is_filtered_without_strict_mode():
    table = make_table([col("id", "int", nullable=False), col("v", "int")])
    batch = parse_body(b"1,1\nx,2\n", table, csv_opts())
    assert rows(batch) == [{"id": 1, "v": 1}]
    assert batch.num_filtered == 1
    assert "x" in batch.errors[0].reason


def test_backslash_n_is_null_and_empty_field_semantics():
    table = make_table([col("k", "int"), col("s", "varchar(10)"), col("n", "int")])
    lenient = parse_body(b"1,\\N,\n2,,5\n", table, csv_opts())
    assert rows(lenient) == [{"k": 1, "s": None, "n": None}, {"k": 2, "s": "", "n": 5}]
    strict = parse_body(b"1,\\N,\n2,,5\n", table, csv_opts(strict_mode=True))
    # An empty field is a value that does not convert to INT: filtered in strict mode.
    assert rows(strict) == [{"k": 2, "s": "", "n": 5}]
    assert strict.num_filtered == 1


def test_empty_field_as_null_applies_to_strings_too():
    table = make_table([col("k", "int"), col("s", "varchar(10)")])
    batch = parse_body(b"1,\n", table, csv_opts(empty_field_as_null=True))
    assert rows(batch) == [{"k": 1, "s": None}]


# --- value checks ----------------------------------------------------------------------------


@pytest.mark.parametrize("strict", [False, True])
def test_varchar_longer_than_its_length_is_filtered(strict):
    table = make_table([col("k", "int"), col("s", "varchar(4)")])
    # VARCHAR length counts bytes: 'éé' is 4 bytes and fits, 'ééé' is 6 and does not.
    batch = parse_body("1,abcd\n2,abcde\n3,éé\n4,ééé\n".encode(), table, csv_opts(strict_mode=strict))
    assert batch.data.column("k").to_pylist() == [1, 3]
    assert batch.num_filtered == 2
    assert "too long than schema" in batch.errors[0].reason
    assert "schema length: 4" in batch.errors[0].reason


def test_tinyint_overflow():
    table = make_table([col("k", "int"), col("t", "tinyint")])
    body = b"1,127\n2,128\n3,-128\n4,-129\n5,99999999999999999999999\n"
    strict = parse_body(body, table, csv_opts(strict_mode=True))
    assert rows(strict) == [{"k": 1, "t": 127}, {"k": 3, "t": -128}]
    assert strict.num_filtered == 3
    lenient = parse_body(body, table, csv_opts())
    assert lenient.data.column("t").to_pylist() == [127, None, -128, None, None]


def test_bigint_edges():
    table = make_table([col("b", "bigint")])
    body = b"9223372036854775807\n-9223372036854775808\n9223372036854775808\n+42\n 7 \n"
    batch = parse_body(body, table, csv_opts(strict_mode=True))
    assert batch.data.column("b").to_pylist() == [2**63 - 1, -(2**63), 42, 7]
    assert batch.num_filtered == 1


def test_integers_take_dorises_fractional_suffix_and_refuse_hex():
    # galene.common.intcast: '20.50' truncates; Arrow's own parser (the CSV fast path) reads
    # 0x10 as 16, Doris' does not read it.
    table = make_table([col("k", "int"), col("b", "bigint")])
    batch = parse_body(b"1,20.50\n2, -3.9 \n3,3.\n", table, csv_opts(strict_mode=True))
    assert rows(batch) == [{"k": 1, "b": 20}, {"k": 2, "b": -3}, {"k": 3, "b": 3}]
    batch = parse_body(b"1,0x10\n2,42\n", table, csv_opts(strict_mode=True))
    assert rows(batch) == [{"k": 2, "b": 42}]
    assert "src value is 0x10" in batch.errors[0].reason


def test_largeint_takes_the_whole_int128_range():
    table = make_table([col("k", "int"), col("v", "largeint")])
    top, bottom = 2**127 - 1, -(2**127)
    body = f"1,{top}\n2,{bottom}\n3,{top + 1}\n4,{bottom - 1}\n".encode()
    batch = parse_body(body, table, csv_opts(strict_mode=True))
    assert [(r["k"], int(r["v"])) for r in rows(batch)] == [(1, top), (2, bottom)]
    assert batch.num_filtered == 2  # 2^127 once wrapped around to -2^127 through Arrow's cast
    lenient = parse_body(body, table, csv_opts())
    assert [None if v is None else int(v) for v in lenient.data.column("v").to_pylist()] == [
        top,
        bottom,
        None,
        None,
    ]


def test_decimal_rounds_extra_fraction_and_filters_too_many_integer_digits():
    table = make_table([col("k", "int"), col("d", "decimal(5,2)")])
    body = b"1,1.5\n2,1.555\n3,-1.005\n4,999.994\n5,999.995\n6,1234.5\n7,.5\n8,1.2.3\n"
    batch = parse_body(body, table, csv_opts(strict_mode=True))
    got = dict(zip(batch.data.column("k").to_pylist(), batch.data.column("d").to_pylist()))
    assert got == {
        1: Decimal("1.50"),
        2: Decimal("1.56"),
        3: Decimal("-1.01"),
        4: Decimal("999.99"),
        7: Decimal("0.50"),
    }
    assert batch.num_filtered == 3  # 999.995 rounds past the precision, 1234.5, 1.2.3


def test_dates_and_datetimes():
    table = make_table([col("k", "int"), col("d", "date"), col("t", "datetime"), col("t3", "datetime(3)")])
    body = (
        b"1,2020-02-29,2020-01-01 10:11:12,2020-01-01 10:11:12.123456\n"
        b"2,2021-02-29,2020-01-01,2020-01-01T10:11:12.9\n"
        b"3,2020-1-5,2020-01-01 24:00:00,20200102\n"
        b"4,20200105,2020-01-01 10:11:12.5,2020-01-01 10:11\n"
    )
    batch = parse_body(body, table, csv_opts())
    assert batch.data.column("d").to_pylist() == [
        dt.date(2020, 2, 29),
        None,  # 2021 is no leap year
        dt.date(2020, 1, 5),
        dt.date(2020, 1, 5),
    ]
    assert batch.data.column("t").to_pylist() == [
        dt.datetime(2020, 1, 1, 10, 11, 12),
        dt.datetime(2020, 1, 1),
        None,  # hour 24
        dt.datetime(2020, 1, 1, 10, 11, 12),  # DATETIME(0) keeps no fraction
    ]
    assert batch.data.column("t3").to_pylist() == [
        dt.datetime(2020, 1, 1, 10, 11, 12, 123000),
        dt.datetime(2020, 1, 1, 10, 11, 12, 900000),
        dt.datetime(2020, 1, 2),
        dt.datetime(2020, 1, 1, 10, 11),
    ]


def test_boolean_and_float_values():
    table = make_table([col("k", "int"), col("b", "boolean"), col("f", "double")])
    batch = parse_body(b"1,true,1.5\n2,0,-2e3\n3,TRUE,inf\n4,yes,1,5\n5,maybe,x\n", table, csv_opts())
    assert batch.data.column("b").to_pylist() == [True, False, True, None]
    assert batch.data.column("f").to_pylist() == [1.5, -2000.0, float("inf"), None]
    assert batch.num_filtered == 1  # the 4-field row


def test_storage_schema_types():
    table = make_table(
        [col("a", "tinyint"), col("b", "largeint"), col("c", "decimal(10,3)"), col("d", "datetime(6)")]
    )
    batch = parse_body(
        b"1\t170141183460469231731687303715884105\t1.5\t2020-01-01 00:00:00.000001\n", table, LoadOptions()
    )
    assert batch.data.schema.types == [
        pa.int8(),
        pa.decimal128(38, 0),
        pa.decimal128(10, 3),
        pa.timestamp("us"),
    ]
    assert rows(batch)[0]["b"] == 170141183460469231731687303715884105


# --- column counts and CSV shapes -------------------------------------------------------------


def test_wrong_column_counts_are_filtered_with_their_text():
    table = make_table([col("a", "int"), col("b", "int"), col("c", "int")])
    batch = parse_body(b"1,2,3\n4,5\n6,7,8,9\n10,11,12\n", table, csv_opts())
    assert batch.data.column("a").to_pylist() == [1, 10]
    assert (batch.num_total, batch.num_filtered) == (4, 2)
    by_raw = {e.raw: e.reason for e in batch.errors}
    assert "less than schema column number" in by_raw["4,5"]
    assert "more than schema column number" in by_raw["6,7,8,9"]


def test_wrong_column_count_plus_bad_value_both_counted():
    table = make_table([col("a", "int"), col("b", "int")])
    batch = parse_body(b"1,2\n3\nx,4\n", table, csv_opts(strict_mode=True))
    assert (batch.num_total, batch.num_filtered, batch.data.num_rows) == (3, 2, 1)
    assert len(batch.errors) == 2


@pytest.mark.parametrize(
    "header,sep",
    [(",", b","), ("|", b"|"), ("\\x01", b"\x01"), ("\\t", b"\t"), ("||", b"||"), ("\\x0203", b"\x02\x03")],
)
def test_column_separators(header, sep):
    opts = LoadOptions.from_headers({"column_separator": header})
    assert opts.column_separator == sep
    table = make_table([col("a", "int"), col("s", "varchar(10)")])
    body = sep.join([b"1", b"x,y"]) + b"\n" + sep.join([b"2", b"z"]) + b"\n"
    if sep == b",":
        body = b"1,xy\n2,z\n"
    batch = parse_body(body, table, opts)
    assert batch.data.column("a").to_pylist() == [1, 2]
    assert batch.num_filtered == 0


def test_default_separator_is_tab_and_quotes_are_literal():
    table = make_table([col("a", "int"), col("s", "varchar(10)")])
    batch = parse_body(b'1\t"q"\n', table, LoadOptions())
    assert rows(batch) == [{"a": 1, "s": '"q"'}]
    enclosed = parse_body(
        b'1,"a,b"\n', table, LoadOptions.from_headers({"column_separator": ",", "enclose": '"'})
    )
    assert rows(enclosed) == [{"a": 1, "s": "a,b"}]


def test_custom_line_delimiter_and_skip_lines_and_headers():
    table = make_table([col("a", "int"), col("b", "int")])
    batch = parse_body(
        b"1,2;;3,4;;", table, LoadOptions.from_headers({"column_separator": ",", "line_delimiter": ";;"})
    )
    assert batch.data.column("a").to_pylist() == [1, 3]
    skipped = parse_body(b"junk\n1,2\n3,4\n", table, csv_opts(skip_lines=1))
    assert skipped.data.column("a").to_pylist() == [1, 3]
    named = parse_body(b"a,b\n1,2\n", table, csv_opts(format="csv_with_names"))
    assert rows(named) == [{"a": 1, "b": 2}]
    typed = parse_body(b"a,b\nint,int\n1,2\n", table, csv_opts(format="csv_with_names_and_types"))
    assert rows(typed) == [{"a": 1, "b": 2}]


def test_compressed_body():
    table = make_table([col("a", "int")])
    batch = parse_body(gzip.compress(b"1\n2\n"), table, LoadOptions(compress_type="gz"))
    assert batch.data.column("a").to_pylist() == [1, 2]


def test_empty_body_is_zero_rows():
    table = make_table([col("a", "int")])
    for body in (b"", b"\n\n"):
        batch = parse_body(body, table, LoadOptions())
        assert (batch.num_total, batch.num_filtered, batch.data.num_rows) == (0, 0, 0)
        assert batch.data.schema.names == ["a"]


def test_rows_with_invalid_utf8_are_filtered_with_their_column():
    table = make_table([col("a", "int"), col("s", "varchar(10)")])
    body = b"1,ok\n2,\xff\xfe\n3,fine\n4,caf\xc3\xa9\n5,x\xc3\n"
    batch = parse_body(body, table, csv_opts())
    assert (batch.num_total, batch.num_filtered) == (5, 2)
    assert batch.data.column("a").to_pylist() == [1, 3, 4]
    assert batch.data.column("s").to_pylist() == ["ok", "fine", "café"]
    assert [e.raw for e in batch.errors] == ["2,\ufffd\ufffd", "5,x\ufffd"]
    assert all("not valid UTF-8" in e.reason and "[s]" in e.reason for e in batch.errors)


def test_binary_body_is_a_clear_load_error():
    table = make_table([col("a", "int"), col("s", "varchar(10)")])
    batch = parse_body(b"1,\xff\xfe\n", table, csv_opts())
    assert (batch.num_total, batch.num_filtered, batch.data.num_rows) == (1, 1, 0)
    with pytest.raises(LoadError, match="UTF-8"):
        parse_body(b"".join(b"%d,\xff\n" % i for i in range(INVALID_UTF8_MAX_ROWS + 1)), table, csv_opts())


# --- columns header, defaults, hidden columns -------------------------------------------------


def test_columns_subset_fills_defaults_and_nulls():
    table = make_table(
        [
            col("k", "int"),
            col("v", "int", default="7"),
            col("s", "varchar(5)"),
            col("t", "datetime", default="CURRENT_TIMESTAMP"),
        ]
    )
    batch = parse_body(b"abc,1\nxyz,2\n", table, csv_opts(columns=["s", "k"]))
    got = rows(batch)
    assert [(r["k"], r["v"], r["s"]) for r in got] == [(1, 7, "abc"), (2, 7, "xyz")]
    assert all(isinstance(r["t"], dt.datetime) for r in got)


def test_column_names_unknown_to_the_table_skip_that_field():
    table = make_table([col("k", "int"), col("v", "int")])
    batch = parse_body(
        b"1,junk,2\n",
        table,
        LoadOptions.from_headers({"columns": "k, skip_me, `v`", "column_separator": ","}),
    )
    assert rows(batch) == [{"k": 1, "v": 2}]


def test_not_null_column_without_default_missing_from_columns_fails_the_load():
    table = make_table([col("k", "int"), col("need", "int", nullable=False)])
    with pytest.raises(LoadError, match="Column has no default value. column: need"):
        parse_body(b"1\n", table, csv_opts(columns=["k"]))


def test_unique_table_gets_delete_sign_zero():
    table = make_table(
        [
            col("k", "int", is_key=True),
            col("v", "varchar(5)"),
            col(DELETE_SIGN, "tinyint", nullable=False, hidden=True),
        ],
        keys_type="UNIQUE_KEYS",
    )
    batch = parse_body(b"1,a\n2,b\n", table, csv_opts())
    assert batch.data.column_names == ["k", "v", DELETE_SIGN]
    assert batch.data.column(DELETE_SIGN).to_pylist() == [0, 0]
    deleting = parse_body(b"1,a,1\n", table, csv_opts(columns=["k", "v", DELETE_SIGN]))
    assert deleting.data.column(DELETE_SIGN).to_pylist() == [1]


# --- JSON ------------------------------------------------------------------------------------


def json_table():
    return make_table([col("id", "int", nullable=False), col("name", "varchar(10)"), col("d", "date")])


def test_json_by_line_is_the_default_and_keys_are_case_insensitive():
    body = b'{"ID": 1, "Name": "a", "d": "2020-01-01"}\n{"id": 2, "d": "2020-01-02"}\n\n'
    batch = parse_body(body, json_table(), LoadOptions(format="json"))
    assert rows(batch) == [
        {"id": 1, "name": "a", "d": dt.date(2020, 1, 1)},
        {"id": 2, "name": None, "d": dt.date(2020, 1, 2)},
    ]


def test_json_strip_outer_array_and_json_root():
    body = b'[{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]'
    batch = parse_body(
        body, json_table(), LoadOptions.from_headers({"format": "json", "strip_outer_array": "true"})
    )
    assert batch.data.column("id").to_pylist() == [1, 2]
    rooted = parse_body(
        b'{"data": {"rows": [{"id": 3}]}}',
        json_table(),
        LoadOptions(format="json", strip_outer_array=True, json_root="$.data.rows"),
    )
    assert rooted.data.column("id").to_pylist() == [3]


def test_json_array_without_strip_outer_array_is_an_error():
    with pytest.raises(LoadError, match="strip_outer_array"):
        parse_body(b'[{"id": 1}]', json_table(), LoadOptions(format="json", read_json_by_line=False))


def test_json_strings_that_look_like_dates_stay_text_in_varchar():
    table = make_table([col("id", "int"), col("s", "varchar(20)")])
    batch = parse_body(b'{"id": 1, "s": "2020-01-01"}\n', table, LoadOptions(format="json"))
    assert rows(batch) == [{"id": 1, "s": "2020-01-01"}]


def test_json_mixed_value_types_and_nested_values():
    table = make_table([col("id", "int"), col("s", "varchar(30)")])
    body = b'{"id": 1, "s": "x"}\n{"id": "2", "s": 5}\n{"id": "bad", "s": {"a": [1]}}\n'
    batch = parse_body(body, table, LoadOptions(format="json", strict_mode=True))
    assert rows(batch) == [{"id": 1, "s": "x"}, {"id": 2, "s": "5"}]
    assert batch.num_filtered == 1
    assert '"bad"' in batch.errors[0].raw


@pytest.mark.parametrize(
    "body,opts",
    [
        (b'{"id": 1}\n{"id": \n', LoadOptions(format="json")),
        (b'[{"id": 1}, ', LoadOptions(format="json", strip_outer_array=True)),
    ],
)
def test_malformed_json_is_a_load_error(body, opts):
    with pytest.raises(LoadError, match="Parse json data failed"):
        parse_body(body, json_table(), opts)


# --- header options --------------------------------------------------------------------------


def test_from_headers_reads_values_case_insensitively():
    opts = LoadOptions.from_headers(
        {
            "Strict_Mode": "TRUE",
            "MAX_FILTER_RATIO": "0.3",
            "Format": "JSON",
            "Skip_Lines": "2",
            "timeout": "30",
        }
    )
    assert (opts.strict_mode, opts.max_filter_ratio, opts.format, opts.skip_lines, opts.timeout_s) == (
        True,
        0.3,
        "json",
        2,
        30,
    )
    assert opts.json_by_line is True


@pytest.mark.parametrize(
    "headers,message",
    [
        ({"strict_mode": "yes"}, "Invalid strict mode format. Must be bool type"),
        ({"max_filter_ratio": "2"}, "max_filter_ratio must between 0.0 and 1.0"),
        ({"max_filter_ratio": "lots"}, "max_filter_ratio"),
        ({"format": "xml"}, "unknown data format, format=xml"),
        ({"skip_lines": "-3"}, "Invalid 'skip_lines': -3"),
        ({"column_separator": "\\xZZ"}, "Invalid hex format"),
        ({"merge_type": "MERGE"}, "Excepted DELETE ON clause when merge type is MERGE."),
        (
            {"merge_type": "APPEND", "delete": "k = 1"},
            "Not support DELETE ON clause when merge type is not MERGE.",
        ),
        ({"merge_type": "UPSERT"}, "Invalid merge type UPSERT"),
        ({"timezone": "Mars/Olympus"}, "Unknown or incorrect time zone: 'Mars/Olympus'"),
        ({"where": "k >"}, "failed to parse the `where` header"),
        ({"columns": "k1, f(x)"}, "Invalid columns header"),
        ({"jsonpaths": "not json", "format": "json"}, ""),
    ],
)
def test_from_headers_rejects_bad_values(headers, message):
    with pytest.raises(LoadError) as info:
        LoadOptions.from_headers(headers)
    assert message in info.value.message


@pytest.mark.parametrize("fmt", ["orc", "arrow"])
def test_columnar_bodies_that_are_not_their_format_are_refused(fmt):
    with pytest.raises(
        LoadError, match=f"failed to read the body as {fmt.upper() if fmt == 'orc' else 'Arrow'}"
    ):
        parse_body(b"1\n", make_table([col("k", "int")]), LoadOptions(format=fmt))


# --- issue 3: expressions, where, formats, separators, compression, merge types ------------------


def test_columns_mapping_with_skipped_source_and_expressions():
    table = make_table(
        [col("k1", "int", nullable=False), col("v", "bigint"), col("dt", "date"), col("s", "varchar(20)")]
    )
    opts = LoadOptions.from_headers(
        {
            "column_separator": ",",
            "columns": "k1, tmp, raw, v = tmp * 10, dt = str_to_date(raw, '%Y/%m/%d'), "
            "s = concat(upper(raw), '-', ifnull(tmp, 'none'))",
        }
    )
    batch = parse_body(b"1,5,2024/01/02\n2,\\N,bad\n", table, opts)
    assert rows(batch) == [
        {"k1": 1, "v": 50, "dt": dt.date(2024, 1, 2), "s": "2024/01/02-5"},
        {"k1": 2, "v": None, "dt": None, "s": "BAD-none"},
    ]
    assert (batch.num_total, batch.num_filtered, batch.num_unselected) == (2, 0, 0)


def test_expression_null_into_not_null_column_is_filtered_with_reason():
    table = make_table([col("k", "int", nullable=False), col("v", "int", nullable=False)])
    opts = LoadOptions.from_headers({"column_separator": ",", "columns": "k, tmp, v = tmp * 2"})
    batch = parse_body(b"1,3\n2,abc\n", table, opts)
    assert rows(batch) == [{"k": 1, "v": 6}]
    assert batch.num_filtered == 1
    assert "column(v) values is null while columns is not nullable" in batch.errors[0].reason
    assert batch.errors[0].raw == "2,abc"


def test_where_rows_are_unselected_not_filtered():
    table = doris_table()
    opts = LoadOptions.from_headers(
        {"column_separator": ",", "strict_mode": "true", "where": "id > 3 and id <> 6"}
    )
    batch = parse_body(DORIS_CASE, table, opts)
    # ids 1-3 and 6 unselected; of the rest, 5 (bad date) and 7 (7x7) are filtered.
    assert batch.num_unselected == 4
    assert batch.num_filtered == 2
    assert batch.data.column("id").to_pylist() == [4, 8, 9, 10]
    assert {e.raw.split(",")[0] for e in batch.errors} == {"5", "7"}


def test_where_on_a_value_that_does_not_convert_unselects_the_row():
    # Doris evaluates `where` on the source row first: NULL (from a bad value) selects nothing.
    opts = LoadOptions.from_headers(
        {"column_separator": ",", "strict_mode": "true", "where": "d > '2020-01-01'"}
    )
    batch = parse_body(DORIS_CASE, doris_table(), opts)
    # Unselected: 1 (not after) and 5 (bad date); filtered: 3 and 7 (bad v, strict mode).
    assert (batch.num_total, batch.num_unselected, batch.num_filtered) == (10, 2, 2)


def test_where_on_a_skipped_source_column():
    table = make_table([col("k", "int"), col("v", "varchar(5)")])
    opts = LoadOptions.from_headers(
        {"column_separator": ",", "columns": "k, kind, v", "where": "kind = 'keep'"}
    )
    batch = parse_body(b"1,keep,a\n2,drop,b\n3,keep,c\n", table, opts)
    assert rows(batch) == [{"k": 1, "v": "a"}, {"k": 3, "v": "c"}]
    assert (batch.num_total, batch.num_unselected, batch.num_filtered) == (3, 1, 0)


@pytest.mark.parametrize(
    "headers,body",
    [
        ({"column_separator": "||", "line_delimiter": "\\n"}, b"1||a\n2||b\n"),
        ({"column_separator": "\\x01", "line_delimiter": "\\x02"}, b"1\x01a\x022\x01b\x02"),
        ({"column_separator": ",", "line_delimiter": "|||"}, b"1,a|||2,b|||"),
        ({"column_separator": ",", "line_delimiter": "\\n\\n"}, b"1,a\n\n2,b\n\n"),
    ],
)
def test_separators_of_any_length(headers, body):
    table = make_table([col("k", "int"), col("s", "varchar(10)")])
    batch = parse_body(body, table, LoadOptions.from_headers(headers))
    assert rows(batch) == [{"k": 1, "s": "a"}, {"k": 2, "s": "b"}]


def test_custom_line_delimiter_keeps_newlines_inside_values():
    table = make_table([col("k", "int"), col("s", "varchar(20)")])
    opts = LoadOptions.from_headers({"column_separator": "|", "line_delimiter": "\\x03"})
    batch = parse_body(b"1|two\nlines\x032|cr\rhere\x03", table, opts)
    assert rows(batch) == [{"k": 1, "s": "two\nlines"}, {"k": 2, "s": "cr\rhere"}]


def test_enclose_and_escape_keep_separators_and_newlines_in_values():
    table = make_table([col("k", "int"), col("s", "varchar(30)")])
    opts = LoadOptions.from_headers({"column_separator": "||", "enclose": "'", "escape": "\\"})
    batch = parse_body(b"1||'a||b\nc'\n2||'it\\'s'\n", table, opts)
    assert rows(batch) == [{"k": 1, "s": "a||b\nc"}, {"k": 2, "s": "it's"}]


def test_trim_double_quotes_and_csv_with_names_and_types():
    table = make_table([col("k", "int"), col("s", "varchar(10)")])
    trimmed = parse_body(b'"1","x"\n', table, csv_opts(trim_double_quotes=True))
    assert rows(trimmed) == [{"k": 1, "s": "x"}]
    typed = parse_body(b"k,s\nINT,VARCHAR\n2,y\n", table, csv_opts(format="csv_with_names_and_types"))
    assert rows(typed) == [{"k": 2, "s": "y"}]


@pytest.mark.parametrize("codec", ["gz", "bz2", "lz4", "zstd"])
def test_compress_types(codec):
    import bz2 as bz2_mod

    raw = b"1\n2\n3\n"
    if codec == "gz":
        body = gzip.compress(raw)
    elif codec == "bz2":
        body = bz2_mod.compress(raw)
    else:
        sink = pa.BufferOutputStream()
        with pa.CompressedOutputStream(sink, {"lz4": "lz4", "zstd": "zstd"}[codec]) as out:
            out.write(raw)
        body = sink.getvalue().to_pybytes()
    table = make_table([col("a", "int")])
    batch = parse_body(body, table, LoadOptions.from_headers({"compress_type": codec}))
    assert batch.data.column("a").to_pylist() == [1, 2, 3]


def test_body_that_is_not_what_compress_type_says_is_a_clear_error():
    with pytest.raises(LoadError, match="failed to decompress the body as zstd"):
        parse_body(b"1\n2\n", make_table([col("a", "int")]), LoadOptions(compress_type="zstd"))


def test_jsonpaths_map_nested_values_to_columns():
    table = make_table([col("id", "int"), col("x", "varchar(10)"), col("first", "int")])
    body = b'{"k1": 1, "v": {"x": "a"}, "arr": [7, 8]}\n{"k1": 2, "v": {"x": "b"}, "arr": []}\n'
    opts = LoadOptions.from_headers({"format": "json", "jsonpaths": '["$.k1", "$.v.x", "$.arr[0]"]'})
    assert rows(parse_body(body, table, opts)) == [
        {"id": 1, "x": "a", "first": 7},
        {"id": 2, "x": "b", "first": None},
    ]
    # With `columns`, the paths feed the named source columns in order.
    opts = LoadOptions.from_headers(
        {"format": "json", "jsonpaths": '["$.v.x", "$.k1"]', "columns": "x, raw, id = raw * 10"}
    )
    assert rows(parse_body(body, table, opts)) == [
        {"id": 10, "x": "a", "first": None},
        {"id": 20, "x": "b", "first": None},
    ]


def test_json_numbers_keep_every_digit():
    table = make_table([col("id", "bigint"), col("amount", "decimal(30,10)"), col("s", "varchar(40)")])
    body = b'{"id": 9007199254740993, "amount": 12345678901234567890.0123456789, "s": 1.50}\n'
    exact = parse_body(body, table, LoadOptions(format="json"))
    assert rows(exact)[0]["id"] == 9007199254740993
    assert rows(exact)[0]["amount"] == Decimal("12345678901234567890.0123456789")
    as_string = parse_body(body, table, LoadOptions(format="json", num_as_string=True))
    assert rows(as_string)[0]["s"] == "1.50"


def test_parquet_body_maps_columns_by_name():
    import pyarrow.parquet as pq

    table = make_table([col("k", "int"), col("s", "varchar(5)"), col("d", "date")])
    src = pa.table({"S": ["a", "toolong"], "k": pa.array([1, 2], pa.int64()), "extra": [0.5, 1.5]})
    sink = pa.BufferOutputStream()
    pq.write_table(src, sink)
    batch = parse_body(sink.getvalue().to_pybytes(), table, LoadOptions(format="parquet"))
    assert rows(batch) == [{"k": 1, "s": "a", "d": None}]
    assert batch.num_filtered == 1 and "too long" in batch.errors[0].reason
    with pytest.raises(LoadError, match="Parquet"):
        parse_body(b"not parquet", table, LoadOptions(format="parquet"))


def unique_table(**properties):
    t = make_table(
        [col("k", "int", nullable=False), col("v", "varchar(10)"), col("seq", "int"),
         col(DELETE_SIGN, "tinyint", nullable=False, hidden=True, default="0")],
        keys_type="UNIQUE_KEYS",
    )  # fmt: skip
    t.properties.update(properties)
    return t


def test_merge_type_delete_and_merge_set_the_delete_sign():
    table = unique_table()
    deleting = parse_body(
        b"1,a,1\n2,b,1\n", table, LoadOptions.from_headers({"column_separator": ",", "merge_type": "DELETE"})
    )
    assert deleting.data.column(DELETE_SIGN).to_pylist() == [1, 1]
    merge = LoadOptions.from_headers({"column_separator": ",", "merge_type": "MERGE", "delete": "v = 'gone'"})
    merged = parse_body(b"1,keep,1\n2,gone,1\n3,\\N,1\n", table, merge)
    assert merged.data.column(DELETE_SIGN).to_pylist() == [0, 1, 0]


def test_merge_type_and_sequence_errors_use_doris_texts():
    dup = make_table([col("k", "int"), col("v", "int")])
    with pytest.raises(LoadError, match="load by MERGE or DELETE is only supported in unique tables."):
        parse_body(b"1,1\n", dup, LoadOptions.from_headers({"merge_type": "DELETE"}))
    with pytest.raises(LoadError, match="There is no sequence column in the table t"):
        parse_body(
            b"1,a,1\n", unique_table(), LoadOptions.from_headers({"function_column.sequence_col": "seq"})
        )
    # A table whose sequence column maps to `seq` needs no header.
    batch = parse_body(b"1,a,1\n", unique_table(**{"function_column.sequence_col": "seq"}), csv_opts())
    assert batch.data.num_rows == 1


# --- cutting a streamed body into blocks at line ends ------------------------------------------


def test_blocks_are_cut_at_the_last_line_delimiter_with_the_rest_kept():
    from galene.be.load_body import cut_block

    assert cut_block([b"1,a\n2,b\n3,", b"c\n4,d\n5,e"], b"\n") == (b"1,a\n2,b\n3,c\n4,d\n", b"5,e")
    # only an earlier chunk holds a delimiter
    assert cut_block([b"1,a\n2,", b"bbbb"], b"\n") == (b"1,a\n", b"2,bbbb")
    # a multi-byte delimiter split across two chunks
    assert cut_block([b"1,a||2,b|", b"|3,c"], b"||") == (b"1,a||2,b||", b"3,c")
    # no delimiter yet: nothing to cut, the chunks become one piece
    chunks = [b"abc", b"def"]
    assert cut_block(chunks, b"\n") == (None, b"")
    assert chunks == [b"abcdef"]
    # the delimiter ends the last chunk exactly
    assert cut_block([b"1,a\n"], b"\n") == (b"1,a\n", b"")


def test_clock_defaults_with_a_precision_take_the_loads_start_time():
    table = make_table([col("k", "int"), col("t", "datetime(3)", default="CURRENT_TIMESTAMP(3)")])
    opts = csv_opts(columns=["k"], started_at=dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.UTC))
    got = rows(parse_body(b"1\n2\n", table, opts))
    # the load's clock in its time zone (Asia/Shanghai by default), at the column's precision
    assert [r["t"] for r in got] == [dt.datetime(2024, 5, 6, 15, 8, 9, 123000)] * 2


def test_json_values_become_the_same_text_in_a_stream_load_and_in_s3_files():
    """One JSON value → text rule: a stream load and the S3 table function / streaming jobs
    (which read files with engine/s3source) give a value the same text."""
    from galene.engine.s3source import parse_file
    from galene.load.objectstore import parse_source

    table = make_table([col("k", "int"), col("v", "string")])
    loaded = {r["k"]: r["v"] for r in rows(parse_body(JSON_VALUES, table, LoadOptions(format="json")))}
    spec = parse_source({"uri": "s3://bkt/p/*.json", "format": "json"})
    read = {int(r["k"]): r["v"] for r in parse_file(spec, "p/a.json", JSON_VALUES, None).to_pylist()}
    assert read == loaded
    # Numbers keep their digits, nested values their JSON text.
    assert loaded == {
        1: '{"a":1,"b":[1,2.50,{"c":null}],"d":"\u00e9"}',
        2: '[1,"x",true,0.1]',
        3: "1.5",
        4: "123456789012345678901234567890",
        5: "12345.678901234567890123",
        6: "100000",
        7: "h\u00e9llo \u2603 \U0001d11e",
        8: None,
        9: "false",
    }
