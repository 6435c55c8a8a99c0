"""Doris' functions over the nested, JSON, VARIANT, IP, aggregate-state and TIME types, run
through the MySQL endpoint of a real Galene on Apache Spark and on Sail, with Doris' values.

The translation is galene/sql/functions_{nested,json,ip,state,time}.py (their docstrings name
the Doris rules); tests/unit/test_functions_types.py checks the generated Spark SQL. Expected
values come from Doris' documentation (https://doris.apache.org/docs/sql-manual/sql-functions/
scalar-functions/..., apache/doris-website) and regression suites (apache/doris
regression-test/suites/..., data/...out); the comment above each group names the source.
Nested results print in Doris' text form (`[1, 2]`, `{"a":1}`; galene/fe/mysql/nested_text.py).

Cases are batched into a few wide SELECTs per group, so a group costs one query per engine.
"""

from __future__ import annotations

import datetime as dt
import uuid

import pymysql
import pytest
from pymysql.constants import FIELD_TYPE
from pymysql.converters import conversions

pytestmark = pytest.mark.slow


@pytest.fixture(params=["spark", "sail"])
def node(request):
    """The shared Galene (Apache Spark unless the run says otherwise) and its Sail twin."""
    return request.getfixturevalue("galene" if request.param == "spark" else "galene_on_sail")


# (expression, Doris' value as the MySQL text protocol carries it, through pymysql)
ARRAYS = [
    # Doris docs array-functions/*: 1-based subscripts, NULL out of range
    ("[1, 2, 3][1]", 1),
    ("[1, 2, 3][0]", None),
    ("[1, 2, 3][5]", None),
    ("[1, 2, 3][-1]", 3),
    ("element_at([1, 2, 3], 2)", 2),
    ("element_at([1, 2, 3], 0)", None),
    ("array_contains([1, 2, 3], 2)", 1),
    ("array_distinct([1, 1, 2, NULL, NULL])", "[1, 2, null]"),
    ("array_sort([3, NULL, 1, 2])", "[null, 1, 2, 3]"),
    ("array_reverse_sort([3, NULL, 1, 2])", "[3, 2, 1, null]"),
    ("array_join([1, NULL, 2], '_')", "1_2"),
    ("array_join([1, NULL, 2], '_', 'x')", "1_x_2"),
    ("array_range(5)", "[0, 1, 2, 3, 4]"),
    ("array_range(0, 10, 3)", "[0, 3, 6, 9]"),
    ("array_size([1, 2, 3])", 3),
    ("size([1, 2])", 2),
    ("cardinality(['a'])", 1),
    ("array_union([1, 2], [2, 3])", "[1, 2, 3]"),
    ("array_intersect([1, 2, 3], [2, 3, 4])", "[2, 3]"),
    ("array_except([1, 2, 3], [2])", "[1, 3]"),
    ("array_map(x -> x + 1, [1, 2, 3])", "[2, 3, 4]"),
    ("array_map((x, y) -> x + y, [1, 2], [10, 20])", "[11, 22]"),
    ("array_filter(x -> x > 1, [1, 2, 3])", "[2, 3]"),
    ("array_exists(x -> x > 1, [1, 2, 3])", "[0, 1, 1]"),
    ("array_count(x -> x > 1, [1, 2, 3])", 2),
    ("array_first(x -> x > 1, [1, 2, 3])", 2),
    ("array_last(x -> x > 1, [1, 2, 3])", 3),
    ("array_first_index(x -> x > 1, [1, 2, 3])", 2),
    ("array_max([1, NULL, 3])", 3),
    ("array_min([4, 2])", 2),
    ("array_sum([1, NULL, 3])", 4),
    ("array_avg([1, 2, NULL])", 1.5),
    ("array_position([1, 2, 3], 3)", 3),
    ("array_position([1, 2, 3], 9)", 0),
    ("array_slice([1, 2, 3, 4], 2, 2)", "[2, 3]"),
    ("array_slice([1, 2, 3, 4], -2)", "[3, 4]"),
    ("array_remove([1, 2, 1], 1)", "[2]"),
    # array_compact removes consecutive duplicates (doc: [1, 2, 2, 3] -> [1, 2, 3])
    ("array_compact([1, 1, 2, 2, 1])", "[1, 2, 1]"),
    ("array_with_constant(2, 'a')", '["a", "a"]'),
    ("array_popback([1, 2, 3])", "[1, 2]"),
    ("array_popfront([1, 2, 3])", "[2, 3]"),
    ("arrays_overlap([1, 2], [2, 5])", 1),
    ("array_concat([1], [2, 3])", "[1, 2, 3]"),
    ("array_pushfront([1], 0)", "[0, 1]"),
    ("array_enumerate(['a', 'b'])", "[1, 2]"),
    ("countequal([1, 2, 1], 1)", 2),
    ("array_contains(NULL, 1)", None),
    ("array_size(NULL)", None),
]

