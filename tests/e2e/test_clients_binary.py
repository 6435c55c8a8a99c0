"""Real clients on the MySQL binary protocol (prepared statements) against a real Galene.

Issue 19: a prepared SELECT of a LARGEINT past 28 digits failed with `decimal.InvalidOperation`,
DATETIME(p) was declared with 0 decimals (prepared statements dropped the microseconds, CTAS made
DATETIME), and COM_STMT_PREPARE declared no result columns (connectorx, behind polars'
`read_database_uri`, failed or spun forever). Each client here is used unchanged:
mysql-connector-python's `prepared=True` cursor, node's mysql2 (`query`, `execute`, `prepare`,
`query().stream()`), and polars over connectorx.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import mysql.connector
import pytest

NODE_CLIENTS = Path(__file__).resolve().parents[1] / "clients" / "node"

# Every scalar type Galene has, DATETIME in each precision.
COLUMNS = [
    ("k", "INT"), ("ti", "TINYINT"), ("si", "SMALLINT"), ("i", "INT"), ("bi", "BIGINT"),
    ("li", "LARGEINT"), ("b", "BOOLEAN"), ("f", "FLOAT"), ("d", "DOUBLE"),
    ("dsm", "DECIMAL(10, 2)"), ("d38", "DECIMAL(38, 10)"), ("d380", "DECIMAL(38, 0)"), ("dd", "DATE"),
    ("t0", "DATETIME"), ("t1", "DATETIME(1)"), ("t2", "DATETIME(2)"), ("t3", "DATETIME(3)"),
    ("t4", "DATETIME(4)"), ("t5", "DATETIME(5)"), ("t6", "DATETIME(6)"),
    ("c", "CHAR(12)"), ("vc", "VARCHAR(40)"), ("s", "STRING"),
]  # fmt: skip
NAMES = [n for n, _ in COLUMNS]
DDL = ", ".join(f"{n} {t}" for n, t in COLUMNS)

# LARGEINT values of 29-38 digits: past Python's default decimal context (28 digits).
LI_38 = -(10**37) - 12345
LI_29 = 12345678901234567890123456789


def _times(base: dt.datetime) -> list[dt.datetime]:
    """`base` as DATETIME(0..6) keep it: its microseconds cut to p digits."""
    return [base.replace(microsecond=base.microsecond // 10 ** (6 - p) * 10 ** (6 - p)) for p in range(7)]


ROWS = [
    (
        1, -128, -32768, -(2**31), -(2**63), LI_38, True, 1.5, -2.25e-5,
        Decimal("-12345678.90"), Decimal("1234567890123456789012345678.0123456789"), Decimal("9" * 38),
        dt.date(2024, 2, 29), *_times(dt.datetime(2024, 2, 29, 23, 59, 59, 123456)),
        "héllo ✓", "Ünïcødé ✓ 中文 😀", "it's a \\ back'slash " + "x" * 300,
    ),
    (2, *[None] * (len(COLUMNS) - 1)),
    (
        3, 127, 32767, 2**31 - 1, 2**63 - 1, LI_29, False, -0.25, 1e300,
        Decimal("0.01"), Decimal("-0.0000000001"), Decimal(-(10**37) - 7),
        dt.date(9999, 12, 31), *_times(dt.datetime(2000, 1, 1, 0, 0, 0, 1)),
        "", "", "",
    ),
    (
        4, 0, 0, 0, 0, 0, True, 0.0, 0.0, Decimal("0.00"), Decimal("0E-10"), Decimal(0),
        dt.date(1970, 1, 1), *_times(dt.datetime(1970, 1, 1)), "a", "b", "c",
    ),
]  # fmt: skip


def _connector(galene, db: str):
    return mysql.connector.connect(
        host="127.0.0.1", port=galene.query_port, user="root", password="", database=db
    )


def _param(name: str, value):
    """A value as mysql-connector binds it: LARGEINT past 64 bits as a DECIMAL parameter (the
    binary protocol has no wider integer; JDBC's BigInteger goes the same way)."""
    return Decimal(value) if name == "li" and value is not None else value


def _expected(row: tuple) -> tuple:
    """What a client reads back: LARGEINT is a MySQL string column, as Doris sends it."""
    return tuple(str(v) if n == "li" and v is not None else v for n, v in zip(NAMES, row, strict=True))


@pytest.fixture
def all_types(galene, db):
    """The table, filled through a prepared INSERT with a parameter of every type."""
    galene.query(f"CREATE TABLE t ({DDL}) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2", db)
    conn = _connector(galene, db)
    try:
        cur = conn.cursor(prepared=True)
        marks = ", ".join("?" for _ in COLUMNS)
        for row in ROWS:
            cur.execute(f"INSERT INTO t VALUES ({marks})", tuple(_param(n, v) for n, v in zip(NAMES, row)))
        conn.commit()
    finally:
        conn.close()
    return db


def test_mysql_connector_prepared_reads_every_type_as_the_text_protocol(galene, all_types):
    conn = _connector(galene, all_types)
    try:
        text = conn.cursor()
        text.execute("SELECT * FROM t ORDER BY k")
        text_rows = text.fetchall()
        text_types = [d[1] for d in text.description]
        prepared = conn.cursor(prepared=True)
        prepared.execute("SELECT * FROM t WHERE k > ? ORDER BY k", (0,))
        binary_rows = prepared.fetchall()
        binary_types = [d[1] for d in prepared.description]
    finally:
        conn.close()
    expected = [_expected(r) for r in ROWS]
    assert [tuple(r) for r in binary_rows] == expected
    assert [tuple(r) for r in text_rows] == expected
    assert binary_types == text_types
    assert binary_types[NAMES.index("li")] == 254  # MYSQL_TYPE_STRING, as Doris declares LARGEINT


def test_mysql_connector_parameters_of_every_type_select_their_row(galene, all_types):
    """Each column compared with a parameter of its type finds the row the value was loaded in."""
    conn = _connector(galene, all_types)
    try:
        cur = conn.cursor(prepared=True)
        for name, value in zip(NAMES, ROWS[0], strict=True):
            if name in ("f", "d"):  # floats: equality of a rendered double is not the point here
                continue
            cur.execute(f"SELECT k, {name} FROM t WHERE {name} = ? ORDER BY k", (_param(name, value),))
            column = NAMES.index(name)
            matching = [(r[0], _expected(r)[column]) for r in ROWS if r[column] == value]
            assert cur.fetchall() == matching, name
        cur.execute("SELECT k FROM t WHERE dsm IS NULL AND ? IS NULL", (None,))
        assert cur.fetchall() == [(2,)]
    finally:
        conn.close()


def test_prepared_largeint_past_28_digits_computed_and_stored(galene, all_types):
    """29-38 digit LARGEINTs, read unchanged and computed (the engine's DECIMAL(38,0))."""
    conn = _connector(galene, all_types)
    try:
        cur = conn.cursor(prepared=True)
        cur.execute("SELECT li, li + 0, d380, sum(li) OVER () FROM t WHERE k IN (?, ?) ORDER BY k", (1, 3))
        rows = cur.fetchall()
    finally:
        conn.close()
    total = LI_38 + LI_29
    assert [(int(a), int(b), c, int(s)) for a, b, c, s in rows] == [
        (LI_38, LI_38, Decimal("9" * 38), total),
        (LI_29, LI_29, Decimal(-(10**37) - 7), total),
    ]


def test_datetime_precision_in_both_protocols_and_ctas(galene, all_types):
    db = all_types
    with galene.mysql(db) as conn, conn.cursor() as cur:
        cur.execute("SELECT t0, t3, t6 FROM t WHERE k = 1")
        assert [d[5] for d in cur.description] == [0, 3, 6]  # decimals = p
        cur.execute("CREATE TABLE t2 AS SELECT k, t6, t3 FROM t")
        cur.execute("CREATE TABLE t3 AS SELECT k, max(t6) AS m6 FROM t GROUP BY k")
        cur.execute("DESC t2")
        assert [(r[0], r[1]) for r in cur.fetchall()] == [("k", "INT"), ("t6", "DATETIME(6)"), ("t3", "DATETIME(3)")]
        cur.execute("DESC t3")
        assert [r[1] for r in cur.fetchall()][1] == "DATETIME(6)"  # a computed timestamp keeps its micros
    conn = _connector(galene, db)
    try:
        cur = conn.cursor(prepared=True)
        cur.execute("SELECT t2.t6, t2.t3, t3.m6 FROM t2 JOIN t3 ON t2.k = t3.k WHERE t2.k = ?", (1,))
        assert cur.fetchall() == [
            (dt.datetime(2024, 2, 29, 23, 59, 59, 123456), dt.datetime(2024, 2, 29, 23, 59, 59, 123000),
             dt.datetime(2024, 2, 29, 23, 59, 59, 123456)),
        ]  # fmt: skip
        # A computed DATETIME the engine cannot give a precision keeps its fraction too.
        cur.execute("SELECT max(t6) FROM t WHERE k = ?", (3,))
        assert cur.fetchall() == [(dt.datetime(2000, 1, 1, 0, 0, 0, 1),)]
    finally:
        conn.close()


# --- node mysql2 ------------------------------------------------------------------------------

_NODE_SCRIPT = r"""
const { createRequire } = require('module');
const mysql = createRequire(process.env.NODE_CLIENTS + '/')('mysql2/promise');
const out = {};
const plain = (rows) => rows.map((r) => Object.fromEntries(Object.entries(r).map(
  ([k, v]) => [k, Buffer.isBuffer(v) ? v.toString('utf8') : v])));
const fields = (fs) => fs.map((f) => [f.name, f.columnType, f.decimals]);
(async () => {
  const conn = await mysql.createConnection({
    host: '127.0.0.1', port: Number(process.env.PORT), user: 'root', database: process.env.DB,
    supportBigNumbers: true, bigNumberStrings: true, dateStrings: true,
  });
  let [rows, fs] = await conn.query('SELECT * FROM t ORDER BY k');
  out.query = { rows: plain(rows), fields: fields(fs) };
  [rows, fs] = await conn.execute('SELECT * FROM t WHERE k > ? ORDER BY k', [0]);
  out.execute = { rows: plain(rows), fields: fields(fs) };
  const stmt = await conn.prepare('SELECT k, li, t6, vc FROM t WHERE k = ?');
  out.prepared_columns = stmt.statement.columns.map((c) => [c.name, c.columnType, c.decimals]);
  [rows] = await stmt.execute([3]);
  out.prepared_rows = plain(rows);
  await stmt.close();
  // The key as a BigInt (bound as a string): a JS number is bound as a DOUBLE, and INSERT
  // VALUES (7.0) into an INT column is refused by the insert path (not the protocol's part).
  await conn.execute('INSERT INTO p VALUES (?, ?, ?, ?, ?, ?, ?)',
    [7, 'x✓', 2.5, null, '2024-01-02 03:04:05.678901', '123456789012345678901234567890123', true]);
  [rows] = await conn.execute('SELECT * FROM p WHERE k = ?', [7]);
  out.params = plain(rows);
  // 100k rows streamed through the callback API: counted as they arrive, never held.
  out.stream = await new Promise((resolve, reject) => {
    let n = 0; let sum = 0;
    conn.connection.query('SELECT k, v FROM big').stream()
      .on('data', (r) => { n += 1; sum += r.k; })
      .on('error', reject)
      .on('end', () => resolve([n, sum]));
  });
  await conn.end();
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
"""


def _node(galene, db: str, tmp_path: Path) -> dict:
    if shutil.which("node") is None or not (NODE_CLIENTS / "node_modules" / "mysql2").is_dir():
        pytest.skip("node with mysql2 in tests/clients/node is missing (make tools)")
    script = tmp_path / "mysql2_client.js"
    script.write_text(_NODE_SCRIPT)
    env = {**os.environ, "NODE_CLIENTS": str(NODE_CLIENTS), "PORT": str(galene.query_port), "DB": db}
    done = subprocess.run(["node", str(script)], check=False, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _mysql2_text(name: str, value, binary: bool = False) -> object:
    """A value as mysql2 gives it with bigNumberStrings and dateStrings. A binary DATETIME
    without microseconds is sent without them (7 bytes, as MySQL and Doris send it), and mysql2
    prints no fraction then, whatever the column's decimals."""
    if value is None:
        return None
    if isinstance(value, Decimal):
        return format(value, "f")  # at its scale, as Doris prints DECIMAL (0.0000000000, not 0E-10)
    if name in ("bi", "li"):
        return str(value)
    if name == "b":
        return int(value)
    if isinstance(value, dt.datetime):
        p = 0 if binary and not value.microsecond else int(name[1])
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return text + "." + f"{value.microsecond:06d}"[:p] if p else text
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def test_mysql2_query_execute_prepare_and_stream(galene, all_types, tmp_path):
    db = all_types
    galene.query(
        "CREATE TABLE p (k INT, s VARCHAR(10), f DOUBLE, n INT, t DATETIME(6), li LARGEINT, b BOOLEAN) "
        "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1",
        db,
    )
    galene.query("CREATE TABLE big (k INT, v VARCHAR(20)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 4", db)
    galene.stream_load(db, "big", "".join(f"{i},v{i}\n" for i in range(100_000)).encode(), {"column_separator": ","})
    out = _node(galene, db, tmp_path)
    expected = [{n: _mysql2_text(n, v) for n, v in zip(NAMES, row, strict=True)} for row in ROWS]
    assert out["query"]["rows"] == expected
    binary = [{n: _mysql2_text(n, v, binary=True) for n, v in zip(NAMES, row, strict=True)} for row in ROWS]
    assert out["execute"]["rows"] == binary
    assert out["execute"]["fields"] == out["query"]["fields"]
    decimals = {name: d for name, _, d in out["execute"]["fields"]}
    assert [decimals[f"t{p}"] for p in range(7)] == list(range(7))
    assert out["prepared_columns"] == [
        ["k", 3, 0], ["li", 254, 0], ["t6", 12, 6], ["vc", 253, 0],
    ]
    assert out["prepared_rows"] == [{n: binary[2][n] for n in ("k", "li", "t6", "vc")}]
    assert out["params"] == [
        {"k": 7, "s": "x✓", "f": 2.5, "n": None, "t": "2024-01-02 03:04:05.678901",
         "li": "123456789012345678901234567890123", "b": 1},
    ]  # fmt: skip
    assert out["stream"] == [100_000, sum(range(100_000))]


# --- polars over connectorx ---------------------------------------------------------------------


def _polars_uri(galene, db: str) -> str:
    return f"mysql://root@127.0.0.1:{galene.query_port}/{db}"


@pytest.mark.parametrize("rows", [1_000, 10_000])
def test_polars_read_database_uri_over_connectorx(galene, db, rows):
    pl = pytest.importorskip("polars")
    pytest.importorskip("connectorx")
    galene.query(
        "CREATE TABLE w (k INT, v VARCHAR(20), amount DECIMAL(12, 2), at DATETIME(6), d DATE, "
        "li LARGEINT, x DOUBLE, b BOOLEAN) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3",
        db,
    )
    body = "".join(
        f"{i},v{i},{i}.{i % 100:02d},2024-01-01 00:00:{i % 60:02d}.{i:06d},2024-02-{1 + i % 28:02d},"
        f"{10**30 + i},{i / 4},{i % 2}\n"
        for i in range(rows)
    )
    galene.stream_load(db, "w", body.encode(), {"column_separator": ","})
    df = pl.read_database_uri(
        "SELECT k, v, amount, at, d, li, x, b FROM w ORDER BY k", _polars_uri(galene, db), engine="connectorx"
    )
    assert df.height == rows
    # connectorx reads every MySQL DECIMAL as Decimal(38, 10), BOOLEAN (TINYINT) as Int8.
    assert dict(df.schema) == {
        "k": pl.Int32, "v": pl.String, "amount": pl.Decimal(38, 10), "at": pl.Datetime("us"), "d": pl.Date,
        "li": pl.String, "x": pl.Float64, "b": pl.Int8,
    }  # fmt: skip
    last = df.row(rows - 1, named=True)
    i = rows - 1
    assert last["k"] == i and last["v"] == f"v{i}" and last["li"] == str(10**30 + i) and last["x"] == i / 4
    assert last["at"] == dt.datetime(2024, 1, 1, 0, 0, i % 60, i)
    assert last["d"] == dt.date(2024, 2, 1 + i % 28) and last["b"] == i % 2
    assert last["amount"] == Decimal(f"{i}.{i % 100:02d}")
    assert df["k"].to_list() == list(range(rows))


# --- JDBC (MariaDB Connector/J, server-side prepared statements) ---------------------------------

MARIADB_JDBC = Path("/usr/share/java/mariadb-java-client.jar")

_JAVA_SOURCE = r"""
import java.sql.*;

public class PreparedRead {
  public static void main(String[] args) throws Exception {
    String url = "jdbc:mariadb://127.0.0.1:" + args[0] + "/" + args[1] + "?useServerPrepStmts=true";
    try (Connection c = DriverManager.getConnection(url, "root", "");
         PreparedStatement p = c.prepareStatement("SELECT k, li, t6, d38, li + 0 FROM t WHERE k IN (?, ?) ORDER BY k")) {
      ResultSetMetaData declared = p.getMetaData();
      System.out.println("declared " + declared.getColumnCount());
      p.setInt(1, 1);
      p.setInt(2, 3);
      try (ResultSet r = p.executeQuery()) {
        ResultSetMetaData m = r.getMetaData();
        for (int i = 1; i <= m.getColumnCount(); i++) {
          System.out.println("column " + m.getColumnName(i) + " " + m.getColumnTypeName(i) + " " + m.getScale(i));
        }
        while (r.next()) {
          System.out.println("row " + r.getInt(1) + " " + r.getString(2) + " " + r.getTimestamp(3).toLocalDateTime()
              + " " + r.getBigDecimal(4).toPlainString() + " " + r.getString(5));
        }
      }
    }
  }
}
"""


def test_jdbc_server_prepared_statements(galene, all_types, tmp_path):
    if shutil.which("javac") is None or not MARIADB_JDBC.exists():
        pytest.skip("javac or MariaDB Connector/J (/usr/share/java/mariadb-java-client.jar) is missing")
    (tmp_path / "PreparedRead.java").write_text(_JAVA_SOURCE)
    subprocess.run(["javac", "-cp", str(MARIADB_JDBC), "PreparedRead.java"], cwd=tmp_path, check=True, timeout=300)
    done = subprocess.run(
        ["java", "-cp", f"{MARIADB_JDBC}:{tmp_path}", "PreparedRead", str(galene.query_port), all_types],
        check=False, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "declared 5",
        "column k INTEGER 0", "column li CHAR 0", "column t6 DATETIME 6", "column d38 DECIMAL 10",
        "column li + 0 DECIMAL 0",
        f"row 1 {LI_38} 2024-02-29T23:59:59.123456 1234567890123456789012345678.0123456789 {LI_38}",
        f"row 3 {LI_29} 2000-01-01T00:00:00.000001 -0.0000000001 {LI_29}",
    ]  # fmt: skip
