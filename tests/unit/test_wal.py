"""The group-commit WAL: records written with fsync read back exactly; damaged tails and
corrupt records are detected and discarded; file listing for replay."""

from __future__ import annotations

import struct
import zlib

import pyarrow as pa
import pytest

from galene.be.wal import (
    WAL_MAGIC,
    WAL_PREALLOCATE_BYTES,
    WalWriter,
    encode_record,
    list_wal_files,
    read_wal,
    wal_dir,
    wal_file_name,
)


def _batch(start: int, n: int) -> pa.Table:
    return pa.table(
        {
            "k": pa.array(range(start, start + n), pa.int32()),
            "v": pa.array([f"v{i}" for i in range(start, start + n)], pa.string()),
        }
    )


def _write(path, records: list[bytes]) -> None:
    w = WalWriter(path)
    w.write(records)
    w.close()


def test_append_and_read_back_in_order(tmp_path):
    path = wal_dir(tmp_path / "wal", 10, 20) / wal_file_name(1, "group_commit_ab")
    records = [
        encode_record("group_commit_ab", None if i % 2 else f"client_{i}", _batch(i * 10, 3 + i))
        for i in range(6)
    ]
    _write(path, records)
    # Records first, then the zeroed preallocated space (the clean end).
    assert path.stat().st_size == WAL_PREALLOCATE_BYTES
    assert path.read_bytes()[sum(len(r) for r in records) :].count(0) == WAL_PREALLOCATE_BYTES - sum(
        len(r) for r in records
    )
    result = read_wal(path)
    assert not result.torn_tail and result.discarded_bytes == 0
    assert result.valid_bytes == sum(len(r) for r in records)
    assert [r.sub_label for r in result.records] == [None if i % 2 else f"client_{i}" for i in range(6)]
    assert [r.rows for r in result.records] == [3 + i for i in range(6)]
    for i, r in enumerate(result.records):
        assert r.label == "group_commit_ab"
        assert r.data.equals(_batch(i * 10, 3 + i))


def test_appends_continue_an_existing_file(tmp_path):
    path = tmp_path / "w" / "5_group_commit_x"
    _write(path, [encode_record("group_commit_x", "a", _batch(0, 2))])
    _write(path, [encode_record("group_commit_x", "b", _batch(2, 2))])
    assert [r.sub_label for r in read_wal(path).records] == ["a", "b"]


@pytest.mark.parametrize("cut", [1, 5, 11, 13, 40, -1])
def test_torn_tail_is_discarded(tmp_path, cut):
    path = tmp_path / "1_group_commit_t"
    good = [encode_record("group_commit_t", f"l{i}", _batch(i, 4)) for i in range(3)]
    last = encode_record("group_commit_t", "torn", _batch(100, 50))
    partial = last[: cut if cut > 0 else len(last) - 1]
    path.write_bytes(b"".join(good) + partial)
    result = read_wal(path)
    assert [r.sub_label for r in result.records] == ["l0", "l1", "l2"]
    assert result.torn_tail
    assert result.discarded_bytes == len(partial)
    assert result.valid_bytes == sum(len(g) for g in good)


def test_crc_mismatch_in_last_record_is_discarded(tmp_path):
    path = tmp_path / "1_group_commit_c"
    good = encode_record("group_commit_c", "ok", _batch(0, 3))
    bad = bytearray(encode_record("group_commit_c", "bad", _batch(10, 3)))
    bad[-3] ^= 0xFF  # flip payload bits: the length still fits, the crc does not
    path.write_bytes(good + bytes(bad))
    result = read_wal(path)
    assert [r.sub_label for r in result.records] == ["ok"]
    assert result.torn_tail and result.discarded_bytes == len(bad)


def test_corrupt_record_in_the_middle_is_skipped_when_the_next_record_is_intact(tmp_path):
    path = tmp_path / "1_group_commit_m"
    recs = [bytearray(encode_record("group_commit_m", f"l{i}", _batch(i * 10, 3))) for i in range(3)]
    recs[1][20] ^= 0x55
    path.write_bytes(b"".join(bytes(r) for r in recs))
    result = read_wal(path)
    assert [r.sub_label for r in result.records] == ["l0", "l2"]
    assert not result.torn_tail
    assert result.discarded_bytes == len(recs[1])


def test_garbage_length_stops_reading(tmp_path):
    path = tmp_path / "1_group_commit_g"
    good = encode_record("group_commit_g", "ok", _batch(0, 3))
    payload = b"x" * 10
    garbage = struct.pack("<III", WAL_MAGIC, 1 << 30, zlib.crc32(payload)) + payload
    path.write_bytes(good + garbage + good)
    result = read_wal(path)
    assert [r.sub_label for r in result.records] == ["ok"]
    assert result.torn_tail


def test_failed_write_is_truncated_so_later_records_stay_readable(tmp_path, monkeypatch):
    path = tmp_path / "1_group_commit_f"

    w = WalWriter(path)
    w.write([encode_record("group_commit_f", "first", _batch(0, 2))])
    real_fdatasync = __import__("os").fdatasync
    calls = {"n": 0}

    def failing_fdatasync(fd):
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError(28, "No space left on device")
        return real_fdatasync(fd)

    monkeypatch.setattr("galene.be.wal.os.fdatasync", failing_fdatasync)
    with pytest.raises(OSError):
        w.write([encode_record("group_commit_f", "lost", _batch(2, 2))])
    w.write([encode_record("group_commit_f", "third", _batch(4, 2))])
    w.close()
    result = read_wal(path)
    assert [r.sub_label for r in result.records] == ["first", "third"]
    assert not result.torn_tail


def test_list_wal_files_for_replay_oldest_first(tmp_path):
    root = tmp_path / "wal"
    for db_id, table_id, wal_id, label in [
        (1, 2, 30, "group_commit_c"),
        (1, 3, 10, "group_commit_a"),
        (4, 5, 20, "group_commit_b"),
    ]:
        d = wal_dir(root, db_id, table_id)
        d.mkdir(parents=True, exist_ok=True)
        (d / wal_file_name(wal_id, label)).write_bytes(encode_record(label, None, _batch(0, 1)))
    (wal_dir(root, 1, 2) / "stray.tmp").write_bytes(b"")
    (root / "notes").mkdir()
    found = list_wal_files(root)
    assert [(f.db_id, f.table_id, f.wal_id, f.label) for f in found] == [
        (1, 3, 10, "group_commit_a"),
        (4, 5, 20, "group_commit_b"),
        (1, 2, 30, "group_commit_c"),
    ]
    assert all(len(read_wal(f.path).records) == 1 for f in found)
    assert list_wal_files(tmp_path / "missing") == []


def test_partial_record_inside_preallocated_space_is_a_torn_tail(tmp_path):
    # The process died while writing a record in place: its first bytes are there, the rest
    # of the file is still the preallocated zeros. It was never acknowledged: discarded.
    path = tmp_path / "1_group_commit_p"
    good = [encode_record("group_commit_p", f"l{i}", _batch(i * 5, 5)) for i in range(2)]
    _write(path, good)
    torn = encode_record("group_commit_p", "torn", _batch(50, 40))
    with open(path, "r+b") as f:
        f.seek(sum(len(r) for r in good))
        f.write(torn[: len(torn) // 2])
    result = read_wal(path)
    assert [r.sub_label for r in result.records] == ["l0", "l1"]
    assert result.torn_tail and result.valid_bytes == sum(len(r) for r in good)
