"""galene.common.intcast: Doris' integer rule, checked against Doris' own cases.

Strings and expected values come from Doris' regression suite (function_p0/cast/
test_cast_str_to_bigint_with_fraction_const.out, test_cast_str_to_bigint_invalid_const.groovy,
test_cast_str_to_largeint_const.out: non-strict cast) and from StringParser::string_to_int.
"""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

from galene.common import intcast

MAX128 = 2**127 - 1
MIN128 = -(2**127)


def parse(values: list[str | None], name: str) -> list[int | None]:
    out, ok = intcast.parse_int_text(pa.array(values, pa.string()), name)
    got = [None if v is None else int(v) for v in out.to_pylist()]
    assert [v is not None for v in got] == list(ok)
    return got


# Doris' bigint-with-fraction cases: the fraction is dropped, whatever its digits.
FRACTION_CASES = [
    ("+0000.4", 0), ("+0001.5", 1), ("+000123.5", 123), ("+0009223372036854775807.5", 2**63 - 1),
    ("-0001.4", -1), ("-0009.5", -9), ("-0009223372036854775808.5", -(2**63)), ("0.5", 0), ("9.5", 9),
    ("-123.4", -123), ("9223372036854775806.5", 2**63 - 2), ("-9223372036854775807.4", -(2**63) + 1),
]  # fmt: skip


@pytest.mark.parametrize(("text", "value"), FRACTION_CASES)
def test_a_fractional_suffix_is_dropped(text, value):
    assert parse([text], "BIGINT") == [value]


# Every string of Doris' invalid list is NULL in a non-strict cast.
INVALID = [
    "", ".", " ", "\t", "abc", "abc1231abc12123abc", "1 23", "1\t23", "1.2.3", "a123.456", " a123.456",
    "\ta123.456", "123.456a", "123.456a\t", "123.456\ta", "123.456\na", "12a3.456", "123a.456",
    "123.a456", "123.4a56", "++123--123+-123-+123+-123.456", "+- 123.456", "-+123.456", "++123.456",
    "--123.456", "+-.456", "-+.456", "++.456", "--.456", "0x123", "0x123.456", "e", "-e", "+e", "e+",
    "e-", "e1", "e+1", "e-1", ".e", "+.e", "-.e", ".e+", ".e-", "1e", "1e+", "1e-", "1e1a", "1ea1",
    "1e1.1", "1e+1.1", "1e-1.1", "1e2e3",
]  # fmt: skip


def test_dorises_invalid_strings_do_not_convert():
    assert parse(INVALID, "BIGINT") == [None] * len(INVALID)


def test_whitespace_signs_and_other_edges():
    texts = ["3.", "3.0", "3.123", " 3.5 ", "\x0b8\x0c", "+5", "-0.5", "0005", "-0", "1e3", ".5", "3 .5",
             "3.5x", "+", "-", "٣", "\u00a07", None]  # fmt: skip
    assert parse(texts, "INT") == [
        3,
        3,
        3,
        3,
        8,
        5,
        0,
        5,
        0,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
    ]


@pytest.mark.parametrize(
    ("name", "lo", "hi"),
    [("TINYINT", -128, 127), ("SMALLINT", -(2**15), 2**15 - 1), ("INT", -(2**31), 2**31 - 1),
     ("BIGINT", -(2**63), 2**63 - 1), ("LARGEINT", MIN128, MAX128)],
)  # fmt: skip
def test_each_type_takes_its_whole_range_and_nothing_past_it(name, lo, hi):
    texts = [str(lo), str(hi), str(lo - 1), str(hi + 1), f"{hi}.99", f"{lo}.99", "0" * 60 + "1"]
    assert parse(texts, name) == [lo, hi, None, None, hi, lo, 1]


def test_largeint_cases_of_doris():
    # test_cast_str_to_largeint_const.out: both ends, with signs and leading zeros.
    texts = ["+000170141183460469231731687303715884105727", "-000170141183460469231731687303715884105728",
             "-170141183460469231731687303715884105727", "+0"]  # fmt: skip
    assert parse(texts, "LARGEINT") == [MAX128, MIN128, MIN128 + 1, 0]
    values, _ = intcast.parse_int_text(pa.array([str(MAX128)]), "LARGEINT")
    assert values.type == pa.decimal128(38, 0)  # 39 digits in the 128-bit decimal, exactly


def test_floats_truncate_and_refuse_nan_infinity_and_overflow():
    values = pa.array([2.9, -2.9, 127.9, 128.0, -128.9, -129.0, float("nan"), float("inf"), None])
    out, ok = intcast.float_to_int(values, "TINYINT")
    assert out.to_pylist() == [2, -2, 127, None, -128, None, None, None, None]
    assert list(ok) == [True, True, True, False, True, False, False, False, False]
    big = pa.array([2.0**126, -(2.0**127), 2.0**127, 1.5e30, -7.5])
    assert [None if v is None else int(v) for v in intcast.float_to_int(big, "LARGEINT")[0].to_pylist()] == [
        2**126, MIN128, None, int(1.5e30), -7,
    ]  # fmt: skip
    assert intcast.float_to_int(pa.array([9.3e18, -(2.0**63)]), "BIGINT")[0].to_pylist() == [None, -(2**63)]


def test_decimals_truncate_toward_zero_and_refuse_overflow():
    values = pa.array([Decimal("20.59"), Decimal("-20.59"), Decimal("0.0000000001"), Decimal("127.99"),
                       Decimal("128.00"), None], pa.decimal128(38, 10))  # fmt: skip
    out, _ = intcast.decimal_to_int(values, "TINYINT")
    assert out.to_pylist() == [20, -20, 0, 127, None, None]
    top = pa.array([Decimal(10**38 - 1)], pa.decimal128(38, 0))
    assert intcast.decimal_to_int(top, "LARGEINT")[0].to_pylist() == [Decimal(10**38 - 1)]
    assert intcast.decimal_to_int(top, "BIGINT")[0].to_pylist() == [None]


def test_integers_are_range_checked_and_booleans_are_one_or_zero():
    assert intcast.integer_to_int(pa.array([300, -128, 2**63 - 1]), "TINYINT")[0].to_pylist() == [
        None,
        -128,
        None,
    ]
    assert intcast.to_int(pa.array([2**64 - 1], pa.uint64()), "BIGINT")[0].to_pylist() == [None]
    assert intcast.to_int(pa.array([2**64 - 1], pa.uint64()), "LARGEINT")[0].to_pylist() == [
        Decimal(2**64 - 1)
    ]
    assert intcast.to_int(pa.array([True, False, None]), "INT")[0].to_pylist() == [1, 0, None]
    assert intcast.to_int(pa.array([None, None]), "INT")[0].to_pylist() == [None, None]
    assert intcast.to_int(pa.array([1], pa.date32()), "INT") is None  # not this rule's business


def test_numbers_with_an_exponent_are_spelled_out():
    assert intcast.plain_number_text("1e+16") == "10000000000000000"
    assert intcast.plain_number_text("1.5E3") == "1500"
    assert intcast.plain_number_text("-2.5e-1") == "-0.25"
    assert intcast.plain_number_text("20.50") == "20.50"
    assert intcast.plain_number_text("1e999999") == "1e999999"  # too long to spell: left as is
    assert parse([intcast.plain_number_text("1.5e3"), intcast.plain_number_text("1e+20")], "BIGINT") == [
        1500,
        None,
    ]
