"""Streaming jobs' pure parts: the journal ops' exactly-once rules, the object store's deadlines
(against a real socket that accepts and never answers), globs, formats, properties."""

from __future__ import annotations

import socket
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from galene.catalog import ops
from galene.catalog.apply import apply_op
from galene.catalog.model import (
    JOB_TASK_HISTORY,
    CatalogState,
    Database,
    JobStatistic,
    JobTask,
    StreamingJob,
    Table,
    Txn,
)
from galene.common.errors import AnalysisError
from galene.engine.s3source import MalformedFile, pack, parse_file
from galene.fe.jobs import check_properties, describe_failure, offset_name
from galene.load.objectstore import (
    FileEntry,
    ObjectStore,
    ObjectStoreError,
    call_with_deadline,
    glob_matcher,
    literal_prefix_dir,
    parse_source,
)


def _state() -> CatalogState:
    s = CatalogState()
    apply_op(s, ops.CreateDb(db=Database(id=1, name="d")))
    apply_op(s, ops.CreateTable(table=Table(id=2, db_id=1, name="t", columns=[])))
    apply_op(s, ops.CreateJob(job=StreamingJob(id=3, name="j", db_id=1, status="RUNNING")))
    return s


def _commit(s: CatalogState, txn_id: int, generation: int, prev: str, offset: str, rows: int) -> None:
    apply_op(s, ops.BeginTxn(txn=Txn(id=txn_id, db_id=1, table_id=2, label=f"l{txn_id}")))
    progress = ops.JobProgress(
        job_id=3, generation=generation, prev_offset=prev, offset=offset,
        statistic=JobStatistic(scanned_rows=rows, file_number=1, filtered_rows=1), task=JobTask(task_id=txn_id),
    )  # fmt: skip
    apply_op(s, ops.CommitTxn(txn_id=txn_id, version=txn_id, rowsets=[], time=1.0, job_progress=progress))


def test_offset_and_statistics_advance_with_the_commit_and_a_stale_batch_never_moves_them():
    s = _state()
    _commit(s, 10, 0, "", "p/f1", 5)
    _commit(s, 11, 0, "p/f1", "p/f9", 5)
    job = s.jobs[3]
    assert job.offset == "p/f9" and job.statistic.scanned_rows == 10 and job.statistic.filtered_rows == 2
    apply_op(s, ops.SetJobStatus(job_id=3, status="PAUSED", pause_reason="MANUAL"))
    apply_op(s, ops.AlterJob(job_id=3, properties={}, offset="p/f2"))
    assert job.offset == "p/f2" and job.offset_generation == 1
    # A commit of a batch planned before the ALTER (generation 0), replayed after it.
    _commit(s, 12, 0, "p/f9", "p/f12", 5)
    assert job.offset == "p/f2" and job.statistic.scanned_rows == 10 and job.succeed_task_count == 2


def test_task_history_is_bounded_and_failures_pause_automatically():
    s = _state()
    for i in range(JOB_TASK_HISTORY + 5):
        _commit(s, 100 + i, 0, s.jobs[3].offset, f"p/f{i:04d}", 1)
    assert len(s.jobs[3].tasks) == JOB_TASK_HISTORY and s.jobs[3].tasks[-1].task_id == 100 + JOB_TASK_HISTORY + 4
    apply_op(s, ops.FailJobTask(job_id=3, task=JobTask(task_id=1, status="FAILED"), error_msg="boom", runtime_msg="why"))
    job = s.jobs[3]
    assert (job.status, job.pause_reason, job.error_msg, job.failed_task_count) == ("PAUSED", "AUTO", "boom", 1)
    # A manual pause stays manual when the task it canceled is recorded.
    apply_op(s, ops.SetJobStatus(job_id=3, status="PAUSED", pause_reason="MANUAL"))
    apply_op(s, ops.FailJobTask(job_id=3, task=JobTask(task_id=2, status="CANCELED"), error_msg="x"))
    assert job.pause_reason == "MANUAL" and job.canceled_task_count == 1


def test_catalog_refuses_a_batch_whose_job_moved(tmp_path):
    from galene.fe.catalog_service import CatalogService
    from galene.meta.store import MetaStore

    store = MetaStore(tmp_path / "meta")
    store.open()
    cat = CatalogService(store, label_keep_max_second=3600)
    cat.create_database("d")

    def build(db_id, alloc, now):
        return Table(id=alloc(), db_id=db_id, name="t", columns=[])

    cat.create_table("d", build)
    job = cat.create_job(lambda jid, now: StreamingJob(id=jid, name="j", db_id=cat.db("d").id, status="RUNNING"))
    txn, _ = cat.txns.begin_txn("d", "t", "a")
    good = ops.JobProgress(job_id=job.id, generation=0, prev_offset="", offset="f1")
    cat.txns.commit_txn(txn.id, [], job_progress=good)
    assert cat.state.jobs[job.id].offset == "f1"
    txn2, _ = cat.txns.begin_txn("d", "t", "b")
    with pytest.raises(Exception, match="offset moved"):
        cat.txns.commit_txn(txn2.id, [], job_progress=good)  # started after "", the job is at f1 now
    cat.pause_job("j")
    with pytest.raises(Exception, match="PAUSED"):
        cat.txns.commit_txn(txn2.id, [], job_progress=ops.JobProgress(job_id=job.id, generation=0, prev_offset="f1", offset="f2"))
    assert cat.state.txns[txn2.id].status == "PREPARE" and cat.state.jobs[job.id].offset == "f1"
    store.close()


