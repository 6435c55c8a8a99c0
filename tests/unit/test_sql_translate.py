"""Doris query → Spark SQL: table references, function rewrites, result labels.

Spark itself is not started here; the translated text is checked by parsing it with
sqlglot's Spark dialect and by inspecting the rewritten calls.
"""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from galene.common.errors import GaleneError
from galene.sql.statements.parse import parse_statement
from galene.sql.translate import output_labels, to_spark_sql

TABLES = {(None, "t"), ("db", "t"), (None, "s"), ("other", "u"), ("information_schema", "tables")}


def resolve(db, name):
    if (db, name) not in TABLES:
        raise LookupError(f"Unknown table '{name}'")
    return f"galene_{db or 'cur'}_{name}"


def spark(sql: str) -> str:
    out = to_spark_sql(parse_statement(sql).expr, resolve)
    sqlglot.parse_one(out, read="spark")  # valid Spark syntax
    return out


def projections(spark_sql: str) -> list[exp.Expr]:
    tree = sqlglot.parse_one(spark_sql, read="spark")
    while not isinstance(tree, exp.Select):
        tree = tree.this
    return tree.expressions


def items(spark_sql: str) -> list[str]:
    """The generated select items, as text, without their label aliases."""
    head = spark_sql[len("SELECT ") : spark_sql.index(" FROM ")]
    return [part.rsplit(" AS `", 1)[0] for part in _split_top_level(head)]


def _split_top_level(text: str) -> list[str]:
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = None
        elif ch in "'`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def tables_of(spark_sql: str) -> set[str]:
    return {t.name for t in sqlglot.parse_one(spark_sql, read="spark").find_all(exp.Table)}


def test_table_references_become_views_everywhere():
    out = spark(
        "WITH c AS (SELECT * FROM t), d AS (SELECT * FROM c) "
        "SELECT d.k, x.k FROM d JOIN db.t AS x ON d.k = x.k "
        "WHERE EXISTS (SELECT 1 FROM other.u WHERE other.u.k = d.k) "
        "AND d.k IN (SELECT k FROM (SELECT k FROM s) q)"
    )
    assert tables_of(out) == {"c", "d", "galene_cur_t", "galene_db_t", "galene_other_u", "galene_cur_s"}
    # an unaliased table keeps its name as alias, so qualified columns still resolve
    tree = sqlglot.parse_one(out, read="spark")
    u = next(t for t in tree.find_all(exp.Table) if t.name == "galene_other_u")
    assert u.alias == "u"
    assert "other.u.k" not in out and "u.k" in out


def test_cte_name_outside_its_scope_is_a_table():
    out = spark("SELECT * FROM (WITH s AS (SELECT 1 AS k) SELECT k FROM s) a JOIN s ON a.k = s.k")
    assert tables_of(out) == {"s", "galene_cur_s"}


def test_unknown_table_error_propagates():
    with pytest.raises(LookupError, match="Unknown table 'nope'"):
        spark("SELECT * FROM t JOIN nope ON 1 = 1")


def test_reading_named_partitions_is_refused_not_widened():
    with pytest.raises(GaleneError, match="named partitions"):
        spark("SELECT * FROM t PARTITION (p1)")


def test_information_schema_goes_through_the_resolver():
    assert tables_of(spark("SELECT table_name FROM information_schema.tables")) == {
        "galene_information_schema_tables"
    }


def test_unaliased_items_are_labelled_with_their_original_text():
    sql = "SELECT COUNT(*), sum(v) , k   +  1, k, t.v, v AS total, 'abc', DATE_FORMAT(d, '%Y') FROM t GROUP BY k, v, d"
    out = spark(sql)
    names = [p.alias_or_name for p in projections(out)]
    assert names == ["COUNT(*)", "sum(v)", "k   +  1", "k", "v", "total", "abc", "DATE_FORMAT(d, '%Y')"]
    assert output_labels(parse_statement(sql).expr) == names
    assert output_labels(parse_statement("SELECT *, COUNT(*) FROM t").expr) is None
    # a union takes its labels from the first branch
    out = spark("SELECT COUNT(*) FROM t UNION ALL SELECT k FROM s")
    assert [p.alias_or_name for p in projections(out)] == ["COUNT(*)"]