MAPS_AND_STRUCTS = [
    # Doris docs map-functions/*, struct-functions/*
    ("map('a', 1, 'b', 2)['a']", 1),
    ("map('a', 1)['z']", None),
    ("map_keys(map('a', 1, 'b', 2))", '["a", "b"]'),
    ("map_values(map('a', 1, 'b', 2))", "[1, 2]"),
    ("map_size(map('a', 1, 'b', 2))", 2),
    ("map_contains_key(map('a', 1), 'a')", 1),
    ("map_contains_value(map('a', 1), 2)", 0),
    ("map(1, 'x')", '{1:"x"}'),
    ("struct_element(named_struct('f1', 1, 'f2', 'x'), 'f2')", "x"),
    ("struct_element(struct(1, 'a'), 2)", "a"),
    ("named_struct('f1', 1, 'f2', 'x')", '{"f1":1, "f2":"x"}'),
    ("CAST('[1, 2]' AS ARRAY<INT>)", "[1, 2]"),
]

JSON = [
    # Doris docs json-functions/*
    ("json_length('[1, 2, 3]')", 3),
    ('json_length(\'{"a": 1, "b": 2}\')', 2),
    ("json_length('{\"a\": [1, 2]}', '$.a')", 2),
    ('json_keys(\'{"a": 1, "b": 2}\')', '["a","b"]'),
    ("json_keys('[1]')", None),
    ("json_type('{\"a\": 1}', '$')", "object"),
    ("json_type('{\"a\": \"x\"}', '$.a')", "string"),
    ("json_type('{\"a\": 1}', '$.a')", "int"),
    ("json_type('{\"a\": [1]}', '$.a')", "array"),
    ("json_exists_path('{\"a\": 1}', '$.a')", 1),
    ("jsonb_exists_path('{\"a\": 1}', '$.b')", 0),
    ("json_extract_isnull('{\"a\": null}', '$.a')", 1),
    ("json_quote('a\"b')", '"a\\"b"'),
    ("json_unquote('\"doris\"')", "doris"),
    ("json_contains('{\"a\": 1, \"b\": 2}', '1', '$.a')", 1),
    ("json_contains('[1, 2, 3]', '5')", 0),
    ("jsonb_extract('{\"a\": [1, 2]}', '$.a')", "[1,2]"),
    ("jsonb_extract_int('{\"a\": 5}', '$.a')", 5),
    ("json_parse_error_to_null('{bad')", None),
    # regression-test/suites/variant_p0/element_function.groovy
    ("CAST('{\"wsn\":\"SRFSPXFDVY\"}' AS VARIANT)['wsn']", "SRFSPXFDVY"),
    ("CAST('{\"n\":49.98}' AS VARIANT)['n']", "49.98"),
    ("CAST('{\"a\":[1,2,3]}' AS VARIANT)['a']", "[1,2,3]"),
    ('CAST(\'{"o":{"name":"john"}}\' AS VARIANT)[\'o\']', '{"name":"john"}'),
    ('CAST(\'{"k":"a\\\\"b"}\' AS VARIANT)[\'k\']', 'a"b'),
]

