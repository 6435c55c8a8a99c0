"""Compaction engine jobs against a model, on both engines (a real local Spark, a real Sail).

Random loads (inserts, updates, deletes with the delete sign, sequence values, NULLs) are
written as rowsets in the storage layout, random contiguous runs of each tablet's rowsets are
compacted with `galene.engine.compaction.compact_tablets` (the engine job), the catalog's replacement is applied
to the Table struct as `CompactRowsets` does, and the table read through `scan.table_frame`
(what queries read) must be the same before and after every compaction — and equal to a model.
DUPLICATE and UNIQUE tests run twice: merged by the engine job and, as small runs are, by a
BE's pyarrow merge (`galene.load.local_merge.compact_small_run`; `merge` fixture).
"""

from __future__ import annotations

import os
import random
import uuid

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from galene.catalog.model import DELETE_SIGN, Column, Partition, Rowset, Table
from galene.common.types import parse_type
from galene.engine.compaction import TabletCompaction, compact_tablets, new_rowset_ids
from galene.engine.scan import table_frame
from galene.engine.session import SparkEngine
from galene.load.local_merge import LOCAL_MAX_BYTES, compact_small_run, merges_locally
from tests.support.node import TEST_ENGINE_CONF

DB_ID = 1
PARTITION_ID = 3
TABLETS = (4, 5)


@pytest.fixture(scope="module", params=["spark", "sail"])
def engine(request):
    if request.param == "sail":
        eng = SparkEngine(engine="sail")
    else:
        eng = SparkEngine("local[2]", conf=TEST_ENGINE_CONF)
    eng.start()
    yield eng
    eng.stop()


@pytest.fixture(params=["engine", "local"])
def merge(request, engine):
    """`local_max_bytes` for `compact`: 0 (the engine job) or the default (the local merge of
    small runs, which never touches the engine: run with one engine only)."""
    if request.param == "local":
        if engine.engine == "sail":
            pytest.skip("the local merge does not use the engine; read back on Spark only")
        return LOCAL_MAX_BYTES
    return 0


@pytest.fixture
def storage(tmp_path):
    root = tmp_path / "storage"
    root.mkdir()
    return "file://" + str(root)


def col(name, type_text, *, key=False, agg=None, hidden=False):
    return Column(name=name, type=parse_type(type_text), is_key=key, aggregation=agg, hidden=hidden)


def make_table(table_id, keys_type, columns, keys, properties=None):
    if keys_type == "UNIQUE_KEYS":
        columns = columns + [col(DELETE_SIGN, "tinyint", hidden=True)]
    return Table(
        id=table_id,
        db_id=DB_ID,
        name=f"t{table_id}",
        columns=columns,
        keys_type=keys_type,
        key_columns=keys,
        partitions=[Partition(id=PARTITION_ID, name=f"t{table_id}", tablet_ids=list(TABLETS))],
        distribution_columns=keys,
        properties=dict(properties or {}),
        visible_version=1,
    )


def tablet_of(key: int) -> int:
    return TABLETS[key % len(TABLETS)]


