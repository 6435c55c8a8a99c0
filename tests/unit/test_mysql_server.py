"""The MySQL endpoint as real clients see it: pymysql, mysql-connector, SQLAlchemy, the mariadb CLI.

The executor here is an in-test fake that answers a handful of statements; it stands in for
the SQL layer only so that this file tests the protocol layer (no Spark).
"""

from __future__ import annotations

import asyncio
import datetime
import decimal
import hashlib
import os
import pty
import select
import shutil
import socket
import struct
import subprocess
import threading
import time

import mysql.connector
import pyarrow as pa
import pymysql
import pytest
import sqlglot
from sqlglot import exp

from galene.common.errors import unknown_table
from galene.common.types import ColumnType, parse_type
from galene.fe.mysql.boundary import ResultColumn, SessionContext, StatementResult
from galene.fe.mysql.result_encoding import arrow_text
from galene.fe.mysql.server import GaleneMysqlServer

MARIADB = shutil.which("mariadb") or "/usr/bin/mariadb"


def native_hash(password: str) -> str:
    return hashlib.sha1(hashlib.sha1(password.encode()).digest()).hexdigest() if password else ""


def text_col(name: str) -> ResultColumn:
    return ResultColumn(name, ColumnType(name="STRING"))


TYPED_COLUMNS = [
    ResultColumn("i", ColumnType(name="INT")),
    ResultColumn("big", ColumnType(name="BIGINT")),
    ResultColumn("s", ColumnType(name="VARCHAR", length=20)),
    ResultColumn("ts", ColumnType(name="DATETIME", precision=3)),
    ResultColumn("d", ColumnType(name="DATE")),
    ResultColumn("amount", ColumnType(name="DECIMAL", precision=10, scale=2)),
    ResultColumn("flag", ColumnType(name="BOOLEAN")),
    ResultColumn("x", ColumnType(name="DOUBLE")),
]


def typed_table() -> pa.Table:
    return pa.table(
        {
            "i": pa.array([1, None, -7], pa.int32()),
            "big": pa.array([2**40, 0, None], pa.int64()),
            "s": pa.array(["héllo", None, "it's"]),
            "ts": pa.array(
                [datetime.datetime(2024, 1, 2, 3, 4, 5, 123456), None, datetime.datetime(2024, 2, 1)],
                pa.timestamp("us"),
            ),
            "d": pa.array([datetime.date(2024, 1, 2), None, datetime.date(1999, 12, 31)], pa.date32()),
            "amount": pa.array(
                [decimal.Decimal("1.5"), None, decimal.Decimal("-3.25")], pa.decimal128(10, 2)
            ),
            "flag": pa.array([True, None, False]),
            "x": pa.array([0.5, None, 2.0]),
        }
    )


EXPECTED_TYPED_ROWS = [
    (1, 2**40, "héllo", datetime.datetime(2024, 1, 2, 3, 4, 5, 123000), datetime.date(2024, 1, 2),
     decimal.Decimal("1.50"), 1, 0.5),
    (None, 0, None, None, None, None, None, None),
    (-7, None, "it's", datetime.datetime(2024, 2, 1), datetime.date(1999, 12, 31),
     decimal.Decimal("-3.25"), 0, 2.0),
]  # fmt: skip


# Every scalar type, as the engine hands them over (LARGEINT and a computed DECIMAL(38, 0) of up
# to 38 digits, a computed DATETIME declared without precision that has microseconds), with
# NULLs, Unicode and strings past both length-prefix bounds (251 and 65536 bytes); 21 columns
# make a 3-byte NULL bitmap.
WIDE_COLUMNS = [
    ResultColumn(n, parse_type(t))
    for n, t in [
        ("b", "BOOLEAN"), ("ti", "TINYINT"), ("si", "SMALLINT"), ("i", "INT"), ("bi", "BIGINT"),
        ("li", "LARGEINT"), ("f", "FLOAT"), ("d", "DOUBLE"), ("dsm", "DECIMAL(10,2)"),
        ("d38", "DECIMAL(38,10)"), ("d380", "DECIMAL(38,0)"), ("dd", "DATE"), ("t0", "DATETIME"),
        ("t3", "DATETIME(3)"), ("t6", "DATETIME(6)"), ("c", "CHAR(5)"), ("vc", "VARCHAR(20)"),
        ("s", "STRING"), ("n", "STRING"), ("j", "JSON"), ("last", "INT"),
    ]
]  # fmt: skip
_D = decimal.Decimal
_T = datetime.datetime
WIDE_ROWS = [
    (True, -128, -32768, -(2**31), -(2**63), -(10**37) - 5, 1.5, -2.5e-300, _D("-12345678.90"),
     _D("1234567890123456789012345678.0123456789"), _D("9" * 38), datetime.date(2024, 2, 29),
     _T(2024, 2, 29, 23, 59, 59, 5), _T(2024, 2, 29, 23, 59, 59, 123000), _T(1, 1, 1, 0, 0, 0, 999999),
     "héllo", "中文 😀 ✓", "x" * 300, None, '{"a": [1, 2]}', 1),
    (None,) * 20 + (2,),
    (False, 127, 32767, 2**31 - 1, 2**63 - 1, 12345678901234567890123456789, -0.0, 1e300, _D("0.01"),
     _D("-0.0000000001"), _D(-(10**37) - 7), datetime.date(9999, 12, 31), _T(1970, 1, 1),
     _T(2000, 1, 1, 0, 0, 0, 1000), _T(9999, 12, 31, 23, 59, 59, 999999), "", "", "é" * 40000, None, "[]", 3),
]  # fmt: skip


