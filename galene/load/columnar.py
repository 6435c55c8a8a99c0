"""The columnar readers of a load: a Parquet, ORC or Arrow (IPC stream or file) body as typed
source columns.

Columns are matched to the source names by name (case-insensitively) and keep their file
types, nested ones (list / map / struct) included; `galene.load.convert.coerce` brings them to
the column types. Each reader bounds what the body inflates to by streaming_load_max_mb before
(Parquet: its footer) or while (ORC stripes, Arrow batches) it decodes.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.orc as paorc
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
    return _source(tbl, plan)


def read_orc(body: bytes, plan: SourcePlan, limits: BodyLimits) -> Source:
    """An ORC body, read stripe by stripe within streaming_load_max_mb once decoded."""
    try:
        orc = paorc.ORCFile(pa.BufferReader(body))
        batches, total = [], 0
        for i in range(orc.nstripes):
            batch = orc.read_stripe(i)
            total += batch.nbytes
            if total > limits.max_body_bytes:
                raise body_too_big(
                    f"> {total} (ORC stripes decoded)", limits.max_body_bytes, limits.max_body_key
                )
            batches.append(batch)
        tbl = pa.Table.from_batches(batches, schema=orc.schema)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise LoadError(f"[DATA_QUALITY_ERROR]failed to read the body as ORC: {e}") from None
    return _source(tbl, plan)


def read_arrow(body: bytes, plan: SourcePlan, limits: BodyLimits) -> Source:
    """An Arrow IPC body (stream, as Doris' `arrow` format sends it, or file), batch by batch
    within streaming_load_max_mb once decoded."""
    try:
        if body[:6] == b"ARROW1":
            file = pa.ipc.open_file(pa.BufferReader(body))
            reader = (file.get_batch(i) for i in range(file.num_record_batches))
            schema = file.schema
        else:
            stream = pa.ipc.open_stream(pa.BufferReader(body))
            reader, schema = iter(stream), stream.schema
        batches, total = [], 0
        for batch in reader:
            total += batch.nbytes
            if total > limits.max_body_bytes:
                raise body_too_big(
                    f"> {total} (Arrow batches decoded)", limits.max_body_bytes, limits.max_body_key
                )
            batches.append(batch)
        tbl = pa.Table.from_batches(batches, schema=schema)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise LoadError(f"[DATA_QUALITY_ERROR]failed to read the body as Arrow: {e}") from None
    return _source(tbl, plan)


def _source(tbl: pa.Table, plan: SourcePlan) -> Source:
    """Source columns by name (case-insensitive) out of a decoded columnar body."""
    by_name: dict[str, int] = {}
    for i, name in enumerate(tbl.column_names):
        by_name.setdefault(name.lower(), i)
    n = tbl.num_rows
    columns = {}
    for idx, name in enumerate(plan.names):
        i = by_name.get(name.lower())
        columns[idx] = one_chunk(tbl.column(i)) if i is not None else pa.nulls(n, pa.string())

    return Source(n, False, columns, [], 0, typed_renderer(plan.names, columns))
