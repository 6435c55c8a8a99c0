"""Stream Load headers with Doris semantics, through the real FE (307) -> BE path.

Each test loads with curl-like requests and checks what a user sees: the reply counts, the
ErrorURL page, and the rows a query returns.
"""

from __future__ import annotations

import bz2
import gzip
import io
import uuid

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest


def _label() -> str:
    return "l_" + uuid.uuid4().hex[:10]


def _load(galene, db, table, body, headers):
    return galene.stream_load(db, table, body, {"label": _label(), **headers})


def _counts(reply) -> tuple[int, int, int, int]:
    return (
        reply["NumberTotalRows"],
        reply["NumberLoadedRows"],
        reply["NumberFilteredRows"],
        reply["NumberUnselectedRows"],
    )


# The Doris regression case: 10 rows, 3 values that do not convert (abc, 2020-13-45, 7x7).
DORIS_CASE = (
    b"1,10,2020-01-01\n2,20,2020-01-02\n3,abc,2020-01-03\n4,40,2020-01-04\n5,50,2020-13-45\n"
    b"6,60,2020-01-06\n7,7x7,2020-01-07\n8,80,2020-01-08\n9,90,2020-01-09\n10,100,2020-01-10\n"
)
DORIS_TABLE = "(id INT NOT NULL, v INT, d DATE) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2"


def test_ported_filter_ratio_case_success_at_0_3_with_error_url(galene, db):
    galene.query(f"CREATE TABLE t {DORIS_TABLE}", db)
    reply = _load(galene, db, "t", DORIS_CASE,
                  {"column_separator": ",", "strict_mode": "true", "max_filter_ratio": "0.3"})  # fmt: skip
    assert reply["Status"] == "Success", reply
    assert _counts(reply) == (10, 7, 3, 0)
    page = httpx.get(reply["ErrorURL"], timeout=30)
    assert page.status_code == 200
    lines = [line for line in page.text.splitlines() if line.strip()]
    assert len(lines) == 3
    assert any("column(v)" in line and "abc" in line and "INT" in line for line in lines)
    assert any("column(d)" in line and "2020-13-45" in line for line in lines)
    assert any("src line [7,7x7,2020-01-07]" in line for line in lines)
    ids = [r[0] for r in galene.query("SELECT id FROM t ORDER BY id", db)]
    assert ids == [1, 2, 4, 6, 8, 9, 10]


def test_ported_filter_ratio_case_fails_at_0_2_and_loads_nothing(galene, db):
    galene.query(f"CREATE TABLE t {DORIS_TABLE}", db)
    reply = _load(galene, db, "t", DORIS_CASE,
                  {"column_separator": ",", "strict_mode": "true", "max_filter_ratio": "0.2"})  # fmt: skip
    assert reply["Status"] == "Fail"
    assert "too many filtered rows" in reply["Message"]
    assert reply["NumberLoadedRows"] == 0 and reply["NumberFilteredRows"] == 3
    assert "ErrorURL" in reply
    assert galene.query("SELECT count(*) FROM t", db)[0][0] == 0


def test_where_counts_unselected_rows_apart_from_filtered_rows(galene, db):
    galene.query(f"CREATE TABLE t {DORIS_TABLE}", db)
    # ids 1, 2, 3 are not selected (3 also has a bad value: unselected wins, as in Doris);
    # 5 and 7 are filtered: 2 / 7 selected rows is within 0.3.
    reply = _load(galene, db, "t", DORIS_CASE,
                  {"column_separator": ",", "strict_mode": "true", "max_filter_ratio": "0.3",
                   "where": "id > 3"})  # fmt: skip
    assert reply["Status"] == "Success", reply
    assert _counts(reply) == (10, 5, 2, 3)
    assert [r[0] for r in galene.query("SELECT id FROM t ORDER BY id", db)] == [4, 6, 8, 9, 10]
    # Unselected rows are not in the ratio's denominator: 2 / 7 > 0.2 fails.
    failed = _load(galene, db, "t", DORIS_CASE,
                   {"column_separator": ",", "strict_mode": "true", "max_filter_ratio": "0.25",
                    "where": "id > 3"})  # fmt: skip
    assert failed["Status"] == "Fail" and "too many filtered rows" in failed["Message"]


