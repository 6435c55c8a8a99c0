"""Compaction on a real Galene: results never change, files go only after the GC grace,
background compaction, ADMIN COMPACT, SHOW TABLETS, the BE's /api/compaction/* and the
version limit — all through the network interfaces (MySQL, HTTP).

One node for the module, with a short GC grace, a fast compaction scheduler, a low
`cumulative_compaction_min_deltas` and a low `max_tablet_version_num`. Tables of the model test
are created with `disable_auto_compaction` so that only the test decides when they compact.
"""

from __future__ import annotations

import json
import os
import random
import time

import httpx
import pymysql
import pytest

from tests.support.client import auth_header, metric_value
from tests.support.node import GaleneProcess

DB = "cmp"
GRACE_S = 6
MAX_VERSIONS = 5
NO_AUTO = 'PROPERTIES ("disable_auto_compaction" = "true")'


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    g = GaleneProcess(
        tmp_path_factory.mktemp("compaction"),
        conf={
            "gc_grace_seconds": str(GRACE_S),
            "compaction_scheduler_interval_ms": "300",
            "cumulative_compaction_min_deltas": "3",
            "max_tablet_version_num": str(MAX_VERSIONS),
        },
    )
    g.start()
    g.query(f"CREATE DATABASE {DB}")
    yield g
    g.stop()


# --- helpers -------------------------------------------------------------------------------


def load(node, table: str, rows, **headers) -> dict:
    body = "".join(",".join("\\N" if v is None else str(v) for v in r) + "\n" for r in rows).encode()
    reply = node.stream_load(DB, table, body, {"column_separator": ",", **headers})
    return reply


def must_load(node, table: str, rows, **headers) -> None:
    reply = load(node, table, rows, **headers)
    assert reply["Status"] == "Success", reply


def tablets(node, table: str) -> list[tuple]:
    return node.query(f"SHOW TABLETS FROM {table}", DB)


def version_counts(node, table: str) -> dict[int, int]:
    return {int(r[0]): int(r[14]) for r in tablets(node, table)}


def be(node, method: str, path: str) -> dict:
    # The BE's compaction API is an admin route (ADMIN_PRIV or NODE_PRIV): root's credentials.
    r = httpx.request(method, f"http://127.0.0.1:{node.be_http_port}{path}", headers=auth_header(), timeout=60)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    return json.loads(r.text)


def wait_for(what: str, fn, timeout: float = 120):
    """Poll `fn` until it returns something true (a condition, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def http_compact(node, tablet: int, kind: str) -> dict:
    """POST /api/compaction/run and wait until the tablet's compaction is no longer running."""
    reply = be(node, "POST", f"/api/compaction/run?tablet_id={tablet}&compact_type={kind}")
    wait_for(
        "the compaction to finish",
        lambda: not be(node, "GET", f"/api/compaction/run_status?tablet_id={tablet}")["run_status"],
    )
    return reply


def data_file(node, rel: str) -> str:
    return os.path.join(node.data_dir, "storage", rel)


# --- the model test ------------------------------------------------------------------------


class Model:
    """What the table must hold, per key model."""

    def __init__(self, kind: str, seq: bool = False):
        self.kind, self.seq = kind, seq
        self.rows: dict = {}  # UNIQUE/AGG: key -> row; DUP: list
        self.dup: list = []
        self.version = 0

    def apply(self, rows, delete: bool = False) -> None:
        self.version += 1
        for r in rows:
            k = r[0]
            if self.kind == "dup":
                self.dup.append(tuple(r))
            elif self.kind == "unique":
                old = self.rows.get(k)
                rank = (r[3] is not None, r[3] or 0) if self.seq else 0
                if old is not None and self.seq and old[1] > rank:
                    continue  # an older sequence value never replaces a newer one
                self.rows[k] = (None if delete else tuple(r), rank)
            else:  # agg: (k, SUM s, MAX m, REPLACE r)
                old = self.rows.get(k)
                if old is None:
                    self.rows[k] = tuple(r)
                else:
                    s = r[1] if old[1] is None else (old[1] if r[1] is None else old[1] + r[1])
                    self.rows[k] = (k, s, max(old[2], r[2]), r[3])

    def expected(self) -> list[tuple]:
        if self.kind == "dup":
            return sorted(self.dup, key=_order)
        if self.kind == "unique":
            return sorted((r for r, _ in self.rows.values() if r is not None), key=_order)
        return sorted(self.rows.values(), key=_order)


