"""Parsing many small CSV bodies of one table in one pyarrow call.

pyarrow's CSV reader costs ~200 µs per call whatever the size, far above the cost of the
ten rows a logging client sends; small bodies that arrive together are therefore joined,
parsed once and split back by row counts. Only a batch that parses cleanly (direct
conversion, no rejected row, one row per line) is split; anything else is parsed body by
body, so every load gets exactly the counts and errors it would get alone.
"""

from __future__ import annotations

from galene.be.load_options import LoadOptions
from galene.be.parse import ParsedBatch, parse_body
from galene.catalog.model import Table

# Bodies up to this size take part in batches.
BATCH_PARSE_MAX_BODY = 64 << 10


def batch_key(table: Table, opts: LoadOptions, body: bytes) -> tuple | None:
    """What loads must share to be parsed together, or None when this body must be parsed
    alone: only plain CSV with \n lines whose row count is plain to see (no empty lines, no
    CR, which pyarrow also treats as a line end)."""
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
    ):
        return None
    columns = tuple(opts.columns) if opts.columns else None
    return (
        id(table),
        opts.column_separator,
        columns,
        opts.strict_mode,
        opts.empty_field_as_null,
        opts.timezone,
    )


def rows_in(body: bytes) -> int:
    return body.count(b"\n") + (0 if body.endswith(b"\n") else 1)


def parse_together(
    bodies: list[bytes], table: Table, opts: LoadOptions, max_error_rows: int
) -> list[ParsedBatch | Exception]:
    """One parse of the joined bodies, split back by row counts; or, when the
    whole is not clean, each body alone (its own result or its own error)."""
    if len(bodies) > 1:
        combined = b"".join(b if b.endswith(b"\n") else b + b"\n" for b in bodies)
        counts = [rows_in(b) for b in bodies]
        try:
            whole = parse_body(combined, table, opts, max_error_rows)
        except Exception:  # noqa: BLE001 - each body is parsed alone below and gets its own error
            whole = None
        total = sum(counts)
        if (
            whole is not None
            and whole.num_total == total
            and whole.data.num_rows == total
            and not whole.num_filtered
            and not whole.num_unselected
            and not whole.errors
        ):
            split: list[ParsedBatch | Exception] = []
            start = 0
            for n in counts:
                split.append(ParsedBatch(data=whole.data.slice(start, n), num_total=n, num_filtered=0))
                start += n
            return split
    results: list[ParsedBatch | Exception] = []
    for body in bodies:
        try:
            results.append(parse_body(body, table, opts, max_error_rows))
        except Exception as e:  # noqa: BLE001 - the load's own parse error
            results.append(e)
    return results