IP = [
    # Doris docs ip-functions/*
    ("ipv4_num_to_string(3232235521)", "192.168.0.1"),
    ("inet_ntoa(-1)", None),
    ("ipv4_num_to_string(4294967296)", None),
    ("ipv4_string_to_num('192.168.0.1')", 3232235521),
    ("ipv4_string_to_num_or_default('x')", 0),
    ("ipv4_string_to_num_or_null('256.1.1.1')", None),
    ("inet_aton('1.2.3.4')", 16909060),
    ("is_ipv4_string('255.255.255.255')", 1),
    ("is_ipv4_string('1.2.3')", 0),
    ("is_ipv6_string('2001:db8::1')", 1),
    ("is_ipv6_string('2001:db8:::1')", 0),
    ("to_ipv4_or_null('x')", None),
    ("to_ipv4_or_default('x')", "0.0.0.0"),
    ("CAST('10.0.0.1' AS IPV4)", "10.0.0.1"),
    ("is_ip_address_in_range('127.0.0.1', '127.0.0.0/8')", 1),
    # IPv6 text as the load stores it (RFC 5952; ClickHouse's formatIPv6 for IPv4-mapped)
    ("to_ipv6('2001:0DB8:0:0:0:0:0:1')", "2001:db8::1"),
    ("to_ipv6('1:0:0:2:0:0:0:3')", "1:0:0:2::3"),
    ("to_ipv6('0:0:0:0:0:ffff:102:304')", "::ffff:1.2.3.4"),
    ("CAST('::' AS IPV6)", "::"),
    ("hex(ipv6_string_to_num('2001:db8::1'))", "20010DB8000000000000000000000001"),
    ("hex(ipv6_string_to_num('1.2.3.4'))", "00000000000000000000FFFF01020304"),
    ("ipv6_num_to_string(ipv6_string_to_num('fe80::1:0:0:0'))", "fe80::1:0:0:0"),
    ("ipv6_string_to_num_or_null('x')", None),
    ("struct_element(ipv4_cidr_to_range(to_ipv4('192.168.5.2'), 16), 'min')", "192.168.0.0"),
    ("struct_element(ipv4_cidr_to_range(to_ipv4('192.168.5.2'), 16), 'max')", "192.168.255.255"),
]

STATES = [
    # Doris docs bitmap-functions/*
    ("bitmap_to_string(to_bitmap(5))", "5"),
    ("bitmap_to_string(bitmap_from_string('3,1,2,1'))", "1,2,3"),
    ("bitmap_from_string('a,1') IS NULL", 1),
    ("bitmap_count(bitmap_from_string('1,2,3'))", 3),
    ("bitmap_to_string(bitmap_empty())", ""),
    ("bitmap_contains(bitmap_from_string('1,2'), 2)", 1),
    ("bitmap_has_any(to_bitmap(1), to_bitmap(2))", 0),
    ("bitmap_has_all(bitmap_from_string('1,2,3'), bitmap_from_string('1,2'))", 1),
    ("bitmap_min(bitmap_from_string('5,2'))", 2),
    ("bitmap_to_string(bitmap_and(bitmap_from_string('1,2,3'), bitmap_from_string('2,3,4')))", "2,3"),
    ("bitmap_to_string(bitmap_or(bitmap_from_string('3,1'), bitmap_from_string('2')))", "1,2,3"),
    ("bitmap_to_string(bitmap_xor(bitmap_from_string('1,2,3'), bitmap_from_string('3,4')))", "1,2,4"),
    ("bitmap_to_string(bitmap_not(bitmap_from_string('1,2,3'), bitmap_from_string('2')))", "1,3"),
    ("bitmap_and_count(bitmap_from_string('1,2,3'), bitmap_from_string('2,3'))", 2),
    ("bitmap_to_string(bitmap_subset_in_range(bitmap_from_string('1,2,3,4,5'), 2, 4))", "2,3"),
    ("hll_cardinality(hll_hash(1))", 1),
    ("hll_cardinality(hll_empty())", 0),
]

