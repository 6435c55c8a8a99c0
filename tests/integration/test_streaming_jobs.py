"""Streaming jobs from a real S3 server (SeaweedFS) through a real Galene: the Doris defects of
PR #62449 and its review, each as its own test, plus the S3 table function, bad input and the
operator's view.

One Galene with `edit_log_roll_num=1` (a checkpoint image after every journal op) serves the
module's job tests; tests that restart it stop and start the same data directory. The jobs run
on Sail: what they check (offsets, statistics, pauses across restarts) is the FE's, and a
job's task is an `INSERT … SELECT … FROM S3(…)`, which the S3 table function's test runs on
Apache Spark (the shared Galene); Sail's tasks cost a fraction of Spark's, and these tests run
dozens of them around restarts.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.support.node import GaleneProcess

pytestmark = pytest.mark.slow

JOB_COLUMNS = (
    "Id", "Name", "Definer", "ExecuteType", "RecurringStrategy", "Status", "ExecuteSql", "CreateTime",
    "SucceedTaskCount", "FailedTaskCount", "CanceledTaskCount", "Comment", "Properties", "CurrentOffset",
    "EndOffset", "LoadStatistic", "ErrorMsg", "JobRuntimeMsg",
)  # fmt: skip


@pytest.fixture(scope="module")
def jobs_galene(tmp_path_factory):
    g = GaleneProcess(tmp_path_factory.mktemp("jobs") / "data", conf={"edit_log_roll_num": "1"}, engine="sail").start()
    try:
        g.query("CREATE DATABASE sj")
        yield g
    finally:
        g.stop()


def job(g: GaleneProcess, name: str) -> dict:
    rows = g.query(f"SELECT * FROM jobs(\"type\"=\"insert\") WHERE Name = '{name}' AND ExecuteType = 'STREAMING'", "sj")
    assert len(rows) == 1, rows
    return dict(zip(JOB_COLUMNS, rows[0], strict=True))


def wait_job(g: GaleneProcess, name: str, pred, timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = job(g, name)
        if pred(last):
            return last
        time.sleep(1)
    raise AssertionError(f"job {name} did not reach the expected state in {timeout}s: {last}\n{g.log_tail(40)}")


def upload(s3, bucket: str, prefix: str, start: int, n: int, rows: int = 5, bad_every: int = 0) -> list[int]:
    """Files f<start>..f<start+n-1>; row k of file i has key i * 1000 + k. Returns the keys."""
    keys, items = [], []
    for i in range(start, start + n):
        lines = []
        for r in range(rows):
            k = i * 1000 + r
            value = "oops" if bad_every and r % bad_every == 0 else str(k)
            lines.append(f"{k},{value},name{k}\n")
            keys.append(k)
        items.append((f"{bucket}/{prefix}/f{i:05d}.csv", "".join(lines).encode()))
    s3.put_many(items)
    return keys


def make_table(g: GaleneProcess, name: str, not_null_v: bool = False) -> None:
    nn = " NOT NULL" if not_null_v else ""
    g.query(f"CREATE TABLE {name} (k INT, v INT{nn}, s VARCHAR(40)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2", "sj")


def create_job(g, s3, name: str, table: str, bucket: str, prefix: str, **props) -> None:
    source = s3.props(f"s3://{bucket}/{prefix}/*.csv", column_separator=",")
    job_props = {"max_interval": "1", "s3.max_batch_files": "2", **props}
    plist = ", ".join(f"'{k}'='{v}'" for k, v in job_props.items())
    g.query(
        f"CREATE JOB {name} PROPERTIES ({plist}) ON STREAMING COMMENT 'test job' "
        f"DO INSERT INTO {table} SELECT c1, c2, c3 FROM S3({source})",
        "sj",
    )


def offset_of(row: dict) -> str:
    return json.loads(row["CurrentOffset"])["fileName"] if row["CurrentOffset"] else ""


def stats(row: dict) -> dict:
    return json.loads(row["LoadStatistic"])


def restart(g: GaleneProcess) -> None:
    g.stop()
    g.start()


# --- the S3 table function ---------------------------------------------------------------------
def test_s3_table_function_in_queries_insert_and_errors(galene, s3_server):
    g, s3 = galene, s3_server
    g.query("CREATE DATABASE IF NOT EXISTS sj")
    s3.create_bucket("tvf")
    upload(s3, "tvf", "q", 0, 4)
    s3.put("tvf/j/a.json", b'{"id": 1, "name": "x", "tags": [1, 2]}\n{"id": 2, "name": "y"}\n')
    source = s3.props("s3://tvf/q/*.csv", column_separator=",")
    assert g.query(f"SELECT count(*), min(c1), max(c3) FROM S3({source})", "sj") == [(20, "0", "name4")]
    assert g.query(f"SELECT c1 FROM S3({source}) WHERE c2 = '2001'", "sj") == [("2001",)]
    make_table(g, "tvf_t")
    g.query(f"INSERT INTO tvf_t SELECT c1, c2, upper(c3) FROM S3({source}) WHERE c1 >= 1000", "sj")
    assert g.query("SELECT count(*), max(s) FROM tvf_t", "sj") == [(15, "NAME3004")]
    json_source = s3.props("s3://tvf/j/*.json", fmt="json")
    assert g.query(f"SELECT id, name, tags FROM S3({json_source}) ORDER BY id", "sj") == [
        ("1", "x", "[1,2]"),
        ("2", "y", None),
    ]
    # Bad input answers a clear error naming the cause.
    bad_keys = source.replace('"s3.secret_key"="', '"s3.secret_key"="wrong')
    with pytest.raises(Exception, match="ACCESS_DENIED.*credentials refused"):
        g.query(f"SELECT count(*) FROM S3({bad_keys})", "sj")
    with pytest.raises(Exception, match="Can not get first file"):
        g.query(f"SELECT count(*) FROM S3({s3.props('s3://tvf/none/*.csv')})", "sj")
    with pytest.raises(Exception, match="format:orcx is not supported"):
        g.query(f"SELECT count(*) FROM S3({s3.props('s3://tvf/q/*.csv', fmt='orcx')})", "sj")


# --- Doris' defects ----------------------------------------------------------------------------
def test_checkpoint_restart_keeps_offset_and_every_statistic(jobs_galene, s3_server):
    """Doris lost S3 offsets and statistics after a restart from a checkpoint image."""
    g, s3 = jobs_galene, s3_server
    s3.create_bucket("ckpt")
    make_table(g, "ckpt_t")
    keys = upload(s3, "ckpt", "in", 0, 9)
    create_job(g, s3, "ckpt_job", "ckpt_t", "ckpt", "in")
    before = wait_job(g, "ckpt_job", lambda r: offset_of(r) == "in/f00008.csv")
    assert stats(before) == {"scannedRows": 45, "loadBytes": stats(before)["loadBytes"], "fileNumber": 9,
                             "fileSize": stats(before)["fileSize"], "filteredRows": 0}  # fmt: skip
    assert stats(before)["loadBytes"] > 0 and stats(before)["fileSize"] > 0
    assert int(before["SucceedTaskCount"]) == 5
    restart(g)
    after = job(g, "ckpt_job")
    for col in ("Status", "CurrentOffset", "EndOffset", "LoadStatistic", "SucceedTaskCount", "FailedTaskCount"):
        assert after[col] == before[col], col
    # And it continues exactly after the last committed batch.
    keys += upload(s3, "ckpt", "in", 9, 3)
    wait_job(g, "ckpt_job", lambda r: offset_of(r) == "in/f00011.csv")
    assert sorted(k for (k,) in g.query("SELECT k FROM ckpt_t", "sj")) == sorted(keys)
    assert stats(job(g, "ckpt_job"))["scannedRows"] == len(keys)


def test_altered_offset_survives_checkpoint_restart_and_resume_continues_from_it(jobs_galene, s3_server):
    """ALTER offset -> checkpoint -> restart keeps the ALTERed offset and PAUSED; RESUME
    continues from it."""
    g, s3 = jobs_galene, s3_server
    s3.create_bucket("alter")
    make_table(g, "alter_t")
    first = upload(s3, "alter", "in", 0, 4)
    create_job(g, s3, "alter_job", "alter_t", "alter", "in")
    wait_job(g, "alter_job", lambda r: offset_of(r) == "in/f00003.csv")
    with pytest.raises(Exception, match="Only PAUSED job can be altered"):
        g.query("ALTER JOB alter_job PROPERTIES ('offset' = 'in/f00001.csv')", "sj")
    g.query("PAUSE JOB WHERE jobname = 'alter_job'", "sj")
    upload(s3, "alter", "in", 4, 6)  # f4..f9 arrive while paused; the ALTER skips f4..f6
    g.query("""ALTER JOB alter_job PROPERTIES ('offset' = '{"fileName":"in/f00006.csv"}')""", "sj")
    restart(g)
    row = job(g, "alter_job")
    assert row["Status"] == "PAUSED" and offset_of(row) == "in/f00006.csv"
    time.sleep(3)  # a manual pause is never resumed by itself
    assert job(g, "alter_job")["Status"] == "PAUSED"
    g.query("RESUME JOB WHERE jobname = 'alter_job'", "sj")
    wait_job(g, "alter_job", lambda r: offset_of(r) == "in/f00009.csv")
    expected = first + [i * 1000 + r for i in (7, 8, 9) for r in range(5)]
    assert sorted(k for (k,) in g.query("SELECT k FROM alter_t", "sj")) == sorted(expected)


def test_older_transaction_replayed_after_alter_never_restores_a_stale_offset(tmp_path, s3_server):
    """The whole journal replays (no checkpoint): commits that moved the offset to f9 come
    before the ALTER to f2, and the restart keeps f2."""
    s3 = s3_server
    s3.create_bucket("replay")
    upload(s3, "replay", "in", 0, 10)
    g = GaleneProcess(tmp_path / "data", conf={"edit_log_roll_num": "100000"}, engine="sail").start()
    try:
        g.query("CREATE DATABASE sj")
        make_table(g, "replay_t")
        create_job(g, s3, "replay_job", "replay_t", "replay", "in")
        wait_job(g, "replay_job", lambda r: offset_of(r) == "in/f00009.csv")
        g.query("PAUSE JOB WHERE jobname = 'replay_job'", "sj")
        g.query("ALTER JOB replay_job PROPERTIES ('offset' = 'in/f00002.csv')", "sj")
        g.stop()
        journal = subprocess.run(
            [sys.executable, "-m", "galene.cli", "meta", "journal", str(tmp_path / "data" / "fe-meta"), "--limit", "100000"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        kinds = [json.loads(line)["op_type"] for line in journal.splitlines() if line.strip()]
        assert "AlterJob" in kinds and kinds.index("AlterJob") > max(i for i, k in enumerate(kinds) if k == "CommitTxn")
        g.start()
        row = job(g, "replay_job")
        assert offset_of(row) == "in/f00002.csv" and row["Status"] == "PAUSED"
        assert stats(row)["fileNumber"] == 10  # statistics describe what was committed
    finally:
        g.stop()


def test_filtered_rows_accumulate(jobs_galene, s3_server):
    """Doris never accumulated filteredRows across tasks."""
    g, s3 = jobs_galene, s3_server
    s3.create_bucket("filtered")
    make_table(g, "filtered_t", not_null_v=True)
    upload(s3, "filtered", "in", 0, 6, rows=6, bad_every=3)  # 2 bad rows per file
    create_job(
        g, s3, "filtered_job", "filtered_t", "filtered", "in",
        **{"session.enable_insert_strict": "false", "session.insert_max_filter_ratio": "0.5"},
    )  # fmt: skip
    row = wait_job(g, "filtered_job", lambda r: offset_of(r) == "in/f00005.csv")
    assert stats(row)["filteredRows"] == 12 and stats(row)["scannedRows"] == 36
    assert g.query("SELECT count(*) FROM filtered_t", "sj") == [(24,)]
    per_task = g.query(
        "SELECT LoadStatistic FROM tasks(\"type\"=\"insert\") WHERE JobName = 'filtered_job' AND Status = 'SUCCESS'", "sj"
    )
    assert sum(json.loads(s)["filteredRows"] for (s,) in per_task) == 12


def test_paused_job_shows_its_offset_after_restart(jobs_galene, s3_server):
    """Doris showed an empty offset for a paused job after a restart."""
    g, s3 = jobs_galene, s3_server
    s3.create_bucket("paused")
    make_table(g, "paused_t")
    upload(s3, "paused", "in", 0, 3)
    create_job(g, s3, "paused_job", "paused_t", "paused", "in")
    wait_job(g, "paused_job", lambda r: offset_of(r) == "in/f00002.csv")
    g.query("PAUSE JOB WHERE jobname = 'paused_job'", "sj")
    before = job(g, "paused_job")
    restart(g)
    after = job(g, "paused_job")
    assert after["Status"] == "PAUSED"
    assert after["CurrentOffset"] == before["CurrentOffset"] == '{"fileName":"in/f00002.csv"}'
    assert after["LoadStatistic"] == before["LoadStatistic"]


# --- bad input and the operator's view --------------------------------------------------------
def test_bad_input_pauses_with_a_named_cause_and_loads_nothing_partial(jobs_galene, s3_server):
    g, s3 = jobs_galene, s3_server
    s3.create_bucket("badin")
    make_table(g, "badin_t")
    upload(s3, "badin", "in", 0, 2)
    s3.put("badin/in/f00002.csv", b"1,2,x\n3,4\n5,6,z\n")  # a row with two columns
    upload(s3, "badin", "in", 3, 1)
    create_job(g, s3, "badin_job", "badin_t", "badin", "in", **{"s3.max_batch_files": "1"})
    row = wait_job(g, "badin_job", lambda r: r["Status"] == "PAUSED" and r["ErrorMsg"])
    assert "malformed csv file s3://badin/in/f00002.csv" in row["ErrorMsg"]
    assert "malformed source file" in row["JobRuntimeMsg"]
    assert offset_of(row) == "in/f00001.csv"
    assert g.query("SELECT count(*) FROM badin_t", "sj") == [(10,)]  # nothing of the bad batch
    # Skip the bad file: ALTER while paused (a failure pause is a pause), then RESUME.
    g.query("PAUSE JOB WHERE jobname = 'badin_job'", "sj")
    g.query("ALTER JOB badin_job PROPERTIES ('offset' = 'in/f00002.csv')", "sj")
    g.query("RESUME JOB WHERE jobname = 'badin_job'", "sj")
    row = wait_job(g, "badin_job", lambda r: offset_of(r) == "in/f00003.csv")
    assert row["Status"] == "RUNNING" and row["ErrorMsg"] == ""
    assert g.query("SELECT count(*) FROM badin_t", "sj") == [(15,)]

    # Wrong credentials: the job pauses saying so, with its offset kept.
    make_table(g, "cred_t")
    source = s3.props("s3://badin/in/*.csv", column_separator=",").replace('"s3.secret_key"="', '"s3.secret_key"="no')
    g.query(f"CREATE JOB cred_job PROPERTIES ('max_interval'='1') ON STREAMING DO INSERT INTO cred_t SELECT c1, c2, c3 FROM S3({source})", "sj")
    row = wait_job(g, "cred_job", lambda r: r["Status"] == "PAUSED" and r["ErrorMsg"])
    assert "credentials refused" in row["ErrorMsg"] and "credentials refused" in row["JobRuntimeMsg"]
    assert "*XXX" in row["ExecuteSql"] and "secret_key\" = 'no" not in row["ExecuteSql"]
    g.query("DROP JOB WHERE jobname = 'cred_job'", "sj")
    g.query("DROP JOB IF EXISTS WHERE jobname = 'cred_job'", "sj")
    with pytest.raises(Exception, match="does not exist"):
        g.query("DROP JOB WHERE jobname = 'cred_job'", "sj")
