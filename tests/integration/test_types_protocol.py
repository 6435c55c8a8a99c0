"""Doris' types as clients see them (issue 21), on Apache Spark and on Sail, through pymysql
(text protocol) and mysql-connector (text, and prepared statements: the binary protocol).

* Values in Doris' text forms: ARRAY `[1, null]` and `["a", "b"]` (strings, dates and datetimes
  quoted, nothing escaped), MAP `{"a":1, "b":null}` and `{1:"x"}`, STRUCT `{"f1":1, "f2":"x"}`,
  nested in each other, DATETIME(3) and DECIMAL at their scale inside; IPV4/IPV6 and JSON /
  VARIANT text; LARGEINT's whole range (Sail; Apache Spark's decimals end at 38 digits);
  DECIMAL(76, 10) (Sail, enable_decimal256); BITMAP / HLL / QUANTILE_STATE columns as NULL,
  as Doris sends them unless return_object_data_as_binary; TIME values (expressions) in the
  text protocol and as the binary protocol's TIME struct.
* Column definitions as Doris' MysqlSerializer writes them: nested, IP, LARGEINT and the
  aggregate states MYSQL_TYPE_STRING (254), JSON and VARIANT MYSQL_TYPE_JSON (245), TIME(p)
  MYSQL_TYPE_TIME (11), DECIMAL NEWDECIMAL with length p+2 and its scale — for columns, and
  for the CASTs and Doris functions of those types.
* DESC, SHOW FULL COLUMNS, SHOW CREATE TABLE and information_schema.COLUMNS spell the types as
  Doris does; CTAS keeps a nested, IP, JSON or VARIANT column's type.

Expected texts are Doris' (regression-test/data/datatype_p0/complex_types/*.out,
be/src/vec/data_types/serde/data_type_array_serde.cpp, PrimitiveType.toMysqlType).
"""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import mysql.connector
import pytest

STRING, JSON, NEWDECIMAL, LONG, TIME = 254, 245, 246, 3, 11

COLUMNS = [
    ("k", "int", "INT"),
    ("a", "array<int>", "ARRAY<INT>"),
    ("sa", "array<varchar(10)>", "ARRAY<VARCHAR(10)>"),
    ("m", "map<varchar(10),int>", "MAP<VARCHAR(10),INT>"),
    ("mi", "map<int,varchar(5)>", "MAP<INT,VARCHAR(5)>"),
    (
        "s",
        "struct<f1:int,f2:varchar(5),f3:array<decimal(5,2)>>",
        "STRUCT<f1:INT,f2:VARCHAR(5),f3:ARRAY<DECIMAL(5, 2)>>",
    ),
    ("n", "array<array<varchar(3)>>", "ARRAY<ARRAY<VARCHAR(3)>>"),
    ("dt", "array<datetime(3)>", "ARRAY<DATETIME(3)>"),
    ("d", "array<date>", "ARRAY<DATE>"),
    ("ip", "ipv4", "IPV4"),
    ("ip6", "ipv6", "IPV6"),
    ("j", "json", "JSON"),
    ("v", "variant", "VARIANT"),
    ("li", "largeint", "LARGEINT"),
    ("dec", "decimal(20,4)", "DECIMAL(20, 4)"),
]
ROW_1 = (
    "1, array(1, null), array('a', 'with\"q'), map_from_arrays(array('a', 'b'), array(1, null)),"
    " map_from_arrays(array(1), array('x')),"
    " named_struct('f1', 1, 'f2', 'x', 'f3', array(cast(1.5 as decimal(5,2)), null)),"
    " array(array('x'), array(), null), array(cast('2024-01-01 10:00:00.123' as datetime(3))),"
    " array(cast('2024-02-29' as date)), '1.2.3.4', '2001:db8::1', '{\"a\":1}', '{\"b\":[1,2]}',"
    " cast('-99999999999999999999999999999999999999' as decimal(38,0)), 1.5"
)
EXPECTED_1 = (
    1,
    "[1, null]",
    '["a", "with"q"]',
    '{"a":1, "b":null}',
    '{1:"x"}',
    '{"f1":1, "f2":"x", "f3":[1.50, null]}',
    '[["x"], [], null]',
    '["2024-01-01 10:00:00.123"]',
    '["2024-02-29"]',
    "1.2.3.4",
    "2001:db8::1",
    '{"a":1}',
    '{"b":[1,2]}',
    "-99999999999999999999999999999999999999",
    Decimal("1.5000"),
)
EXPECTED_2 = (2,) + (None,) * (len(COLUMNS) - 1)


