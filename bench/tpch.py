"""Bench: TPC-H SF1, the 22 queries through Galene's MySQL endpoint vs the raw engine and DuckDB.

Set-up (once, cached): bench-only tools are installed into the venv if missing
(`.venv/bin/python -m pip install tpchgen-cli duckdb duckdb-extension-tpch`, see
bench/tpch_data.py), and `tpchgen-cli parquet -s 1` writes the 8 tables as Parquet under
`--data-dir` (default /tmp/galene-tpch/sf1).

Run: a fresh standalone Galene gets the 8 tables as Doris DUPLICATE KEY tables (keys BIGINT,
DECIMAL(15,2), DATE, VARCHAR; hash buckets by size) by Parquet stream loads of the same files.
The query texts are the 22 that DuckDB's tpch extension ships (PyPI `duckdb-extension-tpch`,
LOADed by path; never INSTALLed), run unchanged through pymysql. In the same run each query
also runs on the raw engine over the generated Parquet files (temp views) and in DuckDB over
the same files:

* Apache Spark: Galene `--engine spark` vs a local[*] SparkSession in this process with
  Galene's engine settings (shuffle partitions, AQE, memory — galene.engine.session.DEFAULT_CONF);
* Sail: the same Galene data dir restarted with `--engine sail` vs a Spark Connect session to a
  `sail spark server` this script starts.

Timing: per query one warm-up run, then the BEST of 3 (medians are printed too); Galene and the
raw engine alternate query by query so drift on the shared box hits both alike. Every Galene
result is compared with DuckDB's after normalization (rows sorted when the query has no ORDER
BY; numbers rounded to 2 places; dates as ISO strings); differences are printed.
Last lines: `RATIO tpch_spark …`, `RATIO tpch_sail …`, `RATIO tpch_sail_vs_duckdb …`.
Targets: ≤ 1.05 on Spark, ≤ 1.10 on Sail, Galene-on-Sail ≤ 1.8× DuckDB.

    .venv/bin/python bench/tpch.py [--engines spark,sail] [--queries 1,3,5-9] [--runs 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import statistics
import tempfile
import time
import traceback
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import tpch_data as td
from common import GaleneProcess

from tests.support.ports import free_port

DB = "tpch"
CENT = Decimal("0.01")


def timed(fn, runs: int) -> tuple[float, float, object]:
    """One warm-up, then `runs` timed runs: (best, median, last result)."""
    fn()
    times, result = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times), result


def norm_value(v):
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (int, float, Decimal)):
        d = v if isinstance(v, Decimal) else Decimal(repr(v)) if isinstance(v, float) else Decimal(v)
        return str(d.quantize(CENT, rounding=ROUND_HALF_EVEN))
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, bytes):
        return v.decode()
    return str(v)


def normalize(rows, ordered: bool) -> list[tuple]:
    out = [tuple(norm_value(v) for v in r) for r in rows]
    return out if ordered else sorted(out, key=repr)


def arrow_rows(table) -> list[tuple]:
    cols = [c.to_pylist() for c in table.columns]
    return list(zip(*cols)) if cols else []


def diff_text(a: list[tuple], b: list[tuple], limit: int = 5) -> str:
    lines = [f"rows {len(a)} vs {len(b)}"]
    shown = 0
    for i in range(max(len(a), len(b))):
        ra = a[i] if i < len(a) else None
        rb = b[i] if i < len(b) else None
        if ra != rb:
            lines.append(f"  row {i}: galene {ra} | duckdb {rb}")
            shown += 1
            if shown >= limit:
                break
    if sorted(a, key=repr) == sorted(b, key=repr):
        lines.append("  (same rows, different order)")
    return "\n".join(lines)


def parse_queries(spec: str | None, all_nrs: list[int]) -> list[int]:
    if not spec:
        return all_nrs
    out = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def run_engine(engine, galene_dir, ports, sf_dir, queries, duck, runs, fresh, logs) -> dict:
    """Galene on `engine` and the raw engine, query by query. Returns per-query figures.

    Every phase restarts the same Galene data dir on the same ports (the catalog names its
    backend by address)."""
    g = GaleneProcess(galene_dir, engine=engine, **ports)
    raw = sail = None
    out = {"galene": {}, "raw": {}, "galene_median": {}, "raw_median": {}, "errors": {}, "diffs": {},
           "raw_diffs": {}, "load": {}}  # fmt: skip
    try:
        g.start(timeout=300)
        if fresh:
            td.create_tables(g, DB)
            out["load"] = td.load_tables(g, DB, sf_dir)
        if engine == "spark":
            raw = td.raw_spark()
        else:
            sail = td.RawSail(logs / "raw-sail.log")
            raw = sail.spark
        td.register_views(raw, sf_dir)
        conn = g.mysql(DB)
        for nr, sql in queries:
            ordered = "order by" in sql.lower()

            def galene(sql=sql):
                with conn.cursor() as cur:
                    cur.execute(sql)
                    return cur.fetchall()

            try:
                best, med, rows = timed(galene, runs)
            except Exception as e:  # noqa: BLE001 - reported, the run goes on
                out["errors"][nr] = f"{type(e).__name__}: {e}"
                print(f"[{engine}] Q{nr:02d} galene FAILED: {out['errors'][nr]}", flush=True)
                if not conn.open:
                    conn = g.mysql(DB)
                continue
            out["galene"][nr], out["galene_median"][nr] = best, med
            got = normalize(rows, ordered)
            if got != duck["rows"][nr]:
                out["diffs"][nr] = diff_text(got, duck["rows"][nr])
            rbest, rmed, rtable = timed(lambda sql=sql: raw.sql(sql).toArrow(), runs)
            out["raw"][nr], out["raw_median"][nr] = rbest, rmed
            raw_rows = normalize(arrow_rows(rtable), ordered)
            if raw_rows != duck["rows"][nr]:
                out["raw_diffs"][nr] = diff_text(raw_rows, duck["rows"][nr])
            verdict = "same as DuckDB" if nr not in out["diffs"] else "DIFFERS from DuckDB"
            print(f"[{engine}] Q{nr:02d} galene {best:7.3f} s  raw {rbest:7.3f} s  "
                  f"duckdb {duck['best'][nr]:6.3f} s  ratio {best / rbest:5.2f}  rows {len(got):5d}  {verdict}",
                  flush=True)  # fmt: skip
        conn.close()
    finally:
        if sail is not None:
            sail.stop()
        elif raw is not None:
            raw.stop()
        g.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=td.DEFAULT_DATA_DIR)
    ap.add_argument("--sf", type=int, default=1)
    ap.add_argument("--engines", default="spark,sail")
    ap.add_argument("--queries", help="e.g. 1,3,5-9 (default all 22)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs after the warm-up (best is taken)")
    ap.add_argument("--keep", action="store_true", help="keep the Galene data dir")
    args = ap.parse_args()
    t_start = time.perf_counter()
    load_start = td.load_average()

    td.ensure_tools()
    sf_dir = td.generate(args.data_dir, args.sf)
    all_queries = td.tpch_queries()
    wanted = set(parse_queries(args.queries, [n for n, _ in all_queries]))
    queries = [(n, q) for n, q in all_queries if n in wanted]
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]

    # DuckDB over the same files: the reference results and the third timing.
    con = td.duckdb_connect(sf_dir)
    duck = {"best": {}, "median": {}, "rows": {}}
    for nr, sql in queries:
        best, med, rows = timed(lambda sql=sql: con.execute(sql).fetchall(), args.runs)
        duck["best"][nr], duck["median"][nr] = best, med
        duck["rows"][nr] = normalize(rows, "order by" in sql.lower())
        print(f"[duckdb] Q{nr:02d} {best:7.3f} s  rows {len(rows)}", flush=True)
    con.close()

    work = Path(tempfile.mkdtemp(prefix="galene-tpch-run-"))
    galene_dir = work / "galene"
    ports = {"http_port": free_port(), "query_port": free_port(), "be_http_port": free_port()}
    results = {}
    try:
        for i, engine in enumerate(engines):
            t0 = time.perf_counter()
            try:
                results[engine] = run_engine(engine, galene_dir, ports, sf_dir, queries, duck, args.runs, i == 0, work)
            except Exception:  # the other engine's phase still runs
                traceback.print_exc()
                print(f"[{engine}] phase FAILED (Galene log: {galene_dir / 'galene-start.log'})", flush=True)
                if i == 0:
                    raise
                continue
            results[engine]["seconds"] = time.perf_counter() - t0
        engines = [e for e in engines if e in results]
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}")

    # --- report ---------------------------------------------------------------------------
    print()
    print(f"TPC-H SF{args.sf}: best of {args.runs} after one warm-up (median in brackets), seconds")
    header = f"{'Q':>3s} {'duckdb':>15s}"
    for e in engines:
        header += f" {'galene-' + e:>17s} {'raw ' + e:>17s} {'ratio':>6s}"
    print(header)
    for nr, _ in queries:
        line = f"{nr:3d} {duck['best'][nr]:7.3f} ({duck['median'][nr]:6.3f})"
        for e in engines:
            r = results[e]
            if nr in r["galene"]:
                line += (f" {r['galene'][nr]:8.3f} ({r['galene_median'][nr]:6.3f})"
                         f" {r['raw'][nr]:8.3f} ({r['raw_median'][nr]:6.3f}) {r['galene'][nr] / r['raw'][nr]:6.2f}")  # fmt: skip
            else:
                line += f" {'FAILED':>17s} {'-':>17s} {'-':>6s}"
        print(line)
    common = [nr for nr, _ in queries if all(nr in results[e]["galene"] for e in engines)]
    duck_total = sum(duck["best"][nr] for nr in common)
    line = f"{'sum':>3s} {duck_total:7.3f}         "
    totals = {}
    for e in engines:
        gt = sum(results[e]["galene"][nr] for nr in common)
        rt = sum(results[e]["raw"][nr] for nr in common)
        totals[e] = (gt, rt)
        line += f" {gt:8.3f}         {rt:8.3f}         {gt / rt:6.2f}"
    print(line + f"   (over {len(common)} queries)")
    for e in engines:
        r = results[e]
        if r["load"]:
            print(f"load ({e}): {sum(r['load'].values()):.1f} s — " + ", ".join(f"{t} {s:.1f}" for t, s in r["load"].items()))
        print(f"{e} phase: {r['seconds']:.0f} s")
        for nr, err in r["errors"].items():
            print(f"FAILED on {e}: Q{nr}: {err}")
        for nr, d in r["diffs"].items():
            print(f"DIFFERENCE galene-{e} vs duckdb Q{nr}: {d}")
        for nr, d in r["raw_diffs"].items():
            print(f"(info) raw {e} vs duckdb Q{nr}: {d}")
        ok = len(r["galene"]) - len(r["diffs"])
        print(f"galene-{e}: {ok}/{len(queries)} queries identical to DuckDB")
    print(f"whole bench: {time.perf_counter() - t_start:.0f} s; load average at start {load_start}, at end "
          f"{td.load_average()} (2 cores, shared)")
    if "spark" in totals:
        gt, rt = totals["spark"]
        print(f"RATIO tpch_spark {gt / rt:.3f}")
    if "sail" in totals:
        gt, rt = totals["sail"]
        print(f"RATIO tpch_sail {gt / rt:.3f}")
        print(f"RATIO tpch_sail_vs_duckdb {gt / duck_total:.3f}")
    if "spark" in totals:
        print(f"(info) tpch_spark_vs_duckdb {totals['spark'][0] / duck_total:.3f}")


if __name__ == "__main__":
    main()
