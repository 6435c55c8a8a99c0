"""Bench: one big CSV stream load through FE -> 307 -> BE vs pyarrow parse+write alone.

Generates an N-row six-column CSV (int, bigint, varchar, double, date, datetime), loads it
into a DUPLICATE table of a fresh standalone Galene exactly as curl does (FE entry, 307,
body to the BE), and in the same run parses + writes the same file with pyarrow alone.
Last line: `RATIO streamload_big <galene rows/s ÷ pyarrow rows/s>`.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from common import SIX_COLUMNS, GaleneProcess, Timer, auth_header, generate_six_column_csv


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


def galene_load(g: GaleneProcess, csv_path: Path) -> tuple[float, dict]:
    url = f"http://127.0.0.1:{g.http_port}/api/bench/t/_stream_load"
    headers = {**auth_header(), "column_separator": ",", "Expect": "100-continue", "label": "big"}
    with Timer() as t:
        with httpx.Client(timeout=3600) as c:
            r = c.put(url, headers=headers, content=b"")
            assert r.status_code == 307, r.text
            with open(csv_path, "rb") as f:
                r = c.put(r.headers["location"], headers=headers, content=f)
    reply = r.json()
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
            g.query(f"CREATE TABLE t {SIX_COLUMNS} DUPLICATE KEY(c_int) DISTRIBUTED BY HASH(c_int) BUCKETS 4", "bench")
            galene_s, reply = galene_load(g, csv_path)
            assert reply["NumberLoadedRows"] == args.rows, reply
            count = g.query("SELECT count(*) FROM t", "bench")[0][0]
            assert count == args.rows, count
        finally:
            g.stop()
        base_s2 = pyarrow_baseline(csv_path, work)  # baseline before and after: the better one counts
        base_s = min(base_s, base_s2)
        galene_rps = args.rows / galene_s
        base_rps = args.rows / base_s
        print(f"galene   : {galene_s:8.2f} s  {galene_rps:12,.0f} rows/s  (reply LoadTimeMs={reply['LoadTimeMs']})")
        print(f"pyarrow  : {base_s:8.2f} s  {base_rps:12,.0f} rows/s")
        print(f"RATIO streamload_big {galene_rps / base_rps:.3f}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