@pytest.fixture(scope="module", params=["spark", "sail"])
def node(request):
    """The shared Galene (Apache Spark unless the run says otherwise) and its Sail twin."""
    return request.getfixturevalue("galene" if request.param == "spark" else "galene_on_sail")


@pytest.fixture(scope="module")
def tdb(node):
    """A database with table `t`: a row of every type, and a row of NULLs."""
    name = "ty_" + uuid.uuid4().hex[:10]
    node.query(f"CREATE DATABASE {name}")
    columns = ", ".join(f"{c} {t}" for c, t, _ in COLUMNS)
    node.query(
        f"CREATE TABLE t ({columns}) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
        " PROPERTIES('replication_num' = '1')",
        name,
    )
    node.query(f"INSERT INTO t SELECT {ROW_1}", name)
    node.query("INSERT INTO t (k) VALUES (2)", name)
    yield name
    node.query(f"DROP DATABASE IF EXISTS {name}")


def _pymysql(node, db, sql):
    with node.mysql(db) as conn, conn.cursor() as cur:
        cur.execute(sql)
        return cur.description, list(cur.fetchall())


def _connector(node, db, sql, prepared):
    conn = mysql.connector.connect(host=node.host, port=node.query_port, user="root", database=db)
    try:
        cur = conn.cursor(prepared=prepared)
        cur.execute(sql)
        return cur.description, [tuple(r) for r in cur.fetchall()]
    finally:
        conn.close()


def test_text_protocol_values_and_column_definitions(node, tdb):
    description, rows = _pymysql(node, tdb, "SELECT * FROM t ORDER BY k")
    assert rows == [EXPECTED_1, EXPECTED_2]
    types = {d[0]: (d[1], d[3], d[5]) for d in description}
    for name in ("a", "sa", "m", "mi", "s", "n", "dt", "d", "ip", "ip6", "li"):
        assert types[name] == (STRING, 255, 0), name
    assert types["j"] == types["v"] == (JSON, 255, 0)
    assert types["dec"] == (NEWDECIMAL, 22, 4)
    assert types["k"][0] == LONG


@pytest.mark.parametrize("prepared", [True, False], ids=["binary", "text"])
def test_mysql_connector_reads_the_same_values(node, tdb, prepared):
    description, rows = _connector(node, tdb, "SELECT * FROM t ORDER BY k", prepared)
    assert rows == [EXPECTED_1, EXPECTED_2]
    assert [d[1] for d in description][1:5] == [STRING] * 4
    assert [d[1] for d in description][11:13] == [JSON, JSON]


def test_expressions_print_as_doris_does(node, tdb):
    _, rows = _pymysql(
        node,
        tdb,
        "SELECT array(1, null, 3), array('a', 'b'), array(array(1), array()), a, m FROM t WHERE k = 1",
    )
    assert rows == [("[1, null, 3]", '["a", "b"]', "[[1], []]", "[1, null]", '{"a":1, "b":null}')]


@pytest.mark.parametrize("prepared", [True, False], ids=["binary", "text"])
def test_expressions_of_doris_types_are_declared_with_them(node, tdb, prepared):
    """A TIME is MYSQL_TYPE_TIME (clients read a timedelta), a JSON MYSQL_TYPE_JSON, a BITMAP
    NULL — typed by the Doris function or CAST, which the engine types by a string or a list."""
    sql = "SELECT CAST('10:00:01.5' AS TIME(3)), sec_to_time(3661), json_object('a', 1), to_bitmap(1)"
    description, rows = _connector(node, tdb, sql, prepared)
    assert rows == [
        (dt.timedelta(seconds=36001, microseconds=500000), dt.timedelta(seconds=3661), '{"a":1}', None)
    ]
    assert [d[1] for d in description] == [TIME, TIME, JSON, STRING]


