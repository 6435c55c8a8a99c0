"""MetaStore: journal + image persistence, checkpoints, recovery from corrupt files, tools."""

from __future__ import annotations

import json
import logging
import re
import sqlite3

import msgspec
import pytest

from galene.catalog import ops
from galene.catalog.model import Column, Database, Partition, Table
from galene.common.types import ColumnType
from galene.meta.image import ImageError
from galene.meta.journal import Journal
from galene.meta.store import MetaRecoveryError, MetaStore
from galene.meta.tools import dump_state, list_journal, read_image, validate_image, write_image_file


def create_db_op(i: int) -> ops.CreateDb:
    return ops.CreateDb(db=Database(id=i, name=f"db{i}", create_time=1000.0 + i), next_id=i + 1)


def create_table_op(db_id: int, table_id: int) -> ops.CreateTable:
    table = Table(
        id=table_id,
        db_id=db_id,
        name=f"t{table_id}",
        columns=[
            Column(name="k", type=ColumnType(name="INT"), is_key=True),
            Column(name="v", type=ColumnType(name="VARCHAR", length=20)),
        ],
        key_columns=["k"],
        partitions=[Partition(id=table_id + 1, name=f"t{table_id}", tablet_ids=[table_id + 2])],
        distribution_columns=["k"],
    )
    return ops.CreateTable(table=table, next_id=table_id + 3)


def journal_ids(meta_dir) -> list[int]:
    return [e["id"] for e in list_journal(meta_dir, 1, 10_000)]


def reopened(meta_dir, **kw) -> MetaStore:
    store = MetaStore(meta_dir, **kw)
    store.open()
    return store


def assert_same_state(a, b) -> None:
    assert msgspec.msgpack.encode(a) == msgspec.msgpack.encode(b)
    assert a == b


def test_log_then_reopen_reproduces_state(tmp_path):
    store = reopened(tmp_path)
    ids = [
        store.log(create_db_op(1)),
        store.log(create_table_op(1, 100)),
        store.log(ops.RenameTable(db_id=1, table_id=100, new_name="renamed")),
    ]
    assert ids == [1, 2, 3]
    store.close()

    again = reopened(tmp_path)
    assert_same_state(again.state, store.state)
    assert again.state.databases[1].tables == {"renamed": 100}
    assert again.last_journal_id == 3 and again.last_image_id == 0
    assert again.log(create_db_op(2)) == 4  # ids continue contiguously after a restart
    again.close()


def test_open_returns_the_live_state_object(tmp_path):
    store = MetaStore(tmp_path)
    state = store.open()
    store.log(create_db_op(1))
    assert state is store.state and 1 in state.databases
    store.close()


def test_roll_num_checkpoints_purge_journal_and_keep_two_images(tmp_path):
    store = reopened(tmp_path, roll_num=10)
    for i in range(1, 101):
        store.log(create_db_op(i))
    images = sorted(p.name for p in (tmp_path / "image").glob("image.*"))
    assert images == ["image.100", "image.90"]
    assert store.last_image_id == 100
    # Rows are purged up to the older kept image, so either image can restore the state.
    assert journal_ids(tmp_path) == list(range(91, 101))
    store.close()

    again = reopened(tmp_path, roll_num=10)
    assert_same_state(again.state, store.state)
    assert again.last_journal_id == 100 and again.last_image_id == 100
    again.close()


def test_forced_checkpoint_returns_image_path(tmp_path):
    store = reopened(tmp_path)
    store.log(create_db_op(1))
    path = store.checkpoint()
    assert path == tmp_path / "image" / "image.1"
    assert read_image(path)[0] == 1
    assert store.checkpoint() == path  # nothing new logged: same image
    store.close()


def corrupt_flip(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def corrupt_truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 7])


def corrupt_magic(path):
    data = path.read_bytes()
    path.write_bytes(b"NOTANIMG!" + data[9:])


