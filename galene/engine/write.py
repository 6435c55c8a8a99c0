"""Pipelines write tablets from the engine's own tasks.

Every statement that moves data between tables (INSERT … SELECT, INSERT OVERWRITE, CTAS,
UPDATE, DELETE, compaction) ends here: the engine computes the rows as a DataFrame, and
`write_frame` runs one engine job whose tasks (`mapInArrow`, the same on Apache Spark and on
Sail) do with each Arrow batch what a BE does with a stream-load body — convert the values to
the target columns under Doris' rules (`galene.load.parse.convert_arrow`), route rows to
partitions and buckets (`galene.load.routing`, the placement rule a BE uses, so a key lands in
the same tablet whichever path wrote it) and write Parquet segment files into the storage
root (`galene.load.tablet_writer`, which the BE's local merge of compaction runs writes with
too). This module is the engine's glue around that PySpark-free library: the task functions
given to `mapInArrow`, the shuffle of a UNIQUE table's write, and the driver's job, tags and
cleanup. Only a few small records per task come back to the driver:
the files written and the task's row counts and first errors. The FE commits the file list
as one transaction; no data row passes through it.

UNIQUE KEY tables need one row per key within a version, so their rows are first converted
and given their tablet in one stage, then shuffled by tablet so that every tablet's rows meet
in one task, which keeps the last row per key (highest sequence value first, where the table
has one) before writing. DUPLICATE and AGGREGATE tables (merged at read time) are written
straight from the first stage, with no shuffle.

Files are named `<rowset id>_<random n>.parquet`, with one rowset id per tablet chosen by the
driver for this statement. A task attempt that fails, or a job that fails or is cancelled,
may leave files behind: `discard_statement_files` deletes every file with the statement's
rowset ids that the committed list does not name (and GC would collect them later anyway).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

import msgspec
import pyarrow as pa
import pyarrow.fs as pafs

from galene.catalog.model import Table
from galene.load.options import LoadOptions
from galene.load.parse import convert_arrow
from galene.load.routing import dedup_last_per_key, route_rows
from galene.load.tablet_writer import (
    MAX_ERRORS,
    TabletFiles,
    WriteResult,
    collect_results,
    result_batch,
)
from galene.storage import layout
from galene.storage.fs import filesystem_for
from galene.storage.rowset import delete_quietly, storage_schema

log = logging.getLogger(__name__)

# Hidden columns of the shuffled stage of a UNIQUE table's write.
TABLET_COL = "__galene_tablet"
ERROR_COL = "__galene_error"
# Rows a task converts and routes at a time.
TASK_BATCH_ROWS = 128 * 1024

# The Spark DDL of the tasks' reports (galene.load.tablet_writer.RESULT_SCHEMA).
RESULT_DDL = (
    "tablet_id BIGINT, partition_id BIGINT, file STRING, num_rows BIGINT, data_size BIGINT, "
    "total BIGINT, filtered BIGINT, unselected BIGINT, errors STRING"
)


class WritePlan(msgspec.Struct, kw_only=True):
    """What the tasks need, shipped to them with the function (the table without its rowsets)."""

    table: Table
    storage_uri: str
    columns: list[str]  # target column of each frame column, in frame order
    strict: bool = False
    partitions: list[str] | None = None  # `PARTITION (p…)`: rows of other partitions are filtered
    rowset_ids: dict[int, str] = msgspec.field(default_factory=dict)  # tablet id -> rowset id
    # A DELETE on a UNIQUE table writes its rows with the delete sign set.
    delete_sign: bool = False


def new_rowset_ids(table: Table) -> dict[int, str]:
    """One fresh rowset id per tablet of `table` for one statement."""
    return {tid: uuid.uuid4().hex for p in table.partitions for tid in p.tablet_ids}


def shippable(table: Table) -> Table:
    """The table as tasks need it: without its rowsets (a big table has many)."""
    return msgspec.structs.replace(table, rowsets=[])


# ---------------------------------------------------------------------------------------
# Inside the tasks
# ---------------------------------------------------------------------------------------


def _load_options(plan: WritePlan) -> LoadOptions:
    # Doris' INSERT: strict mode fails the statement on any bad value; otherwise a value that
    # does not convert becomes NULL (and NULL into NOT NULL filters the row).
    opts = LoadOptions(columns=list(plan.columns), strict_mode=plan.strict)
    if plan.delete_sign:
        opts.merge_type = "DELETE"
    return opts


def _convert_and_route(data: pa.Table, plan: WritePlan, opts, counts: list[int], errors: list):
    parsed = convert_arrow(data, plan.table, opts, MAX_ERRORS)
    routed = route_rows(parsed, plan.table, MAX_ERRORS, partitions=plan.partitions)
    counts[0] += parsed.num_total
    counts[1] += parsed.num_filtered + routed.num_filtered
    counts[2] += parsed.num_unselected
    room = MAX_ERRORS - len(errors)
    if room > 0:
        errors.extend([e.raw, e.reason] for e in (list(parsed.errors) + list(routed.errors))[:room])
    return parsed, routed


def _gathered(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.Table]:
    """The engine's batches (10,000 rows on Spark) gathered into tables of TASK_BATCH_ROWS:
    converting and routing cost a fixed overhead per call, paid per gathered table."""
    pending: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        if not batch.num_rows:
            continue
        pending.append(batch)
        rows += batch.num_rows
        if rows >= TASK_BATCH_ROWS:
            yield pa.Table.from_batches(pending)
            pending, rows = [], 0
    if pending:
        yield pa.Table.from_batches(pending)


def direct_writer(plan_bytes: bytes):
    """The task function of a one-stage write (DUPLICATE / AGGREGATE tables)."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        plan = msgspec.msgpack.decode(plan_bytes, type=WritePlan)
        opts = _load_options(plan)
        files = TabletFiles(plan.table, plan.storage_uri, plan.rowset_ids)
        counts, errors = [0, 0, 0], []
        try:
            for data in _gathered(batches):
                _, routed = _convert_and_route(data, plan, opts, counts, errors)
                files.add(routed.per_tablet)
            files.finish()
        except BaseException:
            files.discard()
            raise
        yield result_batch(files, tuple(counts), errors)

    return write


