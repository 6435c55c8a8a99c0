"""`distinct(k)` is `DISTINCT (k)`: the parentheses group a select item, they do not make a call.

Doris' parser (Nereids `LogicalPlanBuilder.visitParenthesizedExpression`) returns the inner
expression of `(k)`, so the select item is the column `k` itself: its label is `k` (a named
expression keeps its name, `visitNamedExpression`), and ORDER BY k finds it. Galene labelled it
`(k)` and Spark then could not resolve `k` under the DISTINCT (issue 19, item 8). Run on Spark
and on Sail, through pymysql.
"""

from __future__ import annotations

import uuid

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=["spark", "sail"])
def node(request):
    """The shared Galene (Spark), then the same settings on Sail."""
    return request.getfixturevalue("galene" if request.param == "spark" else "galene_on_sail")


@pytest.fixture(scope="module")
def conn(node):
    db = "t_" + uuid.uuid4().hex[:10]
    node.query(f"CREATE DATABASE {db}")
    node.query(
        "CREATE TABLE t (k INT, v VARCHAR(10), a INT, b INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
        db,
    )
    body = b"3,x,1,1\n1,y,2,2\n2,x,1,1\n1,y,2,3\n3,z,1,1\n"
    assert node.stream_load(db, "t", body, {"column_separator": ","})["Status"] == "Success"
    with node.mysql(db) as c:
        yield c
    node.query(f"DROP DATABASE IF EXISTS {db}")


def run(conn, sql: str) -> tuple[list[str], list[tuple]]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return [d[0] for d in cur.description], list(cur.fetchall())


def test_distinct_call_form_orders_by_the_column(conn):
    assert run(conn, "SELECT distinct(k) FROM t ORDER BY k") == (["k"], [(1,), (2,), (3,)])
    assert run(conn, "SELECT DISTINCT(k) FROM t ORDER BY k DESC") == (["k"], [(3,), (2,), (1,)])


def test_distinct_call_form_with_more_columns(conn):
    assert run(conn, "SELECT DISTINCT(k), v FROM t ORDER BY k, v") == (
        ["k", "v"],
        [(1, "y"), (2, "x"), (3, "x"), (3, "z")],
    )
    assert run(conn, "SELECT distinct (a), b FROM t ORDER BY a, b") == (["a", "b"], [(1, 1), (2, 2), (2, 3)])
    # A qualified column in parentheses is that column too.
    assert run(conn, "SELECT DISTINCT(t.k) FROM t ORDER BY t.k") == (["k"], [(1,), (2,), (3,)])


def test_count_distinct_call_form(conn):
    assert run(conn, "SELECT COUNT(DISTINCT(k)) FROM t") == (["COUNT(DISTINCT(k))"], [(3,)])
    assert run(conn, "SELECT count(distinct(a)), count(distinct (v)) FROM t") == (
        ["count(distinct(a))", "count(distinct (v))"],
        [(2, 3)],
    )


def test_distinct_call_form_in_a_subquery_and_with_alias(conn):
    assert run(conn, "SELECT k FROM (SELECT distinct(k) FROM t) s ORDER BY k") == (["k"], [(1,), (2,), (3,)])
    assert run(conn, "SELECT distinct(k) AS kk FROM t ORDER BY kk") == (["kk"], [(1,), (2,), (3,)])
