"""Compaction's pure parts: the cumulative policy, version ranges, Doris' text formats, the
statements, and the catalog side (max_tablet_version_num at a load's begin, compact_rowsets)."""

from __future__ import annotations

import json

import pytest

from galene.catalog.model import Column, Partition, Rowset, Table
from galene.common.errors import LoadError
from galene.common.types import ColumnType
from galene.fe.catalog_service import CatalogService
from galene.fe.compaction import (
    cumulative_point,
    pick_all,
    pick_cumulative,
    pretty_bytes,
    tablet_rowsets,
    version_ranges,
)
from galene.fe.compaction_api import check_ids, rowset_line, status_json
from galene.meta.store import MetaStore
from galene.sql.statements.cluster import AdminCompact, ShowTablets
from galene.sql.statements.parse import parse_statement


def rs(version: int, size: int, tablet: int = 7, files: int = 1) -> Rowset:
    return Rowset(
        id=f"r{version}", tablet_id=tablet, partition_id=3, version=version, txn_id=version,
        files=[f"f{version}_{i}.parquet" for i in range(files)], data_size=size,
    )  # fmt: skip


# --- policy --------------------------------------------------------------------------------


def test_cumulative_run_is_the_small_rowsets_above_the_newest_large_one():
    # 1000 outweighs everything newer; 40 outweighs 1+1+1; the run is the three small ones.
    tablet = [rs(2, 1000), rs(3, 5), rs(4, 40), rs(5, 1), rs(6, 1), rs(7, 1)]
    assert cumulative_point(tablet) == 3
    assert [r.version for r in pick_cumulative(tablet, min_deltas=2, max_deltas=100)] == [5, 6, 7]
    assert pick_cumulative(tablet, min_deltas=5, max_deltas=100) == []  # not enough deltas yet
    # Only small rowsets: all of them, from the oldest; capped at max_deltas (the oldest ones).
    small = [rs(v, 10) for v in range(2, 12)]
    assert cumulative_point(small) == 0
    assert [r.version for r in pick_cumulative(small, min_deltas=5, max_deltas=4)] == [2, 3, 4, 5]
    assert pick_cumulative([], min_deltas=2, max_deltas=10) == []
    assert pick_cumulative([rs(2, 1)], min_deltas=1, max_deltas=10) == []  # one rowset: nothing to merge


def test_repeated_cumulative_compactions_keep_a_logarithmic_number_of_rowsets():
    """Simulate loads of equal size with a compaction whenever min_deltas wait: merged rowsets
    become large and are left alone, so the count stays small and nothing is rewritten forever."""
    tablet: list[Rowset] = []
    version, rewritten, loaded = 1, 0, 0
    for _ in range(2000):
        version += 1
        tablet.append(rs(version, 100))
        loaded += 100
        run = pick_cumulative(tablet, min_deltas=5, max_deltas=1000)
        if run:
            merged = rs(run[-1].version, sum(r.data_size for r in run))
            rewritten += merged.data_size
            ids = {r.id for r in run}
            tablet = [r for r in tablet if r.id not in ids] + [merged]
            tablet.sort(key=lambda r: r.version)
        assert len(tablet) <= 16
    assert rewritten < 8 * loaded  # write amplification ~ log(loads), not ~ loads


def test_base_run_takes_every_rowset_and_tablets_map_their_rowsets():
    assert pick_all([rs(2, 1)]) == []
    assert len(pick_all([rs(2, 1), rs(3, 1)])) == 2
    table = Table(
        id=1, db_id=1, name="t", columns=[], partitions=[Partition(id=3, name="t", tablet_ids=[7, 8])],
        rowsets=[rs(4, 1), rs(2, 1), rs(3, 1, tablet=8), Rowset(id="empty", tablet_id=7, partition_id=3, version=5)],
    )  # fmt: skip
    per = tablet_rowsets(table)
    assert [r.version for r in per[7]] == [2, 4] and [r.version for r in per[8]] == [3]


def test_version_ranges_cover_the_versions_since_the_previous_rowset():
    assert version_ranges([rs(2, 1), rs(3, 1), rs(9, 1), rs(10, 1)]) == [(2, 2), (3, 3), (4, 9), (10, 10)]
    assert version_ranges([]) == []


# --- Doris' formats ------------------------------------------------------------------------


def test_pretty_bytes_and_rowset_lines_as_doris_prints_them():
    assert pretty_bytes(0) == "0"
    assert pretty_bytes(574) == "574.00 B"
    assert pretty_bytes(3185) == "3.11 KB"
    assert pretty_bytes(int(2.86 * (1 << 30))) == "2.86 GB"
    assert rowset_line(2, 9, rs(9, 3185, files=2), compacted=False) == "[2-9] 2 DATA OVERLAPPING r9 3.11 KB"
    assert rowset_line(2, 9, rs(9, 0), compacted=True) == "[2-9] 1 DATA NONOVERLAPPING r9 0"


