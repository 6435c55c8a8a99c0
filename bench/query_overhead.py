"""Bench: analytical queries through Galene's MySQL endpoint vs raw Spark SQL on the same files.

Loads an N-row DUPLICATE fact table (default 5M) and a 1,000-row dimension table into a fresh
standalone Galene by stream load, then runs five queries (filter, group-by, join with the
small table, order-by-limit, count distinct) through pymysql, and the same queries as raw
Spark SQL over the very Parquet files Galene wrote, in a Spark session of this process.
Each query runs once to warm up, then best of 3 is taken on both sides.
Last line: `RATIO query_overhead <galene total ÷ raw Spark total>`.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from common import SIX_COLUMNS, GaleneProcess, best_of, generate_six_column_csv

QUERIES = {
    "filter": "SELECT count(*), sum(c_double) FROM fact WHERE c_double > 500 AND c_varchar LIKE 'delta%'",
    "group_by": "SELECT c_date, count(*), avg(c_double) FROM fact GROUP BY c_date ORDER BY c_date LIMIT 50",
    "join": "SELECT d.name, sum(f.c_double) AS s FROM fact f JOIN dim d ON d.k = f.c_int % 1000 "
    "GROUP BY d.name ORDER BY s DESC LIMIT 10",
    "order_limit": "SELECT c_int, c_double FROM fact ORDER BY c_double DESC, c_int LIMIT 20",
    "count_distinct": "SELECT count(DISTINCT c_bigint % 100000) FROM fact",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5_000_000)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="galene-bench-q-"))
    g = GaleneProcess(work / "galene").start()
    try:
        g.query("CREATE DATABASE bench")
        g.query(
            f"CREATE TABLE fact {SIX_COLUMNS} DUPLICATE KEY(c_int) DISTRIBUTED BY HASH(c_int) BUCKETS 4",
            "bench",
        )
        g.query(
            "CREATE TABLE dim (k INT, name VARCHAR(32)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
            "bench",
        )
        chunk = 1_000_000
        for i, start in enumerate(range(0, args.rows, chunk)):
            n = min(chunk, args.rows - start)
            path = work / f"fact{i}.csv"
            generate_six_column_csv(path, n, seed=100 + i)
            reply = g.stream_load("bench", "fact", path.read_bytes(), {"column_separator": ","})
            assert reply["Status"] == "Success", reply
            path.unlink()
        dim = "".join(f"{k},name{k % 37}\n" for k in range(1000)).encode()
        assert g.stream_load("bench", "dim", dim, {"column_separator": ","})["Status"] == "Success"
        assert g.query("SELECT count(*) FROM fact", "bench")[0][0] == args.rows

        conn = g.mysql("bench")
        galene_times, galene_results = {}, {}
        for name, sql in QUERIES.items():

            def run(sql=sql):
                with conn.cursor() as cur:
                    cur.execute(sql)
                    return cur.fetchall()

            galene_times[name], galene_results[name] = best_of(run)
        conn.close()
        print("galene:", {k: round(v, 3) for k, v in galene_times.items()}, flush=True)

        from pyspark.sql import SparkSession

        spark = (
            SparkSession.builder.master("local[*]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.driver.memory", "2g")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("WARN")
        # Galene's files, told apart by their columns (whatever the storage layout).
        import pyarrow.parquet as pq

        files: dict[str, list[str]] = {"fact": [], "dim": []}
        for f in sorted((work / "galene").rglob("*.parquet")):
            names = pq.read_schema(f).names
            view = "fact" if "c_int" in names else "dim" if "name" in names else None
            if view is not None:
                files[view].append(str(f))
        for view in ("fact", "dim"):
            spark.read.parquet(*files[view]).createOrReplaceTempView(view)
        spark_times = {}
        for name, sql in QUERIES.items():
            spark_times[name], result = best_of(lambda sql=sql: spark.sql(sql).collect())
            assert len(result) == len(galene_results[name]), (name, result, galene_results[name])
        spark.stop()

        print(f"rows={args.rows}")
        print(f"{'query':16s} {'galene s':>10s} {'spark s':>10s} {'ratio':>7s}")
        for name in QUERIES:
            print(f"{name:16s} {galene_times[name]:10.3f} {spark_times[name]:10.3f} "
                  f"{galene_times[name] / spark_times[name]:7.2f}")  # fmt: skip
        gt, st = sum(galene_times.values()), sum(spark_times.values())
        print(f"{'total':16s} {gt:10.3f} {st:10.3f}")
        print(f"RATIO query_overhead {gt / st:.3f}")
    finally:
        g.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
