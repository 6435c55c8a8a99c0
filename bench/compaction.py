"""Bench: queries over a UNIQUE table fed by 5,000 small loads, before and after compaction,
against the same rows loaded as one file.

A fresh standalone Galene; a UNIQUE KEY table (4 buckets, auto compaction off so the bench
decides when it runs) receives N small stream loads (a few rows each, keys drawn from a range so
later loads update earlier rows) over real HTTP straight to the BE, group commit off, from several
client threads. A few queries are timed (best of 3 after a warm-up) over the many small rowsets,
then `ADMIN COMPACT TABLE … WHERE TYPE='BASE'` merges every tablet's rowsets into one, and the
queries are timed again. The same rows (read back from the table) are then loaded with one
stream load into a second table, and the queries timed there; every query must give the same
result on both tables. Last line: `RATIO compaction <after ÷ one-file>` (total of the queries).
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import threading
import time
from pathlib import Path

import httpx
from common import GaleneProcess, Timer, auth_header

COLUMNS = "(k INT NOT NULL, c_bigint BIGINT, c_varchar VARCHAR(64), c_double DOUBLE, c_date DATE)"
QUERIES = {
    "count": "SELECT count(*) FROM {t}",
    "filter_sum": "SELECT count(*), sum(c_double) FROM {t} WHERE c_double > 500 AND c_varchar LIKE 'b%'",
    "group_by": "SELECT c_date, count(*), max(c_bigint) FROM {t} GROUP BY c_date ORDER BY c_date LIMIT 20",
    "point": "SELECT * FROM {t} WHERE k = 4242",
    "order_limit": "SELECT k, c_double FROM {t} ORDER BY c_double DESC, k LIMIT 10",
}


def row(rng: random.Random, keys: int) -> str:
    k = rng.randrange(keys)
    day = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    word = rng.choice(["alpha", "bravo", "charlie", "delta"])
    return f"{k},{rng.randrange(10**12)},{word}-{k},{rng.random() * 1000:.3f},{day}\n"


def small_loads(g: GaleneProcess, table: str, loads: int, rows: int, keys: int, threads: int) -> float:
    """`loads` stream loads of `rows` rows each, PUT straight to the BE by `threads` clients."""
    url = f"http://127.0.0.1:{g.be_http_port}/api/bench/{table}/_stream_load"
    headers = {**auth_header(), "column_separator": ",", "group_commit": "off_mode"}
    counter = iter(range(loads))
    lock = threading.Lock()
    errors: list = []

    def client(seed: int) -> None:
        rng = random.Random(seed)
        with httpx.Client(timeout=120) as c:
            while True:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                body = "".join(row(rng, keys) for _ in range(rows)).encode()
                reply = c.put(url, content=body, headers=headers).json()
                if reply.get("Status") != "Success":
                    errors.append(reply)
                    return

    workers = [threading.Thread(target=client, args=(s,)) for s in range(threads)]
    with Timer() as t:
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    assert not errors, errors[:3]
    return t.seconds


def time_queries(g: GaleneProcess, table: str) -> tuple[dict[str, float], dict[str, list]]:
    times, results = {}, {}
    with g.mysql("bench") as conn:
        for name, sql in QUERIES.items():
            text = sql.format(t=table)

            def run(text=text):
                with conn.cursor() as cur:
                    cur.execute(text)
                    return cur.fetchall()

            run()  # warm-up
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                results[name] = run()
                best = min(best, time.perf_counter() - t0)
            times[name] = best
    return times, results


def _canon(rows) -> list:
    # Sums of doubles depend on the order rows are added in: compare them rounded.
    return sorted(tuple(round(v, 6) if isinstance(v, float) else v for v in r) for r in rows)


def version_count(g: GaleneProcess, table: str) -> int:
    return sum(int(r[14]) for r in g.query(f"SHOW TABLETS FROM {table}", "bench"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--loads", type=int, default=5000)
    ap.add_argument("--rows", type=int, default=4, help="rows per load")
    ap.add_argument("--keys", type=int, default=10000, help="key range (later loads update earlier keys)")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--buckets", type=int, default=4)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="galene-bench-c-"))
    g = GaleneProcess(work / "galene").start()
    try:
        g.query("CREATE DATABASE bench")
        props = 'PROPERTIES ("disable_auto_compaction" = "true")'
        dist = f"DISTRIBUTED BY HASH(k) BUCKETS {args.buckets}"
        g.query(f"CREATE TABLE many {COLUMNS} UNIQUE KEY(k) {dist} {props}", "bench")
        g.query(f"CREATE TABLE one {COLUMNS} UNIQUE KEY(k) {dist} {props}", "bench")

        load_s = small_loads(g, "many", args.loads, args.rows, args.keys, args.threads)
        rowsets_before = version_count(g, "many")
        print(f"loads={args.loads} x {args.rows} rows, {args.threads} clients: {load_s:.1f} s "
              f"({args.loads / load_s:.0f} loads/s), {rowsets_before} rowsets in {args.buckets} tablets")  # fmt: skip

        before, before_results = time_queries(g, "many")
        with Timer() as tc:
            g.query("ADMIN COMPACT TABLE many PARTITION many WHERE TYPE='BASE'", "bench")
        rowsets_after = version_count(g, "many")
        print(f"ADMIN COMPACT (base): {tc.seconds:.2f} s, rowsets {rowsets_before} -> {rowsets_after}")
        after, after_results = time_queries(g, "many")

        # The same rows as one load, one file per tablet.
        rows = g.query("SELECT k, c_bigint, c_varchar, c_double, c_date FROM many", "bench")
        body = "".join(",".join(str(v) for v in r) + "\n" for r in rows).encode()
        reply = g.stream_load("bench", "one", body, {"column_separator": ",", "label": "one_file"})
        assert reply["Status"] == "Success" and reply["NumberLoadedRows"] == len(rows), reply
        one, one_results = time_queries(g, "one")

        for name in QUERIES:
            same = [_canon(r[name]) for r in (before_results, after_results, one_results)]
            assert same[0] == same[1] == same[2], (name, same)

        print(f"rows={len(rows)}")
        print(f"{'query':12s} {'before s':>9s} {'after s':>9s} {'one-file s':>10s} {'before/one':>10s} {'after/one':>9s}")
        for name in QUERIES:
            print(f"{name:12s} {before[name]:9.3f} {after[name]:9.3f} {one[name]:10.3f} "
                  f"{before[name] / one[name]:10.2f} {after[name] / one[name]:9.2f}")  # fmt: skip
        b, a, o = sum(before.values()), sum(after.values()), sum(one.values())
        print(f"{'total':12s} {b:9.3f} {a:9.3f} {o:10.3f} {b / o:10.2f} {a / o:9.2f}")
        print(f"RATIO compaction {a / o:.3f}")
    finally:
        g.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