def test_status_json_and_parameter_checks_match_compaction_action():
    assert json.loads(status_json("NOT_FOUND", "Tablet not found. tablet_id=5")) == {
        "status": "NOT_FOUND",
        "msg": "Tablet not found. tablet_id=5",
    }
    assert status_json("E-2000", "x").startswith('{\n    "status": "E-2000"')  # rapidjson PrettyWriter
    assert check_ids("", "") == ((0, 0), "tablet id and table id can not be empty at the same time!")
    assert check_ids("1", "2") == ((0, 0), "tablet id and table id can not be set at the same time!")
    assert check_ids("x", "") == ((0, 0), "convert tablet_id failed, stoull")
    assert check_ids("", "-1") == ((0, 0), "convert table_id failed, stoull")
    assert check_ids("12", "") == ((12, 0), None)
    assert check_ids("", "13") == ((0, 13), None)


# --- statements ----------------------------------------------------------------------------


def test_admin_compact_and_show_tablets_statements():
    s = parse_statement("ADMIN COMPACT TABLE db1.t PARTITION p1 WHERE TYPE='BASE'")
    assert s == AdminCompact(
        db="db1", table="t", partitions=["p1"], compact_type="BASE", where_given=True, sql=s.sql
    )
    s = parse_statement("admin compact table t partition (p1) where type = 'cumulative';")
    assert (s.partitions, s.compact_type) == (["p1"], "CUMULATIVE")
    assert parse_statement("ADMIN COMPACT TABLE t PARTITION (p1, p2) WHERE TYPE='BASE'").partitions == ["p1", "p2"]
    s = parse_statement("ADMIN COMPACT TABLE t")
    assert (s.partitions, s.where_given, s.compact_type) == ([], False, None)
    for bad in ("TYPE = 'FULL'", "kind = 'BASE'", "TYPE != 'BASE'", "TYPE = BASE"):
        s = parse_statement(f"ADMIN COMPACT TABLE t PARTITION p WHERE {bad}")
        assert (s.where_given, s.compact_type) == (True, None), bad
    s = parse_statement("SHOW TABLETS FROM db1.t PARTITION (p1, p2)")
    assert s == ShowTablets(db="db1", table="t", partitions=["p1", "p2"], sql=s.sql)
    assert parse_statement("SHOW TABLETS FROM t").partitions is None


# --- the catalog ---------------------------------------------------------------------------


@pytest.fixture
def catalog(tmp_path):
    store = MetaStore(tmp_path / "meta", sync_policy="NO_SYNC", roll_num=1000)
    store.open()
    svc = CatalogService(store, label_keep_max_second=3600, max_tablet_version_num=3)
    svc.create_database("d")

    def build(db_id, alloc, now):
        table_id, part_id, t1, t2 = alloc(), alloc(), alloc(), alloc()
        return Table(
            id=table_id, db_id=db_id, name="t", columns=[Column(name="k", type=ColumnType(name="INT"), is_key=True)],
            key_columns=["k"], partitions=[Partition(id=part_id, name="t", tablet_ids=[t1, t2])],
            distribution_columns=["k"],
        )  # fmt: skip

    svc.create_table("d", build)
    yield svc
    store.close()


def _load(svc: CatalogService, n: int, tablet_index: int = 0) -> None:
    table = svc.table("d", "t")
    p = table.partitions[0]
    txn, _ = svc.txns.begin_txn("d", "t", f"l{n}")
    r = Rowset(id=f"r{n}", tablet_id=p.tablet_ids[tablet_index], partition_id=p.id, files=[f"f{n}.parquet"])
    svc.txns.commit_txn(txn.id, [r])


def test_loads_fail_with_dorises_error_once_a_tablet_has_too_many_versions(catalog):
    for n in range(4):  # 4 rowsets in one tablet: the limit (3) is passed after the 4th commit
        _load(catalog, n)
    table = catalog.table("d", "t")
    tablet = table.partitions[0].tablet_ids[0]
    with pytest.raises(LoadError) as e:
        catalog.txns.begin_txn("d", "t", "l9")
    assert e.value.message.startswith(
        f"[E-235]failed to init rowset builder. version count: 4, exceed limit: 3, tablet: {tablet}."
    )
    # Compaction brings the count down (one op, no new version) and loads go on.
    version = table.visible_version
    merged = Rowset(id="m", tablet_id=tablet, partition_id=table.partitions[0].id, version=5, files=["m.parquet"])
    assert catalog.compact_rowsets(table.id, ["r0", "r1", "r2", "r3"], [merged])
    assert table.visible_version == version
    assert sorted(catalog.state.retired_files) == ["f0.parquet", "f1.parquet", "f2.parquet", "f3.parquet"]
    _load(catalog, 10)
    # A compaction whose inputs are gone meanwhile is refused and logs nothing.
    assert not catalog.compact_rowsets(table.id, ["r0"], [merged])
    # Where compaction is off (table property), Doris has no version limit.
    catalog.set_table_properties("d", "t", {"disable_auto_compaction": "true"})
    for n in range(20, 25):
        _load(catalog, n)
