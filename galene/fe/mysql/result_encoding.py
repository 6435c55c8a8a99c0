"""How a result looks on the MySQL wire: its column definitions and its row values.

* **Column definitions** follow Doris' `MysqlSerializer.writeField`: the type of
  `PrimitiveType.toMysqlType`, the length of `getMysqlTypeLength` (DECIMAL p+1, or p+2 with a
  scale; DATETIME 19 whatever its precision; strings and LARGEINT 255), the decimals of
  `getMysqlDecimals` (DECIMAL's scale, DATETIME(p)'s p, 31 for FLOAT/DOUBLE) and flags 0.
  LARGEINT, ARRAY / MAP / STRUCT, IPV4 / IPV6 and the aggregate states are utf8
  MYSQL_TYPE_STRING (`toMysqlType`'s default; no MySQL integer holds 128 bits), JSON and VARIANT
  MYSQL_TYPE_JSON, TIME(p) MYSQL_TYPE_TIME with p decimals. Departure: STRING stays VAR_STRING
  with Galene's utf8mb4 (Doris sends STRING as a binary-charset BLOB, which Python clients read
  as bytes).
* **Text rows**: each value rendered as Doris prints it — `arrow_text` a whole Arrow column at
  once (nested values by `nested_text`), `python_text` one Python value (small results built in
  the FE). BITMAP / HLL / QUANTILE_STATE values are NULL, as Doris sends them by default.
* **Binary rows** (COM_STMT_EXECUTE): `binary_payloads` encodes an Arrow batch column by column
  with pyarrow/numpy — fixed-width integers and floats, DATE / DATETIME as the protocol's
  length-prefixed structs, TIME as its struct (sign, days, h, m, s, µs), everything else (DECIMAL, LARGEINT, strings) as length-encoded text
  from `arrow_text`, so no value passes through Python's `decimal` (whose default context holds
  28 digits) — and joins each row's pieces in one pyarrow call; `frame_packets` puts the packet
  headers in front, so a batch becomes wire bytes without a Python step per row or per value.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from mysql_mimic.charset import CharacterSet
from mysql_mimic.types import ColumnDefinition
from mysql_mimic.types import ColumnType as MysqlType

from galene.common.types import ColumnType
from galene.fe.mysql.nested_text import is_nested_arrow, nested_text

# Rows per batch when encoding a result: bounds memory and lets other sessions run.
ROW_BATCH = 4096
# The largest payload of one wire packet; a longer payload continues in the next packets.
MAX_PACKET = 0xFFFFFF

# ---------------------------------------------------------------------------------------
# Column definitions
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MysqlColumnSpec:
    mysql_type: MysqlType
    length: int
    decimals: int
    flags: ColumnDefinition
    charset: CharacterSet


_NO_FLAGS = ColumnDefinition(0)  # Doris sends no column flags
_NOT_FIXED_DECIMALS = 31  # MySQL's marker for "floating point, no fixed scale"
_STRING_LENGTH = 255  # Doris' column length of strings and LARGEINT

# Doris type -> (MySQL type, column length) of the types whose definition has no parameter.
_FIXED = {
    "BOOLEAN": (MysqlType.TINY, 1),
    "TINYINT": (MysqlType.TINY, 4),
    "SMALLINT": (MysqlType.SHORT, 6),
    "INT": (MysqlType.LONG, 11),
    "BIGINT": (MysqlType.LONGLONG, 20),
    "DATE": (MysqlType.DATE, 10),
}
# Doris types sent as MYSQL_TYPE_STRING (PrimitiveType.toMysqlType's default): their text.
_STRING_TYPED = ("ARRAY", "MAP", "STRUCT", "IPV4", "IPV6", "BITMAP", "HLL", "QUANTILE_STATE")


def mysql_column_spec(ctype: ColumnType) -> MysqlColumnSpec:
    """The MySQL column definition Doris sends for a column of type `ctype`."""
    n = ctype.name
    binary, text = CharacterSet.binary, CharacterSet.utf8mb4
    if n in _FIXED:
        mysql_type, length = _FIXED[n]
        return MysqlColumnSpec(mysql_type, length, 0, _NO_FLAGS, binary)
    if n == "LARGEINT" or n in _STRING_TYPED:
        return MysqlColumnSpec(MysqlType.STRING, _STRING_LENGTH, 0, _NO_FLAGS, text)
    if n in ("JSON", "VARIANT"):
        return MysqlColumnSpec(MysqlType.JSON, _STRING_LENGTH, 0, _NO_FLAGS, text)
    if n == "TIME":
        return MysqlColumnSpec(MysqlType.TIME, _STRING_LENGTH, ctype.precision, _NO_FLAGS, binary)
    if n == "FLOAT":
        return MysqlColumnSpec(MysqlType.FLOAT, 12, _NOT_FIXED_DECIMALS, _NO_FLAGS, binary)
    if n == "DOUBLE":
        return MysqlColumnSpec(MysqlType.DOUBLE, 22, _NOT_FIXED_DECIMALS, _NO_FLAGS, binary)
    if n == "DECIMAL":
        length = ctype.precision + (2 if ctype.scale else 1)
        return MysqlColumnSpec(MysqlType.NEWDECIMAL, length, ctype.scale, _NO_FLAGS, binary)
    if n == "DATETIME":
        return MysqlColumnSpec(MysqlType.DATETIME, 19, ctype.precision, _NO_FLAGS, binary)
    return MysqlColumnSpec(MysqlType.VAR_STRING, _STRING_LENGTH, 0, _NO_FLAGS, text)


# ---------------------------------------------------------------------------------------
# Text values
# ---------------------------------------------------------------------------------------


def text_row_batches(
    types: Sequence[ColumnType], rows: list[tuple] | pa.Table | None
) -> Iterator[list[tuple]]:
    """Rows as text-protocol values (str/bytes/None), in bounded batches."""
    if rows is None:
        return
    if isinstance(rows, pa.Table):
        if rows.num_columns != len(types):
            raise ValueError(f"Result has {rows.num_columns} columns but {len(types)} column definitions")
        for batch in rows.to_batches(max_chunksize=ROW_BATCH):
            texts = [arrow_text(batch.column(i), types[i]).to_pylist() for i in range(len(types))]
            yield list(zip(*texts))
        return
    for start in range(0, len(rows), ROW_BATCH):
        yield [
            tuple(python_text(v, t) for v, t in zip(row, types)) for row in rows[start : start + ROW_BATCH]
        ]


def arrow_text(array: pa.Array, ctype: ColumnType) -> pa.Array:
    """Vectorized MySQL text rendering of one Arrow column (nulls stay null)."""
    t = array.type
    if ctype.is_state:
        # Doris sends an aggregate state (BITMAP, HLL, QUANTILE_STATE) as NULL unless the
        # session asks for its serialized form (return_object_data_as_binary).
        return pa.nulls(len(array), pa.string())
    if pa.types.is_dictionary(t):
        return arrow_text(array.dictionary_decode(), ctype)
    if is_nested_arrow(t):
        return nested_text(array, ctype, arrow_text)
    if pa.types.is_time(t):
        return _time_text(array, ctype.precision if ctype.name == "TIME" else 6)
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    ):
        return array
    if pa.types.is_null(t):
        return pa.nulls(len(array), pa.string())
    if pa.types.is_boolean(t):
        return pc.cast(pc.cast(array, pa.int8()), pa.string())
    if pa.types.is_timestamp(t):
        naive = array.cast(pa.timestamp(t.unit)) if t.tz else array
        precision = ctype.precision if ctype.name == "DATETIME" else 0
        if precision == 0:
            seconds = naive.cast(pa.timestamp("s"), safe=False)
            # A computed DATETIME(6) (STR_TO_DATE with %f, …) arrives without its scale: its
            # fractions are printed, not dropped (a DATETIME(0) column never has any).
            micros = naive.cast(pa.timestamp("us"), safe=False)
            if not pc.any(pc.not_equal(micros, seconds.cast(pa.timestamp("us")))).as_py():
                return pc.cast(seconds, pa.string())
            precision = 6
        full = pc.cast(naive.cast(pa.timestamp("us"), safe=False), pa.string())
        return pc.utf8_slice_codeunits(full, 0, 20 + precision)
    if pa.types.is_decimal(t) and t.scale > 6:
        return _plain_decimal_text(array)
    if (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_date(t)
        or pa.types.is_time(t)
    ):
        return pc.cast(array, pa.string())
    return pc.cast(array, pa.string())


def _time_text(array: pa.Array, precision: int) -> pa.Array:
    """An Arrow time of day as Doris prints TIME(p): `HH:MM:SS` and p fraction digits."""
    full = pc.cast(array.cast(pa.time64("us")), pa.string())  # HH:MM:SS.ffffff
    return pc.utf8_slice_codeunits(full, 0, 9 + precision if precision else 8)


def _plain_decimal_text(array: pa.Array) -> pa.Array:
    """DECIMAL text without exponents. Arrow prints a decimal whose adjusted exponent is below
    -6 in scientific notation (a DECIMAL(38, 10) zero as `0E-10`, 1e-10 as `1E-10`); Doris
    prints `0.0000000000`. Those are the values between -1 and 1: moved by one away from zero
    they print plainly as `±1.…`, and the 1 becomes 0."""
    t = array.type
    texts = pc.cast(array, pa.string())
    if t.scale > 73:  # (no room for the shift below in 76 digits)
        return texts
    # Only the values between -1 and 1 are shifted, in a type of scale + 2 digits, so that a
    # DECIMAL(76, s) (decimal256, enable_decimal256) has room for the shift too.
    between = pc.less(pc.abs(array), pa.scalar(Decimal(1), pa.decimal256(t.scale + 1, t.scale)))
    wide_type = pa.decimal256(t.scale + 2, t.scale)
    wide = pc.if_else(between, array, pa.scalar(Decimal(0), t)).cast(wide_type)
    one, zero = pa.scalar(Decimal(1), wide_type), pa.scalar(Decimal(0), wide_type)
    negative = pc.less(wide, zero)
    shifted = pc.cast(pc.if_else(negative, pc.subtract(wide, one), pc.add(wide, one)), pa.string())
    plain = pc.if_else(
        negative, pc.utf8_replace_slice(shifted, 1, 2, "0"), pc.utf8_replace_slice(shifted, 0, 1, "0")
    )
    return pc.if_else(between, plain, texts)


def python_text(value: Any, ctype: ColumnType) -> str | bytes | None:
    """MySQL text rendering of one Python value."""
    if value is None or ctype.is_state:
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        precision = ctype.precision if ctype.name == "DATETIME" else (6 if value.microsecond else 0)
        return text + "." + f"{value.microsecond:06d}"[:precision] if precision else text
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        if ctype.name == "DECIMAL" and value.is_finite():
            # Formatting at a scale is exact at any number of digits; quantize() would obey the
            # default context, which fails past 28.
            return format(value, f".{ctype.scale}f")
        return format(value, "f")
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, default=str, ensure_ascii=False)
    return str(value)


# ---------------------------------------------------------------------------------------
# Binary values
# ---------------------------------------------------------------------------------------

# MySQL types sent as fixed-width little-endian numbers, with the numpy type that writes them.
_FIXED_WIDTH = {
    MysqlType.TINY: (pa.int8(), np.dtype("<i1")),
    MysqlType.SHORT: (pa.int16(), np.dtype("<i2")),
    MysqlType.LONG: (pa.int32(), np.dtype("<i4")),
    MysqlType.LONGLONG: (pa.int64(), np.dtype("<i8")),
    MysqlType.FLOAT: (pa.float32(), np.dtype("<f4")),
    MysqlType.DOUBLE: (pa.float64(), np.dtype("<f8")),
}
_EMPTY = pa.scalar(b"", pa.large_binary())


@dataclass
class _Piece:
    """One column's bytes for each row of a batch (empty for a NULL)."""

    values: pa.Array  # large_binary, no nulls
    lengths: np.ndarray  # int64 byte length per row


