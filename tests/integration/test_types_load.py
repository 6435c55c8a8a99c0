"""Issue 21's write side on a real Galene: Stream Load (CSV, JSON, Parquet) and INSERT … VALUES of
ARRAY / MAP / STRUCT, JSON / VARIANT, IPV4 / IPV6, LARGEINT's whole range, DATETIME(6) and the
aggregate-state columns (to_bitmap, bitmap_hash, hll_hash, to_quantile_state in the `columns`
header), checked by SELECTs of projection functions and by the counts of filtered rows.

Doris' text forms: regression-test/data/load_p0/stream_load/test_stream_load_*array*/map*/struct*
and their suites (`[1, 2]`, `{"k":1}`, `{1, "x"}`, single-quoted and bare strings); the HLL
column rule is Doris' "HLL column must use hll function" (fe LoadException).
"""

from __future__ import annotations

import datetime as dt
import io
import json

import pyarrow as pa
import pyarrow.parquet as papq
import pymysql
import pytest

pytestmark = pytest.mark.slow

MAX = 2**127 - 1
MIN = -(2**127)
# Apache Spark reads LARGEINT as DECIMAL(38, 0): its tests load the widest values it can read;
# the whole int128 range is loaded and read on Sail (galene.common.types, "LARGEINT").
HI = 10**38 - 1
LO = -(10**38 - 1)

ALL_TYPES_DDL = (
    "CREATE TABLE t (k INT NOT NULL, a ARRAY<INT>, aa ARRAY<ARRAY<STRING>>, m MAP<STRING, INT>, "
    "s STRUCT<x:INT, y:VARCHAR(10)>, j JSON, v VARIANT, ip4 IPV4, ip6 IPV6, big LARGEINT, "
    "ts DATETIME(6)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2"
)


def csv_body(hi: int = HI, lo: int = LO) -> bytes:
    return "\n".join(
        [
            '1\t[1, 2, 3]\t[["a"], ["b", "c"]]\t{"k1":1, "k2":2}\t{"x":1, "y":"p"}\t{"q": [1, 2]}\t'
            '{"w": {"z": 5}}\t1.2.3.4\t2001:DB8::1\t' + f"{hi}\t2024-01-02 03:04:05.123456",
            "2\t[]\t[[], null]\t{'a':7}\t{2, 'r'}\t[]\t1\t010.0.0.1\t::ffff:1.2.3.4\t" + f"{lo}\t2024-01-02",
            "3\t[null, 4]\t\\N\t{}\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N",
            "4\t[1, x]\t[]\t{}\t{}\tnot json\t{}\t300.1.1.1\tzz\t1\t2024-01-01",
        ]
    ).encode()


CSV_BODY = csv_body()


def _load(node, db, table, body, **headers):
    reply = node.stream_load(db, table, body, headers)
    return reply


def test_csv_load_of_every_new_type(galene, db):
    galene.query(ALL_TYPES_DDL, db)
    reply = _load(galene, db, "t", CSV_BODY, strict_mode="true", max_filter_ratio="0.5")
    assert reply["Status"] == "Success", reply
    assert (reply["NumberLoadedRows"], reply["NumberFilteredRows"]) == (3, 1)
    rows = galene.query(
        "SELECT k, size(a), a[1], a[3], size(aa), m['k2'], m['a'], struct_element(s, 'y'), "
        "ip4, ip6, CAST(big AS STRING), ts FROM t ORDER BY k",
        db,
    )
    assert rows == [
        (
            1,
            3,
            1,
            3,
            2,
            2,
            None,
            "p",
            "1.2.3.4",
            "2001:db8::1",
            str(HI),
            dt.datetime(2024, 1, 2, 3, 4, 5, 123456),
        ),
        (2, 0, None, None, 2, None, 7, "r", "10.0.0.1", "::ffff:1.2.3.4", str(LO), dt.datetime(2024, 1, 2)),
        (3, 2, None, None, None, None, None, None, None, None, None, None),
    ]
    assert galene.query("SELECT j, v['w']['z'] FROM t WHERE k = 1", db)[0][0] == '{"q":[1,2]}'