def wide_table() -> pa.Table:
    arrays = {}
    for i, column in enumerate(WIDE_COLUMNS):
        values = [row[i] for row in WIDE_ROWS]
        arrow = pa.null() if column.name == "n" else column.type.to_arrow()
        arrays[column.name] = pa.array(values, arrow)
    return pa.table(arrays)


def wide_expected(row: tuple) -> tuple:
    """A WIDE row as a client reads it: BOOLEAN is TINYINT; LARGEINT a MySQL string; FLOAT a
    single; DECIMAL(38, 10) at its scale."""
    out = []
    for column, value in zip(WIDE_COLUMNS, row, strict=True):
        if value is None:
            out.append(None)
        elif column.name == "b":
            out.append(int(value))
        elif column.name == "li":
            out.append(str(value))
        elif column.name == "f":
            out.append(struct.unpack("<f", struct.pack("<f", value))[0])
        elif column.name == "d38":
            out.append(value.quantize(_D("1E-10"), context=decimal.Context(prec=40)))
        else:
            out.append(value)
    return tuple(out)


class FakeExecutor:
    """Answers a few statements and records what reached it (with a copy of the context)."""

    def __init__(self) -> None:
        self.received: list[tuple[str, SessionContext]] = []
        self.described: list[str] = []

    def statements(self) -> list[str]:
        return [sql for sql, _ in self.received]

    async def execute(self, sql: str, ctx: SessionContext) -> StatementResult:
        self.received.append(
            (sql, SessionContext(ctx.connection_id, ctx.user, ctx.database, dict(ctx.variables)))
        )
        upper = sql.upper()
        if upper.startswith("SHOW FULL COLUMNS FROM"):
            names = ["Field", "Type", "Collation", "Null", "Key", "Default", "Extra", "Privileges", "Comment"]
            return StatementResult(
                columns=[text_col(n) for n in names],
                rows=[
                    ("id", "INT", None, "NO", "true", None, "", "", ""),
                    ("name", "VARCHAR(20)", "utf8mb4_0900_bin", "YES", "false", "anon", "", "", ""),
                ],
            )
        if upper == "SHOW DATABASES":
            return StatementResult(columns=[text_col("Database")], rows=[("db1",), ("information_schema",)])
        if upper == "SHOW TABLES":
            return StatementResult(columns=[text_col(f"Tables_in_{ctx.database}")], rows=[("t1",)])
        if upper.startswith("SELECT * FROM TYPED"):
            return StatementResult(columns=TYPED_COLUMNS, rows=typed_table())
        if upper.startswith("SELECT * FROM WIDE"):
            return StatementResult(columns=WIDE_COLUMNS, rows=wide_table())
        if upper.startswith("SELECT * FROM HUGE"):
            return StatementResult(columns=[text_col("v")], rows=pa.table({"v": ["x" * (17 << 20)]}))
        if upper.startswith("SELECT COUNT(*) FROM"):
            return StatementResult(columns=[ResultColumn("count(*)", ColumnType(name="BIGINT"))], rows=[(3,)])
        if upper.startswith("INSERT"):
            return StatementResult(
                affected_rows=3, info='{"label":"insert_1", "status":"VISIBLE", "txnId":"12"}'
            )
        if upper.startswith("SELECT * FROM MISSING"):
            raise unknown_table("missing", ctx.database)
        if upper.startswith("SLEEP"):
            await asyncio.sleep(60)  # a long statement, to be interrupted by KILL QUERY
        if upper.startswith("CRASH"):
            raise RuntimeError("executor bug")
        if upper.startswith("USE "):
            return StatementResult(new_database="db1")
        return StatementResult()

    async def describe(self, sql: str, ctx: SessionContext) -> list[ResultColumn] | None:
        """A query's result columns without running it (COM_STMT_PREPARE)."""
        self.described.append(sql)
        upper = sql.upper()
        if upper.startswith("SELECT * FROM TYPED"):
            return TYPED_COLUMNS
        if upper.startswith("SELECT * FROM WIDE"):
            return WIDE_COLUMNS
        if upper.startswith("SELECT * FROM MISSING"):
            raise unknown_table("missing", ctx.database)
        return None

    def database_exists(self, name: str) -> bool:
        return name == "db1"

    def check_password(self, user: str) -> str | None:
        return {"root": "", "alice": native_hash("s3cret")}.get(user)

    def login_account(self, user: str, host: str) -> tuple[str, str] | None:
        stored = self.check_password(user)
        return ("%", stored) if stored is not None else None

    def check_database_access(self, name: str, ctx: SessionContext) -> None:
        return None  # the fake's users may use every database

    def is_admin(self, ctx: SessionContext) -> bool:
        return True  # the fake's users are all admins


