"""Stream-load body parsing: a body (or a query's typed rows) as a table's storage rows, with
Doris' filtering.

Owns the path from a request body to a validated Arrow table: the body's bounds once inflated
(`galene.load.bounds`), the reader of its format (`csv_reader`, `json_reader`, `columnar`), and
then, column by column, conversion to the column types (`galene.load.convert`), the `columns`
mappings, `where`, `delete` and sequence expressions (`galene.load.expressions`, over whole
columns), the fill of columns the source lacks (`galene.load.source`), and the verdict per row:
loaded, filtered (strict mode, NULL into NOT NULL, too-long strings, out-of-range values, wrong
column counts: with a bounded list of reasons for the error log) or unselected (rows `where`
rejects). `convert_arrow` does the same for typed rows, so the engine's write tasks convert an
INSERT's values exactly as a load does.

Everything on the row path is vectorized; Python loops run only over the bounded list of error
rows (and in the JSON reader's fallback for documents pyarrow cannot read).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from galene.catalog.model import Column, Table
from galene.common.errors import LoadError
from galene.load import expressions as ex
from galene.load.bounds import (
    DEFAULT_LIMITS,
    BodyLimits,
    check_json_depth,
    check_line_length,
    inflate_all,
    json_too_big,
)
from galene.load.columnar import read_arrow, read_orc, read_parquet
from galene.load.convert import bool_mask, coerce, convert_strings, null_of, one_chunk
from galene.load.csv_reader import read_csv
from galene.load.json_reader import read_json
from galene.load.options import COLUMNAR_FORMATS, COMPRESS_CODECS, CSV_FORMATS, SUPPORTED_FORMATS, LoadOptions
from galene.load.source import RowError, Source, SourcePlan, check_merge_options, typed_renderer
from galene.storage.rowset import storage_schema


@dataclass
class ParsedBatch:
    """A body's rows in the table's storage schema, with its counts and first rejected rows."""

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

    plan = SourcePlan.build(table, opts)
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

    if opts.format not in COLUMNAR_FORMATS:
        _check_hll_sources(plan)
    if opts.format in CSV_FORMATS:
        check_line_length(body, opts.line_delimiter, limits.max_line_bytes)
        source = read_csv(body, plan, opts, max_error_rows)
    elif opts.format in COLUMNAR_FORMATS:
        reader = {"parquet": read_parquet, "orc": read_orc, "arrow": read_arrow}[opts.format]
        source = reader(body, plan, limits)
    else:
        if json_document and len(body) > limits.json_max_bytes:
            raise json_too_big(len(body), limits.json_max_bytes)
        if not json_document:
            check_line_length(body, b"\n", limits.max_line_bytes)
        check_json_depth(body, limits.json_max_depth)
        source = read_json(body, plan, opts)
    return _to_storage_rows(source, plan, table, opts, max_error_rows)


def convert_arrow(data: pa.Table, table: Table, opts: LoadOptions, max_error_rows: int = 50) -> ParsedBatch:
    """Typed rows (a query's result, columns by position as `opts.columns` names them, or the
    table's visible columns) into `table`'s storage schema under the same Doris rules as a
    stream load: values converted to the column types (strict mode, NOT NULL, too-long
    strings, out-of-range numbers), missing columns filled with their defaults, rejected rows
    counted with reasons. The engine's write tasks call this on every batch, so an INSERT
    converts values exactly as a load does."""
    check_merge_options(table, opts)
    plan = SourcePlan.build(table, opts)
    if data.num_columns != len(plan.names):
        raise LoadError(
            f"[INTERNAL_ERROR]{data.num_columns} source columns for {len(plan.names)} target columns"
        )
    columns = {idx: one_chunk(data.column(idx)) for idx in range(data.num_columns)}
    source = Source(data.num_rows, False, columns, [], 0, typed_renderer(plan.names, columns))
    return _to_storage_rows(source, plan, table, opts, max_error_rows)


def _to_storage_rows(
    source: Source, plan: SourcePlan, table: Table, opts: LoadOptions, max_error_rows: int
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


def _check_hll_sources(plan: SourcePlan) -> None:
    """Doris' rule for text loads: a HLL column takes hll_hash(...) or hll_empty(), never a
    source field as it is (Parquet may carry the sketch bytes themselves)."""
    for col in plan.targets:
        if col is not None and col.type.name == "HLL":
            raise LoadError(
                f"[ANALYSIS_ERROR]HLL column must use hll function, like {col.name}=hll_hash(xxx) or "
                f"{col.name}=hll_empty()"
            )


def _is_blank(body: bytes) -> bool:
    # Only a short body can be all whitespace worth checking; strip() would copy a big one.
    return len(body) == 0 or (len(body) < 4096 and not body.strip())


# Reason codes, in the order a column's checks run.
_TOO_LONG, _STRICT_BAD, _NULL, _BAD_NOT_NULL, _EXPR_NULL = 1, 2, 3, 4, 5


def _convert_sources(source: Source, plan: SourcePlan, opts: LoadOptions, max_error_rows: int):
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
                text = pc.if_else(pc.equal(text, ""), null_of(pa.string()), text)
            conv = convert_strings(text, col.type)
        else:
            conv = coerce(one_chunk(text), col.type)
        slot = len(slots)
        slots.append((col, text))
        if conv.too_long is not None:
            reject(conv.too_long, slot, _TOO_LONG)
        if conv.bad is not None and opts.strict_mode:
            reject(conv.bad, slot, _STRICT_BAD)
        if not col.nullable:
            if text.null_count:
                reject(bool_mask(pc.is_null(text)), slot, _NULL)
            if conv.bad is not None:
                reject(conv.bad, slot, _BAD_NOT_NULL)
        converted[col.name.lower()] = conv.values

    selected = None
    if opts.needs_transform:
        ctx = ex.EvalContext(n, opts.local_now(), opts.timezone)
        sources = {name.lower(): one_chunk(source.columns[i]) for i, name in enumerate(plan.names)}
        for col, expr in plan.mappings:
            value = ex.evaluate(expr, sources, ctx)
            conv = coerce(value, col.type)
            slot = len(slots)
            slots.append((col, value))
            # Strict mode is about converting source text; a function's result that does not
            # fit its column becomes NULL, as in Doris.
            if conv.too_long is not None:
                reject(conv.too_long, slot, _TOO_LONG)
            if not col.nullable and conv.values.null_count:
                reject(bool_mask(pc.is_null(conv.values)), slot, _EXPR_NULL)
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
            conv = coerce(ex.broadcast(scope[seq_source.lower()], n), seq_col.type)
            converted[seq_col.name.lower()] = conv.values
        if plan.delete_sign is not None and opts.delete_expr is not None:
            is_delete = bool_mask(_as_bool(ex.evaluate(opts.delete_expr, scope, ctx)))
            converted[plan.delete_sign.name.lower()] = pa.array(is_delete.astype(np.int8), pa.int8())
        if opts.where_expr is not None:
            selected = bool_mask(_as_bool(ex.evaluate(opts.where_expr, scope, ctx)))

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
