"""Streaming jobs against a real S3 server (SeaweedFS), issue 12.

Modes (`--mode`):
* `files` (default): N (10,000) CSV files of ~2 KB are uploaded, then ONE job ingests them;
  files/s and rows/s from CREATE JOB to the offset reaching the last file, against reading and
  parsing the same files with pyarrow alone in the same run (RATIO = Galene files/s ÷ pyarrow
  files/s).
* `lag`: files arrive at a steady rate (20/s for 60 s) into a job with max_interval=1; the lag
  of a file is the time from its upload to its rows being visible to a query (p50, p99);
  RATIO = p99 ÷ max_interval.
* `stall`: the endpoint is black-holed in a network namespace while the job ingests; the time
  to the job's PAUSED state with an ErrorMsg, and from healing to the job running again
  (RATIO = stall-to-paused seconds).

`--engine spark|sail`. The last line is `RATIO <name> <value>`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import GaleneProcess
from tests.support.netlab import NetLab
from tests.support.seaweed import SeaweedS3


def csv_file(i: int, rows: int = 40) -> bytes:
    return "".join(f"{i * 1000 + r},{r * 7},name-{i}-{r}-padding-padding\n" for r in range(rows)).encode()


def job_row(g: GaleneProcess, name: str) -> dict:
    cols = ("Status", "CurrentOffset", "LoadStatistic", "ErrorMsg", "JobRuntimeMsg", "SucceedTaskCount")
    rows = g.query(f"SELECT {', '.join(cols)} FROM jobs('type'='insert') WHERE Name = '{name}'", "b")
    return dict(zip(cols, rows[0], strict=True))


def setup(g: GaleneProcess, s3: SeaweedS3, bucket: str, props: dict, source_extra: dict | None = None) -> None:
    g.query("CREATE DATABASE IF NOT EXISTS b")
    g.query("CREATE TABLE t (k INT, v INT, s VARCHAR(64)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 4", "b")
    source = s3.props(f"s3://{bucket}/in/*.csv", column_separator=",", **(source_extra or {}))
    plist = ", ".join(f"'{k}'='{v}'" for k, v in props.items())
    g.query(f"CREATE JOB j PROPERTIES ({plist}) ON STREAMING DO INSERT INTO t SELECT c1, c2, c3 FROM S3({source})", "b")


def pyarrow_alone(s3: SeaweedS3, bucket: str, names: list[str]) -> float:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    fs = s3.fs()
    t0 = time.monotonic()

    def one(name):
        with fs.open_input_stream(f"{bucket}/{name}") as f:
            return pacsv.read_csv(pa.BufferReader(f.read()), read_options=pacsv.ReadOptions(autogenerate_column_names=True)).num_rows

    with ThreadPoolExecutor(8) as pool:
        rows = sum(pool.map(one, names))
    assert rows > 0
    return time.monotonic() - t0


def mode_files(args, work: Path) -> float:
    s3 = SeaweedS3(work / "sw").start()
    g = None
    try:
        s3.create_bucket("bench")
        names = [f"in/f{i:06d}.csv" for i in range(args.files)]
        t0 = time.monotonic()
        s3.put_many([(f"bench/{n}", csv_file(i)) for i, n in enumerate(names)], threads=16)
        print(f"uploaded {args.files} files in {time.monotonic() - t0:.1f}s", flush=True)
        rows = args.files * 40
        g = GaleneProcess(work / "g", role="fe", engine=args.engine).start()
        t0 = time.monotonic()
        setup(g, s3, "bench", {"max_interval": "1", "s3.max_batch_files": str(args.batch)})
        last = json.dumps({"fileName": names[-1]}, separators=(",", ":"))
        while True:
            r = job_row(g, "j")
            if r["CurrentOffset"] == last:
                break
            if r["Status"] == "PAUSED":
                raise SystemExit(f"job paused: {r}")
            time.sleep(0.5)
        galene_s = time.monotonic() - t0
        assert g.query("SELECT count(*) FROM t", "b") == [(rows,)]
        raw_s = pyarrow_alone(s3, "bench", names)
        print(f"galene ({args.engine}): {args.files} files, {rows} rows in {galene_s:.1f}s = "
              f"{args.files / galene_s:.0f} files/s, {rows / galene_s:.0f} rows/s; tasks {r['SucceedTaskCount']}")
        print(f"pyarrow alone: {raw_s:.1f}s = {args.files / raw_s:.0f} files/s, {rows / raw_s:.0f} rows/s")
        return (args.files / galene_s) / (args.files / raw_s)
    finally:
        if g is not None:
            g.kill()
        s3.stop()


def mode_lag(args, work: Path) -> float:
    s3 = SeaweedS3(work / "sw").start()
    g = None
    try:
        s3.create_bucket("lag")
        g = GaleneProcess(work / "g", role="fe", engine=args.engine).start()
        setup(g, s3, "lag", {"max_interval": "1"})
        uploaded: dict[int, float] = {}
        visible: dict[int, float] = {}
        n = args.rate * args.seconds
        stop = threading.Event()

        def producer():
            fs = s3.fs()
            start = time.monotonic()
            for i in range(n):
                due = start + i / args.rate
                time.sleep(max(0.0, due - time.monotonic()))
                with fs.open_output_stream(f"lag/in/f{i:06d}.csv") as f:
                    f.write(csv_file(i, rows=5))
                uploaded[i] = time.monotonic()
            stop.set()

        threading.Thread(target=producer, daemon=True).start()
        conn = g.mysql("b")
        deadline = time.monotonic() + args.seconds + 120
        while len(visible) < n and time.monotonic() < deadline:
            with conn.cursor() as cur:
                cur.execute("SELECT DISTINCT k DIV 1000 FROM t")
                now = time.monotonic()
                for (i,) in cur.fetchall():
                    visible.setdefault(int(i), now)
            time.sleep(0.1)
        lags = sorted(visible[i] - uploaded[i] for i in visible if i in uploaded)
        p50 = statistics.median(lags)
        p99 = lags[int(0.99 * (len(lags) - 1))]
        print(f"lag ({args.engine}) over {len(lags)}/{n} files at {args.rate}/s: p50 {p50:.2f}s p99 {p99:.2f}s "
              f"max {lags[-1]:.2f}s (includes the polling query's own time)")
        return p99 / 1.0
    finally:
        if g is not None:
            g.kill()
        s3.stop()


def mode_stall(args, work: Path) -> float:
    lab = NetLab().create()
    s3 = g = None
    try:
        netns, ip = lab.add_node("s3")
        s3 = SeaweedS3(work / "sw", ip=ip, netns=netns).start()
        s3.create_bucket("stall")
        s3.put_many([(f"stall/in/f{i:06d}.csv", csv_file(i)) for i in range(200)])
        g = GaleneProcess(work / "g", role="fe", engine=args.engine).start()
        setup(g, s3, "stall", {"max_interval": "1", "s3.max_batch_files": "5"})
        while int(job_row(g, "j")["SucceedTaskCount"]) < 3:
            time.sleep(0.3)
        t0 = time.monotonic()
        lab.drop_incoming("s3", s3.s3_port)
        while True:
            r = job_row(g, "j")
            if r["Status"] == "PAUSED" and r["ErrorMsg"]:
                break
            time.sleep(0.3)
        stall_s = time.monotonic() - t0
        print(f"stall -> PAUSED in {stall_s:.1f}s: {r['ErrorMsg'][:200]}")
        time.sleep(3)
        t1 = time.monotonic()
        lab.heal()
        base = int(job_row(g, "j")["SucceedTaskCount"])
        while not (job_row(g, "j")["Status"] == "RUNNING" and int(job_row(g, "j")["SucceedTaskCount"]) > base):
            time.sleep(0.3)
        heal_s = time.monotonic() - t1
        print(f"heal -> running and committing again in {heal_s:.1f}s")
        return stall_s
    finally:
        if g is not None:
            g.kill()
        if s3 is not None:
            s3.stop()
        lab.destroy()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=("files", "lag", "stall"), default="files")
    p.add_argument("--engine", choices=("spark", "sail"), default="spark")
    p.add_argument("--files", type=int, default=10_000)
    p.add_argument("--batch", type=int, default=2000)
    p.add_argument("--rate", type=int, default=20)
    p.add_argument("--seconds", type=int, default=60)
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="galene-bench-jobs-"))
    try:
        ratio = {"files": mode_files, "lag": mode_lag, "stall": mode_stall}[args.mode](args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    name = {"files": "streaming_job_files_vs_pyarrow", "lag": "streaming_job_lag_p99_over_interval",
            "stall": "streaming_job_stall_to_paused_s"}[args.mode]
    print(f"RATIO {name}_{args.engine} {ratio:.3f}")


if __name__ == "__main__":
    main()
