"""Compaction as an engine job: some rowsets of a tablet merged into one rowset.

For each tablet of a job, a contiguous run of its rowsets (in version order) is read on the
engine and merged with the table's key semantics — the same rules `galene.engine.scan` applies
at read time, so a query sees the same rows before and after:

* UNIQUE_KEYS: per key, the row of the highest version (the highest sequence value first where
  the table has a sequence column). Rows whose delete sign is set are kept unless the caller
  says `drop_deletes`: a kept delete still hides the key's rows in older rowsets outside the run
  (and, with a sequence column, rows loaded later with a lower sequence value), so only a run
  from the tablet's oldest rowset of a table without a sequence column may drop them.
* AGG_KEYS: one row per key, value columns folded with their aggregation (REPLACE and
  REPLACE_IF_NOT_NULL by version).
* DUP_KEYS: every row.

Rows are hash-partitioned by tablet first, so each tablet's rows meet in one task and the merge
needs no second shuffle; the tasks (`mapInArrow`) write each tablet's rows as segment files
with the tablet writer (`galene.load.tablet_writer`), the job run as `galene.engine.write` runs
its own. Only the file list returns to the driver. The new rowset's version is the run's highest version; the
caller commits it with `CatalogService.compact_rowsets` (one journal op, no new table version).

Small DUPLICATE and UNIQUE runs (`galene.load.local_merge.merges_locally`) are merged by a BE with pyarrow
instead (`local_merge.compact_small_run`, behind `POST /api/_internal/compaction/merge`): the
same rules, the same segment writer, a few milliseconds instead of an engine job's fixed second
or two of CPU. The FE sends a run here only when no BE merged it, whatever its size: this
module never merges in the calling process, so no data rows pass through the FE.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator

import msgspec
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, LongType, MapType, StringType

from galene.catalog.model import DELETE_SIGN, Rowset, Table, columns_at, key_columns
from galene.common.errors import GaleneError
from galene.engine import write as w
from galene.engine.scan import (
    VERSION_COL,
    aggregate_column,
    file_read_plan,
    file_uri,
    read_parquet,
    union_tree,
)
from galene.load.local_merge import (  # noqa: F401 - TabletCompaction, new_rowset_ids: this module's API too
    TabletCompaction,
    check_inputs,
    new_rowset_ids,
)
from galene.load.tablet_writer import TabletFiles, collect_results, result_batch

log = logging.getLogger(__name__)

TABLET_COL = w.TABLET_COL
_ROW_NUMBER_COL = "__galene_rn"
# File names Spark reports as `_metadata.file_name` unchanged (it URL-encodes others).
_PLAIN_NAME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


# ---------------------------------------------------------------------------------------
# The merged rows
# ---------------------------------------------------------------------------------------


def input_frame(
    spark: SparkSession, table: Table, jobs: list[TabletCompaction], storage_uri: str
) -> DataFrame:
    """Every row of the jobs' rowsets (all columns, hidden ones too) with VERSION_COL and TABLET_COL,
    in the table's current columns: rowsets written before a schema change are read with their
    own schema and mapped by column id (galene.engine.scan), so the output has today's schema."""
    by_schema: dict[int, dict[int, tuple[TabletCompaction, list[Rowset]]]] = {}
    for j in jobs:
        for r in j.rowsets:
            by_schema.setdefault(r.schema_version, {}).setdefault(j.tablet_id, (j, []))[1].append(r)
    frames = []
    for version, parts in sorted(by_schema.items(), key=lambda kv: (kv[0] != table.schema_version, kv[0])):
        schema, projection = file_read_plan(table, columns_at(table, version), include_hidden=True)
        group = [dataclasses.replace(j, rowsets=rowsets) for j, rowsets in parts.values()]
        df = _input_frame(spark, schema, group, storage_uri)
        if projection is not None:
            df = df.select(*projection, F.col(VERSION_COL), F.col(TABLET_COL))
        frames.append(df)
    return union_tree(frames)


