"""Rowset files: writing one load's rows for one tablet as Parquet, reading and deleting them.

A rowset is written under temporary names (`<final>.tmp`) and moved into place, so a
reader never sees a half-written file; it becomes part of a table only when the FE
journals the commit that references it (until then it is an orphan for `storage.gc`).
The storage schema (column order, Arrow types) is defined here and nowhere else.
"""

from __future__ import annotations

import os
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from galene.catalog.model import Rowset, Table
from galene.common.files import fsync_path
from galene.storage import layout

# A file holds at most about this much Arrow data; bigger rowsets are split into _0, _1, ...
MAX_FILE_BYTES = 1 << 30
# Row groups aim at this much Arrow data (Spark splits scans by row group).
ROW_GROUP_BYTES = 128 << 20
MIN_ROW_GROUP_ROWS = 64 * 1024
MAX_ROW_GROUP_ROWS = 1024 * 1024
COMPRESSION = "snappy"
# A column's dictionary falls back to plain encoding once it outgrows this. The Parquet
# default (1 MiB) makes the writer build a useless dictionary over most of a
# high-cardinality column in tablet-sized files, which measured 2-3x slower writes.
DICTIONARY_PAGE_LIMIT = 128 << 10


def storage_schema(table: Table) -> pa.Schema:
    """Arrow schema of the table's data files: every column (hidden ones too), in table order.

    Files are written with the schema of the Table struct the writer holds and their rowset
    records its `schema_version` (stamped here and by the engine's writer): after a schema
    change, readers map older files to the current columns by column id (engine/scan.py).

    Fields are nullable in the files even for NOT NULL columns: the loader enforces NOT NULL,
    and uniform nullability keeps rowsets written before and after a schema change readable
    as one dataset.
    """
    return pa.schema([pa.field(c.name, c.type.to_arrow()) for c in table.columns])


def new_rowset_id() -> str:
    return uuid.uuid4().hex


