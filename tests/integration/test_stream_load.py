"""Stream Load through the real FE (307) and BE, checked through the MySQL endpoint."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from tests.support.client import auth_header
from tests.support.samples import JSON_VALUES


def _table(galene, db, ddl_body: str, name: str = "t") -> str:
    galene.query(f"CREATE TABLE {name} {ddl_body}", db)
    return name


DUP = "(k INT NOT NULL, v VARCHAR(8), d DATE) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3"


def test_fe_answers_307_with_credentials_in_location(galene, db):
    _table(galene, db, DUP)
    r = httpx.put(
        f"http://127.0.0.1:{galene.http_port}/api/{db}/t/_stream_load?x=1",
        headers={**auth_header("root", ""), "label": "probe"},
        content=b"",
    )
    assert r.status_code == 307
    loc = r.headers["location"]
    assert loc.startswith(f"http://root:@127.0.0.1:{galene.be_http_port}/api/{db}/t/_stream_load")
    assert loc.endswith("?x=1")


def test_fe_refuses_bad_credentials(galene, db):
    _table(galene, db, DUP)
    r = httpx.put(
        f"http://127.0.0.1:{galene.http_port}/api/{db}/t/_stream_load",
        headers=auth_header("root", "nope"),
        content=b"",
    )
    assert r.status_code == 401


def test_load_reply_fields_in_doris_order_and_data_visible(galene, db):
    _table(galene, db, DUP)
    reply = galene.stream_load(
        db, "t", b"1,a,2024-01-01\n2,b,2024-01-02\n", {"column_separator": ",", "label": "l1"}
    )
    assert list(reply)[:6] == ["TxnId", "Label", "Comment", "TwoPhaseCommit", "Status", "Message"]
    assert reply["Status"] == "Success" and reply["Message"] == "OK"
    assert reply["Label"] == "l1" and reply["TwoPhaseCommit"] == "false"
    assert (reply["NumberTotalRows"], reply["NumberLoadedRows"], reply["NumberFilteredRows"]) == (2, 2, 0)
    for key in ("LoadBytes", "LoadTimeMs", "BeginTxnTimeMs", "StreamLoadPutTimeMs", "ReadDataTimeMs",
                "WriteDataTimeMs", "CommitAndPublishTimeMs"):  # fmt: skip
        assert key in reply
    assert "ErrorURL" not in reply
    rows = galene.query("SELECT k, v, d FROM t ORDER BY k", db)
    assert [(r[0], r[1], str(r[2])) for r in rows] == [(1, "a", "2024-01-01"), (2, "b", "2024-01-02")]


def test_reused_label_answers_label_already_exists(galene, db):
    _table(galene, db, DUP)
    first = galene.stream_load(db, "t", b"1,a,2024-01-01\n", {"column_separator": ",", "label": "dup"})
    again = galene.stream_load(db, "t", b"9,z,2024-01-01\n", {"column_separator": ",", "label": "dup"})
    assert again["Status"] == "Label Already Exists"
    assert again["ExistingJobStatus"] == "FINISHED"
    assert f"Label [dup] has already been used, relate to txn [{first['TxnId']}]" in again["Message"]
    assert galene.query("SELECT count(*) FROM t", db)[0][0] == 1


def test_filtered_rows_fail_load_with_error_url_and_leave_nothing(galene, db):
    _table(galene, db, DUP)
    before_files = galene.data_files()
    body = b"1,a,2024-01-01\nxx,b,2024-01-02\n3,c,not-a-date\n4,toolongvalue,2024-01-04\n"
    reply = galene.stream_load(
        db, "t", body, {"column_separator": ",", "strict_mode": "true", "label": "bad1"}
    )
    assert reply["Status"] == "Fail"
    assert "[DATA_QUALITY_ERROR]too many filtered rows" in reply["Message"]
    assert reply["NumberLoadedRows"] == 0
    assert reply["NumberFilteredRows"] == 3
    page = httpx.get(reply["ErrorURL"]).text
    assert "xx" in page and "not-a-date" in page and "toolongvalue" in page
    assert page.count("Reason:") == 3
    assert galene.query("SELECT count(*) FROM t", db)[0][0] == 0
    # Nothing partial stays on disk once garbage collection runs.
    r = httpx.post(f"http://127.0.0.1:{galene.http_port}/api/_gc?grace_seconds=0", headers=auth_header())
    assert r.status_code == 200
    assert galene.data_files() - before_files == set()
    # An aborted label may be reused.
    ok = galene.stream_load(db, "t", b"1,a,2024-01-01\n", {"column_separator": ",", "label": "bad1"})
    assert ok["Status"] == "Success"


def test_max_filter_ratio_allows_partial_load(galene, db):
    _table(galene, db, DUP)
    body = b"1,a,2024-01-01\nxx,b,2024-01-02\n3,c,2024-01-03\n4,d,2024-01-04\n"
    reply = galene.stream_load(
        db, "t", body, {"column_separator": ",", "strict_mode": "true", "max_filter_ratio": "0.3"}
    )
    assert reply["Status"] == "Success", reply
    assert (reply["NumberTotalRows"], reply["NumberLoadedRows"], reply["NumberFilteredRows"]) == (4, 3, 1)
    assert "ErrorURL" in reply
    assert galene.query("SELECT count(*) FROM t", db)[0][0] == 3


def test_not_null_and_wrong_column_count_are_filtered(galene, db):
    _table(galene, db, DUP)
    body = b"\\N,a,2024-01-01\n2,b\n3,c,2024-01-03,extra\n4,d,2024-01-04\n"
    reply = galene.stream_load(db, "t", body, {"column_separator": ",", "max_filter_ratio": "1"})
    assert reply["Status"] == "Success", reply
    assert reply["NumberLoadedRows"] == 1
    assert reply["NumberFilteredRows"] == 3
    assert galene.query("SELECT k FROM t", db) == [(4,)]


def test_json_formats(galene, db):
    _table(galene, db, DUP)
    by_line = b'{"k": 1, "v": "a", "d": "2024-01-01"}\n{"k": 2, "v": "b", "d": "2024-01-02"}\n'
    arr = json.dumps([{"k": 3, "v": "c", "d": "2024-01-03"}, {"k": 4, "V": "d"}]).encode()
    r1 = galene.stream_load(db, "t", by_line, {"format": "json"})
    r2 = galene.stream_load(db, "t", arr, {"format": "json", "strip_outer_array": "true"})
    assert r1["Status"] == "Success" and r2["Status"] == "Success", (r1, r2)
    rows = galene.query("SELECT k, v, d FROM t ORDER BY k", db)
    assert [(r[0], r[1]) for r in rows] == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    assert rows[3][2] is None




def test_json_values_get_the_same_text_by_stream_load_and_by_the_s3_table_function(galene, db, tmp_path):
    """One JSON value → text rule: the same JSON gives a STRING column the same text whether it is
    stream loaded or read by S3() (the path of INSERT … SELECT FROM S3() and streaming jobs)."""
    _table(galene, db, "(k INT, v STRING) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    reply = galene.stream_load(db, "t", JSON_VALUES, {"format": "json"})
    assert reply["Status"] == "Success" and reply["NumberLoadedRows"] == 9, reply
    loaded = galene.query("SELECT k, v FROM t ORDER BY k", db)
    path = tmp_path / "values.json"
    path.write_bytes(JSON_VALUES)
    source = f'"uri"="file://{path}", "format"="json"'
    read = galene.query(f"SELECT CAST(k AS INT), v FROM S3({source}) ORDER BY CAST(k AS INT)", db)
    assert [tuple(r) for r in read] == [tuple(r) for r in loaded]
    # Numbers keep their digits, nested values their JSON text.
    assert [v for _, v in loaded] == [
        '{"a":1,"b":[1,2.50,{"c":null}],"d":"\u00e9"}',
        '[1,"x",true,0.1]',
        "1.5",
        "123456789012345678901234567890",
        "12345.678901234567890123",
        "100000",
        "h\u00e9llo \u2603 \U0001d11e",
        None,
        "false",
    ]
    galene.query("CREATE TABLE t2 LIKE t", db)
    galene.query(f"INSERT INTO t2 SELECT CAST(k AS INT), v FROM S3({source})", db)
    assert galene.query("SELECT k, v FROM t2 ORDER BY k", db) == loaded


@pytest.mark.parametrize(
    "body,headers,fragment",
    [
        (b'{"k": 1, "v": ', {"format": "json"}, ""),
        (b"1,a,2024-01-01\n", {"column_separator": ",", "strict_mode": "maybe"}, "strict"),
        (b"1,a,2024-01-01\n", {"column_separator": ",", "max_filter_ratio": "abc"}, "max_filter_ratio"),
        (b"1,a,2024-01-01\n", {"format": "xml"}, "format"),
        (b"1,\xff\xfe,2024-01-01\n", {"column_separator": ","}, ""),
    ],
    ids=["malformed-json", "bad-strict-mode", "bad-ratio", "unknown-format", "invalid-utf8"],
)
def test_bad_input_fails_cleanly(galene, db, body, headers, fragment):
    _table(galene, db, DUP)
    reply = galene.stream_load(db, "t", body, {**headers, "label": "bad_" + uuid.uuid4().hex[:6]})
    assert reply["Status"] == "Fail", reply
    assert reply["Message"] and fragment.lower() in reply["Message"].lower()
    assert galene.query("SELECT count(*) FROM t", db)[0][0] == 0


def test_body_over_streaming_load_max_mb_is_refused(tmp_path):
    from tests.support.node import GaleneProcess

    g = GaleneProcess(tmp_path / "d", role="start", conf={"streaming_load_max_mb": "1"})
    g.start()
    try:
        g.query("CREATE DATABASE d1")
        g.query(f"CREATE TABLE t {DUP}", "d1")
        body = b"1,aaaaaaa,2024-01-01\n" * 60000  # ~1.3 MB
        reply = g.stream_load("d1", "t", body, {"column_separator": ","})
        assert reply["Status"] == "Fail"
        assert "exceeds the limit" in reply["Message"]
        assert g.query("SELECT count(*) FROM t", "d1")[0][0] == 0
    finally:
        g.stop()


def test_unknown_table_and_database(galene, db):
    r = httpx.put(
        f"http://127.0.0.1:{galene.http_port}/api/{db}/nope/_stream_load", headers=auth_header(), content=b""
    )
    assert r.status_code == 200 and r.json()["Status"] == "Fail"
    assert "Unknown table" in r.json()["Message"]
    r = httpx.put(
        f"http://127.0.0.1:{galene.http_port}/api/nodb/t/_stream_load", headers=auth_header(), content=b""
    )
    assert "Unknown database" in r.json()["Message"]


def test_unique_and_aggregate_semantics(galene, db):
    galene.query(
        "CREATE TABLE u (k INT, v VARCHAR(10), n INT) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2", db
    )
    galene.query(
        "CREATE TABLE a (k INT, s BIGINT SUM, mx INT MAX, mn INT MIN, r VARCHAR(5) REPLACE, "
        "rn VARCHAR(5) REPLACE_IF_NOT_NULL) AGGREGATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
        db,
    )
    for body in (b"1,a,1\n2,b,2\n1,c,3\n", b"2,d,4\n3,e,5\n"):
        assert galene.stream_load(db, "u", body, {"column_separator": ","})["Status"] == "Success"
    assert galene.query("SELECT k, v, n FROM u ORDER BY k", db) == [(1, "c", 3), (2, "d", 4), (3, "e", 5)]
    for body in (b"1,10,5,5,x,p\n1,1,7,1,y,\\N\n", b"1,100,6,3,z,\\N\n2,1,1,1,w,q\n"):
        assert galene.stream_load(db, "a", body, {"column_separator": ","})["Status"] == "Success"
    assert galene.query("SELECT k, s, mx, mn, r, rn FROM a ORDER BY k", db) == [
        (1, 111, 7, 1, "z", "p"),
        (2, 1, 1, 1, "w", "q"),
    ]


def test_multi_block_body_is_all_or_nothing(galene, db):
    """A body larger than one parse block is parsed, routed and written block by block while it
    arrives; the filter ratio still decides over all rows, and a failed load leaves no file."""
    _table(galene, db, DUP)
    rows = 2_600_000  # ~40 MB of CSV: more than one 32 MB block
    good = b"".join(b"%d,v,2024-01-01\n" % i for i in range(rows))
    bad_at = rows // 2
    body = good.replace(b"\n%d,v,2024-01-01\n" % bad_at, b"\nnot_a_number,v,2024-01-01\n", 1)
    assert len(body) > 32 << 20
    before = galene.data_files()

    failed = galene.stream_load(db, "t", body, {"column_separator": ",", "strict_mode": "true"})
    assert failed["Status"] == "Fail" and "too many filtered rows" in failed["Message"]
    assert failed["NumberFilteredRows"] == 1 and failed["NumberLoadedRows"] == 0
    assert galene.query("SELECT count(*) FROM t", db)[0][0] == 0
    assert galene.data_files() - before == set()

    ok = galene.stream_load(
        db, "t", body, {"column_separator": ",", "strict_mode": "true", "max_filter_ratio": "0.1"}
    )
    assert ok["Status"] == "Success", ok
    assert (ok["NumberTotalRows"], ok["NumberLoadedRows"], ok["NumberFilteredRows"]) == (rows, rows - 1, 1)
    assert galene.query("SELECT count(*), count(DISTINCT k), sum(k) FROM t", db) == [
        (rows - 1, rows - 1, rows * (rows - 1) // 2 - bad_at)
    ]
