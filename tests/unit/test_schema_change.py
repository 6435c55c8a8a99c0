"""Schema change without rewriting files: ALTER TABLE's Doris rules, and old rowsets read with
the new schema (mapped by column id) on both engines, by queries and by compaction."""

from __future__ import annotations

import os
import uuid
from decimal import Decimal

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from galene.catalog.model import Rowset, SchemaVersion, Table, columns_at, with_column_ids
from galene.common.errors import AnalysisError
from galene.sql.ddl.alter_table import alter_table
from galene.sql.ddl.create_table import table_from_create
from galene.sql.statements.parse import parse_statement
from galene.sql.statements.schema import AlterTableColumns
from tests.support.node import TEST_ENGINE_CONF


def create(sql: str) -> Table:
    stmt = parse_statement(sql)
    ids = iter(range(100, 10_000))
    table = table_from_create(stmt, db_id=1, alloc_id=lambda: next(ids), now=0.0)
    return msgspec.structs.replace(table, columns=with_column_ids(table.columns))


def alter(table: Table, clauses: str) -> Table:
    """`table` after `ALTER TABLE t <clauses>`, as apply_op leaves it."""
    stmt = parse_statement(f"ALTER TABLE {table.name} {clauses}")
    assert isinstance(stmt, AlterTableColumns), stmt
    fields = alter_table(table, stmt.actions)
    history = list(table.schema_history)
    if fields["previous_columns"] is not None:
        history.append(SchemaVersion(version=table.schema_version, columns=fields["previous_columns"]))
    return msgspec.structs.replace(
        table,
        columns=fields["columns"],
        key_columns=fields["key_columns"],
        partition_columns=fields["partition_columns"],
        distribution_columns=fields["distribution_columns"],
        properties=fields["properties"],
        comment=fields["comment"],
        schema_version=fields["schema_version"],
        schema_history=history,
    )


def names(table: Table) -> list[str]:
    return [c.name for c in table.columns]


DUP = "CREATE TABLE d (k INT, v VARCHAR(10), n INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
UNIQ = "CREATE TABLE u (k INT, v VARCHAR(10), n INT) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
AGG = (
    "CREATE TABLE a (k INT, s BIGINT SUM, m INT MAX, r VARCHAR(5) REPLACE) AGGREGATE KEY(k) "
    "DISTRIBUTED BY HASH(k) BUCKETS 1"
)


# --- Doris' rules ---------------------------------------------------------------------------
def test_add_columns_positions_ids_and_versions():
    t = create(UNIQ)
    assert [c.id for c in t.columns] == [1, 2, 3, 4]  # the delete sign has one too
    t2 = alter(t, "ADD COLUMN c INT DEFAULT '7' COMMENT 'new'")
    # A value column goes after the visible ones (the hidden delete sign stays last).
    assert names(t2) == ["k", "v", "n", "c", "__DORIS_DELETE_SIGN__"]
    assert t2.column("c").id == 5 and t2.column("c").default == "7" and t2.column("c").comment == "new"
    assert t2.schema_version == 1 and [c.name for c in columns_at(t2, 0)] == names(t)
    t3 = alter(t2, "ADD COLUMN (x INT, y INT) AFTER n, ADD COLUMN f INT KEY FIRST")
    assert names(t3) == ["f", "k", "v", "n", "x", "y", "c", "__DORIS_DELETE_SIGN__"] and t3.key_columns == [
        "f",
        "k",
    ]
    with pytest.raises(AnalysisError, match=r"Invalid column order. value should be after key. index\[u\]"):
        alter(t2, "ADD COLUMN f INT FIRST")
    assert t3.schema_version == 2 and [h.version for h in t3.schema_history] == [0, 1]
    # A KEY column joins the keys after the last key column.
    t4 = alter(t, "ADD COLUMN k2 INT KEY DEFAULT '0'")
    assert names(t4)[:2] == ["k", "k2"] and t4.key_columns == ["k", "k2"]


