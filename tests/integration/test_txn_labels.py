"""Transactions and labels of Stream Load: get_load_state, two-phase commit, label retention,
and load timeouts that abort the transaction and remove its files.

Everything goes through real Galene processes (FE 8030-style API, BE 8040-style API, MySQL
endpoint); the timeout rules of the FE's transaction manager are also checked directly on a
`CatalogService` over a real journal, because the PRECOMMITTED timeout is an hour.
"""

from __future__ import annotations

import json
import socket
import time
import uuid

import httpx
import pytest

from tests.support.client import auth_header
from tests.support.node import GaleneProcess

DUP = "(k INT NOT NULL, v VARCHAR(16)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3"
ROWS = b"1,a\n2,b\n3,c\n"


def _table(galene, db, name: str = "t") -> str:
    galene.query(f"CREATE TABLE {name} {DUP}", db)
    return name


def _count(galene, db, table: str = "t") -> int:
    return galene.query(f"SELECT count(*) FROM {table}", db)[0][0]


def _load(galene, db, body=ROWS, via_fe=True, table="t", **headers) -> dict:
    return galene.stream_load(db, table, body, {"column_separator": ",", **headers}, via_fe=via_fe)


def _load_state(galene, db, label: str) -> dict:
    r = httpx.get(
        f"http://127.0.0.1:{galene.http_port}/api/{db}/get_load_state",
        params={"label": label},
        headers=auth_header(),
    )
    assert r.status_code == 200
    return r.json()


def _2pc(galene, path: str, headers: dict, port: int | None = None, auth: bool = True) -> httpx.Response:
    h = {**(auth_header() if auth else {}), **headers}
    return httpx.put(f"http://127.0.0.1:{port or galene.http_port}{path}", headers=h, content=b"")


# --- get_load_state -------------------------------------------------------------------


def test_get_load_state_reports_visible_aborted_and_unknown_in_doris_shape(galene, db):
    _table(galene, db)
    assert _load(galene, db, label="ok")["Status"] == "Success"
    bad = _load(galene, db, body=b"x,a\n", label="bad")
    assert bad["Status"] == "Fail"

    assert _load_state(galene, db, "ok") == {"msg": "success", "code": 0, "data": "VISIBLE", "count": 0}
    assert _load_state(galene, db, "bad")["data"] == "ABORTED"
    assert _load_state(galene, db, "never-used") == {
        "msg": "success",
        "code": 0,
        "data": "UNKNOWN",
        "count": 0,
    }


def test_get_load_state_needs_basic_auth(galene, db):
    r = httpx.get(f"http://127.0.0.1:{galene.http_port}/api/{db}/get_load_state", params={"label": "x"})
    assert r.status_code == 401
    assert r.json()["status"] == "FAILED"


# --- two-phase commit -------------------------------------------------------------------


def test_two_phase_commit_leaves_txn_precommitted_until_committed_by_txn_id(galene, db):
    _table(galene, db)
    reply = _load(galene, db, label="tp1", two_phase_commit="true")
    assert reply["Status"] == "Success"
    assert reply["TwoPhaseCommit"] == "true"
    assert reply["NumberLoadedRows"] == 3
    txn_id = reply["TxnId"]

    # Precommitted data is not visible, and the label is taken.
    assert _count(galene, db) == 0
    assert _load_state(galene, db, "tp1")["data"] == "PRECOMMITTED"
    again = _load(galene, db, label="tp1")
    assert again["Status"] == "Label Already Exists"
    assert again["ExistingJobStatus"] == "PRECOMMITTED"

    r = _2pc(galene, f"/api/{db}/t/_stream_load_2pc", {"txn_id": str(txn_id), "txn_operation": "commit"})
    assert r.status_code == 200
    assert r.json() == {"status": "Success", "msg": f"transaction [{txn_id}] commit successfully."}
    assert _count(galene, db) == 3
    assert _load_state(galene, db, "tp1")["data"] == "VISIBLE"

    # A second commit, or an abort, of a visible txn: Doris' texts.
    r = _2pc(galene, f"/api/{db}/_stream_load_2pc", {"txn_id": str(txn_id), "txn_operation": "commit"})
    assert r.json()["status"] == "ANALYSIS_ERROR"
    assert r.json()["msg"].endswith(f"transaction [{txn_id}] is already visible, not pre-committed.")
    r = _2pc(galene, f"/api/{db}/_stream_load_2pc", {"txn_id": str(txn_id), "txn_operation": "abort"})
    assert r.json()["msg"].endswith(f"transaction [{txn_id}] is already VISIBLE, could not abort.")
    assert _count(galene, db) == 3


