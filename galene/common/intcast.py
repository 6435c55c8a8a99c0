"""Doris' integer conversions: how a value becomes a TINYINT, SMALLINT, INT, BIGINT or LARGEINT.

The one home of the rule every path applies: a stream load's text fields (CSV, JSON, Parquet
strings: `galene.load.parse`), INSERT … VALUES (its values travel to the BE as text:
`galene.fe.insert`), prepared-statement parameters (substituted into the statement as
literals, so they take the INSERT path), load expressions and the engine results of pipelines
(`galene.load.convert.coerce`), and SQL `CAST(x AS <integer>)` (`galene.sql.functions` spells
the same rule in Spark SQL from `INT_TEXT_REGEX` and `INT_BOUNDS`).

The rule is Doris' non-strict cast (Doris 4: `StringParser::string_to_int` and
`CastToInt` in be/src/vec/functions/cast/cast_to_basic_number_common.h; the regression cases
function_p0/cast/test_cast_str_to_{bigint,largeint}_*):

* Text: optional ASCII whitespace (space, \\t, \\n, \\v, \\f, \\r), one optional sign, at least one
  digit, then optionally a fractional suffix `.` followed by digits only (none is fine: "3."),
  then optional whitespace. The suffix is dropped, so the value is truncated toward zero:
  "20.50" → 20, "3.9" → 3, " -3.9 " → -3, "-0.5" → 0, "3." → 3. Anything else does not
  convert: "1e3", ".5", "0x10", "3 .5", "3.5x", "+-1", "", "٣" (Unicode digits). A value outside
  the type's range does not convert either (no saturation). Leading zeros are fine.
* A floating value: truncated toward zero; NaN, ±inf and a truncated value outside
  [-2^(N-1), 2^(N-1)) do not convert.
* A decimal: truncated toward zero (Doris divides by the scale multiplier); out of range does
  not convert.
* An integer: kept when it is in range. A boolean: 1 / 0.

"Does not convert" is a NULL in a query's CAST and in a non-strict load; a strict load
(`strict_mode`, `enable_insert_strict`) filters the row. (Doris' `enable_strict_cast` session
variable, off by default, makes a query's CAST refuse the fractional suffix and raise instead of
answering NULL; Galene does not model it.)

Ranges are the two's-complement ones. LARGEINT is the whole int128 range
[-2^127, 2^127 - 1]: Doris 4 accepts -2^127 (LargeIntType.MIN_VALUE; `cast('-1701…05728' as
largeint)` in test_cast_str_to_largeint_const.out), whatever its documentation says.

LARGEINT values are Arrow decimal128(38, 0) (see `galene.common.types`): the 128-bit unscaled
integer holds every int128, even those of 39 digits that "exceed" precision 38. Arrow's own
string → decimal cast must not see LARGEINT text: it refuses 2^127 - 1 and wraps 2^127 to
-2^127. Text is therefore parsed through decimal256 and narrowed only after the range check.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from galene.common.types import INT_BOUNDS

# Doris' is_whitespace_ascii; spelled with escapes every regex engine here reads alike (RE2 in
# pyarrow, Java in Apache Spark, Rust's regex in Sail).
_WS = r"[ \t\n\x0B\f\r]"
# Group 1 (sign): '-' or empty; group 2 (digits): the digits without leading zeros ('0' for
# zero), so `$1$2` is the integer's canonical text. Text that does not match is no integer.
# Named groups in the `(?<name>…)` form that RE2, Java and Rust all read.
INT_TEXT_REGEX = rf"^{_WS}*(?:\+|(?<sign>-))?0*(?<digits>[0-9]+)(?:\.[0-9]*)?{_WS}*$"

ARROW_TYPES = {
    "TINYINT": pa.int8(),
    "SMALLINT": pa.int16(),
    "INT": pa.int32(),
    "BIGINT": pa.int64(),
    "LARGEINT": pa.decimal128(38, 0),
}


def max_digits(name: str) -> int:
    """Digits of the type's largest magnitude: 3, 5, 10, 19, 39."""
    return len(str(INT_BOUNDS[name][1]))


def _mask(arr) -> np.ndarray:
    return pc.fill_null(arr, False).to_numpy(zero_copy_only=False)


def _only(ok: np.ndarray, arr: pa.Array) -> pa.Array:
    return pc.if_else(pa.array(ok, pa.bool_()), arr, pa.scalar(None, arr.type))


def _wide_type(digits: int) -> pa.DataType:
    """A decimal type that holds every integer of `digits` digits."""
    return pa.decimal128(digits, 0) if digits <= 38 else pa.decimal256(digits, 0)


def _from_wide(values: pa.Array, ok: np.ndarray, name: str) -> pa.Array:
    """In-range integral decimals (of a type `_wide_type` gave) as the integer type's array."""
    values = _only(ok, values)
    if name == "LARGEINT":
        # Range-checked already: the low 128 bits are the value (an unchecked narrowing).
        if pa.types.is_decimal256(values.type):
            return pc.cast(values, ARROW_TYPES[name], safe=False)
        return pc.cast(values, ARROW_TYPES[name])
    return pc.cast(values, ARROW_TYPES[name])