def test_a_parenthesized_column_is_the_column():
    # `distinct(k)` is DISTINCT (k): Doris' parser drops the parentheses, so the item is the
    # column k (label `k`), and ORDER BY k resolves over the DISTINCT (issue 19, item 8).
    out = spark("SELECT distinct(k) FROM t ORDER BY k")
    assert out.startswith("SELECT DISTINCT k FROM ")
    assert isinstance(projections(out)[0], exp.Column)
    assert output_labels(parse_statement("SELECT DISTINCT(k), v FROM t").expr) == ["k", "v"]
    assert output_labels(parse_statement("SELECT distinct (a), b FROM t").expr) == ["a", "b"]
    assert output_labels(parse_statement("SELECT distinct((t.k)) AS x FROM t").expr) == ["x"]
    # Parentheses around anything else stay, and the item keeps its text as label.
    assert output_labels(parse_statement("SELECT DISTINCT (k+1) FROM t").expr) == ["(k+1)"]
    assert output_labels(parse_statement("SELECT COUNT(DISTINCT(k)) FROM t").expr) == ["COUNT(DISTINCT(k))"]


def test_function_rewrites_are_applied():
    # The translation table itself is tested in tests/unit/test_doris_functions.py.
    out = spark("SELECT DATE_ADD(d, INTERVAL 3 HOUR), IFNULL(a, 0), COUNT(DISTINCT a, b), CAST(a AS DATETIME) FROM t")
    assert items(out) == [
        "(CAST(d AS TIMESTAMP_NTZ) + INTERVAL '3' HOUR)",
        "COALESCE(a, 0)",
        "COUNT(DISTINCT a, b)",
        "CAST(a AS TIMESTAMP_NTZ)",
    ]


def test_limit_offset_and_explode_split():
    out = spark("SELECT k FROM t ORDER BY k LIMIT 5, 10")
    tree = sqlglot.parse_one(out, read="spark")
    assert tree.args["limit"].expression.name == "10" and tree.args["offset"].expression.name == "5"
    out = spark("SELECT e FROM t LATERAL VIEW EXPLODE_SPLIT(s, '.') tmp AS e")
    assert "EXPLODE(SPLIT(s, '\\\\.', -1))" in out  # literal separator, escaped for Spark's regex split


def test_nested_rewrites_are_all_applied():
    out = spark("SELECT DATE_FORMAT(DATE_ADD(FROM_UNIXTIME(ts), INTERVAL 1 HOUR), '%H') FROM t")
    assert items(out)[0] == (
        "DATE_FORMAT((CAST(FROM_UNIXTIME(ts) AS TIMESTAMP_NTZ) + INTERVAL '1' HOUR), 'HH')"
    )


def test_translation_does_not_modify_the_input_tree():
    stmt = parse_statement("SELECT COUNT(*) FROM db.t")
    before = stmt.expr.sql()
    spark(stmt.sql)
    to_spark_sql(stmt.expr, resolve)
    assert stmt.expr.sql() == before


def test_from_dual_reads_no_table():
    """MySQL's DUAL: MariaDB Connector/J's getSchemas() sends `SELECT … FROM DUAL WHERE 1=0`."""
    out = spark("SELECT '' TABLE_SCHEM, '' TABLE_catalog  FROM DUAL WHERE 1=0")
    assert " FROM " not in out and "WHERE 1 = 0" in out
    assert output_labels(parse_statement("SELECT 1 AS a FROM dual").expr) == ["a"]
    assert " FROM " not in spark("select (select 1 from dual) as x from dual")
    with pytest.raises(LookupError, match="Unknown table 'dual'"):
        spark("SELECT * FROM `dual`")  # quoted: a table of that name, as in MySQL


def test_cast_as_unsigned_is_doris_largeint():
    """Doris casts AS UNSIGNED [INTEGER] to LARGEINT (Spark DECIMAL(38, 0)), AS SIGNED to BIGINT;
    Connector/J's getColumns() sends `CONVERT(…, UNSIGNED INTEGER)`."""
    out = spark("SELECT CAST(k AS UNSIGNED), CONVERT(k, UNSIGNED INTEGER), CAST(k AS SIGNED INTEGER) FROM t")
    # Integer targets take Doris' integer rule (galene/common/intcast.py): a typeof-dispatched
    # expression ending in the target type.
    unsigned, convert, signed = items(out)
    assert unsigned == convert and unsigned.endswith("AS DECIMAL(38, 0)) END")
    assert signed.endswith("AS BIGINT) END") and "DECIMAL(38, 0)" not in signed
    assert spark("SELECT CAST('20.5' AS UNSIGNED)").startswith("SELECT CAST(20 AS DECIMAL(38, 0))")
