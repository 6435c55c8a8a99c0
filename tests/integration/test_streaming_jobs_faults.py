"""Streaming jobs under faults, with real processes: the FE SIGKILLed at random moments while a
job ingests hundreds of files (every row exactly once, statistics exact), and the SeaweedFS
endpoint black-holed inside a network namespace mid-ingest (the task fails within its
deadline, the job pauses naming the endpoint and the stalled operation, and resumes by itself
once the endpoint answers, without loss or duplication).

The FE runs alone (`galene fe`): streaming jobs write through the engine, no BE is involved,
and the supervisor's restart backoff would only slow the chaos down.
"""

from __future__ import annotations

import json
import random
import time

import pytest

from tests.integration.test_streaming_jobs import job, offset_of, stats, upload, wait_job
from tests.support.netlab import NetLab
from tests.support.node import GaleneProcess
from tests.support.seaweed import SeaweedS3

pytestmark = pytest.mark.slow


def _setup(g: GaleneProcess, s3: SeaweedS3, bucket: str, name: str, **props) -> None:
    g.query("CREATE DATABASE IF NOT EXISTS sj")
    g.query(
        f"CREATE TABLE {name}_t (k INT, v INT, s VARCHAR(40)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2", "sj"
    )
    source = s3.props(f"s3://{bucket}/in/*.csv", column_separator=",", **props.pop("source", {}))
    plist = ", ".join(f"'{k}'='{v}'" for k, v in {"max_interval": "1", **props}.items())
    g.query(f"CREATE JOB {name} PROPERTIES ({plist}) ON STREAMING DO INSERT INTO {name}_t SELECT c1, c2, c3 FROM S3({source})", "sj")


def _check_exactly_once(g: GaleneProcess, name: str, keys: list[int], sizes: int, files: int) -> None:
    got = sorted(k for (k,) in g.query(f"SELECT k FROM {name}_t", "sj"))
    assert got == sorted(keys)  # every row once: nothing lost, nothing doubled
    s = stats(job(g, name))
    assert s["scannedRows"] == len(keys) and s["fileNumber"] == files and s["fileSize"] == sizes
    assert s["filteredRows"] == 0


def _file_sizes(s3: SeaweedS3, bucket: str) -> int:
    import pyarrow.fs as pafs

    return sum(i.size for i in s3.fs().get_file_info(pafs.FileSelector(f"{bucket}/in", recursive=True)))


def test_fe_sigkilled_ten_times_while_a_job_ingests_keeps_every_row_once(tmp_path, s3_server):
    s3 = s3_server
    s3.create_bucket("chaos")
    rng = random.Random(1234)
    g = GaleneProcess(tmp_path / "data", role="fe", engine="sail", conf={"edit_log_roll_num": "25"}).start()
    try:
        keys = upload(s3, "chaos", "in", 0, 40)
        _setup(g, s3, "chaos", "chaos_job", **{"s3.max_batch_files": "5"})
        kills = 0
        next_file = 40
        while kills < 10:
            time.sleep(rng.uniform(0.5, 4.0))
            g.kill()  # SIGKILL: FE and its engine, mid-task or not
            kills += 1
            if next_file < 400:
                keys += upload(s3, "chaos", "in", next_file, 40)
                next_file += 40
            g.start()
        last = f"in/f{next_file - 1:05d}.csv"
        wait_job(g, "chaos_job", lambda r: offset_of(r) == last, timeout=300)
        _check_exactly_once(g, "chaos_job", keys, _file_sizes(s3, "chaos"), next_file)
        assert len(keys) >= 2000 and next_file >= 400
    finally:
        g.kill()


def test_black_holed_endpoint_pauses_the_job_and_healing_resumes_it(tmp_path):
    lab = NetLab().create()
    s3 = None
    g = None
    try:
        netns, ip = lab.add_node("s3")
        s3 = SeaweedS3(tmp_path / "sw", ip=ip, netns=netns).start()
        s3.create_bucket("fault")
        keys = upload(s3, "fault", "in", 0, 30, rows=200)
        g = GaleneProcess(tmp_path / "data", role="fe").start()
        _setup(
            g, s3, "fault", "fault_job", **{"s3.max_batch_files": "3"},
            source={"s3.connect_timeout": "2", "s3.request_timeout": "3"},
        )  # fmt: skip
        wait_job(g, "fault_job", lambda r: int(r["SucceedTaskCount"]) >= 2)
        lab.drop_incoming("s3", s3.s3_port)
        row = wait_job(g, "fault_job", lambda r: r["Status"] == "PAUSED" and r["ErrorMsg"] != "", timeout=120)
        assert s3.endpoint in row["ErrorMsg"]
        assert "object store call stalled" in row["ErrorMsg"] or "unreachable" in row["ErrorMsg"]
        assert any(op in row["ErrorMsg"] for op in ("list ", "open ", "read ", "probe ")), row["ErrorMsg"]
        assert "endpoint" in row["JobRuntimeMsg"]
        stalled_at = offset_of(row)
        time.sleep(4)  # while black-holed it stays paused and keeps its offset
        row = job(g, "fault_job")
        assert row["Status"] == "PAUSED" and offset_of(row) == stalled_at
        lab.heal()
        wait_job(g, "fault_job", lambda r: offset_of(r) == "in/f00029.csv", timeout=120)
        _check_exactly_once(g, "fault_job", keys, _file_sizes(s3, "fault"), 30)
        tasks = g.query(
            "SELECT Status, ErrorMsg FROM tasks(\"type\"=\"insert\") WHERE JobName = 'fault_job' AND Status = 'FAILED'", "sj"
        )
        assert tasks and all(s3.endpoint in msg for _, msg in tasks)
        assert json.loads(job(g, "fault_job")["LoadStatistic"])["scannedRows"] == 6000
    finally:
        if g is not None:
            g.kill()
        if s3 is not None:
            s3.stop()
        lab.destroy()