TIME = [
    # Doris docs sql-data-types/date-time/TIME.md, date-time-functions/timediff, sec-to-time
    ("CAST('10:11:12' AS TIME)", "10:11:12"),
    ("CAST('1:2:3' AS TIME)", "01:02:03"),
    ("CAST('2020-01-01 10:11:12' AS TIME)", "10:11:12"),
    ("CAST('10:11:12.123456' AS TIME(3))", "10:11:12.123"),
    ("timediff('2019-07-11 16:59:30', '2019-07-11 16:59:21')", "00:00:09"),
    ("timediff('2019-01-01 00:00:00', '2019-01-02 01:00:00')", "-25:00:00"),
    ("timediff('2000-01-01 00:00:00', '2020-01-01 00:00:00')", "-838:59:59"),
    ("timediff(NULL, '2019-01-01 00:00:00')", None),
    ("sec_to_time(3661)", "01:01:01"),
    ("time_to_sec('01:01:01')", 3661),
    # Doris docs sql-functions/cast ("cast as datetime round"): rounded to the scale
    ("CAST('2020-01-01 10:11:12.123456' AS DATETIME(3))", dt.datetime(2020, 1, 1, 10, 11, 12, 123000)),
    ("CAST('2020-01-01 10:11:12.5' AS DATETIME(0))", dt.datetime(2020, 1, 1, 10, 11, 13)),
]


# TIME results are MYSQL_TYPE_TIME, as Doris declares them; pymysql would turn their text into
# a timedelta: the cases compare Doris' text.
_TIME_AS_TEXT = {k: v for k, v in conversions.items() if k != FIELD_TYPE.TIME}


def _check(node, cases, batch: int = 30) -> None:
    problems = []
    with node.mysql(conv=_TIME_AS_TEXT) as conn, conn.cursor() as cur:
        for start in range(0, len(cases), batch):
            chunk = cases[start : start + batch]
            cur.execute("SELECT " + ", ".join(expr for expr, _ in chunk))
            row = cur.fetchone()
            for (expr, want), got in zip(chunk, row, strict=True):
                if isinstance(got, bytes):
                    got = got.decode()
                if got != want:
                    problems.append(f"{expr}: got {got!r}, Doris returns {want!r}")
    assert not problems, f"{node.engine}: " + "\n".join(problems)


@pytest.mark.parametrize("group", ["ARRAYS", "MAPS_AND_STRUCTS", "JSON", "IP", "STATES", "TIME"])
def test_functions_of_the_new_types_return_what_doris_returns(node, group):
    _check(node, globals()[group])


def test_lateral_view_explode_forms(node):
    # Doris docs table-functions/explode*, posexplode (0-based positions), explode_numbers
    with node.mysql() as conn, conn.cursor() as cur:
        cur.execute("SELECT e FROM (SELECT [1, 2, 3] AS a) t LATERAL VIEW explode(a) tmp AS e ORDER BY e")
        assert [r[0] for r in cur.fetchall()] == [1, 2, 3]
        cur.execute(
            "SELECT p, e FROM (SELECT ['x', 'y'] AS a) t LATERAL VIEW posexplode(a) tmp AS p, e ORDER BY p"
        )
        assert cur.fetchall() == ((0, "x"), (1, "y"))
        cur.execute("SELECT e FROM (SELECT 1 AS k) t LATERAL VIEW explode_numbers(3) tmp AS e ORDER BY e")
        assert [r[0] for r in cur.fetchall()] == [0, 1, 2]
        cur.execute(
            "SELECT e FROM (SELECT '[1, 2]' AS j) t LATERAL VIEW explode_json_array_int(j) tmp AS e ORDER BY e"
        )
        assert [r[0] for r in cur.fetchall()] == [1, 2]
        cur.execute("SELECT k, v FROM (SELECT map('a', 1) AS m) t LATERAL VIEW explode_map(m) tmp AS k, v")
        assert cur.fetchall() == (("a", 1),)
        cur.execute(
            "SELECT k, e FROM (SELECT 1 AS k, CAST(NULL AS ARRAY<INT>) AS a) t LATERAL VIEW explode_outer(a) tmp AS e"
        )
        assert cur.fetchall() == ((1, None),)


