"""Replicated group-commit WAL (`replication_num` = 3 on 3 BEs; be/wal_replica.py).

One `galene fe` and three `galene be`. Async group-commit loads are sent straight to BE 0,
which owns their groups and copies each WAL record to the two others:

* right after the cluster starts (the FE's first heartbeats do not know every BE's HTTP port
  yet), the first loads' records reach both peers (R was capped at 1 then: one copy);
* one peer stopped (SIGSTOP): loads still succeed with 2 of 3 copies, the stopped peer is
  dropped from the group's set after its deadline and never parks a load;
* both peers stopped: loads fail within their deadline with Doris' text
  `failed to write enough replicas 1/3 for table t due to connection errors: …`, and the
  rows of those failed loads never become visible;
* the owner SIGKILLed and its data directory deleted while its group is open: the FE has a
  holder of a copy replay and commit the group under its label; every acknowledged row is
  visible exactly once, and the holders drop their copies afterwards;
* an owner SIGKILLed and restarted with its WAL replays its group while a holder may take it
  over: loaded once;
* an owner the FE cannot reach while clients and peers still do (its heartbeats parked): the
  FE stops granting it the write lease, a holder takes its group over once the lease has
  expired, and the owner answers no load from then on until it holds a new lease: every
  acknowledged row is visible exactly once (a zombie owner never acknowledges rows the
  takeover does not commit).
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time

import httpx
import pytest

from tests.support.client import auth_header, metric_value
from tests.support.cluster import GaleneCluster
from tests.support.node import GaleneProcess

pytestmark = pytest.mark.slow

GC = {"column_separator": ",", "group_commit": "async_mode", "timeout": "20"}
REPLICA_S = 2  # be_wal_replica_timeout_second


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    d = tmp_path_factory.mktemp("wal-replication")
    c = GaleneCluster(
        d,
        n_backends=3,
        fe_conf={"max_backend_heartbeat_failure_times": "2"},
        be_conf={"be_wal_replica_timeout_second": str(REPLICA_S), "enable_debug_points": "true"},
    ).start()
    c.fe.query("CREATE DATABASE IF NOT EXISTS r")
    # "f": the first test's table, whose group stays open long enough for both peers' copies to
    # land (a committed group's owner stops sending: a peer still behind then never gets one).
    for name, interval in (("f", 15000), ("t", 1000), ("k", 600000), ("z", 600000)):
        c.fe.query(
            f"CREATE TABLE IF NOT EXISTS r.{name} (id BIGINT, v VARCHAR(16)) DUPLICATE KEY(id) "
            f'DISTRIBUTED BY HASH(id) BUCKETS 2 PROPERTIES ("replication_num" = "3", '
            f'"group_commit_interval_ms" = "{interval}")'
        )
    # No wait here: the first test loads right after the cluster started.
    yield c
    c.stop()


def _load(be: GaleneProcess, table: str, body: bytes, headers: dict | None = None) -> tuple[dict, float]:
    t0 = time.monotonic()
    r = httpx.put(
        f"http://127.0.0.1:{be.be_http_port}/api/r/{table}/_stream_load",
        content=body,
        headers={**auth_header(), **GC, **(headers or {})},
        timeout=60,
    )
    r.raise_for_status()
    return r.json(), time.monotonic() - t0


def _counts(c: GaleneCluster, table: str) -> dict[int, int]:
    return dict(c.fe.query(f"SELECT id, COUNT(*) FROM r.{table} GROUP BY id"))


def _wait_rows(c: GaleneCluster, table: str, ids: set[int], timeout: float = 90) -> dict[int, int]:
    deadline = time.monotonic() + timeout
    counts = _counts(c, table)
    while time.monotonic() < deadline and not ids <= set(counts):
        time.sleep(0.5)
        counts = _counts(c, table)
    return counts


def _parallel(fn, items) -> list:
    out: list = [None] * len(items)

    def run(i, item):
        out[i] = fn(item)

    threads = [threading.Thread(target=run, args=(i, it)) for i, it in enumerate(items)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return out


def _copies(be: GaleneProcess) -> list[str]:
    """The WAL copies of other BEs' groups this BE holds."""
    return [
        os.path.join(d, f)
        for d, _, files in os.walk(be.data_dir)
        if "wal_replica" in d
        for f in files
        if "_group_commit_" in f
    ]


def _wait_alive(c: GaleneCluster, n: int) -> None:
    c.wait_backends(lambda rows: sum(r["Alive"] == "true" for r in rows) == n, timeout=60)


