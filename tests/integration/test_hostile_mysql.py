"""The FE's MySQL port against hostile and oversized input: a real FE process, real clients.

Every input of the endpoint is bounded: packet size (max_allowed_packet, read as MySQL frames
it, never buffered past the limit), connection counts (qe_max_connection, max_user_connections,
and logins in progress), time (connect_timeout for logins, wait_timeout between commands,
net_read_timeout inside a packet) and statement nesting (max_sql_nesting_depth). After each
probe the FE must be alive and answer `SELECT 1` on a fresh connection, and its log must hold
no ERROR line or stack for the probe. Assertions are on answers and memory, never on timing:
waits for a close have generous deadlines.
"""

from __future__ import annotations

import os
import re
import socket
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pymysql
import pytest

from tests.support.node import GaleneProcess
from tests.support.procs import peak_rss_bytes

LIMIT = 1 << 20  # max_allowed_packet of the FE under test
QE_MAX_CONNECTION = 8
MAX_USER_CONNECTIONS = 5
CONNECT_TIMEOUT = 2
WAIT_TIMEOUT = 600
MAX_DEPTH = 200

CLIENT_LONG_PASSWORD = 0x1
CLIENT_PROTOCOL_41 = 0x200
CLIENT_SECURE_CONNECTION = 0x8000
CLIENT_PLUGIN_AUTH = 0x80000
COM_QUERY = 0x03
COM_STMT_EXECUTE = 0x17


@pytest.fixture(scope="module")
def fe(tmp_path_factory):
    proc = GaleneProcess(
        tmp_path_factory.mktemp("hostile-mysql"),
        role="fe",
        conf={
            "max_allowed_packet": str(LIMIT),
            "qe_max_connection": str(QE_MAX_CONNECTION),
            "max_user_connections": str(MAX_USER_CONNECTIONS),
            "connect_timeout": str(CONNECT_TIMEOUT),
            "wait_timeout": str(WAIT_TIMEOUT),
            "max_sql_nesting_depth": str(MAX_DEPTH),
        },
    )
    proc.start()
    yield proc
    proc.stop()


# --- a raw MySQL client ------------------------------------------------------------------