def tablet_tagger(plan_bytes: bytes):
    """First stage of a UNIQUE table's write: rows converted, each with its tablet id; rejected
    rows travel as one row each with only the error set (so the second stage counts them)."""

    def tag(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        plan = msgspec.msgpack.decode(plan_bytes, type=WritePlan)
        opts = _load_options(plan)
        schema = _tagged_schema(storage_schema(plan.table))
        for data in _gathered(batches):
            counts, errors = [0, 0, 0], []
            _, routed = _convert_and_route(data, plan, opts, counts, errors)
            for tid, (_, rows) in routed.per_tablet.items():
                if rows.num_rows:
                    rows = rows.append_column(TABLET_COL, pa.array([tid] * rows.num_rows, pa.int64()))
                    rows = rows.append_column(ERROR_COL, pa.nulls(rows.num_rows, pa.string()))
                    yield from rows.cast(schema).to_batches()
            if counts[0] or counts[1]:
                # One marker row carries this batch's counts and error sample.
                marker = {f.name: pa.nulls(1, f.type) for f in schema}
                marker[TABLET_COL] = pa.array([-1], pa.int64())
                marker[ERROR_COL] = pa.array([msgspec.json.encode([counts, errors]).decode()], pa.string())
                yield pa.RecordBatch.from_arrays([marker[f.name] for f in schema], schema=schema)

    return tag


def _tagged_schema(storage: pa.Schema) -> pa.Schema:
    return pa.schema(list(storage) + [pa.field(TABLET_COL, pa.int64()), pa.field(ERROR_COL, pa.string())])


def dedup_writer(plan_bytes: bytes):
    """Second stage of a UNIQUE table's write: every row of a tablet is in this task; keep the
    last per key and write one file per tablet."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import numpy as np

        plan = msgspec.msgpack.decode(plan_bytes, type=WritePlan)
        table = plan.table
        seq = table.sequence_column()
        tablet_partition = {tid: p.id for p in table.partitions for tid in p.tablet_ids}
        files = TabletFiles(plan.table, plan.storage_uri, plan.rowset_ids)
        counts, errors = [0, 0, 0], []
        per_tablet: dict[int, list[pa.Table]] = {}
        try:
            for batch in batches:
                if not batch.num_rows:
                    continue
                tablets = batch.column(TABLET_COL).to_numpy(zero_copy_only=False)
                markers = np.flatnonzero(tablets == -1)
                for i in markers.tolist():
                    (c, errs) = msgspec.json.decode(batch.column(ERROR_COL)[i].as_py())
                    counts = [a + b for a, b in zip(counts, c, strict=True)]
                    room = MAX_ERRORS - len(errors)
                    errors.extend(errs[: max(0, room)])
                data = pa.Table.from_batches([batch])
                if markers.size:
                    data = data.filter(pa.array(tablets != -1))
                    tablets = tablets[tablets != -1]
                for tid in np.unique(tablets).tolist():
                    rows = data.filter(pa.array(tablets == tid)).drop_columns([TABLET_COL, ERROR_COL])
                    per_tablet.setdefault(int(tid), []).append(rows)
            for tid, parts in per_tablet.items():
                rows = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
                rows = dedup_last_per_key(rows, table.key_columns, seq.name if seq is not None else None)
                files.add({tid: (tablet_partition[tid], rows)})
                files.finish()  # one tablet at a time: memory holds one tablet's rows
            per_tablet.clear()
        except BaseException:
            files.discard()
            raise
        yield result_batch(files, tuple(counts), errors)

    return write


# ---------------------------------------------------------------------------------------
# On the driver
# ---------------------------------------------------------------------------------------


class WriteCancelled(Exception):
    """The statement was cancelled (KILL) while its job ran."""


def write_frame(
    engine,
    df,
    table: Table,
    storage_uri: str,
    *,
    columns: list[str],
    strict: bool,
    partitions: list[str] | None = None,
    delete_sign: bool = False,
    shuffle_partitions: int = 8,
    job_tag: str | None = None,
    rowset_ids: dict[int, str] | None = None,
) -> WriteResult:
    """Run the engine job that writes `df` (columns in `columns` order) into `table`'s tablets.

    Returns the uncommitted rowsets (one per touched tablet, with every file the tasks wrote)
    and the row counts. On any failure the files the job wrote are deleted before the error
    propagates."""
    plan = WritePlan(
        table=shippable(table),
        storage_uri=storage_uri,
        columns=list(columns),
        strict=strict,
        partitions=partitions,
        rowset_ids=rowset_ids or new_rowset_ids(table),
        delete_sign=delete_sign,
    )
    plan_bytes = msgspec.msgpack.encode(plan)
    spark = engine.spark()
    try:
        if job_tag:
            add_tag(spark, job_tag)
        if table.keys_type == "UNIQUE_KEYS" and table.key_columns:
            tagged_ddl = _ddl(_tagged_schema(storage_schema(table)), table)
            tagged = df.mapInArrow(tablet_tagger(plan_bytes), tagged_ddl)
            n = max(1, min(sum(len(p.tablet_ids) for p in table.partitions), shuffle_partitions))
            out = tagged.repartition(n, TABLET_COL).mapInArrow(dedup_writer(plan_bytes), RESULT_DDL)
        else:
            out = df.mapInArrow(direct_writer(plan_bytes), RESULT_DDL)
        records = out.toArrow()
    except BaseException:
        discard_statement_files(storage_uri, table, plan.rowset_ids, keep=set())
        raise
    finally:
        if job_tag:
            remove_tag(spark, job_tag)
    result = collect_results(records, table, plan.rowset_ids)
    # Files of failed task attempts (retried by the engine) are named like the committed ones.
    discard_statement_files(
        storage_uri, table, plan.rowset_ids, keep={f for r in result.rowsets for f in r.files}
    )
    return result


def _ddl(schema: pa.Schema, table: Table) -> str:
    types = {c.name: c.type.to_spark_ddl() for c in table.columns}
    parts = []
    for f in schema:
        t = types.get(f.name) or ("BIGINT" if f.name == TABLET_COL else "STRING")
        parts.append(f"`{f.name.replace('`', '``')}` {t}")
    return ", ".join(parts)


def discard_statement_files(storage_uri: str, table: Table, rowset_ids: dict[int, str], keep: set[str]) -> int:
    """Delete the files of a statement's rowset ids under `table`'s directory that are not in
    `keep` (root-relative paths); returns how many. Listing one table directory is bounded by
    the table's files, and runs once per statement."""
    fs, root = filesystem_for(storage_uri)
    ids = set(rowset_ids.values())
    base = layout.absolute(root, layout.table_rel_dir(table.db_id, table.id))
    try:
        infos = fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
    except OSError:
        log.warning("could not list %s to remove a statement's files", base, exc_info=True)
        return 0
    removed = 0
    for info in infos:
        if info.type != pafs.FileType.File:
            continue
        name = info.path.rsplit("/", 1)[-1]
        rid = name.split("_", 1)[0]
        if rid in ids and layout.relative(root, info.path) not in keep:
            delete_quietly(fs, info.path)
            removed += 1
    return removed


# Job tags (cancellation): SparkSession.addTag/interruptTag exist on classic Spark 3.5+ and
# on Spark Connect; a session without them just cannot be cancelled mid-job.

def add_tag(spark, tag: str) -> None:
    try:
        spark.addTag(tag)
    except Exception:
        log.debug("addTag unsupported", exc_info=True)


def remove_tag(spark, tag: str) -> None:
    try:
        spark.removeTag(tag)
    except Exception:
        log.debug("removeTag unsupported", exc_info=True)


def interrupt(spark, tag: str) -> None:
    try:
        spark.interruptTag(tag)
    except Exception:
        log.warning("could not interrupt job %s", tag, exc_info=True)
