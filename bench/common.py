"""Shared bench helpers: data generation and a Galene instance on free loopback ports."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

# Re-exported for the benches: the test harness (tests/support/) is theirs too.
from tests.support.client import auth_header  # noqa: F401
from tests.support.node import GaleneProcess as _TestGaleneProcess
from tests.support.ports import free_port  # noqa: F401


class GaleneProcess(_TestGaleneProcess):
    """The test harness's Galene process with Galene's own driver JVM options: the harness runs
    its short-lived drivers C1-only, which would slow every bench's CPU-bound engine work
    against a baseline JVM that compiles with C2 (measured: a 10M-row group-by 1.8x)."""

    def __init__(self, *args, conf: dict | None = None, **kwargs):
        super().__init__(*args, conf={"spark_driver_java_options": "", **(conf or {})}, **kwargs)


def best_of(fn, n: int = 3) -> tuple[float, object]:
    """One warm-up run of `fn`, then the best time of `n` runs and the last result."""
    fn()
    best, result = float("inf"), None
    for _ in range(n):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


SIX_COLUMNS = (
    "(c_int INT, c_bigint BIGINT, c_varchar VARCHAR(64), c_double DOUBLE, c_date DATE, c_datetime DATETIME)"
)


def generate_six_column_csv(path: Path, rows: int, seed: int = 7, chunk: int = 1_000_000) -> int:
    """Write `rows` rows of (int, bigint, varchar, double, date, datetime) as headerless CSV."""
    rng = np.random.default_rng(seed)
    opts = pacsv.WriteOptions(include_header=False, quoting_style="none")
    base_day = np.datetime64("2020-01-01", "D")
    with pacsv.CSVWriter(str(path), _schema(), write_options=opts) as w:
        for start in range(0, rows, chunk):
            n = min(chunk, rows - start)
            ids = np.arange(start, start + n, dtype=np.int32)
            words = np.array(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"])
            varchar = pc.binary_join_element_wise(
                pa.array(words[rng.integers(0, len(words), n)]), pa.array(ids.astype(str)), "-"
            )
            days = base_day + rng.integers(0, 1500, n).astype("timedelta64[D]")
            secs = days.astype("datetime64[s]") + rng.integers(0, 86400, n).astype("timedelta64[s]")
            table = pa.table(
                {
                    "c_int": pa.array(ids),
                    "c_bigint": pa.array(rng.integers(0, 10**15, n, dtype=np.int64)),
                    "c_varchar": varchar,
                    "c_double": pa.array(np.round(rng.random(n) * 1000, 4)),
                    "c_date": pa.array(days),
                    "c_datetime": pc.strftime(pa.array(secs), "%Y-%m-%d %H:%M:%S"),
                }
            )
            w.write_table(table.cast(_schema()))
    return rows


def _schema() -> pa.Schema:
    return pa.schema(
        [
            ("c_int", pa.int32()),
            ("c_bigint", pa.int64()),
            ("c_varchar", pa.string()),
            ("c_double", pa.float64()),
            ("c_date", pa.date32()),
            ("c_datetime", pa.string()),
        ]
    )


class Timer:
    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0