def test_map_agg_and_array_agg(node):
    # Doris docs aggregate-functions/map-agg, array-agg
    with node.mysql() as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT map_agg(k, v), array_sort(array_agg(v)) FROM"
            " (SELECT 'a' AS k, 1 AS v UNION ALL SELECT 'b', 2 UNION ALL SELECT NULL, 3) t"
        )
        m, a = cur.fetchone()
        assert (m, a) in (('{"a":1, "b":2}', "[1, 2, 3]"), ('{"b":2, "a":1}', "[1, 2, 3]"))


def test_aggregate_states_over_groups(node):
    # Doris docs bitmap_union_count / intersect_count / hll_union_agg / quantile_percent
    # (quantile_percent(..., 0) of -1, 0, 1, 2, 3 is -1: aggregate-functions/quantile-percent)
    rows = "SELECT 1 AS tag, 1 AS v UNION ALL SELECT 1, 2 UNION ALL SELECT 2, 2 UNION ALL SELECT 2, 3 UNION ALL SELECT 3, 9"
    with node.mysql() as conn, conn.cursor() as cur:
        cur.execute(
            f"SELECT bitmap_union_count(to_bitmap(v)), bitmap_to_string(bitmap_union(to_bitmap(v))),"
            f" intersect_count(to_bitmap(v), tag, 1, 2), hll_union_agg(hll_hash(v)),"
            f" hll_cardinality(hll_union(hll_hash(v))) FROM ({rows}) t"
        )
        assert cur.fetchone() == (4, "1,2,3,9", 1, 4, 4)
        cur.execute(
            "SELECT quantile_percent(quantile_union(to_quantile_state(x, 2048)), 0),"
            " quantile_percent(quantile_union(to_quantile_state(x, 2048)), 0.5),"
            " quantile_percent(quantile_union(to_quantile_state(x, 2048)), 0.25)"
            " FROM (SELECT -1 AS x UNION ALL SELECT 0 UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3) t"
        )
        assert cur.fetchone() == (-1.0, 1.0, 0.0)


def test_now_carries_the_asked_fractional_digits(node):
    with node.mysql() as conn, conn.cursor() as cur:
        cur.execute("SELECT now(), now(3), current_timestamp(6)")
        now0, now3, _ = cur.fetchone()
    assert now0.microsecond == 0
    assert now3.microsecond % 1000 == 0


def test_variant_columns_read_by_path_and_cast(node):
    db = "v_" + uuid.uuid4().hex[:10]
    node.query(f"CREATE DATABASE {db}")
    try:
        node.query(
            f"CREATE TABLE {db}.ev (k INT, v VARIANT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
            ' PROPERTIES ("replication_num" = "1")'
        )
        node.query(
            f'INSERT INTO {db}.ev VALUES (1, \'{{"a":{{"b":"x"}},"n":49.98,"arr":[1,2,3]}}\'),'
            f' (2, \'{{"a":{{"b":"y"}},"n":7}}\')'
        )
        with node.mysql() as conn, conn.cursor() as cur:
            cur.execute(
                f"SELECT k, v['a']['b'], CAST(v['n'] AS INT), v['arr'], CAST(v['arr'] AS ARRAY<INT>), v['zz']"
                f" FROM {db}.ev ORDER BY k"
            )
            rows = [tuple(c.decode() if isinstance(c, bytes) else c for c in r) for r in cur.fetchall()]
            assert rows == [(1, "x", 49, "[1,2,3]", "[1, 2, 3]", None), (2, "y", 7, None, None, None)]
            cur.execute(f"SELECT k FROM {db}.ev WHERE v['a']['b'] = 'y'")
            assert cur.fetchall() == ((2,),)
        # a prepared statement (COM_STMT_PREPARE plans the query to describe its columns)
        import mysql.connector

        conn = mysql.connector.connect(host="127.0.0.1", port=node.query_port, user="root", database=db)
        try:
            cur = conn.cursor(prepared=True)
            cur.execute("SELECT v['a']['b'], CAST(v['n'] AS INT) FROM ev WHERE k = ?", (1,))
            assert [
                tuple(c.decode() if isinstance(c, (bytes, bytearray)) else c for c in r)
                for r in cur.fetchall()
            ] == [("x", 49)]
        finally:
            conn.close()
    finally:
        node.query(f"DROP DATABASE IF EXISTS {db}")


