"""galene.sql.limits: the bracket-depth scan that runs before any SQL parser."""

from __future__ import annotations

import sys

import pytest

from galene.common.errors import GaleneError
from galene.sql.limits import check_sql_nesting_depth, recursion_limit_for, sql_nesting_depth
from galene.sql.statements.parse import parse_statement


@pytest.mark.parametrize(
    ("sql", "depth"),
    [
        ("", 0),
        ("SELECT 1", 0),
        ("SELECT (1)", 1),
        ("SELECT ((1)), (2)", 2),
        ("SELECT f(g(h(1)))", 3),
        ("SELECT [1, [2, [3]]]", 3),
        ("SELECT {'a': {'b': 1}}", 2),
        ("SELECT * FROM (SELECT * FROM (SELECT 1) a) b WHERE x IN (1, 2)", 2),
        # Brackets inside literals, quoted identifiers and comments do not nest anything.
        ("SELECT '((((('", 0),
        ('SELECT "(((((" , (1)', 1),
        ("SELECT `a((b` FROM t", 0),
        ("SELECT 'it''s ((' , ((1))", 2),
        ("SELECT 'a\\'((' , (1)", 1),
        ("SELECT 1 -- ((((\n + (2)", 1),
        ("SELECT 1 # ((((\n + (2)", 1),
        ("SELECT /* (((( */ (1)", 1),
        ("SELECT 1 /* ((( unterminated", 0),
        ("SELECT '((( unterminated", 0),
        # Unbalanced closing brackets never take the depth below zero.
        ("SELECT 1)))) + ((2))", 2),
    ],
)
def test_depth(sql, depth):
    assert sql_nesting_depth(sql) == depth


def test_hostile_depth_is_measured_without_recursion():
    n = 100_000
    sql = "SELECT " + "(" * n + "1" + ")" * n
    limit = sys.getrecursionlimit()
    assert sql_nesting_depth(sql) == n
    assert sys.getrecursionlimit() == limit
    # With a bound the scan stops just past it.
    assert sql_nesting_depth(sql, stop_above=200) == 201


def test_long_flat_statements_are_shallow():
    in_list = "SELECT * FROM t WHERE k IN (" + ",".join(f"'v{i}'" for i in range(100_000)) + ")"
    assert sql_nesting_depth(in_list) == 1
    literal = "SELECT '" + "x(" * 1_000_000 + "'"
    assert sql_nesting_depth(literal) == 0


def test_check_raises_doris_style_error_past_the_bound():
    check_sql_nesting_depth("SELECT " + "(" * 200 + "1" + ")" * 200, 200)
    with pytest.raises(GaleneError) as e:
        check_sql_nesting_depth("SELECT " + "(" * 201 + "1" + ")" * 201, 200)
    assert e.value.code == 1105
    assert e.value.mysql_text().startswith("errCode = 2, detailMessage = The statement is nested too deeply")
    assert "max_sql_nesting_depth = 200" in e.value.message


DEPTH = 200


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT " + "(" * DEPTH + "1" + ")" * DEPTH,
        "SELECT * FROM t WHERE " + "NOT (" * DEPTH + "a = 1" + ")" * DEPTH,
        # CASE is the construct sqlglot spends the most frames on per level.
        "SELECT " + "(CASE WHEN a = 1 THEN " * DEPTH + "1" + " END)" * DEPTH + " FROM t",
    ],
)
def test_statements_within_the_bound_parse_under_its_recursion_limit(sql):
    assert sql_nesting_depth(sql) == DEPTH
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(recursion_limit_for(DEPTH))
    try:
        parse_statement(sql)
    finally:
        sys.setrecursionlimit(previous)
