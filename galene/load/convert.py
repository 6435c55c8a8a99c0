"""Doris type conversion: values into a column's type under Doris' rules, on whole Arrow columns.

Owns the one rule set every load path converts with — a stream-load body's text (CSV, JSON),
typed source columns (Parquet), the results of load expressions, and the rows of a query the
engine's write tasks store (INSERT … SELECT, CTAS, UPDATE; `galene.load.parse.convert_arrow`):

* `convert_strings`: text into a column type, marking values that do not convert (`bad`) and
  strings longer than the column allows (`too_long`, in bytes). Integers follow Doris' integer
  rule, whose home is `galene.common.intcast`; decimals round half away from zero at the
  column's scale and fail past its integer digits; dates and datetimes take Doris' spellings
  (`2024/1/31`, `20240131`, `2024-01-31T10:00`) and are checked against the calendar.
  JSON / VARIANT and IPV4 / IPV6 text is validated and normalized (`galene.load.text_types`),
  ARRAY / MAP / STRUCT text is decoded and built by walking the type tree, each leaf level
  converted by these same rules (`galene.load.nested`), BITMAP text is bitmap_from_string's,
  DECIMAL past 38 digits is decimal256.
* `coerce`: any Arrow array into a column type (numbers by the integer rule, decimals through
  their text, lists / maps / structs level by level, aggregate states (BITMAP lists sorted and
  deduplicated, HLL sketch bytes, QUANTILE_STATE doubles) to their storage forms, everything
  else by Arrow's cast or through `to_text`).
* `to_text`: a value as Doris prints it (datetimes without a zero fraction, booleans as 1/0).

Everything is vectorized (pyarrow.compute and numpy); no Python loop runs over rows (the
nested builders iterate with C-level `map` over a level's values; only text in a spelling
that is not JSON, or a JSON column holding invalid JSON, is looked at value by value).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from galene.common import intcast
from galene.common.errors import LoadError
from galene.common.types import MAX_DECIMAL_PRECISION, ColumnType
from galene.load import nested, text_types

Value = pa.Array | pa.ChunkedArray | pa.Scalar

_TRUE_TEXTS = ["true", "1"]
_FALSE_TEXTS = ["false", "0"]


@dataclass
class Conversion:
    values: pa.Array  # target Arrow type; NULL where the source was NULL or could not be converted
    bad: np.ndarray | None  # non-null source value that could not be converted (None = none)
    too_long: np.ndarray | None  # string longer than the column allows (None = none)


def bool_mask(arr) -> np.ndarray:
    """A boolean Arrow array as a numpy mask, NULL counted as False."""
    return pc.fill_null(arr, False).to_numpy(zero_copy_only=False)


def null_of(t: pa.DataType) -> pa.Scalar:
    return pa.scalar(None, t)


def _only(valid: np.ndarray, arr: pa.Array) -> pa.Array:
    """`arr` with entries outside `valid` set to NULL, so a cast only sees convertible text."""
    return pc.if_else(pa.array(valid), arr, null_of(arr.type))


def convert_strings(text: pa.Array, ctype: ColumnType) -> Conversion:
    """Convert a string array to `ctype` with Doris rules, marking values that do not convert."""
    name = ctype.name
    arrow_type = ctype.to_arrow()
    if name in _TEXT_FORMS:
        if isinstance(text, pa.ChunkedArray):
            text = text.combine_chunks()
        values, bad = _TEXT_FORMS[name](text, ctype)
        return Conversion(values, bad if bad.any() else None, None)
    if ctype.is_nested:
        if isinstance(text, pa.ChunkedArray):
            text = text.combine_chunks()
        fast = text_types.json_column(text, ctype)
        if fast is not None:
            values, bad = nested.from_arrow(fast, ctype, _leaf)
        else:
            objs = text_types.decode_nested_values(text)
            values, bad = nested.from_objects(objs, ctype, _leaf)
        return Conversion(values, bad if bad.any() else None, None)
    if ctype.is_string:
        too_long = None
        if name in ("CHAR", "VARCHAR") and len(text):
            # Doris lengths are bytes, not characters.
            over = bool_mask(pc.greater(pc.binary_length(text), ctype.length))
            too_long = over if over.any() else None
        return Conversion(text, None, too_long)

    quick = _quick_cast(text, ctype, arrow_type)
    if quick is not None:
        return Conversion(quick, None, None)
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    present = bool_mask(pc.is_valid(text))
    trimmed = pc.utf8_trim_whitespace(text)
    if ctype.is_integer:
        # Doris' integer rule (its own whitespace set, the fractional suffix): galene.common.intcast.
        values, ok = intcast.parse_int_text(text, name)
    elif name in ("FLOAT", "DOUBLE"):
        values, ok = _to_float(trimmed, arrow_type)
    elif name == "DECIMAL":
        values, ok = _to_decimal(trimmed, ctype.precision, ctype.scale, arrow_type)
    elif name == "BOOLEAN":
        lowered = pc.utf8_lower(trimmed)
        is_true = bool_mask(pc.is_in(lowered, pa.array(_TRUE_TEXTS)))
        is_false = bool_mask(pc.is_in(lowered, pa.array(_FALSE_TEXTS)))
        ok = is_true | is_false
        values = pa.array(is_true, pa.bool_(), mask=~ok)
    elif name in ("DATE", "DATETIME"):
        values, ok = _to_temporal(trimmed, name, ctype.precision)
    else:  # pragma: no cover - every Doris type is handled above
        raise LoadError(f"unsupported column type {ctype.to_desc()}")
    bad = present & ~ok
    return Conversion(values, bad if bad.any() else None, None)


def _quick_cast(text, ctype: ColumnType, arrow_type: pa.DataType):
    """Arrow's own cast when every value converts exactly; None when any does not.

    Arrow's parsers accept a subset of what Doris accepts (ISO dates, plain numbers), so a
    clean column costs one cast; the mask-building converters run only for columns with a
    value Arrow refuses.
    """
    if ctype.name in ("BOOLEAN", "LARGEINT"):
        # Arrow's bool cast has its own idea of true/false spellings; its decimal cast refuses
        # LARGEINT's 39-digit values and wraps 2^127 around to -2^127.
        return None
    if ctype.is_integer and _has_hex(text):
        return None
    try:
        values = pc.cast(text, arrow_type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if ctype.name == "DATETIME":
        values = truncate_datetime(values, ctype.precision)
    return values


def _has_hex(text) -> bool:
    """Whether a value might be hex ("0x1F"): Arrow's integer parser reads it, Doris' does not."""
    return bool(len(text)) and pc.any(pc.match_substring(text, "x", ignore_case=True)).as_py() is True


_FLOAT_RE = r"^[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|(?i:inf|infinity|nan))$"


def _to_float(text: pa.Array, arrow_type: pa.DataType) -> tuple[pa.Array, np.ndarray]:
    ok = bool_mask(pc.match_substring_regex(text, _FLOAT_RE))
    values = pc.cast(_only(ok, text), arrow_type)
    return values, ok


_DECIMAL_RE = r"^(?P<sign>[+-]?)0*(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?$"


def _to_decimal(text: pa.Array, precision: int, scale: int, arrow_type) -> tuple[pa.Array, np.ndarray]:
    """Decimal text with Doris semantics: too many integer digits fails, extra fraction rounds."""
    has_digit = bool_mask(pc.match_substring_regex(text, r"[0-9]"))
    parts = pc.extract_regex(text, _DECIMAL_RE)
    shape_ok = has_digit & bool_mask(pc.is_valid(parts))
    parts = pc.fill_null(parts, pa.scalar({"sign": "", "int": "", "frac": ""}, parts.type))
    sign, integer, frac = parts.field("sign"), parts.field("int"), parts.field("frac")
    int_digits = pc.utf8_length(integer).to_numpy(zero_copy_only=False)
    ok = shape_ok & (int_digits <= precision - scale)
    # Keep one extra fraction digit and round half away from zero on it (Doris DECIMALV3),
    # in a type two digits wider so that 99.995 -> 100.00 does not overflow the rounding.
    rounding = precision <= 74
    kept = scale + 1 if rounding else scale
    if kept:
        frac_kept = pc.utf8_slice_codeunits(pc.utf8_rpad(frac, width=kept, padding="0"), 0, kept)
        normal = pc.binary_join_element_wise(
            sign, pc.utf8_lpad(integer, width=1, padding="0"), ".", frac_kept, ""
        )
    else:
        normal = pc.binary_join_element_wise(sign, pc.utf8_lpad(integer, width=1, padding="0"), "")
    wide = _decimal(precision + 2, kept) if rounding else _decimal(precision, kept)
    values = pc.cast(_only(ok, normal), wide)
    if rounding:
        values = pc.round(values, ndigits=scale, round_mode="half_towards_infinity")
        limit = pa.scalar(Decimal(10) ** (precision - scale), wide)
        ok = ok & bool_mask(pc.less(pc.abs(values), limit))
        values = _only(ok, values)
    return pc.cast(values, arrow_type), ok


def _decimal(precision: int, scale: int) -> pa.DataType:
    if precision <= MAX_DECIMAL_PRECISION:
        return pa.decimal128(precision, scale)
    return pa.decimal256(precision, scale)


_TEMPORAL_RE = (
    r"^(?P<y>[0-9]{4})[-/](?P<m>[0-9]{1,2})[-/](?P<d>[0-9]{1,2})"
    r"(?:[ T](?P<H>[0-9]{1,2})(?::(?P<M>[0-9]{1,2})(?::(?P<S>[0-9]{1,2})(?:\.(?P<f>[0-9]*))?)?)?)?$"
)


_FIXED_TEMPORAL_RE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(?: [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{0,9})?)?$"
_FIELDS = ("y", "m", "d", "H", "M", "S", "f")
# Where each field sits in the common fixed-width form 'YYYY-MM-DD HH:MM:SS.ffffff'.
_FIXED_SLICES = {
    "y": (0, 4),
    "m": (5, 7),
    "d": (8, 10),
    "H": (11, 13),
    "M": (14, 16),
    "S": (17, 19),
    "f": (20, 26),
}


def _digits_to_int(texts) -> np.ndarray:
    padded = pc.utf8_lpad(pc.fill_null(texts, ""), width=1, padding="0")
    return pc.cast(padded, pa.int64()).to_numpy(zero_copy_only=False)


def _frac_to_micros(texts) -> np.ndarray:
    six = pc.utf8_slice_codeunits(pc.utf8_rpad(pc.fill_null(texts, ""), width=6, padding="0"), 0, 6)
    return pc.cast(six, pa.int64()).to_numpy(zero_copy_only=False)


def _temporal_fields(text: pa.Array) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(matched, field arrays) of date/datetime text; 'f' is already in microseconds.

    The fixed-width form is cut by position (cheap kernels); only the other rows go through
    the capturing regex, which is several times slower.
    """
    n = len(text)
    fixed = bool_mask(pc.match_substring_regex(text, _FIXED_TEMPORAL_RE))
    fields = {k: np.zeros(n, dtype=np.int64) for k in _FIELDS}
    if fixed.any():
        only_fixed = _only(fixed, text)
        for key, (start, stop) in _FIXED_SLICES.items():
            piece = pc.utf8_slice_codeunits(only_fixed, start, stop)
            fields[key][:] = _frac_to_micros(piece) if key == "f" else _digits_to_int(piece)
    matched = fixed.copy()
    others = np.flatnonzero(~fixed & bool_mask(pc.is_valid(text)))
    if others.size:
        subset = text.take(pa.array(others))
        parts = pc.extract_regex(subset, _TEMPORAL_RE)
        ok = bool_mask(pc.is_valid(parts))
        parts = pc.fill_null(parts, pa.scalar({k: "" for k in _FIELDS}, parts.type))
        for key in _FIELDS:
            child = parts.field(key)
            fields[key][others] = _frac_to_micros(child) if key == "f" else _digits_to_int(child)
        matched[others] = ok
    return matched, fields


