"""Small compaction runs merged with pyarrow, without an engine job (`compact_small_run`).

The merge rules are the engine job's (`engine/compaction.py`): DUPLICATE keeps every row;
UNIQUE keeps per key the row of the highest sequence value (NULL lowest), then the highest
version, and drops rows whose delete sign is set when the job says so; the files are written
by the engine tasks' segment writer (`galene.load.tablet_writer`). A compaction job costs an
engine a second or two of CPU whatever its size, which a table fed by group commit (a rowset a
second, a cumulative
compaction every few seconds) paid over and over beside its loads; a merge here takes
milliseconds. Runs are bounded (`merges_locally`: config `compaction_local_max_mb`), and the
FE has a BE run them (`POST /api/_internal/compaction/merge`, be/compaction_api.py): data
rows never pass through the FE, which only commits the rowsets returned. This module imports
no PySpark, so a BE can use it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import msgspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from galene.catalog.model import DELETE_SIGN, Rowset, Table, key_columns
from galene.common.errors import GaleneError
from galene.load.routing import dedup_last_per_key
from galene.load.tablet_writer import TabletFiles, WriteResult, collect_results, result_batch
from galene.storage import layout
from galene.storage.fs import filesystem_for
from galene.storage.rowset import read_rowset, storage_schema


@dataclass
class TabletCompaction:
    """One tablet's part of a compaction job."""

    tablet_id: int
    partition_id: int
    rowsets: list[Rowset]  # contiguous in the tablet's version order, oldest first
    # Rows whose delete sign is set are dropped: the run starts at the tablet's oldest rowset
    # and the table has no sequence column, so no row anywhere can be hidden by them.
    drop_deletes: bool = False

    @property
    def version(self) -> int:
        return max(r.version for r in self.rowsets)


def new_rowset_ids(jobs: list[TabletCompaction]) -> dict[int, str]:
    return {j.tablet_id: uuid.uuid4().hex for j in jobs}


def check_inputs(storage_uri: str, table: Table, jobs: list[TabletCompaction]) -> None:
    """Raise if a file of the runs is missing. Apache Spark fails a read of a missing file, but
    Sail reads it as empty: the merged rowset would then drop its rows without a word. One
    listing per tablet directory (not a request per file, which an object store bills)."""
    fs, root = filesystem_for(storage_uri)
    for j in jobs:
        directory = layout.tablet_dir(root, table.db_id, table.id, j.partition_id, j.tablet_id)
        infos = fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True))
        present = {layout.relative(root, i.path) for i in infos if i.type == pafs.FileType.File}
        for r in j.rowsets:
            for f in r.files:
                if f not in present:
                    raise GaleneError(
                        f"file {f} of rowset {r.id} (tablet {j.tablet_id}, version {r.version}) is missing"
                    )


# Input (the rowsets' recorded sizes) up to which DUPLICATE runs are merged locally (UNIQUE:
# a quarter of it); config compaction_local_max_mb.
LOCAL_MAX_BYTES = 64 << 20
LOCAL_MAX_ROWSETS = 1000


def merges_locally(table: Table, jobs: list[TabletCompaction], max_bytes: int) -> bool:
    """Whether `compact_locally` takes these jobs: a DUPLICATE or UNIQUE table, every input
    rowset written with the table's current columns (no schema mapping), and at most
    `max_bytes` of input in all (the rowsets' recorded sizes) — a quarter of it for UNIQUE,
    whose runs are held whole for the merge (DUPLICATE runs stream through, a rowset at a
    time, holding at most one output file's rows) — in at most LOCAL_MAX_ROWSETS rowsets: one
    thread reads the files one after another, where an engine job reads thousands of tiny
    files in parallel (an ADMIN COMPACT of a table fed by 5,000 loads, say)."""
    if max_bytes <= 0 or table.keys_type not in ("DUP_KEYS", "UNIQUE_KEYS"):
        return False
    if table.keys_type == "UNIQUE_KEYS":
        if not key_columns(table):
            return False
        max_bytes //= 4
    rowsets = [r for j in jobs for r in j.rowsets]
    if len(rowsets) > LOCAL_MAX_ROWSETS:
        return False
    if any(r.schema_version != table.schema_version for r in rowsets):
        return False
    return sum(r.data_size for r in rowsets) <= max_bytes


def compact_locally(
    table: Table, jobs: list[TabletCompaction], storage_uri: str, rowset_ids: dict[int, str]
) -> WriteResult:
    """The merge of `merged_frame` for DUPLICATE/UNIQUE runs `merges_locally` takes, with
    pyarrow: each tablet's rowsets read oldest first; DUPLICATE keeps every row (streamed into
    the tablet's files); UNIQUE keeps per key the row of the highest sequence value (NULL
    lowest), then the highest version — the BE's `dedup_last_per_key` over the run's rows in
    version order — and drops rows whose delete sign is set when the job says so. Written by
    the engine tasks' segment writer (`tablet_writer.TabletFiles`), each tablet's last file before the
    next tablet is read; on any failure the files written are deleted."""
    files = TabletFiles(table, storage_uri, dict(rowset_ids))
    schema = storage_schema(table)
    seq = table.sequence_column()
    keys = key_columns(table) if table.keys_type == "UNIQUE_KEYS" else []
    try:
        for j in jobs:
            ordered = sorted(j.rowsets, key=lambda r: r.version)
            if not keys:
                for r in ordered:
                    files.add({j.tablet_id: (j.partition_id, read_rowset(files.fs, files.root, r, schema))})
                files.finish()
                continue
            parts = [read_rowset(files.fs, files.root, r, schema) for r in ordered]
            rows = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
            del parts
            rows = dedup_last_per_key(rows, keys, seq.name if seq is not None else None)
            if j.drop_deletes and table.column(DELETE_SIGN) is not None:
                # As the engine's merge: anything but 0 (or NULL) deletes.
                sign = pc.fill_null(pc.cast(rows.column(DELETE_SIGN), pa.int32()), 0)
                rows = rows.filter(pc.equal(sign, 0))
            files.add({j.tablet_id: (j.partition_id, rows)})
            files.finish()
    except BaseException:
        files.discard()
        raise
    return collect_results(pa.Table.from_batches([result_batch(files, (0, 0, 0), [])]), table, rowset_ids)


def compact_small_run(
    table: Table, jobs: list[TabletCompaction], storage_uri: str, rowset_ids: dict[int, str]
) -> list[Rowset]:
    """`compact_locally` after `check_inputs`: the uncommitted rowsets, each at its run's
    highest version (a tablet whose rows all went has none)."""
    check_inputs(storage_uri, table, jobs)
    result = compact_locally(table, jobs, storage_uri, rowset_ids)
    version = {j.tablet_id: j.version for j in jobs}
    return [msgspec.structs.replace(r, version=version[r.tablet_id], txn_id=0) for r in result.rowsets]


def encode_jobs(jobs: list[TabletCompaction]) -> list[dict]:
    return [
        {
            "tablet_id": j.tablet_id,
            "partition_id": j.partition_id,
            "rowsets": msgspec.to_builtins(j.rowsets),
            "drop_deletes": j.drop_deletes,
        }
        for j in jobs
    ]


def decode_jobs(raw: list[dict]) -> list[TabletCompaction]:
    return [
        TabletCompaction(
            int(d["tablet_id"]),
            int(d["partition_id"]),
            msgspec.convert(d["rowsets"], list[Rowset]),
            drop_deletes=bool(d.get("drop_deletes")),
        )
        for d in raw
    ]