def test_plain_load_reports_two_phase_commit_false(galene, db):
    _table(galene, db)
    reply = _load(galene, db, label="plain")
    assert reply["TwoPhaseCommit"] == "false"
    assert _count(galene, db) == 3


def test_two_phase_abort_by_label_on_be_deletes_files_and_frees_label(galene, db):
    _table(galene, db)
    before = galene.data_files()
    reply = _load(galene, db, label="tp-abort", two_phase_commit="true")
    assert reply["Status"] == "Success"
    written = galene.data_files() - before
    assert written, "a precommitted load has its files on disk"

    # Sent to the BE, by label, on the db-only path with a trailing slash.
    r = _2pc(
        galene,
        f"/api/{db}/_stream_load_2pc/",
        {"label": "tp-abort", "txn_operation": "abort"},
        port=galene.be_http_port,
    )
    assert r.status_code == 200
    assert r.json() == {"status": "Success", "msg": "label [tp-abort] abort successfully."}
    assert not (written & galene.data_files()), "aborting a precommitted txn deletes its files"
    assert _load_state(galene, db, "tp-abort")["data"] == "ABORTED"
    assert _count(galene, db) == 0

    # Commit after abort is refused with the abort reason; the label can be used again.
    r = _2pc(
        galene, f"/api/{db}/t/_stream_load_2pc", {"txn_id": str(reply["TxnId"]), "txn_operation": "commit"}
    )
    assert r.json()["status"] == "ANALYSIS_ERROR"
    assert f"transaction [{reply['TxnId']}] is already aborted, abort reason: User Abort" in r.json()["msg"]
    assert _load(galene, db, label="tp-abort")["Status"] == "Success"
    assert _count(galene, db) == 3


@pytest.mark.parametrize("side", ["fe", "be"])
def test_two_phase_request_errors_use_doris_texts(galene, db, side):
    _table(galene, db)
    port = galene.http_port if side == "fe" else galene.be_http_port
    path = f"/api/{db}/t/_stream_load_2pc"

    def call(headers, auth=True):
        r = _2pc(galene, path, headers, port=port, auth=auth)
        return r.status_code, (
            r.json() if r.headers.get("content-type", "").startswith("application/json") else None
        )

    assert call({"txn_operation": "commit"}) == (
        200,
        {"status": "FAILED", "msg": "No transaction id or label selected."},
    )
    assert call({"txn_id": "12"}) == (
        200,
        {"status": "FAILED", "msg": "No transaction operation('commit' or 'abort') selected."},
    )
    assert call({"txn_id": "12", "txn_operation": "publish"}) == (
        200,
        {"status": "INTERNAL_ERROR", "msg": "transaction operation should be 'commit' or 'abort'"},
    )
    status, body = call({"txn_id": "abc", "txn_operation": "commit"})
    assert body["status"] == "INTERNAL_ERROR" and body["msg"].startswith("convert txn_id [abc] failed")
    status, body = call({"txn_id": "987654321", "txn_operation": "commit"})
    assert body == {
        "status": "ANALYSIS_ERROR",
        "msg": "TStatus: errCode = 2, detailMessage = transaction [987654321] not found",
    }
    status, body = call({"label": "nope", "txn_operation": "abort"})
    assert body["msg"].endswith("running transaction not found, label=nope")

    status, body = call({"txn_id": "1", "txn_operation": "commit"}, auth=False)
    if side == "fe":
        assert status == 401 and body["status"] == "FAILED"
    else:
        assert status == 200 and body == {"status": "INTERNAL_ERROR", "msg": "no valid Basic authorization"}


def test_two_phase_commit_header_names_in_any_case(galene, db):
    _table(galene, db)
    reply = _load(galene, db, Label="tp-case", Two_Phase_Commit="TRUE")
    assert reply["TwoPhaseCommit"] == "true" and reply["Label"] == "tp-case"
    r = _2pc(galene, f"/api/{db}/t/_stream_load_2pc", {"LABEL": "tp-case", "Txn_Operation": "commit"})
    assert r.json() == {"status": "Success", "msg": "label [tp-case] commit successfully."}
    assert _count(galene, db) == 3