def test_deadline_is_a_timer_whatever_the_call_is_blocked_in():
    started = time.monotonic()
    with pytest.raises(ObjectStoreError, match="did not finish within its deadline of 0.5s") as e:
        call_with_deadline(lambda: time.sleep(30), 0.5, "read", "s3://b/k", "http://h:1")
    assert e.value.cause == "stalled" and e.value.transient
    assert time.monotonic() - started < 10  # bounded, not a measurement


def test_a_server_that_accepts_and_never_answers_fails_the_listing_within_its_deadline():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    held = []
    stop = threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])  # accepted, never answered
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        spec = parse_source({
            "uri": "s3://bucket/p/*.csv", "format": "csv", "s3.endpoint": f"127.0.0.1:{port}",
            "s3.access_key": "a", "s3.secret_key": "b", "s3.connect_timeout": "1", "s3.request_timeout": "3",
        })  # fmt: skip
        with pytest.raises(ObjectStoreError) as e:
            ObjectStore(spec).list()
        assert e.value.transient and f"127.0.0.1:{port}" in e.value.message and "list" in e.value.message
    finally:
        stop.set()
        t.join(5)
        for c in held:
            c.close()
        listener.close()


def test_globs_prefixes_and_properties():
    m = glob_matcher("p/file_[0-1].csv")
    assert m("p/file_0.csv") and m("p/file_1.csv") and not m("p/file_2.csv")
    m = glob_matcher("p/*.{csv,gz}")
    assert m("p/a.csv") and m("p/b.gz") and not m("p/sub/a.csv") and not m("p/a.json")
    assert literal_prefix_dir("a/b/c*/d.csv") == "a/b" and literal_prefix_dir("x*.csv") == ""
    with pytest.raises(AnalysisError, match="format:xml is not supported"):
        parse_source({"uri": "s3://bkt/x", "format": "xml"})
    with pytest.raises(AnalysisError, match="bucket name"):
        parse_source({"uri": "s3://b/x", "format": "csv"})
    spec = parse_source({"uri": "s3://bkt/p/*.csv", "format": "csv", "s3.endpoint": "https://h:9000", "s3.request_timeout": "500ms"})
    assert (spec.endpoint, spec.endpoint_scheme, spec.request_timeout, spec.pattern) == ("h:9000", "https", 0.5, "p/*.csv")
    assert offset_name('{"fileName":"p/f.csv"}') == "p/f.csv" == offset_name("p/f.csv")
    assert check_properties({"max_interval": "1", "session.insert_max_filter_ratio": "0.5"})["max_interval"] == "1"
    with pytest.raises(AnalysisError, match="Invalid properties"):
        check_properties({"bogus": "1"})
    with pytest.raises(AnalysisError, match="positive integer"):
        check_properties({"s3.max_batch_files": "0"})


def test_formats_and_malformed_files_are_named():
    csv = parse_source({"uri": "s3://bkt/p/*.csv", "format": "csv", "column_separator": ","})
    t = parse_file(csv, "p/a.csv", b"1,x\n2,\\N\n", None)
    assert t.column_names == ["c1", "c2"] and t.to_pylist() == [{"c1": "1", "c2": "x"}, {"c1": "2", "c2": None}]
    with pytest.raises(MalformedFile, match="malformed csv file s3://bkt/p/b.csv"):
        parse_file(csv, "p/b.csv", b"1,x\n2\n", t.schema)
    js = parse_source({"uri": "s3://bkt/p/*.json", "format": "json"})
    t = parse_file(js, "p/a.json", b'{"a": 1, "b": {"c": true}}\n{"a": "z"}\n', None)
    assert t.to_pylist() == [{"a": "1", "b": '{"c":true}'}, {"a": "z", "b": None}]
    with pytest.raises(MalformedFile, match="invalid JSON at line 2"):
        parse_file(js, "p/b.json", b'{"a": 1}\n{"a": \n', t.schema)
    pqs = parse_source({"uri": "s3://bkt/p/*.parquet", "format": "parquet"})
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"k": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}), sink)
    t = parse_file(pqs, "p/a.parquet", sink.getvalue().to_pybytes(), None)
    assert t.schema.field("k").type == pa.int64() and t.num_rows == 2
    with pytest.raises(MalformedFile, match="malformed parquet file"):
        parse_file(pqs, "p/b.parquet", b"not parquet", t.schema)


def test_small_files_are_packed_into_few_partitions_and_failures_are_described():
    files = [FileEntry(f"f{i:05d}", 2000) for i in range(10_000)]
    parts = pack(files)
    assert len(parts) == 10 and [f for p in parts for f in p] == files
    assert len(pack([FileEntry("a", 100 << 20), FileEntry("b", 1)])) == 2
    _, runtime, transient = describe_failure(
        Exception("[INTERNAL_ERROR]the engine job failed: ObjectStoreError: [TIMEOUT]object store call stalled: read …"), "RUNNING_ENGINE_JOB"
    )
    assert transient and "stalled" in runtime
    _, runtime, transient = describe_failure(Exception("[ACCESS_DENIED]credentials refused by x"), "LISTING")
    assert not transient and "credentials refused" in runtime
