"""PREPARE txns whose coordinator BE cannot finish them do not hold their labels for days.

One `galene fe` + one `galene be` (`abort_txn_after_lost_heartbeat_time_second` = 3):

* a begin whose answer is lost (the FE's `txn.begin.answer` debug point parks it past the
  BE's `rpc_timeout_ms`): the load fails, the BE aborts the txn the FE began under the label,
  and a retry with the same label loads it once instead of getting `Label Already Exists`
  until the txn's timeout (3 days by default);
* the BE stopped (SIGSTOP) in the middle of a labelled load: once its heartbeats have failed
  for 3 s the FE aborts its PREPARE txn with Doris' reason `coordinate BE is down`; resumed,
  the BE's commit of it is refused, the load fails and nothing of it becomes visible, and the
  label is free for a retry.
"""

from __future__ import annotations

import signal
import threading
import time

import httpx
import pymysql
import pytest

from tests.support.client import auth_header
from tests.support.cluster import GaleneCluster
from tests.support.node import GaleneProcess

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = GaleneCluster(
        tmp_path_factory.mktemp("coordinator-txns"),
        n_backends=1,
        fe_conf={
            "enable_debug_points": "true",
            "abort_txn_after_lost_heartbeat_time_second": "3",
            "max_backend_heartbeat_failure_times": "2",
        },
        be_conf={"rpc_timeout_ms": "2000"},
    ).start()
    c.fe.query("CREATE DATABASE IF NOT EXISTS ct")
    c.fe.query(
        "CREATE TABLE IF NOT EXISTS ct.t (id INT, v VARCHAR(16)) DUPLICATE KEY(id) "
        "DISTRIBUTED BY HASH(id) BUCKETS 1"
    )
    yield c
    c.stop()


def _load(be: GaleneProcess, label: str, content, timeout: float = 60) -> dict:
    r = httpx.put(
        f"http://127.0.0.1:{be.be_http_port}/api/ct/t/_stream_load",
        content=content,
        headers={**auth_header(), "label": label, "column_separator": ","},
        timeout=timeout,
    )
    r.raise_for_status()
    return r.json()


def _txn(c: GaleneCluster, label: str) -> dict:
    """SHOW TRANSACTION's row for the label ({} while there is none)."""
    with c.fe.mysql() as conn, conn.cursor() as cur:
        try:
            cur.execute(f"SHOW TRANSACTION FROM ct WHERE label = '{label}'")
        except pymysql.err.OperationalError as e:
            assert "does not exist" in str(e), e
            return {}
        names = [d[0] for d in cur.description]
        return dict(zip(names, cur.fetchone(), strict=True))


def _rows(c: GaleneCluster, first: int, last: int) -> int:
    return c.fe.query(f"SELECT COUNT(*) FROM ct.t WHERE id BETWEEN {first} AND {last}")[0][0]


def test_a_begin_whose_answer_is_lost_does_not_hold_its_label(cluster):
    c = cluster
    be = c.bes[0]
    r = httpx.post(
        f"http://{c.fe.host}:{c.fe.http_port}/api/debug_point/add/txn.begin.answer",
        params={"timeout": 6, "execute": 1},
        headers=auth_header(),
        timeout=10,
    )
    assert r.json()["code"] == 0, r.text
    first = _load(be, "lost_begin", b"1,a\n")
    assert first["Status"] == "Fail", first
    deadline = time.monotonic() + 30
    answers = []
    while time.monotonic() < deadline:
        reply = _load(be, "lost_begin", b"1,a\n")
        answers.append(reply["Status"])
        if reply["Status"] == "Success":
            break
        assert reply["Status"] == "Label Already Exists", reply
        time.sleep(0.5)
    assert answers[-1] == "Success", answers
    assert _rows(c, 1, 1) == 1


def test_txns_of_a_be_down_past_the_limit_are_aborted(cluster):
    c = cluster
    be = c.bes[0]
    resume = threading.Event()

    def body():
        yield b"".join(f"{i},x\n".encode() for i in range(100, 200))
        resume.wait(120)
        yield b"".join(f"{i},x\n".encode() for i in range(200, 300))

    out: dict = {}
    loader = threading.Thread(target=lambda: out.setdefault("reply", _load(be, "down_load", body(), 180)))
    loader.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _txn(c, "down_load").get("TransactionStatus") != "PREPARE":
        time.sleep(0.2)
    be.signal_tree(signal.SIGSTOP)
    try:
        assert _txn(c, "down_load").get("TransactionStatus") == "PREPARE"
        deadline = time.monotonic() + 60
        txn = _txn(c, "down_load")
        while time.monotonic() < deadline and txn["TransactionStatus"] != "ABORTED":
            time.sleep(0.5)
            txn = _txn(c, "down_load")
        assert txn["TransactionStatus"] == "ABORTED", txn
        assert txn["Reason"] == "coordinate BE is down", txn
    finally:
        be.signal_tree(signal.SIGCONT)
        resume.set()
    loader.join(180)
    reply = out["reply"]
    assert reply["Status"] == "Fail", reply
    assert _rows(c, 100, 299) == 0
    # The label is free: a retry loads it once.
    c.wait_backends(lambda rows: rows[0]["Alive"] == "true", timeout=60)
    again = _load(be, "down_load", b"".join(f"{i},y\n".encode() for i in range(100, 300)))
    assert again["Status"] == "Success", again
    assert _rows(c, 100, 299) == 200
