"""The tablet writer: rows already routed to tablets, written as segment files of one new rowset
per tablet, and the report of what was written.

Owns `TabletFiles` (a writer's rows buffered per tablet and written as a Parquet segment —
`galene.storage.rowset.write_segment` — once they pass FILE_BYTES, or at `finish`; named
`<rowset id>_<random n>.parquet` with the rowset id the caller chose for the tablet, so
writers that run apart, the tasks and task attempts of one engine job, need no coordination;
`discard` deletes what it wrote), the report a writer gives (`result_batch`: one record per
file, plus one of row counts and rejected rows, `RESULT_SCHEMA`) and the reports' collection
into uncommitted rowsets (`collect_results` → `WriteResult`).

Used by the engine's write and compaction tasks (`galene.engine.write`,
`galene.engine.compaction`) and by the BE's local merge of small compaction runs
(`galene.load.local_merge`). Imports no PySpark.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import msgspec
import pyarrow as pa

from galene.catalog.model import Rowset, Table
from galene.storage import layout
from galene.storage.fs import filesystem_for
from galene.storage.rowset import delete_quietly, storage_schema, write_segment

# A writer writes a tablet's buffered rows as one file once they pass this many Arrow bytes
# (well under storage.rowset.MAX_FILE_BYTES, so a file never needs splitting).
FILE_BYTES = 128 << 20
# Rows of a rejected-row sample a writer reports, at most.
MAX_ERRORS = 50

# What every writer reports: one row per file written, and one row (file = NULL) of counts.
RESULT_SCHEMA = pa.schema(
    [
        ("tablet_id", pa.int64()),
        ("partition_id", pa.int64()),
        ("file", pa.string()),
        ("num_rows", pa.int64()),
        ("data_size", pa.int64()),
        ("total", pa.int64()),
        ("filtered", pa.int64()),
        ("unselected", pa.int64()),
        ("errors", pa.string()),  # JSON list of [raw row, reason]
    ]
)


@dataclass
class WriteResult:
    """The uncommitted outcome of one write job."""

    rowsets: list[Rowset]
    num_total: int = 0
    num_filtered: int = 0
    num_unselected: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)  # (raw row, reason)

    @property
    def num_loaded(self) -> int:
        return sum(r.num_rows for r in self.rowsets)


class TabletFiles:
    """A writer's files: rows buffered per tablet, written as a file once big enough."""

    def __init__(self, table: Table, storage_uri: str, rowset_ids: dict[int, str]):
        self.table = table
        self.rowset_ids = rowset_ids  # tablet id -> the rowset id its files are named with
        self.fs, self.root = filesystem_for(storage_uri)
        self.schema = storage_schema(table)
        self.buffers: dict[int, tuple[int, list[pa.Table], int]] = {}
        self.written: list[tuple[int, int, str, int, int]] = []  # tablet, partition, file, rows, size

    def add(self, per_tablet: dict[int, tuple[int, pa.Table]]) -> None:
        for tid, (pid, rows) in per_tablet.items():
            if not rows.num_rows:
                continue
            _, parts, size = self.buffers.get(tid, (pid, [], 0))
            parts.append(rows)
            size += rows.nbytes
            self.buffers[tid] = (pid, parts, size)
            if size >= FILE_BYTES:
                self._flush(tid)

    def _flush(self, tid: int) -> None:
        pid, parts, nbytes = self.buffers.pop(tid)
        data = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        path, size = write_segment(
            self.fs,
            self.root,
            self.table,
            pid,
            tid,
            self.rowset_ids[tid],
            _file_number(),
            data,
            nbytes=nbytes,
        )
        self.written.append((tid, pid, path, data.num_rows, size))

    def finish(self) -> None:
        for tid in list(self.buffers):
            self._flush(tid)

    def discard(self) -> None:
        for _, _, f, _, _ in self.written:
            delete_quietly(self.fs, layout.absolute(self.root, f))
        self.written = []


def _file_number() -> int:
    # Unique across the tasks and attempts of a statement without any coordination.
    return random.getrandbits(62)


def result_batch(files: TabletFiles | None, counts: tuple[int, int, int], errors: list) -> pa.RecordBatch:
    """A writer's report: a record per file written and one of (total, filtered, unselected)
    row counts with the first rejected rows ([raw row, reason] pairs)."""
    rows = [] if files is None else files.written
    n = len(rows) + 1
    return pa.RecordBatch.from_arrays(
        [
            pa.array([r[0] for r in rows] + [None], pa.int64()),
            pa.array([r[1] for r in rows] + [None], pa.int64()),
            pa.array([r[2] for r in rows] + [None], pa.string()),
            pa.array([r[3] for r in rows] + [None], pa.int64()),
            pa.array([r[4] for r in rows] + [None], pa.int64()),
            pa.array([None] * (n - 1) + [counts[0]], pa.int64()),
            pa.array([None] * (n - 1) + [counts[1]], pa.int64()),
            pa.array([None] * (n - 1) + [counts[2]], pa.int64()),
            pa.array([None] * (n - 1) + [msgspec.json.encode(errors[:MAX_ERRORS]).decode()], pa.string()),
        ],
        schema=RESULT_SCHEMA,
    )


def collect_results(records: pa.Table, table: Table, rowset_ids: dict[int, str]) -> WriteResult:
    """The writers' reports (RESULT_SCHEMA records) as one uncommitted rowset per tablet written
    (files sorted, rowsets in tablet order) and the summed counts."""
    rows = records.to_pylist()
    by_tablet: dict[int, Rowset] = {}
    result = WriteResult(rowsets=[])
    for r in rows:
        if r["file"] is None:
            result.num_total += r["total"] or 0
            result.num_filtered += r["filtered"] or 0
            result.num_unselected += r["unselected"] or 0
            if r["errors"] and len(result.errors) < MAX_ERRORS:
                result.errors.extend(tuple(e) for e in msgspec.json.decode(r["errors"]))
            continue
        tid = r["tablet_id"]
        rs = by_tablet.get(tid)
        if rs is None:
            rs = by_tablet[tid] = Rowset(
                id=rowset_ids[tid],
                tablet_id=tid,
                partition_id=r["partition_id"],
                schema_version=table.schema_version,  # the writers wrote `table`'s storage schema
            )
        rs.files.append(r["file"])
        rs.num_rows += r["num_rows"]
        rs.data_size += r["data_size"]
    for rs in by_tablet.values():
        rs.files.sort()
    result.rowsets = [by_tablet[t] for t in sorted(by_tablet)]
    result.errors = result.errors[:MAX_ERRORS]
    return result
