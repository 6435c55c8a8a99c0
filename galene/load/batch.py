"""Parsing many small CSV bodies of one table in one pyarrow call.

pyarrow's CSV reader costs ~150 µs per call whatever the size, far above the cost of the
ten rows a logging client sends; small bodies that arrive together are therefore joined
and parsed once, each load's counts read off its line count. Only a batch that parses
cleanly (direct conversion, no rejected row, one row per line) is taken whole; anything
else is parsed body by body, so every load gets exactly the counts, errors and
max_filter_ratio verdict it would get alone.
"""

from __future__ import annotations

import pyarrow as pa

from galene.catalog.model import Table
from galene.common.errors import error_message
from galene.load.options import LoadOptions
from galene.load.parse import ParsedBatch, parse_body
from galene.load.source import has_clock_defaults
from galene.load.verdict import TOO_MANY_FILTERED, filter_ratio_exceeded

# Bodies up to this size take part in batches.
BATCH_PARSE_MAX_BODY = 64 << 10


def batch_key(table: Table, opts: LoadOptions, body: bytes) -> tuple | None:
    """What loads must share to be parsed together, or None when this body must be parsed
    alone: only plain CSV with \n lines whose row count is plain to see (no empty lines, no
    CR, which pyarrow also treats as a line end), into a table none of whose columns defaults
    to the load's clock (loads parsed together share one set of options, and one clock)."""
    if (
        opts.format != "csv"
        or opts.line_delimiter != b"\n"
        or opts.enclose
        or opts.escape
        or opts.trim_double_quotes
        or opts.skip_lines
        or opts.compress_type
        or opts.needs_transform
        or opts.merge_type != "APPEND"
        or opts.sequence_col
        or not body
        or body.startswith(b"\n")
        or b"\n\n" in body
        or b"\r" in body
        or has_clock_defaults(table)
    ):
        return None
    columns = tuple(opts.columns) if opts.columns else None
    # Every option the parse and the verdict read (max_filter_ratio included: the verdict is
    # given where the loads are parsed).
    return (
        id(table),
        opts.column_separator,
        columns,
        opts.strict_mode,
        opts.empty_field_as_null,
        opts.timezone,
        opts.max_filter_ratio,
    )


def rows_in(body: bytes) -> int:
    return body.count(b"\n") + (0 if body.endswith(b"\n") else 1)


def parse_together(
    bodies: list[bytes], table: Table, opts: LoadOptions, max_error_rows: int
) -> tuple[list[int] | None, ParsedBatch | None]:
    """One parse of the joined bodies: (rows of each body, the whole batch) when the whole
    parsed cleanly (every line one row, nothing filtered), else (None, None)."""
    counts = [rows_in(b) for b in bodies]
    combined = b"".join(b if b.endswith(b"\n") else b + b"\n" for b in bodies)
    try:
        whole = parse_body(combined, table, opts, max_error_rows)
    except Exception:  # noqa: BLE001 - each body is parsed alone and gets its own error
        return None, None
    total = sum(counts)
    if (
        whole.num_total == total
        and whole.data.num_rows == total
        and not whole.num_filtered
        and not whole.num_unselected
        and not whole.errors
    ):
        return counts, whole
    return None, None


# A lane load's answer: (status, total, filtered, unselected, loaded, errors). status is None
# when the load passed, else its failure message; errors are its rejected rows (or None).
LaneAnswerTuple = tuple


def parse_lane_loads(
    bodies: list[bytes], table: Table, opts: LoadOptions, max_error_rows: int
) -> tuple[list[LaneAnswerTuple], pa.Table | None]:
    """Parse small loads together and judge each against max_filter_ratio (the ingest
    worker's step for SmallLoadLane loads). Returns each load's answer and the rows of the
    loads that passed, as one table (None when none passed)."""
    if len(bodies) > 1:
        counts, whole = parse_together(bodies, table, opts, max_error_rows)
        if whole is not None:  # the common case: one parse, every load passed
            return [(None, n, 0, 0, n, None) for n in counts], whole.data
    results: list[ParsedBatch | Exception] = []
    for body in bodies:
        try:
            results.append(parse_body(body, table, opts, max_error_rows))
        except Exception as e:  # noqa: BLE001 - the load's own parse error
            results.append(e)
    answers: list[LaneAnswerTuple] = []
    passed: list[bool] = []
    for r in results:
        if isinstance(r, Exception):
            answers.append((error_message(r), 0, 0, 0, 0, None))
            passed.append(False)
            continue
        ok = not filter_ratio_exceeded(r.num_total, r.num_filtered, r.num_unselected, opts.max_filter_ratio)
        answers.append(
            (
                None if ok else TOO_MANY_FILTERED,
                r.num_total,
                r.num_filtered,
                r.num_unselected,
                r.data.num_rows if ok else 0,
                r.errors[:max_error_rows] or None,
            )
        )
        passed.append(ok)
    tables = [r.data for r, p in zip(results, passed, strict=True) if p]  # type: ignore[union-attr]
    if not tables:
        return answers, None
    return answers, tables[0] if len(tables) == 1 else pa.concat_tables(tables).combine_chunks()