class RawMysql:
    """Just enough of the client side of the protocol to send what real clients never would."""

    def __init__(self, port: int, timeout: float = 60):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buffer = b""

    def close(self) -> None:
        self.sock.close()

    def _recv_exactly(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise EOFError(f"closed after {len(self.buffer)} of {n} bytes")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def read_packet(self) -> tuple[int, bytes]:
        header = self._recv_exactly(4)
        length = header[0] | header[1] << 8 | header[2] << 16
        return header[3], self._recv_exactly(length)

    def send_packet(self, payload: bytes, seq: int) -> None:
        self.sock.sendall(struct.pack("<I", len(payload) | seq << 24) + payload)

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def greeting(self) -> bytes:
        seq, payload = self.read_packet()
        assert seq == 0 and payload[:1] == b"\x0a", payload[:80]
        return payload

    def login(self, user: str = "root") -> None:
        self.greeting()
        caps = CLIENT_LONG_PASSWORD | CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH
        response = (
            struct.pack("<IIB", caps, 1 << 24, 255)
            + bytes(23)
            + user.encode()
            + b"\0"
            + b"\0"  # empty auth response: the user has no password
            + b"mysql_native_password\0"
        )
        self.send_packet(response, 1)
        _, answer = self.read_packet()
        assert answer[:1] == b"\x00", answer

    def command(self, payload: bytes, seq: int = 0) -> bytes:
        self.send_packet(payload, seq)
        return self.read_packet()[1]

    def query(self, sql: str | bytes) -> bytes:
        return self.command(bytes([COM_QUERY]) + (sql.encode() if isinstance(sql, str) else sql))

    def read_until_closed(self) -> list[bytes]:
        """Every packet the server sends until it closes the connection (a reset counts as a close)."""
        packets = []
        while True:
            try:
                packets.append(self.read_packet()[1])
            except (EOFError, ConnectionResetError):
                return packets


def error_of(packet: bytes) -> tuple[int, str, str]:
    """(code, sqlstate, message) of an error packet."""
    assert packet[:1] == b"\xff", packet[:80]
    code = struct.unpack_from("<H", packet, 1)[0]
    assert packet[3:4] == b"#", packet[:80]
    return code, packet[4:9].decode(), packet[9:].decode("utf-8", "replace")


def assert_closed_with_error(raw: RawMysql, code: int) -> str:
    packets = raw.read_until_closed()
    assert packets, "closed without an error packet"
    got, _, message = error_of(packets[-1])
    assert got == code, (got, message)
    return message


# --- health checks -----------------------------------------------------------------------


def assert_serving(fe: GaleneProcess) -> None:
    assert fe.proc is not None and fe.proc.poll() is None, fe.log_tail()
    deadline = time.monotonic() + 60
    while True:  # a refusal while timed-out logins are being closed is retried, within a deadline
        try:
            with fe.mysql() as conn, conn.cursor() as cur:
                cur.execute("SELECT 1")
                assert cur.fetchone() == (1,)
                return
        except pymysql.err.OperationalError as e:
            if e.args[0] != 1203 or time.monotonic() > deadline:
                raise


@contextmanager
def clean_log(fe: GaleneProcess) -> Iterator[None]:
    """The block's probes leave no ERROR line and no stack in the FE log."""
    start = fe.log_path.stat().st_size
    yield
    with open(fe.log_path, "rb") as f:
        f.seek(start)
        written = f.read().decode("utf-8", "replace")
    bad = [line for line in written.splitlines() if " ERROR " in line or line.startswith("Traceback")]
    assert not bad, "\n".join(bad[:20])


def fe_pid(fe: GaleneProcess) -> int:
    return fe.role_pid("fe")


# --- max_allowed_packet ------------------------------------------------------------------
# The memory probes come first in this module: peak RSS (VmHWM) only grows, so they must run
# before the tests that legitimately hold big statements.


def test_session_defaults_come_from_config(fe):
    with fe.mysql() as conn, conn.cursor() as cur:
        cur.execute("SELECT @@max_allowed_packet, @@wait_timeout")
        assert cur.fetchone() == (LIMIT, WAIT_TIMEOUT)


def test_oversized_packets_answer_1153_without_buffering(fe):
    pid = fe_pid(fe)
    assert_serving(fe)
    baseline = peak_rss_bytes(pid)
    with clean_log(fe):
        for size in (64 << 20, 20 << 20, LIMIT + 1):
            conn = fe.mysql(max_allowed_packet=128 << 20)
            with conn.cursor() as cur, pytest.raises(pymysql.err.OperationalError) as e:
                cur.execute("SELECT '" + "x" * (size - len("SELECT ''") - 1) + "'")
            assert e.value.args == (1153, "Got a packet bigger than 'max_allowed_packet' bytes"), size
            with pytest.raises(pymysql.err.Error):  # the server closed the connection, as MySQL does
                conn.ping(reconnect=False)
            conn.close()
        # The sqlstate, on the wire.
        raw = RawMysql(fe.query_port)
        raw.login()
        raw.send_packet(bytes([COM_QUERY]) + b"x" * LIMIT, 0)
        _, answer = raw.read_packet()
        assert error_of(answer) == (1153, "08S01", "Got a packet bigger than 'max_allowed_packet' bytes")
        raw.close()
        # A header announcing 10 MB, a little data, then the client goes away.
        raw = RawMysql(fe.query_port)
        raw.login()
        raw.send_raw(struct.pack("<I", 10 << 20) + bytes([COM_QUERY]) + b"y" * 100_000)
        raw.close()
        assert_serving(fe)
    grown = peak_rss_bytes(pid) - baseline
    # The old framing held a 64 MB payload whole (and copied it while joining packets); bounded
    # framing holds at most the limit plus read buffers.
    assert grown < 8 * LIMIT + (16 << 20), f"peak RSS grew by {grown >> 20} MB"


def test_payload_of_exactly_the_limit_is_read(fe):
    base = "SELECT 1 /* "
    sql = base + "z" * (LIMIT - 1 - len(base) - len(" */")) + " */"
    assert len(sql) + 1 == LIMIT  # the command byte counts, as in MySQL
    with fe.mysql() as conn, conn.cursor() as cur:
        cur.execute(sql)
        assert cur.fetchone() == (1,)
    with fe.mysql() as conn, conn.cursor() as cur, pytest.raises(pymysql.err.OperationalError) as e:
        cur.execute(sql + " ")
    assert e.value.args[0] == 1153


def test_multi_packet_query_under_a_raised_limit(fe):
    value = "".join(chr(ord("a") + i % 26) for i in range(26)) * (20 * 1024 * 1024 // 26)  # ~20 MB
    with fe.mysql(max_allowed_packet=128 << 20) as conn, conn.cursor() as cur:
        cur.execute("SET max_allowed_packet = 67108864")
        cur.execute(f"SELECT '{value}' AS v")  # > 16 MB-1: pymysql sends two packets
        (got,) = cur.fetchone()
        assert len(got) == len(value) and got == value
        cur.execute("SELECT 1")
        assert cur.fetchone() == (1,)


# --- connection limits -------------------------------------------------------------------


def test_connection_limits_answer_doris_error_1203(fe):
    held: list[pymysql.Connection] = []
    try:
        for _ in range(MAX_USER_CONNECTIONS):
            held.append(fe.mysql(user="admin"))
        with pytest.raises(pymysql.err.OperationalError) as e:
            fe.mysql(user="admin")
        code, message = e.value.args
        assert code == 1203
        assert re.fullmatch(
            rf"Reach limit of connections\. Total: {QE_MAX_CONNECTION}, User: {MAX_USER_CONNECTIONS}, "
            r"Current: \d+",
            message,
        ), message
        # root fills the FE up to qe_max_connection; the next login is refused with the total.
        with pytest.raises(pymysql.err.OperationalError) as e:
            for _ in range(QE_MAX_CONNECTION):
                held.append(fe.mysql())
        assert e.value.args == (
            1203,
            (
                f"Reach limit of connections. Total: {QE_MAX_CONNECTION}, User: {MAX_USER_CONNECTIONS}, "
                f"Current: {QE_MAX_CONNECTION}"
            ),
        )
        assert len(held) <= QE_MAX_CONNECTION
        # Held sessions keep working.
        with held[0].cursor() as cur:
            cur.execute("SELECT 1")
            assert cur.fetchone() == (1,)
    finally:
        for conn in held:
            conn.close()
    assert_serving(fe)


def test_idle_sockets_that_never_log_in_are_bounded(tmp_path):
    """1,500 sockets that never log in: at most qe_max_connection of them are held (logins in
    progress), the rest are refused at once; the FE keeps serving and its memory stays flat.
    Its own FE, with a connect_timeout long enough that no login in progress ends meanwhile
    (the close after connect_timeout is tested on the module's FE)."""
    crowded = GaleneProcess(
        tmp_path, role="fe", conf={"qe_max_connection": str(QE_MAX_CONNECTION), "connect_timeout": "600"}
    )
    crowded.start()
    try:
        pid = fe_pid(crowded)
        assert_serving(crowded)
        baseline = peak_rss_bytes(pid)
        sockets: list[socket.socket] = []
        refused = greeted = 0
        with clean_log(crowded):
            try:
                for _ in range(1500):
                    sockets.append(socket.create_connection(("127.0.0.1", crowded.query_port), timeout=60))
                for sock in sockets:
                    raw = RawMysql.__new__(RawMysql)
                    raw.sock, raw.buffer = sock, b""
                    _, payload = raw.read_packet()
                    if payload[:1] == b"\x0a":
                        greeted += 1
                        continue
                    assert error_of(payload) == (1203, "42000", "Too many connections")
                    assert raw.read_until_closed() == []
                    refused += 1
                assert greeted == QE_MAX_CONNECTION and refused == 1500 - QE_MAX_CONNECTION
                # A real client is refused the same way while the idle sockets hold every slot.
                with pytest.raises(pymysql.err.OperationalError) as e:
                    crowded.mysql()
                assert e.value.args == (1203, "Too many connections")
            finally:
                for sock in sockets:
                    sock.close()
            assert crowded.proc.poll() is None
            assert_serving(crowded)  # closing the idle sockets freed their slots
        grown = peak_rss_bytes(pid) - baseline
        assert grown < 64 << 20, f"peak RSS grew by {grown >> 20} MB"
    finally:
        crowded.stop()


def test_a_login_that_never_finishes_is_closed_after_connect_timeout(fe):
    held = []
    with clean_log(fe):
        for _ in range(3):
            raw = RawMysql(fe.query_port)
            raw.greeting()
            held.append(raw)
        for raw in held:  # the server closes them (waited on with the socket's 60 s deadline)
            assert raw.read_until_closed() == []
            raw.close()
        assert_serving(fe)


# --- wait_timeout ------------------------------------------------------------------------


def test_wait_timeout_closes_an_idle_session_with_4031(fe):
    raw = RawMysql(fe.query_port)
    raw.login()
    assert raw.query("SET wait_timeout = 2")[:1] == b"\x00"
    packets = raw.read_until_closed()  # the server speaks first: no command was sent
    assert len(packets) == 1
    code, state, message = error_of(packets[0])
    assert (code, state) == (4031, "HY000")
    assert message.startswith("The client was disconnected by the server because of inactivity.")
    raw.close()
    # pymysql sees the SET take effect for its own session only.
    with fe.mysql() as conn, conn.cursor() as cur:
        cur.execute("SET wait_timeout = 2")
        cur.execute("SELECT @@wait_timeout, @@global.wait_timeout")
        assert cur.fetchone() == (2, WAIT_TIMEOUT)
    assert_serving(fe)


def test_idle_session_with_default_wait_timeout_survives_a_pause(fe):
    with fe.mysql() as conn, conn.cursor() as cur:
        cur.execute("SELECT 1")
        time.sleep(CONNECT_TIMEOUT + 1)  # longer than connect_timeout: that bounds logins only
        cur.execute("SELECT 1")
        assert cur.fetchone() == (1,)


# --- garbage and half packets ------------------------------------------------------------


def test_garbage_and_half_packets_get_clean_errors_or_closes(fe):
    port = fe.query_port
    with clean_log(fe):
        # Random bytes before the greeting was even read.
        raw = RawMysql(port)
        raw.send_raw(os.urandom(4096))
        packets = raw.read_until_closed()
        assert packets[0][:1] == b"\x0a"  # the greeting, then at most an error before the close
        assert all(p[:1] == b"\xff" for p in packets[1:])
        raw.close()
        assert_serving(fe)

        # An HTTP request on the MySQL port.
        raw = RawMysql(port)
        raw.send_raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        packets = raw.read_until_closed()
        assert packets[0][:1] == b"\x0a" and len(packets) <= 2
        raw.close()

        # A truncated handshake response, complete as a packet: Bad handshake.
        raw = RawMysql(port)
        raw.greeting()
        raw.send_packet(b"\x05\x82\x00\x00\x00", 1)
        assert_closed_with_error(raw, 1043)
        raw.close()

        # A handshake response cut short on the wire, then silence: connect_timeout closes it.
        raw = RawMysql(port)
        raw.greeting()
        raw.send_raw(struct.pack("<I", 200 | 1 << 24) + b"\x05\x82\x00\x00")
        raw.read_until_closed()
        raw.close()

        # A login packet announcing 10 MB: refused without reading it.
        raw = RawMysql(port)
        raw.greeting()
        raw.send_raw(struct.pack("<I", (10 << 20) | 1 << 24) + b"\0" * 1000)
        packets = raw.read_until_closed()
        assert all(p[:1] == b"\xff" for p in packets)
        raw.close()
        assert_serving(fe)

        # After login: random bytes as a command stream.
        raw = RawMysql(port)
        raw.login()
        raw.send_raw(os.urandom(4096))
        packets = raw.read_until_closed()
        assert all(p[:1] in (b"\xff", b"\x00") for p in packets)
        raw.close()

        # A wrong sequence id: MySQL's "Got packets out of order", then a close.
        raw = RawMysql(port)
        raw.login()
        raw.send_packet(bytes([COM_QUERY]) + b"SELECT 1", 3)
        assert_closed_with_error(raw, 1156)
        raw.close()

        # A header announcing 10 MB then a stall: net_read_timeout cuts it.
        raw = RawMysql(port)
        raw.login()
        assert raw.query("SET net_read_timeout = 2")[:1] == b"\x00"
        raw.send_raw(struct.pack("<I", 512 * 1024) + bytes([COM_QUERY]) + b"SELECT 1 " * 100)
        message = assert_closed_with_error(raw, 1159)
        assert "timeout" in message
        raw.close()
        assert_serving(fe)

        # Invalid UTF-8 in a query: an error, and the session lives on.
        raw = RawMysql(port)
        raw.login()
        code, _, message = error_of(raw.query(b"SELECT '\xc3\x28\xff'"))
        assert code == 1300 and "Invalid utf8mb4 character string" in message, message
        answer = raw.query("SELECT 1")
        assert answer[:1] == b"\x01"  # a result set with one column
        raw.close()

        # A truncated COM_STMT_EXECUTE and an unknown command: errors, the session lives on.
        raw = RawMysql(port)
        raw.login()
        code, _, _ = error_of(raw.command(bytes([COM_STMT_EXECUTE, 1, 0])))
        assert code in (1243, 1835)
        code, _, _ = error_of(raw.command(b"\xee"))
        assert code == 1047
        assert raw.query("SELECT 1")[:1] == b"\x01"
        raw.close()

        # A zero-length packet and a close in the middle of a header.
        raw = RawMysql(port)
        raw.login()
        raw.send_raw(b"\x00\x00\x00\x00")
        raw.read_until_closed()
        raw.close()
        raw = RawMysql(port)
        raw.login()
        raw.send_raw(b"\x10\x00")
        raw.close()
        assert_serving(fe)


# --- statement nesting -------------------------------------------------------------------


def test_deeply_nested_statements_get_a_clean_error(fe):
    with clean_log(fe):
        for sql in (
            "SELECT " + "(" * 100_000 + "1" + ")" * 100_000,
            "SELECT " + "(" * (MAX_DEPTH + 1) + "1" + ")" * (MAX_DEPTH + 1),
            "SELECT * FROM t WHERE a IN (" * 30_000 + "1" + ")" * 30_000,
        ):
            with fe.mysql() as conn, conn.cursor() as cur:
                with pytest.raises(pymysql.err.MySQLError) as e:
                    cur.execute(sql)
                code, message = e.value.args
                assert code == 1105 and message.startswith("errCode = 2, detailMessage = "), message
                assert "nested too deeply" in message and "max_sql_nesting_depth" in message, message
                cur.execute("SELECT 1")
                assert cur.fetchone() == (1,)
        # Deep nesting without brackets is cut by the parser's own depth bound, just as cleanly.
        for sql in (
            "SELECT " + "NOT " * 100_000 + "1",
            "SELECT " + "- " * 100_000 + "1",
            "SELECT " + "+".join(["1"] * 50_000),  # flat text, but a left-deep tree
        ):
            with fe.mysql() as conn, conn.cursor() as cur:
                with pytest.raises(pymysql.err.MySQLError) as e:
                    cur.execute(sql)
                assert e.value.args[0] == 1105
                assert "nested too deeply: too deep for the parser" in e.value.args[1], e.value.args[1]
        assert_serving(fe)


def test_nesting_up_to_the_limit_still_runs(fe):
    depth = MAX_DEPTH
    with fe.mysql() as conn, conn.cursor() as cur:
        cur.execute("SELECT " + "(" * depth + "1" + ")" * depth + " AS v")
        assert cur.fetchone() == (1,)


def test_long_flat_statement_runs_or_fails_cleanly(fe):
    in_list = ",".join(str(i) for i in range(150_000))  # ~0.9 MB, just under the 1 MB limit
    sql = f"SELECT 7 IN ({in_list}) AS v"
    assert len(sql) < LIMIT
    with clean_log(fe):
        with fe.mysql() as conn, conn.cursor() as cur:
            try:
                cur.execute(sql)
                assert cur.fetchone() in ((1,), (True,))
            except pymysql.err.MySQLError as e:
                assert e.args[0] == 1105 and e.args[1].startswith("errCode = 2, detailMessage = ")
        assert_serving(fe)