def test_csv_load_non_strict_turns_bad_values_into_null(galene, db):
    galene.query(ALL_TYPES_DDL, db)
    reply = _load(galene, db, "t", CSV_BODY)
    assert (reply["NumberLoadedRows"], reply["NumberFilteredRows"]) == (4, 0), reply
    # `[1, x]`: the element that does not convert is NULL, the array stays (Doris' text serde).
    assert galene.query(
        "SELECT size(a), a[2] IS NULL, j IS NULL, ip4 IS NULL, ip6 IS NULL FROM t WHERE k = 4", db
    ) == [(2, 1, 1, 1, 1)]


def test_strict_load_error_log_names_the_column(galene, db):
    galene.query(ALL_TYPES_DDL, db)
    reply = _load(
        galene, db, "t", b"1\t[1, x]\t[]\t{}\t{}\t1\t1\t1.1.1.1\t::1\t1\t2024-01-01\n", strict_mode="true"
    )
    assert reply["Status"] == "Fail" and reply["NumberFilteredRows"] == 1
    assert "ErrorURL" in reply


def test_json_load_maps_nested_json_values(galene, db):
    galene.query(ALL_TYPES_DDL, db)
    docs = [
        {"k": 1, "a": [5, 6], "aa": [["x"]], "m": {"k1": 3}, "s": {"x": 9, "y": "z"}, "j": {"r": [1]},
         "v": {"p": {"q": 1}}, "ip4": "8.8.8.8", "ip6": "::1", "big": HI, "ts": "2024-05-06 07:08:09.000001"},
        {"k": 2, "a": None, "m": {}, "s": None, "j": [1, "x"], "big": LO},
    ]  # fmt: skip
    body = json.dumps(docs).encode()
    reply = _load(galene, db, "t", body, format="json", strip_outer_array="true")
    assert reply["Status"] == "Success" and reply["NumberLoadedRows"] == 2, reply
    rows = galene.query(
        "SELECT k, a[2], aa[1][1], m['k1'], struct_element(s, 'x'), j, ip4, CAST(big AS STRING), ts FROM t ORDER BY k",
        db,
    )
    assert rows == [
        (1, 6, "x", 3, 9, '{"r":[1]}', "8.8.8.8", str(HI), dt.datetime(2024, 5, 6, 7, 8, 9, 1)),
        (2, None, None, None, None, '[1,"x"]', None, str(LO), None),
    ]


def test_parquet_load_of_nested_columns(galene, db):
    galene.query(ALL_TYPES_DDL, db)
    data = pa.table(
        {
            "k": pa.array([1, 2], pa.int32()),
            "a": pa.array([[1, 2], None], pa.list_(pa.int64())),
            "aa": pa.array([[["p", "q"]], []], pa.list_(pa.list_(pa.string()))),
            "m": pa.array([[("k1", 4)], []], pa.map_(pa.string(), pa.int32())),
            "s": pa.array([{"x": 1, "y": "o"}, None]),
            "ip4": pa.array(["1.1.1.1", "bad"]),
        }
    )
    buf = io.BytesIO()
    papq.write_table(data, buf)
    reply = _load(galene, db, "t", buf.getvalue(), format="parquet", columns="k, a, aa, m, s, ip4")
    assert reply["Status"] == "Success" and reply["NumberLoadedRows"] == 2, reply
    assert galene.query(
        "SELECT k, a[2], aa[1][2], m['k1'], struct_element(s, 'y'), ip4 FROM t ORDER BY k", db
    ) == [
        (1, 2, "q", 4, "o", "1.1.1.1"),
        (2, None, None, None, None, None),
    ]