def _order(row) -> tuple:
    return tuple((v is None, str(v)) for v in row)


def snapshot(node, table: str) -> list:
    rows = sorted(node.query(f"SELECT * FROM {table}", DB), key=_order)
    stats = node.query(f"SELECT COUNT(*), MIN(k), MAX(k) FROM {table} WHERE k % 3 = 1", DB)
    return [rows, stats]


def _norm(rows: list[tuple]) -> list[tuple]:
    return sorted((tuple(None if v is None else (int(v) if isinstance(v, int) else str(v)) for v in r) for r in rows), key=_order)


def test_compaction_never_changes_a_query_result(node):
    """Random loads, updates and deletes into UNIQUE (with and without a sequence column), AGGREGATE
    and DUPLICATE tables; at random points a cumulative or base compaction (ADMIN COMPACT, or the
    BE's HTTP API on a random tablet); every query result is compared before and after each
    compaction and with a model."""
    rng = random.Random(20261125)
    node.query(
        f"CREATE TABLE mu (k INT NOT NULL, v VARCHAR(8), n BIGINT) UNIQUE KEY(k) "
        f"DISTRIBUTED BY HASH(k) BUCKETS 3 {NO_AUTO}",
        DB,
    )
    node.query(
        "CREATE TABLE ms (k INT NOT NULL, v VARCHAR(8), n BIGINT, s INT) UNIQUE KEY(k) "
        'DISTRIBUTED BY HASH(k) BUCKETS 2 PROPERTIES ("function_column.sequence_col" = "s", '
        '"disable_auto_compaction" = "true")',
        DB,
    )
    node.query(
        f"CREATE TABLE ma (k INT NOT NULL, s BIGINT SUM, m INT MAX, r VARCHAR(8) REPLACE) AGGREGATE KEY(k) "
        f"DISTRIBUTED BY HASH(k) BUCKETS 2 {NO_AUTO}",
        DB,
    )
    node.query(
        "CREATE TABLE md (k INT NOT NULL, v VARCHAR(8)) DUPLICATE KEY(k) "
        "PARTITION BY RANGE(k) (PARTITION p1 VALUES LESS THAN (20), PARTITION p2 VALUES LESS THAN (MAXVALUE)) "
        f"DISTRIBUTED BY HASH(k) BUCKETS 2 {NO_AUTO}",
        DB,
    )
    models = {"mu": Model("unique"), "ms": Model("unique", seq=True), "ma": Model("agg"), "md": Model("dup")}
    partitions = {"mu": ["mu"], "ms": ["ms"], "ma": ["ma"], "md": ["p1", "p2"]}
    compactions = 0
    rounds = 3
    for round_ in range(rounds):
        for name, model in models.items():
            for _ in range(rng.randint(2, 3)):
                keys = rng.sample(range(40), rng.randint(1, 6))
                if model.kind == "unique":
                    rows = [[k, rng.choice(["a", "bb", None]), rng.randint(-9, 9)] for k in keys]
                    if model.seq:
                        for r in rows:
                            r.append(rng.choice([1, 2, 3, None]))
                    delete = rng.random() < 0.25
                    must_load(node, name, rows, **({"merge_type": "DELETE"} if delete else {}))
                    model.apply(rows, delete=delete)
                elif model.kind == "agg":
                    rows = [[k, rng.choice([None, rng.randint(0, 9)]), rng.randint(-9, 9), rng.choice(["x", "y"])] for k in keys]
                    must_load(node, name, rows)
                    model.apply(rows)
                else:
                    rows = [[k, rng.choice(["a", "b"])] for k in keys]
                    must_load(node, name, rows)
                    model.apply(rows)
            if name == "mu" and round_ == 1:
                # Engine-written rowsets too: an UPDATE and a DELETE (the delete sign) by SQL.
                node.query("UPDATE mu SET v = 'upd' WHERE k < 8", DB)
                model.apply([(k, "upd", r[2]) for k, (r, _) in list(model.rows.items()) if r is not None and k < 8])
                node.query("DELETE FROM mu WHERE k >= 35", DB)
                model.apply([(k,) for k in list(model.rows) if k >= 35], delete=True)
        for name, model in models.items():
            before = snapshot(node, name)
            assert _norm(before[0]) == _norm(model.expected()), name
            if round_ == rounds - 1:  # the last round: a base compaction of every partition
                for partition in partitions[name]:
                    node.query(f"ADMIN COMPACT TABLE {name} PARTITION {partition} WHERE TYPE='BASE'", DB)
            elif rng.random() < 0.6:
                partition = rng.choice(partitions[name])
                kind = rng.choice(["BASE", "CUMULATIVE"])
                node.query(f"ADMIN COMPACT TABLE {name} PARTITION {partition} WHERE TYPE='{kind}'", DB)
            else:
                tablet = int(rng.choice(tablets(node, name))[0])
                http_compact(node, tablet, rng.choice(["cumulative", "base", "full"]))
            compactions += 1
            assert snapshot(node, name) == before, name
    # The last round compacted every partition fully: one rowset per tablet that has rows.
    for name in models:
        assert all(n <= 1 for n in version_counts(node, name).values()), name
    assert compactions == 4 * rounds