@pytest.fixture(scope="module")
def endpoint():
    yield from serve(GaleneMysqlServer(FakeExecutor(), port=0))


def serve(server: GaleneMysqlServer):
    """Run `server` on an event loop in a thread; yields (server, its executor)."""
    executor = server.executor
    loop = asyncio.new_event_loop()
    started = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.start())
        started.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert started.wait(10)
    yield server, executor
    asyncio.run_coroutine_threadsafe(server.stop(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


@pytest.fixture
def executor(endpoint) -> FakeExecutor:
    _, fake = endpoint
    fake.received.clear()
    fake.described.clear()
    return fake


@pytest.fixture
def port(endpoint) -> int:
    return endpoint[0].port


def connect(port: int, **kwargs) -> pymysql.Connection:
    kwargs.setdefault("user", "root")
    return pymysql.connect(host="127.0.0.1", port=port, **kwargs)


# --- pymysql -------------------------------------------------------------------------------


def test_pymysql_connect_sequence_and_session_queries_stay_local(port, executor):
    conn = connect(port, charset="utf8mb4", autocommit=True)  # sends SET NAMES + SET AUTOCOMMIT = 1
    with conn.cursor() as cur:
        cur.execute("SELECT @@version_comment LIMIT 1")
        assert cur.description[0][0] == "@@version_comment"
        (comment,) = cur.fetchone()
        assert comment.startswith("Doris version doris-")
        cur.execute("select DATABASE(), USER() limit 1")
        assert [d[0] for d in cur.description] == ["DATABASE()", "USER()"]
        assert cur.fetchone() == (None, "'root'@'127.0.0.1'")
        cur.execute("SELECT VERSION(), CONNECTION_ID(), CURRENT_USER(), 1, 'a' AS x")
        assert [d[0] for d in cur.description] == ["VERSION()", "CONNECTION_ID()", "CURRENT_USER()", "1", "x"]
        version, connection_id, current_user, one, x = cur.fetchone()
        assert (version, current_user, one, x) == ("5.7.99", "'root'@'%'", 1, "a")
        assert connection_id == conn.thread_id()
        cur.execute(
            "SELECT @@session.autocommit, @@sql_mode, @@lower_case_table_names, @@transaction_isolation"
        )
        assert cur.fetchone() == (1, "ONLY_FULL_GROUP_BY", 0, "REPEATABLE-READ")
        cur.execute("SHOW VARIABLES LIKE 'character_set_c%'")
        assert cur.fetchall() == (
            ("character_set_client", "utf8mb4"),
            ("character_set_connection", "utf8mb4"),
        )
        cur.execute("SHOW WARNINGS")
        assert cur.fetchall() == ()
        cur.execute("BEGIN")
        cur.execute("COMMIT")
        cur.execute("ROLLBACK")
    conn.close()
    assert executor.statements() == []


def test_set_statements_change_session_variables_seen_by_executor(port, executor):
    conn = connect(port, database="db1")
    with conn.cursor() as cur:
        cur.execute("SET group_commit = async_mode")
        cur.execute("SET SESSION query_timeout = 60, @@session.autocommit = OFF")
        cur.execute("SET @batch = 'b1'")
        cur.execute("SET enable_profile = true")
        cur.execute("SELECT @@group_commit, @@query_timeout, @@autocommit, @batch")
        assert cur.fetchone() == ("async_mode", 60, 0, "b1")
        cur.execute("INSERT INTO t1 VALUES (1)")
    conn.close()
    (sql, ctx) = executor.received[-1]
    assert sql == "INSERT INTO t1 VALUES (1)"
    assert ctx.database == "db1" and ctx.user == "root"
    assert ctx.variables["group_commit"] == "async_mode"
    assert ctx.variables["query_timeout"] == 60
    assert ctx.variables["autocommit"] == 0
    assert ctx.variables["enable_profile"] is True


def test_bad_set_values_are_rejected(port, executor):
    conn = connect(port)
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.OperationalError) as err:
            cur.execute("SET group_commit = sometimes")
        assert err.value.args[0] == 1231
        with pytest.raises(pymysql.err.OperationalError) as err:
            cur.execute("SELECT @@no_such_variable")
        assert err.value.args == (1193, "Unknown system variable 'no_such_variable'")
        cur.execute("SELECT @@group_commit")
        assert cur.fetchone() == ("off_mode",)
    conn.close()


def test_login_errors(port):
    with pytest.raises(pymysql.err.OperationalError) as err:
        connect(port, user="alice", password="wrong")
    assert err.value.args == (1045, "Access denied for user 'alice'@'127.0.0.1' (using password: YES)")
    with pytest.raises(pymysql.err.OperationalError) as err:
        connect(port, user="nobody")
    assert err.value.args == (1045, "Access denied for user 'nobody'@'127.0.0.1' (using password: NO)")
    with pytest.raises(pymysql.err.OperationalError) as err:
        connect(port, user="alice", password="s3cret", database="nope")
    assert err.value.args == (1049, "Unknown database 'nope'")
    conn = connect(port, user="alice", password="s3cret", database="db1")
    with conn.cursor() as cur:
        cur.execute("SELECT DATABASE(), CURRENT_USER()")
        assert cur.fetchone() == ("db1", "'alice'@'%'")
    conn.close()


def test_use_and_init_db(port, executor):
    conn = connect(port)
    with conn.cursor() as cur:
        cur.execute("USE db1")
        cur.execute("SELECT DATABASE()")
        assert cur.fetchone() == ("db1",)
        with pytest.raises(pymysql.err.OperationalError) as err:
            cur.execute("USE nope")
        assert err.value.args == (1049, "errCode = 2, detailMessage = Unknown database 'nope'")
        with pytest.raises(pymysql.err.OperationalError) as err:
            conn.select_db("nope")  # COM_INIT_DB
        assert err.value.args[0] == 1049
        conn.select_db("db1")
        cur.execute("SELECT DATABASE()")
        assert cur.fetchone() == ("db1",)
    conn.close()


def test_executor_errors_surface_and_connection_stays_usable(port, executor):
    conn = connect(port, database="db1")
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.OperationalError) as err:
            cur.execute("SELECT * FROM missing")
        assert err.value.args == (1105, "errCode = 2, detailMessage = Unknown table 'db1.missing'")
        with pytest.raises(pymysql.err.OperationalError) as err:
            cur.execute("CRASH now")
        assert err.value.args == (1105, "errCode = 2, detailMessage = executor bug")
        cur.execute("SELECT COUNT(*) FROM t1")
        assert cur.description[0][0] == "count(*)"
        assert cur.fetchone() == (3,)
    conn.close()