def _ragged(matrix: np.ndarray, lengths: np.ndarray) -> _Piece:
    """Row i's first lengths[i] bytes of `matrix` (n x width, uint8) as a binary column."""
    n, width = matrix.shape
    lengths = lengths.astype(np.int64, copy=False)
    if n and (lengths == width).all():
        data = np.ascontiguousarray(matrix).reshape(-1)
    else:
        data = matrix[np.arange(width) < lengths[:, None]]
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    values = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(data))]
    )
    return _Piece(values, lengths)


def _little_endian(values: np.ndarray, width: int) -> np.ndarray:
    """n x width bytes: each value's low `width` bytes, little-endian."""
    return values.astype("<u8").view(np.uint8).reshape(-1, 8)[:, :width]


def _fixed_width(array: pa.Array, valid: np.ndarray, mysql_type: MysqlType) -> _Piece:
    arrow_type, dtype = _FIXED_WIDTH[mysql_type]
    numbers = (
        pc.fill_null(pc.cast(array, arrow_type), 0).to_numpy(zero_copy_only=False).astype(dtype, copy=False)
    )
    return _ragged(numbers.view(np.uint8).reshape(-1, dtype.itemsize), np.where(valid, dtype.itemsize, 0))


def _as_timestamp(array: pa.Array) -> pa.Array:
    t = array.type
    if pa.types.is_timestamp(t):
        naive = array.cast(pa.timestamp(t.unit)) if t.tz else array  # wall time, as arrow_text prints it
        return naive.cast(pa.timestamp("us"), safe=False)
    return pc.cast(array, pa.timestamp("us"))