# --- files, GC, background, SHOW TABLETS ------------------------------------------------------


def test_replaced_files_stay_for_the_grace_period_then_gc_deletes_them(node):
    node.query(f"CREATE TABLE g (k INT NOT NULL, v VARCHAR(8)) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1 {NO_AUTO}", DB)
    for i in range(3):
        must_load(node, "g", [(k, f"v{i}") for k in range(i, i + 4)])
    before = node.query("SELECT * FROM g ORDER BY k", DB)
    show = be(node, "GET", f"/api/compaction/show?tablet_id={tablets(node, 'g')[0][0]}")
    old_ids = [line.split()[4] for line in show["rowsets"]]
    assert len(old_ids) == 3
    started = time.time()  # the replaced files are retired at the commit, after this
    node.query("ADMIN COMPACT TABLE g PARTITION g WHERE TYPE='BASE'", DB)
    committed = time.time()  # ... and before this
    assert node.query("SELECT * FROM g ORDER BY k", DB) == before
    show = be(node, "GET", f"/api/compaction/show?tablet_id={tablets(node, 'g')[0][0]}")
    assert len(show["rowsets"]) == 1 and show["rowsets"][0].startswith("[2-4] 1 DATA NONOVERLAPPING ")
    assert [line.split()[2] for line in show["stale_rowsets"]] == old_ids
    (path,) = show["stale version path"]
    assert path["path list"].endswith("-> [2-2] -> [3-3] -> [4-4]")
    storage = os.path.join(node.data_dir, "storage", "data")
    old_files = [
        os.path.join(d, f) for d, _, fs in os.walk(storage) for f in fs if f.split("_", 1)[0] in old_ids
    ]
    assert len(old_files) == 3 and all(os.path.exists(f) for f in old_files)
    # Within the grace a GC (even one asked for grace 0) keeps them: a running query may read them.
    gc = httpx.post(f"http://127.0.0.1:{node.http_port}/api/_gc?grace_seconds=0", headers=auth_header(), timeout=120)
    assert gc.status_code == 200
    if time.time() < started + GRACE_S:  # (a slow box may have taken longer than the grace to get here)
        assert all(os.path.exists(f) for f in old_files)
    time.sleep(max(0.0, committed + GRACE_S + 0.5 - time.time()))  # let the grace pass (not a timing assertion)
    gc = httpx.post(f"http://127.0.0.1:{node.http_port}/api/_gc?grace_seconds=0", headers=auth_header(), timeout=120)
    assert gc.status_code == 200
    assert not any(os.path.exists(f) for f in old_files)
    assert node.query("SELECT * FROM g ORDER BY k", DB) == before
    # The stale rowsets are gone from the tablet's status with their files.
    show = be(node, "GET", f"/api/compaction/show?tablet_id={tablets(node, 'g')[0][0]}")
    assert show["stale_rowsets"] == [] and show["stale version path"] == []