def _input_frame(spark: SparkSession, schema, jobs: list[TabletCompaction], storage_uri: str) -> DataFrame:
    """The jobs' rowsets (all written with one schema) read with `schema`, plus VERSION_COL and TABLET_COL."""
    entries: dict[str, list[int]] = {}
    plain = True
    for j in jobs:
        for r in j.rowsets:
            for f in r.files:
                name = f.rsplit("/", 1)[-1]
                if name in entries or not _PLAIN_NAME.issuperset(name):
                    plain = False
                entries[name] = [r.version, j.tablet_id]
    if plain:
        # As in scan: one JSON literal (folded into a map literal by the optimizer) instead of
        # a literal per file, so the plan costs the same whatever the number of files.
        paths = [file_uri(storage_uri, f) for j in jobs for r in j.rowsets for f in r.files]
        meta = F.from_json(F.lit(json.dumps(entries)), MapType(StringType(), ArrayType(LongType())))
        entry = meta[F.col("_metadata.file_name")]
        df = read_parquet(spark, schema, paths)
        df = df.withColumn(VERSION_COL, entry[0]).withColumn(TABLET_COL, entry[1])
        if _resolves_file_names(spark, df):
            return df
    # Unusual file names, or an engine without the file metadata column (Sail): one read per
    # rowset with its version and tablet as literals, combined as a balanced tree of unions.
    frames = [
        read_parquet(spark, schema, [file_uri(storage_uri, f) for f in r.files])
        .withColumn(VERSION_COL, F.lit(r.version).cast("long"))
        .withColumn(TABLET_COL, F.lit(j.tablet_id).cast("long"))
        for j in jobs
        for r in j.rowsets
        if r.files
    ]
    while len(frames) > 1:
        frames = [a.unionAll(b) for a, b in zip(frames[::2], frames[1::2], strict=False)] + (
            [frames[-1]] if len(frames) % 2 else []
        )
    return frames[0]


def _resolves_file_names(spark: SparkSession, df: DataFrame) -> bool:
    """Whether the engine resolves `_metadata.file_name`: Apache Spark (a JVM session) does; a
    Connect server (Spark or Sail) is asked by analysing `df` once per job."""
    if getattr(spark, "_jvm", None) is not None:
        return True
    try:
        df.schema  # noqa: B018 - analysis on the server: one round trip
        return True
    except Exception as e:
        if "_metadata" not in str(e):
            raise
        return False


def merged_frame(
    spark: SparkSession, table: Table, jobs: list[TabletCompaction], storage_uri: str, partitions: int
) -> DataFrame:
    """The compacted rows: the table's storage columns in table order, plus TABLET_COL, with
    every tablet's rows in one of `partitions` engine partitions."""
    columns = [c.name for c in table.columns]
    # Partitioning by tablet satisfies the (tablet, key) clustering the window and the
    # aggregation below need, so the engine shuffles once.
    df = input_frame(spark, table, jobs, storage_uri).repartition(max(1, partitions), TABLET_COL)
    if table.keys_type == "DUP_KEYS":
        return df.select(*columns, TABLET_COL)
    keys = key_columns(table)
    if not keys:
        raise GaleneError(f"table {table.name} of type {table.keys_type} has no key columns")
    if table.keys_type == "UNIQUE_KEYS":
        return _unique(table, keys, df, jobs).select(*columns, TABLET_COL)
    if table.keys_type == "AGG_KEYS":
        return _agg(table, keys, df).select(*columns, TABLET_COL)
    raise GaleneError(f"unknown keys type {table.keys_type}")


def _unique(table: Table, keys: list[str], df: DataFrame, jobs: list[TabletCompaction]) -> DataFrame:
    # The order scan uses at read time: the highest sequence value (NULL lowest), then the
    # highest version.
    order = [F.col(VERSION_COL).desc()]
    seq = table.sequence_column()
    if seq is not None:
        order.insert(0, F.col(seq.name).desc_nulls_last())
    latest_first = Window.partitionBy(TABLET_COL, *keys).orderBy(*order)
    df = df.withColumn(_ROW_NUMBER_COL, F.row_number().over(latest_first)).where(F.col(_ROW_NUMBER_COL) == 1)
    dropping = [j.tablet_id for j in jobs if j.drop_deletes]
    if dropping and table.column(DELETE_SIGN) is not None:
        # As scan: anything but 0 (or NULL) deletes.
        live = F.coalesce(F.col(DELETE_SIGN).cast("int"), F.lit(0)) == 0
        keep = live if len(dropping) == len(jobs) else (live | ~F.col(TABLET_COL).isin(dropping))
        df = df.where(keep)
    return df