def test_columns_mapping_with_expressions(galene, db):
    galene.query(
        "CREATE TABLE t (k1 INT, v BIGINT, dt DATE, s VARCHAR(30), n INT) "
        "DUPLICATE KEY(k1) DISTRIBUTED BY HASH(k1) BUCKETS 1",
        db,
    )
    reply = _load(galene, db, "t", b"1|5|2024/01/02|ab\n2|\\N|2024/02/30|cd\n", {
        "column_separator": "|",
        "columns": "k1, tmp, raw, word, v = tmp * 10, dt = str_to_date(raw, '%Y/%m/%d'), "
                   "s = concat(upper(word), '-', ifnull(tmp, 'none')), n = if(tmp > 3, length(word), 0)",
    })  # fmt: skip
    assert reply["Status"] == "Success", reply
    rows = galene.query("SELECT k1, v, dt, s, n FROM t ORDER BY k1", db)
    assert [(r[0], r[1], str(r[2]) if r[2] else None, r[3], r[4]) for r in rows] == [
        (1, 50, "2024-01-02", "AB-5", 2),
        (2, None, None, "CD-none", 0),
    ]


def test_unknown_function_in_columns_fails_with_its_name(galene, db):
    galene.query("CREATE TABLE t (k INT, v INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", db)
    reply = _load(galene, db, "t", b"1,2\n", {"column_separator": ",", "columns": "k, x, v = frobnicate(x)"})
    assert reply["Status"] == "Fail"
    assert "frobnicate" in reply["Message"]


def test_csv_with_names_enclose_escape_and_multi_char_separators(galene, db):
    galene.query(
        "CREATE TABLE t (k INT, s VARCHAR(40)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", db
    )
    named = _load(galene, db, "t", b"k,s\n1,plain\n", {"format": "csv_with_names", "column_separator": ","})
    assert _counts(named) == (1, 1, 0, 0), named
    quoted = _load(galene, db, "t", b"2||'a||b\nc'\n3||'it\\'s'\n",
                   {"column_separator": "||", "enclose": "'", "escape": "\\"})  # fmt: skip
    assert _counts(quoted) == (2, 2, 0, 0), quoted
    lines = _load(galene, db, "t", b"4,x\x01y|||5,z|||", {"column_separator": ",", "line_delimiter": "|||"})
    assert _counts(lines) == (2, 2, 0, 0), lines
    hexsep = _load(galene, db, "t", b"6\x01w\n", {"column_separator": "\\x01"})
    assert _counts(hexsep) == (1, 1, 0, 0), hexsep
    rows = galene.query("SELECT k, s FROM t ORDER BY k", db)
    assert rows == [(1, "plain"), (2, "a||b\nc"), (3, "it's"), (4, "x\x01y"), (5, "z"), (6, "w")]


def test_compress_types(galene, db):
    galene.query(
        "CREATE TABLE t (k INT, s VARCHAR(10)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", db
    )

    def arrow_compress(raw: bytes, codec: str) -> bytes:
        sink = pa.BufferOutputStream()
        with pa.CompressedOutputStream(sink, codec) as out:
            out.write(raw)
        return sink.getvalue().to_pybytes()

    bodies = {
        "gz": gzip.compress(b"1,gz\n"),
        "bz2": bz2.compress(b"2,bz2\n"),
        "lz4": arrow_compress(b"3,lz4\n", "lz4"),
        "zstd": arrow_compress(b"4,zstd\n", "zstd"),
    }
    for codec, body in bodies.items():
        reply = _load(galene, db, "t", body, {"column_separator": ",", "compress_type": codec})
        assert reply["Status"] == "Success", (codec, reply)
    wrong = _load(galene, db, "t", b"5,plain\n", {"column_separator": ",", "compress_type": "gz"})
    assert wrong["Status"] == "Fail" and "decompress" in wrong["Message"]
    assert galene.query("SELECT k, s FROM t ORDER BY k", db) == [
        (1, "gz"),
        (2, "bz2"),
        (3, "lz4"),
        (4, "zstd"),
    ]