def test_aggregate_states_are_null_and_largeint_whole_range(node, tdb):
    node.query(
        "CREATE TABLE agg (k int, b bitmap bitmap_union, h hll hll_union, q quantile_state quantile_union)"
        " AGGREGATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES('replication_num' = '1')",
        tdb,
    )
    node.query("INSERT INTO agg SELECT 1, array(cast(7 as bigint)), NULL, array(cast(1.5 as double))", tdb)
    description, rows = _pymysql(node, tdb, "SELECT * FROM agg")
    assert rows == [(1, None, None, None)]
    assert [d[1] for d in description] == [LONG, STRING, STRING, STRING]
    _, rows = _connector(node, tdb, "SELECT * FROM agg", prepared=True)
    assert rows == [(1, None, None, None)]
    if node.engine != "sail":
        return  # (Apache Spark's decimals, which hold LARGEINT, end at 38 digits)
    node.query("CREATE TABLE big (k int, li largeint) DISTRIBUTED BY HASH(k) BUCKETS 1"
               " PROPERTIES('replication_num' = '1')", tdb)  # fmt: skip
    node.query(f"INSERT INTO big VALUES (1, {2**127 - 1}), (2, {-(2**127)})", tdb)
    for rows in (
        _pymysql(node, tdb, "SELECT li FROM big ORDER BY k")[1],
        _connector(node, tdb, "SELECT li FROM big ORDER BY k", prepared=True)[1],
    ):
        assert rows == [(str(2**127 - 1),), (str(-(2**127)),)]


def test_decimal256_on_sail(node, tdb):
    if node.engine != "sail":
        pytest.skip("DECIMAL of more than 38 digits is Sail's (Apache Spark has no decimal256)")
    wide = "-123456789012345678901234567890123456789012345678901234567890.0000000001"
    with node.mysql(tdb) as conn, conn.cursor() as cur:
        cur.execute("SET enable_decimal256 = true")
        cur.execute(
            "CREATE TABLE w (k int, w decimal(76,10)) DISTRIBUTED BY HASH(k) BUCKETS 1"
            " PROPERTIES('replication_num' = '1')"
        )
        cur.execute(f"INSERT INTO w VALUES (1, {wide}), (2, 0)")
        cur.execute("SELECT w FROM w ORDER BY k")
        assert cur.fetchall() == ((Decimal(wide),), (Decimal("0E-10"),))
        assert (
            cur.description[0][1] == NEWDECIMAL
            and cur.description[0][3] == 78
            and cur.description[0][5] == 10
        )
    _, rows = _connector(node, tdb, "SELECT w FROM w ORDER BY k", prepared=True)
    assert rows == [(Decimal(wide),), (Decimal("0E-10"),)]


def test_desc_show_and_information_schema_spell_doris_types(node, tdb):
    _, rows = _pymysql(node, tdb, "DESC t")
    assert [(r[0], r[1]) for r in rows] == [(c, desc) for c, _, desc in COLUMNS]
    _, rows = _pymysql(node, tdb, "SHOW FULL COLUMNS FROM t")
    assert [(r[0], r[1]) for r in rows] == [(c, sql) for c, sql, _ in COLUMNS]
    _, rows = _pymysql(node, tdb, "SHOW CREATE TABLE t")
    create = rows[0][1]
    for c, sql, _ in COLUMNS[1:]:
        assert f"`{c}` {sql} NULL" in create
    _, rows = _pymysql(
        node,
        tdb,
        "SELECT column_name, data_type, column_type, numeric_precision, numeric_scale"
        f" FROM information_schema.columns WHERE table_schema = '{tdb}' AND table_name = 't'"
        " ORDER BY ordinal_position",
    )
    by_name = {r[0]: r[1:] for r in rows}
    assert by_name["a"] == ("array", "array<int>", None, None)
    assert by_name["m"] == ("map", "map<varchar(10),int>", None, None)
    assert by_name["s"][:2] == ("struct", "struct<f1:int,f2:varchar(5),f3:array<decimal(5,2)>>")
    assert by_name["ip"][:2] == ("ipv4", "ipv4")
    assert by_name["j"][:2] == ("json", "json")
    assert by_name["v"][:2] == ("variant", "variant")
    assert by_name["dec"] == ("decimal", "decimal(20,4)", 20, 4)


def test_ctas_keeps_nested_and_text_stored_types(node, tdb):
    node.query("CREATE TABLE c AS SELECT k, a, m, s, n, ip, j, v FROM t", tdb)
    _, rows = _pymysql(node, tdb, "DESC c")
    wanted = {c: desc for c, _, desc in COLUMNS}
    assert [(r[0], r[1]) for r in rows] == [(c, wanted[c]) for c in ("k", "a", "m", "s", "n", "ip", "j", "v")]
    _, rows = _pymysql(node, tdb, "SELECT * FROM c ORDER BY k")
    assert rows[0] == tuple(EXPECTED_1[i] for i in (0, 1, 3, 5, 6, 9, 11, 12))
