"""Group commit through a real Galene: modes, reply fields, table properties, client-label
retries, one rowset per tablet per merged transaction. Checked through the MySQL endpoint,
the load replies and the data files on disk."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter

import httpx

from tests.support.client import auth_header

CSV = {"column_separator": ","}


def _create(galene, db, props: dict[str, str], buckets: int = 3, name: str = "t") -> str:
    plist = ", ".join(f'"{k}"="{v}"' for k, v in props.items())
    galene.query(
        f"CREATE TABLE {name} (k INT NOT NULL, v VARCHAR(16)) DUPLICATE KEY(k) "
        f"DISTRIBUTED BY HASH(k) BUCKETS {buckets} PROPERTIES ({plist})",
        db,
    )
    return name


def _rows(n: int, start: int = 0) -> bytes:
    return "".join(f"{i},v{i}\n" for i in range(start, start + n)).encode()


def _count(galene, db, table: str = "t") -> int:
    return galene.query(f"SELECT COUNT(*) FROM {table}", db)[0][0]


def _wait_count(galene, db, expected: int, table: str = "t", timeout: float = 60) -> int:
    """Poll until the table holds `expected` rows (or the timeout passes); returns the last count."""
    deadline = time.monotonic() + timeout
    n = _count(galene, db, table)
    while n != expected and time.monotonic() < deadline:
        time.sleep(0.2)
        n = _count(galene, db, table)
    return n


def _table_dirs(galene) -> set[str]:
    root = galene.data_dir / "storage" / "data"
    return {str(p) for p in root.glob("*/*") if p.is_dir()} if root.exists() else set()


def _parquet_per_tablet(table_dir: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for dirpath, _, files in os.walk(table_dir):
        n = sum(1 for f in files if f.endswith(".parquet"))
        if n:
            out[dirpath] = n
    return out


def test_invalid_mode_is_refused_with_doris_text(galene, db):
    _create(galene, db, {})
    # The BE's text (a load sent to it directly)...
    reply = galene.stream_load(db, "t", _rows(2), {**CSV, "group_commit": "fast_mode"}, via_fe=False)
    assert reply["Status"] == "Fail"
    assert "group_commit can only be [async_mode, sync_mode, off_mode]" in reply["Message"]
    # ... and the FE's (LoadAction), instead of the 307.
    r = httpx.put(
        f"http://127.0.0.1:{galene.http_port}/api/{db}/t/_stream_load",
        content=b"",
        headers={**auth_header(), "Expect": "100-continue", "group_commit": "fast_mode"},
    )
    assert r.status_code == 200 and r.json()["msg"] == (
        "Header `group_commit` can only be `sync_mode`, `async_mode` or `off_mode`."
    )
    assert _count(galene, db) == 0


def test_sync_mode_is_visible_when_the_reply_arrives(galene, db):
    _create(galene, db, {"group_commit_interval_ms": "300"})
    reply = galene.stream_load(db, "t", _rows(5), {**CSV, "group_commit": "SYNC_MODE"})
    assert reply["Status"] == "Success", reply
    assert reply["GroupCommit"] is True
    assert reply["Label"].startswith("group_commit_")
    assert reply["NumberTotalRows"] == 5 and reply["NumberLoadedRows"] == 5
    assert _count(galene, db) == 5  # no waiting: sync_mode answers after the merged commit
    get = httpx.get(
        f"http://127.0.0.1:{galene.http_port}/api/{db}/get_load_state",
        params={"label": reply["Label"]},
        headers=auth_header(),
    )
    assert get.json()["data"] == "VISIBLE"


def test_reply_fields_follow_doris_group_commit_form(galene, db):
    _create(galene, db, {"group_commit_interval_ms": "300"})
    reply = galene.stream_load(db, "t", _rows(3), {**CSV, "group_commit": "async_mode"})
    assert list(reply) == [
        "TxnId",
        "Label",
        "Comment",
        "GroupCommit",
        "Status",
        "Message",
        "NumberTotalRows",
        "NumberLoadedRows",
        "NumberFilteredRows",
        "NumberUnselectedRows",
        "LoadBytes",
        "LoadTimeMs",
        "StreamLoadPutTimeMs",
        "ReadDataTimeMs",
        "WriteDataTimeMs",
    ]
    assert reply["TxnId"] > 0 and reply["Status"] == "Success" and reply["Message"] == "OK"
    # A client label (Galene accepts it) is reported next to the group's label.
    labelled = galene.stream_load(
        db, "t", _rows(3, 10), {**CSV, "group_commit": "async_mode", "label": "mine_1"}
    )
    assert labelled["Label"].startswith("group_commit_") and labelled["ClientLabel"] == "mine_1"
    assert "TwoPhaseCommit" not in labelled and "BeginTxnTimeMs" not in labelled
    assert "CommitAndPublishTimeMs" not in labelled


def test_async_mode_becomes_visible_after_the_interval(galene, db):
    _create(galene, db, {"group_commit_interval_ms": "500"})
    reply = galene.stream_load(db, "t", _rows(7), {**CSV, "group_commit": "async_mode"})
    assert reply["Status"] == "Success" and reply["GroupCommit"] is True
    assert _wait_count(galene, db, 7) == 7
    assert sorted(galene.query("SELECT k FROM t", db)) == [(i,) for i in range(7)]


def test_table_property_mode_and_alter_table_interval(galene, db):
    # An interval of an hour: only the ALTER below can make this load visible in time.
    _create(galene, db, {"group_commit_mode": "async_mode", "group_commit_interval_ms": "3600000"})
    galene.query('ALTER TABLE t SET ("group_commit_interval_ms"="300")', db)
    assert '"group_commit_interval_ms" = "300"' in galene.query("SHOW CREATE TABLE t", db)[0][1]
    time.sleep(1.5)  # the BE caches table properties for one second
    reply = galene.stream_load(db, "t", _rows(4), CSV)  # no group_commit header: the property decides
    assert reply["GroupCommit"] is True and reply["Status"] == "Success", reply
    assert _wait_count(galene, db, 4) == 4
    # The header wins over the table property.
    off = galene.stream_load(db, "t", _rows(2, 100), {**CSV, "group_commit": "off_mode"})
    assert "GroupCommit" not in off and off["TwoPhaseCommit"] == "false" and off["Status"] == "Success"
    assert _count(galene, db) == 6


def test_filtered_rows_and_error_url_with_group_commit(galene, db):
    _create(galene, db, {"group_commit_interval_ms": "300"})
    body = b"1,a\nx,b\n3,c\ny,d\n"
    failed = galene.stream_load(db, "t", body, {**CSV, "group_commit": "sync_mode", "strict_mode": "true"})
    assert failed["Status"] == "Fail" and "too many filtered rows" in failed["Message"]
    assert failed["NumberLoadedRows"] == 0 and "ErrorURL" in failed
    ok = galene.stream_load(
        db, "t", body, {**CSV, "group_commit": "sync_mode", "strict_mode": "true", "max_filter_ratio": "0.5"}
    )
    assert ok["Status"] == "Success" and ok["NumberLoadedRows"] == 2 and ok["NumberFilteredRows"] == 2
    assert sorted(galene.query("SELECT k FROM t", db)) == [(1,), (3,)]


def test_retried_label_is_loaded_once_and_the_retry_says_so(galene, db):
    _create(galene, db, {"group_commit_interval_ms": "1000"})
    h = {**CSV, "group_commit": "async_mode", "label": "client_batch_7"}
    first = galene.stream_load(db, "t", _rows(5), h)
    assert first["Status"] == "Success" and first["ClientLabel"] == "client_batch_7"
    retry = galene.stream_load(db, "t", _rows(5), h)
    assert retry["Status"] == "Label Already Exists"
    assert retry["ExistingJobStatus"] in ("RUNNING", "FINISHED")
    assert f"group commit txn [{first['TxnId']}]" in retry["Message"]
    assert retry["NumberLoadedRows"] == 0
    assert _wait_count(galene, db, 5) == 5
    late = galene.stream_load(db, "t", _rows(5), {**h, "group_commit": "sync_mode"})
    assert late["Status"] == "Label Already Exists" and late["ExistingJobStatus"] == "FINISHED"
    assert "already loaded by group commit txn" in late["Message"]
    # The label is an ordinary label for the FE now: off_mode and get_load_state know it.
    off = galene.stream_load(db, "t", _rows(5), {**CSV, "label": "client_batch_7"})
    assert off["Status"] == "Label Already Exists" and off["ExistingJobStatus"] == "FINISHED"
    state = httpx.get(
        f"http://127.0.0.1:{galene.http_port}/api/{db}/get_load_state",
        params={"label": "client_batch_7"},
        headers=auth_header(),
    ).json()["data"]
    assert state == "VISIBLE"
    assert _count(galene, db) == 5


def test_concurrent_same_label_loads_once(galene, db):
    _create(galene, db, {"group_commit_interval_ms": "500"})
    replies: list[dict] = []

    def send():
        replies.append(
            galene.stream_load(
                db, "t", _rows(3), {**CSV, "group_commit": "sync_mode", "label": "dup"}, via_fe=False
            )
        )

    threads = [threading.Thread(target=send) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    statuses = Counter(r["Status"] for r in replies)
    assert statuses == {"Success": 1, "Label Already Exists": 5}, replies
    assert _count(galene, db) == 3


def test_one_rowset_per_tablet_per_merged_transaction(galene, db):
    before = _table_dirs(galene)
    # A long interval so that the loads below share a group (up to two if one straddles it).
    _create(galene, db, {"group_commit_interval_ms": "4000"}, buckets=3)
    replies = [
        galene.stream_load(db, "t", _rows(20, i * 20), {**CSV, "group_commit": "async_mode"}, via_fe=False)
        for i in range(12)
    ]
    assert all(r["Status"] == "Success" for r in replies), replies
    groups = {r["Label"] for r in replies}
    assert len(groups) <= 2
    assert _wait_count(galene, db, 240) == 240
    new_dirs = _table_dirs(galene) - before
    assert len(new_dirs) == 1
    per_tablet = _parquet_per_tablet(new_dirs.pop())
    assert len(per_tablet) == 3  # 240 distinct keys reach all 3 buckets
    # One rowset (one Parquet file) per tablet per merged transaction, not one per load.
    assert all(n <= len(groups) for n in per_tablet.values()), per_tablet
    assert sum(per_tablet.values()) <= 3 * len(groups) < len(replies)


def test_sync_loads_from_many_clients_share_merged_transactions(galene, db):
    before = _table_dirs(galene)
    _create(galene, db, {"group_commit_interval_ms": "1500"}, buckets=2)
    replies: list[dict] = []
    lock = threading.Lock()

    def send(i: int):
        r = galene.stream_load(db, "t", _rows(10, i * 10), {**CSV, "group_commit": "sync_mode"}, via_fe=False)
        with lock:
            replies.append(r)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r["Status"] == "Success" for r in replies), replies
    txns = {r["TxnId"] for r in replies}
    assert len(txns) < len(replies)
    assert _count(galene, db) == 160
    per_tablet = _parquet_per_tablet((_table_dirs(galene) - before).pop())
    assert sum(per_tablet.values()) <= 2 * len(txns)


def test_group_commit_load_that_trickles_past_its_timeout_fails_and_loads_nothing(galene, db):
    """The load's `timeout` bounds every wait of a group-commit load (shared deadline timers)."""
    import json
    import socket

    _create(galene, db, {"group_commit_interval_ms": "300"})
    head = (
        f"PUT /api/{db}/t/_stream_load HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: {auth_header()['Authorization']}\r\n"
        "group_commit: async_mode\r\ncolumn_separator: ,\r\ntimeout: 2\r\n"
        "Content-Length: 100000\r\n\r\n"
    ).encode()
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", galene.be_http_port)) as sock:
        sock.sendall(head)
        sock.settimeout(0.25)
        raw = b""
        for i in range(120):  # trickle rows until the BE answers (it must, after ~2 s)
            try:
                sock.sendall(f"{i},x\n".encode())
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if not chunk:
                break
            raw += chunk
            if b"\r\n\r\n" in raw and raw.rstrip().endswith(b"}"):
                break
    took = time.monotonic() - t0
    assert raw.startswith(b"HTTP/1.1 200"), raw[:200]
    reply = json.loads(raw.partition(b"\r\n\r\n")[2])
    assert reply["Status"] == "Fail" and reply["GroupCommit"] is True
    assert "[TIMEOUT]group commit load timed out while reading the body" in reply["Message"], reply
    assert 2 <= took < 10
    time.sleep(0.8)  # a group interval: nothing of it may become visible
    assert _count(galene, db) == 0


def test_clock_defaults_are_each_loads_own_time_with_identical_headers(galene, db):
    """Headers are read once per distinct set (cached); the load's clock is not."""
    galene.query(
        "CREATE TABLE clock (k INT NOT NULL, ts DATETIME(3) DEFAULT CURRENT_TIMESTAMP(3)) "
        'DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ("group_commit_interval_ms"="200")',
        db,
    )
    for mode in ("off_mode", "async_mode"):
        headers = {**CSV, "columns": "k", "group_commit": mode}
        base = 100 if mode == "off_mode" else 200
        for i in range(2):
            reply = galene.stream_load(db, "clock", f"{base + i}\n".encode(), headers)
            assert reply["Status"] == "Success", reply
            time.sleep(1.2)
    assert _wait_count(galene, db, 4, table="clock") == 4
    ts = dict(galene.query("SELECT k, ts FROM clock", db))
    for base in (100, 200):
        first, second = ts[base], ts[base + 1]
        assert first is not None and second is not None
        assert (second - first).total_seconds() >= 1.0, (first, second)