def _agg(table: Table, keys: list[str], df: DataFrame) -> DataFrame:
    key_set = {k.lower() for k in keys}
    values = [c for c in table.columns if c.name.lower() not in key_set]
    if not values:
        return df.select(TABLET_COL, *keys).distinct()
    aggs = []
    for c in values:
        if c.hidden:
            # Hidden columns are never read by queries; keep the latest value.
            aggs.append(F.max_by(F.col(c.name), F.col(VERSION_COL)).alias(c.name))
        else:
            aggs.append(aggregate_column(c, True))
    return df.groupBy(TABLET_COL, *keys).agg(*aggs)


# ---------------------------------------------------------------------------------------
# Inside the tasks
# ---------------------------------------------------------------------------------------


def segment_writer(plan_bytes: bytes):
    """The task function: every row of a tablet is in this task; write its segment files."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import numpy as np

        plan = msgspec.msgpack.decode(plan_bytes, type=w.WritePlan)
        tablet_partition = {tid: p.id for p in plan.table.partitions for tid in p.tablet_ids}
        files = TabletFiles(plan.table, plan.storage_uri, plan.rowset_ids)
        try:
            for batch in batches:
                if not batch.num_rows:
                    continue
                tablets = batch.column(TABLET_COL).to_numpy(zero_copy_only=False)
                data = pa.Table.from_batches([batch]).drop_columns([TABLET_COL])
                ids = np.unique(tablets).tolist()
                for tid in ids:
                    # A batch holds one tablet's rows when its engine partition holds one tablet.
                    rows = data if len(ids) == 1 else data.filter(pa.array(tablets == tid))
                    files.add({int(tid): (tablet_partition[int(tid)], rows)})
            files.finish()
        except BaseException:
            files.discard()
            raise
        yield result_batch(files, (0, 0, 0), [])

    return write


# ---------------------------------------------------------------------------------------
# On the driver
# ---------------------------------------------------------------------------------------


def compact_tablets(
    engine,
    table: Table,
    jobs: list[TabletCompaction],
    storage_uri: str,
    *,
    rowset_ids: dict[int, str],
    parallelism: int = 4,
    job_tag: str | None = None,
) -> list[Rowset]:
    """Merge each job's rowsets into one new rowset of its tablet, as one engine job.

    Returns the uncommitted rowsets (a tablet whose rows all went — deletes dropped by a base
    compaction — has none), each at its run's highest version. On any failure the files the
    job wrote are deleted before the error propagates."""
    if not jobs:
        return []
    check_inputs(storage_uri, table, jobs)
    plan = w.WritePlan(
        table=w.shippable(table), storage_uri=storage_uri, columns=[], rowset_ids=dict(rowset_ids)
    )
    plan_bytes = msgspec.msgpack.encode(plan)
    spark = engine.spark()
    partitions = max(1, min(len(jobs), parallelism))
    try:
        if job_tag:
            w.add_tag(spark, job_tag)
        merged = merged_frame(spark, table, jobs, storage_uri, partitions)
        records = merged.mapInArrow(segment_writer(plan_bytes), w.RESULT_DDL).toArrow()
    except BaseException:
        w.discard_statement_files(storage_uri, table, rowset_ids, keep=set())
        raise
    finally:
        if job_tag:
            w.remove_tag(spark, job_tag)
    result = collect_results(records, table, rowset_ids)
    # Files of failed task attempts (retried by the engine) are named like the kept ones.
    w.discard_statement_files(
        storage_uri, table, rowset_ids, keep={f for r in result.rowsets for f in r.files}
    )
    version = {j.tablet_id: j.version for j in jobs}
    return [msgspec.structs.replace(r, version=version[r.tablet_id], txn_id=0) for r in result.rowsets]