def test_add_column_errors_are_doris_texts():
    t = create(DUP)
    cases = {
        "ADD COLUMN v INT": "Can not add column which already exists in base table: v",
        "ADD COLUMN c INT SUM": "Can not assign aggregation method on column in Duplicate data model table: c",
        "ADD COLUMN c INT AFTER nope": "Column[nope] does not found",
        "ADD COLUMN c INT NOT NULL": "NOT NULL column needs a DEFAULT",
    }
    for clause, text in cases.items():
        with pytest.raises(AnalysisError, match=text.replace("[", r"\[").replace("]", r"\]")):
            alter(t, clause)
    a = create(AGG)
    with pytest.raises(AnalysisError, match="with SUM aggregation function must be zero"):
        alter(a, "ADD COLUMN c INT SUM DEFAULT '3'")
    with pytest.raises(AnalysisError, match=r"Invalid column order. value should be after key. index\[a\]"):
        alter(a, "ADD COLUMN c INT AFTER m")  # no aggregation: a key column, after a value
    a2 = alter(a, "ADD COLUMN c INT")  # AGGREGATE: a column without aggregation is a key
    assert a2.key_columns == ["k", "c"] and names(a2)[:2] == ["k", "c"]


def test_drop_column_rules():
    u = create(UNIQ)
    with pytest.raises(AnalysisError, match="Can not drop key column in Unique data model table"):
        alter(u, "DROP COLUMN k")
    with pytest.raises(AnalysisError, match="Column does not exists: zz"):
        alter(u, "DROP COLUMN zz")
    u2 = alter(u, "DROP COLUMN v")
    assert names(u2) == ["k", "n", "__DORIS_DELETE_SIGN__"] and u2.schema_version == 1
    a = create(AGG)
    with pytest.raises(AnalysisError, match="value column with REPLACE aggregation method"):
        alter(a, "DROP COLUMN k")
    d = create(DUP)
    with pytest.raises(AnalysisError, match=r"Distribution column\[k\] cannot be dropped. index\[d\]"):
        alter(d, "DROP COLUMN k")
    p = create(
        "CREATE TABLE p (k INT, d DATE, v INT) DUPLICATE KEY(k, d) PARTITION BY RANGE(d) "
        "(PARTITION p1 VALUES LESS THAN ('2024-01-01')) DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    with pytest.raises(AnalysisError, match=r"Partition column\[d\] cannot be dropped. index\[p\]"):
        alter(p, "DROP COLUMN d")


def test_modify_column_type_changes():
    t = create(DUP)
    t2 = alter(t, "MODIFY COLUMN n BIGINT")
    assert t2.column("n").type.name == "BIGINT" and t2.column("n").id == 3 and t2.schema_version == 1
    t3 = alter(t2, "MODIFY COLUMN v VARCHAR(20) COMMENT 'wider'")
    assert t3.column("v").type.length == 20 and t3.column("v").comment == "wider"
    cases = {
        "MODIFY COLUMN v VARCHAR(5)": "Cannot shorten string length",
        "MODIFY COLUMN n DATE": "Can not change INT to DATEV2",  # Doris allows it with a rewrite
        "MODIFY COLUMN n NOT NULL": None,
        "MODIFY COLUMN n INT NOT NULL": "Can not change from nullable to non-nullable",
        "MODIFY COLUMN n INT DEFAULT '1'": "Can not change default value",
        "MODIFY COLUMN n INT SUM": "Can not assign aggregation method on column in Duplicate data model table: n",
        "MODIFY COLUMN zz INT": r"Column\[zz\] does not exists",
        "MODIFY COLUMN k BIGINT": r"Can not modify distribution column\[k\]. index\[d\]",
        "MODIFY COLUMN n VARCHAR(3)": "Can not change from wider type int to narrower type varchar",
    }
    for clause, text in cases.items():
        if text is None:
            continue
        with pytest.raises(AnalysisError, match=text):
            alter(t, clause)
    b = create("CREATE TABLE b (k INT, f BOOLEAN) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    with pytest.raises(AnalysisError, match="Can not change BOOLEAN to INT"):
        alter(b, "MODIFY COLUMN f INT")
    a = create(AGG)
    with pytest.raises(AnalysisError, match="Aggregate method must be specified for value column: s"):
        alter(a, "MODIFY COLUMN s BIGINT")
    with pytest.raises(AnalysisError, match="Can not change aggregation type"):
        alter(a, "MODIFY COLUMN m BIGINT MIN")
    assert alter(a, "MODIFY COLUMN m BIGINT MAX").column("m").type.name == "BIGINT"
    # Comments and positions change no storage: no new schema version.
    c = alter(t, "MODIFY COLUMN n COMMENT 'just a comment'")
    assert c.column("n").comment == "just a comment" and c.schema_version == 0 and not c.schema_history
    m = alter(t, "MODIFY COLUMN n INT AFTER k")
    assert names(m) == ["k", "n", "v"] and m.schema_version == 0


def test_rename_column_and_table_comment():
    u = create(
        "CREATE TABLE u (k INT, s INT, v INT) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1 "
        "PROPERTIES ('function_column.sequence_col' = 's')"
    )
    r = alter(u, "RENAME COLUMN k kk")
    assert r.key_columns == ["kk"] and r.distribution_columns == ["kk"] and r.column("kk").id == 1
    r2 = alter(r, "RENAME COLUMN s seq")
    assert r2.properties["function_column.sequence_col"] == "seq"
    assert r2.schema_version == 2 and [c.name for c in columns_at(r2, 1)][:2] == ["kk", "s"]
    with pytest.raises(AnalysisError, match=r"Column name\[v\] is already used"):
        alter(u, "RENAME COLUMN s v")
    with pytest.raises(AnalysisError, match=r"Column\[aaa\] does not exists"):
        alter(u, "RENAME COLUMN aaa bbb")
    with pytest.raises(AnalysisError, match="Same column name"):
        alter(u, "RENAME COLUMN v v")
    with pytest.raises(AnalysisError, match=r"Can not drop sequence mapping column\[s\]"):
        alter(u, "DROP COLUMN s")
    c = alter(u, "MODIFY COMMENT 'the table'")
    assert c.comment == "the table" and c.schema_version == 0


def test_column_ids_are_never_reused():
    t = alter(create(DUP), "ADD COLUMN c INT")
    t = alter(alter(t, "DROP COLUMN c"), "ADD COLUMN c INT")
    assert t.column("c").id == 5 and [c.id for c in columns_at(t, 1)] == [1, 2, 3, 4]


def test_legacy_table_gets_ids_at_its_first_change():
    t = create(DUP)
    legacy = msgspec.structs.replace(t, columns=[msgspec.structs.replace(c, id=0) for c in t.columns])
    t2 = alter(legacy, "RENAME COLUMN v w")
    assert [c.id for c in columns_at(t2, 0)] == [1, 2, 3] and [c.id for c in t2.columns] == [1, 2, 3]


# --- reading old rowsets with the new schema (both engines) -----------------------------------
@pytest.fixture(scope="module", params=["spark", "sail"])
def engine(request):
    from galene.engine.session import SparkEngine

    connect_mode = os.environ.get("SPARK_CONNECT_MODE_ENABLED")
    eng = (
        SparkEngine(engine="sail")
        if request.param == "sail"
        else SparkEngine("local[2]", conf=TEST_ENGINE_CONF)
    )
    eng.start()
    yield eng
    eng.stop()
    if connect_mode is None:
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)


def write(storage: str, table: Table, version: int, rows: list[dict]) -> Rowset:
    """A rowset of `rows` written with the table's *current* storage schema (as a load would)."""
    from galene.storage.fs import filesystem_for
    from galene.storage.rowset import write_rowset

    fs, root = filesystem_for(storage)
    p = table.partitions[0]
    data = pa.table(
        {
            c.name: pa.array([r.get(c.name, 0 if c.hidden else None) for r in rows], c.type.to_arrow())
            for c in table.columns
        }
    )
    rs = write_rowset(fs, root, table, p.id, p.tablet_ids[0], data)
    rs = msgspec.structs.replace(rs, version=version)
    table.rowsets.append(rs)
    table.visible_version = version
    return rs


def read(engine, table: Table, storage: str) -> list[tuple]:
    from galene.engine.scan import table_frame

    out = table_frame(engine.spark(), table, storage, file_names=engine.file_names).toArrow().to_pylist()
    return sorted(tuple(r.values()) for r in out)


def carry(old: Table, new: Table) -> Table:
    return msgspec.structs.replace(new, rowsets=list(old.rowsets), visible_version=old.visible_version)


@pytest.mark.parametrize("model", ["DUP", "UNIQ", "AGG"])
def test_old_rowsets_read_with_every_kind_of_change(engine, tmp_path, model):
    storage = "file://" + str(tmp_path)
    sql = {
        "DUP": DUP,
        "UNIQ": UNIQ,
        "AGG": "CREATE TABLE a (k INT, v VARCHAR(10) REPLACE, n INT SUM) AGGREGATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
    }[model]
    t = create(sql)
    write(storage, t, 2, [{"k": 1, "v": "a", "n": 10}, {"k": 2, "v": "b", "n": 20}])
    files_before = sorted(f for r in t.rowsets for f in r.files)
    agg = model == "AGG"
    t = carry(t, alter(t, "ADD COLUMN c INT " + ("SUM DEFAULT '0'" if agg else "DEFAULT '5'")))
    t = carry(t, alter(t, "RENAME COLUMN v w"))
    t = carry(t, alter(t, "MODIFY COLUMN n BIGINT" + (" SUM" if agg else "")))
    # A new column named as an old one was: old rows read its default, not the old values.
    t = carry(t, alter(t, "ADD COLUMN v INT " + ("REPLACE " if agg else "") + "DEFAULT '9'"))
    write(
        storage,
        t,
        3,
        [{"k": 2, "w": "B", "n": 5, "c": 6, "v": 1}, {"k": 3, "w": "c", "n": 30, "c": 7, "v": 2}],
    )
    t = carry(t, alter(t, "DROP COLUMN c"))
    assert sorted(f for r in t.rowsets for f in r.files)[:2] == files_before or len(files_before) == 1
    assert [r.schema_version for r in t.rowsets] == [0, 4]
    got = read(engine, t, storage)
    expected = {
        "DUP": [(1, "a", 10, 9), (2, "B", 5, 1), (2, "b", 20, 9), (3, "c", 30, 2)],
        "UNIQ": [(1, "a", 10, 9), (2, "B", 5, 1), (3, "c", 30, 2)],
        "AGG": [(1, "a", 10, 9), (2, "B", 25, 1), (3, "c", 30, 2)],
    }[model]
    assert got == expected
    assert [c.name for c in t.visible_columns()] == ["k", "w", "n", "v"]


def test_compaction_rewrites_old_rowsets_with_the_current_schema(engine, tmp_path):
    from galene.engine import compaction as ce

    storage = "file://" + str(tmp_path)
    t = create("CREATE TABLE u (k INT, v DECIMAL(5,2), n INT) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    write(storage, t, 2, [{"k": 1, "v": Decimal("1.50"), "n": 1}, {"k": 2, "v": Decimal("2.50"), "n": 2}])
    t = carry(t, alter(t, "MODIFY COLUMN v DECIMAL(9,3)"))
    t = carry(t, alter(t, "RENAME COLUMN n m"))
    write(storage, t, 3, [{"k": 2, "v": Decimal("20.125"), "m": 20, "__DORIS_DELETE_SIGN__": 0}])
    before = read(engine, t, storage)
    p = t.partitions[0]
    job = ce.TabletCompaction(
        tablet_id=p.tablet_ids[0], partition_id=p.id, rowsets=list(t.rowsets), drop_deletes=True
    )
    ids = ce.new_rowset_ids([job])
    [merged] = ce.compact_tablets(engine, t, [job], storage, rowset_ids=ids)
    assert merged.schema_version == t.schema_version == 2
    # The new file holds today's columns under today's names.
    root = storage.removeprefix("file://")
    assert pq.read_schema(os.path.join(root, merged.files[0])).names == [
        "k",
        "v",
        "m",
        "__DORIS_DELETE_SIGN__",
    ]
    compacted = msgspec.structs.replace(t, rowsets=[merged])
    assert (
        read(engine, compacted, storage) == before == [(1, Decimal("1.500"), 1), (2, Decimal("20.125"), 20)]
    )


def _unused() -> str:  # keeps uuid imported for ad-hoc rowset ids when debugging
    return uuid.uuid4().hex