def write_load(storage_uri, table, rows: list[dict]) -> None:
    """One committed load: a rowset per touched tablet at the next version (2 files if big)."""
    version = table.visible_version + 1
    root = storage_uri.removeprefix("file://")
    schema = pa.schema([pa.field(c.name, c.type.to_arrow()) for c in table.columns])
    for tablet in TABLETS:
        part = [r for r in rows if tablet_of(r["k"]) == tablet]
        if not part:
            continue
        rowset_id = uuid.uuid4().hex
        data = pa.table(
            {c.name: pa.array([r.get(c.name) for r in part], c.type.to_arrow()) for c in table.columns},
            schema=schema,
        )
        rel_dir = f"data/{DB_ID}/{table.id}/{PARTITION_ID}/{tablet}"
        os.makedirs(os.path.join(root, rel_dir), exist_ok=True)
        files = []
        pieces = 2 if len(part) > 3 else 1
        step = -(-len(part) // pieces)
        for i in range(pieces):
            rel = f"{rel_dir}/{rowset_id}_{i}.parquet"
            pq.write_table(data.slice(i * step, step), os.path.join(root, rel))
            files.append(rel)
        table.rowsets.append(
            Rowset(id=rowset_id, tablet_id=tablet, partition_id=PARTITION_ID, version=version, txn_id=version,
                   files=files, num_rows=len(part), data_size=data.nbytes)
        )  # fmt: skip
    table.visible_version = version


def canon(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: tuple((v is None, str(v)) for _, v in sorted(r.items())))


def compact(engine, table, jobs, storage_uri, *, local_max_bytes: int = 0, parallelism: int = 4):
    """Merge `jobs` as the system does: a BE's pyarrow merge when the run is small enough for
    `local_max_bytes` (0: never), else the engine job."""
    rowset_ids = new_rowset_ids(jobs)
    if merges_locally(table, jobs, local_max_bytes):
        return compact_small_run(table, jobs, storage_uri, rowset_ids)
    return compact_tablets(engine, table, jobs, storage_uri, rowset_ids=rowset_ids, parallelism=parallelism)


def read(engine, table, storage_uri):
    return canon(table_frame(engine.spark(), table, storage_uri).toArrow().to_pylist())


def compact_random(
    engine, table, storage_uri, rng: random.Random, *, full: bool, local_max_bytes: int = 0
) -> None:
    """Compact a random contiguous run of each tablet (all of them when `full`), then apply
    the replacement to `table` as the catalog's CompactRowsets op does."""
    seq = table.sequence_column() is not None
    jobs = []
    for tablet in TABLETS:
        rs = sorted((r for r in table.rowsets if r.tablet_id == tablet), key=lambda r: r.version)
        if len(rs) < 2:
            continue
        if full:
            i, j = 0, len(rs)
        else:
            i = rng.randrange(0, len(rs) - 1)
            j = rng.randrange(i + 2, len(rs) + 1)
        # The rule the FE applies: deletes go only when nothing older can be hidden by them,
        # and never with a sequence column (a delete also hides later loads with lower values).
        drop = i == 0 and not seq
        jobs.append(TabletCompaction(tablet, PARTITION_ID, rs[i:j], drop_deletes=drop))
    if not jobs:
        return
    added = compact(engine, table, jobs, storage_uri, parallelism=2, local_max_bytes=local_max_bytes)
    for r in added:
        assert r.version == max(x.version for j in jobs if j.tablet_id == r.tablet_id for x in j.rowsets)
        assert r.txn_id == 0 and r.files and r.num_rows > 0
    removed = {r.id for j in jobs for r in j.rowsets}
    kept = [r for r in table.rowsets if r.id not in removed] + added
    kept.sort(key=lambda r: r.version)
    table.rowsets = kept


# --- models -------------------------------------------------------------------------------


def unique_model(loads, seq_col):
    """Per key the row of the highest (sequence, version); deleted keys gone."""
    best = {}
    for version, rows in enumerate(loads):
        for r in rows:
            rank = ((r[seq_col] is not None, r[seq_col] or 0) if seq_col else (), version)
            if r["k"] not in best or rank >= best[r["k"]][0]:
                best[r["k"]] = (rank, r)
    return [
        {k: v for k, v in r.items() if k != DELETE_SIGN} for _, r in best.values() if not r.get(DELETE_SIGN)
    ]


def unique_loads(rng, n_loads, seq_col=None):
    loads = []
    for _ in range(n_loads):
        rows = {}
        for _ in range(rng.randint(1, 8)):
            k = rng.randint(0, 15)
            row = {"k": k, "v": rng.choice([None, "a", "bb", "ccc"]), "n": rng.randint(-5, 5), DELETE_SIGN: 0}
            if seq_col:
                row[seq_col] = rng.choice([None, 1, 2, 3, 4])
            if rng.random() < 0.2:
                row[DELETE_SIGN] = 1
            rows[k] = row  # one row per key within a load, as the BE keeps the last one
        loads.append(list(rows.values()))
    return loads


@pytest.mark.parametrize("seq", [False, True])
def test_unique_compaction_never_changes_what_queries_see(engine, merge, storage, seq):
    cols = [col("k", "int", key=True), col("v", "varchar(8)"), col("n", "bigint")]
    props = {}
    if seq:
        cols.append(col("s", "int"))
        props["function_column.sequence_col"] = "s"
    table = make_table(201 + seq, "UNIQUE_KEYS", cols, ["k"], props)
    rng = random.Random(11 + seq)
    loads = []
    for round_ in range(3):
        for rows in unique_loads(rng, 4, "s" if seq else None):
            write_load(storage, table, rows)
            loads.append(rows)
        before = read(engine, table, storage)
        assert before == canon(unique_model(loads, "s" if seq else None))
        compact_random(engine, table, storage, rng, full=round_ == 2, local_max_bytes=merge)
        assert read(engine, table, storage) == before
    # After the full compaction: one rowset per tablet; delete-signed rows gone, except with a
    # sequence column, where they keep hiding later loads of lower sequence values.
    assert sorted(r.tablet_id for r in table.rowsets) == sorted(TABLETS)
    files = [f for r in table.rowsets for f in r.files]
    stored = pa.concat_tables(pq.read_table(os.path.join(storage.removeprefix("file://"), f)) for f in files)
    assert (stored.column(DELETE_SIGN).to_pylist().count(1) > 0) == seq
    if seq:
        # A load of lower sequence values after the compaction stays hidden by the kept deletes.
        deleted = [r["k"] for r in stored.to_pylist() if r[DELETE_SIGN]]
        rows = [{"k": k, "v": "late", "n": 0, "s": None, DELETE_SIGN: 0} for k in deleted]
        write_load(storage, table, rows)
        loads.append(rows)
        assert read(engine, table, storage) == canon(unique_model(loads, "s"))


def test_cumulative_keeps_deletes_that_hide_older_rowsets(engine, merge, storage):
    table = make_table(210, "UNIQUE_KEYS", [col("k", "int", key=True), col("v", "varchar(8)")], ["k"])
    write_load(storage, table, [{"k": 2, "v": "old", DELETE_SIGN: 0}])
    write_load(storage, table, [{"k": 2, "v": None, DELETE_SIGN: 1}])
    write_load(storage, table, [{"k": 4, "v": "x", DELETE_SIGN: 0}])
    assert read(engine, table, storage) == [{"k": 4, "v": "x"}]
    rs = sorted((r for r in table.rowsets if r.tablet_id == tablet_of(2)), key=lambda r: r.version)
    job = TabletCompaction(tablet_of(2), PARTITION_ID, rs[1:], drop_deletes=False)
    (added,) = compact(engine, table, [job], storage, local_max_bytes=merge)
    root = storage.removeprefix("file://")
    stored = pa.concat_tables(pq.read_table(os.path.join(root, f)) for f in added.files)
    assert sorted(stored.column(DELETE_SIGN).to_pylist()) == [0, 1]  # the delete of k=2 is still there
    table.rowsets = [rs[0], added]
    assert read(engine, table, storage) == [{"k": 4, "v": "x"}]
    # A base compaction (from the oldest rowset) drops it, and the key stays deleted.
    job = TabletCompaction(tablet_of(2), PARTITION_ID, [rs[0], added], drop_deletes=True)
    (added,) = compact(engine, table, [job], storage, local_max_bytes=merge)
    assert added.num_rows == 1 and added.version == 4
    table.rowsets = [added]
    assert read(engine, table, storage) == [{"k": 4, "v": "x"}]


def test_aggregate_compaction_folds_keys_like_the_read(engine, storage):
    table = make_table(
        220,
        "AGG_KEYS",
        [
            col("k", "int", key=True),
            col("s", "bigint", agg="SUM"),
            col("lo", "int", agg="MIN"),
            col("hi", "int", agg="MAX"),
            col("r", "varchar(8)", agg="REPLACE"),
            col("rn", "varchar(8)", agg="REPLACE_IF_NOT_NULL"),
        ],
        ["k"],
    )
    rng = random.Random(5)
    expected: dict[int, dict] = {}
    for round_ in range(3):
        for _ in range(4):
            rows = {}
            for _ in range(rng.randint(1, 6)):
                k = rng.randint(0, 9)
                rows[k] = {
                    "k": k, "s": rng.choice([None, rng.randint(-9, 9)]), "lo": rng.randint(-9, 9),
                    "hi": rng.randint(-9, 9), "r": rng.choice(["a", "b", None]), "rn": rng.choice(["x", None]),
                }  # fmt: skip
            write_load(storage, table, list(rows.values()))
            for k, r in rows.items():
                e = expected.get(k)
                if e is None:
                    expected[k] = dict(r)
                    continue
                e["s"] = r["s"] if e["s"] is None else (e["s"] if r["s"] is None else e["s"] + r["s"])
                e["lo"], e["hi"], e["r"] = min(e["lo"], r["lo"]), max(e["hi"], r["hi"]), r["r"]
                e["rn"] = r["rn"] if r["rn"] is not None else e["rn"]
        before = read(engine, table, storage)
        assert before == canon(list(expected.values()))
        compact_random(engine, table, storage, rng, full=round_ == 2)
        assert read(engine, table, storage) == before
    assert sorted(r.tablet_id for r in table.rowsets) == sorted(TABLETS)


def test_duplicate_compaction_keeps_every_row_in_one_file_per_tablet(engine, merge, storage):
    table = make_table(
        230, "DUP_KEYS", [col("k", "int", key=True), col("d", "datetime"), col("x", "decimal(9,2)")], ["k"]
    )
    import datetime as dt
    from decimal import Decimal

    for i in range(6):
        write_load(
            storage, table,
            [{"k": k, "d": dt.datetime(2024, 1, 1 + i, 12, 0, 0, 123000), "x": Decimal(f"{k}.{i}5")} for k in range(i, i + 5)],
        )  # fmt: skip
    before = read(engine, table, storage)
    assert len(before) == 30
    compact_random(engine, table, storage, random.Random(1), full=True, local_max_bytes=merge)
    assert read(engine, table, storage) == before
    for r in table.rowsets:
        assert len(r.files) == 1  # every tablet's rows met in one task


def test_a_failed_job_leaves_no_files(engine, merge, storage):
    table = make_table(240, "UNIQUE_KEYS", [col("k", "int", key=True), col("v", "varchar(8)")], ["k"])
    write_load(storage, table, [{"k": 1, "v": "a", DELETE_SIGN: 0}])
    write_load(storage, table, [{"k": 1, "v": "b", DELETE_SIGN: 0}])
    rs = [r for r in table.rowsets if r.tablet_id == tablet_of(1)]
    # A file missing under the job: the engine job fails, and nothing it wrote stays behind.
    root = storage.removeprefix("file://")
    os.remove(os.path.join(root, rs[0].files[0]))
    job = TabletCompaction(tablet_of(1), PARTITION_ID, rs, drop_deletes=True)
    before = {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}
    with pytest.raises(Exception):  # noqa: B017 - whatever the engine raises for the missing file
        compact(engine, table, [job], storage, local_max_bytes=merge)
    after = {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}
    assert after == before


def test_unusual_file_names_take_the_per_rowset_read(engine, storage):
    table = make_table(250, "UNIQUE_KEYS", [col("k", "int", key=True), col("v", "varchar(8)")], ["k"])
    write_load(storage, table, [{"k": 2, "v": "a", DELETE_SIGN: 0}])
    write_load(storage, table, [{"k": 2, "v": "b", DELETE_SIGN: 0}])
    root = storage.removeprefix("file://")
    renamed = []
    for r in table.rowsets:
        new = [f.replace(".parquet", " x.parquet") for f in r.files]  # a space: URL-encoded by Spark
        for a, b in zip(r.files, new, strict=True):
            os.rename(os.path.join(root, a), os.path.join(root, b))
        renamed.append(msgspec.structs.replace(r, files=new))
    table.rowsets = renamed
    job = TabletCompaction(tablet_of(2), PARTITION_ID, renamed, drop_deletes=True)
    (added,) = compact_tablets(engine, table, [job], storage, rowset_ids=new_rowset_ids([job]))
    table.rowsets = [added]
    assert read(engine, table, storage) == [{"k": 2, "v": "b"}]


def test_small_runs_merge_without_the_engine(storage):
    """Small DUPLICATE/UNIQUE runs of current-schema rowsets never reach the engine (None here);
    AGGREGATE tables, older schemas, bigger inputs (UNIQUE: over a quarter of the limit) and a
    limit of 0 go to the engine job."""
    dup = make_table(260, "DUP_KEYS", [col("k", "int", key=True), col("v", "varchar(8)")], ["k"])
    for i in range(3):
        write_load(storage, dup, [{"k": k, "v": f"v{i}"} for k in range(4)])
    jobs = [
        TabletCompaction(
            t, PARTITION_ID, sorted((r for r in dup.rowsets if r.tablet_id == t), key=lambda r: r.version)
        )
        for t in TABLETS
    ]
    assert merges_locally(dup, jobs, LOCAL_MAX_BYTES)
    assert not merges_locally(dup, jobs, 0)
    assert not merges_locally(dup, jobs, sum(r.data_size for r in dup.rowsets) - 1)
    added = compact(None, dup, jobs, storage, local_max_bytes=LOCAL_MAX_BYTES)
    root = storage.removeprefix("file://")
    stored = pa.concat_tables(pq.read_table(os.path.join(root, f)) for r in added for f in r.files)
    assert sorted(stored.to_pylist(), key=lambda r: (r["k"], r["v"])) == [
        {"k": k, "v": f"v{i}"} for k in range(4) for i in range(3)
    ]
    assert [(r.version, r.txn_id, r.num_rows) for r in added] == [(4, 0, 6), (4, 0, 6)]

    uniq = make_table(261, "UNIQUE_KEYS", [col("k", "int", key=True), col("v", "varchar(8)")], ["k"])
    write_load(storage, uniq, [{"k": 1, "v": "a", DELETE_SIGN: 0}, {"k": 2, "v": "a", DELETE_SIGN: 0}])
    write_load(storage, uniq, [{"k": 1, "v": "b", DELETE_SIGN: 0}, {"k": 2, "v": None, DELETE_SIGN: 1}])
    jobs = [
        TabletCompaction(t, PARTITION_ID, [r for r in uniq.rowsets if r.tablet_id == t], drop_deletes=True)
        for t in TABLETS
    ]
    size = sum(r.data_size for j in jobs for r in j.rowsets)
    assert merges_locally(uniq, jobs, 4 * size) and not merges_locally(uniq, jobs, 4 * size - 4)
    added = compact(None, uniq, jobs, storage, local_max_bytes=4 * size)
    stored = pa.concat_tables(pq.read_table(os.path.join(root, f)) for r in added for f in r.files)
    assert stored.to_pylist() == [{"k": 1, "v": "b", DELETE_SIGN: 0}]  # k=2's delete dropped with it

    agg = make_table(262, "AGG_KEYS", [col("k", "int", key=True), col("s", "bigint", agg="SUM")], ["k"])
    write_load(storage, agg, [{"k": 1, "s": 1}])
    assert not merges_locally(
        agg, [TabletCompaction(tablet_of(1), PARTITION_ID, agg.rowsets)], LOCAL_MAX_BYTES
    )
    old = msgspec.structs.replace(dup.rowsets[0], schema_version=dup.schema_version - 1)
    assert not merges_locally(dup, [TabletCompaction(old.tablet_id, PARTITION_ID, [old])], LOCAL_MAX_BYTES)
