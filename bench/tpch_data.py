"""TPC-H for the benches: bench-only tools, data generation, Doris DDL, loading into Galene,
the 22 query texts, and the raw engines (Spark, Sail, DuckDB) over the same Parquet files.

Bench-only tools are not project dependencies: `ensure_tools()` installs what is missing into
the running interpreter (the venv) with `python -m pip install tpchgen-cli duckdb
duckdb-extension-tpch`. The query texts come from DuckDB's tpch extension as shipped in the
PyPI package `duckdb-extension-tpch` (the extension file is LOADed by path; nothing is ever
INSTALLed, which would reach the network).

Data: `tpchgen-cli parquet -s SF --output-dir=<data-dir>/sf<SF>`, generated once and reused
(default data dir /tmp/galene-tpch).
"""

from __future__ import annotations

import glob
import importlib.util
import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

DEFAULT_DATA_DIR = Path("/tmp/galene-tpch")
TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")

# Doris DDL as Doris' own TPC-H kit writes it, adapted to the generated types: keys BIGINT (the
# Parquet files hold int64), money DECIMAL(15,2), dates DATE, texts VARCHAR of the spec's lengths.
# DUPLICATE KEY on the primary key (a prefix of the schema, as Doris requires: lineitem's
# l_linenumber is moved up next to l_orderkey); buckets by size on a 2-core box.
DDL = {
    "region": """(
        r_regionkey BIGINT NOT NULL, r_name VARCHAR(25) NOT NULL, r_comment VARCHAR(152)
    ) DUPLICATE KEY(r_regionkey) DISTRIBUTED BY HASH(r_regionkey) BUCKETS 1""",
    "nation": """(
        n_nationkey BIGINT NOT NULL, n_name VARCHAR(25) NOT NULL, n_regionkey BIGINT NOT NULL,
        n_comment VARCHAR(152)
    ) DUPLICATE KEY(n_nationkey) DISTRIBUTED BY HASH(n_nationkey) BUCKETS 1""",
    "supplier": """(
        s_suppkey BIGINT NOT NULL, s_name VARCHAR(25) NOT NULL, s_address VARCHAR(40) NOT NULL,
        s_nationkey BIGINT NOT NULL, s_phone VARCHAR(15) NOT NULL, s_acctbal DECIMAL(15,2) NOT NULL,
        s_comment VARCHAR(101) NOT NULL
    ) DUPLICATE KEY(s_suppkey) DISTRIBUTED BY HASH(s_suppkey) BUCKETS 1""",
    "customer": """(
        c_custkey BIGINT NOT NULL, c_name VARCHAR(25) NOT NULL, c_address VARCHAR(40) NOT NULL,
        c_nationkey BIGINT NOT NULL, c_phone VARCHAR(15) NOT NULL, c_acctbal DECIMAL(15,2) NOT NULL,
        c_mktsegment VARCHAR(10) NOT NULL, c_comment VARCHAR(117) NOT NULL
    ) DUPLICATE KEY(c_custkey) DISTRIBUTED BY HASH(c_custkey) BUCKETS 2""",
    "part": """(
        p_partkey BIGINT NOT NULL, p_name VARCHAR(55) NOT NULL, p_mfgr VARCHAR(25) NOT NULL,
        p_brand VARCHAR(10) NOT NULL, p_type VARCHAR(25) NOT NULL, p_size INT NOT NULL,
        p_container VARCHAR(10) NOT NULL, p_retailprice DECIMAL(15,2) NOT NULL,
        p_comment VARCHAR(23) NOT NULL
    ) DUPLICATE KEY(p_partkey) DISTRIBUTED BY HASH(p_partkey) BUCKETS 2""",
    "partsupp": """(
        ps_partkey BIGINT NOT NULL, ps_suppkey BIGINT NOT NULL, ps_availqty INT NOT NULL,
        ps_supplycost DECIMAL(15,2) NOT NULL, ps_comment VARCHAR(199) NOT NULL
    ) DUPLICATE KEY(ps_partkey, ps_suppkey) DISTRIBUTED BY HASH(ps_partkey) BUCKETS 4""",
    "orders": """(
        o_orderkey BIGINT NOT NULL, o_custkey BIGINT NOT NULL, o_orderstatus VARCHAR(1) NOT NULL,
        o_totalprice DECIMAL(15,2) NOT NULL, o_orderdate DATE NOT NULL,
        o_orderpriority VARCHAR(15) NOT NULL, o_clerk VARCHAR(15) NOT NULL,
        o_shippriority INT NOT NULL, o_comment VARCHAR(79) NOT NULL
    ) DUPLICATE KEY(o_orderkey) DISTRIBUTED BY HASH(o_orderkey) BUCKETS 4""",
    "lineitem": """(
        l_orderkey BIGINT NOT NULL, l_linenumber INT NOT NULL, l_partkey BIGINT NOT NULL,
        l_suppkey BIGINT NOT NULL, l_quantity DECIMAL(15,2) NOT NULL,
        l_extendedprice DECIMAL(15,2) NOT NULL, l_discount DECIMAL(15,2) NOT NULL,
        l_tax DECIMAL(15,2) NOT NULL, l_returnflag VARCHAR(1) NOT NULL,
        l_linestatus VARCHAR(1) NOT NULL, l_shipdate DATE NOT NULL, l_commitdate DATE NOT NULL,
        l_receiptdate DATE NOT NULL, l_shipinstruct VARCHAR(25) NOT NULL,
        l_shipmode VARCHAR(10) NOT NULL, l_comment VARCHAR(44) NOT NULL
    ) DUPLICATE KEY(l_orderkey, l_linenumber) DISTRIBUTED BY HASH(l_orderkey) BUCKETS 8""",
}