def _date_fields(stamps: pa.Array) -> list[np.ndarray]:
    return [
        pc.fill_null(f(stamps), 0).to_numpy(zero_copy_only=False).astype(np.int64)
        for f in (pc.year, pc.month, pc.day)
    ]


def _date(array: pa.Array, valid: np.ndarray) -> _Piece:
    """DATE: length 4, then year (2 bytes), month, day."""
    year, month, day = _date_fields(_as_timestamp(array))
    matrix = np.empty((len(array), 5), np.uint8)
    matrix[:, 0] = 4
    matrix[:, 1:3] = _little_endian(year, 2)
    matrix[:, 3] = month
    matrix[:, 4] = day
    return _ragged(matrix, np.where(valid, 5, 0))


def _datetime(array: pa.Array, valid: np.ndarray, precision: int) -> _Piece:
    """DATETIME: length 7 (date and time) or 11 (and microseconds), as Doris sends it. The
    fraction is cut to the declared precision; a DATETIME declared without one (a computed
    timestamp the engine does not type) keeps what it has, as the text protocol prints it."""
    stamps = _as_timestamp(array)
    year, month, day = _date_fields(stamps)
    micros = pc.fill_null(stamps.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
    seconds, fraction = np.divmod(micros, 1_000_000)  # floor: right before 1970 too
    if precision:
        step = 10 ** (6 - precision)
        fraction = fraction // step * step
    in_day = seconds % 86400
    matrix = np.empty((len(array), 12), np.uint8)
    matrix[:, 0] = np.where(fraction != 0, 11, 7)
    matrix[:, 1:3] = _little_endian(year, 2)
    matrix[:, 3] = month
    matrix[:, 4] = day
    matrix[:, 5] = in_day // 3600
    matrix[:, 6] = in_day // 60 % 60
    matrix[:, 7] = in_day % 60
    matrix[:, 8:12] = _little_endian(fraction, 4)
    return _ragged(matrix, np.where(valid, matrix[:, 0].astype(np.int64) + 1, 0))


def _length_prefixes(lengths: np.ndarray, valid: np.ndarray) -> _Piece:
    """MySQL length-encoded integers: 1 byte below 251, else 0xFC/0xFD/0xFE and 2/3/8 bytes."""
    matrix = np.empty((len(lengths), 9), np.uint8)
    matrix[:, 1:9] = _little_endian(lengths, 8)
    matrix[:, 0] = np.select(
        [lengths < 251, lengths < 1 << 16, lengths < 1 << 24], [lengths, 0xFC, 0xFD], 0xFE
    ).astype(np.uint8)
    size = np.select([lengths < 251, lengths < 1 << 16, lengths < 1 << 24], [1, 3, 4], 9)
    return _ragged(matrix, np.where(valid, size, 0))


def _length_encoded_text(array: pa.Array, valid: np.ndarray, ctype: ColumnType) -> list[_Piece]:
    data = pc.fill_null(arrow_text(array, ctype).cast(pa.large_binary()), _EMPTY)
    lengths = pc.binary_length(data).to_numpy(zero_copy_only=False).astype(np.int64)
    return [_length_prefixes(lengths, valid), _Piece(data, lengths)]


def _column_pieces(array: pa.Array, valid: np.ndarray, ctype: ColumnType) -> list[_Piece]:
    mysql_type = mysql_column_spec(ctype).mysql_type
    if pa.types.is_null(array.type):
        return []
    if mysql_type in _FIXED_WIDTH:
        return [_fixed_width(array, valid, mysql_type)]
    if mysql_type == MysqlType.DATE:
        return [_date(array, valid)]
    if mysql_type == MysqlType.DATETIME:
        return [_datetime(array, valid, ctype.precision)]
    if mysql_type == MysqlType.TIME:
        return [_time(array, valid, ctype.precision)]
    return _length_encoded_text(array, valid, ctype)


_TIME_PATTERN = r"^(?P<sign>-?)(?P<h>\d+):(?P<m>\d{1,2}):(?P<s>\d{1,2})(?:\.(?P<f>\d{1,6}))?$"


def _time(array: pa.Array, valid: np.ndarray, precision: int) -> _Piece:
    """TIME: length 8 (sign, days, hours, minutes, seconds) or 12 (and microseconds). TIME
    values are text (`-838:59:59.5`, types.py) or, from an engine that has the type, times of day."""
    if pa.types.is_time(array.type):
        array = _time_text(array, 6)
    # (a text that is no TIME, which storage never holds, is sent as 00:00:00)
    parts = pc.extract_regex(pc.cast(array, pa.string()), _TIME_PATTERN)

    def field(name: str) -> np.ndarray:
        values = pc.if_else(pc.equal(pc.struct_field(parts, name), ""), "0", pc.struct_field(parts, name))
        return pc.fill_null(pc.cast(values, pa.int64()), 0).to_numpy(zero_copy_only=False)

    hours, minutes, seconds = field("h"), field("m"), field("s")
    digits = pc.fill_null(pc.utf8_length(pc.struct_field(parts, "f")), 0).to_numpy(zero_copy_only=False)
    micros = field("f") * 10 ** (6 - digits.astype(np.int64))
    if precision:
        step = 10 ** (6 - precision)
        micros = micros // step * step
    negative = pc.fill_null(pc.equal(pc.struct_field(parts, "sign"), "-"), False).to_numpy(
        zero_copy_only=False
    )
    matrix = np.zeros((len(array), 13), np.uint8)
    matrix[:, 0] = np.where(micros != 0, 12, 8)
    matrix[:, 1] = negative
    matrix[:, 2:6] = _little_endian(hours // 24, 4)
    matrix[:, 6] = hours % 24
    matrix[:, 7] = minutes
    matrix[:, 8] = seconds
    matrix[:, 9:13] = _little_endian(micros, 4)
    return _ragged(matrix, np.where(valid, matrix[:, 0].astype(np.int64) + 1, 0))


def binary_payloads(
    batch: pa.RecordBatch | pa.Table, types: Sequence[ColumnType]
) -> tuple[pa.Array, np.ndarray]:
    """Each row's binary-protocol payload (0x00, the NULL bitmap, the non-NULL values) as one
    large_binary array, and the payloads' lengths."""
    n = batch.num_rows
    if batch.num_columns != len(types):
        raise ValueError(f"Result has {batch.num_columns} columns but {len(types)} column definitions")
    bitmap = np.zeros((n, 1 + (len(types) + 9) // 8), np.uint8)  # 0x00, then the bitmap (offset 2)
    pieces: list[_Piece] = []
    for i, ctype in enumerate(types):
        array = batch.column(i)
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        if ctype.is_state:  # sent as NULL (arrow_text)
            valid = np.zeros(n, bool)
        else:
            valid = array.is_valid().to_numpy(zero_copy_only=False)
        bitmap[:, 1 + (i + 2) // 8] |= (~valid).astype(np.uint8) << ((i + 2) % 8)
        pieces.extend(_column_pieces(array, valid, ctype))
    pieces.insert(0, _ragged(bitmap, np.full(n, bitmap.shape[1], np.int64)))
    lengths = sum(p.lengths for p in pieces)
    if len(pieces) == 1:
        return pieces[0].values, lengths
    return pc.binary_join_element_wise(*(p.values for p in pieces), _EMPTY), lengths


def frame_packets(payloads: pa.Array, lengths: np.ndarray, first_sequence_id: int) -> pa.Buffer | None:
    """The payloads as consecutive wire packets (3-byte length, sequence id, payload) starting at
    `first_sequence_id`; None when one of them needs several packets (16 MB or more)."""
    n = len(payloads)
    if n and lengths.max() >= MAX_PACKET:
        return None
    headers = np.empty((n, 4), np.uint8)
    headers[:, 0:3] = _little_endian(lengths, 3)
    headers[:, 3] = (first_sequence_id + np.arange(n)) & 0xFF
    framed = pc.binary_join_element_wise(_ragged(headers, np.full(n, 4, np.int64)).values, payloads, _EMPTY)
    offsets = np.frombuffer(framed.buffers()[1], np.int64, n + 1, framed.offset * 8)
    return framed.buffers()[2][offsets[0] : offsets[n]]


def python_columns(rows: list[tuple], types: Sequence[ColumnType]) -> pa.Table:
    """Rows of Python values built in the FE (SHOW output, session answers) as an Arrow table the
    binary encoder takes: numbers and times typed as declared, the rest as their text."""
    arrays = []
    for i, ctype in enumerate(types):
        values = [row[i] for row in rows]
        mysql_type = mysql_column_spec(ctype).mysql_type
        if mysql_type in _FIXED_WIDTH:
            arrow_type = _FIXED_WIDTH[mysql_type][0]
            convert = float if pa.types.is_floating(arrow_type) else int
            arrays.append(pa.array([None if v is None else convert(v) for v in values], arrow_type))
        elif mysql_type in (MysqlType.DATE, MysqlType.DATETIME):
            stamps = [
                v if isinstance(v, datetime) or v is None
                else datetime.combine(v, datetime.min.time()) if isinstance(v, date)
                else datetime.fromisoformat(str(v))
                for v in values
            ]  # fmt: skip
            arrays.append(pa.array(stamps, pa.timestamp("us")))
        else:
            texts = [python_text(v, ctype) for v in values]
            arrays.append(
                pa.array([t.encode("utf-8") if isinstance(t, str) else t for t in texts], pa.large_binary())
            )
    return pa.Table.from_arrays(arrays, names=[f"c{i}" for i in range(len(types))])
