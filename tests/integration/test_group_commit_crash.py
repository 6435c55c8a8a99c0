"""Group commit across BE crashes: an FE and a BE as separate processes, the BE SIGKILLed.

Every acknowledged async load must become visible exactly once after the BE restarts and
replays its WAL; clients that retry with the same label never load twice; a WAL whose
group already committed is not loaded again; torn WAL tails are discarded; a full WAL
falls back to sync_mode.
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from galene.be.wal import SPARE_SUFFIX
from tests.support.client import auth_header
from tests.support.node import GaleneProcess
from tests.support.procs import children_of

pytestmark = pytest.mark.slow

HEADERS = {"column_separator": ",", "group_commit": "async_mode"}


class Cluster:
    def __init__(self, data_dir: Path):
        self.dir = data_dir
        self.fe = GaleneProcess(data_dir, role="fe", conf={"heartbeat_interval_second": "1"})
        self.be = GaleneProcess(data_dir, role="be")

    def start(self) -> None:
        self.fe.start()
        self.be.conf["http_port"] = str(self.fe.http_port)  # where the BE finds its FE
        self.be.start()
        self.fe.query(f"ALTER SYSTEM ADD BACKEND '127.0.0.1:{self.be.be_http_port}'")
        identity = self.dir / "be" / "cluster.json"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if identity.exists() and json.loads(identity.read_text()).get("backend_id"):
                return
            time.sleep(0.2)
        raise TimeoutError("the BE never received a heartbeat")

    def stop(self) -> None:
        self.be.stop()
        self.fe.stop()

    @property
    def wal_root(self) -> Path:
        return self.dir / "be" / "wal"

    def wal_files(self) -> list[Path]:
        """WAL files of groups that took loads (not the empty spare made ahead for the next group)."""
        if not self.wal_root.exists():
            return []
        return sorted(p for p in self.wal_root.glob("*/*/*") if p.is_file() and p.suffix != SPARE_SUFFIX)

    def load(self, db: str, body: bytes, headers: dict[str, str], timeout: float = 30) -> dict:
        r = httpx.put(
            f"http://127.0.0.1:{self.be.be_http_port}/api/{db}/t/_stream_load",
            content=body,
            headers={**auth_header(), **headers},
            timeout=timeout,
        )
        r.raise_for_status()
        return r.json()

    def restart_be(self, **conf: str) -> None:
        self.be.conf.update(conf)
        self.be.start()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("gc-cluster"))
    c.start()
    yield c
    c.stop()


@pytest.fixture
def gdb(cluster):
    name = f"gc_{random.randrange(1 << 30):x}"
    cluster.fe.query(f"CREATE DATABASE {name}")
    yield name
    cluster.fe.query(f"DROP DATABASE IF EXISTS {name}")


def _create(cluster: Cluster, db: str, interval_ms: int, buckets: int = 2) -> None:
    cluster.fe.query(
        f"CREATE TABLE t (id BIGINT NOT NULL, src VARCHAR(32)) DUPLICATE KEY(id) "
        f'DISTRIBUTED BY HASH(id) BUCKETS {buckets} PROPERTIES ("group_commit_interval_ms"="{interval_ms}")',
        db,
    )


def _body(ids: list[int], src: str) -> bytes:
    return "".join(f"{i},{src}\n" for i in ids).encode()


def _wait_count(cluster: Cluster, db: str, expected: int, timeout: float = 90) -> int:
    deadline = time.monotonic() + timeout
    while True:
        n = cluster.fe.query("SELECT COUNT(*) FROM t", db)[0][0]
        if n == expected or time.monotonic() > deadline:
            return n
        time.sleep(0.3)


def _wait_no_wal(cluster: Cluster, timeout: float = 30) -> list[Path]:
    deadline = time.monotonic() + timeout
    while cluster.wal_files() and time.monotonic() < deadline:
        time.sleep(0.2)
    return cluster.wal_files()


def test_acknowledged_async_loads_survive_sigkill_and_torn_tail_is_dropped(cluster, gdb):
    _create(cluster, gdb, interval_ms=3_600_000)  # nothing commits unless the BE replays
    ids: list[int] = []
    for n in range(6):
        batch = list(range(n * 10, n * 10 + 4))
        headers = {**HEADERS, "label": f"k{n}"} if n % 2 else HEADERS
        reply = cluster.load(gdb, _body(batch, f"load{n}"), headers)
        assert reply["Status"] == "Success", reply
        ids += batch
    wal = cluster.wal_files()
    assert len(wal) == 1, wal
    cluster.be.kill()
    # A record the BE was writing when it died: never acknowledged, must be discarded.
    with open(wal[0], "ab") as f:
        f.write(b"\x31\x4c\x57\x47" + (999).to_bytes(4, "little") + b"partial")
    assert cluster.fe.query("SELECT COUNT(*) FROM t", gdb)[0][0] == 0
    cluster.restart_be()
    assert _wait_count(cluster, gdb, len(ids)) == len(ids)
    assert sorted(r[0] for r in cluster.fe.query("SELECT id FROM t", gdb)) == sorted(ids)
    assert _wait_no_wal(cluster) == []
    retry = cluster.load(gdb, _body([10, 11, 12, 13], "load1"), {**HEADERS, "label": "k1"})
    assert retry["Status"] == "Label Already Exists" and retry["ExistingJobStatus"] == "FINISHED", retry
    assert cluster.fe.query("SELECT COUNT(*) FROM t", gdb)[0][0] == len(ids)


def _spares(cluster: Cluster) -> list[Path]:
    return sorted(cluster.wal_root.glob(f"*/*/*{SPARE_SUFFIX}")) if cluster.wal_root.exists() else []


def _spare_label(path: Path) -> str:
    return path.name.removesuffix(SPARE_SUFFIX).partition("_")[2]


def test_next_group_is_begun_ahead_and_a_killed_spare_leaves_nothing(cluster, gdb):
    _create(cluster, gdb, interval_ms=400)
    first = cluster.load(gdb, _body([1, 2], "a"), HEADERS)
    assert first["Status"] == "Success", first
    deadline = time.monotonic() + 30
    while not _spares(cluster) and time.monotonic() < deadline:
        time.sleep(0.05)
    (spare,) = _spares(cluster)  # the next group: txn begun, WAL file made, no loads yet
    assert _spare_label(spare) != first["Label"]
    assert _wait_count(cluster, gdb, 2) == 2
    second = cluster.load(gdb, _body([3, 4], "b"), HEADERS)
    assert second["Status"] == "Success", second
    assert second["Label"] == _spare_label(spare)  # the spare took the loads
    assert not spare.exists()  # renamed into a WAL file proper at its first append
    assert _wait_count(cluster, gdb, 4) == 4
    deadline = time.monotonic() + 30
    while not _spares(cluster) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _spares(cluster)
    cluster.be.kill()  # with an unused spare on disk and its txn open at the FE
    cluster.restart_be()
    deadline = time.monotonic() + 60
    while (_spares(cluster) or cluster.wal_files()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _spares(cluster) == [] and cluster.wal_files() == []
    assert sorted(r[0] for r in cluster.fe.query("SELECT id FROM t", gdb)) == [1, 2, 3, 4]
    third = cluster.load(gdb, _body([5], "c"), HEADERS)
    assert third["Status"] == "Success", third
    assert _wait_count(cluster, gdb, 5) == 5


def test_wal_of_an_already_committed_group_is_not_replayed(cluster, gdb):
    _create(cluster, gdb, interval_ms=3_600_000)
    assert cluster.wal_files() == []
    for n in range(3):
        reply = cluster.load(gdb, _body([n * 2, n * 2 + 1], "x"), {**HEADERS, "label": f"c{n}"})
        assert reply["Status"] == "Success", reply
    (wal,) = cluster.wal_files()
    saved = wal.read_bytes()
    cluster.be.stop()  # a clean stop commits the open group and deletes its WAL
    assert cluster.fe.query("SELECT COUNT(*) FROM t", gdb)[0][0] == 6
    assert cluster.wal_files() == []
    # As if the BE had died between the commit and the WAL deletion.
    wal.parent.mkdir(parents=True, exist_ok=True)
    wal.write_bytes(saved)
    cluster.restart_be()
    assert _wait_no_wal(cluster) == []  # replay is done: the file goes only after its group
    assert cluster.fe.query("SELECT COUNT(*) FROM t", gdb)[0][0] == 6
    retry = cluster.load(gdb, _body([0, 1], "x"), {**HEADERS, "label": "c0"})
    assert retry["Status"] == "Label Already Exists" and retry["ExistingJobStatus"] == "FINISHED"


def test_full_wal_falls_back_to_sync_mode(cluster, gdb):
    _create(cluster, gdb, interval_ms=300)
    cluster.be.stop()
    cluster.restart_be(group_commit_wal_max_disk_limit="1")
    try:
        reply = cluster.load(gdb, _body([1, 2, 3], "sync"), HEADERS)
        assert reply["Status"] == "Success" and reply["GroupCommit"] is True
        # Answered after the commit, so visible at once, and nothing went to the WAL.
        assert cluster.fe.query("SELECT COUNT(*) FROM t", gdb)[0][0] == 3
        assert cluster.wal_files() == []
    finally:
        cluster.be.stop()
        cluster.be.conf.pop("group_commit_wal_max_disk_limit")
        cluster.restart_be()


def test_random_sigkills_lose_and_duplicate_nothing(cluster, gdb):
    _create(cluster, gdb, interval_ms=200, buckets=3)
    n_clients = 4
    rows_per_load = 5
    stop = threading.Event()
    lock = threading.Lock()
    acked: dict[str, list[int]] = {}
    retried: set[str] = set()
    already: list[dict] = []
    failures: list[str] = []

    def client(c: int) -> None:
        seq = 0
        while not stop.is_set():
            label = f"c{c}_{seq}"
            ids = [c * 10_000_000 + seq * rows_per_load + j for j in range(rows_per_load)]
            body = _body(ids, label)
            attempts = 0
            while True:  # retry the same label until the load is acknowledged
                attempts += 1
                try:
                    reply = cluster.load(gdb, body, {**HEADERS, "label": label}, timeout=20)
                except (httpx.HTTPError, OSError):
                    reply = None
                if reply is not None and reply["Status"] in ("Success", "Label Already Exists"):
                    with lock:
                        acked[label] = ids
                        if attempts > 1:
                            retried.add(label)
                        if reply["Status"] == "Label Already Exists":
                            already.append(reply)
                    break
                if reply is not None and attempts > 200:
                    failures.append(f"{label}: {reply}")
                    return
                time.sleep(0.1)
            seq += 1

    # Unlabelled loads take the batched path (SmallLoadLane); they cannot be retried safely,
    # so each is sent once: an acknowledged one must be there exactly once, the others at
    # most once.
    plain_acked: list[int] = []
    plain_unknown: list[int] = []

    def plain_client(c: int) -> None:
        seq = 0
        while not stop.is_set():
            ids = [900_000_000 + c * 10_000_000 + seq * rows_per_load + j for j in range(rows_per_load)]
            try:
                reply = cluster.load(gdb, _body(ids, f"p{c}"), HEADERS, timeout=20)
            except (httpx.HTTPError, OSError):
                reply = None
            with lock:
                (plain_acked if reply is not None and reply["Status"] == "Success" else plain_unknown).extend(
                    ids
                )
            if reply is None or reply["Status"] != "Success":
                time.sleep(0.1)
            seq += 1

    threads = [threading.Thread(target=client, args=(c,), daemon=True) for c in range(n_clients)]
    threads += [threading.Thread(target=plain_client, args=(c,), daemon=True) for c in range(3)]
    for t in threads:
        t.start()
    rng = random.Random(20240611)
    kills = 0
    try:
        while kills < 12:
            time.sleep(rng.uniform(0.2, 2.0))
            cluster.be.kill()
            kills += 1
            time.sleep(rng.uniform(0.0, 0.5))
            cluster.restart_be()
        time.sleep(2)
    finally:
        stop.set()
        for t in threads:
            t.join(120)
    print(
        f"kills={kills} loads={len(acked)} retried={len(retried)} label_already_exists={len(already)} "
        f"unlabelled rows acknowledged={len(plain_acked)} unacknowledged={len(plain_unknown)}"
    )
    assert not failures, failures
    assert all(not t.is_alive() for t in threads)
    assert kills >= 10
    assert retried, "no load was interrupted by a kill: the test did not exercise retries"

    assert plain_acked, "no unlabelled load was acknowledged"
    labelled = sorted(i for ids in acked.values() for i in ids)
    assert len(labelled) == len(set(labelled))
    expected = sorted(labelled + plain_acked)
    # Unacknowledged unlabelled loads may have landed (the BE died after the fsync, before the
    # answer); wait until at least every acknowledged row is visible and the WAL is drained.
    deadline = time.monotonic() + 90
    while (
        cluster.fe.query("SELECT COUNT(*) FROM t", gdb)[0][0] < len(expected) and time.monotonic() < deadline
    ):
        time.sleep(0.3)
    assert _wait_no_wal(cluster) == []
    doubled = cluster.fe.query("SELECT id, COUNT(*) FROM t GROUP BY id HAVING COUNT(*) > 1", gdb)
    assert doubled == []
    visible = {r[0] for r in cluster.fe.query("SELECT id FROM t", gdb)}
    assert set(expected) <= visible, sorted(set(expected) - visible)[:20]
    assert visible - set(expected) <= set(plain_unknown)
    # Every retried label's rows are there exactly once, and the answers to retries of
    # labels that had already been accepted said so.
    for reply in already:
        assert reply["ExistingJobStatus"] in ("RUNNING", "FINISHED")
        assert "by group commit txn" in reply["Message"]


def _ingest_worker_pid(cluster: Cluster, timeout: float = 30) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert cluster.be.proc is not None
        for pid in children_of(cluster.be.proc.pid):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"galene.be.ingest_worker" in cmdline:
                return pid
        time.sleep(0.1)
    raise TimeoutError("the BE has no ingest worker process")


def _unlabelled_clients(cluster: Cluster, db: str, n: int, stop: threading.Event):
    """Clients sending unlabelled async loads once each; (acked ids, unknown ids, threads)."""
    lock = threading.Lock()
    acked: list[int] = []
    unknown: list[int] = []

    def client(c: int) -> None:
        seq = 0
        while not stop.is_set():
            ids = [c * 10_000_000 + seq * 5 + j for j in range(5)]
            try:
                reply = cluster.load(db, _body(ids, f"p{c}"), HEADERS, timeout=30)
            except (httpx.HTTPError, OSError):
                reply = None
            with lock:
                (acked if reply is not None and reply["Status"] == "Success" else unknown).extend(ids)
            seq += 1

    threads = [threading.Thread(target=client, args=(c,), daemon=True) for c in range(n)]
    for t in threads:
        t.start()
    return acked, unknown, threads


def _check_exactly_once(cluster: Cluster, db: str, acked: list[int], unknown: list[int]) -> None:
    deadline = time.monotonic() + 90
    while cluster.fe.query("SELECT COUNT(*) FROM t", db)[0][0] < len(acked) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert _wait_no_wal(cluster) == []
    assert cluster.fe.query("SELECT id, COUNT(*) FROM t GROUP BY id HAVING COUNT(*) > 1", db) == []
    visible = {r[0] for r in cluster.fe.query("SELECT id FROM t", db)}
    assert set(acked) <= visible, sorted(set(acked) - visible)[:20]
    assert visible - set(acked) <= set(unknown)


def test_killed_ingest_worker_fails_only_loads_in_flight_and_is_replaced(cluster, gdb):
    """The ingest worker (parse + WAL writes) dies alone: the loads it held fail or were
    durable, the BE starts a new worker at the next load, and nothing acknowledged is lost
    or doubled."""
    _create(cluster, gdb, interval_ms=200)
    stop = threading.Event()
    acked, unknown, threads = _unlabelled_clients(cluster, gdb, 4, stop)
    rng = random.Random(7)
    pids = []
    try:
        for _ in range(4):
            time.sleep(rng.uniform(0.3, 1.0))
            pid = _ingest_worker_pid(cluster)
            pids.append(pid)
            os.kill(pid, signal.SIGKILL)
        time.sleep(1.0)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert len(set(pids)) == len(pids)  # a new worker each time
    assert acked, "no load was acknowledged"
    after = cluster.load(gdb, _body([999_999_999], "after"), HEADERS)
    assert after["Status"] == "Success", after
    _check_exactly_once(cluster, gdb, [*acked, 999_999_999], unknown)


def test_ingest_worker_in_the_be_process_survives_sigkill_too(cluster, gdb):
    """group_commit_ingest_worker = false: the same worker code as threads of the BE."""
    _create(cluster, gdb, interval_ms=300)
    cluster.be.stop()
    cluster.restart_be(group_commit_ingest_worker="false")
    try:
        with pytest.raises(TimeoutError):
            _ingest_worker_pid(cluster, timeout=2)
        stop = threading.Event()
        acked, unknown, threads = _unlabelled_clients(cluster, gdb, 3, stop)
        labelled = cluster.load(
            gdb, _body([888_000_001, 888_000_002], "lab"), {**HEADERS, "label": "inproc_1"}
        )
        assert labelled["Status"] == "Success", labelled
        time.sleep(1.0)
        cluster.be.kill()
        stop.set()
        for t in threads:
            t.join(60)
        cluster.restart_be()
        retry = cluster.load(gdb, _body([888_000_001, 888_000_002], "lab"), {**HEADERS, "label": "inproc_1"})
        assert retry["Status"] == "Label Already Exists", retry
        _check_exactly_once(cluster, gdb, [*acked, 888_000_001, 888_000_002], unknown)
    finally:
        cluster.be.stop()
        cluster.be.conf.pop("group_commit_ingest_worker", None)
        cluster.restart_be()