# --- tools ---------------------------------------------------------------------------------

_MODULES = {"duckdb": "duckdb", "duckdb-extension-tpch": "duckdb_extension_tpch"}


def ensure_tools() -> None:
    """Install the bench-only tools into this interpreter's environment if any is missing."""
    missing = [pkg for pkg, mod in _MODULES.items() if importlib.util.find_spec(mod) is None]
    if not (Path(sys.executable).parent / "tpchgen-cli").exists() and not shutil.which("tpchgen-cli"):
        missing.append("tpchgen-cli")
    if missing:
        print(f"installing bench tools: {' '.join(missing)}", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", *missing], check=True)


def _tpchgen() -> str:
    exe = Path(sys.executable).parent / "tpchgen-cli"
    return str(exe) if exe.exists() else "tpchgen-cli"


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


# --- data ----------------------------------------------------------------------------------


def generate(data_dir: Path, sf: int = 1) -> Path:
    """The directory of `<table>.parquet` at scale factor `sf`, generated on first use."""
    out = Path(data_dir) / f"sf{sf}"
    done = out / ".complete"
    if done.exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    cmd = [_tpchgen(), "parquet", "-s", str(sf), f"--output-dir={out}", "--overwrite", "--no-progress"]
    subprocess.run(cmd, check=True)
    done.write_text("ok\n")
    print(f"generated TPC-H SF{sf} Parquet in {out} ({time.perf_counter() - t0:.1f} s)", flush=True)
    return out


def parquet_path(sf_dir: Path, table: str) -> Path:
    return Path(sf_dir) / f"{table}.parquet"


def row_count(sf_dir: Path, table: str) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(parquet_path(sf_dir, table)).metadata.num_rows


def parquet_bodies(path: Path, max_mb: int):
    """The file as stream-load bodies of at most ~max_mb (whole row groups; the file itself if it
    fits). Yields (body bytes, rows)."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    if path.stat().st_size <= max_mb * 1_000_000:
        yield path.read_bytes(), pf.metadata.num_rows
        return
    meta = pf.metadata
    groups: list[int] = []
    size = 0
    for i in range(meta.num_row_groups):
        rg = meta.row_group(i)
        rg_size = sum(rg.column(c).total_compressed_size for c in range(rg.num_columns))
        if groups and size + rg_size > max_mb * 1_000_000:
            yield _rewrite(pf, groups)
            groups, size = [], 0
        groups.append(i)
        size += rg_size
    if groups:
        yield _rewrite(pf, groups)


def _rewrite(pf, groups: list[int]) -> tuple[bytes, int]:
    import pyarrow.parquet as pq

    tbl = pf.read_row_groups(groups)
    buf = io.BytesIO()
    pq.write_table(tbl, buf, compression="snappy")
    return buf.getvalue(), tbl.num_rows


def create_tables(g, db: str, tables=TABLES) -> None:
    g.query(f"CREATE DATABASE IF NOT EXISTS {db}")
    for t in tables:
        g.query(f"CREATE TABLE {t} {DDL[t]}", db)


def load_tables(g, db: str, sf_dir: Path, tables=TABLES, max_load_mb: int = 1000) -> dict[str, float]:
    """Stream-load each table's Parquet file (split into bodies of ≤ max_load_mb) and check
    the row counts. Returns seconds per table."""
    times = {}
    for t in tables:
        t0 = time.perf_counter()
        loaded = 0
        for i, (body, rows) in enumerate(parquet_bodies(parquet_path(sf_dir, t), max_load_mb)):
            reply = g.stream_load(db, t, body, {"format": "parquet", "label": f"tpch_{t}_{i}_{time.time_ns()}"})
            if reply.get("Status") != "Success" or reply.get("NumberLoadedRows") != rows:
                raise RuntimeError(f"loading {t} part {i}: {reply}")
            loaded += rows
        times[t] = time.perf_counter() - t0
        count = g.query(f"SELECT count(*) FROM {t}", db)[0][0]
        expected = row_count(sf_dir, t)
        if count != expected or loaded != expected:
            raise RuntimeError(f"{t}: {count} rows visible, {loaded} loaded, {expected} in the file")
        print(f"loaded {t:9s} {expected:>9,d} rows in {times[t]:6.2f} s", flush=True)
    return times


# --- queries -------------------------------------------------------------------------------


def duckdb_connect(sf_dir: Path | None = None, tables=TABLES):
    """A DuckDB connection (no extension auto-install or auto-load) with the tpch extension
    LOADed from the PyPI package's file and, given sf_dir, a view per table over its Parquet."""
    import duckdb

    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    spec = importlib.util.find_spec("duckdb_extension_tpch")
    assert spec is not None and spec.origin is not None
    found = glob.glob(str(Path(spec.origin).parent / "extensions" / "*" / "tpch.duckdb_extension"))
    if not found:
        raise RuntimeError(f"no tpch.duckdb_extension under {Path(spec.origin).parent}")
    con.execute(f"LOAD '{found[0]}'")
    if sf_dir is not None:
        for t in tables:
            con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{parquet_path(sf_dir, t)}')")
    return con


def tpch_queries() -> list[tuple[int, str]]:
    """The 22 TPC-H query texts as DuckDB's tpch extension ships them (no trailing ';')."""
    con = duckdb_connect()
    rows = con.execute("SELECT query_nr, query FROM tpch_queries() ORDER BY query_nr").fetchall()
    con.close()
    return [(int(n), q.strip().rstrip(";").strip()) for n, q in rows]


# --- raw engines ---------------------------------------------------------------------------


def engine_conf() -> dict[str, str]:
    """The SQL settings Galene's engine runs with (its DEFAULT_CONF), for the raw sessions."""
    from galene.engine.session import DEFAULT_CONF

    return dict(DEFAULT_CONF)


def raw_spark():
    """A local[*] SparkSession with Galene's engine settings (its own JVM)."""
    from pyspark.sql import SparkSession

    b = SparkSession.builder.master("local[*]").appName("bench-raw")
    for k, v in engine_conf().items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


class RawSail:
    """A Sail Spark Connect server (`sail spark server`) and a Connect session to it.

    Sail 0.7 refuses PySpark 4.3 in its own process, so the server finds PySpark's 4.2 Connect
    client first (`<venv>/sail-pyspark`, as Galene's embedded server does)."""

    def __init__(self, log_path: Path):
        self.port = _free_port()
        env = dict(os.environ)
        pyspark42 = os.environ.get("GALENE_SAIL_PYSPARK") or str(Path(sys.prefix) / "sail-pyspark")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (pyspark42, env.get("PYTHONPATH")) if p)
        sail = Path(sys.executable).parent / "sail"
        self._log = open(log_path, "ab")
        self.proc = subprocess.Popen(
            [str(sail), "spark", "server", "--ip", "127.0.0.1", "--port", str(self.port)],
            env=env, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sail server exited with {self.proc.returncode} (log: {log_path})")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        b = ConnectSession.builder.remote(f"sc://127.0.0.1:{self.port}")
        for k, v in engine_conf().items():
            if k.startswith("spark.sql."):
                b = b.config(k, v)
        self.spark = b.create()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        try:
            self.spark.stop()
        except Exception:  # noqa: BLE001
            pass
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(15)
        self._log.close()


def register_views(spark, sf_dir: Path, tables=TABLES) -> None:
    for t in tables:
        spark.read.parquet(str(parquet_path(sf_dir, t))).createOrReplaceTempView(t)


def _free_port() -> int:
    from tests.support.ports import free_port

    return free_port()
