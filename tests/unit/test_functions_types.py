"""The Doris → Spark translation of the new types' functions (galene/sql/functions_{nested,json,
ip,state,time}.py), checked on the generated Spark SQL: argument order, 1-based subscripts,
VARIANT paths from column types, Doris-style errors. The values themselves are checked on both
engines by tests/integration/test_types_functions.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import sqlglot

from galene.common.errors import GaleneError
from galene.sql import functions_ip, functions_json, functions_nested, functions_state, functions_time
from galene.sql.dialect import PLAIN_CALLS, Galene
from galene.sql.translate import to_spark_sql


def _columns(db, name):
    if name == "ev":
        return [
            SimpleNamespace(name="k", type=SimpleNamespace(name="INT")),
            SimpleNamespace(name="v", type=SimpleNamespace(name="VARIANT")),
        ]
    return [SimpleNamespace(name="a", type=SimpleNamespace(name="ARRAY"))]


def spark(sql: str) -> str:
    out = to_spark_sql(sqlglot.parse_one(sql, read=Galene), lambda db, name: f"view_{name}", _columns)
    sqlglot.parse_one(out, read="spark")  # what the engine receives parses as Spark SQL
    return out


def item(sql: str) -> str:
    """The translated first select item, without its label."""
    out = spark(sql)
    return out[len("SELECT ") : out.rindex(" AS `")]


def test_family_names_parse_as_plain_calls_with_doris_arguments():
    assert functions_nested.NAMES <= PLAIN_CALLS and functions_state.NAMES <= PLAIN_CALLS
    assert functions_json.NAMES <= PLAIN_CALLS and functions_ip.NAMES <= PLAIN_CALLS
    # sqlglot's own nodes for these take other argument counts
    assert "TRY_ELEMENT_AT(FILTER(ARRAY(1, 2), x -> x > 1), -1)" in spark(
        "SELECT array_last(x -> x > 1, [1, 2])"
    )
    assert "MAP(1, 'a', 2, 'b')" in spark("SELECT map(1, 'a', 2, 'b')")


def test_subscripts_are_one_based_and_null_out_of_range():
    assert item("SELECT a[1] FROM t") == "TRY_ELEMENT_AT(a, 1)"
    assert item("SELECT m['k'] FROM t") == "TRY_ELEMENT_AT(m, 'k')"
    assert "LIKE 'array%', NULL, 0)" in item("SELECT a[0] FROM t")  # [0] is NULL for an array, key 0 of a map
    assert "AND i = 0, NULL, i)" in item("SELECT a[i] FROM t")
    assert item("SELECT element_at(a, -1) FROM t") == "TRY_ELEMENT_AT(a, -1)"


def test_lambdas_come_first_in_doris_and_may_span_arrays():
    assert item("SELECT array_map(x -> x + 1, a) FROM t") == "TRANSFORM(a, x -> x + 1)"
    assert item("SELECT array_filter(x -> x > 1, a) FROM t") == "FILTER(a, x -> x > 1)"
    two = item("SELECT array_map((x, y) -> x + y, a, b) FROM t")
    assert two == "TRANSFORM(a, (x, galene_lambda_i) -> x + TRY_ELEMENT_AT(b, (galene_lambda_i + 1)))"
    with pytest.raises(GaleneError, match="takes 1 arguments but 2 arrays"):
        spark("SELECT array_map(x -> x, a, b) FROM t")
    with pytest.raises(GaleneError, match="even number"):
        spark("SELECT map('a')")


def test_doris_null_rules_of_sorts_and_sizes():
    assert item("SELECT array_sort(a) FROM t") == "SORT_ARRAY(a)"  # ascending, NULLs first
    assert item("SELECT array_reverse_sort(a) FROM t") == "SORT_ARRAY(a, FALSE)"
    assert item("SELECT array_size(a) FROM t") == "CAST(IF(a IS NULL, NULL, SIZE(a)) AS BIGINT)"
    assert item("SELECT size(NULL)") == "NULL"


def test_variant_subscripts_are_json_paths_only_over_variant_columns():
    out = spark("SELECT v['a']['b'], v['arr'][0], CAST(v['n'] AS INT), k FROM db.ev WHERE v['a'] = 'x'")
    assert "GET_JSON_OBJECT(v, '$.a.b')" in out
    assert "GET_JSON_OBJECT(v, '$.arr[0]')" in out
    assert "WHERE GET_JSON_OBJECT(v, '$.a') = 'x'" in out
    assert "FROM_JSON(GET_JSON_OBJECT(v, '$.arr'), 'ARRAY<INT>')" in spark(
        "SELECT CAST(v['arr'] AS ARRAY<INT>) FROM ev"
    )
    assert "GET_JSON_OBJECT(v, '$')" in spark("SELECT CAST(v AS STRING) FROM ev")
    assert "GET_JSON_OBJECT(v, '$[''odd key'']')" in spark(
        "SELECT v['odd key'] FROM ev"
    ) or "odd key" in spark("SELECT v['odd key'] FROM ev")
    # a table without VARIANT columns: a plain subscript
    assert "TRY_ELEMENT_AT(v, 'a')" in spark("SELECT v['a'] FROM t")
    # CAST(x AS VARIANT)[...] is a path too
    assert "GET_JSON_OBJECT(" in spark("SELECT CAST('{\"a\":1}' AS VARIANT)['a']")


def test_json_paths_and_functions():
    assert functions_json.doc_path(sqlglot.exp.Literal.string('$."a.b"[1]')).name == "$['a.b'][1]"
    assert "SCHEMA_OF_VARIANT" in item("SELECT json_type('{}', '$')").upper()
    assert item("SELECT json_quote(s) FROM t") == "TO_JSON(CAST(CAST(s AS STRING) AS VARIANT))"


def test_ip_functions_validate_with_exact_octet_patterns():
    import re

    pattern = functions_ip.IPV4_PATTERN.replace("[.]", r"\.")
    assert re.match(pattern, "255.255.255.255") and not re.match(pattern, "256.1.1.1")
    assert not re.match(pattern, "1.2.3")
    v6 = functions_ip.IPV6_PATTERN.replace("[.]", r"\.")
    for good in ("2001:db8::1", "::", "::1", "::ffff:1.2.3.4", "1:2:3:4:5:6:7:8", "fe80::"):
        assert re.match(v6, good), good
    for bad in ("2001:db8:::1", "1:2:3:4:5:6:7:8:9", "12345::", "1.2.3.4"):
        assert not re.match(v6, bad), bad
    assert "RAISE_ERROR('Invalid IPv4 value')" in spark("SELECT ipv4_string_to_num(s) FROM t")
    assert "RAISE_ERROR" not in spark("SELECT inet_aton(s) FROM t")


def test_aggregate_states():
    assert item("SELECT bitmap_union(b) FROM t") == "SORT_ARRAY(ARRAY_DISTINCT(FLATTEN(COLLECT_LIST(b))))"
    assert "HLL_SKETCH_AGG(CAST(x AS STRING))" in item("SELECT hll_union_agg(hll_hash(x)) FROM t")
    assert "HLL_UNION_AGG(h, TRUE)" in item("SELECT hll_union_agg(h) FROM t")
    assert item("SELECT bitmap_count(NULL)") == "CAST(0 AS BIGINT)"
    assert item("SELECT hll_hash(x) FROM t") == "HLL_SKETCH_AGG(CAST(x AS STRING)) OVER (PARTITION BY x)"
    with pytest.raises(GaleneError, match="bitmap_hash is not supported in queries"):
        spark("SELECT bitmap_hash(s) FROM t")
    counted = item("SELECT intersect_count(b, tag, 1, 2) FROM t")
    assert counted.count("COLLECT_LIST(IF(tag = ") == 2 and "ARRAY_INTERSECT" in counted


def test_time_values_and_clock_precision():
    assert item("SELECT now()") == "CAST(DATE_TRUNC('SECOND', CURRENT_TIMESTAMP()) AS TIMESTAMP_NTZ)"
    assert "DIV 1000 * 1000" in item("SELECT now(3)")
    assert "DIV 1000 * 1000" in item("SELECT current_timestamp(3)")
    assert item("SELECT current_timestamp(6)") == "CAST(CURRENT_TIMESTAMP() AS TIMESTAMP_NTZ)"
    with pytest.raises(GaleneError, match="precision"):
        spark("SELECT now(7)")
    assert "TIMESTAMP" not in item("SELECT CAST('10:11:12' AS TIME)").split("WHEN")[0]
    assert functions_time.MAX_TIME_SECONDS == 838 * 3600 + 59 * 60 + 59


def test_cast_to_datetime_p_rounds_to_the_scale():
    assert "+ 500) DIV 1000 * 1000" in item("SELECT CAST(s AS DATETIME(3)) FROM t")
    assert "DIV" not in item("SELECT CAST(s AS DATETIME(6)) FROM t")


def test_rewrites_that_read_an_argument_often_bind_it_once():
    # nested IP rewrites stay small: each reads its argument through one binding (sqlbuild.let)
    nested = spark(
        "SELECT struct_element(ipv4_cidr_to_range(to_ipv4(to_ipv4(to_ipv4(s))), 16), 'min') FROM t"
    )
    assert len(nested) < 20_000
    assert "AGGREGATE(ARRAY(0), TRIM(CAST(s AS STRING))" in spark("SELECT inet_aton(s) FROM t")