def test_background_compaction_and_show_tablets(node):
    node.query("CREATE TABLE b (k INT NOT NULL, v VARCHAR(8), n BIGINT) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", DB)
    names = [c[0] for c in _columns(node, "SHOW TABLETS FROM b")]
    assert names == [
        "TabletId", "ReplicaId", "BackendId", "SchemaHash", "Version", "LstSuccessVersion", "LstFailedVersion",
        "LstFailedTime", "LocalDataSize", "RemoteDataSize", "RowCount", "State", "LstConsistencyCheckTime",
        "CheckVersion", "VersionCount", "QueryHits", "PathHash", "Path", "MetaUrl", "CompactionStatus",
        "CooldownReplicaId", "CooldownMetaId",
    ]  # fmt: skip
    (row,) = tablets(node, "b")
    assert row[14] == "0" and row[10] == "0" and row[11] == "NORMAL"
    for i in range(4):  # below max_tablet_version_num even if no compaction ran in between
        must_load(node, "b", [(k, f"v{i}", i) for k in range(10)])
    expected = node.query("SELECT * FROM b ORDER BY k", DB)
    # cumulative_compaction_min_deltas = 3: the scheduler merges the tablet's small rowsets.
    wait_for("the background compaction", lambda: int(tablets(node, "b")[0][14]) <= 2)
    assert node.query("SELECT * FROM b ORDER BY k", DB) == expected
    (row,) = tablets(node, "b")
    tablet = int(row[0])
    assert int(row[4]) >= 5 and row[4] == row[5]  # the partition's visible version
    assert int(row[8]) > 0 and int(row[10]) >= 10
    assert row[19].endswith(f"/api/compaction/show?tablet_id={tablet}")
    status = httpx.get(row[19], timeout=30).json()  # the URL SHOW TABLETS gives works as such
    assert not status["last cumulative success time"].startswith("1970-")
    assert set(status) >= {"cumulative policy type", "cumulative point", "rowsets", "missing_rowsets", "stale version path"}
    assert status["cumulative policy type"] == "SIZE_BASED" and status["missing_rowsets"] == []
    # A run this small was merged by the BE (load/local_merge.py), not by an engine job.
    metrics = httpx.get(f"http://127.0.0.1:{node.be_http_port}/metrics", timeout=30).text
    assert (metric_value(metrics, "galene_be_compaction_merges_total") or 0) >= 1, metrics[:2000]


def _columns(node, sql: str) -> list:
    with node.mysql(DB) as conn, conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.description)


def test_be_compaction_api_answers_in_dorises_shapes(node):
    node.query(f"CREATE TABLE h (k INT NOT NULL, v VARCHAR(8)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1 {NO_AUTO}", DB)
    must_load(node, "h", [(1, "a")])
    tablet = int(tablets(node, "h")[0][0])
    assert be(node, "POST", "/api/compaction/run?compact_type=base") == {
        "status": "INTERNAL_ERROR",
        "msg": "tablet id and table id can not be empty at the same time!",
    }
    assert be(node, "POST", "/api/compaction/run?tablet_id=1&table_id=2&compact_type=base")["msg"] == (
        "tablet id and table id can not be set at the same time!"
    )
    assert be(node, "POST", f"/api/compaction/run?tablet_id={tablet}&compact_type=major") == {
        "status": "NOT_IMPLEMENTED_ERROR",
        "msg": "The compaction type 'major' is not supported",
    }
    assert be(node, "POST", "/api/compaction/run?tablet_id=99999999&compact_type=base") == {
        "status": "NOT_FOUND",
        "msg": "Tablet not found. tablet_id=99999999",
    }
    # One rowset: nothing to merge (Doris' no-suitable-version statuses).
    assert be(node, "POST", f"/api/compaction/run?tablet_id={tablet}&compact_type=cumulative") == {
        "status": "E-2000",
        "msg": "_input_rowsets.size() is 1",
    }
    assert be(node, "POST", f"/api/compaction/run?tablet_id={tablet}&compact_type=base")["status"] == "E-808"
    assert be(node, "GET", "/api/compaction/show?tablet_id=99999999") == {
        "status": "NOT_FOUND",
        "msg": "Tablet not found. tablet_id=99999999",
    }
    assert be(node, "GET", "/api/compaction/run_status?tablet_id=99999999") == {
        "status": "INTERNAL_ERROR",
        "msg": "fail to get 99999999",
    }
    assert be(node, "GET", f"/api/compaction/run_status?tablet_id={tablet}") == {
        "status": "Success",
        "run_status": False,
        "msg": "compaction task for this tablet is not running",
        "tablet_id": tablet,
        "compact_type": "",
    }
    overall = be(node, "GET", "/api/compaction/run_status")
    assert set(overall) == {"CumulativeCompaction", "BaseCompaction"}
    must_load(node, "h", [(2, "b")])
    reply = http_compact(node, tablet, "full")
    assert reply == {
        "status": "Success",
        "msg": f"compaction task is successfully triggered. Table id: 0. Tablet id: {tablet}",
    }
    assert version_counts(node, "h") == {tablet: 1}
    assert sorted(node.query("SELECT * FROM h", DB)) == [(1, "a"), (2, "b")]
    # A table id: a full compaction of each of its tablets.
    must_load(node, "h", [(3, "c")])
    table_id = int(tablets(node, "h")[0][17].rstrip("/").split("/")[-3])
    assert be(node, "POST", f"/api/compaction/run?table_id={table_id}&compact_type=full")["status"] == "Success"
    wait_for("the table's full compaction", lambda: version_counts(node, "h") == {tablet: 1})
    assert sorted(node.query("SELECT * FROM h", DB)) == [(1, "a"), (2, "b"), (3, "c")]


