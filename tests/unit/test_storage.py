"""Storage root: filesystems, layout, rowset write/read/delete, garbage collection."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from galene.catalog.model import Column, Partition, Table
from galene.common.types import parse_type
from galene.storage import layout, rowset
from galene.storage.fs import filesystem_for
from galene.storage.gc import collect_garbage
from galene.storage.rowset import (
    delete_rowset_files,
    read_rowset,
    storage_schema,
    write_rowset,
    write_rowsets,
)


def make_table() -> Table:
    return Table(
        id=7,
        db_id=3,
        name="t",
        columns=[
            Column(name="k", type=parse_type("int")),
            Column(name="s", type=parse_type("varchar(10)")),
            Column(name="ts", type=parse_type("datetime")),
        ],
        partitions=[Partition(id=9, name="t", tablet_ids=[11, 12])],
    )


def sample(n=5) -> pa.Table:
    return pa.table(
        {
            "k": pa.array(range(n), pa.int32()),
            "s": pa.array([f"v{i}" for i in range(n)]),
            "ts": pa.array([i * 1_000_000 for i in range(n)], pa.timestamp("us")),
        }
    )


def test_filesystem_for_local_forms(tmp_path):
    fs, path = filesystem_for(f"file://{tmp_path}/root/")
    assert isinstance(fs, pafs.LocalFileSystem) and path == f"{tmp_path}/root"
    fs, path = filesystem_for(str(tmp_path))
    assert isinstance(fs, pafs.LocalFileSystem) and path == str(tmp_path)
    _, rel = filesystem_for("relative/dir")
    assert rel == os.path.abspath("relative/dir")


def test_filesystem_for_s3_with_endpoint():
    fs, path = filesystem_for(
        "s3://bucket/some/prefix?endpoint_override=127.0.0.1:9000&scheme=http&region=us-east-1"
    )
    assert isinstance(fs, pafs.S3FileSystem)
    assert path == "bucket/some/prefix"


def test_layout_paths():
    assert layout.tablet_dir("/r", 1, 2, 3, 4) == "/r/data/1/2/3/4"
    assert layout.rowset_file("/r", 1, 2, 3, 4, "abc", 0) == "/r/data/1/2/3/4/abc_0.parquet"
    assert layout.relative("/r", "/r/data/1/2/3/4/abc_0.parquet") == "data/1/2/3/4/abc_0.parquet"
    assert layout.rowset_file("bucket/p", 1, 2, 3, 4, "abc", 1) == "bucket/p/data/1/2/3/4/abc_1.parquet"


def test_write_then_read_back_a_rowset(tmp_path):
    fs, root = filesystem_for(str(tmp_path))
    table = make_table()
    data = sample()
    rs = write_rowset(fs, root, table, 9, 11, data)
    assert rs.tablet_id == 11 and rs.partition_id == 9 and rs.num_rows == 5
    assert rs.files == [f"data/3/7/9/11/{rs.id}_0.parquet"]
    on_disk = tmp_path / rs.files[0]
    assert rs.data_size == on_disk.stat().st_size > 0
    assert not list(tmp_path.rglob("*.tmp"))
    back = read_rowset(fs, root, rs)
    assert back.equals(data)
    assert pq.ParquetFile(on_disk).metadata.row_group(0).column(0).compression == "SNAPPY"


def test_write_rowset_casts_to_the_storage_schema_and_refuses_missing_columns(tmp_path):
    fs, root = filesystem_for(str(tmp_path))
    table = make_table()
    loose = pa.table({"ts": pa.array([0], pa.timestamp("us")), "k": pa.array([1], pa.int64()), "s": ["a"]})
    rs = write_rowset(fs, root, table, 9, 11, loose)
    assert read_rowset(fs, root, rs).schema == storage_schema(table)
    with pytest.raises(KeyError):
        write_rowset(fs, root, table, 9, 11, pa.table({"k": [1]}))


def test_big_rowsets_are_split_into_numbered_files(tmp_path, monkeypatch):
    monkeypatch.setattr(rowset, "MAX_FILE_BYTES", 200)
    fs, root = filesystem_for(str(tmp_path))
    rs = write_rowset(fs, root, make_table(), 9, 11, sample(100))
    assert len(rs.files) > 1
    assert [f.rsplit("_", 1)[1] for f in rs.files] == [f"{i}.parquet" for i in range(len(rs.files))]
    assert read_rowset(fs, root, rs).equals(sample(100))


def test_write_rowsets_for_several_tablets_and_delete(tmp_path):
    fs, root = filesystem_for(str(tmp_path))
    table = make_table()
    written = write_rowsets(fs, root, table, {11: (9, sample(3)), 12: (9, sample(4))})
    assert sorted((r.tablet_id, r.num_rows) for r in written) == [(11, 3), (12, 4)]
    assert len({r.id for r in written}) == 2
    delete_rowset_files(fs, root, written)
    delete_rowset_files(fs, root, written)  # already gone: fine
    assert not list(tmp_path.rglob("*.parquet"))


def test_gc_deletes_only_old_unreferenced_data_files(tmp_path):
    fs, root = filesystem_for(str(tmp_path))
    table = make_table()
    kept = write_rowset(fs, root, table, 9, 11, sample())
    orphan = write_rowset(fs, root, table, 9, 11, sample())
    orphan_elsewhere = write_rowset(fs, root, table, 9, 12, sample())
    young = write_rowset(fs, root, table, 9, 11, sample())
    tmp_file = tmp_path / "data/3/7/9/11/dead_0.parquet.tmp"
    tmp_file.write_bytes(b"partial")
    other = tmp_path / "data/3/7/9/11/README"
    other.write_text("not a data file")

    now = time.time()
    old = now - 3600
    for path in tmp_path.rglob("*"):
        os.utime(path, (old, old))
    young_path = tmp_path / young.files[0]
    os.utime(young_path, (now, now))

    referenced = set(kept.files)
    deleted = collect_garbage(fs, root, referenced, grace_seconds=600, now=now)
    assert sorted(deleted) == sorted(
        orphan.files + orphan_elsewhere.files + ["data/3/7/9/11/dead_0.parquet.tmp"]
    )
    assert (tmp_path / kept.files[0]).exists()
    assert young_path.exists()
    assert other.exists()
    # The tablet directory that became empty is removed; the one still holding files is not.
    assert not (tmp_path / "data/3/7/9/12").exists()
    assert (tmp_path / "data/3/7/9/11").exists()


def test_gc_keeps_young_empty_directories_and_tolerates_a_missing_root(tmp_path):
    fs, root = filesystem_for(str(tmp_path))
    assert collect_garbage(fs, root, set(), grace_seconds=0) == []
    fresh = tmp_path / "data/1/2/3/4"
    fresh.mkdir(parents=True)
    collect_garbage(fs, root, set(), grace_seconds=600)
    assert fresh.exists()  # a writer may have just created it
