"""Stream-load expressions (`columns` mappings, `where`, `delete`) evaluated over Arrow columns."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from galene.common.errors import LoadError
from galene.load import expressions as ex

COLUMNS = {
    "s": pa.array(["Hello", "wOrld", None]),
    "n": pa.array(["5", "-7", "12"]),
    "f": pa.array(["1.5", "x", "2"]),
    "d": pa.array(["2024-01-05", "2023-12-31 10:11:12", None]),
    "ts": pa.array(["1700000000", "0", "-5"]),
    "big": pa.array(["9223372036854775000", "1", "2"]),
}
CTX = ex.EvalContext(3, dt.datetime(2024, 5, 6, 7, 8, 9), "Asia/Shanghai")


def ev(text: str) -> list:
    return ex.evaluate(ex.parse_condition(text, "test"), COLUMNS, CTX).to_pylist()


@pytest.mark.parametrize(
    "text,expected",
    [
        ("n * 10", [50, -70, 120]),
        ("n + f", [6.5, None, 14.0]),  # 'x' is no number: NULL, as Doris' implicit cast
        ("n / 2", [2.5, -3.5, 6.0]),
        ("n % 5", [0, -2, 2]),
        ("n div 2", [2, -3, 6]),
        ("n / 0", [None, None, None]),
        ("big + 1", [9223372036854775001, 2, 3]),  # integers stay exact
        ("-n", [-5, 7, -12]),
        ("abs(n)", [5, 7, 12]),
        ("round(f * 1.005, 2)", [1.51, None, 2.01]),
        ("floor(f)", [1, None, 2]),
        ("ceil(f)", [2, None, 2]),
    ],
)
def test_arithmetic_reads_text_as_numbers(text, expected):
    assert ev(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("upper(s)", ["HELLO", "WORLD", None]),
        ("lower(s)", ["hello", "world", None]),
        ("substr(s, 2, 3)", ["ell", "Orl", None]),
        ("substring(s, -3)", ["llo", "rld", None]),
        ("substr(s, 0)", ["", "", None]),
        ("trim(concat('  ', s, ' '))", ["Hello", "wOrld", None]),
        ("length(s)", [5, 5, None]),
        ("replace(s, 'l', 'L')", ["HeLLo", "wOrLd", None]),
        ("concat(s, '-', n)", ["Hello-5", "wOrld--7", None]),  # NULL in, NULL out
        ("concat_ws('-', s, n)", ["Hello-5", "wOrld--7", "12"]),  # concat_ws skips NULLs
        ("left(s, 2)", ["He", "wO", None]),
        ("right(s, 2)", ["lo", "ld", None]),
        ("lpad(n, 4, '0')", ["0005", "00-7", "0012"]),
    ],
)
def test_string_functions(text, expected):
    assert ev(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("ifnull(s, 'none')", ["Hello", "wOrld", "none"]),
        ("coalesce(s, n)", ["Hello", "wOrld", "12"]),
        ("nullif(n, '5')", [None, "-7", "12"]),
        ("if(n > 0, 'pos', 'neg')", ["pos", "neg", "pos"]),
        ("case when n > 10 then 'big' when n > 0 then 'small' else 'neg' end", ["small", "neg", "big"]),
        ("n in (5, 12)", [True, False, True]),
        ("n between 0 and 10", [True, False, False]),
        ("s like 'H%'", [True, False, None]),
        ("s is null", [False, False, True]),
        ("not (n > 0) or s is null", [False, True, True]),
        ("cast(n as int)", [5, -7, 12]),
        ("cast(f as decimal(10, 2))", [Decimal("1.50"), None, Decimal("2.00")]),
        ("cast(n as varchar(10))", ["5", "-7", "12"]),
    ],
)
def test_conditionals_predicates_and_casts(text, expected):
    assert ev(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("year(d)", [2024, 2023, None]),
        ("month(d)", [1, 12, None]),
        ("day(d)", [5, 31, None]),
        ("hour(d)", [0, 10, None]),
        ("date_format(d, '%Y%m%d %H:%i:%s')", ["20240105 00:00:00", "20231231 10:11:12", None]),
        ("str_to_date(concat('2024-01-0', n), '%Y-%m-%d')", [dt.date(2024, 1, 5), None, None]),
        ("cast(d as date)", [dt.date(2024, 1, 5), dt.date(2023, 12, 31), None]),
        ("datediff(d, '2024-01-01')", [4, -1, None]),
        ("d > '2024-01-01'", [True, False, None]),
        ("days_add(cast(d as date), 2)", [dt.date(2024, 1, 7), dt.date(2024, 1, 2), None]),
        ("date_add(cast(d as date), interval 1 month)", [dt.date(2024, 2, 5), dt.date(2024, 1, 31), None]),
        ("months_add(concat('2024-01-3', n), 1)", [None, None, None]),  # day 35, -7, 312: no dates
        (
            "date_add('2024-01-31', interval n month)",
            [dt.datetime(2024, 6, 30), dt.datetime(2023, 6, 30), dt.datetime(2025, 1, 31)],
        ),
        (
            "date_sub(d, interval 1 year)",
            [dt.datetime(2023, 1, 5), dt.datetime(2022, 12, 31, 10, 11, 12), None],
        ),
        ("date_add(cast('2024-02-29' as date), interval 1 year)", [dt.date(2025, 2, 28)] * 3),
        ("date_add(cast(d as date), interval 1 quarter)", [dt.date(2024, 4, 5), dt.date(2024, 3, 31), None]),
    ],
)
def test_date_functions(text, expected):
    assert ev(text) == expected


def test_from_unixtime_and_now_use_the_load_time_zone_and_clock():
    assert ev("from_unixtime(ts)") == ["2023-11-15 06:13:20", "1970-01-01 08:00:00", None]
    assert ev("from_unixtime(ts, '%Y-%m-%d')") == ["2023-11-15", "1970-01-01", None]
    utc = ex.EvalContext(3, CTX.now, "UTC")
    assert ex.evaluate(ex.parse_condition("from_unixtime(ts)", "t"), COLUMNS, utc).to_pylist()[1] == (
        "1970-01-01 00:00:00"
    )
    # now() is the load's clock: one value for every row (and every block of the load).
    assert ev("now()") == [dt.datetime(2024, 5, 6, 7, 8, 9)] * 3
    assert ev("current_date()") == [dt.date(2024, 5, 6)] * 3


def test_unknown_function_and_column_name_themselves():
    with pytest.raises(LoadError, match="unknown function foo"):
        ev("foo(s)")
    with pytest.raises(LoadError, match="Unknown column 'nope'"):
        ev("nope + 1")


def test_parse_columns_header():
    specs = ex.parse_columns("k1, `odd name`, tmp, v = tmp * 10, dt = str_to_date(s, '%Y-%m-%d')")
    assert [(s.name, s.expr is not None) for s in specs] == [
        ("k1", False),
        ("odd name", False),
        ("tmp", False),
        ("v", True),
        ("dt", True),
    ]
    with pytest.raises(LoadError, match="Duplicate column"):
        ex.parse_columns("a, b, a")
    with pytest.raises(LoadError, match="Invalid columns header"):
        ex.parse_columns("a, upper(b)")