def test_insert_values_with_doris_literals(galene, db):
    galene.query(ALL_TYPES_DDL, db)
    with galene.mysql(db) as conn, conn.cursor() as cur:
        cur.execute(
            "INSERT INTO t (k, a, aa, m, s, j, v, ip4, ip6, big, ts) VALUES "
            "(1, [1, 2], [['a'], []], {'a': 1}, struct(1, 'x'), '{\"b\": 2}', '{\"c\": [3]}', '1.2.3.4', "
            f"'2001:db8::2', {HI}, '2024-01-02 03:04:05.654321'), "
            f"(2, array(3, 4, 5), NULL, map('b', 2), named_struct('x', 2, 'y', 'z'), NULL, NULL, NULL, NULL, {LO}, NULL)"
        )
    rows = galene.query(
        "SELECT k, size(a), a[1], m['a'], m['b'], struct_element(s, 'y'), j, ip4, ip6, CAST(big AS STRING), ts "
        "FROM t ORDER BY k",
        db,
    )
    assert rows == [
        (
            1,
            2,
            1,
            1,
            None,
            "x",
            '{"b":2}',
            "1.2.3.4",
            "2001:db8::2",
            str(HI),
            dt.datetime(2024, 1, 2, 3, 4, 5, 654321),
        ),
        (2, 3, 3, None, 2, "z", None, None, None, str(LO), None),
    ]


def test_insert_nested_literal_into_json_column_keeps_value_kinds(galene, db):
    galene.query(ALL_TYPES_DDL, db)
    with galene.mysql(db) as conn, conn.cursor() as cur:
        cur.execute("INSERT INTO t (k, j, a) VALUES (1, {'a': 1, 'b': [true, 'x', 2.50]}, [1e1, '2'])")
    assert galene.query("SELECT j, a[1], a[2] FROM t", db) == [('{"a":1,"b":[true,"x",2.50]}', 10, 2)]


def test_insert_strict_refuses_bad_ip_and_json(galene, db):
    galene.query(ALL_TYPES_DDL, db)
    with galene.mysql(db) as conn, conn.cursor() as cur:
        with pytest.raises(pymysql.err.MySQLError, match="filtered"):
            cur.execute("INSERT INTO t (k, ip4) VALUES (1, '1.2.3.999')")
        with pytest.raises(pymysql.err.MySQLError, match="filtered"):
            cur.execute("INSERT INTO t (k, j) VALUES (1, '{bad')")
    assert galene.query("SELECT count(*) FROM t", db) == [(0,)]


STATE_DDL = (
    "CREATE TABLE st (k INT, b BITMAP BITMAP_UNION, h HLL HLL_UNION, q QUANTILE_STATE QUANTILE_UNION) "
    "AGGREGATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
)


@pytest.mark.parametrize("engine", ["spark", "sail"])
def test_aggregate_state_columns_from_load_functions(request, engine):
    galene = request.getfixturevalue("galene" if engine == "spark" else "galene_on_sail")
    db = f"st_{engine}"
    galene.query(f"DROP DATABASE IF EXISTS {db}")
    galene.query(f"CREATE DATABASE {db}")
    galene.query(STATE_DDL, db)
    cols = "k, u, x, b=to_bitmap(u), h=hll_hash(x), q=to_quantile_state(u, 2048)"
    body = b"1,7,a\n1,9,b\n1,7,a\n2,3,c\n"
    reply = _load(galene, db, "st", body, column_separator=",", columns=cols)
    assert reply["Status"] == "Success" and reply["NumberLoadedRows"] == 4, reply
    reply = _load(galene, db, "st", b"1,11,d\n", column_separator=",", columns=cols)
    assert reply["Status"] == "Success", reply
    # BITMAP is a sorted distinct BIGINT list, QUANTILE_STATE the values: read with array functions.
    assert galene.query("SELECT k, size(b), b[1], size(q) FROM st ORDER BY k", db) == [
        (1, 3, 7, 4),
        (2, 1, 3, 1),
    ]
    # The hll_hash sketches merge in the engine's hll_union_agg (the AGGREGATE read) and count.
    assert galene.query("SELECT k, bitmap_count(b), hll_cardinality(h) FROM st ORDER BY k", db) == [
        (1, 3, 3),
        (2, 1, 1),
    ]
    assert galene.query("SELECT hll_union_agg(h), bitmap_union_count(b) FROM st", db) == [(4, 4)]
    galene.query(f"DROP DATABASE {db}")