def test_json_jsonpaths_and_exact_numbers(galene, db):
    galene.query(
        "CREATE TABLE t (id BIGINT, x VARCHAR(10), amount DECIMAL(30, 10)) "
        "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1",
        db,
    )
    body = (
        b'[{"k1": 9007199254740993, "v": {"x": "a"}, "m": 12345678901234567890.0123456789},'
        b' {"k1": 2, "v": {"x": "b"}, "m": 1.5}]'
    )
    reply = _load(galene, db, "t", body, {
        "format": "json", "strip_outer_array": "true", "jsonpaths": '["$.k1", "$.v.x", "$.m"]',
        "columns": "id, x, amount",
    })  # fmt: skip
    assert reply["Status"] == "Success", reply
    rows = galene.query("SELECT id, x, CAST(amount AS STRING) FROM t ORDER BY x", db)
    assert rows == [(9007199254740993, "a", "12345678901234567890.0123456789"), (2, "b", "1.5000000000")]


def test_parquet_body(galene, db):
    galene.query(
        "CREATE TABLE t (k INT, s VARCHAR(10), d DATE) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", db
    )
    buf = io.BytesIO()
    pq.write_table(pa.table({"d": ["2024-01-02", "2024-01-03"], "K": [1, 2], "s": ["a", "b"]}), buf)
    reply = _load(galene, db, "t", buf.getvalue(), {"format": "parquet"})
    assert reply["Status"] == "Success", reply
    rows = galene.query("SELECT k, s, d FROM t ORDER BY k", db)
    assert [(r[0], r[1], str(r[2])) for r in rows] == [(1, "a", "2024-01-02"), (2, "b", "2024-01-03")]


def test_merge_type_delete_and_merge_with_sequence_column(galene, db):
    galene.query(
        "CREATE TABLE u (k INT, v VARCHAR(10), seq INT) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2 "
        "PROPERTIES ('function_column.sequence_col' = 'seq')",
        db,
    )
    h = {"column_separator": ","}
    # In one load the highest sequence wins, not the last row.
    assert _load(galene, db, "u", b"1,new,9\n1,old,3\n2,b,1\n3,c,1\n4,d,1\n", h)["Status"] == "Success"
    # A later load with a lower sequence does not replace the row; a higher one does.
    assert _load(galene, db, "u", b"1,stale,5\n2,b2,2\n", h)["Status"] == "Success"
    assert galene.query("SELECT k, v FROM u ORDER BY k", db) == [(1, "new"), (2, "b2"), (3, "c"), (4, "d")]
    # DELETE: every row of the load deletes its key.
    deleted = _load(galene, db, "u", b"3,x,10\n", {**h, "merge_type": "DELETE"})
    assert deleted["Status"] == "Success", deleted
    # MERGE: rows where `delete` holds delete, the others upsert.
    merged = _load(
        galene, db, "u", b"4,gone,10\n5,e,1\n", {**h, "merge_type": "MERGE", "delete": "v = 'gone'"}
    )
    assert merged["Status"] == "Success", merged
    assert galene.query("SELECT k, v FROM u ORDER BY k", db) == [(1, "new"), (2, "b2"), (5, "e")]


def test_sequence_type_table_keeps_the_highest_sequence_in_a_hidden_column(galene, db):
    galene.query(
        "CREATE TABLE s (k INT, v VARCHAR(10), ts DATE) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2 "
        "PROPERTIES ('function_column.sequence_type' = 'Date')",
        db,
    )
    h = {"column_separator": ",", "function_column.sequence_col": "ts"}
    first = _load(galene, db, "s", b"1,new,2024-05-01\n1,old,2024-01-01\n2,b,2024-01-01\n", h)
    assert first["Status"] == "Success", first
    # An older sequence value does not replace the row; a newer one does.
    later = _load(galene, db, "s", b"1,stale,2024-03-01\n2,b2,2024-02-01\n", h)
    assert later["Status"] == "Success", later
    assert galene.query("SELECT k, v FROM s ORDER BY k", db) == [(1, "new"), (2, "b2")]
    # The hidden column is not shown by SELECT * or DESC.
    assert [len(r) for r in galene.query("SELECT * FROM s", db)] == [3, 3]
    assert "__DORIS_SEQUENCE_COL__" not in str(galene.query("DESC s", db))
    # Doris needs the mapping on every load of such a table.
    missing = _load(galene, db, "s", b"3,c,2024-01-01\n", {"column_separator": ","})
    assert missing["Status"] == "Fail"
    assert "need to specify the sequence column" in missing["Message"]
    assert galene.query("SELECT count(*) FROM s", db)[0][0] == 2


