"""A WAL replica that misses its deadline is dropped from the group's set and replaced
(`replication_num` = 3 on 4 BEs; be/wal_replica.py).

BE 0 owns a table's open group; its records go to two of the three other BEs. One of those
two is stopped (SIGSTOP): the next loads still succeed, the stopped peer is dropped after its
deadline and the third BE, which held nothing, is sent the group's records from the start.
Then the owner is SIGKILLed and its data directory deleted while the dropped peer is still
stopped (its copy is short): the replacement's copy is replayed, and every acknowledged row
is visible exactly once.
"""

from __future__ import annotations

import os
import shutil
import signal
import time

import pytest

from tests.integration.test_wal_replication import GC, _copies, _counts, _load, _parallel, _wait_rows
from tests.support.cluster import GaleneCluster

pytestmark = pytest.mark.slow


def _copy_bytes(be) -> int:
    return sum(os.path.getsize(p) for p in _copies(be))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = GaleneCluster(
        tmp_path_factory.mktemp("wal-replace"),
        n_backends=4,
        fe_conf={"max_backend_heartbeat_failure_times": "2"},
        be_conf={"be_wal_replica_timeout_second": "2"},
    ).start()
    c.fe.query("CREATE DATABASE IF NOT EXISTS r")
    c.fe.query(
        "CREATE TABLE IF NOT EXISTS r.k (id BIGINT, v VARCHAR(16)) DUPLICATE KEY(id) "
        'DISTRIBUTED BY HASH(id) BUCKETS 2 PROPERTIES ("replication_num" = "3", '
        '"group_commit_interval_ms" = "600000")'
    )
    time.sleep(3)  # every BE knows its peers
    yield c
    c.stop()


def test_a_stopped_replica_is_replaced_and_the_replacement_copy_is_complete(cluster):
    c = cluster
    owner = c.bes[0]
    first = list(range(1, 21))
    answers = _parallel(lambda i: _load(owner, "k", f"{i},a\n".encode()), first)
    assert all(reply["Status"] == "Success" for reply, _ in answers), answers
    holders = [be for be in c.bes[1:] if _copies(be)]
    spare = [be for be in c.bes[1:] if be not in holders]
    assert len(holders) == 2 and len(spare) == 1, [b.be_http_port for b in holders]
    stopped = holders[0]
    stopped.signal_tree(signal.SIGSTOP)
    try:
        more = list(range(21, 41))
        answers = _parallel(lambda i: _load(owner, "k", f"{i},b\n".encode()), more)
        for reply, elapsed in answers:
            assert reply["Status"] == "Success", reply
            assert elapsed < int(GC["timeout"]), elapsed
        # The loads were answered with the other peer's copy; the stopped one is dropped
        # after its deadline (2 s) and the spare BE gets the group's records from the start.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and _copy_bytes(spare[0]) < _copy_bytes(holders[1]):
            time.sleep(0.2)
        assert _copy_bytes(spare[0]) == _copy_bytes(holders[1]) > 0, "the replacement's copy is short"
        owner.kill()
        shutil.rmtree(owner.data_dir, ignore_errors=True)
        ids = set(first + more)
        counts = _wait_rows(c, "k", ids, timeout=120)
        assert set(counts) == ids and all(n == 1 for n in counts.values()), counts
    finally:
        stopped.signal_tree(signal.SIGCONT)
    # The stopped peer's short copy is dropped once it hears the group is visible.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_copies(be) for be in c.bes[1:]):
        time.sleep(0.5)
    assert not any(_copies(be) for be in c.bes[1:])
    time.sleep(1)
    assert set(_counts(c, "k")) == ids and all(n == 1 for n in _counts(c, "k").values())
