"""Bench: INSERT … SELECT and CTAS in Galene vs the raw engine writing the same rows as Parquet.

On TPC-H SF1 lineitem (6,001,215 rows; data and loading shared with bench/tpch.py through
bench/tpch_data.py — bench-only tools are installed into the venv if missing and the Parquet is
generated once under `--data-dir`, default /tmp/galene-tpch), loaded into a fresh standalone
Galene by Parquet stream load:

* `CREATE TABLE lineitem2 LIKE lineitem; INSERT INTO lineitem2 SELECT * FROM lineitem`, timed
  (the INSERT only), vs `spark.read.parquet(<lineitem.parquet>).write.parquet(tmp)` on the raw
  engine in the same run;
* `CREATE TABLE agg AS SELECT l_orderkey, SUM(l_extendedprice), SUM(l_quantity), COUNT(*) FROM
  lineitem GROUP BY l_orderkey` (1.5M rows) vs the raw engine writing the same aggregate as
  Parquet;

on Apache Spark (Galene `--engine spark` vs a local[*] SparkSession in this process with Galene's
engine settings) and on Sail (the same Galene data dir restarted with `--engine sail` vs a
`sail spark server` this script starts). Each statement runs `--runs` times (default 2),
alternating with its baseline; the better time counts on both sides (the target table is
dropped and created again between runs). Row counts are checked on both sides. The FE's peak
RSS (VmHWM) is read before the first statement and after the last of each engine phase: its
growth is what the statements cost the FE (the engine is a separate process on both engines).
Last lines: `RATIO insert_select_spark …`, `RATIO insert_select_sail …`, `RATIO ctas_spark …`,
`RATIO ctas_sail …`. Targets: INSERT … SELECT ≤ 1.3 × the raw Parquet write; FE RSS growth
≤ 300 MB.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import traceback
from pathlib import Path

import pymysql
import tpch_data as td
from common import GaleneProcess

from tests.support.ports import free_port
from tests.support.procs import peak_rss_bytes

DB = "tpch"
AGG_SELECT = (
    "SELECT l_orderkey, SUM(l_extendedprice) AS revenue, SUM(l_quantity) AS qty, COUNT(*) AS lines "
    "FROM lineitem GROUP BY l_orderkey"
)
MB = 1 << 20


def mysql(g: GaleneProcess) -> pymysql.Connection:
    return pymysql.connect(
        host="127.0.0.1", port=g.query_port, user="root", password="", database=DB,
        autocommit=True, read_timeout=3600,
    )  # fmt: skip


def run_engine(engine, galene_dir, ports, sf_dir, runs, fresh, work) -> dict:
    g = GaleneProcess(galene_dir, engine=engine, **ports)
    raw = sail = None
    out: dict = {"insert": [], "raw_insert": [], "ctas": [], "raw_ctas": []}
    try:
        g.start(timeout=300)
        if fresh:
            td.create_tables(g, DB, ["lineitem"])
            out["load"] = td.load_tables(g, DB, sf_dir, ["lineitem"])["lineitem"]
        if engine == "spark":
            raw = td.raw_spark()
        else:
            sail = td.RawSail(work / "raw-sail.log")
            raw = sail.spark
        td.register_views(raw, sf_dir, ["lineitem"])
        rows = td.row_count(sf_dir, "lineitem")
        fe = g.role_pid("fe")
        conn = mysql(g)
        cur = conn.cursor()
        cur.execute("SELECT count(*) FROM lineitem")
        assert cur.fetchone()[0] == rows
        out["fe_hwm_before"] = peak_rss_bytes(fe)
        out["fe_rss_before"] = _rss(fe)
        src = str(td.parquet_path(sf_dir, "lineitem"))
        for i in range(runs):
            # INSERT … SELECT
            cur.execute("DROP TABLE IF EXISTS lineitem2")
            cur.execute("CREATE TABLE lineitem2 LIKE lineitem")
            t0 = time.perf_counter()
            cur.execute("INSERT INTO lineitem2 SELECT * FROM lineitem")
            out["insert"].append(time.perf_counter() - t0)
            cur.execute("SELECT count(*) FROM lineitem2")
            n = cur.fetchone()[0]
            assert n == rows, f"lineitem2 has {n} rows, expected {rows}"
            dest = work / f"raw-{engine}-lineitem-{i}"
            t0 = time.perf_counter()
            raw.read.parquet(src).write.parquet(str(dest))
            out["raw_insert"].append(time.perf_counter() - t0)
            n = raw.read.parquet(str(dest)).count()
            assert n == rows, f"raw copy has {n} rows, expected {rows}"
            shutil.rmtree(dest, ignore_errors=True)
            print(f"[{engine}] run {i + 1}: INSERT…SELECT galene {out['insert'][-1]:7.2f} s  "
                  f"raw write {out['raw_insert'][-1]:7.2f} s", flush=True)  # fmt: skip
            # CTAS of an aggregate
            cur.execute("DROP TABLE IF EXISTS agg")
            t0 = time.perf_counter()
            cur.execute(f"CREATE TABLE agg AS {AGG_SELECT}")
            out["ctas"].append(time.perf_counter() - t0)
            cur.execute("SELECT count(*), sum(lines) FROM agg")
            n, lines = cur.fetchone()
            dest = work / f"raw-{engine}-agg-{i}"
            t0 = time.perf_counter()
            raw.sql(AGG_SELECT).write.parquet(str(dest))
            out["raw_ctas"].append(time.perf_counter() - t0)
            rn = raw.read.parquet(str(dest)).count()
            assert n == rn and int(lines) == rows, f"agg: galene {n} rows ({lines} lines), raw {rn}"
            out["agg_rows"] = n
            shutil.rmtree(dest, ignore_errors=True)
            print(f"[{engine}] run {i + 1}: CTAS          galene {out['ctas'][-1]:7.2f} s  "
                  f"raw write {out['raw_ctas'][-1]:7.2f} s  ({n} rows)", flush=True)  # fmt: skip
        out["fe_hwm_after"] = peak_rss_bytes(fe)
        out["fe_rss_after"] = _rss(fe)
        out["engine_pid_rss"] = _engine_rss(g)
        cur.execute("DROP TABLE IF EXISTS lineitem2")
        cur.execute("DROP TABLE IF EXISTS agg")
        conn.close()
    finally:
        if sail is not None:
            sail.stop()
        elif raw is not None:
            raw.stop()
        g.stop()
    return out


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _engine_rss(g: GaleneProcess) -> str:
    """Peak RSS of the FE's engine child (the Spark JVM or the Sail server), for the record."""
    from tests.support.procs import children_of

    fe = g.role_pid("fe")
    out = []
    for pid in children_of(fe):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        name = "java" if argv and argv[0].endswith(b"java") else "sail" if b"galene.engine.sail" in argv else None
        if name:
            out.append(f"{name} {peak_rss_bytes(pid) / MB:.0f} MB")
    return ", ".join(out) or "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=td.DEFAULT_DATA_DIR)
    ap.add_argument("--sf", type=int, default=1)
    ap.add_argument("--engines", default="spark,sail")
    ap.add_argument("--runs", type=int, default=2, help="runs per statement (the better counts)")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    t_start = time.perf_counter()
    load_start = td.load_average()
    td.ensure_tools()
    sf_dir = td.generate(args.data_dir, args.sf)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    work = Path(tempfile.mkdtemp(prefix="galene-insert-bench-"))
    ports = {"http_port": free_port(), "query_port": free_port(), "be_http_port": free_port()}
    results = {}
    try:
        for i, engine in enumerate(engines):
            t0 = time.perf_counter()
            try:
                results[engine] = run_engine(engine, work / "galene", ports, sf_dir, args.runs, i == 0, work)
            except Exception:  # the other engine's phase still runs
                traceback.print_exc()
                print(f"[{engine}] phase FAILED (Galene log: {work / 'galene' / 'galene-start.log'})", flush=True)
                if i == 0:
                    raise
                continue
            results[engine]["seconds"] = time.perf_counter() - t0
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    print()
    rows = td.row_count(sf_dir, "lineitem")
    print(f"TPC-H SF{args.sf} lineitem: {rows:,d} rows; best of {args.runs} per side, seconds")
    ratios = []
    for e, r in results.items():
        if "load" in r:
            print(f"load lineitem: {r['load']:.1f} s")
        gi, ri, gc, rc = (min(r[k]) for k in ("insert", "raw_insert", "ctas", "raw_ctas"))
        growth = (r["fe_hwm_after"] - r["fe_hwm_before"]) / MB
        print(f"[{e}] INSERT INTO lineitem2 SELECT * : galene {gi:7.2f} s ({rows / gi:,.0f} rows/s)  "
              f"raw Parquet write {ri:7.2f} s  ratio {gi / ri:.3f}   runs {_fmt(r['insert'])} / {_fmt(r['raw_insert'])}")  # fmt: skip
        print(f"[{e}] CTAS agg ({r['agg_rows']:,d} rows)        : galene {gc:7.2f} s  "
              f"raw Parquet write {rc:7.2f} s  ratio {gc / rc:.3f}   runs {_fmt(r['ctas'])} / {_fmt(r['raw_ctas'])}")  # fmt: skip
        print(f"[{e}] FE peak RSS (VmHWM) {r['fe_hwm_before'] / MB:.0f} MB -> {r['fe_hwm_after'] / MB:.0f} MB: "
              f"growth {growth:.0f} MB (RSS now {r['fe_rss_after'] / MB:.0f} MB); engine peak: {r['engine_pid_rss']}")  # fmt: skip
        print(f"[{e}] phase: {r['seconds']:.0f} s")
        ratios.append((e, gi / ri, gc / rc, growth))
    print(f"whole bench: {time.perf_counter() - t_start:.0f} s; load average at start {load_start}, at end "
          f"{td.load_average()} (2 cores, shared)")
    for e, ins, ctas, growth in ratios:
        print(f"RATIO insert_select_{e} {ins:.3f}")
    for e, ins, ctas, growth in ratios:
        print(f"RATIO ctas_{e} {ctas:.3f}")
    for e, ins, ctas, growth in ratios:
        print(f"(info) fe_rss_growth_mb_{e} {growth:.0f}")


def _fmt(times: list[float]) -> str:
    return ",".join(f"{t:.2f}" for t in times)


if __name__ == "__main__":
    main()
