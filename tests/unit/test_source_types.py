"""A query's output columns that read a table column unchanged keep that column's Doris type
(a view's DESC / information_schema.COLUMNS); anything else keeps the engine's type."""

from __future__ import annotations

import sqlglot

from galene.catalog.model import Column
from galene.common.types import ColumnType, parse_type
from galene.sql.dialect import Galene
from galene.sql.source_types import refine, source_column_types

TABLES = {
    "t": [Column(name="k", type=parse_type("INT")), Column(name="s", type=parse_type("VARCHAR(10)")),
          Column(name="big", type=parse_type("LARGEINT")), Column(name="ts", type=parse_type("DATETIME(3)")),
          Column(name="__DORIS_DELETE_SIGN__", type=parse_type("TINYINT"), hidden=True)],
    "u": [Column(name="k", type=parse_type("INT")), Column(name="c", type=parse_type("CHAR(4)"))],
}  # fmt: skip


def lookup(db, name):
    return TABLES.get(name)


def types(sql: str) -> list[str | None]:
    out = source_column_types(sqlglot.parse_one(sql, read=Galene), lookup)
    return [t.to_sql() if t is not None else None for t in out]


def test_plain_references_keep_their_types():
    assert types("SELECT k, s AS name, big, ts FROM t") == ["int", "varchar(10)", "largeint", "datetime(3)"]
    assert types("SELECT * FROM t") == ["int", "varchar(10)", "largeint", "datetime(3)"]
    assert types("SELECT t.s, u.c, x.k FROM t JOIN u x ON t.k = x.k JOIN u ON u.k = t.k") == [
        "varchar(10)", "char(4)", "int"]  # fmt: skip
    assert types("SELECT u.*, s FROM t JOIN u ON t.k = u.k") == ["int", "char(4)", "varchar(10)"]


def test_expressions_and_other_shapes_are_left_to_the_engine():
    assert types("SELECT upper(s), k + 1, COUNT(*) FROM t GROUP BY 1, 2") == [None, None, None]
    assert types("SELECT k FROM t JOIN u ON t.k = u.k") == [None]  # ambiguous
    assert types("SELECT s FROM (SELECT s FROM t) q") == []
    assert types("WITH q AS (SELECT s FROM t) SELECT s FROM q") == []
    assert types("SELECT s FROM t UNION ALL SELECT c FROM u") == []
    assert types("SELECT s FROM missing") == []


def test_refine_uses_a_source_type_of_the_same_family_only():
    engine = [ColumnType(name="STRING"), ColumnType(name="STRING"), ColumnType(name="DECIMAL", precision=38)]
    sources = [parse_type("VARCHAR(10)"), parse_type("INT"), parse_type("LARGEINT")]
    assert [t.to_sql() for t in refine(engine, sources)] == ["varchar(10)", "text", "largeint"]
    assert refine(engine, []) == engine
