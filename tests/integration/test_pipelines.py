"""Table pipelines as engine jobs, through the real FE (pymysql) on a real Galene.

INSERT … SELECT / OVERWRITE, CTAS, CREATE TABLE LIKE, UPDATE, DELETE and TRUNCATE: each one
transaction whose files the engine's tasks write; results checked through SELECT and through
the files on disk (placement identical to the BE's, no orphans after a failed job).
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pymysql
import pytest

from tests.support.client import auth_header
from tests.support.procs import children_of


def _exec(conn, sql: str) -> tuple[int, str]:
    with conn.cursor() as cur:
        n = cur.execute(sql)
    info = conn._result.message.decode() if conn._result and conn._result.message else ""
    return n, info


def _error(conn, sql: str) -> tuple[int, str]:
    with pytest.raises(pymysql.MySQLError) as e, conn.cursor() as cur:
        cur.execute(sql)
    return e.value.args[0], e.value.args[1]


def _rows(galene, db, sql):
    return sorted(galene.query(sql, db))


def _load(galene, db, table, rows, columns=None):
    body = "".join(",".join("" if v is None else str(v) for v in r) + "\n" for r in rows).encode()
    headers = {"column_separator": ","}
    if columns:
        headers["columns"] = columns
    reply = galene.stream_load(db, table, body, headers)
    assert reply["Status"] == "Success", reply
    return reply


SRC = "(k INT NOT NULL, v VARCHAR(16), n BIGINT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3"


@pytest.fixture
def src(galene, db):
    galene.query(f"CREATE TABLE src {SRC}", db)
    _load(galene, db, "src", [(i, f"v{i}", i * 10) for i in range(1, 201)])
    return "src"


def test_insert_select_into_each_key_model_with_doris_ok_packet(galene, db, src):
    galene.query("CREATE TABLE d (k INT NOT NULL, v VARCHAR(16), n BIGINT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 4", db)
    galene.query(
        "CREATE TABLE u (k INT NOT NULL, v VARCHAR(16), n BIGINT) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 4",
        db,
    )
    galene.query(
        "CREATE TABLE a (v VARCHAR(16) NOT NULL, n BIGINT SUM, c INT MAX) AGGREGATE KEY(v) "
        "DISTRIBUTED BY HASH(v) BUCKETS 2",
        db,
    )
    with galene.mysql(db) as conn:
        n, info = _exec(conn, "INSERT INTO d WITH LABEL ins_d SELECT * FROM src")
        assert n == 200
        assert re.fullmatch(r"\{'label':'ins_d', 'status':'VISIBLE', 'txnId':'\d+'\}", info), info
        # Duplicate keys within one statement: one row per key in a UNIQUE table.
        n, _ = _exec(conn, "INSERT INTO u SELECT k % 50, v, n FROM src")
        assert n == 50
        n, _ = _exec(conn, "INSERT INTO a (v, n, c) SELECT concat('g', CAST(k % 3 AS STRING)), n, k FROM src")
        assert n == 200
        # A column list in another order, and a missing nullable column (NULL).
        _exec(conn, "INSERT INTO d (n, k) SELECT n + 1, k + 1000 FROM src WHERE k <= 2")
    assert galene.query("SELECT COUNT(*), SUM(n) FROM d", db) == [(202, 201000 + (10 + 1) + (20 + 1))]
    assert galene.query("SELECT COUNT(*) FROM d WHERE v IS NULL", db) == [(2,)]
    assert galene.query("SELECT COUNT(*) FROM u", db) == [(50,)]
    got = _rows(galene, db, "SELECT v, n, c FROM a")
    want = sorted(
        (f"g{g}", sum(i * 10 for i in range(1, 201) if i % 3 == g), max(i for i in range(1, 201) if i % 3 == g))
        for g in range(3)
    )
    assert got == want


def test_labels_partitions_and_insert_rules(galene, db, src):
    galene.query(
        "CREATE TABLE p (k INT NOT NULL, v VARCHAR(4)) DUPLICATE KEY(k) "
        "PARTITION BY RANGE(k) (PARTITION p1 VALUES LESS THAN (100), PARTITION p2 VALUES LESS THAN (150)) "
        "DISTRIBUTED BY HASH(k) BUCKETS 2",
        db,
    )
    with galene.mysql(db) as conn:
        _exec(conn, "INSERT INTO p WITH LABEL l1 SELECT k, 'x' FROM src WHERE k < 10")
        code, text = _error(conn, "INSERT INTO p WITH LABEL l1 SELECT k, 'x' FROM src WHERE k < 10")
        assert code == 1105 and re.search(r"Label \[l1\] has already been used, relate to txn \[\d+\]", text)
        # Rows outside every partition are filtered: strict mode fails the statement ...
        code, text = _error(conn, "INSERT INTO p SELECT k, 'y' FROM src")
        assert "Insert has filtered data in strict mode" in text, text
        # ... a value too long for VARCHAR(4) too, naming the reason ...
        code, text = _error(conn, "INSERT INTO p SELECT k, concat(v, 'xyz') FROM src WHERE k > 20 AND k < 30")
        assert "Insert has filtered data in strict mode" in text and "too long" in text, text
        # ... and a row outside the named partitions.
        code, text = _error(conn, "INSERT INTO p PARTITION (p1) SELECT k, 'z' FROM src WHERE k >= 90 AND k < 110")
        assert "Insert has filtered data in strict mode" in text, text
        code, text = _error(conn, "INSERT INTO p PARTITION (nope) SELECT k, 'z' FROM src")
        assert "Unknown partition 'nope'" in text
        # Non-strict: filtered rows are skipped within insert_max_filter_ratio.
        _exec(conn, "SET enable_insert_strict = false")
        _exec(conn, "SET insert_max_filter_ratio = 0.6")
        n, _ = _exec(conn, "INSERT INTO p SELECT k, 'w' FROM src WHERE k >= 100")  # 50 of 101 fit
        assert n == 50
        code, text = _error(conn, "INSERT INTO p SELECT k, 'w' FROM src WHERE k >= 140")  # 10 of 61 fit
        assert "Insert has too many filtered data 51/61 insert_max_filter_ratio is 0.6" in text, text
        # Non-strict: a value that does not convert becomes NULL (nullable column).
        n, _ = _exec(conn, "INSERT INTO p SELECT k + 40, v FROM src WHERE k = 55")  # 'v55' fits VARCHAR(4)
        assert n == 1
    assert galene.query("SELECT COUNT(*) FROM p", db) == [(9 + 50 + 1,)]


def test_overwrite_table_and_partition_atomically(galene, db, src):
    galene.query(
        "CREATE TABLE o (k INT NOT NULL, v VARCHAR(16)) UNIQUE KEY(k) "
        "PARTITION BY RANGE(k) (PARTITION a VALUES LESS THAN (100), PARTITION b VALUES LESS THAN (1000)) "
        "DISTRIBUTED BY HASH(k) BUCKETS 2",
        db,
    )
    with galene.mysql(db) as conn:
        _exec(conn, "INSERT INTO o SELECT k, v FROM src")
        n, info = _exec(conn, "INSERT OVERWRITE TABLE o SELECT k, 'new' FROM src WHERE k > 150")
        assert n == 50 and "'status':'VISIBLE'" in info
        assert galene.query("SELECT COUNT(*), MIN(v), MAX(v) FROM o", db) == [(50, "new", "new")]
        _exec(conn, "INSERT INTO o SELECT k, 'old' FROM src WHERE k <= 20")
        # Only partition a is replaced; b keeps its rows.
        _exec(conn, "INSERT OVERWRITE TABLE o PARTITION (a) SELECT k, 'a2' FROM src WHERE k <= 5")
        assert _rows(galene, db, "SELECT v, COUNT(*) FROM o GROUP BY v") == [("a2", 5), ("new", 50)]
        # A failing overwrite changes nothing.
        _error(conn, "INSERT OVERWRITE TABLE o SELECT k, 'too long for sixteen' FROM src")
        assert _rows(galene, db, "SELECT v, COUNT(*) FROM o GROUP BY v") == [("a2", 5), ("new", 50)]
        # OVERWRITE with VALUES.
        _exec(conn, "INSERT OVERWRITE TABLE o VALUES (1, 'one'), (500, 'five hundred')")
    assert _rows(galene, db, "SELECT k, v FROM o") == [(1, "one"), (500, "five hundred")]


def test_ctas_with_and_without_keys_and_like(galene, db, src):
    with galene.mysql(db) as conn:
        n, info = _exec(conn, "CREATE TABLE c1 AS SELECT v, SUM(n) AS s FROM src GROUP BY v")
        assert n == 200 and "'status':'VISIBLE'" in info
        _exec(
            conn,
            "CREATE TABLE c2 UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3 "
            "PROPERTIES ('replication_num' = '1') AS SELECT k % 7 AS k, MAX(v) AS v FROM src GROUP BY k % 7",
        )
        _exec(conn, "CREATE TABLE c3 (kk, vv) AS SELECT k, v FROM src WHERE k < 4")
        _exec(conn, "CREATE TABLE IF NOT EXISTS c3 AS SELECT 1")  # exists: nothing happens
        code, text = _error(conn, "CREATE TABLE c3 AS SELECT 1")
        assert code == 1050 and "already exists" in text
        # A CTAS whose insert fails leaves no table behind (Doris drops it).
        code, text = _error(conn, "CREATE TABLE c4 DISTRIBUTED BY HASH(k) BUCKETS 2 AS SELECT k, raise_error('boom') AS x FROM src")
        _exec(conn, "CREATE TABLE l LIKE c2")
    ddl = galene.query("SHOW CREATE TABLE c1", db)[0][1]
    assert "`v` varchar(65533)" in ddl and "DUPLICATE KEY(`v`)" in ddl
    assert "\nUNIQUE KEY(`k`)" in galene.query("SHOW CREATE TABLE c2", db)[0][1]
    assert "\nUNIQUE KEY(`k`)" in galene.query("SHOW CREATE TABLE l", db)[0][1]
    assert galene.query("SELECT COUNT(*) FROM c2", db) == [(7,)]
    assert _rows(galene, db, "SELECT kk, vv FROM c3") == [(1, "v1"), (2, "v2"), (3, "v3")]
    assert galene.query("SELECT COUNT(*) FROM l", db) == [(0,)]
    assert "c4" not in {r[0] for r in galene.query("SHOW TABLES", db)}


def test_update_and_delete(galene, db, src):
    galene.query(
        "CREATE TABLE u (k INT NOT NULL, v VARCHAR(16), n BIGINT) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3",
        db,
    )
    galene.query("CREATE TABLE adj (k INT, delta BIGINT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", db)
    _load(galene, db, "adj", [(k, 1000) for k in range(1, 11)])
    with galene.mysql(db) as conn:
        _exec(conn, "INSERT INTO u SELECT * FROM src")
        n, _ = _exec(conn, "UPDATE u SET n = n + 1, v = 'upd' WHERE k <= 20")
        assert n == 20
        n, _ = _exec(conn, "UPDATE u SET n = u.n + adj.delta FROM adj WHERE u.k = adj.k")
        assert n == 10
        n, _ = _exec(conn, "UPDATE u AS t SET v = 'aliased' WHERE t.k = 200")
        assert n == 1
        # Two FROM tables: both take part (k = 5 only: adj has it, src has it).
        n, _ = _exec(conn, "UPDATE u SET n = adj.delta + src.n FROM adj, src WHERE u.k = adj.k AND adj.k = src.k AND src.k = 5")
        assert n == 1
        _, text = _error(conn, "UPDATE u SET k = 5 WHERE k = 1")
        assert "Only value columns of unique table could be updated" in text
        _, text = _error(conn, "UPDATE src SET n = 0")
        assert "Only unique table could be updated." in text
        n, _ = _exec(conn, "DELETE FROM u WHERE k > 150 AND k < 200")
        assert n == 49
        n, _ = _exec(conn, "DELETE FROM u USING adj WHERE u.k = adj.k AND adj.k > 8")
        assert n == 2
        # DUPLICATE: the matching rows go; Doris reports 0 rows affected.
        n, _ = _exec(conn, "DELETE FROM src WHERE k % 2 = 0")
        assert n == 0
        _code, text = _error(conn, "DELETE FROM src")
        assert "Where clause" in text
    assert galene.query("SELECT COUNT(*) FROM src", db) == [(100,)]
    assert galene.query("SELECT COUNT(*) FROM u", db) == [(200 - 49 - 2,)]
    assert galene.query("SELECT n, v FROM u WHERE k = 3", db) == [(30 + 1 + 1000, "upd")]
    assert galene.query("SELECT n, v FROM u WHERE k = 15", db) == [(151, "upd")]
    assert galene.query("SELECT n FROM u WHERE k = 5", db) == [(1000 + 50,)]
    assert galene.query("SELECT v FROM u WHERE k = 200", db) == [("aliased",)]


def test_delete_on_aggregate_and_partitions_and_truncate(galene, db, src):
    galene.query(
        "CREATE TABLE ag (k INT NOT NULL, n BIGINT SUM) AGGREGATE KEY(k) "
        "PARTITION BY RANGE(k) (PARTITION lo VALUES LESS THAN (100), PARTITION hi VALUES LESS THAN (1000)) "
        "DISTRIBUTED BY HASH(k) BUCKETS 2",
        db,
    )
    with galene.mysql(db) as conn:
        _exec(conn, "INSERT INTO ag SELECT k, n FROM src")
        _exec(conn, "INSERT INTO ag SELECT k, 1 FROM src")
        _code, text = _error(conn, "DELETE FROM ag WHERE n > 5")
        assert "delete predicate on value column" in text
        _exec(conn, "DELETE FROM ag PARTITION (hi) WHERE k > 0")  # only partition hi is touched
        assert galene.query("SELECT COUNT(*), SUM(n) FROM ag", db) == [(99, sum(i * 10 + 1 for i in range(1, 100)))]
        _exec(conn, "TRUNCATE TABLE ag PARTITION (lo)")
        assert galene.query("SELECT COUNT(*) FROM ag", db) == [(0,)]
        _exec(conn, "INSERT INTO ag SELECT k, n FROM src")
        _exec(conn, "TRUNCATE TABLE ag")
    assert galene.query("SELECT COUNT(*) FROM ag", db) == [(0,)]


def _table_dirs(galene) -> dict[int, dict[int, list[int]]]:
    """table id -> partition id -> tablet ids, from the storage layout (ids in allocation order)."""
    out: dict[int, dict[int, list[int]]] = {}
    data = galene.data_dir / "storage" / "data"
    for db_dir in data.iterdir():
        for t_dir in db_dir.iterdir():
            parts = out.setdefault(int(t_dir.name), {})
            for p_dir in t_dir.iterdir():
                parts[int(p_dir.name)] = sorted(int(x.name) for x in p_dir.iterdir())
    return out


def _keys_in(path: Path, columns: list[str]) -> set[tuple]:
    keys: set[tuple] = set()
    for f in path.glob("*.parquet"):
        t = pq.read_table(f, columns=columns)
        keys.update(zip(*(t.column(c).to_pylist() for c in columns), strict=True))
    return keys


def test_engine_and_be_place_every_hash_type_identically(galene, db):
    """The placement contract: a key lands in the same bucket whichever path wrote it."""
    columns = [
        ("ti", "TINYINT"), ("si", "SMALLINT"), ("i", "INT"), ("bi", "BIGINT"), ("li", "LARGEINT"),
        ("de", "DECIMAL(12, 3)"), ("d", "DATE"), ("dt", "DATETIME"), ("vc", "VARCHAR(20)"),
        ("ch", "CHAR(6)"), ("s", "STRING"), ("b", "BOOLEAN"),
    ]  # fmt: skip
    rows = []
    for i in range(300):
        rows.append(
            (
                i % 120 - 60, i * 37 - 5000, i * 1009 - 70000, i * 10**12 + 7, 10**30 + i * 99991,
                f"{i * 3.141:.3f}", f"2024-{i % 12 + 1:02d}-{i % 28 + 1:02d}",
                f"2023-05-{i % 28 + 1:02d} {i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d}",
                f"v{i * 7919}", f"c{i % 97}", f"string-{i}-{'x' * (i % 13)}", "true" if i % 3 else "false",
            )
        )  # fmt: skip
    defs = ", ".join(f"{n} {t}" for n, t in columns)
    before = set(_table_dirs(galene))
    for name, _ in columns:
        galene.query(
            f"CREATE TABLE be_{name} ({defs}) DUPLICATE KEY(ti) DISTRIBUTED BY HASH({name}) BUCKETS 7", db
        )
        _load(galene, db, f"be_{name}", rows)
        galene.query(f"CREATE TABLE sp_{name} LIKE be_{name}", db)
        with galene.mysql(db) as conn:
            _exec(conn, f"INSERT INTO sp_{name} SELECT * FROM be_{name}")
    # Two-column distribution too.
    galene.query(f"CREATE TABLE be_multi ({defs}) DUPLICATE KEY(ti) DISTRIBUTED BY HASH(vc, d) BUCKETS 5", db)
    _load(galene, db, "be_multi", rows)
    galene.query("CREATE TABLE sp_multi LIKE be_multi", db)
    with galene.mysql(db) as conn:
        _exec(conn, "INSERT INTO sp_multi SELECT * FROM be_multi")
    tables = {t: parts for t, parts in _table_dirs(galene).items() if t not in before}
    ids = sorted(tables)
    assert len(ids) == 2 * (len(columns) + 1)
    data = galene.data_dir / "storage" / "data"
    for be_id, sp_id in zip(ids[0::2], ids[1::2], strict=True):  # created pairwise: BE table, then its copy
        (be_part, be_tablets), = tables[be_id].items()
        (sp_part, sp_tablets), = tables[sp_id].items()
        assert len(be_tablets) == len(sp_tablets)
        for bucket, (bt, st_) in enumerate(zip(be_tablets, sp_tablets, strict=True)):
            be_dir = next(data.glob(f"*/{be_id}/{be_part}/{bt}"))
            sp_dir = next(data.glob(f"*/{sp_id}/{sp_part}/{st_}"))
            assert _keys_in(be_dir, ["i"]) == _keys_in(sp_dir, ["i"]), (be_id, bucket)


def test_a_failing_job_leaves_nothing_visible_and_no_files(galene, db, src):
    galene.query("CREATE TABLE f (k INT NOT NULL, v VARCHAR(16)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3", db)
    galene.query("CREATE TABLE fu (k INT NOT NULL, v VARCHAR(16)) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3", db)
    with galene.mysql(db) as conn:
        _exec(conn, "INSERT INTO f SELECT k, v FROM src WHERE k <= 10")
        before = galene.data_files()
        for table in ("f", "fu"):
            # raise_error fails some tasks after others have written their files.
            code, text = _error(
                conn, f"INSERT INTO {table} SELECT k, CASE WHEN k = 150 THEN raise_error('boom') ELSE v END FROM src"
            )
            assert code == 1105 and "engine job failed" in text and "boom" in text, text
        assert galene.query("SELECT COUNT(*) FROM f", db) == [(10,)]
        assert galene.query("SELECT COUNT(*) FROM fu", db) == [(0,)]
        assert galene.data_files() == before  # the failed statements' files are gone already
        _exec(conn, "INSERT INTO f SELECT k, v FROM src WHERE k > 190")  # and the next one works
    assert galene.query("SELECT COUNT(*) FROM f", db) == [(20,)]


def _parquet_rows(directory: Path) -> int:
    return sum(pq.read_metadata(f).num_rows for f in directory.rglob("*.parquet"))


def test_killing_the_engine_mid_statement(galene, db, src):
    """SIGKILL of the engine (Spark JVM or Sail server) while an INSERT … SELECT runs: a clear error, nothing visible,
    no orphan files once collected, and the next statement runs on a new engine."""
    galene.query("CREATE TABLE big (k BIGINT NOT NULL, v STRING) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 4", db)
    fe_pid = galene.role_pid("fe")
    before = set(_table_dirs(galene))
    outcome: dict = {}

    def run() -> None:
        try:
            with galene.mysql(db) as conn:
                _exec(
                    conn,
                    "INSERT INTO big SELECT a.k * 1000000 + b.k * 1000 + c.k, repeat(a.v, 20) "
                    "FROM src a CROSS JOIN src b CROSS JOIN src c",
                )
            outcome["ok"] = True
        except pymysql.MySQLError as e:
            outcome["error"] = e.args

    t = threading.Thread(target=run)
    t.start()
    # Kill once the job has written files into the table (or after it is done, whichever is first).
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and t.is_alive() and not (set(_table_dirs(galene)) - before):
        time.sleep(0.05)
    # The engine: the Spark JVM, or the Sail server (each a child process of the FE).
    jvms = [p for p in children_of(fe_pid) if re.search(rb"java|sail", Path(f"/proc/{p}/cmdline").read_bytes())]
    assert jvms, "no engine process under the FE"
    for p in jvms:
        os.kill(p, signal.SIGKILL)
    t.join(300)
    assert not t.is_alive()
    (big_id,) = set(_table_dirs(galene)) - before or {None}
    big_dir = next((galene.data_dir / "storage" / "data").glob(f"*/{big_id}"))
    if "error" in outcome:  # the usual case: killed mid-job
        code, text = outcome["error"]
        assert code == 1105 and text.startswith("errCode = 2, detailMessage = "), text
        expected = 0
    else:
        expected = 200**3
    assert galene.query("SELECT COUNT(*) FROM big", db) == [(expected,)]  # on a new engine
    # GC with no grace collects whatever the killed job left; committed files stay.
    r = httpx.post(
        f"http://127.0.0.1:{galene.http_port}/api/_gc?grace_seconds=0", headers=auth_header(), timeout=120
    )
    assert r.status_code == 200
    assert _parquet_rows(big_dir) == expected
    with galene.mysql(db) as conn:
        n, _ = _exec(conn, "INSERT INTO big SELECT k, v FROM src")
        assert n == 200
    assert galene.query("SELECT COUNT(*) FROM big", db) == [(expected + 200,)]


def test_show_load_lists_each_statement(galene, db, src):
    galene.query("CREATE TABLE sl (k INT NOT NULL, v VARCHAR(3)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", db)
    with galene.mysql(db) as conn:
        _, info = _exec(conn, "INSERT INTO sl WITH LABEL sl_ok SELECT k, 'a' FROM src")
        _error(conn, "INSERT INTO sl WITH LABEL sl_bad SELECT k, v FROM src")  # too long for VARCHAR(3)
        _exec(conn, "DELETE FROM sl WHERE k > 100")
        with conn.cursor(pymysql.cursors.DictCursor) as cur:
            cur.execute("SHOW LOAD WHERE LABEL = 'sl_ok'")
            (ok,) = cur.fetchall()
            cur.execute("SHOW LOAD WHERE LABEL LIKE 'sl_%' ORDER BY JobId DESC")
            both = cur.fetchall()
            cur.execute(f"SHOW LOAD FROM {db} WHERE Type = 'DELETE'")
            deletes = cur.fetchall()
    assert ok["State"] == "FINISHED" and ok["Type"] == "INSERT" and ok["User"] == "root"
    assert f"'txnId':'{ok['TransactionId']}'" in info
    assert [r["Label"] for r in both] == ["sl_bad", "sl_ok"]
    assert both[0]["State"] == "CANCELLED" and "too long" in both[0]["ErrorMsg"]
    assert len(deletes) == 1 and deletes[0]["State"] == "FINISHED"


def test_query_timeout_cancels_the_engine_job(galene, db, src):
    with galene.mysql(db) as conn:
        _exec(conn, "SET query_timeout = 2")
        # 1.6 * 10^8 rows compared: past 2 s on any box. Spark's nested-loop join checks for a
        # cancel only between input batches (here one per file), so the cancelled tasks run to
        # their end and the next query waits for their cores: the join is sized to end in tens
        # of seconds rather than minutes on a busy 2-core box.
        code, text = _error(
            conn, "SELECT COUNT(*) FROM src a, src b, src c, src d WHERE a.k <= 20 AND a.v < concat(b.v, c.v, d.v)"
        )
        assert code == 1105 and "Query timeout" in text and "query_timeout (2 s)" in text, text
        _exec(conn, "SET query_timeout = 900")
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM src")
            assert cur.fetchone() == (200,)  # the session and the engine go on