def test_copied_to_both_peers_right_after_the_cluster_starts(env):
    """The cluster has just started (the FE's first heartbeats may not know every BE's HTTP
    port yet): the first loads' records still reach both peers, none is acknowledged with
    fewer copies than replication_num asks for (they were: R was capped at 1 then)."""
    c = env
    answers = _parallel(lambda i: _load(c.bes[0], "f", f"{i},first\n".encode()), [-1, -2, -3])
    assert all(reply["Status"] == "Success" for reply, _ in answers), answers

    def copied(be: GaleneProcess) -> bool:
        metrics = httpx.get(f"http://127.0.0.1:{be.be_http_port}/metrics", timeout=10).text
        return (metric_value(metrics, "galene_be_wal_replica_bytes_total") or 0) > 0

    # A load is answered once one peer has its records (a quorum of 2 of 3): the other peer's
    # copy may still be on its way then (the CI box answered before it landed).
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(copied(be) for be in c.bes[1:]):
        time.sleep(0.2)
    for be in c.bes[1:]:
        assert copied(be), be.be_http_port
    counts = _wait_rows(c, "f", {-1, -2, -3})
    assert all(counts.get(i) == 1 for i in (-1, -2, -3)), counts


def test_one_peer_stopped_loads_succeed_with_two_copies(env):
    c = env
    owner, stopped = c.bes[0], c.bes[2]
    ids = list(range(1, 21))
    stopped.signal_tree(signal.SIGSTOP)
    try:
        answers = _parallel(lambda i: _load(owner, "t", f"{i},one\n".encode()), ids)
        more = [_load(owner, "t", f"{i},one\n".encode()) for i in range(21, 26)]
    finally:
        stopped.signal_tree(signal.SIGCONT)
    for reply, elapsed in answers + more:
        assert reply["Status"] == "Success", reply
        assert elapsed < int(GC["timeout"]), elapsed  # never parked by the stopped peer
    ids += list(range(21, 26))
    counts = _wait_rows(c, "t", set(ids))
    assert all(counts.get(i) == 1 for i in ids), counts
    _wait_alive(c, 3)


def test_a_load_over_a_mebibyte_is_replicated(env):
    """One record of several MiB goes to the peers in one call (aiohttp's 1 MiB body cap is
    not the holder's)."""
    c = env
    body = "".join(f"{i},big\n" for i in range(100_000, 300_000)).encode()
    assert len(body) > 2 << 20
    reply, _ = _load(c.bes[0], "t", body)
    assert reply["Status"] == "Success" and reply["NumberLoadedRows"] == 200_000, reply
    deadline = time.monotonic() + 60
    n = 0
    while time.monotonic() < deadline and n < 200_000:
        n = c.fe.query("SELECT COUNT(*) FROM r.t WHERE id >= 100000")[0][0]
        time.sleep(0.5)
    assert n == 200_000


def test_two_peers_stopped_loads_fail_with_doris_text(env):
    c = env
    owner = c.bes[0]
    time.sleep(1.5)  # the group of the previous test is committed: a new one picks its peers
    for be in c.bes[1:]:
        be.signal_tree(signal.SIGSTOP)
    try:
        answers = _parallel(lambda i: _load(owner, "t", f"{i},two\n".encode()), [101, 102, 103])
    finally:
        for be in c.bes[1:]:
            be.signal_tree(signal.SIGCONT)
    peers = {f"127.0.0.1:{be.be_http_port}" for be in c.bes[1:]}
    for reply, elapsed in answers:
        assert reply["Status"] == "Fail", reply
        msg = reply["Message"]
        assert msg.startswith("failed to write enough replicas 1/3 for table t due to connection errors: "), (
            msg
        )
        assert any(f"{p}: " in msg for p in peers), msg
        assert elapsed < int(GC["timeout"]), elapsed
    _wait_alive(c, 3)
    time.sleep(2)  # their group (1 s interval) is committed by now
    reply, _ = _load(owner, "t", b"104,after\n")
    assert reply["Status"] == "Success", reply
    counts = _wait_rows(c, "t", {104})
    assert not {101, 102, 103} & set(counts), counts  # failed loads are not loaded


def _debug_point(be: GaleneProcess, action: str, name: str, **query) -> None:
    r = httpx.post(
        f"http://127.0.0.1:{be.be_http_port}/api/debug_point/{action}/{name}",
        params=query,
        headers=auth_header(),
        timeout=10,
    )
    assert r.json()["code"] == 0, r.text


def _alive(c: GaleneCluster, be: GaleneProcess) -> bool:
    row = c.backend(be)
    assert row is not None, "backend not listed"
    return row["Alive"] == "true"


