"""The CSV reader of a load: a body's bytes as source columns, with Doris' CSV rules.

Owns how a CSV body (`csv`, `csv_with_names`, `csv_with_names_and_types`) is read with pyarrow:
separators of any length (mapped onto the one byte and the line ends pyarrow splits on, and
back in the values), `enclose`/`escape`/`trim_double_quotes`, `skip_lines`, `\\N` as NULL, rows
with the wrong number of fields (rejected with Doris' reason), and fields that are not UTF-8
(only their rows are rejected, unless the body is binary data).

A fast path comes first: pyarrow converts straight to the column types, which costs about what
reading the file does; only when that conversion fails (a bad value anywhere), or the load has
expressions, or a value needs its original text back, is the body re-read as strings, which the
caller converts column by column with validity masks (`galene.load.convert`) and reasons.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from galene.catalog.model import Column
from galene.common.errors import LoadError
from galene.common.types import ColumnType
from galene.load.convert import convert_strings, one_chunk, truncate_datetime
from galene.load.options import LoadOptions
from galene.load.source import RowError, Source, SourcePlan

NULL_TEXT = "\\N"
# Readers hand pyarrow blocks of this size; each block is parsed on its own thread.
CSV_BLOCK_SIZE = 1 << 20


# Bytes that stand in for multi-byte separators while pyarrow reads (it splits on one byte
# for fields and on \n / \r for lines); each is used only if the body does not contain it.
_PLACEHOLDER_BYTES = [bytes([c]) for c in list(range(1, 9)) + [0x0B, 0x0C] + list(range(0x0E, 0x20))]


@dataclass
class _CsvShape:
    body: bytes  # the body with separators pyarrow understands
    delimiter: str  # one byte, as pyarrow wants it
    # (placeholder, original) replacements that give field values back their original text,
    # applied in order; empty when no field can contain a placeholder (the fast path is safe).
    restore: list[tuple[str, str]]
    display: list[tuple[str, str]]  # placeholder -> original for raw row texts in error logs


def _normalize_csv(body: bytes, sep: bytes, line: bytes, enclosed: bool) -> _CsvShape:
    """Map separators of any length onto what pyarrow reads: one field byte and \n line ends."""
    free = iter(_PLACEHOLDER_BYTES)

    def placeholder(current: bytes, avoid: bytes) -> bytes:
        for candidate in free:
            if candidate not in current and candidate not in avoid:
                return candidate
        raise LoadError(
            f"[NOT_IMPLEMENTED_ERROR]separators {sep!r} / {line!r} are not supported for this data "
            "(it uses every control byte)"
        )

    restore: list[tuple[str, str]] = []
    if line not in (b"\n", b"\r\n"):
        # Lines first (Doris cuts lines, then fields): the delimiter becomes a temporary byte,
        # real newlines become placeholders (they are data here), then the temporary byte \n.
        temp = placeholder(body, sep + line)
        body = body.replace(line, temp)
        if enclosed:
            # Inside quotes a delimiter is data; it comes back from the \n it turned into.
            restore.append(("\n", line.decode("utf-8", "replace")))
        if b"\n" in body or b"\r" in body:
            lf = placeholder(body, sep + line)
            body = body.replace(b"\n", lf)
            cr = placeholder(body, sep + line)
            body = body.replace(b"\r", cr)
            restore += [(lf.decode(), "\n"), (cr.decode(), "\r")]
        body = body.replace(temp, b"\n")
    if len(sep) == 1 and sep[0] < 0x80:
        delimiter = chr(sep[0])
    else:
        field = placeholder(body, sep + line)
        body = body.replace(sep, field)
        delimiter = field.decode()
        if enclosed:
            restore.append((delimiter, sep.decode("utf-8", "replace")))
    display = [(p, o) for p, o in restore if p != "\n"]
    if delimiter != chr(sep[0]) or len(sep) != 1:
        display.append((delimiter, sep.decode("utf-8", "replace")))
    return _CsvShape(body, delimiter, restore, display)


def _displayed(text: str, display: list[tuple[str, str]]) -> str:
    for placeholder, original in display:
        text = text.replace(placeholder, original)
    return text


def _restore_text(arr, restore: list[tuple[str, str]]):
    for placeholder, original in restore:
        arr = pc.replace_substring(arr, pattern=placeholder, replacement=original)
    return arr


def _escape_text(sep: bytes) -> str:
    return sep.decode("utf-8", "backslashreplace").encode("unicode_escape").decode("ascii")


def read_csv(body: bytes, plan: SourcePlan, opts: LoadOptions, max_error_rows: int) -> Source:
    """A CSV body as a `Source`: typed final columns when the fast path holds, else every field as text."""
    shape = _normalize_csv(body, opts.column_separator, opts.line_delimiter, bool(opts.enclose))
    body, delimiter = shape.body, shape.delimiter
    skip = {"csv": opts.skip_lines, "csv_with_names": 1, "csv_with_names_and_types": 2}[opts.format]
    names = [f"_c{i}" for i in range(len(plan.names))]
    used = [i for i, t in enumerate(plan.targets) if t is not None]
    sep_text = _escape_text(opts.column_separator)
    line_text = _escape_text(opts.line_delimiter)
    schema_width = len(names)

    count_errors: list[RowError] = []
    bad_count = [0]

    def on_invalid_row(row) -> str:
        # Called by pyarrow for rows whose field count differs from the source columns.
        bad_count[0] += 1
        if len(count_errors) < max_error_rows:
            relation = "less" if row.actual_columns < row.expected_columns else "more"
            count_errors.append(
                RowError(
                    raw=_displayed(row.text, shape.display),
                    reason=(
                        f"actual column number in csv file is {relation} than schema column number."
                        f"actual number: {row.actual_columns}, column separator: [{sep_text}], "
                        f"line delimiter: [{line_text}], schema column number: {schema_width}; "
                    ),
                )
            )
        return "skip"

    quote = opts.enclose.decode("latin-1") if opts.enclose else ('"' if opts.trim_double_quotes else False)
    parse_options = pacsv.ParseOptions(
        delimiter=delimiter,
        quote_char=quote,
        double_quote=bool(quote),
        escape_char=opts.escape.decode("latin-1") if opts.escape else False,
        newlines_in_values=bool(opts.enclose),
        ignore_empty_lines=True,
        invalid_row_handler=on_invalid_row,
    )
    read_options = pacsv.ReadOptions(
        column_names=names,
        skip_rows=skip,
        # One block is read on the calling thread: handing it to pyarrow's pool costs more
        # than the parse (small loads are parsed a thousand times a second).
        use_threads=len(body) > CSV_BLOCK_SIZE,
        block_size=CSV_BLOCK_SIZE,
    )
    buffer = pa.py_buffer(body)

    def read(convert_options):
        bad_count[0] = 0
        count_errors.clear()
        return pacsv.read_csv(
            pa.BufferReader(buffer),
            read_options=read_options,
            parse_options=parse_options,
            convert_options=convert_options,
        )

    # Fast path: pyarrow converts to the column types directly.
    targets = {names[i]: plan.targets[i] for i in used}
    null_values = [NULL_TEXT]
    if opts.empty_field_as_null or (
        not opts.strict_mode and not any(t.type.is_string for t in targets.values())
    ):
        null_values.append("")  # empty field -> NULL (non-strict, no string column can be hurt)
    fast_options = pacsv.ConvertOptions(
        column_types={n: _fast_csv_type(t.type) for n, t in targets.items()},
        null_values=null_values,
        strings_can_be_null=True,
        true_values=["true", "True", "TRUE", "1"],
        false_values=["false", "False", "FALSE", "0"],
        include_columns=[names[i] for i in used] or names[:1],
    )
    # Expressions need every source field as text, and restored placeholders need text too.
    # Arrow's integer parser also reads hex ("0x1F"), which Doris refuses: such bodies go slow.
    hex_like = any(t.type.is_integer for t in targets.values()) and (b"0x" in body or b"0X" in body)
    if not opts.needs_transform and not shape.restore and not hex_like:
        try:
            tbl = read(fast_options)
            typed = _check_fast(tbl, targets)
            if typed is not None:
                return Source(tbl.num_rows, True, typed, list(count_errors), bad_count[0])
        except pa.ArrowInvalid:
            pass

    # Slow path: every field as text; conversion decides row by row (vectorized).
    slow_options = pacsv.ConvertOptions(
        column_types={n: pa.string() for n in names},
        null_values=[NULL_TEXT, ""] if opts.empty_field_as_null else [NULL_TEXT],
        strings_can_be_null=True,
    )
    sep_out = opts.column_separator.decode("utf-8", "replace")
    try:
        tbl = read(slow_options)
    except pa.ArrowInvalid as e:
        text = str(e)
        if "UTF8" not in text and "utf8" not in text.lower():
            raise LoadError(f"[DATA_QUALITY_ERROR]failed to parse the CSV data: {text}") from None
        # Some fields are not UTF-8: read them as bytes and filter just those rows.
        binary_options = pacsv.ConvertOptions(
            column_types={n: pa.binary() for n in names},
            null_values=slow_options.null_values,
            strings_can_be_null=True,
        )
        raw = read(binary_options)  # refills count_errors / bad_count (wrong column counts)
        dropped = _drop_invalid_utf8(raw, plan.names, sep_out, max_error_rows - len(count_errors))
        if dropped is None:
            raise LoadError(f"[DATA_QUALITY_ERROR]the load data is not valid UTF-8: {text}") from None
        tbl, num_dropped, utf8_errors = dropped
        count_errors.extend(utf8_errors)
        bad_count[0] += num_dropped
    columns = {i: tbl.column(i) for i in range(len(names))}
    if shape.restore:
        columns = {i: _restore_text(c, shape.restore) for i, c in columns.items()}

    def render(indices: list[int]) -> list[str]:
        picked = [columns[i].take(pa.array(indices, pa.int64())).to_pylist() for i in range(len(names))]
        return [
            sep_out.join(NULL_TEXT if v[r] is None else v[r] for v in picked) for r in range(len(indices))
        ]

    return Source(tbl.num_rows, False, columns, list(count_errors), bad_count[0], render)


# Past this many rows with bytes that are not UTF-8 the body is binary data rather than text
# with a few bad fields: the load fails as a whole instead of searching on row by row.
INVALID_UTF8_MAX_ROWS = 1000


def _invalid_utf8_rows(column: pa.ChunkedArray) -> list[int]:
    """Indices of the values of a binary column that are not valid UTF-8.

    Each chunk is viewed as a string array (no copy) and validated a half at a time, so the
    cost is O(bad × log rows) vectorized validations rather than a Python loop over rows.
    """
    bad: list[int] = []
    base = 0
    for chunk in column.chunks:
        text = pa.Array.from_buffers(pa.string(), len(chunk), chunk.buffers(), chunk.null_count, chunk.offset)
        spans = [(0, len(chunk))] if len(chunk) else []
        while spans:
            lo, hi = spans.pop()
            try:
                text.slice(lo, hi - lo).validate(full=True)
                continue
            except pa.ArrowInvalid:
                pass
            if hi - lo == 1:
                bad.append(base + lo)
            else:
                mid = (lo + hi) // 2
                spans += [(mid, hi), (lo, mid)]
        base += len(chunk)
    return bad


def _drop_invalid_utf8(
    raw: pa.Table, source_names: list[str], sep: str, max_errors: int
) -> tuple[pa.Table, int, list[RowError]] | None:
    """`raw` (all fields as bytes) without the rows holding a field that is not UTF-8, as
    strings, with the number of rows dropped and their errors; None when too many are bad."""
    first_bad_column: dict[int, int] = {}
    for i in range(raw.num_columns):
        for r in _invalid_utf8_rows(raw.column(i)):
            first_bad_column.setdefault(r, i)
        if len(first_bad_column) > INVALID_UTF8_MAX_ROWS:
            return None
    rows = sorted(first_bad_column)
    errors = []
    if rows and max_errors > 0:
        shown = rows[:max_errors]
        picked = [raw.column(i).take(pa.array(shown, pa.int64())).to_pylist() for i in range(raw.num_columns)]
        for k, r in enumerate(shown):
            col = first_bad_column[r]
            text = sep.join(NULL_TEXT if v[k] is None else v[k].decode("utf-8", "replace") for v in picked)
            name = source_names[col] if col < len(source_names) else f"column {col + 1}"
            errors.append(RowError(raw=text, reason=f"column [{name}]: the value is not valid UTF-8; "))
    keep = np.ones(raw.num_rows, dtype=bool)
    keep[rows] = False
    kept = raw.filter(pa.array(keep)) if rows else raw
    as_text = pa.table({n: pc.cast(kept.column(n), pa.string()) for n in kept.column_names})
    return as_text, len(rows), errors


def _read_as_text(ctype: ColumnType) -> bool:
    """Types the fast path reads as text and converts itself (`_check_fast`): LARGEINT (Arrow's
    decimal parser refuses 39-digit values and wraps 2^127 around to -2^127), wide decimals,
    and every type whose text has a form of its own (nested values, JSON, IPs, states)."""
    return (
        ctype.name in ("LARGEINT", "JSON", "VARIANT", "IPV4", "IPV6")
        or ctype.is_nested
        or ctype.is_state
        or ctype.contains_wide_decimal()
    )


def _fast_csv_type(ctype: ColumnType) -> pa.DataType:
    return pa.string() if _read_as_text(ctype) else ctype.to_arrow()


def _check_fast(tbl: pa.Table, targets: dict[str, Column]) -> dict[str, pa.Array] | None:
    """Fast-path result as final columns, or None when some row needs the slow path's verdict."""
    out = {}
    for name, col in targets.items():
        arr = tbl.column(name)
        if _read_as_text(col.type):
            conv = convert_strings(one_chunk(arr), col.type)
            if conv.bad is not None:
                return None
            arr = conv.values
        if not col.nullable and arr.null_count:
            return None
        if col.type.name in ("CHAR", "VARCHAR") and len(arr):
            longest = _longest_value_bytes(arr)
            if longest is not None and longest > col.type.length:
                return None
        if col.type.name == "DATETIME":
            arr = truncate_datetime(arr, col.type.precision)
        out[col.name.lower()] = arr
    return out


def _longest_value_bytes(arr) -> int | None:
    """Byte length of the longest value of a string column, read off its offsets buffers.

    A null slot counts whatever bytes it spans, so this is an upper bound (a false alarm
    only sends the load to the slow path, which decides exactly). Much cheaper than
    `pc.max(pc.binary_length(...))` on the many tiny bodies of small loads.
    """
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    longest = None
    for chunk in chunks:
        if not len(chunk):
            continue
        if pa.types.is_string(chunk.type) or pa.types.is_binary(chunk.type):
            dtype = np.int32
        elif pa.types.is_large_string(chunk.type) or pa.types.is_large_binary(chunk.type):
            dtype = np.int64
        else:
            return pc.max(pc.binary_length(arr)).as_py()
        width = np.dtype(dtype).itemsize
        offsets = np.frombuffer(
            chunk.buffers()[1], dtype=dtype, count=len(chunk) + 1, offset=chunk.offset * width
        )
        top = int(np.diff(offsets).max())
        longest = top if longest is None else max(longest, top)
    return longest
