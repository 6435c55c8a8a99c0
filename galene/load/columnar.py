"""The columnar reader of a load: a Parquet body as typed source columns.

Columns are matched to the source names by name (case-insensitively) and keep their file
types; `galene.load.convert.coerce` brings them to the column types. (Doris' other columnar
formats, ORC and Arrow, are refused before any reader runs: `options.SUPPORTED_FORMATS`.)
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as papq

from galene.common.errors import LoadError
from galene.load.bounds import BodyLimits, body_too_big
from galene.load.convert import one_chunk
from galene.load.source import Source, SourcePlan, typed_renderer


def read_parquet(body: bytes, plan: SourcePlan, limits: BodyLimits) -> Source:
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
        columns[idx] = one_chunk(tbl.column(i)) if i is not None else pa.nulls(n, pa.string())

    return Source(n, False, columns, [], 0, typed_renderer(plan.names, columns))