def test_sequence_properties_are_checked_at_create(galene, db):
    bad = [
        ("DUPLICATE KEY(k)", "('function_column.sequence_type' = 'int')"),
        ("UNIQUE KEY(k)", "('function_column.sequence_type' = 'varchar(10)')"),
        ("UNIQUE KEY(k)", "('function_column.sequence_col' = 'nope')"),
    ]
    for keys, props in bad:
        with pytest.raises(Exception, match="sequence"):
            galene.query(
                f"CREATE TABLE x (k INT, v INT) {keys} DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES {props}",
                db,
            )
    with pytest.raises(Exception, match="reserved"):
        galene.query(
            "CREATE TABLE x (k INT, __DORIS_SEQUENCE_COL__ INT) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
            db,
        )


def test_merge_type_errors_use_doris_texts(galene, db):
    galene.query("CREATE TABLE d (k INT, v INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", db)
    galene.query("CREATE TABLE u (k INT, v INT) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", db)
    h = {"column_separator": ","}
    dup = _load(galene, db, "d", b"1,1\n", {**h, "merge_type": "DELETE"})
    assert "load by MERGE or DELETE is only supported in unique tables." in dup["Message"]
    no_delete = _load(galene, db, "u", b"1,1\n", {**h, "merge_type": "MERGE"})
    assert "Excepted DELETE ON clause when merge type is MERGE." in no_delete["Message"]
    no_seq = _load(galene, db, "u", b"1,1\n", {**h, "function_column.sequence_col": "v"})
    assert "There is no sequence column in the table u" in no_seq["Message"]
    for table in ("d", "u"):
        assert galene.query(f"SELECT count(*) FROM {table}", db)[0][0] == 0


def test_partitions_header_filters_rows_of_other_partitions(galene, db):
    galene.query(
        "CREATE TABLE p (d DATE, k INT) DUPLICATE KEY(d) PARTITION BY RANGE(d) ("
        "PARTITION p1 VALUES LESS THAN ('2024-01-01'), PARTITION p2 VALUES LESS THAN ('2025-01-01')) "
        "DISTRIBUTED BY HASH(k) BUCKETS 1",
        db,
    )
    body = b"2023-05-01,1\n2024-05-01,2\n2024-06-01,3\n"
    reply = _load(
        galene, db, "p", body, {"column_separator": ",", "partitions": "p2", "max_filter_ratio": "0.5"}
    )
    assert reply["Status"] == "Success", reply
    assert _counts(reply) == (3, 2, 1, 0)
    assert "no partition for this tuple" in httpx.get(reply["ErrorURL"], timeout=30).text
    assert [r[0] for r in galene.query("SELECT k FROM p ORDER BY k", db)] == [2, 3]
    unknown = _load(galene, db, "p", body, {"column_separator": ",", "partitions": "p9"})
    assert unknown["Status"] == "Fail" and "Unknown partition 'p9'" in unknown["Message"]


def test_timezone_header_applies_to_from_unixtime(galene, db):
    galene.query("CREATE TABLE t (k INT, ts DATETIME) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", db)
    h = {"column_separator": ",", "columns": "k, epoch, ts = from_unixtime(epoch)"}
    assert _load(galene, db, "t", b"1,0\n", {**h, "timezone": "UTC"})["Status"] == "Success"
    assert _load(galene, db, "t", b"2,0\n", {**h, "time_zone": "Asia/Tokyo"})["Status"] == "Success"
    rows = galene.query("SELECT k, CAST(ts AS STRING) FROM t ORDER BY k", db)
    assert rows == [(1, "1970-01-01 00:00:00"), (2, "1970-01-01 09:00:00")]