def test_hll_column_needs_hll_function(galene, db):
    galene.query(STATE_DDL, db)
    reply = galene.stream_load(db, "st", b"1,2,3,4\n", {"column_separator": ","})
    assert reply["Status"] == "Fail"
    assert "HLL column must use hll function" in reply["Message"]


def test_largeint_and_nested_on_sail(galene_on_sail):
    node = galene_on_sail
    db = "sail_types"
    node.query(f"CREATE DATABASE IF NOT EXISTS {db}")
    node.query(ALL_TYPES_DDL, db)
    reply = _load(node, db, "t", csv_body(MAX, MIN), strict_mode="true", max_filter_ratio="0.5")
    assert (reply["NumberLoadedRows"], reply["NumberFilteredRows"]) == (3, 1), reply
    with node.mysql(db) as conn, conn.cursor() as cur:
        cur.execute("SET enable_insert_strict = true")
        cur.execute(
            f"INSERT INTO t (k, a, m, big) VALUES (5, [7, 8], {{'z': 1}}, {MAX}), (6, NULL, NULL, {MIN})"
        )
    rows = node.query("SELECT k, size(a), a[2], m['z'], big FROM t WHERE k IN (1, 2, 5, 6) ORDER BY k", db)
    assert [(k, n, e, z, int(b)) for k, n, e, z, b in rows] == [
        (1, 3, 2, None, MAX),
        (2, 0, None, None, MIN),
        (5, 2, 8, 1, MAX),
        (6, None, None, None, MIN),
    ]


def test_decimal256_column_on_sail(galene_on_sail):
    node = galene_on_sail
    db = "sail_dec"
    node.query(f"CREATE DATABASE IF NOT EXISTS {db}")
    with node.mysql(db) as conn, conn.cursor() as cur:
        cur.execute("SET enable_decimal256 = true")
        cur.execute(
            "CREATE TABLE d (k INT, x DECIMAL(50, 2)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
        )
    big = "1" * 48 + ".25"
    reply = _load(node, db, "d", f"1\t{big}\n".encode())
    assert reply["NumberLoadedRows"] == 1, reply
    node.query("INSERT INTO d SELECT k + 1, x FROM d", db)  # decimal256 through the engine's write
    assert node.query("SELECT k, CAST(x AS STRING) FROM d ORDER BY k", db) == [(1, big), (2, big)]


def test_insert_select_copies_every_new_type_through_the_engine(galene, db):
    galene.query(ALL_TYPES_DDL, db)
    galene.query(ALL_TYPES_DDL.replace("CREATE TABLE t ", "CREATE TABLE t2 "), db)
    reply = _load(galene, db, "t", CSV_BODY, strict_mode="true", max_filter_ratio="0.5")
    assert reply["NumberLoadedRows"] == 3, reply
    galene.query("INSERT INTO t2 SELECT * FROM t", db)
    query = (
        "SELECT k, size(a), a[3], aa[1][1], m['k2'], struct_element(s, 'x'), j, v, ip4, ip6, "
        "CAST(big AS STRING), ts FROM {} ORDER BY k"
    )
    assert galene.query(query.format("t2"), db) == galene.query(query.format("t"), db)


def test_insert_select_of_aggregate_states(galene, db):
    galene.query(STATE_DDL, db)
    galene.query(STATE_DDL.replace("CREATE TABLE st ", "CREATE TABLE st2 "), db)
    cols = "k, u, x, b=to_bitmap(u), h=hll_hash(x), q=to_quantile_state(u, 2048)"
    reply = _load(galene, db, "st", b"1,7,a\n1,9,b\n2,3,c\n", column_separator=",", columns=cols)
    assert reply["Status"] == "Success", reply
    galene.query("INSERT INTO st2 SELECT * FROM st", db)
    galene.query("INSERT INTO st2 SELECT * FROM st", db)
    assert galene.query("SELECT k, size(b), b[2], size(q) FROM st2 ORDER BY k", db) == [
        (1, 2, 9, 4),
        (2, 1, None, 2),
    ]