def _to_temporal(text: pa.Array, name: str, precision: int) -> tuple[pa.Array, np.ndarray]:
    # Compact forms Doris accepts: 20240131 and 20240131123456.
    text = pc.replace_substring_regex(text, r"^([0-9]{4})([0-9]{2})([0-9]{2})$", r"\1-\2-\3")
    text = pc.replace_substring_regex(
        text, r"^([0-9]{4})([0-9]{2})([0-9]{2})([0-9]{2})([0-9]{2})([0-9]{2})$", r"\1-\2-\3 \4:\5:\6"
    )
    shape_ok, f = _temporal_fields(text)
    y, m, d, hh, mm, ss = f["y"], f["m"], f["d"], f["H"], f["M"], f["S"]
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    month_days = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int64)
    dim = month_days[np.clip(m - 1, 0, 11)] + ((m == 2) & leap)
    ok = shape_ok & (m >= 1) & (m <= 12) & (d >= 1) & (d <= dim) & (hh <= 23) & (mm <= 59) & (ss <= 59)
    days = days_from_civil(y, m, d)
    if name == "DATE":
        return pa.array(days.astype(np.int32), pa.date32(), mask=~ok), ok
    micros = days * 86_400_000_000 + ((hh * 60 + mm) * 60 + ss) * 1_000_000 + f["f"]
    step = 10 ** (6 - precision)
    if step > 1:
        micros = micros - micros % step
    return pa.array(micros, pa.timestamp("us"), mask=~ok), ok


