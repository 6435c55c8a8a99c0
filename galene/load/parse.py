"""Stream-load body parsing: CSV/JSON bytes into a table's storage schema, with Doris filtering.

Owns the BE data path from request body to a validated Arrow table: reading the body with
pyarrow, mapping source columns to table columns (`columns` header, defaults, the hidden
delete sign), converting text to the column types, and deciding per row whether it is
loaded or filtered (strict mode, NULL into NOT NULL, too-long strings, out-of-range values,
wrong column counts) with a bounded list of reasons for the error log.

Everything on the row path is vectorized. CSV takes a fast path first: pyarrow converts
straight to the target types, which is as fast as reading the file at all; only when that
conversion fails (any bad value anywhere), or the load has expressions (`columns`
mappings, `where`, `delete`, a sequence source), is the body re-read as strings and
converted column by column with validity masks, which is where the per-row reasons come
from. Expressions are evaluated by `galene.load.expressions` over whole columns; rows that
`where` rejects are unselected (not filtered). Parquet bodies map columns by name.
Python loops run only over the bounded list of error rows and in the JSON fallback for
documents whose value types differ between rows (pyarrow's JSON reader refuses those) or
whose numbers must keep their exact text (big integers, decimals, `num_as_string`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as papq
from sqlglot import exp

from galene.catalog.model import DELETE_SIGN, SEQUENCE_COL, Column, Table
from galene.common import intcast
from galene.common.errors import LoadError
from galene.common.types import ColumnType
from galene.load import expressions as ex
from galene.load.bounds import (
    DEFAULT_LIMITS,
    BodyLimits,
    body_too_big,
    check_json_depth,
    check_line_length,
    inflate_all,
    json_too_big,
)
from galene.load.options import (
    COMPRESS_CODECS,
    CSV_FORMATS,
    SUPPORTED_FORMATS,
    LoadOptions,
    parse_jsonpaths,
)
from galene.storage.rowset import storage_schema

NULL_TEXT = "\\N"
# Readers hand pyarrow blocks of this size; each block is parsed on its own thread.
CSV_BLOCK_SIZE = 1 << 20
JSON_BLOCK_SIZE = 8 << 20
_TRUE_TEXTS = ["true", "1"]
_FALSE_TEXTS = ["false", "0"]


@dataclass
class RowError:
    raw: str  # the source row as text (CSV fields joined by the separator, or a JSON object)
    reason: str


@dataclass
class ParsedBatch:
    data: pa.Table  # storage schema of the table: every Table.columns entry, in order
    num_total: int  # rows read from the source
    num_filtered: int  # rows rejected
    num_unselected: int = 0  # rows dropped by `where`
    errors: list[RowError] = field(default_factory=list)  # first rejected rows, with reasons


def parse_body(
    body: bytes,
    table: Table,
    opts: LoadOptions,
    max_error_rows: int = 50,
    limits: BodyLimits = DEFAULT_LIMITS,
) -> ParsedBatch:
    """Parse one stream-load body into `table`'s storage schema with Doris filtering rules.

    `limits` bound what the body may be once inflated (size, line length, JSON depth); they
    are checked before any parser sees the bytes."""
    if opts.format not in SUPPORTED_FORMATS:
        raise LoadError(f"[NOT_IMPLEMENTED_ERROR]format {opts.format} is not supported yet")
    check_merge_options(table, opts)

    plan = _SourcePlan.build(table, opts)
    schema = storage_schema(table)
    json_document = opts.format == "json" and not (opts.json_by_line and not opts.strip_outer_array)
    if opts.compress_type:
        if json_document and limits.json_max_bytes < limits.max_body_bytes:
            max_inflated, key = limits.json_max_bytes, "streaming_load_json_max_mb"
        else:
            max_inflated, key = limits.max_body_bytes, limits.max_body_key
        body = inflate_all(body, COMPRESS_CODECS[opts.compress_type], max_inflated, key)
    if _is_blank(body):
        return ParsedBatch(schema.empty_table(), 0, 0, 0, [])

    if opts.format in CSV_FORMATS:
        check_line_length(body, opts.line_delimiter, limits.max_line_bytes)
        source = _read_csv(body, plan, opts, max_error_rows)
    elif opts.format == "parquet":
        source = _read_parquet(body, plan, limits)
    else:
        if json_document and len(body) > limits.json_max_bytes:
            raise json_too_big(len(body), limits.json_max_bytes)
        if not json_document:
            check_line_length(body, b"\n", limits.max_line_bytes)
        check_json_depth(body, limits.json_max_depth)
        source = _read_json(body, plan, opts)
    return _to_storage_rows(source, plan, table, opts, max_error_rows)


def convert_arrow(data: pa.Table, table: Table, opts: LoadOptions, max_error_rows: int = 50) -> ParsedBatch:
    """Typed rows (a query's result, columns by position as `opts.columns` names them, or the
    table's visible columns) into `table`'s storage schema under the same Doris rules as a
    stream load: values converted to the column types (strict mode, NOT NULL, too-long
    strings, out-of-range numbers), missing columns filled with their defaults, rejected rows
    counted with reasons. The engine's write tasks call this on every batch, so an INSERT
    converts values exactly as a load does."""
    check_merge_options(table, opts)
    plan = _SourcePlan.build(table, opts)
    if data.num_columns != len(plan.names):
        raise LoadError(
            f"[INTERNAL_ERROR]{data.num_columns} source columns for {len(plan.names)} target columns"
        )
    columns = {idx: _combined(data.column(idx)) for idx in range(data.num_columns)}
    source = _Source(data.num_rows, False, columns, [], 0, _typed_renderer(plan.names, columns))
    return _to_storage_rows(source, plan, table, opts, max_error_rows)


def _to_storage_rows(
    source: _Source, plan: _SourcePlan, table: Table, opts: LoadOptions, max_error_rows: int
) -> ParsedBatch:
    """A read source as storage-schema rows: converted, filled, filtered, with reasons."""
    schema = storage_schema(table)
    num_unselected = 0
    if source.typed:
        converted, keep, errors = source.columns, None, []
    else:
        converted, keep, errors, num_unselected = _convert_sources(source, plan, opts, max_error_rows)

    n = source.num_rows
    arrays = []
    for col, target_type in zip(table.columns, schema.types):
        if col.name.lower() in converted:
            arrays.append(converted[col.name.lower()])
        else:
            arrays.append(plan.fill_array(col, target_type, n))
    data = pa.Table.from_arrays(arrays, schema=schema)
    num_rejected = 0
    if keep is not None:
        dropped = int(n - keep.sum())
        num_rejected = dropped - num_unselected
        if dropped:
            data = data.filter(pa.array(keep))

    all_errors = source.count_errors + errors
    return ParsedBatch(
        data=data,
        num_total=n + source.num_bad_count,
        num_filtered=num_rejected + source.num_bad_count,
        num_unselected=num_unselected,
        errors=all_errors[:max_error_rows],
    )


# Hidden column holding the sequence value of tables created with function_column.sequence_type.
def check_merge_options(table: Table, opts: LoadOptions) -> None:
    """Doris' checks of merge_type / delete / sequence headers against the table."""
    if opts.merge_type != "APPEND":
        if table.keys_type != "UNIQUE_KEYS":
            raise LoadError("[ANALYSIS_ERROR]load by MERGE or DELETE is only supported in unique tables.")
        if table.column(DELETE_SIGN) is None:
            raise LoadError(
                "[ANALYSIS_ERROR]load by MERGE or DELETE need to upgrade table to support batch delete."
            )
    seq = table.sequence_column()
    mapped_sequence = bool(table.properties.get("function_column.sequence_col"))
    has_sequence_type = "function_column.sequence_type" in table.properties
    if opts.sequence_col and seq is None and not has_sequence_type:
        raise LoadError(f"[ANALYSIS_ERROR]There is no sequence column in the table {table.name}")
    if has_sequence_type and not mapped_sequence:
        if seq is None:
            raise LoadError(
                f"[NOT_IMPLEMENTED_ERROR]table {table.name} was created with function_column.sequence_type "
                "but has no hidden sequence column; recreate it with function_column.sequence_col"
            )
        if not opts.sequence_col:
            raise LoadError(
                f"[ANALYSIS_ERROR]Table {table.name} has sequence column, need to specify the sequence column"
            )


def _is_blank(body: bytes) -> bool:
    # Only a short body can be all whitespace worth checking; strip() would copy a big one.
    return len(body) == 0 or (len(body) < 4096 and not body.strip())


# --- source plan: which source field feeds which table column ------------------------------------


@dataclass
class _SourcePlan:
    names: list[str]  # source names in file order
    targets: list[Column | None]  # table column each source field feeds; None = read and dropped
    fills: dict[str, pa.Scalar | None]  # lower-case table column name -> fill for columns not in the source
    # Table columns computed from expressions over the source row (`columns` mappings, the
    # delete sign of a MERGE, the sequence column from function_column.sequence_col).
    mappings: list[tuple[Column, exp.Expression]] = field(default_factory=list)
    delete_sign: Column | None = None  # MERGE: set from opts.delete_expr
    sequence: tuple[Column, str] | None = None  # (hidden sequence column, source/target name)

    @classmethod
    def build(cls, table: Table, opts: LoadOptions) -> _SourcePlan:
        if opts.columns:
            names = list(opts.columns)
        else:
            names = [c.name for c in table.visible_columns()]
        # `x = expr` entries whose x is no table column are dropped, as Doris drops them.
        mappings = [(table.column(m.name), m.expr) for m in opts.column_mappings if table.column(m.name)]
        computed = {c.name.lower() for c, _ in mappings}
        delete_sign = table.column(DELETE_SIGN) if opts.merge_type == "MERGE" else None
        if delete_sign is not None or opts.merge_type == "DELETE":
            computed.add(DELETE_SIGN.lower())  # the merge type decides it, not the source
        sequence = None
        seq_col = table.sequence_column()
        if opts.sequence_col and seq_col is not None and seq_col.name == SEQUENCE_COL:
            sequence = (seq_col, opts.sequence_col)
            computed.add(seq_col.name.lower())
        # A source name that is no table column is read and dropped (or only feeds
        # expressions): that is how Doris users skip a field (`columns: k1, skipped, k2`).
        targets = []
        for n in names:
            col = table.column(n)
            targets.append(None if col is None or col.name.lower() in computed else col)
        present = {t.name.lower() for t in targets if t is not None} | computed
        fills: dict[str, pa.Scalar | None] = {}
        for col in table.columns:
            if col.name.lower() in present and not (col.name == DELETE_SIGN and opts.merge_type == "DELETE"):
                continue
            fills[col.name.lower()] = _fill_value(col, opts)
        return cls(names, targets, fills, mappings, delete_sign, sequence)

    def fill_array(self, col: Column, arrow_type: pa.DataType, n: int) -> pa.Array:
        value = self.fills.get(col.name.lower())
        if value is None:
            return pa.nulls(n, arrow_type)
        return pa.array([value.as_py()], arrow_type).take(np.zeros(n, dtype=np.int32))


_CLOCK_DEFAULT = re.compile(r"^(CURRENT_TIMESTAMP(\(\d*\))?|NOW\(\d*\)|CURRENT_DATE(\(\))?)$")
_clock_tables: dict[int, tuple[Table, bool]] = {}


def is_clock_default(text: str | None) -> bool:
    """Whether a column default is the load's clock (CURRENT_TIMESTAMP[(p)], NOW(), CURRENT_DATE)."""
    return text is not None and _CLOCK_DEFAULT.match(text.upper().replace(" ", "")) is not None


def has_clock_defaults(table: Table) -> bool:
    """Whether any column of `table` defaults to the load's clock (memoized per Table object:
    asked for every small load)."""
    hit = _clock_tables.get(id(table))
    if hit is not None and hit[0] is table:
        return hit[1]
    found = any(is_clock_default(c.default) for c in table.columns)
    if len(_clock_tables) >= 256:
        _clock_tables.clear()
    _clock_tables[id(table)] = (table, found)
    return found


def _fill_value(col: Column, opts: LoadOptions) -> pa.Scalar | None:
    """The value a table column gets when the source does not provide it (Doris: its default)."""
    arrow_type = col.type.to_arrow()
    if col.name == DELETE_SIGN:
        return pa.scalar(1 if opts.merge_type == "DELETE" else 0, arrow_type)
    text = col.default
    if text is None or text.upper() == "NULL":
        if not col.nullable:
            raise LoadError(f"Column has no default value. column: {col.name}")
        return None
    if is_clock_default(text):
        text = opts.local_now().strftime("%Y-%m-%d %H:%M:%S.%f")
    conv = convert_strings(pa.array([text], pa.string()), col.type)
    if conv.bad is not None and conv.bad[0] or conv.too_long is not None and conv.too_long[0]:
        raise LoadError(f"Invalid default value for column {col.name}: {col.default}")
    return conv.values[0]


# --- reading -----------------------------------------------------------------------------------


@dataclass
class _Source:
    num_rows: int
    # typed=True: `columns` maps lower-case table column -> final array (CSV fast path).
    # typed=False: `columns` maps source index -> string array; every source field is present.
    typed: bool
    columns: dict
    count_errors: list[RowError]  # rows rejected while reading (wrong column count)
    num_bad_count: int
    render_rows: object = None  # callable(indices) -> raw texts, for the error list


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


def _read_csv(body: bytes, plan: _SourcePlan, opts: LoadOptions, max_error_rows: int) -> _Source:
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
                return _Source(tbl.num_rows, True, typed, list(count_errors), bad_count[0])
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

    return _Source(tbl.num_rows, False, columns, list(count_errors), bad_count[0], render)


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


def _fast_csv_type(ctype: ColumnType) -> pa.DataType:
    # LARGEINT is read as text and converted by Doris' rule (`_check_fast`): Arrow's decimal
    # parser refuses 39-digit values and wraps 2^127 around to -2^127.
    return pa.string() if ctype.name == "LARGEINT" else ctype.to_arrow()


def _check_fast(tbl: pa.Table, targets: dict[str, Column]) -> dict[str, pa.Array] | None:
    """Fast-path result as final columns, or None when some row needs the slow path's verdict."""
    out = {}
    for name, col in targets.items():
        arr = tbl.column(name)
        if col.type.name == "LARGEINT":
            conv = convert_strings(_combined(arr), col.type)
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


def _read_parquet(body: bytes, plan: _SourcePlan, limits: BodyLimits) -> _Source:
    """A Parquet body: source columns by name (case-insensitive), values in their file types.

    The footer is read first: a file whose pages would inflate past streaming_load_max_mb (a
    Parquet compression bomb) is refused before any page is decoded."""
    try:
        meta = papq.read_metadata(pa.BufferReader(body))
        inflated = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        if inflated > limits.max_body_bytes:
            raise body_too_big(
                f"{inflated} (Parquet pages decompressed)", limits.max_body_bytes, limits.max_body_key
            )
        tbl = papq.read_table(pa.BufferReader(body))
    except (pa.ArrowException, OSError, ValueError) as e:
        raise LoadError(f"[DATA_QUALITY_ERROR]failed to read the body as Parquet: {e}") from None
    by_name: dict[str, int] = {}
    for i, name in enumerate(tbl.column_names):
        by_name.setdefault(name.lower(), i)
    n = tbl.num_rows
    columns = {}
    for idx, name in enumerate(plan.names):
        i = by_name.get(name.lower())
        columns[idx] = _combined(tbl.column(i)) if i is not None else pa.nulls(n, pa.string())

    return _Source(n, False, columns, [], 0, _typed_renderer(plan.names, columns))


def _typed_renderer(names: list[str], columns: dict[int, pa.Array]):
    """Raw texts of typed source rows for the error list: a JSON object per row."""

    def render(indices: list[int]) -> list[str]:
        picked = [columns[i].take(pa.array(indices, pa.int64())).to_pylist() for i in range(len(names))]
        return [
            msgspec.json.encode({names[i]: _json_safe(picked[i][r]) for i in range(len(names))}).decode()
            for r in range(len(indices))
        ]

    return render


def _json_safe(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _read_json(body: bytes, plan: _SourcePlan, opts: LoadOptions) -> _Source:
    """JSON rows as string columns (one per source name; keys matched case-insensitively).

    With `jsonpaths`, source column i is the value at the i-th path instead of the key named
    like it. Numbers keep their exact text whenever a float could not give it back
    (`num_as_string`, or a non-float target): those documents take the msgspec path.
    """
    wanted = [n.lower() for n in plan.names]
    paths = parse_jsonpaths(opts.jsonpaths) if opts.jsonpaths else None  # validated at from_headers
    struct = None
    if not opts.num_as_string:
        try:
            struct = _json_with_arrow(body, opts)
        except pa.ArrowInvalid:
            struct = None
    if struct is not None:
        columns = _json_columns_from_struct(struct, wanted, paths, plan)
        if columns is not None:
            return _Source(len(struct), False, columns, [], 0, _json_renderer(plan.names, columns))
    rows = _json_rows_with_msgspec(body, opts)
    if paths is not None:
        columns = {
            idx: pa.array(
                [_json_value_text(_py_at_path(r, paths[idx])) if idx < len(paths) else None for r in rows],
                pa.string(),
            )
            for idx in range(len(wanted))
        }
    else:
        columns = _columns_from_rows(rows, wanted)
    return _Source(len(rows), False, columns, [], 0, _json_renderer(plan.names, columns))


def _json_columns_from_struct(struct, wanted, paths, plan: _SourcePlan) -> dict[int, pa.Array] | None:
    """Source columns out of pyarrow's rows, or None when a value's text would not survive."""
    n = len(struct)
    columns: dict[int, pa.Array] = {}
    if paths is not None:
        for idx in range(len(wanted)):
            arr = _arrow_at_path(struct, paths[idx]) if idx < len(paths) else None
            if arr is None:
                columns[idx] = pa.nulls(n, pa.string())
                continue
            if not _arrow_to_text_ok(arr.type, plan.targets[idx]):
                return None
            columns[idx] = arr if arr.type == pa.string() else pc.cast(arr, pa.string())
        return columns
    by_key: dict[str, list[pa.Array]] = {}
    for i in range(struct.type.num_fields):
        by_key.setdefault(struct.type.field(i).name.lower(), []).append(struct.field(i))
    for idx, name in enumerate(wanted):
        arrays = by_key.get(name)
        if arrays is None:
            columns[idx] = pa.nulls(n, pa.string())
            continue
        if not all(_arrow_to_text_ok(a.type, plan.targets[idx]) for a in arrays):
            return None  # e.g. a timestamp-looking string headed for a VARCHAR: keep the text
        texts = [a if a.type == pa.string() else pc.cast(a, pa.string()) for a in arrays]
        # Keys differing only in case ("ID" in one row, "id" in another) are one column.
        columns[idx] = texts[0] if len(texts) == 1 else pc.coalesce(*texts)
    return columns


def _arrow_to_text_ok(arrow_type: pa.DataType, target: Column | None) -> bool:
    """Whether casting an inferred JSON column to text gives what the source said."""
    if pa.types.is_struct(arrow_type) or pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return False  # nested values: serialized by the fallback
    if pa.types.is_timestamp(arrow_type):
        # pyarrow turned an ISO-looking string into a timestamp; fine for temporal targets only.
        return target is not None and target.type.name in ("DATE", "DATETIME")
    if pa.types.is_floating(arrow_type):
        # A double may have dropped digits (big integers, long decimals): exact text needed
        # unless the column is a float itself.
        return target is not None and target.type.name in ("FLOAT", "DOUBLE")
    return True


def _arrow_at_path(arr, steps: list[str | int]):
    """The values at a JSONPath in pyarrow rows; None when no row has that path."""
    for step in steps:
        if isinstance(step, int):
            if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
                return None
            # Rows whose list is shorter give NULL, as a missing path does in Doris.
            lengths = pc.fill_null(pc.list_value_length(arr), 0)
            short = pc.less_equal(lengths, step)
            safe = pc.if_else(short, pa.scalar(None, arr.type), arr)
            arr = pc.list_element(pc.fill_null(safe, pa.scalar([None] * (step + 1), arr.type)), step)
        else:
            if not pa.types.is_struct(arr.type):
                return None
            child = _struct_child(arr, step)
            if child is None:
                return None
            if arr.null_count:
                child = pc.if_else(pc.is_null(arr), pa.scalar(None, child.type), child)
            arr = child
    return arr


def _py_at_path(doc, steps: list[str | int]):
    for step in steps:
        if isinstance(step, int):
            if not isinstance(doc, list) or step >= len(doc):
                return None
            doc = doc[step]
        else:
            if not isinstance(doc, dict):
                return None
            if step in doc:
                doc = doc[step]
            else:
                lower = step.lower()
                doc = next((v for k, v in doc.items() if k.lower() == lower), None)
    return doc


def _json_root_path(json_root: str | None) -> list[str]:
    if not json_root:
        return []
    path = json_root.strip()
    path = path.removeprefix("$")
    return [p for p in path.split(".") if p]


def _json_with_arrow(body: bytes, opts: LoadOptions) -> pa.StructArray | None:
    """Rows as one StructArray via pyarrow's JSON reader, or None for shapes it cannot give."""
    root = _json_root_path(opts.json_root)
    if opts.json_by_line and not opts.strip_outer_array:
        table = pajson.read_json(
            pa.BufferReader(body),
            read_options=pajson.ReadOptions(use_threads=True, block_size=JSON_BLOCK_SIZE),
        )
        rows = table.to_struct_array().combine_chunks() if table.num_columns else None
        if rows is None:
            return None
        for key in root:
            rows = _struct_child(rows, key)
            if rows is None or not pa.types.is_struct(rows.type):
                return None
        return rows
    # Whole-document modes: wrap the body so pyarrow sees one object holding it, then unwrap.
    wrapped = b'{"__galene_doc":' + body + b"}"
    table = pajson.read_json(
        pa.BufferReader(wrapped),
        read_options=pajson.ReadOptions(use_threads=False, block_size=len(wrapped) + 1024),
        parse_options=pajson.ParseOptions(newlines_in_values=True),
    )
    if table.num_rows != 1:
        return None
    doc = table.column(0).combine_chunks()
    for key in root:
        if not pa.types.is_struct(doc.type):
            return None
        doc = _struct_child(doc, key)
        if doc is None:
            return None
    if pa.types.is_list(doc.type):
        if not opts.strip_outer_array:
            raise LoadError(
                "[DATA_QUALITY_ERROR]JSON data is array-object, `strip_outer_array` must be TRUE."
            )
        rows = pc.list_flatten(doc)
        return rows if pa.types.is_struct(rows.type) else None
    if pa.types.is_struct(doc.type):
        if opts.strip_outer_array:
            raise LoadError(
                "[DATA_QUALITY_ERROR]JSON data is not an array-object, `strip_outer_array` must be FALSE."
            )
        return doc
    return None


def _struct_child(arr: pa.StructArray, key: str):
    lkey = key.lower()
    for i in range(arr.type.num_fields):
        if arr.type.field(i).name.lower() == lkey:
            return arr.field(i)
    return None


# Floats decode to their exact text wrapped as Decimal: BIGINT/DECIMAL values lose no digits.
_EXACT_JSON = msgspec.json.Decoder(float_hook=Decimal)
_JSON_OUT = msgspec.json.Encoder(decimal_format="number")


def _decode_json(data: bytes, where: str = ""):
    try:
        return _EXACT_JSON.decode(data)
    except msgspec.DecodeError as e:
        raise LoadError(f"[DATA_QUALITY_ERROR]Parse json data failed{where}: {e}") from None


def _descend(doc, root: list[str]):
    for key in root:
        if not isinstance(doc, dict):
            return None
        lower = {k.lower(): v for k, v in doc.items()}
        doc = lower.get(key.lower())
    return doc


def _json_rows_with_msgspec(body: bytes, opts: LoadOptions) -> list[dict]:
    """Fallback for JSON whose value types vary between rows: decode to Python objects."""
    root = _json_root_path(opts.json_root)
    rows: list = []
    if opts.json_by_line and not opts.strip_outer_array:
        for number, line in enumerate(body.splitlines(), 1):
            if not line.strip():
                continue
            doc = _descend(_decode_json(line, f" at line {number}"), root)
            if isinstance(doc, list):
                raise LoadError(
                    "[DATA_QUALITY_ERROR]JSON data is array-object, `strip_outer_array` must be TRUE."
                )
            rows.append(doc)
    else:
        doc = _descend(_decode_json(body), root)
        if isinstance(doc, list):
            if not opts.strip_outer_array:
                raise LoadError(
                    "[DATA_QUALITY_ERROR]JSON data is array-object, `strip_outer_array` must be TRUE."
                )
            rows = doc
        else:
            if opts.strip_outer_array:
                raise LoadError(
                    "[DATA_QUALITY_ERROR]JSON data is not an array-object, `strip_outer_array` must be FALSE."
                )
            rows = [doc]
    for row in rows:
        if not isinstance(row, dict):
            raise LoadError(
                f"[DATA_QUALITY_ERROR]JSON row is not an object: {msgspec.json.encode(row).decode()}"
            )
    return rows


def _json_value_text(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, Decimal):
        return format(value, "f")  # exponent forms spelled out: 1E+5 -> 100000
    return _JSON_OUT.encode(value).decode()


def _columns_from_rows(rows: list[dict], wanted: list[str]) -> dict[int, pa.Array]:
    lowered = [{k.lower(): v for k, v in row.items()} for row in rows]
    return {
        idx: pa.array([_json_value_text(r.get(name)) for r in lowered], pa.string())
        for idx, name in enumerate(wanted)
    }


def _json_renderer(names: list[str], columns: dict[int, pa.Array]):
    def render(indices: list[int]) -> list[str]:
        picked = [columns[i].take(pa.array(indices, pa.int64())).to_pylist() for i in range(len(names))]
        return [
            msgspec.json.encode({names[i]: picked[i][r] for i in range(len(names))}).decode()
            for r in range(len(indices))
        ]

    return render


# --- conversion ----------------------------------------------------------------------------------


@dataclass
class Conversion:
    values: pa.Array  # target Arrow type; NULL where the source was NULL or could not be converted
    bad: np.ndarray | None  # non-null source value that could not be converted (None = none)
    too_long: np.ndarray | None  # string longer than the column allows (None = none)


def _mask(arr) -> np.ndarray:
    return pc.fill_null(arr, False).to_numpy(zero_copy_only=False)


def _null_of(t: pa.DataType) -> pa.Scalar:
    return pa.scalar(None, t)


def _only(valid: np.ndarray, arr: pa.Array) -> pa.Array:
    """`arr` with entries outside `valid` set to NULL, so a cast only sees convertible text."""
    return pc.if_else(pa.array(valid), arr, _null_of(arr.type))


def convert_strings(text: pa.Array, ctype: ColumnType) -> Conversion:
    """Convert a string array to `ctype` with Doris rules, marking values that do not convert."""
    name = ctype.name
    arrow_type = ctype.to_arrow()
    if ctype.is_string:
        too_long = None
        if name in ("CHAR", "VARCHAR") and len(text):
            # Doris lengths are bytes, not characters.
            over = _mask(pc.greater(pc.binary_length(text), ctype.length))
            too_long = over if over.any() else None
        return Conversion(text, None, too_long)

    quick = _quick_cast(text, ctype, arrow_type)
    if quick is not None:
        return Conversion(quick, None, None)
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    present = _mask(pc.is_valid(text))
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
        is_true = _mask(pc.is_in(lowered, pa.array(_TRUE_TEXTS)))
        is_false = _mask(pc.is_in(lowered, pa.array(_FALSE_TEXTS)))
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
    ok = _mask(pc.match_substring_regex(text, _FLOAT_RE))
    values = pc.cast(_only(ok, text), arrow_type)
    return values, ok


_DECIMAL_RE = r"^(?P<sign>[+-]?)0*(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?$"


def _to_decimal(text: pa.Array, precision: int, scale: int, arrow_type) -> tuple[pa.Array, np.ndarray]:
    """Decimal text with Doris semantics: too many integer digits fails, extra fraction rounds."""
    has_digit = _mask(pc.match_substring_regex(text, r"[0-9]"))
    parts = pc.extract_regex(text, _DECIMAL_RE)
    shape_ok = has_digit & _mask(pc.is_valid(parts))
    parts = pc.fill_null(parts, pa.scalar({"sign": "", "int": "", "frac": ""}, parts.type))
    sign, integer, frac = parts.field("sign"), parts.field("int"), parts.field("frac")
    int_digits = pc.utf8_length(integer).to_numpy(zero_copy_only=False)
    ok = shape_ok & (int_digits <= precision - scale)
    # Keep one extra fraction digit and round half away from zero on it (Doris DECIMALV3),
    # in a type two digits wider so that 99.995 -> 100.00 does not overflow the rounding.
    rounding = precision <= 36
    kept = scale + 1 if rounding else scale
    if kept:
        frac_kept = pc.utf8_slice_codeunits(pc.utf8_rpad(frac, width=kept, padding="0"), 0, kept)
        normal = pc.binary_join_element_wise(
            sign, pc.utf8_lpad(integer, width=1, padding="0"), ".", frac_kept, ""
        )
    else:
        normal = pc.binary_join_element_wise(sign, pc.utf8_lpad(integer, width=1, padding="0"), "")
    wide = pa.decimal128(precision + 2, kept) if rounding else pa.decimal128(precision, kept)
    values = pc.cast(_only(ok, normal), wide)
    if rounding:
        values = pc.round(values, ndigits=scale, round_mode="half_towards_infinity")
        limit = pa.scalar(Decimal(10) ** (precision - scale), wide)
        ok = ok & _mask(pc.less(pc.abs(values), limit))
        values = _only(ok, values)
    return pc.cast(values, arrow_type), ok


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
    fixed = _mask(pc.match_substring_regex(text, _FIXED_TEMPORAL_RE))
    fields = {k: np.zeros(n, dtype=np.int64) for k in _FIELDS}
    if fixed.any():
        only_fixed = _only(fixed, text)
        for key, (start, stop) in _FIXED_SLICES.items():
            piece = pc.utf8_slice_codeunits(only_fixed, start, stop)
            fields[key][:] = _frac_to_micros(piece) if key == "f" else _digits_to_int(piece)
    matched = fixed.copy()
    others = np.flatnonzero(~fixed & _mask(pc.is_valid(text)))
    if others.size:
        subset = text.take(pa.array(others))
        parts = pc.extract_regex(subset, _TEMPORAL_RE)
        ok = _mask(pc.is_valid(parts))
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
    mask = None if arr.null_count == 0 else _mask(pc.is_null(arr))
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


# Reason codes, in the order a column's checks run.
_TOO_LONG, _STRICT_BAD, _NULL, _BAD_NOT_NULL, _EXPR_NULL = 1, 2, 3, 4, 5


def _convert_sources(source: _Source, plan: _SourcePlan, opts: LoadOptions, max_error_rows: int):
    """Convert every mapped source column, evaluate expressions, decide which rows go and why.

    Returns (converted columns, rows to keep, reasons for the first rejected rows, number of
    rows `where` unselected). A row `where` does not select is unselected even when one of
    its values was bad: Doris applies the filter to the source row before converting it.
    """
    n = source.num_rows
    reason_slot = np.full(n, -1, dtype=np.int32)
    reason_kind = np.zeros(n, dtype=np.int8)
    rejected = np.zeros(n, dtype=bool)
    converted: dict[str, pa.Array] = {}
    # What a reason talks about: (column, the value that went into it), by slot number.
    slots: list[tuple[Column, pa.Array]] = []

    def reject(mask: np.ndarray, slot: int, kind: int) -> None:
        fresh = mask & ~rejected
        if fresh.any():
            reason_slot[fresh] = slot
            reason_kind[fresh] = kind
            rejected[fresh] = True

    for idx, col in enumerate(plan.targets):
        if col is None:
            continue
        text = source.columns[idx]
        if _is_text(text.type):
            if opts.empty_field_as_null:
                text = pc.if_else(pc.equal(text, ""), _null_of(pa.string()), text)
            conv = convert_strings(text, col.type)
        else:
            conv = ex.coerce(_combined(text), col.type)
        slot = len(slots)
        slots.append((col, text))
        if conv.too_long is not None:
            reject(conv.too_long, slot, _TOO_LONG)
        if conv.bad is not None and opts.strict_mode:
            reject(conv.bad, slot, _STRICT_BAD)
        if not col.nullable:
            if text.null_count:
                reject(_mask(pc.is_null(text)), slot, _NULL)
            if conv.bad is not None:
                reject(conv.bad, slot, _BAD_NOT_NULL)
        converted[col.name.lower()] = conv.values

    selected = None
    if opts.needs_transform:
        ctx = ex.EvalContext(n, opts.local_now(), opts.timezone)
        sources = {name.lower(): _combined(source.columns[i]) for i, name in enumerate(plan.names)}
        for col, expr in plan.mappings:
            value = ex.evaluate(expr, sources, ctx)
            conv = ex.coerce(value, col.type)
            slot = len(slots)
            slots.append((col, value))
            # Strict mode is about converting source text; a function's result that does not
            # fit its column becomes NULL, as in Doris.
            if conv.too_long is not None:
                reject(conv.too_long, slot, _TOO_LONG)
            if not col.nullable and conv.values.null_count:
                reject(_mask(pc.is_null(conv.values)), slot, _EXPR_NULL)
            converted[col.name.lower()] = conv.values
        # `where`, `delete` and the sequence source see table columns as converted and the
        # other source fields as read.
        scope = dict(sources)
        scope.update(converted)
        if plan.sequence is not None:
            seq_col, seq_source = plan.sequence
            if seq_source.lower() not in scope:
                raise LoadError(
                    f"[ANALYSIS_ERROR]Unknown column '{seq_source}' in function_column.sequence_col"
                )
            conv = ex.coerce(ex.broadcast(scope[seq_source.lower()], n), seq_col.type)
            converted[seq_col.name.lower()] = conv.values
        if plan.delete_sign is not None and opts.delete_expr is not None:
            is_delete = _mask(_as_bool(ex.evaluate(opts.delete_expr, scope, ctx)))
            converted[plan.delete_sign.name.lower()] = pa.array(is_delete.astype(np.int8), pa.int8())
        if opts.where_expr is not None:
            selected = _mask(_as_bool(ex.evaluate(opts.where_expr, scope, ctx)))

    counted = rejected if selected is None else rejected & selected
    errors: list[RowError] = []
    if counted.any():
        first = np.flatnonzero(counted)[:max_error_rows].tolist()
        raws = source.render_rows(first) if source.render_rows else [""] * len(first)
        for row, raw in zip(first, raws):
            col, values = slots[int(reason_slot[row])]
            errors.append(RowError(raw, _reason(int(reason_kind[row]), col, values[row])))
    keep = ~rejected if selected is None else ~rejected & selected
    num_unselected = 0 if selected is None else int(n - selected.sum())
    return converted, keep, errors, num_unselected


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _combined(arr):
    if isinstance(arr, pa.ChunkedArray):
        return arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    return arr


def _as_bool(values: pa.Array) -> pa.Array:
    if pa.types.is_boolean(values.type):
        return values
    if pa.types.is_null(values.type):
        return pa.nulls(len(values), pa.bool_())
    return pc.cast(values, pa.bool_())


def _reason(kind: int, col: Column, value: pa.Scalar) -> str:
    text = value.as_py()
    if kind == _TOO_LONG:
        raw = str(text).encode("utf-8")
        return (
            f"column({col.name}) the length of input is too long than schema. first 32 bytes of input str: "
            f"[{raw[:32].decode('utf-8', 'replace')}] schema length: {col.type.length}; actual length: {len(raw)}; "
        )
    if kind == _STRICT_BAD:
        return (
            f"column({col.name}) value is incorrect while strict mode is true, src value is {text}. "
            f"can not convert to {col.type.to_desc()}"
        )
    if kind in (_NULL, _EXPR_NULL):
        return f"column({col.name}) values is null while columns is not nullable"
    return (
        f"column({col.name}) values is null while columns is not nullable. "
        f"src value {text} can not convert to {col.type.to_desc()}"
    )