def test_ok_packet_carries_affected_rows_and_info(port, executor):
    conn = connect(port, database="db1")
    with conn.cursor() as cur:
        assert cur.execute("INSERT INTO t1 SELECT * FROM t2") == 3
        assert conn.affected_rows() == 3
        assert conn._result.message == b'{"label":"insert_1", "status":"VISIBLE", "txnId":"12"}'
    conn.close()


def test_typed_arrow_result_over_text_protocol(port, executor):
    conn = connect(port, database="db1")
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM typed")
        assert [d[0] for d in cur.description] == [c.name for c in TYPED_COLUMNS]
        type_codes = [d[1] for d in cur.description]
        assert type_codes == [
            pymysql.constants.FIELD_TYPE.LONG,
            pymysql.constants.FIELD_TYPE.LONGLONG,
            pymysql.constants.FIELD_TYPE.VAR_STRING,
            pymysql.constants.FIELD_TYPE.DATETIME,
            pymysql.constants.FIELD_TYPE.DATE,
            pymysql.constants.FIELD_TYPE.NEWDECIMAL,
            pymysql.constants.FIELD_TYPE.TINY,
            pymysql.constants.FIELD_TYPE.DOUBLE,
        ]
        assert cur.description[5][5] == 2  # DECIMAL(10, 2) scale
        assert list(cur.fetchall()) == EXPECTED_TYPED_ROWS
    conn.close()


def test_kill_connection_from_another_session(port, executor):
    victim = connect(port)
    killer = connect(port)
    with killer.cursor() as cur:
        cur.execute(f"KILL {victim.thread_id()}")
        with pytest.raises(pymysql.err.OperationalError) as err:
            cur.execute("KILL 999999")
        assert err.value.args[0] == 1094
    with pytest.raises(pymysql.err.Error), victim.cursor() as cur:
        cur.execute("SELECT 1")
        cur.fetchall()
    killer.close()


def test_kill_query_interrupts_a_running_statement_only(port, executor):
    victim = connect(port)
    outcome: list[BaseException] = []

    def run_long_statement() -> None:
        try:
            with victim.cursor() as cur:
                cur.execute("SLEEP")
        except pymysql.err.Error as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run_long_statement)
    worker.start()
    deadline = time.monotonic() + 10
    while "SLEEP" not in executor.statements() and time.monotonic() < deadline:
        time.sleep(0.02)
    killer = connect(port)
    with killer.cursor() as cur:
        cur.execute(f"KILL QUERY {victim.thread_id()}")
    worker.join(10)
    assert [exc.args[0] for exc in outcome] == [1317]
    with victim.cursor() as cur:  # the session survives a killed query
        cur.execute("SELECT 1")
        assert cur.fetchone() == (1,)
    victim.close()
    killer.close()


# --- mysql-connector-python ------------------------------------------------------------------


