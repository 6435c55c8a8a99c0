"""A table loaded faster than compaction rounds come: a tablet that holds half of
`max_tablet_version_num` rowsets is compacted at once, not at the next round.

Rounds are 10 minutes apart here, so every merge the test sees was woken by the loads; before
it, load number `LIMIT + 1` failed with Doris' -235 error however fast the merge would have been.
"""

from __future__ import annotations

import pytest

from tests.support.node import GaleneProcess

pytestmark = pytest.mark.slow

DB = "urg"
LIMIT = 100  # max_tablet_version_num: loads start a merge at LIMIT // 2 rowsets


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    g = GaleneProcess(
        tmp_path_factory.mktemp("compaction-urgent"),
        conf={
            "compaction_scheduler_interval_ms": "600000",
            "cumulative_compaction_min_deltas": "3",
            "max_tablet_version_num": str(LIMIT),
        },
    )
    g.start()
    g.query(f"CREATE DATABASE {DB}")
    g.query("SELECT 1")  # the engine is up: background compaction waits for it
    yield g
    g.stop()


def test_loads_past_the_version_limit_keep_succeeding(node):
    node.query("CREATE TABLE u (k INT NOT NULL, v VARCHAR(8)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", DB)
    n = LIMIT * 2
    most = 0
    for i in range(n):
        reply = node.stream_load(DB, "u", f"{i},x\n".encode(), {"column_separator": ","}, via_fe=False)
        assert reply["Status"] == "Success", (i, reply)
        if i % 10 == 0:
            ((*_, count),) = [(r[0], int(r[14])) for r in node.query("SHOW TABLETS FROM u", DB)]
            most = max(most, count)
    assert most <= LIMIT
    assert node.query("SELECT COUNT(*), COUNT(DISTINCT k) FROM u", DB) == [(n, n)]
    ((*_, count),) = [(r[0], int(r[14])) for r in node.query("SHOW TABLETS FROM u", DB)]
    assert count < n  # merged, with no round due for ten minutes