# --- timeouts ---------------------------------------------------------------------------


def _read_reply(sock: socket.socket, deadline: float) -> bytes:
    """Read one HTTP response (headers + Content-Length body) or fail at the deadline."""
    data = b""
    while time.monotonic() < deadline:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        if not chunk:
            break
        data += chunk
        head, sep, body = data.partition(b"\r\n\r\n")
        if sep:
            lengths = [ln for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length:")]
            if lengths and len(body) >= int(lengths[0].split(b":")[1]):
                return data
    return data


def test_body_trickling_past_timeout_fails_and_leaves_nothing(galene, db):
    """A client that sends slower than the load's `timeout`: Fail with a timeout message,
    the txn is aborted, nothing is visible and no file is left."""
    _table(galene, db)
    before = galene.data_files()
    head = (
        f"PUT /api/{db}/t/_stream_load HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: {auth_header()['Authorization']}\r\n"
        "label: trickle\r\ncolumn_separator: ,\r\ntimeout: 2\r\n"
        "Content-Length: 100000\r\n\r\n"
    ).encode()
    sock = socket.create_connection(("127.0.0.1", galene.be_http_port))
    try:
        sock.sendall(head)
        # While the body is still arriving the txn is running.
        state = None
        for i in range(12):
            sock.sendall(f"{i},x\n".encode())
            time.sleep(0.25)
            if state is None:
                state = _load_state(galene, db, "trickle")["data"]
        assert state == "PREPARE"
        raw = _read_reply(sock, time.monotonic() + 30)  # timeout 2 s + generous margin
    finally:
        sock.close()
    assert raw.startswith(b"HTTP/1.1 200"), raw[:200]
    reply = json.loads(raw.partition(b"\r\n\r\n")[2])
    assert reply["Status"] == "Fail"
    assert "TIMEOUT" in reply["Message"] and "timed out" in reply["Message"]
    assert reply["NumberLoadedRows"] == 0
    assert _load_state(galene, db, "trickle")["data"] == "ABORTED"
    assert _count(galene, db) == 0
    assert galene.data_files() == before
    # The aborted label is free again.
    assert _load(galene, db, label="trickle")["Status"] == "Success"


def test_client_that_disconnects_mid_body_leaves_an_aborted_txn(galene, db):
    _table(galene, db)
    sock = socket.create_connection(("127.0.0.1", galene.be_http_port))
    sock.sendall(
        (
            f"PUT /api/{db}/t/_stream_load HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: {auth_header()['Authorization']}\r\n"
            "label: gone\r\ncolumn_separator: ,\r\nContent-Length: 100000\r\n\r\n1,a\n2,b\n"
        ).encode()
    )
    deadline = time.monotonic() + 30
    while _load_state(galene, db, "gone")["data"] != "PREPARE":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    sock.close()
    # The BE notices the lost client, aborts at once (not after the 600 s default timeout).
    while _load_state(galene, db, "gone")["data"] != "ABORTED":
        assert time.monotonic() < deadline, "the txn of a vanished client stayed open"
        time.sleep(0.2)
    assert _count(galene, db) == 0
    assert _load(galene, db, label="gone")["Status"] == "Success"


def test_timeout_header_must_be_a_positive_integer(galene, db):
    _table(galene, db)
    for value, text in (("abc", "Invalid timeout format: abc"), ("0", "Invalid timeout: 0")):
        reply = _load(galene, db, label=f"to-{value}", timeout=value)
        assert reply["Status"] == "Fail" and text in reply["Message"]
    assert _count(galene, db) == 0


# --- label retention (own process: label_keep_max_second is small) ----------------------


@pytest.fixture(scope="module")
def short_labels(tmp_path_factory):
    proc = GaleneProcess(
        tmp_path_factory.mktemp("galene-labels"),
        conf={"label_keep_max_second": "4", "gc_grace_seconds": "3600"},
    )
    proc.start()
    yield proc
    proc.stop()


def test_label_can_be_reused_after_label_keep_max_second(short_labels):
    g = short_labels
    db = "lbl_" + uuid.uuid4().hex[:8]
    g.query(f"CREATE DATABASE {db}")
    _table(g, db)
    first = _load(g, db, label="kept")
    assert first["Status"] == "Success"
    assert _load(g, db, label="kept")["Status"] == "Label Already Exists"
    assert _load_state(g, db, "kept")["data"] == "VISIBLE"

    # The FE's housekeeping (every 5 s) forgets finished labels older than 4 s.
    deadline = time.monotonic() + 60
    while _load_state(g, db, "kept")["data"] != "UNKNOWN":
        assert time.monotonic() < deadline, "label was never forgotten"
        time.sleep(0.5)

    again = _load(g, db, label="kept")
    assert again["Status"] == "Success"
    assert again["TxnId"] != first["TxnId"]
    assert _count(g, db) == 6


# --- the FE transaction manager's timeouts (real journal, no server) --------------------


@pytest.fixture
def catalog(tmp_path):
    from galene.fe.catalog_service import CatalogService
    from galene.meta.store import MetaStore

    store = MetaStore(tmp_path / "meta", sync_policy="NO_SYNC", roll_num=1000, node_name="fe_test")
    store.open()
    svc = CatalogService(
        store, label_keep_max_second=60, default_load_timeout_s=600, precommit_timeout_s=3600
    )
    svc.create_database("d")

    def build(db_id, alloc, now):
        from galene.catalog.model import Table

        return Table(id=alloc(), db_id=db_id, name="t", columns=[], create_time=now)

    svc.create_table("d", build)
    yield svc
    store.close()


def _rowset(tablet_id: int = 1):
    from galene.catalog.model import Rowset

    return Rowset(id="r1", tablet_id=tablet_id, partition_id=1, files=["data/x/y.parquet"], num_rows=3)


def test_fe_aborts_prepare_txn_past_its_timeout(catalog):
    txn, _ = catalog.txns.begin_txn("d", "t", "slow", timeout_s=5)
    assert catalog.txns.expire_txns(now=txn.begin_time + 4) == []
    assert catalog.txns.expire_txns(now=txn.begin_time + 6) == [txn.id]
    assert catalog.txns.txn_by_label("d", "slow").status == "ABORTED"
    assert catalog.txns.txn_by_label("d", "slow").reason == "timeout by txn manager"
    # A BE that finishes late cannot commit it.
    with pytest.raises(Exception, match="already aborted"):
        catalog.txns.commit_txn(txn.id, [_rowset()])


def test_precommitted_txn_times_out_by_precommit_timeout_not_load_timeout(catalog):
    """Doris: PRECOMMITTED txns expire `stream_load_default_precommit_timeout_second` after
    the precommit; the load `timeout` no longer applies. Their files are handed back."""
    txn, _ = catalog.txns.begin_txn("d", "t", "tp", timeout_s=5)
    catalog.txns.precommit_txn(txn.id, [_rowset()], num_rows=3)
    precommit_time = catalog.txns.txn_by_label("d", "tp").commit_time
    assert catalog.txns.expire_txns(now=precommit_time + 600) == []
    assert catalog.txns.abort_stale_precommitted(now=precommit_time + 600) == []
    assert catalog.txns.txn_by_label("d", "tp").status == "PRECOMMITTED"

    freed = catalog.txns.abort_stale_precommitted(now=precommit_time + 3601)
    assert [r.files for r in freed] == [["data/x/y.parquet"]]
    assert catalog.txns.txn_by_label("d", "tp").status == "ABORTED"
    assert "data/x/y.parquet" not in catalog.referenced_files()


def test_label_retention_forgets_finished_txns_only(catalog):
    done, _ = catalog.txns.begin_txn("d", "t", "done")
    catalog.txns.commit_txn(done.id, [_rowset()])
    catalog.txns.begin_txn("d", "t", "running", timeout_s=10_000)
    finish = catalog.txns.txn_by_label("d", "done").finish_time
    catalog.txns.expire_txns(now=finish + 61)
    assert catalog.txns.txn_by_label("d", "done") is None  # label free again
    assert catalog.txns.txn_by_label("d", "running").status == "PREPARE"
    again, _ = catalog.txns.begin_txn("d", "t", "done")
    assert again.id != done.id