@pytest.mark.parametrize("corrupt", [corrupt_flip, corrupt_truncate, corrupt_magic])
def test_corrupt_newest_image_is_refused_and_previous_used(tmp_path, caplog, corrupt):
    store = reopened(tmp_path, roll_num=5)
    for i in range(1, 13):
        store.log(create_db_op(i))
    store.close()
    corrupt(tmp_path / "image" / "image.10")

    with caplog.at_level(logging.WARNING, logger="galene.meta.store"):
        again = reopened(tmp_path, roll_num=5)
    assert any("refusing image" in r.message and "image.10" in r.message for r in caplog.records)
    assert again.last_image_id == 5
    assert_same_state(again.state, store.state)
    assert again.last_journal_id == 12
    # The next checkpoint replaces the corrupt image and keeps a valid pair.
    for i in range(13, 16):
        again.log(create_db_op(i))
    assert sorted(p.name for p in (tmp_path / "image").glob("image.*")) == [
        "image.13",
        "image.5",
    ]  # 13 - 5 reached roll_num
    again.close()
    assert_same_state(reopened(tmp_path).state, again.state)


def test_no_valid_image_for_purged_journal_is_a_clear_error(tmp_path):
    store = reopened(tmp_path, roll_num=3)
    for i in range(1, 11):
        store.log(create_db_op(i))
    store.close()
    corrupt_flip(tmp_path / "image" / "image.9")
    (tmp_path / "image" / "image.6").unlink()

    with pytest.raises(MetaRecoveryError, match="purged and no valid image covers them"):
        MetaStore(tmp_path).open()


def test_missing_journal_ids_are_a_clear_error(tmp_path):
    store = reopened(tmp_path)
    for i in range(1, 6):
        store.log(create_db_op(i))
    store.close()
    with sqlite3.connect(tmp_path / "journal" / "journal.db") as conn:
        conn.execute("DELETE FROM journal WHERE id = 3")

    with pytest.raises(MetaRecoveryError, match=r"journal ids 3\.\.3 are missing"):
        MetaStore(tmp_path).open()


def test_torn_checkpoint_file_is_ignored(tmp_path):
    store = reopened(tmp_path)
    for i in range(1, 4):
        store.log(create_db_op(i))
    store.checkpoint()
    store.log(create_db_op(4))
    store.close()
    ckpt = tmp_path / "image" / "image.ckpt"
    ckpt.write_bytes(b"GALENEIMG\x00\x00")

    again = reopened(tmp_path)
    assert_same_state(again.state, store.state)
    assert again.last_image_id == 3
    assert not ckpt.exists()
    again.close()


@pytest.mark.parametrize(
    "target",
    [
        "galene.meta.store.write_image",
        "galene.meta.store.os.replace",
        "galene.meta.store.fsync_path",
        "galene.meta.journal.Journal.purge",
    ],
)
def test_crash_at_any_checkpoint_step_loses_no_op(tmp_path, monkeypatch, target):
    store = reopened(tmp_path)
    for i in range(1, 6):
        store.log(create_db_op(i))
    store.checkpoint()
    for i in range(6, 11):
        store.log(create_db_op(i))

    def crash(*args, **kwargs):
        if target.endswith("write_image"):  # leave a half-written file behind
            (tmp_path / "image" / "image.ckpt").write_bytes(b"GALENEIMG" + b"\x00" * 5)
        raise OSError("simulated crash")

    with monkeypatch.context() as m:
        m.setattr(target, crash)
        with pytest.raises(OSError, match="simulated crash"):
            store.checkpoint()
    store.close()  # the process "dies" here; nothing after the failed step ran

    again = reopened(tmp_path)
    assert_same_state(again.state, store.state)
    assert again.last_journal_id == 10
    again.close()


def test_failed_automatic_checkpoint_does_not_fail_the_op(tmp_path, monkeypatch, caplog):
    store = reopened(tmp_path, roll_num=2)
    store.log(create_db_op(1))
    monkeypatch.setattr(
        "galene.meta.store.write_image", lambda *a: (_ for _ in ()).throw(OSError("disk full"))
    )
    with caplog.at_level(logging.ERROR, logger="galene.meta.store"):
        assert store.log(create_db_op(2)) == 2
    assert "automatic checkpoint at journal id 2 failed" in caplog.text
    store.close()
    assert_same_state(reopened(tmp_path).state, store.state)


@pytest.mark.parametrize("policy", ["WRITE_NO_SYNC", "NO_SYNC", "write_no_sync"])
def test_relaxed_sync_policies_persist_across_clean_restart(tmp_path, policy):
    store = reopened(tmp_path, sync_policy=policy, roll_num=4)
    for i in range(1, 11):
        store.log(create_db_op(i))
    store.close()
    again = reopened(tmp_path, sync_policy=policy)
    assert_same_state(again.state, store.state)
    again.close()