def test_insert_strict_largeint_bounds(galene, db):
    galene.query("CREATE TABLE l (k INT, big LARGEINT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", db)
    with galene.mysql(db) as conn, conn.cursor() as cur:
        cur.execute("SET enable_insert_strict = true")
        cur.execute(f"INSERT INTO l VALUES (1, {MAX}), (2, {MIN}), (3, '{MAX}')")
        # With an expression in the rows, the constants still travel as their text.
        cur.execute(f"INSERT INTO l VALUES (5, {MAX}), (6, abs(-6))")
        with pytest.raises(pymysql.err.MySQLError, match="filtered"):
            cur.execute(f"INSERT INTO l VALUES (4, {MAX + 1})")
    # Apache Spark cannot read 39-digit LARGEINTs (see HI): count the rows without reading them.
    assert galene.query("SELECT count(*) FROM l", db) == [(5,)]


def test_ctas_and_update_write_nested_values(galene, db):
    galene.query(ALL_TYPES_DDL, db)
    reply = _load(galene, db, "t", CSV_BODY, strict_mode="true", max_filter_ratio="0.5")
    assert reply["NumberLoadedRows"] == 3, reply
    galene.query("CREATE TABLE c DISTRIBUTED BY HASH(k) BUCKETS 1 AS SELECT k, a, m, s, ip6 FROM t", db)
    assert galene.query("SELECT k, a[2], m['k1'], struct_element(s, 'y'), ip6 FROM c ORDER BY k", db) == [
        (1, 2, 1, "p", "2001:db8::1"),
        (2, None, None, "r", "::ffff:1.2.3.4"),
        (3, 4, None, None, None),
    ]
    galene.query(
        "CREATE TABLE u (k INT, a ARRAY<INT>, s STRUCT<x:INT, y:VARCHAR(10)>) UNIQUE KEY(k) "
        "DISTRIBUTED BY HASH(k) BUCKETS 1",
        db,
    )
    with galene.mysql(db) as conn, conn.cursor() as cur:
        cur.execute("INSERT INTO u VALUES (1, [1], struct(1, 'a')), (2, [2], struct(2, 'b'))")
        cur.execute("UPDATE u SET a = [7, 8], s = named_struct('x', 9, 'y', 'z') WHERE k = 1")
    assert galene.query("SELECT k, size(a), a[2], struct_element(s, 'x') FROM u ORDER BY k", db) == [
        (1, 2, 8, 9),
        (2, 1, None, 2),
    ]


def test_group_commit_load_of_nested_values(galene, db):
    galene.query(ALL_TYPES_DDL + ' PROPERTIES ("group_commit_interval_ms" = "200")', db)
    reply = _load(
        galene, db, "t", CSV_BODY, group_commit="sync_mode", max_filter_ratio="0.5", strict_mode="true"
    )
    assert reply["Status"] == "Success" and reply["NumberLoadedRows"] == 3, reply
    assert galene.query("SELECT k, a[2], m['k2'], struct_element(s, 'y'), j, ip6 FROM t ORDER BY k", db) == [
        (1, 2, 2, "p", '{"q":[1,2]}', "2001:db8::1"),
        (2, None, None, "r", "[]", "::ffff:1.2.3.4"),
        (3, 4, None, None, None, None),
    ]


def test_arrow_stream_load_of_nested_columns(galene, db):
    galene.query(ALL_TYPES_DDL, db)
    data = pa.table(
        {
            "k": pa.array([1], pa.int32()),
            "a": pa.array([[3, 4]], pa.list_(pa.int64())),
            "s": pa.array([{"x": 5, "y": "w"}]),
            "ip4": pa.array([16909060], pa.int64()),  # IPV4 as its number
        }
    )
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, data.schema) as writer:
        writer.write_table(data)
    reply = _load(galene, db, "t", sink.getvalue().to_pybytes(), format="arrow", columns="k, a, s, ip4")
    assert reply["Status"] == "Success" and reply["NumberLoadedRows"] == 1, reply
    assert galene.query("SELECT a[2], struct_element(s, 'y'), ip4 FROM t", db) == [(4, "w", "1.2.3.4")]
