"""Table indexes as Doris declares them (INDEX … USING INVERTED | BITMAP | NGRAM_BF in CREATE TABLE,
CREATE INDEX … ON t, ALTER TABLE ADD/DROP INDEX, DROP INDEX … ON t): parsing, Doris' checks and
texts, SHOW INDEX / SHOW CREATE TABLE, and what column changes do to them. Metadata only: queries
never use them. Also the type arguments Doris reads and ignores (FLOAT(53), DOUBLE(16))."""

from __future__ import annotations

import itertools

import msgspec
import pytest

from galene.catalog.model import Index, Table
from galene.common.errors import GaleneError
from galene.sql.ddl.alter_table import alter_table
from galene.sql.ddl.create_table import table_from_create
from galene.sql.ddl.render import show_create_table
from galene.sql.show import index_rows
from galene.sql.statements.parse import parse_statement
from galene.sql.statements.schema import AlterTableColumns

DUP = (
    "CREATE TABLE t (k INT, v STRING, n VARCHAR(20), j JSON, "
    "INDEX idx_v (v) USING INVERTED PROPERTIES('parser' = 'english') COMMENT 'by v') "
    "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
)


def create(sql: str) -> Table:
    ids = itertools.count(100)
    return table_from_create(parse_statement(sql), db_id=1, alloc_id=lambda: next(ids), now=0.0)


def error_of(fn, *args) -> str:
    with pytest.raises(GaleneError) as info:
        fn(*args)
    return info.value.message


def alter(table: Table, statement: str) -> Table:
    """`table` after an ALTER TABLE / CREATE INDEX / DROP INDEX statement, as apply_op leaves it."""
    stmt = parse_statement(statement)
    assert isinstance(stmt, AlterTableColumns), stmt
    fields = alter_table(table, stmt.actions)
    if fields is None:
        return table
    indexes = fields.pop("indexes")
    fields.pop("previous_columns")
    return msgspec.structs.replace(table, **fields, indexes=indexes if indexes is not None else table.indexes)


def test_create_table_indexes_and_show():
    t = create(DUP)
    assert t.indexes == [
        Index(
            name="idx_v",
            columns=["v"],
            index_type="INVERTED",
            properties={"parser": "english"},
            comment="by v",
        )
    ]
    assert index_rows(t) == [
        ("t", "", "idx_v", "", "v", "", "", "", "", "", "INVERTED", "by v", '("parser" = "english")')
    ]
    text = show_create_table(t)
    assert "  `j` json NULL COMMENT \"\",\n  INDEX idx_v (`v`) USING INVERTED PROPERTIES(\"parser\" = \"english\") " \
           "COMMENT 'by v'\n) ENGINE=OLAP" in text  # fmt: skip
    # SHOW CREATE TABLE's text creates the same table again.
    assert create(text).indexes == t.indexes


def test_create_index_drop_index_and_alter_table_forms():
    t = create(DUP)
    t = alter(t, "CREATE INDEX idx_k ON t (k)")
    t = alter(t, "ALTER TABLE t ADD INDEX idx_n (n) USING NGRAM_BF PROPERTIES('gram_size'='3', 'bf_size'='1024') "
                 "COMMENT 'ngram'")  # fmt: skip
    t = alter(t, "ALTER TABLE t ADD INDEX idx_nb (n) USING BITMAP")
    assert [(i.name, i.index_type, i.columns, i.comment) for i in t.indexes] == [
        ("idx_v", "INVERTED", ["v"], "by v"), ("idx_k", "INVERTED", ["k"], ""),
        ("idx_n", "NGRAM_BF", ["n"], "ngram"), ("idx_nb", "BITMAP", ["n"], ""),
    ]  # fmt: skip
    assert t.indexes[2].properties == {"gram_size": "3", "bf_size": "1024"}
    assert "  INDEX idx_k (`k`) USING INVERTED COMMENT ''," in show_create_table(t)
    # IF NOT EXISTS / IF EXISTS with nothing to do: accepted, nothing to log.
    assert alter_table(t, parse_statement("CREATE INDEX IF NOT EXISTS idx_k ON t (k)").actions) is None
    assert alter_table(t, parse_statement("DROP INDEX IF EXISTS nope ON t").actions) is None
    t = alter(t, "DROP INDEX idx_k ON t")
    t = alter(t, "ALTER TABLE t DROP INDEX idx_nb")
    assert [i.name for i in t.indexes] == ["idx_v", "idx_n"]
    # NGRAM_BF gets Doris' default sizes.
    t = alter(t, "CREATE INDEX idx_nd ON t (v) USING NGRAM_BF")
    assert t.indexes[-1].properties == {"gram_size": "2", "bf_size": "256"}