def test_admin_compact_errors_are_dorises(node):
    node.query(f"CREATE TABLE e (k INT NOT NULL) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1 {NO_AUTO}", DB)
    cases = {
        "ADMIN COMPACT TABLE e WHERE TYPE='BASE'": "No partition selected for compaction",
        "ADMIN COMPACT TABLE e PARTITION (e, f) WHERE TYPE='BASE'": "Only support single partition for compaction",
        "ADMIN COMPACT TABLE e PARTITION e": (
            "Compaction type must be specified in Where clause like: type = 'BASE/CUMULATIVE'"
        ),
        "ADMIN COMPACT TABLE e PARTITION e WHERE TYPE='FULL'": "Where clause should looks like: type = 'BASE/CUMULATIVE'",
        "ADMIN COMPACT TABLE e PARTITION nope WHERE TYPE='BASE'": "Unknown partition 'nope' in table 'e'",
    }
    with node.mysql(DB) as conn:
        for sql, text in cases.items():
            with pytest.raises(pymysql.MySQLError) as err, conn.cursor() as cur:
                cur.execute(sql)
            assert err.value.args == (1105, f"errCode = 2, detailMessage = {text}"), sql
        with conn.cursor() as cur:  # nothing to compact is fine
            cur.execute("ADMIN COMPACT TABLE e PARTITION e WHERE TYPE='CUMULATIVE'")


def test_loads_fail_with_too_many_versions_until_compaction(node):
    """Rowsets that each outweigh all newer ones are never merged by the cumulative policy, so
    the tablet reaches max_tablet_version_num; the next load fails with Doris' -235 error, and
    a base compaction lets loads in again."""
    node.query("CREATE TABLE v (k INT NOT NULL, pad VARCHAR(2000)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", DB)
    for i in range(MAX_VERSIONS + 1):
        rows = 4 ** (MAX_VERSIONS - i)
        must_load(node, "v", [(k, os.urandom(500).hex()) for k in range(rows)])
    (row,) = tablets(node, "v")
    assert row[14] == str(MAX_VERSIONS + 1)
    reply = load(node, "v", [(1, "x")])
    assert reply["Status"] == "Fail", reply
    assert reply["Message"].startswith(
        f"[E-235]failed to init rowset builder. version count: {MAX_VERSIONS + 1}, exceed limit: {MAX_VERSIONS}, "
        f"tablet: {row[0]}."
    ), reply
    node.query("ADMIN COMPACT TABLE v PARTITION v WHERE TYPE='BASE'", DB)
    must_load(node, "v", [(1, "x")])
    assert node.query("SELECT COUNT(*) FROM v", DB) == [(sum(4**i for i in range(MAX_VERSIONS + 1)) + 1,)]