def test_unknown_sync_policy_is_refused(tmp_path):
    with pytest.raises(ValueError, match="master_sync_policy"):
        MetaStore(tmp_path, sync_policy="SOMETIMES")


def test_apply_failure_leaves_no_op_in_journal(tmp_path):
    store = reopened(tmp_path)
    store.log(create_db_op(1))
    with pytest.raises(KeyError):
        store.log(ops.RenameTable(db_id=1, table_id=999, new_name="x"))  # no such table
    assert journal_ids(tmp_path) == [1]
    assert store.last_journal_id == 1
    assert store.log(create_db_op(2)) == 2  # the failed op's id is reused: ids stay contiguous
    store.close()
    again = reopened(tmp_path)
    assert_same_state(again.state, store.state)
    again.close()


def test_version_and_role_files(tmp_path):
    store = reopened(tmp_path, node_name="fe_127.0.0.1_9011")
    version = (tmp_path / "image" / "VERSION").read_text()
    match = re.fullmatch(r"clusterId=(\d+)\ntoken=([0-9a-f-]{36})\n", version)
    assert match, version
    assert store.cluster_id == int(match.group(1)) > 0
    assert store.token == match.group(2)
    assert (tmp_path / "image" / "ROLE").read_text() == "role=FOLLOWER\nname=fe_127.0.0.1_9011\n"
    store.close()

    again = reopened(tmp_path, node_name="other")
    assert (again.cluster_id, again.token) == (store.cluster_id, store.token)
    assert again.node_name == "fe_127.0.0.1_9011"  # the stored name wins
    again.close()

    fresh = reopened(tmp_path / "elsewhere")
    assert fresh.token != store.token
    fresh.close()


def test_validate_image_messages(tmp_path):
    store = reopened(tmp_path)
    store.log(create_db_op(1))
    path = store.checkpoint()
    store.close()
    assert validate_image(path) == (True, f"Load image success. Image file {path} is valid.")

    corrupt_flip(path)
    ok, message = validate_image(path)
    assert not ok
    first, reason = message.split("\n", 1)
    assert first == f"Load image failed. Image file {path} is invalid."
    assert "checksum" in reason

    missing = tmp_path / "nope"
    assert validate_image(missing)[1].startswith(f"Load image failed. Image file {missing} is invalid.")


def test_read_image_errors_are_clear(tmp_path):
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"hello")
    with pytest.raises(ImageError, match="truncated"):
        read_image(garbage)


def test_write_image_file_dump_state_and_list_journal(tmp_path):
    store = reopened(tmp_path / "meta")
    store.log(create_db_op(1))
    store.log(create_table_op(1, 100))

    (tmp_path / "dump").mkdir()
    dumped = write_image_file(store.state, store.last_journal_id, tmp_path / "dump" / "image.2")
    assert read_image(dumped) == (2, store.state)
    assert store.snapshot_image(tmp_path / "dump" / "live") == tmp_path / "dump" / "live"
    assert read_image(tmp_path / "dump" / "live") == (2, store.state)

    as_json = json.loads(json.dumps(dump_state(store.state)))
    assert as_json["tables"]["100"]["columns"][1]["type"] == {
        "name": "VARCHAR",
        "length": 20,
        "precision": 0,
        "scale": 0,
        "children": [],
        "field_names": [],
    }

    entries = list_journal(tmp_path / "meta", from_id=2, limit=5)
    assert [(e["id"], e["op_type"]) for e in entries] == [(2, "CreateTable")]
    assert entries[0]["data"]["table"]["name"] == "t100"
    json.dumps(entries)
    store.close()


def test_journal_entries_read_in_batches(tmp_path):
    journal = Journal(tmp_path / "j.db", "NO_SYNC")
    for i in range(1, 2501):
        journal.append(i, "X", b"", 0.0)
    assert [e[0] for e in journal.entries(after_id=0)] == list(range(1, 2501))
    assert [e[0] for e in journal.entries(after_id=998, limit=1003)] == list(range(999, 2002))
    journal.close()