def test_doris_errors():
    t = alter(create(DUP), "CREATE INDEX idx_k ON t (k)")

    def add(sql: str) -> str:
        return error_of(alter, t, sql)

    assert add("CREATE INDEX idx_k ON t (n)") == "index `idx_k` already exist."
    assert add("CREATE INDEX idx_k2 ON t (k)") == "INVERTED index for columns (k) already exist."
    assert add("CREATE INDEX i ON t (x)") == "index column does not exist in table. invalid column: x"
    assert add("CREATE INDEX i ON t (k, v)") == "INVERTED index can only apply to a single column."
    assert add("CREATE INDEX i ON t (j)") == "JSON is not supported in INVERTED index. invalid index: i"
    assert (
        add("CREATE INDEX i ON t (k) USING NGRAM_BF")
        == "INT is not supported in ngram_bf index. invalid column: k"
    )
    assert add("DROP INDEX nope ON t") == "index nope does not exist"
    assert (
        add(f"CREATE INDEX {'x' * 65} ON t (n)")
        == "index name too long, the index name length at most is 64."
    )
    agg = "CREATE TABLE a (k INT, v INT SUM, INDEX i (v)) AGGREGATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
    assert error_of(create, agg) == (
        "index should only be used in columns of DUP_KEYS/UNIQUE_KEYS table or key columns of AGG_KEYS table. "
        "invalid index: i"
    )
    two = "CREATE TABLE a (k INT, v INT, INDEX i (v), INDEX i (k)) DISTRIBUTED BY HASH(k) BUCKETS 1"
    assert error_of(create, two) == "index name must be unique."
    same = "CREATE TABLE a (k INT, v INT, INDEX i (v), INDEX i2 (v)) DISTRIBUTED BY HASH(k) BUCKETS 1"
    assert error_of(create, same) == "same index columns have multiple same type index is not allowed."
    missing = "CREATE TABLE a (k INT, INDEX i (zz)) DISTRIBUTED BY HASH(k) BUCKETS 1"
    assert error_of(create, missing) == "Column does not exist in table. invalid column: zz"


def test_column_changes_carry_indexes():
    t = alter(create(DUP), "CREATE INDEX idx_n ON t (n)")
    t = alter(t, "ALTER TABLE t RENAME COLUMN n n2")
    assert [(i.name, i.columns) for i in t.indexes] == [("idx_v", ["v"]), ("idx_n", ["n2"])]
    t = alter(t, "ALTER TABLE t DROP COLUMN v")  # Doris drops a dropped column's indexes
    assert [(i.name, i.columns) for i in t.indexes] == [("idx_n", ["n2"])]


def test_type_arguments_doris_ignores():
    # SQLAlchemy and pandas spell a float column FLOAT(53); Doris reads FLOAT, DOUBLE(16) is DOUBLE.
    t = create("CREATE TABLE f (k BIGINT, a FLOAT(53), b DOUBLE(16), c BOOL) DUPLICATE KEY(k)")
    assert [c.type.to_desc() for c in t.columns] == ["BIGINT", "FLOAT", "DOUBLE", "BOOLEAN"]