def test_owner_cut_off_from_the_fe_acknowledges_nothing_the_takeover_misses(env):
    c = env
    owner = c.bes[0]
    acked: set[int] = set()
    failed: list[str] = []
    stop = threading.Event()
    back = threading.Event()  # the FE reaches the owner again
    acked_back: set[int] = set()
    next_id = iter(range(50_000, 60_000))

    def loader() -> None:
        while not stop.is_set():
            i = next(next_id)
            try:
                reply, _ = _load(owner, "z", f"{i},zombie\n".encode(), {"timeout": "5"})
            except httpx.HTTPError as e:
                failed.append(str(e))
                continue
            if reply["Status"] == "Success":
                acked.add(i)
                if back.is_set():
                    acked_back.add(i)
            else:
                failed.append(reply["Message"])
            time.sleep(0.02)

    threads = [threading.Thread(target=loader) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        time.sleep(2)
        _debug_point(owner, "add", "heartbeat.handler", timeout=120)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _alive(c, owner):
            time.sleep(0.3)
        assert not _alive(c, owner)
        # A holder takes the owner's open group over (600 s interval: only a takeover commits it).
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not _counts(c, "z"):
            time.sleep(0.3)
        assert _counts(c, "z"), "no takeover"
        time.sleep(4)  # the owner keeps getting loads after the takeover
        _debug_point(owner, "remove", "heartbeat.handler")
        _wait_alive(c, 3)
        time.sleep(1)
        back.set()
        time.sleep(4)  # and after it is back
    finally:
        stop.set()
        for t in threads:
            t.join(60)
        _debug_point(owner, "remove", "heartbeat.handler")
    assert acked
    # Cut off, the owner refused loads once its lease was over; back, it answers again.
    assert any("write lease" in m for m in failed), failed[-5:]
    assert acked_back, failed[-5:]
    # The owner's later groups (600 s interval) are committed by replaying its WAL at a restart.
    owner.kill()
    owner.start()
    counts = _wait_rows(c, "z", acked, timeout=90)
    missing = acked - set(counts)
    assert not missing, (len(missing), sorted(missing)[:20], failed[-5:])
    assert all(counts[i] == 1 for i in acked), {i: n for i, n in counts.items() if n != 1}
    _wait_alive(c, 3)


def test_owner_killed_and_its_data_deleted_loses_no_acknowledged_row(env):
    c = env
    owner = c.bes[0]
    # The table's group stays open (interval 600 s): every row below lives only in WALs.
    ids = list(range(1, 41))
    labelled = set(ids[::4])

    def one(i: int) -> tuple[dict, float]:
        headers = {"label": f"kl_{i}"} if i in labelled else {}
        return _load(owner, "k", f"{i},k\n".encode(), headers)

    answers = _parallel(one, ids)
    acked = {i for i, (reply, _) in zip(ids, answers, strict=True) if reply["Status"] == "Success"}
    assert acked == set(ids), [a for a, _ in answers if a["Status"] != "Success"]
    assert not _counts(c, "k")  # nothing committed yet
    assert all(_copies(be) for be in c.bes[1:]), "no WAL copy on the peers"

    owner.kill()
    shutil.rmtree(owner.data_dir, ignore_errors=True)
    counts = _wait_rows(c, "k", acked, timeout=120)
    assert set(counts) == acked and all(n == 1 for n in counts.values()), counts
    # A retry of a labelled load is answered, not loaded again, by a surviving BE.
    reply, _ = _load(c.bes[1], "k", b"1,again\n", {"label": "kl_1"})
    assert reply["Status"] == "Label Already Exists", reply
    # The holders learn the group is committed and drop their copies.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_copies(be) for be in c.bes[1:]):
        time.sleep(0.5)
    assert not any(_copies(be) for be in c.bes[1:])
    time.sleep(1)
    assert _counts(c, "k") == counts  # and nothing was loaded twice meanwhile


def test_owner_killed_and_restarted_with_its_wal_loads_once(env):
    """The owner comes back with its WAL (a new start time): it replays its group while a
    holder of a copy may take it over too; the group's label lets one of them load it."""
    c = env
    owner = c.bes[1]  # BE 0 is gone (previous test): a member that is down, dropped as a peer
    ids = list(range(1001, 1031))
    answers = _parallel(lambda i: _load(owner, "k", f"{i},re\n".encode()), ids)
    assert all(reply["Status"] == "Success" for reply, _ in answers), answers
    assert _copies(c.bes[2]), "no WAL copy on the live peer"
    owner.kill()
    owner.start()
    counts = _wait_rows(c, "k", set(ids), timeout=120)
    assert all(counts.get(i) == 1 for i in ids), {i: counts.get(i) for i in ids}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _copies(c.bes[2]):
        time.sleep(0.5)
    assert not _copies(c.bes[2])
    time.sleep(2)
    later = _counts(c, "k")
    assert all(later.get(i) == 1 for i in ids), later
