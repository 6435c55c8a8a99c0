"""Bench: one big CSV stream load through FE -> 307 -> BE vs pyarrow parse+write alone.

Generates an N-row six-column CSV (int, bigint, varchar, double, date, datetime), loads it
into a DUPLICATE table of a fresh standalone Galene exactly as curl does (FE entry, 307,
body to the BE), and in the same run parses + writes the same file with pyarrow alone.
Last line: `RATIO streamload_big <galene rows/s ÷ pyarrow rows/s>`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from common import SIX_COLUMNS, GaleneProcess, Timer, generate_six_column_csv


def pyarrow_baseline(csv_path: Path, out_dir: Path) -> float:
    types = {
        "c_int": pa.int32(),
        "c_bigint": pa.int64(),
        "c_varchar": pa.string(),
        "c_double": pa.float64(),
        "c_date": pa.date32(),
        "c_datetime": pa.timestamp("us"),
    }
    with Timer() as t:
        table = pacsv.read_csv(
            csv_path,
            read_options=pacsv.ReadOptions(column_names=list(types)),
            convert_options=pacsv.ConvertOptions(column_types=types),
        )
        pq.write_table(table, out_dir / "baseline.parquet")
    return t.seconds


def galene_load(g: GaleneProcess, csv_path: Path, table: str) -> tuple[float, dict]:
    """Load with curl exactly as the Doris docs show: FE entry, 307, body to the BE."""
    url = f"http://127.0.0.1:{g.http_port}/api/bench/{table}/_stream_load"
    cmd = ["curl", "-sS", "--location-trusted", "-u", "root:", "-H", f"label:big_{table}", "-H", "column_separator:,",
           "-T", str(csv_path), url]  # fmt: skip
    with Timer() as t:
        res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    reply = json.loads(res.stdout)
    assert reply["Status"] == "Success", reply
    return t.seconds, reply


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="galene-bench-"))
    try:
        csv_path = work / "data.csv"
        generate_six_column_csv(csv_path, args.rows)
        size_mb = csv_path.stat().st_size / 1e6
        print(f"rows={args.rows} csv={size_mb:.1f} MB")

        base_s = pyarrow_baseline(csv_path, work)
        g = GaleneProcess(work / "galene").start()
        try:
            g.query("CREATE DATABASE bench")
            # Two loads into two tables; like the baseline (run twice), the better one counts.
            runs = []
            for table in ("t1", "t2"):
                g.query(
                    f"CREATE TABLE {table} {SIX_COLUMNS} DUPLICATE KEY(c_int) DISTRIBUTED BY HASH(c_int) BUCKETS 4",
                    "bench",
                )
                seconds, reply = galene_load(g, csv_path, table)
                assert reply["NumberLoadedRows"] == args.rows, reply
                count = g.query(f"SELECT count(*) FROM {table}", "bench")[0][0]
                assert count == args.rows, count
                runs.append((seconds, reply))
            galene_s, reply = min(runs, key=lambda r: r[0])
        finally:
            g.stop()
        base_s2 = pyarrow_baseline(csv_path, work)  # baseline before and after: the better one counts
        base_s = min(base_s, base_s2)
        galene_rps = args.rows / galene_s
        base_rps = args.rows / base_s
        print(f"galene   : {galene_s:8.2f} s  {galene_rps:12,.0f} rows/s")
        print("  reply: " + ", ".join(f"{k}={v}" for k, v in reply.items() if k.endswith("Ms")))
        print(f"pyarrow  : {base_s:8.2f} s  {base_rps:12,.0f} rows/s")
        print(f"RATIO streamload_big {galene_rps / base_rps:.3f}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
