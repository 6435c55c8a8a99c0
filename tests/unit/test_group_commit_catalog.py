"""FE side of group commit: client labels reserved for merged txns, bound at commit,
refused when another live txn holds them, freed on abort, and the restart protocol."""

from __future__ import annotations

import pytest

from galene.catalog.model import Column, Partition, Rowset, Table
from galene.common.types import ColumnType
from galene.fe.catalog_service import CatalogService
from galene.meta.store import MetaStore
from galene.txn.labels import LabelAlreadyExists, SubLabelConflict


@pytest.fixture
def catalog(tmp_path):
    store = MetaStore(tmp_path / "meta", sync_policy="NO_SYNC", roll_num=1000)
    store.open()
    svc = CatalogService(store, label_keep_max_second=3600)
    svc.create_database("d")

    def build(db_id, alloc, now):
        table_id, part_id, tablet_id = alloc(), alloc(), alloc()
        return Table(
            id=table_id,
            db_id=db_id,
            name="t",
            columns=[Column(name="k", type=ColumnType(name="INT"), is_key=True)],
            key_columns=["k"],
            partitions=[Partition(id=part_id, name="t", tablet_ids=[tablet_id])],
            distribution_columns=["k"],
        )

    svc.create_table("d", build)
    yield svc
    store.close()


def _ids(svc: CatalogService) -> tuple[int, int, int, int]:
    table = svc.table("d", "t")
    return table.db_id, table.id, table.partitions[0].id, table.partitions[0].tablet_ids[0]


def _rowset(svc: CatalogService, n: int) -> Rowset:
    _, _, part, tablet = _ids(svc)
    return Rowset(id=f"r{n}", tablet_id=tablet, partition_id=part, files=[f"f{n}.parquet"], num_rows=n)


def _group(svc: CatalogService, label: str, backend_id: int = 7):
    db_id, table_id, _, _ = _ids(svc)
    txn, _ = svc.txns.begin_group_txn(db_id, table_id, label, timeout_s=60, backend_id=backend_id)
    return txn


def test_reserved_label_is_running_then_finished_and_bound_to_the_merged_txn(catalog):
    g = _group(catalog, "group_commit_a")
    catalog.txns.reserve_group_label(g.id, "client1")
    with pytest.raises(LabelAlreadyExists) as running:
        catalog.txns.begin_txn("d", "t", "client1")
    assert running.value.existing_status == "RUNNING" and running.value.txn.id == g.id
    catalog.txns.commit_group_txn(g.id, [_rowset(catalog, 3)], ["client1"], num_rows=3, load_bytes=10)
    assert catalog.txns.txn_by_label("d", "client1").status == "VISIBLE"
    assert catalog.txns.txn_by_label("d", "client1").id == g.id
    other = _group(catalog, "group_commit_b")
    with pytest.raises(LabelAlreadyExists) as finished:
        catalog.txns.reserve_group_label(other.id, "client1")
    assert finished.value.existing_status == "FINISHED"


def test_commit_refuses_labels_another_live_txn_holds(catalog):
    first = _group(catalog, "group_commit_a")
    second = _group(catalog, "group_commit_b")
    catalog.txns.reserve_group_label(first.id, "dup")
    with pytest.raises(SubLabelConflict) as conflict:
        catalog.txns.commit_group_txn(second.id, [_rowset(catalog, 1)], ["dup", "fresh"], num_rows=1, load_bytes=1)
    assert conflict.value.conflicts == {"dup": first.id}
    assert catalog.state.txns[second.id].status == "PREPARE"  # nothing was committed
    catalog.txns.commit_group_txn(second.id, [_rowset(catalog, 1)], ["fresh"], num_rows=1, load_bytes=1)
    assert catalog.txns.txn_by_label("d", "fresh").id == second.id
    assert catalog.txns.txn_by_label("d", "dup").id == first.id


def test_unused_reservations_are_released_at_commit_and_abort(catalog):
    g = _group(catalog, "group_commit_a")
    catalog.txns.reserve_group_label(g.id, "kept")
    catalog.txns.reserve_group_label(g.id, "dropped")
    catalog.txns.commit_group_txn(g.id, [], ["kept"], num_rows=0, load_bytes=0)
    assert catalog.txns.txn_by_label("d", "dropped") is None
    h = _group(catalog, "group_commit_b")
    catalog.txns.reserve_group_label(h.id, "dropped")
    catalog.txns.abort_txn(h.id, "test")
    assert catalog.txns.txn_by_label("d", "dropped") is None
    txn, _ = catalog.txns.begin_txn("d", "t", "dropped")  # free again
    assert txn.status == "PREPARE"


def test_recover_aborts_the_backends_prepare_groups_and_reports_wal_groups(catalog):
    db_id = _ids(catalog)[0]
    done = _group(catalog, "group_commit_done")
    catalog.txns.commit_group_txn(done.id, [_rowset(catalog, 2)], [], num_rows=2, load_bytes=2)
    pending = _group(catalog, "group_commit_pending")
    catalog.txns.reserve_group_label(pending.id, "c")
    elsewhere = _group(catalog, "group_commit_other_be", backend_id=8)
    statuses = catalog.txns.recover_group_txns(
        7, [(db_id, "group_commit_done"), (db_id, "group_commit_pending"), (db_id, "group_commit_lost")]
    )
    assert statuses == {
        "group_commit_done": "VISIBLE",
        "group_commit_pending": "ABORTED",
        "group_commit_lost": "UNKNOWN",
    }
    assert catalog.state.txns[elsewhere.id].status == "PREPARE"
    assert catalog.txns.txn_by_label("d", "c") is None
    # The replay begins the group again under the same label and commits it once.
    again = _group(catalog, "group_commit_pending")
    catalog.txns.commit_group_txn(again.id, [_rowset(catalog, 4)], ["c"], num_rows=4, load_bytes=4)
    assert catalog.txns.txn_by_label("d", "group_commit_pending").status == "VISIBLE"


def test_group_labels_survive_a_restart(catalog, tmp_path):
    g = _group(catalog, "group_commit_a")
    catalog.txns.reserve_group_label(g.id, "x")
    catalog.txns.commit_group_txn(g.id, [_rowset(catalog, 1)], ["x"], num_rows=1, load_bytes=1)
    live = catalog.state
    catalog.store.close()
    store = MetaStore(tmp_path / "meta", sync_policy="NO_SYNC", roll_num=1000)
    assert store.open() == live
    store.close()
    catalog.store.open()