def test_bad_calls_get_doris_style_errors(node):
    with node.mysql() as conn:
        for sql, fragment in [
            ("SELECT ipv4_string_to_num('not an ip')", "Invalid IPv4 value"),
            ("SELECT bitmap_hash('a')", "bitmap_hash"),
            ("SELECT map('a')", "even number of arguments"),
            ("SELECT array_map(x -> x, [1], [2])", "lambda takes 1 arguments but 2 arrays"),
            ("SELECT now(7)", "precision"),
        ]:
            with pytest.raises(pymysql.err.MySQLError) as ei, conn.cursor() as cur:
                cur.execute(sql)
            assert fragment in str(ei.value.args[1]), (sql, ei.value.args)


def test_functions_over_nested_and_state_columns(node):
    db = "n_" + uuid.uuid4().hex[:10]
    node.query(f"CREATE DATABASE {db}")
    props = 'DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ("replication_num" = "1")'
    try:
        node.query(
            f"CREATE TABLE {db}.n (k INT, a ARRAY<INT>, m MAP<STRING, INT>, s STRUCT<f1:INT, f2:STRING>)"
            f" DUPLICATE KEY(k) {props}"
        )
        node.query(
            f"INSERT INTO {db}.n SELECT 1, [3, 1, 2], map('x', 1, 'y', 2), named_struct('f1', 7, 'f2', 'q')"
            " UNION ALL SELECT 2, [], map('x', 5), named_struct('f1', 8, 'f2', 'r')"
        )
        node.query(
            f"CREATE TABLE {db}.agg (k INT, b BITMAP BITMAP_UNION, h HLL HLL_UNION, q QUANTILE_STATE QUANTILE_UNION)"
            f" AGGREGATE KEY(k) {props}"
        )
        node.query(
            f"INSERT INTO {db}.agg SELECT 1, to_bitmap(10), hll_hash(10), to_quantile_state(1, 2048)"
            " UNION ALL SELECT 1, to_bitmap(20), hll_hash(20), to_quantile_state(3, 2048)"
            " UNION ALL SELECT 2, to_bitmap(10), hll_hash(30), to_quantile_state(5, 2048)"
        )
        with node.mysql() as conn, conn.cursor() as cur:
            cur.execute(
                f"SELECT k, a[1], a[9], array_sort(a), array_size(a), m['y'], map_keys(m), s.f2,"
                f" struct_element(s, 'f1'), array_map(x -> x * 10, a) FROM {db}.n ORDER BY k"
            )
            assert cur.fetchall() == (
                (1, 3, None, "[1, 2, 3]", 3, 2, '["x", "y"]', "q", 7, "[30, 10, 20]"),
                (2, None, None, "[]", 0, None, '["x"]', "r", 8, "[]"),
            )
            cur.execute(f"SELECT k, e FROM {db}.n LATERAL VIEW explode(a) tmp AS e ORDER BY k, e")
            assert cur.fetchall() == ((1, 1), (1, 2), (1, 3))
            cur.execute(
                f"SELECT k, bitmap_to_string(b), bitmap_count(b), hll_cardinality(h),"
                f" quantile_percent(q, 0.5) FROM {db}.agg ORDER BY k"
            )
            assert cur.fetchall() == ((1, "10,20", 2, 2, 2.0), (2, "10", 1, 1, 5.0))
            cur.execute(
                f"SELECT bitmap_union_count(b), bitmap_to_string(bitmap_union(b)), hll_union_agg(h),"
                f" quantile_percent(quantile_union(q), 0) FROM {db}.agg"
            )
            assert cur.fetchone() == (2, "10,20", 3, 1.0)
    finally:
        node.query(f"DROP DATABASE IF EXISTS {db}")