def _row_group_rows(data: pa.Table, nbytes: int | None = None) -> int:
    if data.num_rows == 0:
        return MIN_ROW_GROUP_ROWS
    per_row = max(1, (data.nbytes if nbytes is None else nbytes) // data.num_rows)
    return int(min(MAX_ROW_GROUP_ROWS, max(MIN_ROW_GROUP_ROWS, ROW_GROUP_BYTES // per_row)))


def _file_slices(data: pa.Table) -> list[pa.Table]:
    if data.nbytes <= MAX_FILE_BYTES or data.num_rows <= 1:
        return [data]
    pieces = -(-data.nbytes // MAX_FILE_BYTES)
    step = -(-data.num_rows // pieces)
    return [data.slice(start, step) for start in range(0, data.num_rows, step)]


def write_rowset(
    fs: pafs.FileSystem,
    root: str,
    table: Table,
    partition_id: int,
    tablet_id: int,
    data: pa.Table,
    rowset_id: str | None = None,
    *,
    sync: bool = True,
) -> Rowset:
    """Write `data` (storage schema) as a rowset of one tablet; return its uncommitted Rowset.

    `sync` fsyncs files and the directory on local filesystems before returning, so a commit
    that follows can rely on the bytes being on disk (object stores are durable on close).
    """
    rowset_id = rowset_id or new_rowset_id()
    data = _to_storage(data, storage_schema(table))
    directory = layout.tablet_dir(root, table.db_id, table.id, partition_id, tablet_id)
    fs.create_dir(directory, recursive=True)
    local = isinstance(fs, pafs.LocalFileSystem)
    row_group = _row_group_rows(data)
    files: list[str] = []
    total_size = 0
    for n, piece in enumerate(_file_slices(data)):
        final = layout.rowset_file(root, table.db_id, table.id, partition_id, tablet_id, rowset_id, n)
        total_size += _write_file(fs, directory, final, piece, row_group, sync=local and sync)
        files.append(layout.relative(root, final))
    if local and sync:
        fsync_path(directory)
    return Rowset(
        id=rowset_id,
        tablet_id=tablet_id,
        partition_id=partition_id,
        files=files,
        num_rows=data.num_rows,
        data_size=total_size,
        schema_version=table.schema_version,
    )


def write_segment(
    fs: pafs.FileSystem,
    root: str,
    table: Table,
    partition_id: int,
    tablet_id: int,
    rowset_id: str,
    n: int,
    data: pa.Table,
    *,
    sync: bool = True,
    nbytes: int | None = None,
) -> tuple[str, int]:
    """Write `data` (storage schema) as file `n` of a rowset of one tablet, as one file (the
    caller keeps it under MAX_FILE_BYTES); returns its root-relative path and size. Used by the
    engine's write tasks, which name files themselves and report them to the driver. `nbytes`,
    when the caller has counted it, saves walking the buffers of a table of many chunks."""
    data = _to_storage(data, storage_schema(table))
    directory = layout.tablet_dir(root, table.db_id, table.id, partition_id, tablet_id)
    fs.create_dir(directory, recursive=True)
    final = layout.rowset_file(root, table.db_id, table.id, partition_id, tablet_id, rowset_id, n)
    local = isinstance(fs, pafs.LocalFileSystem)
    size = _write_file(fs, directory, final, data, _row_group_rows(data, nbytes), sync=local and sync)
    if local and sync:
        fsync_path(directory)
    return layout.relative(root, final), size


def _write_file(
    fs: pafs.FileSystem, directory: str, final: str, data: pa.Table, row_group: int, *, sync: bool
) -> int:
    """Write one data file under a temporary name, fsync it (`sync`), move it into place; its size."""
    tmp = final + layout.TMP_SUFFIX
    try:
        _write_parquet(fs, directory, tmp, data, row_group)
        if sync:
            fsync_path(tmp)
        size = fs.get_file_info(tmp).size
        fs.move(tmp, final)
    except BaseException:
        delete_quietly(fs, tmp)
        raise
    return size


def _write_parquet(fs: pafs.FileSystem, directory: str, path: str, data: pa.Table, row_group: int) -> None:
    try:
        out = fs.open_output_stream(path)
    except FileNotFoundError:
        # GC may remove an old empty tablet directory between create_dir and open: recreate once.
        fs.create_dir(directory, recursive=True)
        out = fs.open_output_stream(path)
    with out:
        pq.write_table(
            data,
            out,
            compression=COMPRESSION,
            row_group_size=row_group,
            dictionary_pagesize_limit=DICTIONARY_PAGE_LIMIT,
            # DECIMAL(p <= 18) as INT32/INT64 as Spark writes them, not fixed-length bytes:
            # measured on TPC-H Q1, Sail read them 2x and Spark 2.3x faster.
            store_decimal_as_integer=True,
        )


def write_rowsets(
    fs: pafs.FileSystem,
    root: str,
    table: Table,
    per_tablet: dict[int, tuple[int, pa.Table]],
    *,
    sync: bool = True,
    max_workers: int | None = None,
) -> list[Rowset]:
    """Write one rowset per non-empty tablet in parallel threads (pyarrow releases the GIL).

    All or nothing: if any tablet fails, the files of the others are deleted before the
    error propagates, so a failed load leaves no files behind.
    """
    items = sorted((tid, (pid, rows)) for tid, (pid, rows) in per_tablet.items() if rows.num_rows)
    workers = max_workers or min(len(items), os.cpu_count() or 4) or 1
    written: list[Rowset] = []
    failure: BaseException | None = None
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rowset-writer") as pool:
        futures = [
            pool.submit(write_rowset, fs, root, table, pid, tid, rows, sync=sync)
            for tid, (pid, rows) in items
        ]
        for f in futures:
            try:
                written.append(f.result())
            except BaseException as e:  # noqa: BLE001 - keep collecting so every written file is known
                failure = failure or e
    if failure is not None:
        delete_rowset_files(fs, root, written)
        raise failure
    return written


class RowsetBuilder:
    """One load's rowsets (one per tablet), grown a segment file at a time while the load streams.

    Each `add` writes one more `<rowset_id>_<n>.parquet` file into every tablet it touches, so
    a long load never holds all its rows in memory; `finish` fsyncs the tablet directories and
    returns the uncommitted Rowsets. Nothing references the files before the FE journals the
    commit, so `discard` just deletes them; an `add` still running in another thread when the
    load is discarded deletes its own file when it finishes. Thread-safe.
    """

    def __init__(self, fs: pafs.FileSystem, root: str, table: Table, *, sync: bool = True) -> None:
        self.fs, self.root, self.table = fs, root, table
        self._schema = storage_schema(table)
        self._sync = sync and isinstance(fs, pafs.LocalFileSystem)
        self._lock = threading.Lock()
        self._rowsets: dict[int, Rowset] = {}
        self._files: dict[int, dict[int, str]] = {}  # tablet_id -> file number -> relative path
        self._next_file: dict[int, int] = {}
        self._discarded = False

    def add(self, per_tablet: dict[int, tuple[int, pa.Table]], *, max_workers: int | None = None) -> None:
        """Write one segment file per non-empty tablet of `per_tablet` (tablets in parallel)."""
        items = sorted((tid, (pid, rows)) for tid, (pid, rows) in per_tablet.items() if rows.num_rows)
        if len(items) == 1:
            tid, (pid, rows) = items[0]
            self._add_one(tid, pid, rows)
            return
        workers = max_workers or min(len(items), os.cpu_count() or 4) or 1
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rowset-writer") as pool:
            futures = [pool.submit(self._add_one, tid, pid, rows) for tid, (pid, rows) in items]
            failure = None
            for f in futures:
                try:
                    f.result()
                except BaseException as e:  # noqa: BLE001 - wait for every writer before failing
                    failure = failure or e
        if failure is not None:
            raise failure

    def _add_one(self, tablet_id: int, partition_id: int, data: pa.Table) -> None:
        data = _to_storage(data, self._schema)
        pieces = _file_slices(data)
        with self._lock:
            if self._discarded:
                return
            first = tablet_id not in self._rowsets
            if first:
                self._rowsets[tablet_id] = Rowset(
                    id=new_rowset_id(),
                    tablet_id=tablet_id,
                    partition_id=partition_id,
                    schema_version=self.table.schema_version,
                )
                self._files[tablet_id] = {}
                self._next_file[tablet_id] = 0
            rowset = self._rowsets[tablet_id]
            n0 = self._next_file[tablet_id]
            self._next_file[tablet_id] = n0 + len(pieces)
        t = self.table
        directory = layout.tablet_dir(self.root, t.db_id, t.id, partition_id, tablet_id)
        if first:
            self.fs.create_dir(directory, recursive=True)
        row_group = _row_group_rows(data)
        for i, piece in enumerate(pieces):
            final = layout.rowset_file(self.root, t.db_id, t.id, partition_id, tablet_id, rowset.id, n0 + i)
            size = _write_file(self.fs, directory, final, piece, row_group, sync=self._sync)
            with self._lock:
                if not self._discarded:
                    self._files[tablet_id][n0 + i] = layout.relative(self.root, final)
                    rowset.num_rows += piece.num_rows
                    rowset.data_size += size
                    continue
            delete_quietly(self.fs, final)  # the load was discarded while this file was written
            return

    def finish(self) -> list[Rowset]:
        """The rowsets written so far (files in order), their directories fsynced."""
        with self._lock:
            rowsets = [self._rowsets[tid] for tid in sorted(self._rowsets)]
            for r in rowsets:
                files = self._files[r.tablet_id]
                r.files = [files[n] for n in sorted(files)]
        if self._sync:
            t = self.table
            for r in rowsets:
                fsync_path(layout.tablet_dir(self.root, t.db_id, t.id, r.partition_id, r.tablet_id))
        return [r for r in rowsets if r.files]

    def discard(self) -> None:
        """Delete every file written so far, and any a running `add` finishes later."""
        with self._lock:
            self._discarded = True
            paths = [p for files in self._files.values() for p in files.values()]
            self._files = {tid: {} for tid in self._files}
        for rel in paths:
            delete_quietly(self.fs, layout.absolute(self.root, rel))


def _to_storage(data: pa.Table, schema: pa.Schema) -> pa.Table:
    if data.schema != schema:
        if data.schema.names != schema.names:
            data = data.select(schema.names)
        data = data.cast(schema)
    return data


def read_rowset(fs: pafs.FileSystem, root: str, rowset: Rowset, schema: pa.Schema | None = None) -> pa.Table:
    """All rows of a rowset as one Arrow table."""
    tables = [pq.read_table(layout.absolute(root, f), filesystem=fs, schema=schema) for f in rowset.files]
    if not tables:
        return schema.empty_table() if schema is not None else pa.table({})
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def delete_rowset_files(fs: pafs.FileSystem, root: str, rowsets) -> None:
    """Delete the files of `rowsets`; files already gone are fine."""
    for rowset in rowsets:
        for rel in rowset.files:
            delete_quietly(fs, layout.absolute(root, rel))


def delete_quietly(fs: pafs.FileSystem, path: str) -> None:
    try:
        fs.delete_file(path)
    except FileNotFoundError:
        pass
    except OSError:
        # pyarrow raises plain OSError for some stores; only a missing file is expected here.
        if fs.get_file_info(path).type != pafs.FileType.NotFound:
            raise