def test_mysql_connector_connect_and_prepared_statement_escaping(port, executor):
    import mysql.connector

    conn = mysql.connector.connect(
        host="127.0.0.1", port=port, user="alice", password="s3cret", database="db1",
        use_pure=True, collation="utf8mb4_general_ci",
    )  # fmt: skip
    cur = conn.cursor()
    cur.execute("SELECT @@session.autocommit")
    assert cur.fetchall() == [(0,)]  # the connector turned autocommit off at connect
    cur.execute("SELECT @@collation_connection, @@session.sql_mode")
    assert cur.fetchall() == [("utf8mb4_general_ci", "ONLY_FULL_GROUP_BY")]
    cur.close()

    tricky = "it's a \\ backslash, '' and \\' too"
    prepared = conn.cursor(prepared=True)
    prepared.execute(
        "INSERT INTO t1 (name, note, n, amount, at) VALUES (?, ?, ?, ?, ?)",
        (tricky, None, 5, decimal.Decimal("12.30"), datetime.datetime(2024, 5, 6, 7, 8, 9)),
    )
    assert prepared.rowcount == 3
    sql, ctx = executor.received[-1]
    assert ctx.database == "db1" and ctx.user == "alice"
    values = sqlglot.parse_one(sql, read="doris").find(exp.Values).expressions[0].expressions
    assert values[0].this == tricky
    assert isinstance(values[1], exp.Null)
    assert [values[2].this, values[3].this, values[4].this] == ["5", "12.30", "2024-05-06 07:08:09"]

    prepared.execute("SELECT * FROM typed WHERE s = ?", ("it's",))
    assert executor.received[-1][0] == "SELECT * FROM typed WHERE s = 'it''s'"
    assert prepared.fetchall() == EXPECTED_TYPED_ROWS
    prepared.close()
    conn.close()


# --- SQLAlchemy -------------------------------------------------------------------------------


def test_sqlalchemy_engine(port, executor):
    import sqlalchemy as sa

    engine = sa.create_engine(f"mysql+pymysql://root@127.0.0.1:{port}/db1")
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT 1")).fetchall() == [(1,)]
            assert conn.execute(sa.text("SELECT VERSION()")).scalar() == "5.7.99"
        with engine.connect() as conn:  # a pooled connection, rolled back on return
            assert conn.execute(sa.text("SELECT COUNT(*) FROM t1")).scalar() == 3
    finally:
        engine.dispose()
    assert executor.statements() == ["SELECT COUNT(*) FROM t1"]


# --- mariadb CLI --------------------------------------------------------------------------------

needs_mariadb = pytest.mark.skipif(not os.path.exists(MARIADB), reason="mariadb client not installed")


