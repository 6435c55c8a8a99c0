"""Bench: ARRAY and BITMAP queries through Galene's MySQL endpoint vs the engine's own functions.

Loads an N-row DUPLICATE table (default 10M) with an ARRAY<INT> column and a BITMAP column into a
fresh standalone Galene by stream load (CSV: arrays in Doris' text form `[1, 2, 3]`, the bitmap by
the load expression `b = to_bitmap(u)`, as Doris users load it), then runs

  * filter:   SELECT count(*) FROM t WHERE array_contains(a, 7)
  * group_by: SELECT g, bitmap_union_count(b) FROM t GROUP BY g ORDER BY g

through pymysql, and the same computations written with the engine's native functions
(array_contains; size(array_distinct(flatten(collect_list(b))))) over the very Parquet files Galene
wrote, on the same engine: a local[*] SparkSession with Galene's engine settings for Apache Spark,
a Sail server of its own for Sail. Each query runs once to warm up, then best of 3 on both sides;
results must be equal. One line per engine `RATIO types[<engine>] <galene ÷ native>`, then the
last line `RATIO types <the larger of the two>`.

    .venv/bin/python bench/types.py [--rows 10000000] [--engines spark,sail]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import tpch_data as td
from common import GaleneProcess, best_of

DB = "bench"
GROUPS = 100
USERS = 2_000_000
CHUNK = 1_000_000
QUERIES = {
    "filter": (
        "SELECT count(*) FROM t WHERE array_contains(a, 7)",
        "SELECT count(*) FROM t WHERE array_contains(a, 7)",
    ),
    "group_by": (
        "SELECT g, bitmap_union_count(b) FROM t GROUP BY g ORDER BY g",
        "SELECT g, size(array_distinct(flatten(collect_list(b)))) FROM t GROUP BY g ORDER BY g",
    ),
}


def chunk_csv(path: Path, start: int, rows: int, seed: int) -> None:
    """Columns k, g, a (Doris array text), u (the user id the load turns into a bitmap)."""
    rng = np.random.default_rng(seed)
    k = np.arange(start, start + rows, dtype=np.int64)
    g = rng.integers(0, GROUPS, rows)
    items = rng.integers(0, 1000, (rows, 3)).astype(str)
    a = pc.binary_join_element_wise(
        "[", pa.array(items[:, 0]), ", ", pa.array(items[:, 1]), ", ", pa.array(items[:, 2]), "]", ""
    )
    u = rng.integers(0, USERS, rows)
    table = pa.table({"k": k, "g": g, "a": a, "u": u})
    pacsv.write_csv(table, path, pacsv.WriteOptions(include_header=False, delimiter="|", quoting_style="none"))


def load(g: GaleneProcess, work: Path, rows: int) -> float:
    g.query(f"CREATE DATABASE {DB}")
    g.query(
        # No compaction: the native side reads the loaded files themselves (a compaction's
        # inputs stay on disk for the GC grace and would be read twice).
        "CREATE TABLE t (k BIGINT, g INT, a ARRAY<INT>, b BITMAP) DUPLICATE KEY(k) "
        'DISTRIBUTED BY HASH(k) BUCKETS 4 PROPERTIES ("disable_auto_compaction" = "true")',
        DB,
    )
    t0 = time.perf_counter()
    for i, start in enumerate(range(0, rows, CHUNK)):
        n = min(CHUNK, rows - start)
        path = work / f"t{i}.csv"
        chunk_csv(path, start, n, seed=100 + i)
        headers = {"column_separator": "|", "columns": "k, g, a, u, b = to_bitmap(u)"}
        reply = g.stream_load(DB, "t", path.read_bytes(), headers)
        assert reply["Status"] == "Success", reply
        path.unlink()
    assert g.query("SELECT count(*) FROM t", DB)[0][0] == rows
    return time.perf_counter() - t0


def run_engine(engine: str, work: Path, rows: int) -> tuple[float, float]:
    g = GaleneProcess(work / f"galene-{engine}", engine=engine)
    raw = sail = None
    g.start(timeout=300)
    try:
        load_s = load(g, work, rows)
        print(f"[{engine}] loaded {rows} rows in {load_s:.1f} s", flush=True)
        conn = g.mysql(DB)
        galene_t, galene_r = {}, {}
        for name, (sql, _) in QUERIES.items():

            def run(sql=sql):
                with conn.cursor() as cur:
                    cur.execute(sql)
                    return [tuple(int(x) for x in r) for r in cur.fetchall()]

            galene_t[name], galene_r[name] = best_of(run)
        conn.close()
        if engine == "spark":
            raw = td.raw_spark()
        else:
            sail = td.RawSail(work / "raw-sail.log")
            raw = sail.spark
        files = [
            str(f)
            for f in sorted((work / f"galene-{engine}" / "storage").rglob("*.parquet"))
            if set(pq.read_schema(f).names) >= {"k", "g", "a", "b"}
        ]
        raw.read.parquet(*files).createOrReplaceTempView("t")
        raw_t = {}
        for name, (_, native) in QUERIES.items():
            raw_t[name], result = best_of(lambda native=native: [tuple(int(x) for x in r) for r in raw.sql(native).collect()])
            assert result == galene_r[name], (engine, name, result[:3], galene_r[name][:3])
        for name in QUERIES:
            print(f"[{engine}] {name:9s} galene {galene_t[name]:7.3f} s  native {raw_t[name]:7.3f} s  "
                  f"ratio {galene_t[name] / raw_t[name]:5.2f}", flush=True)  # fmt: skip
        gt, rt = sum(galene_t.values()), sum(raw_t.values())
        return gt, rt
    finally:
        if sail is not None:
            sail.stop()
        elif raw is not None:
            raw.stop()
        g.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--engines", default="spark,sail")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="galene-bench-types-"))
    ratios = {}
    try:
        for engine in [e.strip() for e in args.engines.split(",") if e.strip()]:
            gt, rt = run_engine(engine, work, args.rows)
            ratios[engine] = gt / rt
            print(f"RATIO types[{engine}] {ratios[engine]:.3f}  (galene {gt:.3f} s, native {rt:.3f} s)", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"rows={args.rows}")
    print(f"RATIO types {max(ratios.values()):.3f}")


if __name__ == "__main__":
    main()