def days_from_civil(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates (H. Hinnant's algorithm), vectorized."""
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    mp = np.where(m > 2, m - 3, m + 9)
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def truncate_datetime(arr, precision: int):
    """Drop fractional seconds beyond a DATETIME(p) column's precision (timestamp[us] in/out)."""
    step = 10 ** (6 - precision)
    if step == 1 or arr.null_count == len(arr) or _whole_steps(arr, step):
        return arr
    as_int = pc.cast(arr, pa.int64())
    values = (
        as_int.to_numpy(zero_copy_only=False) if arr.null_count == 0 else pc.fill_null(as_int, 0).to_numpy()
    )
    if not (values % step).any():
        return arr
    mask = None if arr.null_count == 0 else bool_mask(pc.is_null(arr))
    return pa.array(values - values % step, pa.timestamp("us"), mask=mask)


def _whole_steps(arr, step: int) -> bool:
    """True when a null-free timestamp column has no value off a `step` boundary (read off its
    data buffers: no compute calls, which dominate on tiny bodies). False = look closer."""
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    for chunk in chunks:
        if not len(chunk):
            continue
        if chunk.null_count or not pa.types.is_timestamp(chunk.type):
            return False
        values = np.frombuffer(chunk.buffers()[1], dtype=np.int64, count=len(chunk), offset=chunk.offset * 8)
        if (values % step).any():
            return False
    return True


def one_chunk(arr):
    """A column as one contiguous array (a ChunkedArray's chunks combined, copied only if needed)."""
    if isinstance(arr, pa.ChunkedArray):
        return arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    return arr


def _is_str(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _cast(v: Value, t: pa.DataType) -> Value:
    return v if v.type == t else pc.cast(v, t)


# --- values into column types ---------------------------------------------------------------------


def coerce(values: pa.Array, ctype: ColumnType):
    """Any Arrow array converted to a column type (bad values -> NULL + mask): typed source
    columns (Parquet, a query's rows) and the results of load expressions."""
    t = values.type
    arrow_type = ctype.to_arrow()
    n = len(values)
    if pa.types.is_null(t):
        return Conversion(pa.nulls(n, arrow_type), None, None)
    if ctype.is_nested:
        out, bad = nested.from_arrow(values, ctype, _leaf)
        return Conversion(out, bad if bad.any() else None, None)
    if ctype.is_state and not _is_str(t):
        out, bad = _state_from_arrow(values, ctype)
        return Conversion(out, bad if bad.any() else None, None)
    if _is_str(t):
        return convert_strings(_cast(values, pa.string()), ctype)
    if ctype.name == "IPV4" and pa.types.is_integer(t):
        out, ok = text_types.ipv4_from_int(values)
        bad = ~ok
        return Conversion(out, bad if bad.any() else None, None)
    if ctype.name in ("JSON", "VARIANT") and pa.types.is_nested(t):
        # An engine's array / map / struct into a JSON column: its JSON text.
        return Conversion(text_types.nested_json_text(values), None, None)
    if ctype.is_string:
        return convert_strings(to_text(values), ctype)
    if t == arrow_type:
        if ctype.name == "DATETIME":
            values = truncate_datetime(values, ctype.precision)
        return Conversion(values, None, None)
    if ctype.is_integer:
        # Doris' integer rule for numbers too (truncation toward zero, no saturation).
        converted = intcast.to_int(values, ctype.name)
        if converted is not None:
            out, ok = converted
            bad = pc.is_valid(values).to_numpy(zero_copy_only=False) & ~ok
            return Conversion(out, bad if bad.any() else None, None)
    if ctype.name in ("DATE", "DATETIME") and (pa.types.is_date(t) or pa.types.is_timestamp(t)):
        out = pc.cast(values, arrow_type)
        if ctype.name == "DATETIME":
            out = truncate_datetime(out, ctype.precision)
        return Conversion(out, None, None)
    if pa.types.is_boolean(t) and (ctype.is_numeric or ctype.name == "BOOLEAN"):
        return Conversion(pc.cast(pc.cast(values, pa.int8()), arrow_type), None, None)
    if ctype.name == "DECIMAL" or pa.types.is_decimal(t):
        # Through text: one place (convert_strings) owns Doris' decimal rounding and range rules.
        return convert_strings(pc.cast(values, pa.string()), ctype)
    try:
        return Conversion(pc.cast(values, arrow_type), None, None)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return convert_strings(to_text(values), ctype)


def _leaf(values: pa.Array, ctype: ColumnType) -> tuple[pa.Array, np.ndarray | None]:
    """One level's leaves of a nested value converted by the scalar rules (galene.load.nested)."""
    conv = coerce(one_chunk(values), ctype)
    if conv.too_long is None:
        return conv.values, conv.bad
    return conv.values, conv.too_long if conv.bad is None else conv.bad | conv.too_long


def _to_bigint(values: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """BITMAP elements as BIGINT by Doris' integer rule: (values, ok)."""
    if _is_str(values.type):
        out, ok = intcast.parse_int_text(_cast(values, pa.string()), "BIGINT")
    else:
        converted = intcast.to_int(values, "BIGINT")
        if converted is None:
            return pa.nulls(len(values), pa.int64()), np.zeros(len(values), bool)
        out, ok = converted
    return out, ok | ~bool_mask(pc.is_valid(values))


def _state_from_arrow(values: pa.Array, ctype: ColumnType) -> tuple[pa.Array, np.ndarray]:
    """Typed values (an engine's result, a Parquet column) into an aggregate-state column."""
    t = values.type
    n = len(values)
    present = bool_mask(pc.is_valid(values))
    if ctype.name == "BITMAP":
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return nested.bitmap_from_lists(values, _to_bigint)
        if pa.types.is_integer(t) or pa.types.is_decimal(t):
            # One number: to_bitmap's value (negative or out of range: NULL, as to_bitmap gives).
            out, ok = _to_bigint(values)
            ok &= bool_mask(pc.greater_equal(pc.fill_null(out, 0), 0))
            valid = present & ok
            rows = np.flatnonzero(valid)
            kept = out.take(pa.array(rows, pa.int64()))
            return nested.normalize_bitmap(rows, kept, n, valid), np.zeros(n, bool)
    elif ctype.name == "HLL":
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            return _cast(values, pa.binary()), np.zeros(n, bool)
    elif ctype.name == "QUANTILE_STATE":
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return nested.from_arrow(values, ColumnType.array(ColumnType(name="DOUBLE")), _leaf)
        if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
            doubles = pc.cast(values, pa.float64())
            offsets = pa.array(np.arange(n + 1, dtype=np.int32), pa.int32())
            return pa.ListArray.from_arrays(offsets, doubles, mask=pa.array(~present)), np.zeros(n, bool)
    return pa.nulls(n, ctype.to_arrow()), present


def _state_text(text: pa.Array, ctype: ColumnType) -> tuple[pa.Array, np.ndarray]:
    """Text into an aggregate-state column: BITMAP reads bitmap_from_string's form; HLL and
    QUANTILE_STATE have no text form (a load builds them with hll_hash / to_quantile_state).

    **Departure**: Doris reads a BITMAP field's text as its binary serialization
    (DataTypeBitMapSerDe: `BitmapValue::deserialize`), which a text body rarely holds; Galene,
    which has no such form, reads the comma-separated values (`5,3,5` -> {3, 5})."""
    if ctype.name == "BITMAP":
        return nested.bitmap_text(text)
    return pa.nulls(len(text), ctype.to_arrow()), bool_mask(pc.is_valid(text))


def _checked_text(fn):
    def convert(text: pa.Array, ctype: ColumnType) -> tuple[pa.Array, np.ndarray]:
        values, ok = fn(text)
        return values, ~ok

    return convert


# Types whose text has a form of its own (galene.load.text_types): (values, bad) from text.
_TEXT_FORMS = {
    "JSON": _checked_text(text_types.json_text),
    "VARIANT": _checked_text(text_types.json_text),
    "IPV4": _checked_text(text_types.ipv4_text),
    "IPV6": _checked_text(text_types.ipv6_text),
    "BITMAP": _state_text,
    "HLL": _state_text,
    "QUANTILE_STATE": _state_text,
}


# --- values as text -------------------------------------------------------------------------------


def to_text(v: Value) -> Value:
    """A value as Doris prints it: datetimes without a zero fraction, booleans as 1/0."""
    t = v.type
    if _is_str(t):
        return _cast(v, pa.string())
    if pa.types.is_timestamp(t):
        if isinstance(v, pa.Scalar):
            return pa.scalar(None if not v.is_valid else _format_ts(v.as_py()), pa.string())
        micros = pc.cast(v, pa.int64())
        fraction = pc.subtract(
            micros, pc.multiply(pc.floor(pc.divide(pc.cast(micros, pa.float64()), 1e6)), 1e6)
        )
        has_fraction = bool(pc.any(pc.not_equal(fraction, 0)).as_py())
        fmt = "%Y-%m-%d %H:%M:%S.%f" if has_fraction else "%Y-%m-%d %H:%M:%S"
        text = strftime(v, fmt)
        return text
    if pa.types.is_boolean(t):
        return pc.cast(_cast(v, pa.int8()), pa.string())
    return pc.cast(v, pa.string())


def _format_ts(value: _dt.datetime) -> str:
    if value.microsecond:
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    return value.strftime("%Y-%m-%d %H:%M:%S")


def strftime(value: Value, fmt: str) -> Value:
    """Timestamps as text with a Python/strftime format (sqlglot already turned %i into %M)."""
    if isinstance(value, pa.Scalar):
        return pa.scalar(None if not value.is_valid else value.as_py().strftime(fmt), pa.string())
    value = _cast(value, pa.timestamp("us"))
    pieces = []
    for i, piece in enumerate(fmt.split("%f")):
        if i:
            micros = pc.cast(value, pa.int64())
            frac = pc.subtract(micros, pc.multiply(pc.divide(micros, 1_000_000), 1_000_000))
            frac = pc.if_else(pc.less(frac, 0), pc.add(frac, 1_000_000), frac)
            pieces.append(pc.utf8_lpad(pc.cast(frac, pa.string()), width=6, padding="0"))
        if piece:
            text = pc.strftime(value, format=piece)
            if "%S" in piece:
                # Arrow prints the fraction after %S for sub-second units; Doris does not.
                text = pc.replace_substring_regex(text, r"(:?[0-9]{2})\.[0-9]+", r"\1")
            pieces.append(text)
    if not pieces:
        return pc.cast(pa.nulls(len(value)), pa.string())
    if len(pieces) == 1:
        return pieces[0]
    return pc.binary_join_element_wise(*pieces, "")