@needs_mariadb
def test_mariadb_cli_batch(port, executor):
    out = subprocess.run(
        [MARIADB, "-h127.0.0.1", f"-P{port}", "-uroot", "--batch",
         "-e", "select @@version_comment limit 1; select database(), user();"],
        check=False, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "@@version_comment" and lines[1].startswith("Doris version doris-")
    assert lines[2:] == ["database()\tuser()", "NULL\t'root'@'127.0.0.1'"]

    out = subprocess.run(
        [MARIADB, "-h127.0.0.1", f"-P{port}", "-uroot", "--batch", "-e", "use db1; show tables; select database()"],
        check=False, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["Tables_in_db1", "t1", "database()", "db1"]

    out = subprocess.run(
        [MARIADB, "-h127.0.0.1", f"-P{port}", "-ualice", "-pwrong", "-e", "select 1"],
        check=False, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert out.returncode == 1
    assert (
        "ERROR 1045 (28000): Access denied for user 'alice'@'127.0.0.1' (using password: YES)" in out.stderr
    )


@needs_mariadb
def test_mariadb_cli_interactive_builds_field_lists(port, executor):
    """An interactive `mariadb -D db1` lists databases, tables and each table's fields."""
    pid, fd = pty.fork()
    if pid == 0:  # child: the CLI on a terminal, so it runs interactively with auto-rehash
        os.execv(MARIADB, [MARIADB, "-h127.0.0.1", f"-P{port}", "-uroot", "-Ddb1"])
    output = b""

    def read_until(marker: bytes, limit: float = 20.0) -> None:
        nonlocal output
        deadline = time.monotonic() + limit
        while marker not in output and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    output += os.read(fd, 4096)
                except OSError:
                    return

    try:
        read_until(b"[db1]>")
        os.write(fd, b"select database();\n")
        read_until(b"row in set")
        os.write(fd, b"quit\n")
        read_until(b"Bye")
    finally:
        os.waitpid(pid, 0)
        os.close(fd)
    text = output.decode(errors="replace")
    assert "Doris version doris-" in text
    assert "| db1        |" in text
    assert "SHOW FULL COLUMNS FROM `t1`" in executor.statements()


# --- bounds ------------------------------------------------------------------------------------
# What a hostile client meets is tested against a real FE process in
# tests/integration/test_hostile_mysql.py; these check the same paths in-process.


@pytest.fixture(scope="module")
def bounded():
    server = GaleneMysqlServer(
        FakeExecutor(),
        port=0,
        qe_max_connection=3,
        max_user_connections=2,
        connect_timeout=30,
        max_allowed_packet=64 * 1024,
        wait_timeout=3600,
    )
    yield from serve(server)


def raw_login(port: int) -> socket.socket:
    """A logged-in socket as root (empty password), commands start at sequence id 0."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    read_raw_packet(sock)  # greeting
    caps = 0x1 | 0x200 | 0x8000 | 0x80000  # LONG_PASSWORD, PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH
    body = struct.pack("<IIB", caps, 1 << 24, 255) + bytes(23) + b"root\0\0mysql_native_password\0"
    sock.sendall(struct.pack("<I", len(body) | 1 << 24) + body)
    assert read_raw_packet(sock)[:1] == b"\x00"
    return sock


def read_exactly(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(min(n - len(data), 1 << 20))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


def read_raw_packet(sock: socket.socket) -> bytes:
    header = read_exactly(sock, 4)
    return read_exactly(sock, int.from_bytes(header[:3], "little"))


def test_payloads_over_16mb_are_read_and_written_in_several_packets(port):
    value = "0123456789abcdef" * (17 * 1024 * 1024 // 16)  # one row of 17 MB each way
    conn = connect(port, max_allowed_packet=64 << 20)
    with conn.cursor() as cur:
        cur.execute("SET max_allowed_packet = 67108864")
        cur.execute(f"SELECT '{value}' AS v")
        assert cur.fetchone()[0] == value
        cur.execute("SELECT 1")
        assert cur.fetchone() == (1,)
    conn.close()


def test_max_allowed_packet_comes_from_the_server_and_is_enforced(bounded):
    server, _ = bounded
    conn = connect(server.port)
    with conn.cursor() as cur:
        cur.execute("SELECT @@max_allowed_packet")
        assert cur.fetchone() == (64 * 1024,)
        with pytest.raises(pymysql.err.OperationalError) as err:
            cur.execute("SELECT '" + "x" * (64 * 1024) + "'")
        assert err.value.args == (1153, "Got a packet bigger than 'max_allowed_packet' bytes")
    with pytest.raises(pymysql.err.Error):
        conn.ping(reconnect=False)
    conn.close()


def test_connection_limits(bounded):
    server, _ = bounded
    held = [connect(server.port), connect(server.port)]
    with pytest.raises(pymysql.err.OperationalError) as err:
        connect(server.port)
    assert err.value.args == (1203, "Reach limit of connections. Total: 3, User: 2, Current: 2")
    held.append(connect(server.port, user="alice", password="s3cret"))
    with pytest.raises(pymysql.err.OperationalError) as err:
        connect(server.port, user="alice", password="s3cret")
    assert err.value.args == (1203, "Reach limit of connections. Total: 3, User: 2, Current: 3")
    for conn in held:
        conn.close()
    deadline = time.monotonic() + 10
    while server.sessions and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.sessions == 0 and server.sessions_by_user == {} and server.logins_in_progress == 0


def test_wait_timeout_set_in_a_session_closes_it_with_4031(bounded):
    server, _ = bounded
    sock = raw_login(server.port)
    sql = b"\x03SET wait_timeout = 1"
    sock.sendall(struct.pack("<I", len(sql)) + sql)
    assert read_raw_packet(sock)[:1] == b"\x00"
    error = read_raw_packet(sock)  # unprompted, once the session was idle for a second
    assert error[:9] == b"\xff" + struct.pack("<H", 4031) + b"#HY000"
    assert error[9:].startswith(b"The client was disconnected by the server because of inactivity.")
    with pytest.raises(EOFError):
        read_raw_packet(sock)
    sock.close()


def test_bad_packets_after_login(bounded):
    server, _ = bounded
    sock = raw_login(server.port)
    bad_utf8 = b"\x03SELECT '\xc3\x28'"
    sock.sendall(struct.pack("<I", len(bad_utf8)) + bad_utf8)
    error = read_raw_packet(sock)
    assert error[1:3] == struct.pack("<H", 1300) and b"Invalid utf8mb4 character string: '\\xC3(" in error
    truncated_execute = b"\x17\x01"
    sock.sendall(struct.pack("<I", len(truncated_execute)) + truncated_execute)
    assert read_raw_packet(sock)[1:3] == struct.pack("<H", 1835)
    out_of_order = b"\x03SELECT 1"
    sock.sendall(struct.pack("<I", len(out_of_order) | 5 << 24) + out_of_order)
    assert read_raw_packet(sock)[1:3] == struct.pack("<H", 1156)
    with pytest.raises(EOFError):
        read_raw_packet(sock)
    sock.close()


def test_failed_change_user_closes_the_connection(port):
    import mysql.connector

    conn = mysql.connector.connect(host="127.0.0.1", port=port, user="root", use_pure=True)
    with pytest.raises(mysql.connector.Error) as err:
        conn.cmd_change_user(username="alice", password="wrong")
    assert err.value.errno == 1045
    with pytest.raises(mysql.connector.Error):
        conn.cmd_query("SELECT 1")
    conn.close()


def test_deep_nesting_is_refused_before_parsing(port):
    conn = connect(port)
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.OperationalError) as err:
            cur.execute("SELECT " + "(" * 100_000 + "1" + ")" * 100_000)
        assert err.value.args[0] == 1105
        assert "nested too deeply" in err.value.args[1]
        cur.execute("SELECT 1")
        assert cur.fetchone() == (1,)
    conn.close()


def test_cursor_fetch_returns_every_row_once(port):
    """COM_STMT_FETCH in batches: no row is lost between batches (mysql-mimic's loop dropped one)."""
    sock = raw_login(port)

    def command(payload: bytes) -> None:
        sock.sendall(struct.pack("<I", len(payload)) + payload)

    stmt_id, *_ = _prepare(sock, "SELECT * FROM typed")  # COM_STMT_PREPARE
    command(b"\x17" + stmt_id + b"\x01" + struct.pack("<I", 1))  # COM_STMT_EXECUTE, read-only cursor
    packets = []
    while not (packets and packets[-1][:1] == b"\xfe" and len(packets[-1]) < 9):
        packets.append(read_raw_packet(sock))
    assert packets[0] == bytes([len(TYPED_COLUMNS)])
    batches = []
    for _ in range(2):
        command(b"\x1c" + stmt_id + struct.pack("<I", 2))  # COM_STMT_FETCH, 2 rows
        rows = []
        while (packet := read_raw_packet(sock))[:1] != b"\xfe":
            rows.append(packet)
        status = struct.unpack_from("<H", packet, 3)[0]
        batches.append((len(rows), bool(status & 0x80)))  # SERVER_STATUS_LAST_ROW_SENT
    assert batches == [(2, False), (1, True)]
    sock.close()


# --- the binary protocol and prepared statements (issue 19) --------------------------------------


def connector(port: int, **kwargs):
    import mysql.connector

    kwargs.setdefault("user", "root")
    return mysql.connector.connect(host="127.0.0.1", port=port, database="db1", use_pure=True, **kwargs)


def test_binary_protocol_reads_every_type_as_the_text_protocol(port, executor):
    """mysql-connector's prepared (binary) and plain (text) cursors read the same values: LARGEINT
    and DECIMAL(38, 0) past 28 digits (Python's decimal context once failed them), a DATETIME
    declared without precision keeps its microseconds as the text protocol does."""
    conn = connector(port)
    try:
        text = conn.cursor()
        text.execute("SELECT * FROM wide")
        text_rows = [tuple(r) for r in text.fetchall()]
        binary = conn.cursor(prepared=True)
        binary.execute("SELECT * FROM wide")
        binary_rows = [tuple(r) for r in binary.fetchall()]
        assert [d[1] for d in binary.description] == [d[1] for d in text.description]
    finally:
        conn.close()
    expected = [wide_expected(r) for r in WIDE_ROWS]
    assert binary_rows == expected
    assert text_rows == expected


def test_binary_rows_of_16mb_are_split_into_packets(port):
    """A binary row of 16 MB or more continues in further packets (mysql-connector cannot read
    those: its binary reader takes one packet per row; checked on the wire instead)."""
    sock = raw_login(port)
    stmt_id, *_ = _prepare(sock, "SELECT * FROM huge")
    _command(sock, b"\x17" + stmt_id + b"\x00" + struct.pack("<I", 1))
    assert read_raw_packet(sock) == b"\x01"
    _read_until_eof(sock)  # the column definition
    headers, pieces = [], []
    while True:
        header = read_exactly(sock, 4)
        length = int.from_bytes(header[:3], "little")
        headers.append((length, header[3]))
        pieces.append(read_exactly(sock, length))
        if length < 0xFFFFFF:
            break
    value = b"x" * (17 << 20)
    assert b"".join(pieces) == b"\x00\x00\xfe" + struct.pack("<Q", len(value)) + value
    assert [length for length, _ in headers] == [0xFFFFFF, 3 + 8 + len(value) - 0xFFFFFF]
    assert headers[1][1] == (headers[0][1] + 1) & 0xFF  # consecutive sequence ids
    assert read_raw_packet(sock)[:1] == b"\xfe"  # EOF
    sock.close()


def _column_definitions(packets: list[bytes]) -> list[dict]:
    """Protocol::ColumnDefinition41 packets, decoded."""

    def lenenc(data: bytes, at: int) -> tuple[bytes, int]:
        n = data[at]
        assert n < 251
        return data[at + 1 : at + 1 + n], at + 1 + n

    out = []
    for data in packets:
        at = 0
        fields = []
        for _ in range(6):  # catalog, schema, table, org_table, name, org_name
            value, at = lenenc(data, at)
            fields.append(value)
        assert data[at] == 0x0C
        charset, length, type_, flags, decimals = struct.unpack_from("<HIBHB", data, at + 1)
        out.append(
            {"name": fields[4].decode(), "charset": charset, "length": length, "type": type_, "flags": flags,
             "decimals": decimals}
        )  # fmt: skip
    return out


def _command(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(struct.pack("<I", len(payload)) + payload)


def _read_until_eof(sock: socket.socket) -> list[bytes]:
    packets = []
    while (packet := read_raw_packet(sock))[:1] != b"\xfe" or len(packet) >= 9:
        packets.append(packet)
    return packets


def test_result_columns_are_declared_as_doris_declares_them(port):
    """Type, length, decimals, flags and charset per Doris' MysqlSerializer.writeField: flags 0,
    DATETIME(p) with p decimals, LARGEINT a utf8 MYSQL_TYPE_STRING of length 255, JSON a
    MYSQL_TYPE_JSON (PrimitiveType.toMysqlType)."""
    sock = raw_login(port)
    _command(sock, b"\x03SELECT * FROM wide")
    assert read_raw_packet(sock) == bytes([len(WIDE_COLUMNS)])
    definitions = _column_definitions(_read_until_eof(sock))
    sock.close()
    got = {d["name"]: (d["type"], d["length"], d["decimals"], d["flags"], d["charset"]) for d in definitions}
    utf8, binary = 255, 63
    assert got == {
        "b": (1, 1, 0, 0, binary), "ti": (1, 4, 0, 0, binary), "si": (2, 6, 0, 0, binary),
        "i": (3, 11, 0, 0, binary), "bi": (8, 20, 0, 0, binary), "li": (254, 255, 0, 0, utf8),
        "f": (4, 12, 31, 0, binary), "d": (5, 22, 31, 0, binary), "dsm": (246, 12, 2, 0, binary),
        "d38": (246, 40, 10, 0, binary), "d380": (246, 39, 0, 0, binary), "dd": (10, 10, 0, 0, binary),
        "t0": (12, 19, 0, 0, binary), "t3": (12, 19, 3, 0, binary), "t6": (12, 19, 6, 0, binary),
        "c": (253, 255, 0, 0, utf8), "vc": (253, 255, 0, 0, utf8), "s": (253, 255, 0, 0, utf8),
        "n": (253, 255, 0, 0, utf8), "j": (245, 255, 0, 0, utf8), "last": (3, 11, 0, 0, binary),
    }  # fmt: skip


def _prepare(sock: socket.socket, sql: str) -> tuple[bytes, int, int, list[bytes], list[bytes]]:
    """COM_STMT_PREPARE: (statement id, columns, params, parameter and column definitions)."""
    _command(sock, b"\x16" + sql.encode())
    ok = read_raw_packet(sock)
    assert ok[:1] == b"\x00", ok
    stmt_id, columns, params = ok[1:5], *struct.unpack_from("<HH", ok, 5)
    param_defs = _read_until_eof(sock) if params else []
    column_defs = _read_until_eof(sock) if columns else []
    return stmt_id, columns, params, param_defs, column_defs


def test_prepare_declares_the_result_columns_the_execute_sends(port, executor):
    sock = raw_login(port)
    stmt_id, columns, params, param_defs, column_defs = _prepare(sock, "SELECT * FROM typed WHERE s = ?")
    assert (columns, params, len(param_defs)) == (len(TYPED_COLUMNS), 1, 1)
    # The parameter becomes NULL for the description: its type is not known before EXECUTE.
    assert executor.described == ["SELECT * FROM typed WHERE s = NULL"]
    execute = b"\x17" + stmt_id + b"\x00" + struct.pack("<I", 1) + b"\x00\x01" + b"\xfd\x00" + b"\x04it's"
    _command(sock, execute)
    assert read_raw_packet(sock) == bytes([len(TYPED_COLUMNS)])
    sent = _read_until_eof(sock)
    assert column_defs == sent  # byte for byte
    assert [d["name"] for d in _column_definitions(column_defs)] == [c.name for c in TYPED_COLUMNS]
    rows = _read_until_eof(sock)
    assert len(rows) == 3
    sock.close()


def test_prepare_of_statements_without_a_known_result(port, executor):
    """A statement the executor cannot describe (or one that is no query) declares no columns;
    a failing description is left for EXECUTE to report. Session SELECTs describe themselves."""
    sock = raw_login(port)
    for sql, expected in [
        ("SELECT 1 FROM somewhere_else WHERE x = ?", 0),
        ("INSERT INTO t1 VALUES (?)", 0),
        ("SELECT * FROM missing WHERE x = ?", 0),
        ("SELECT @@session.autocommit, DATABASE()", 2),
    ]:
        _, columns, _, _, column_defs = _prepare(sock, sql)
        assert columns == expected, sql
        if expected:
            assert [d["name"] for d in _column_definitions(column_defs)] == ["@@session.autocommit", "DATABASE()"]
    assert executor.described == ["SELECT 1 FROM somewhere_else WHERE x = NULL", "SELECT * FROM missing WHERE x = NULL"]
    sock.close()
    conn = connector(port)
    try:
        cur = conn.cursor(prepared=True)
        with pytest.raises(mysql.connector.errors.DatabaseError) as err:
            cur.execute("SELECT * FROM missing WHERE x = ?", (1,))
        assert err.value.errno == 1105 and "Unknown table" in err.value.msg
        cur.execute("SELECT * FROM typed WHERE s = ?", ("it's",))
        assert cur.fetchall() == EXPECTED_TYPED_ROWS
    finally:
        conn.close()


def test_decimal_text_is_plain_at_every_scale(port, executor):
    """Small DECIMALs print as Doris prints them, never in scientific notation (Arrow's `0E-10`)."""
    conn = connector(port, raw=True)
    try:
        cur = conn.cursor()
        cur.execute("SELECT * FROM wide")
        rows = cur.fetchall()
    finally:
        conn.close()
    d38 = [c.name for c in WIDE_COLUMNS].index("d38")
    assert [r[d38] for r in rows] == [
        bytearray(b"1234567890123456789012345678.0123456789"), None, bytearray(b"-0.0000000001"),
    ]
    values = [decimal.Decimal(v) for v in ("0", "1E-7", "-0.5", "0.0000123", "-12.5", "99999999.9999999")]
    texts = arrow_text(pa.array(values, pa.decimal128(15, 7)), parse_type("DECIMAL(15, 7)")).to_pylist()
    assert texts == ["0.0000000", "0.0000001", "-0.5000000", "0.0000123", "-12.5000000", "99999999.9999999"]