def _in_range(values: pa.Array, name: str) -> np.ndarray:
    """Which integral decimals lie in the type's range (NULL: no)."""
    lo, hi = INT_BOUNDS[name]
    t = values.type
    if max_digits(name) > t.precision:  # every value of t is in range
        return _mask(pc.is_valid(values))
    return _mask(
        pc.and_(
            pc.greater_equal(values, pa.scalar(Decimal(lo), t)),
            pc.less_equal(values, pa.scalar(Decimal(hi), t)),
        )
    )


# --- text ----------------------------------------------------------------------------------------


def parse_int_text(text: pa.Array, name: str) -> tuple[pa.Array, np.ndarray]:
    """Text to integer type `name` by Doris' rule: (values, converted), values NULL where not."""
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    if not pa.types.is_string(text.type):
        text = pc.cast(text, pa.string())
    parts = pc.extract_regex(text, INT_TEXT_REGEX)
    matched = _mask(pc.is_valid(parts))
    sign = pc.fill_null(parts.field(0), "")
    digits = pc.fill_null(parts.field(1), "")
    width = max_digits(name)
    lengths = pc.utf8_length(digits).to_numpy(zero_copy_only=False)
    candidate = matched & (lengths > 0) & (lengths <= width)
    signed = pc.binary_join_element_wise(sign, digits, "")
    wide = _wide_type(width + 1)
    values = pc.cast(_only(candidate, signed), wide)
    ok = candidate & _in_range(values, name)
    return _from_wide(values, ok, name), ok


# --- numbers -------------------------------------------------------------------------------------


def float_to_int(values: pa.Array, name: str) -> tuple[pa.Array, np.ndarray]:
    """Floating values truncated toward zero; NaN, ±inf and out-of-range ones do not convert."""
    lo, hi = INT_BOUNDS[name]
    f = pc.cast(values, pa.float64())
    whole = pc.trunc(f)
    # Doris: trunc(x) < -2^(N-1) or trunc(x) >= 2^(N-1) overflows; both bounds are exact doubles.
    ok = _mask(
        pc.and_(
            pc.and_(pc.is_finite(f), pc.greater_equal(whole, float(lo))),
            pc.less(whole, float(hi + 1)),
        )
    )
    safe = _only(ok, whole)
    if name != "LARGEINT":
        return pc.cast(safe, ARROW_TYPES[name]), ok
    # Integral doubles up to 2^127 convert exactly through decimal256.
    return pc.cast(pc.cast(safe, pa.decimal256(76, 0), safe=False), ARROW_TYPES[name], safe=False), ok


def decimal_to_int(values: pa.Array, name: str) -> tuple[pa.Array, np.ndarray]:
    """Decimals truncated toward zero; out-of-range ones do not convert."""
    t = values.type
    # Rescaling to scale 0 without the safety check drops the fraction toward zero.
    whole_type = pa.decimal256(max(t.precision, 40), 0)
    whole = pc.cast(pc.cast(values, pa.decimal256(t.precision, t.scale)), whole_type, safe=False)
    ok = _mask(pc.is_valid(whole)) & _in_range(whole, name)
    return _from_wide(whole, ok, name), ok


def integer_to_int(values: pa.Array, name: str) -> tuple[pa.Array, np.ndarray]:
    """Integers (any width, signed or not) kept when in range."""
    wide = pc.cast(values, pa.decimal128(21, 0))
    ok = _mask(pc.is_valid(wide)) & _in_range(wide, name)
    return _from_wide(wide, ok, name), ok


def to_int(values: pa.Array, name: str) -> tuple[pa.Array, np.ndarray] | None:
    """Any array as integer type `name`: (values, converted); None for an input type this rule
    does not cover (dates, nested values: the caller decides)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    t = values.type
    if pa.types.is_null(t):
        return pa.nulls(len(values), ARROW_TYPES[name]), np.zeros(len(values), dtype=bool)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return parse_int_text(values, name)
    if pa.types.is_floating(t):
        return float_to_int(values, name)
    if pa.types.is_decimal(t):
        return decimal_to_int(values, name)
    if pa.types.is_integer(t):
        return integer_to_int(values, name)
    if pa.types.is_boolean(t):
        return integer_to_int(pc.cast(values, pa.int8()), name)
    return None


# --- SQL literals --------------------------------------------------------------------------------

# An exponent this large spells a number no integer type holds (Doris' DOUBLE overflows first).
_MAX_EXPONENT = 400


def plain_number_text(text: str) -> str:
    """A numeric SQL literal ("1e+16", "1.5E3", "-20.50") spelled without an exponent, so the
    text rule reads it as the number Doris casts: a DOUBLE or DECIMAL literal into an integer
    column is truncated ("1.5e3" → "1500" → 1500). Text it cannot spell out is returned as is."""
    if "e" not in text and "E" not in text:
        return text
    try:
        value = Decimal(text)
    except InvalidOperation:
        return text
    if not value.is_finite() or abs(value.adjusted()) > _MAX_EXPONENT:
        return text
    return format(value, "f")
