"""The FE's MySQL-protocol endpoint (port 9030), built on mysql-mimic.

This module owns the wire: login (mysql_native_password against the executor's stored
hashes, 1045/1049 as Doris sends them), the command loop and its error packets, result-set
encoding (Doris column types → MySQL types; pyarrow results streamed batch by batch),
OK packets with affected rows and info, prepared statements (parameters substituted as
properly escaped SQL literals), COM_INIT_DB and COM_FIELD_LIST. It also defines the boundary
to SQL execution: `Executor`, `SessionContext`, `StatementResult`, `ResultColumn`.

Session-level statements (SET, SELECT @@var, SHOW VARIABLES, ...) are answered by
`galene.fe.session_sql`; everything else goes as SQL text to `Executor.execute`.

mysql-mimic is used for its stream framing, handshake, auth plugin and packet helpers; the
parts of its Connection that are wrong for us are overridden here: OK packets without
affected rows/info, unescaped prepared-statement parameters, a COM_FIELD_LIST answer packed
into one packet, failed logins that fall through into the command phase, and result labels
of its sqlglot-based static query evaluation.

Bounds: every input of the port is bounded in size, count and time.

* Packets: `GaleneStream` frames packets itself. A command's payload (all its 16 MB-1
  packets joined, the command byte included) may be at most the session's
  `max_allowed_packet` (default: config `max_allowed_packet`); a longer one is read on and
  discarded piece by piece — never held — and answered with MySQL's 1153 "Got a packet bigger
  than 'max_allowed_packet' bytes" (08S01), then the connection is closed, as MySQL does.
  Discarding (up to `_DISCARD_LIMIT` bytes) is what lets the client read the error instead
  of a reset. Login packets are held to `_LOGIN_PACKET_LIMIT`. A wrong sequence id answers
  1156 "Got packets out of order" and closes. Large result packets are split as the protocol
  requires.
* Connections: a socket is *logging in* from accept until its login completes. At most
  `qe_max_connection` sockets may be logging in at once; a socket beyond that is answered at
  once, before the greeting, with Doris' 1203 "Too many connections" and closed (Doris'
  answer when its connection workers are exhausted). Each has `connect_timeout` seconds to
  finish its login, then it is closed. Logged-in sessions are bounded as Doris'
  AcceptListener bounds them: after authentication, past `qe_max_connection` sessions in all
  or `max_user_connections` for the user, the login is answered with 1203 "Reach limit of
  connections. Total: <qe_max_connection>, User: <user limit>, Current: <sessions>" and
  closed. So the port holds at most 2 x `qe_max_connection` sockets, each with bounded buffers.
* Time: between commands a session waits at most its `wait_timeout` (session variable,
  default from config `wait_timeout`), then gets MySQL 8's 4031 "The client was disconnected
  by the server because of inactivity..." and is closed. Inside a packet each read waits at
  most `net_read_timeout` (1159 "Got timeout reading communication packets"), and each write
  at most `net_write_timeout`. All are timers, not clock checks on the next packet.
* Statements: bracket nesting deeper than `max_sql_nesting_depth` is refused (1105) by a
  non-recursive scan before sqlglot sees the text; nesting the scan does not count (NOT NOT
  ...) ends in the parser's RecursionError, which is answered the same way. Invalid UTF-8
  answers 1300 and malformed command packets 1835; neither ends the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import math
import struct
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, Protocol

import pyarrow as pa
from mysql_mimic import context, packets
from mysql_mimic.auth import (
    AuthInfo,
    AuthPlugin,
    AuthState,
    IdentityProvider,
    NativePasswordAuthPlugin,
    Success,
    User,
)
from mysql_mimic.charset import CharacterSet
from mysql_mimic.connection import Connection
from mysql_mimic.constants import DEFAULT_SERVER_CAPABILITIES, KillKind
from mysql_mimic.control import LocalControl, TooManyConnections
from mysql_mimic.errors import MysqlError
from mysql_mimic.prepared import PreparedStatement
from mysql_mimic.results import ResultColumn as MimicColumn
from mysql_mimic.server import MysqlServer
from mysql_mimic.session import BaseSession
from mysql_mimic.stream import ConnectionClosed
from mysql_mimic.types import (
    Capabilities,
    ColumnDefinition,
    Commands,
    ComStmtExecuteFlags,
    ServerStatus,
    read_double,
    read_float,
    read_int_1,
    read_int_2,
    read_int_4,
    read_int_8,
    read_str_len,
    read_uint_1,
    read_uint_2,
    read_uint_4,
    read_uint_8,
    str_len,
    uint_1,
    uint_2,
    uint_4,
    uint_len,
)
from mysql_mimic.types import ColumnType as MysqlType
from mysql_mimic.utils import seq
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

import galene
from galene.common.errors import ER_ACCESS_DENIED, ER_BAD_DB, ER_UNKNOWN_ERROR, GaleneError
from galene.common.types import ColumnType, TypeError_, parse_type
from galene.fe.auth import redact_passwords
from galene.fe.result_encoding import (
    MAX_PACKET,
    ROW_BATCH,
    binary_payloads,
    frame_packets,
    mysql_column_spec,
    python_columns,
    text_row_batches,
)
from galene.fe.result_stream import ResultStream
from galene.fe.session_sql import (
    GlobalVariables,
    KillConnection,
    LocalResult,
    SessionInfo,
    SessionSql,
    SessionVariables,
    UseDatabase,
    leading_words,
    strip_statement,
)
from galene.sql.information_schema import ProcessInfo
from galene.sql.limits import check_sql_nesting_depth, nesting_error, recursion_limit_for

logger = logging.getLogger(__name__)

DEFAULT_VERSION_COMMENT = galene.VERSION_COMMENT

# Doris does not support query attributes; without them COM_QUERY/COM_STMT_EXECUTE carry
# plain parameter blocks.
SERVER_CAPABILITIES = (
    DEFAULT_SERVER_CAPABILITIES
    | Capabilities.CLIENT_TRANSACTIONS
    # `a; b; c` in one COM_QUERY answers one result per statement (the mariadb CLI's -e, tools).
    | Capabilities.CLIENT_MULTI_STATEMENTS
    | Capabilities.CLIENT_MULTI_RESULTS
    # The OK packet's info as a length-encoded string for clients that ask (libmariadb,
    # libmysqlclient read it so: an INSERT's info broke the mariadb CLI); others get it raw.
    | Capabilities.CLIENT_SESSION_TRACK
) & ~(Capabilities.CLIENT_QUERY_ATTRIBUTES)

ER_HANDSHAKE = 1043
ER_UNKNOWN_COMMAND = 1047
ER_NO_SUCH_THREAD = 1094
ER_NET_PACKET_TOO_LARGE = 1153
ER_NET_PACKETS_OUT_OF_ORDER = 1156
ER_NET_READ_INTERRUPTED = 1159
ER_TOO_MANY_USER_CONNECTIONS = 1203
ER_UNKNOWN_STMT_HANDLER = 1243
ER_STMT_HAS_NO_OPEN_CURSOR = 1421
ER_INVALID_CHARACTER_STRING = 1300
ER_QUERY_INTERRUPTED = 1317
ER_MALFORMED_PACKET = 1835
ER_CLIENT_INTERACTION_TIMEOUT = 4031

_SQLSTATES = {
    ER_ACCESS_DENIED: b"28000",
    ER_BAD_DB: b"42000",
    1046: b"3D000",
    ER_HANDSHAKE: b"08S01",
    ER_UNKNOWN_COMMAND: b"08S01",
    ER_NET_PACKET_TOO_LARGE: b"08S01",
    ER_NET_PACKETS_OUT_OF_ORDER: b"08S01",
    ER_NET_READ_INTERRUPTED: b"08S01",
    ER_TOO_MANY_USER_CONNECTIONS: b"42000",
    1051: b"42S02",  # ERR_BAD_TABLE_ERROR: JDBC's SQLSyntaxErrorException "table not found"
    1054: b"42S22",
    1146: b"42S02",
    1064: b"42000",
    1065: b"42000",
    1231: b"42000",
    1232: b"42000",
    ER_QUERY_INTERRUPTED: b"70100",
    1044: b"42000",  # privileges (galene/fe/auth.py): database, table, specific, all, hash length
    1142: b"42000",
    1223: b"42000",
    1227: b"42000",
    1372: b"42000",
}

_ROW_BATCH = ROW_BATCH
_MAX_PACKET = MAX_PACKET
# Login packets (handshake response, auth data) are small: user, scramble, database, plugin
# and connect attributes (MySQL caps those at 64 KB).
_LOGIN_PACKET_LIMIT = 128 * 1024
# An oversized payload is read on and dropped in pieces of this size, so that the client,
# which is still sending it, can read the error afterwards; past _DISCARD_LIMIT dropped bytes
# the connection is closed without waiting for the rest.
_DISCARD_CHUNK = 256 * 1024
_DISCARD_LIMIT = 1 << 30
# Connections the kernel queues before we accept them (Doris' mysql_nio_backlog_num): a burst
# waits in the queue instead of in SYN retransmits, and is answered (or refused) at once.
_ACCEPT_BACKLOG = 1024
# MySQL's ranges for the session variables that bound a connection.
_PACKET_LIMIT_RANGE = (1024, 1 << 30)
_TIMEOUT_RANGE = (1, 31536000)

_INACTIVITY_MESSAGE = (
    "The client was disconnected by the server because of inactivity. "
    "See wait_timeout and interactive_timeout for configuring this behavior."
)
_PACKET_TOO_LARGE_MESSAGE = "Got a packet bigger than 'max_allowed_packet' bytes"


def _clamp(value: Any, bounds: tuple[int, int], default: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return default
    return max(bounds[0], min(bounds[1], number))


# ---------------------------------------------------------------------------------------
# Framing
# ---------------------------------------------------------------------------------------


class WireError(Exception):
    """A framing failure the server answers with an error packet, then closes the connection."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class PacketTooLarge(WireError):
    def __init__(self) -> None:
        super().__init__(ER_NET_PACKET_TOO_LARGE, _PACKET_TOO_LARGE_MESSAGE)


class PacketsOutOfOrder(WireError):
    def __init__(self) -> None:
        super().__init__(ER_NET_PACKETS_OUT_OF_ORDER, "Got packets out of order")


class NetReadTimeout(WireError):
    def __init__(self) -> None:
        super().__init__(ER_NET_READ_INTERRUPTED, "Got timeout reading communication packets")


class IdleTimeout(WireError):
    """No command arrived within the session's wait_timeout."""

    def __init__(self) -> None:
        super().__init__(ER_CLIENT_INTERACTION_TIMEOUT, _INACTIVITY_MESSAGE)


class NetWriteTimeout(ConnectionError):
    """The client did not take our bytes within net_write_timeout: the connection is dropped."""


class GaleneStream:
    """MySQL packet framing with every read and write bounded in size and time.

    It stands in for mysql-mimic's MysqlStream (same methods; that class is compiled and
    cannot be subclassed), whose read trusts the announced length, has no deadlines and
    frames result rows of 16 MB or more with a length that overflows into the sequence id.
    `max_payload`, `read_timeout` and `write_timeout` are set by the connection for the phase
    it is in (login, or the session's variables before each command).
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, timeout: float):
        self.reader = reader
        self.writer = writer
        self.seq = seq(256)
        self._buffer = bytearray()
        self._buffer_size = 1 << 15  # write() flushes once this much is buffered
        self.max_payload = _LOGIN_PACKET_LIMIT
        # Login packets past the bound are not read on: no honest client sends one.
        self.discard_oversized = False
        self.read_timeout = timeout
        self.write_timeout = timeout

    def reset_seq(self) -> None:
        self.seq.reset()

    async def start_tls(self, ssl: Any) -> None:
        # The endpoint does not announce CLIENT_SSL; a client asking anyway is a bad handshake.
        raise ConnectionClosed("TLS is not supported on this port")

    # -- reading --------------------------------------------------------------------------
    async def read(self, idle_timeout: float | None = None) -> bytes:
        """One payload (a command, or a login packet), joined from its packets.

        `idle_timeout` bounds the wait for the first header (IdleTimeout); every other read
        waits at most `read_timeout` (NetReadTimeout). A payload over `max_payload` is
        discarded and raises PacketTooLarge once the client has finished sending it.
        """
        first_wait = self.read_timeout if idle_timeout is None else idle_timeout
        header = await self._read_exactly(4, first_wait, IdleTimeout if idle_timeout is not None else None)
        pieces: list[bytes] = []
        total = 0
        while True:
            word = int.from_bytes(header, "little")
            length, sequence_id = word & _MAX_PACKET, word >> 24
            if sequence_id != next(self.seq):
                raise PacketsOutOfOrder()
            if total + length > self.max_payload:
                if self.discard_oversized:
                    await self._discard(length)
                raise PacketTooLarge()
            if length:
                pieces.append(await self._read_exactly(length, self.read_timeout))
                total += length
            if length < _MAX_PACKET:
                break
            header = await self._read_exactly(4, self.read_timeout)
        if len(pieces) == 1:
            return pieces[0]
        return b"".join(pieces)

    async def _read_exactly(self, n: int, timeout: float, on_timeout: type[WireError] | None = None) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                return await self.reader.readexactly(n)
        except asyncio.IncompleteReadError:
            raise ConnectionClosed() from None
        except TimeoutError:
            raise (on_timeout or NetReadTimeout)() from None

    async def _discard(self, length: int) -> None:
        """Read and drop the rest of an oversized payload: this packet's `length` bytes and
        every continuation packet, holding at most one _DISCARD_CHUNK at a time."""
        dropped = 0
        while True:
            remaining = length
            while remaining:
                if dropped >= _DISCARD_LIMIT:
                    return  # the client keeps sending: close without reading the rest
                piece = min(remaining, _DISCARD_CHUNK)
                await self._read_exactly(piece, self.read_timeout)
                remaining -= piece
                dropped += piece
            if length < _MAX_PACKET:
                return
            word = int.from_bytes(await self._read_exactly(4, self.read_timeout), "little")
            length = word & _MAX_PACKET
            if word >> 24 != next(self.seq):
                return  # not a continuation after all: answer at once

    # -- writing --------------------------------------------------------------------------
    def write_many(self, packets: Sequence[bytes]) -> None:
        for data in packets:
            self._frame(data)

    def write_text_rows(self, rows: Sequence[Sequence[Any]], columns: Sequence[MimicColumn]) -> int:
        """Text result rows framed into the buffer (mysql-mimic's encoder; a row of 16 MB or
        more is split into several packets, as the protocol requires)."""
        buf = self._buffer
        sequence = self.seq
        count = 0
        for row in rows:
            start = len(buf)
            buf.extend(b"\0\0\0\0")
            for column, value in zip(columns, row):
                if value is None:
                    buf.append(0xFB)
                    continue
                if column.use_default_text_encoder:
                    if isinstance(value, bytes):
                        encoded = value
                    else:
                        encoded = (value if isinstance(value, str) else str(value)).encode(column.codec)
                elif column.type == MysqlType.TINY:
                    encoded = str(int(value)).encode(column.codec)
                else:
                    encoded = column.text_encoder(column, value)
                size = len(encoded)
                if size < 251:
                    buf.append(size)
                else:
                    buf.extend(uint_len(size))
                buf.extend(encoded)
            size = len(buf) - start - 4
            if size < _MAX_PACKET:
                sequence_id = sequence.value
                sequence.value = (sequence_id + 1) & 0xFF
                buf[start : start + 4] = (size | sequence_id << 24).to_bytes(4, "little")
            else:
                payload = bytes(buf[start + 4 :])
                del buf[start:]
                self._frame(payload)
            count += 1
        return count

    def write_payloads(self, payloads: pa.Array, lengths: Any) -> None:
        """Binary result rows (result_encoding.binary_payloads) framed into the buffer: the whole
        batch at once, or row by row when one of them needs several packets."""
        framed = frame_packets(payloads, lengths, self.seq.value)
        if framed is None:
            for payload in payloads.to_pylist():
                self._frame(payload)
            return
        self._buffer += memoryview(framed)
        self.seq.value = (self.seq.value + len(payloads)) & 0xFF

    def _frame(self, data: bytes) -> None:
        """Frame one payload into the buffer, split into 16 MB-1 packets when it needs to be."""
        buf = self._buffer
        offset = 0
        while True:
            piece = data[offset : offset + _MAX_PACKET]
            buf.extend((len(piece) | next(self.seq) << 24).to_bytes(4, "little"))
            buf.extend(piece)
            offset += len(piece)
            if len(piece) < _MAX_PACKET:
                return

    async def write(self, data: bytes, drain: bool = True) -> None:
        self._frame(data)
        if drain or len(self._buffer) >= self._buffer_size:
            await self.drain()

    async def drain(self) -> None:
        if self._buffer:
            self.writer.write(self._buffer)
            self._buffer = bytearray()
        try:
            async with asyncio.timeout(self.write_timeout):
                await self.writer.drain()
        except TimeoutError:
            raise NetWriteTimeout(f"no progress writing to the client in {self.write_timeout}s") from None


# ---------------------------------------------------------------------------------------
# The executor boundary
# ---------------------------------------------------------------------------------------


@dataclass
class SessionContext:
    connection_id: int
    user: str
    database: str | None
    variables: dict[str, Any]  # session variables (lower-case names), e.g. sql_mode, autocommit, group_commit
    user_host: str = "%"  # host pattern of the account the session logged in as ('user'@'user_host')
    client_host: str = ""  # the client's address


@dataclass
class ResultColumn:
    name: str
    type: ColumnType


@dataclass
class StatementResult:
    columns: list[ResultColumn] | None = None  # None -> OK packet
    rows: list[tuple] | pa.Table | ResultStream | None = None  # a stream: a query's rows, read as written
    affected_rows: int = 0
    info: str = ""  # e.g. '{"label":"insert_x", "status":"VISIBLE", "txnId":"12"}' for INSERT
    new_database: str | None = None  # set by USE so the session switches db


class Executor(Protocol):
    async def execute(self, sql: str, ctx: SessionContext) -> StatementResult: ...  # raises GaleneError

    def database_exists(self, name: str) -> bool: ...

    def check_password(self, user: str) -> str | None: ...  # hex SHA1(SHA1(pw)), "" = empty, None = no user


# ---------------------------------------------------------------------------------------
# Session
# ---------------------------------------------------------------------------------------


class GaleneSession(BaseSession):
    """One client session: its variables, current database, and statement routing."""

    def __init__(self, server: GaleneMysqlServer):
        self.server = server
        self.executor = server.executor
        self.variables = SessionVariables(server.global_variables)
        self.statements = SessionSql(self.variables)
        self.username: str | None = None
        self.user_host = "%"  # the account's host pattern (its identity is 'username'@'user_host')
        self.database: str | None = None
        self.connection: GaleneConnection | None = None
        # What SHOW PROCESSLIST shows of this session: login, its current (or last) statement.
        self.login_time = time.time()
        self.command_start = self.login_time
        self.current_sql = ""
        self.last_state = "OK"

    async def init(self, connection: Connection) -> None:
        assert isinstance(connection, GaleneConnection)
        self.connection = connection

    async def close(self) -> None:
        self.connection = None

    def _is_admin(self) -> bool:
        check = getattr(self.executor, "is_admin", None)
        return check(self.context()) if check is not None else True

    async def use(self, database: str) -> None:
        await self.use_database(database)

    def context(self) -> SessionContext:
        return SessionContext(
            connection_id=self.connection.connection_id if self.connection else 0,
            user=self.username or "",
            database=self.database,
            variables=self.variables.values,
            user_host=self.user_host,
            client_host=self.connection.client_host if self.connection else "",
        )

    async def use_database(self, name: str) -> None:
        if not self.executor.database_exists(name):
            raise GaleneError(f"errCode = 2, detailMessage = Unknown database '{name}'", ER_BAD_DB)
        check_access = getattr(self.executor, "check_database_access", None)
        if check_access is not None:  # Doris' 1044 for a database the user has no privilege in
            check_access(name, self.context())
        self.database = name

    async def run(self, sql: str) -> StatementResult:
        """Execute one statement: locally if it is session-level, else through the executor."""
        info = self._session_info()
        logger.debug("connection %s: %.200s", info.connection_id, redact_passwords(sql))
        self.command_start = time.time()
        self.current_sql = sql
        self.server.questions += 1
        self.last_state = "OK"
        try:
            result = await self._run(sql, info)
        except BaseException:
            self.last_state = "ERR"
            raise
        if leading_words(sql, 2) not in (["SHOW", "WARNINGS"], ["SHOW", "ERRORS"]):
            self.statements.diagnostics = []  # a statement that succeeds clears the last one's
        return result

    async def describe(self, sql: str) -> list[ResultColumn]:
        """The result columns `sql` would answer, without running it (COM_STMT_PREPARE): a
        session SELECT's from its local answer, a query's from the executor. Statements that
        are no query, and queries whose columns cannot be known before they run (a parameter
        where NULL cannot stand, a failing analysis), have none here: their EXECUTE says all."""
        if leading_words(sql, 1) not in (["SELECT"], ["WITH"], ["("]):
            return []
        info = self._session_info()
        try:
            local = self.statements.handle(sql, info)
            if isinstance(local, LocalResult):
                return [ResultColumn(n, t) for n, t in local.columns or []]
            describe = getattr(self.executor, "describe", None)
            if local is not None or describe is None:
                return []
            return list(await describe(strip_statement(sql), self.context()) or [])
        except Exception as exc:  # noqa: BLE001 - EXECUTE reports what is wrong with the statement
            logger.debug("connection %s: no result columns at prepare: %s", info.connection_id, exc)
            return []

    def _session_info(self) -> SessionInfo:
        return SessionInfo(
            user=self.username or "",
            host=self.connection.client_host if self.connection else "localhost",
            database=self.database,
            connection_id=self.connection.connection_id if self.connection else 0,
            user_host=self.user_host,
            is_admin=self._is_admin,
        )

    async def _run(self, sql: str, info: SessionInfo) -> StatementResult:
        max_depth = self.server.max_sql_nesting_depth
        # Before any parser: sqlglot recurses per nesting level (see galene.sql.limits).
        check_sql_nesting_depth(sql, max_depth)
        try:
            local = self.statements.handle(sql, info)
            if local is None:
                result = await self.executor.execute(strip_statement(sql), self.context())
                if result.new_database is not None:
                    self.database = result.new_database
                return result
        except RecursionError:
            # Nesting the bracket scan does not see (NOT NOT ..., - - ...) ran out of frames.
            logger.info("connection %s: statement nested too deeply for the parser", info.connection_id)
            raise nesting_error(max_depth, brackets=False) from None
        if isinstance(local, UseDatabase):
            await self.use_database(local.database)
            return StatementResult()
        if isinstance(local, KillConnection):
            self.server.kill(local.connection_id, local.query_only)
            return StatementResult()
        assert isinstance(local, LocalResult)
        if local.columns is None:
            return StatementResult()
        return StatementResult(columns=[ResultColumn(n, t) for n, t in local.columns], rows=local.rows)


# ---------------------------------------------------------------------------------------
# Connection
# ---------------------------------------------------------------------------------------


class _ExecutorIdentityProvider(IdentityProvider):
    """Users and their mysql_native_password hashes come from the executor (the catalog)."""

    def __init__(self, executor: Executor):
        self.executor = executor

    def get_plugins(self) -> list[AuthPlugin]:
        return [NativePasswordAuthPlugin()]

    async def get_user(self, username: str) -> User | None:
        stored = self.executor.check_password(username)
        if stored is None:
            return None
        # Accept MySQL's "*HEX" spelling of the same SHA1(SHA1(password)) hash.
        return User(name=username, auth_string=stored.lstrip("*"), auth_plugin=NativePasswordAuthPlugin.name)

    async def get_account(self, username: str, host: str) -> tuple[User, str] | None:
        """The user a login as `username` from `host` is checked against (MySQL's rule: the
        most specific account whose host pattern matches), and that account's host pattern."""
        lookup = getattr(self.executor, "login_account", None)
        if lookup is None:
            user = await self.get_user(username)
            return (user, "%") if user is not None else None
        found = lookup(username, host)
        if found is None:
            return None
        host_pattern, stored = found
        user = User(name=username, auth_string=stored.lstrip("*"), auth_plugin=NativePasswordAuthPlugin.name)
        return user, host_pattern


class GaleneConnection(Connection):
    session: GaleneSession

    def __init__(self, *, server: GaleneMysqlServer, **kwargs: Any):
        super().__init__(**kwargs)
        self.server = server
        self.authenticated = False
        self.busy = False
        self.logging_in = False  # counted in the server's logins in progress
        self.registered_user: str | None = None  # counted in the server's sessions
        self.status_flags = ServerStatus.SERVER_STATUS_AUTOCOMMIT
        self._placeholders: dict[int, list[tuple[int, int]]] = {}
        self._param_types: dict[int, list[tuple[int, bool]]] = {}
        self._long_data_overflow: set[int] = set()  # statements whose long data passed the bound

    # -- charsets -------------------------------------------------------------------------
    @property
    def server_charset(self) -> CharacterSet:
        # Results, column names and messages are always UTF-8, as in Doris.
        return CharacterSet.utf8mb4

    @property
    def client_charset(self) -> CharacterSet:
        name = str(self.session.variables.get("character_set_client") or "utf8mb4")
        try:
            return CharacterSet[name]
        except KeyError:
            return CharacterSet.utf8mb4

    @property
    def client_host(self) -> str:
        peer = self.stream.writer.get_extra_info("peername")
        return str(peer[0]) if peer else "localhost"

    # -- login ----------------------------------------------------------------------------
    async def _start(self) -> None:
        context.connection_id.set(self.connection_id)
        try:
            async with asyncio.timeout(self.server.connect_timeout):
                await self.connection_phase()
        except TimeoutError:
            logger.debug("connection %s: login not finished within connect_timeout", self.connection_id)
            return
        except WireError as exc:
            logger.debug("connection %s: %s during login", self.connection_id, exc.message)
            await self._send_final_error(exc.code, exc.message)
            return
        except (ConnectionClosed, asyncio.IncompleteReadError, ConnectionError):
            return
        except Exception as exc:  # noqa: BLE001 - whatever a client sends, it gets an answer, not a stack
            # Unauthenticated peers (probes, scanners, broken clients) are not worth more than a
            # debug line each, as Doris logs them.
            logger.debug("connection %s: bad handshake: %r", self.connection_id, exc)
            await self._send_final_error(ER_HANDSHAKE, "Bad handshake")
            return
        if not self.authenticated:
            return
        await self.session.init(self)
        try:
            await self.command_phase()
        except asyncio.CancelledError:
            if self._kill != KillKind.CONNECTION:
                raise
            self._kill = None
            with contextlib.suppress(Exception):
                await self.stream.write(self._error_packet(ER_QUERY_INTERRUPTED, "Session was killed"))
        finally:
            await self.session.close()

    async def authenticate(
        self,
        username: str,
        auth_response: bytes,
        client_plugin_name: str | None,
        connect_attrs: dict[str, str],
        auth_state: AuthState | None = None,
        server_plugin: AuthPlugin | None = None,
    ) -> None:
        # Only the capabilities both sides support are in effect.
        self.capabilities &= self.server_capabilities
        self.authenticated = False
        account = await self.identity_provider.get_account(username, self.client_host)
        if account is None:
            await self._deny_login(username, bool(auth_response))
            return
        user, user_host = account
        plugin = self.identity_provider.get_default_plugin()
        auth_info = AuthInfo(
            username=username,
            data=auth_response,
            connect_attrs=connect_attrs,
            user=user,
            client_plugin_name=client_plugin_name,
            handshake_auth_data=self.handshake_auth_data,
            handshake_plugin_name=self.handshake_auth_plugin or plugin.name,
        )
        if client_plugin_name in (None, plugin.client_plugin_name):
            if server_plugin is not None and auth_state is not None and server_plugin.name == plugin.name:
                decision = await auth_state.asend(auth_info)  # answer to the handshake's nonce
            else:
                decision, auth_state = await plugin.start(auth_info)
        else:
            # The client answered with another plugin (e.g. caching_sha2_password): switch.
            decision, auth_state = await plugin.start()
            if isinstance(decision, bytes):
                await self.stream.write(
                    packets.make_auth_switch_request(
                        server_charset=self.server_charset,
                        plugin_name=plugin.client_plugin_name or plugin.name,
                        plugin_provided_data=decision,
                    )
                )
                auth_info = auth_info.copy(await self.stream.read())
                decision = await auth_state.asend(auth_info)
        while isinstance(decision, bytes):
            await self.stream.write(packets.make_auth_more_data(decision))
            auth_info = auth_info.copy(await self.stream.read())
            decision = await auth_state.asend(auth_info)

        if not isinstance(decision, Success):
            await self._deny_login(username, bool(auth_info.data))
            return
        database = self.session.database
        if database and not self.server.executor.database_exists(database):
            await self.stream.write(self._error_packet(ER_BAD_DB, f"Unknown database '{database}'"))
            return
        check_access = getattr(self.server.executor, "check_database_access", None)
        if database and check_access is not None:  # Doris' 1044: no privilege in that database
            as_user = SessionContext(
                connection_id=self.connection_id, user=decision.authenticated_as, database=None, variables={},
                user_host=user_host, client_host=self.client_host,
            )  # fmt: skip
            try:
                check_access(database, as_user)
            except GaleneError as e:
                await self.stream.write(self._error_packet(e.code, e.mysql_text()))
                return
        # Doris counts a session once it has authenticated, and refuses it then (not before).
        refusal = self.server.register_session(self, decision.authenticated_as)
        if refusal is not None:
            logger.info("connection %s refused: %s", self.connection_id, refusal)
            await self.stream.write(self._error_packet(ER_TOO_MANY_USER_CONNECTIONS, refusal))
            return
        self.session.username = decision.authenticated_as
        self.session.user_host = user_host
        self.authenticated = True
        await self.stream.write(self._ok_packet())

    async def handle_change_user(self, data: bytes) -> None:
        with _malformed_packet():
            await super().handle_change_user(data)
        if not self.authenticated:
            # MySQL closes a connection whose COM_CHANGE_USER failed: it must not go on as
            # the previous user.
            raise ConnectionClosed()

    async def _deny_login(self, username: str, used_password: bool) -> None:
        logger.info("access denied for user '%s' from %s", username, self.client_host)
        message = (
            f"Access denied for user '{username}'@'{self.client_host}' "
            f"(using password: {'YES' if used_password else 'NO'})"
        )
        await self.stream.write(self._error_packet(ER_ACCESS_DENIED, message))

    # -- command loop ---------------------------------------------------------------------
    async def command_phase(self) -> None:
        handlers = {
            Commands.COM_QUERY: self.handle_query,
            Commands.COM_STMT_PREPARE: self.handle_stmt_prepare,
            Commands.COM_STMT_SEND_LONG_DATA: self.handle_stmt_send_long_data,
            Commands.COM_STMT_EXECUTE: self.handle_stmt_execute,
            Commands.COM_STMT_FETCH: self.handle_stmt_fetch,
            Commands.COM_STMT_RESET: self.handle_stmt_reset,
            Commands.COM_STMT_CLOSE: self.handle_stmt_close,
            Commands.COM_PING: self.handle_ping,
            Commands.COM_CHANGE_USER: self.handle_change_user,
            Commands.COM_RESET_CONNECTION: self.handle_reset_connection,
            Commands.COM_DEBUG: self.handle_debug,
            Commands.COM_INIT_DB: self.handle_init_db,
            Commands.COM_FIELD_LIST: self.handle_field_list,
            Commands.COM_STATISTICS: self.handle_statistics,
        }
        while True:
            self._apply_session_bounds()
            try:
                data = await self.stream.read(idle_timeout=self._session_seconds("wait_timeout", 28800))
            except WireError as exc:
                logger.info("connection %s closed: %s", self.connection_id, exc.message)
                await self._send_final_error(exc.code, exc.message)
                return
            except (ConnectionClosed, asyncio.IncompleteReadError, ConnectionError):
                return
            if not data or data[0] == Commands.COM_QUIT:
                return
            handler = handlers.get(data[0])
            self.busy = True
            try:
                self._refresh_status()
                if handler is None:
                    raise GaleneError(f"Unknown command: {hex(data[0])}", ER_UNKNOWN_COMMAND)
                await handler(data[1:])
            except asyncio.CancelledError:
                if self._kill != KillKind.QUERY:
                    raise
                self._kill = None
                if self._task is not None:
                    self._task.uncancel()
                await self.stream.write(
                    self._error_packet(ER_QUERY_INTERRUPTED, "Query execution was interrupted")
                )
            except (ConnectionClosed, ConnectionError):
                return
            except Exception as exc:  # noqa: BLE001 - every failure becomes an error packet; the session lives on
                await self.stream.write(self._error_for(exc))
            finally:
                self.busy = False
                self.stream.reset_seq()

    def _session_seconds(self, name: str, default: int) -> int:
        return _clamp(self.session.variables.get(name, default), _TIMEOUT_RANGE, default)

    def _apply_session_bounds(self) -> None:
        """The stream's bounds for the next command, from the session's variables (SET may
        have changed them)."""
        stream = self.stream
        assert isinstance(stream, GaleneStream)
        stream.max_payload = _clamp(
            self.session.variables.get("max_allowed_packet"),
            _PACKET_LIMIT_RANGE,
            self.server.max_allowed_packet,
        )
        stream.discard_oversized = True
        stream.read_timeout = self._session_seconds("net_read_timeout", 600)
        stream.write_timeout = self._session_seconds("net_write_timeout", 600)

    async def _send_final_error(self, code: int, message: str) -> None:
        """An error packet the connection ends with; the peer may already be gone."""
        with contextlib.suppress(Exception):
            await self.stream.write(self._error_packet(code, message))

    def kill(self, kind: KillKind = KillKind.CONNECTION) -> None:
        # KILL QUERY only interrupts a running statement; an idle session has none.
        if kind == KillKind.QUERY and not self.busy:
            return
        super().kill(kind)

    def _refresh_status(self) -> None:
        autocommit = bool(self.session.variables.get("autocommit", 1))
        self.status_flags = ServerStatus.SERVER_STATUS_AUTOCOMMIT if autocommit else ServerStatus(0)

    # -- COM_QUERY / COM_INIT_DB / COM_FIELD_LIST -------------------------------------------
    async def handle_query(self, data: bytes) -> None:
        sql = packets.parse_com_query(
            capabilities=self.capabilities, client_charset=self.client_charset, data=data
        ).sql
        statements = self._split_statements(sql)
        for i, statement in enumerate(statements):
            # One result per statement; all but the last announce more. An error ends the
            # sequence (the error packet is the last answer), as in MySQL.
            result = await self.session.run(statement)
            self._refresh_status()
            await self._write_result(result, binary=False, more_results=i < len(statements) - 1)

    def _split_statements(self, sql: str) -> list[str]:
        """`a; b; c` as its statements when the client allows several (CLIENT_MULTI_STATEMENTS);
        else, or when it is one statement, the text as is."""
        if Capabilities.CLIENT_MULTI_STATEMENTS not in self.capabilities or ";" not in sql.rstrip().rstrip(";"):
            return [sql]
        from galene.sql.statements.split import split_statements

        try:
            parts = split_statements(sql)
        except GaleneError:
            return [sql]  # the statement's own parse reports the error
        return parts if len(parts) > 1 else [sql]

    async def handle_statistics(self, data: bytes) -> None:
        """COM_STATISTICS (`mysqladmin status`, the mariadb CLI's status): a one-line summary."""
        uptime = int(time.time() - self.server.start_time)
        text = (
            f"Uptime: {uptime}  Threads: {self.server.sessions}  Questions: {self.server.questions}  "
            "Slow queries: 0  Opens: 0  Open tables: 0  Queries per second avg: "
            f"{self.server.questions / max(uptime, 1):.3f}"
        )
        await self.stream.write(text.encode("utf-8"))

    async def handle_init_db(self, data: bytes) -> None:
        await self.session.use_database(self.client_charset.decode(data))
        await self.stream.write(self._ok_packet())

    async def handle_field_list(self, data: bytes) -> None:
        with _malformed_packet():
            request = packets.parse_com_field_list(self.client_charset, data)
        table = request.table
        quoted = "`" + table.replace("`", "``") + "`"
        result = await self.session.executor.execute(
            f"SHOW FULL COLUMNS FROM {quoted}", self.session.context()
        )
        names = [c.name.lower() for c in result.columns or []]
        try:
            field_i, type_i = names.index("field"), names.index("type")
        except ValueError:
            raise GaleneError(f"SHOW FULL COLUMNS FROM {quoted} returned no Field/Type columns") from None
        default_i = names.index("default") if "default" in names else None
        null_i = names.index("null") if "null" in names else None
        definitions = []
        for row in _materialize_rows(result.rows):
            try:
                ctype = parse_type(str(row[type_i]))
            except TypeError_:
                ctype = ColumnType(name="STRING")
            spec = mysql_column_spec(ctype)
            flags = spec.flags
            if null_i is not None and str(row[null_i]).upper() == "NO":
                flags |= ColumnDefinition.NOT_NULL_FLAG
            default = row[default_i] if default_i is not None else None
            definitions.append(
                packets.make_column_definition_41(
                    server_charset=self.server_charset,
                    schema=self.session.database,
                    table=table,
                    name=str(row[field_i]),
                    character_set=spec.charset,
                    column_length=spec.length,
                    column_type=spec.mysql_type,
                    flags=flags,
                    decimals=spec.decimals,
                    is_com_field_list=True,
                    default=None if default is None else str(default),
                )
            )
        # One packet per column, then EOF.
        self.stream.write_many(definitions)
        await self.stream.write(self.ok_or_eof())

    # -- prepared statements ----------------------------------------------------------------
    async def handle_stmt_prepare(self, data: bytes) -> None:
        sql = self.client_charset.decode(data)
        check_sql_nesting_depth(sql, self.server.max_sql_nesting_depth)
        placeholders = placeholder_spans(sql)
        stmt = PreparedStatement(stmt_id=next(self.prepared_stmt_seq), sql=sql, num_params=len(placeholders))
        # The result columns a query will have (Doris declares them too): clients that read a
        # query's schema from its preparation (connectorx) need them.
        columns = await self.session.describe(substitute_parameters(sql, placeholders, [None] * len(placeholders)))
        self.prepared_stmts[stmt.stmt_id] = stmt
        self._placeholders[stmt.stmt_id] = placeholders
        ok = b"".join(
            [uint_1(0), uint_4(stmt.stmt_id), uint_2(len(columns)), uint_2(stmt.num_params), uint_1(0), uint_2(0)]
        )
        response = [ok]
        if stmt.num_params:
            response.extend(
                packets.make_column_definition_41(server_charset=self.server_charset, name="?")
                for _ in range(stmt.num_params)
            )
            if not self.deprecate_eof():
                response.append(self.eof())
        if columns:
            response.extend(self._column_definitions(columns))
            if not self.deprecate_eof():
                response.append(self.eof())
        self.stream.write_many(response)
        await self.stream.drain()

    async def handle_stmt_execute(self, data: bytes) -> None:
        with _malformed_packet():
            reader = io.BytesIO(data)
            stmt = self.get_stmt(read_uint_4(reader))
            flags = ComStmtExecuteFlags(read_uint_1(reader))
            use_cursor = bool(
                flags
                & (
                    ComStmtExecuteFlags.CURSOR_TYPE_READ_ONLY
                    | ComStmtExecuteFlags.CURSOR_TYPE_FOR_UPDATE
                    | ComStmtExecuteFlags.CURSOR_TYPE_SCROLLABLE
                )
            )
            read_uint_4(reader)  # iteration count, always 1
            if stmt.stmt_id in self._long_data_overflow:
                self._long_data_overflow.discard(stmt.stmt_id)
                stmt.param_buffers = None
                raise GaleneError(_PACKET_TOO_LARGE_MESSAGE, ER_NET_PACKET_TOO_LARGE)
            params = self._read_stmt_params(reader, stmt)
            stmt.param_buffers = None
            sql = substitute_parameters(stmt.sql, self._placeholders.get(stmt.stmt_id, []), params)
        result = await self.session.run(sql)
        self._refresh_status()
        if use_cursor and result.columns is not None:
            if isinstance(result.rows, ResultStream):  # a cursor outlives the statement: held whole, as before
                result.rows = await result.rows.read_all()
            self.stream.write_many(self._result_header(result.columns, with_eof=False))
            stmt.cursor = self._binary_row_packets(result)
            await self.stream.write(self.ok_or_eof(flags=ServerStatus.SERVER_STATUS_CURSOR_EXISTS))
            return
        await self._write_result(result, binary=True)

    async def handle_stmt_close(self, data: bytes) -> None:
        with _malformed_packet():
            stmt_id = struct.unpack_from("<I", data)[0]
        self.prepared_stmts.pop(stmt_id, None)
        self._placeholders.pop(stmt_id, None)
        self._param_types.pop(stmt_id, None)
        self._long_data_overflow.discard(stmt_id)

    async def handle_stmt_send_long_data(self, data: bytes) -> None:
        # COM_STMT_SEND_LONG_DATA has no answer: problems are reported by the EXECUTE.
        try:
            request = packets.parse_com_stmt_send_long_data(data)
        except (struct.error, ValueError):
            return
        stmt = self.prepared_stmts.get(request.stmt_id)
        if stmt is None or stmt.stmt_id in self._long_data_overflow:
            return
        buffers = stmt.param_buffers if stmt.param_buffers is not None else {}
        held = sum(len(b) for b in buffers.values())
        # All long data of one execution together is bounded like one packet.
        if held + len(request.data) > self.stream.max_payload:
            stmt.param_buffers = None
            self._long_data_overflow.add(stmt.stmt_id)
            return
        stmt.param_buffers = buffers
        buffers.setdefault(request.param_id, bytearray()).extend(request.data)

    async def handle_stmt_fetch(self, data: bytes) -> None:
        with _malformed_packet():
            request = packets.parse_handle_stmt_fetch(data)
        stmt = self.get_stmt(request.stmt_id)
        if stmt.cursor is None:
            raise GaleneError(
                f"The statement ({request.stmt_id}) has no open cursor.", ER_STMT_HAS_NO_OPEN_CURSOR
            )
        count = 0
        if request.num_rows > 0:
            # Stop right after the last requested row: pulling one more would lose it.
            async for packet in stmt.cursor:
                await self.stream.write(packet, drain=False)
                count += 1
                if count >= request.num_rows:
                    break
        status = ServerStatus.SERVER_STATUS_CURSOR_EXISTS
        if count < request.num_rows:
            stmt.cursor = None
            status = ServerStatus.SERVER_STATUS_LAST_ROW_SENT
        await self.stream.write(self.ok_or_eof(flags=status))

    async def handle_stmt_reset(self, data: bytes) -> None:
        with _malformed_packet():
            request = packets.parse_com_stmt_reset(data)
        stmt = self.get_stmt(request.stmt_id)
        stmt.param_buffers = None
        stmt.cursor = None
        self._long_data_overflow.discard(stmt.stmt_id)
        await self.stream.write(self._ok_packet())

    def get_stmt(self, stmt_id: int) -> PreparedStatement:
        stmt = self.prepared_stmts.get(stmt_id)
        if stmt is None:
            raise GaleneError(
                f"Unknown prepared statement handler ({stmt_id}) given to EXECUTE", ER_UNKNOWN_STMT_HANDLER
            )
        return stmt

    def _read_stmt_params(self, reader: io.BytesIO, stmt: PreparedStatement) -> list[Any]:
        count = stmt.num_params
        if not count:
            return []
        null_bitmap = reader.read((count + 7) // 8)
        if read_uint_1(reader):  # new-params-bound flag: types follow
            types = []
            for _ in range(count):
                type_code = read_uint_1(reader)
                types.append((type_code, bool(read_uint_1(reader) & 0x80)))
            self._param_types[stmt.stmt_id] = types
        else:
            types = self._param_types.get(stmt.stmt_id, [])
            if len(types) != count:
                raise GaleneError("Prepared statement executed without parameter types")
        values: list[Any] = []
        for i, (type_code, unsigned) in enumerate(types):
            if null_bitmap[i // 8] & (1 << (i % 8)):
                values.append(None)
            elif stmt.param_buffers and i in stmt.param_buffers:
                values.append(_long_data_value(bytes(stmt.param_buffers[i]), type_code, self.client_charset))
            else:
                values.append(_read_param_value(reader, type_code, unsigned, self.client_charset))
        return values

    # -- result encoding ------------------------------------------------------------------
    def _ok_packet(self, affected_rows: int = 0, info: str = "", flags: int = 0) -> bytes:
        parts = [uint_1(0), uint_len(affected_rows), uint_len(0)]
        if Capabilities.CLIENT_PROTOCOL_41 in self.capabilities:
            parts += [uint_2(self.status_flags | flags), uint_2(0)]
        elif Capabilities.CLIENT_TRANSACTIONS in self.capabilities:
            parts.append(uint_2(self.status_flags | flags))
        if Capabilities.CLIENT_SESSION_TRACK in self.capabilities:
            parts.append(str_len(info.encode("utf-8")))
        elif info:
            parts.append(info.encode("utf-8"))
        return b"".join(parts)

    def _error_packet(self, code: int, message: str) -> bytes:
        parts = [uint_1(0xFF), uint_2(code)]
        if Capabilities.CLIENT_PROTOCOL_41 in self.capabilities or not self.capabilities:
            parts.append(b"#" + _SQLSTATES.get(code, b"HY000"))
        parts.append(message.encode("utf-8"))
        return b"".join(parts)

    def _error_for(self, exc: BaseException) -> bytes:
        code, message = self._error_text(exc)
        # SHOW WARNINGS / SHOW ERRORS after it list the error (until a statement succeeds).
        self.session.statements.diagnostics = [("Error", code, message)]
        return self._error_packet(code, message)

    def _error_text(self, exc: BaseException) -> tuple[int, str]:
        if isinstance(exc, GaleneError):
            return exc.code, exc.mysql_text()
        if isinstance(exc, MysqlError):
            return int(exc.code), str(exc.msg)
        if isinstance(exc, UnicodeDecodeError):
            # MySQL's answer to text that is not in the client's character set.
            bad = bytes(exc.object[exc.start : exc.start + 16])
            shown = "".join(chr(b) if 0x20 <= b < 0x7F else f"\\x{b:02X}" for b in bad)
            return ER_INVALID_CHARACTER_STRING, f"Invalid {self.client_charset.name} character string: '{shown}'"
        logger.exception("statement failed on connection %s", self.connection_id, exc_info=exc)
        return ER_UNKNOWN_ERROR, f"errCode = 2, detailMessage = {exc}"

    def _result_header(self, columns: list[ResultColumn], with_eof: bool) -> list[bytes]:
        header = [packets.make_column_count(capabilities=self.capabilities, column_count=len(columns))]
        header.extend(self._column_definitions(columns))
        if with_eof and not self.deprecate_eof():
            header.append(self.eof())
        return header

    def _column_definitions(self, columns: list[ResultColumn]) -> list[bytes]:
        definitions = []
        for column in columns:
            spec = mysql_column_spec(column.type)
            definitions.append(
                packets.make_column_definition_41(
                    server_charset=self.server_charset,
                    name=column.name,
                    character_set=spec.charset,
                    column_length=spec.length,
                    column_type=spec.mysql_type,
                    flags=spec.flags,
                    decimals=spec.decimals,
                )
            )
        return definitions

    async def _write_result(self, result: StatementResult, binary: bool, more_results: bool = False) -> None:
        more = ServerStatus.SERVER_MORE_RESULTS_EXISTS if more_results else 0
        if result.columns is None:
            await self.stream.write(self._ok_packet(result.affected_rows, result.info, flags=more))
            return
        try:
            self.stream.write_many(self._result_header(result.columns, with_eof=True))
            if binary:
                types = [c.type for c in result.columns]
                async for batch in _arrow_batches(result):
                    self.stream.write_payloads(*binary_payloads(batch, types))
                    await self.stream.drain()
            else:
                text_columns = [MimicColumn(c.name, MysqlType.VAR_STRING) for c in result.columns]
                async for rows in _text_batches(result):
                    self.stream.write_text_rows(rows, text_columns)
                    await self.stream.drain()
        finally:
            # A streamed result: an error after rows were sent is answered by the command
            # loop's error packet in place of the EOF; its engine job is cancelled here.
            if isinstance(result.rows, ResultStream):
                await result.rows.aclose()
        await self.stream.write(self.ok_or_eof(flags=more), drain=False)
        await self.stream.drain()

    async def _binary_row_packets(self, result: StatementResult) -> AsyncIterator[bytes]:
        """Each row's binary payload, one at a time (a cursor's rows, fetched in parts)."""
        types = [c.type for c in result.columns or []]
        async for batch in _arrow_batches(result):
            payloads, _ = binary_payloads(batch, types)
            for payload in payloads.to_pylist():
                yield payload
            await asyncio.sleep(0)


# Exceptions that decoding a short or inconsistent command packet raises.
_DECODE_ERRORS = (struct.error, IndexError, KeyError, ValueError, ArithmeticError, AssertionError, EOFError)


@contextlib.contextmanager
def _malformed_packet() -> Iterator[None]:
    """Decoding failures inside become MySQL's 1835 "Malformed communication packet." (the
    session lives on); text in the wrong character set stays a 1300."""
    try:
        yield
    except UnicodeDecodeError:
        raise
    except _DECODE_ERRORS:
        raise GaleneError("Malformed communication packet.", ER_MALFORMED_PACKET) from None


# ---------------------------------------------------------------------------------------
# Server
# ---------------------------------------------------------------------------------------


class _Control(LocalControl):
    """Connection registry with small sequential connection ids, as Doris hands out."""

    def __init__(self) -> None:
        super().__init__(server_id=1)
        self._next_id = 0

    def _new_connection_id(self) -> int:
        if len(self._connections) >= self._MAX_CONNECTION_SEQ:
            raise TooManyConnections()
        self._next_id += 1
        while self._next_id in self._connections:
            self._next_id += 1
        return self._next_id

    def get(self, connection_id: int) -> Connection | None:
        return self._connections.get(connection_id)

    def connections(self) -> list[Connection]:
        return list(self._connections.values())


class GaleneMysqlServer(MysqlServer):
    """The MySQL endpoint: `await start()`, `port`, `await stop()`."""

    def __init__(
        self,
        executor: Executor,
        host: str = "127.0.0.1",
        port: int = 9030,
        version: str = galene.DORIS_COMPAT_VERSION,
        version_comment: str = DEFAULT_VERSION_COMMENT,
        *,
        qe_max_connection: int = 1024,
        max_user_connections: int = 100,
        connect_timeout: float = 10,
        max_allowed_packet: int = 16 << 20,
        wait_timeout: int = 28800,
        max_sql_nesting_depth: int = 200,
    ):
        self.executor = executor
        self.host = host
        self._requested_port = port
        self.qe_max_connection = qe_max_connection
        self.max_user_connections = max_user_connections
        self.connect_timeout = connect_timeout
        self.max_allowed_packet = _clamp(max_allowed_packet, _PACKET_LIMIT_RANGE, 16 << 20)
        self.max_sql_nesting_depth = max_sql_nesting_depth
        # Statements within max_sql_nesting_depth must parse: sqlglot needs ~50 frames a level,
        # more than the interpreter's default limit of 1000 allows past ~20 levels.
        if sys.getrecursionlimit() < recursion_limit_for(max_sql_nesting_depth):
            sys.setrecursionlimit(recursion_limit_for(max_sql_nesting_depth))
        self.global_variables = GlobalVariables(
            version=version,
            version_comment=version_comment,
            max_allowed_packet=self.max_allowed_packet,
            wait_timeout=_clamp(wait_timeout, _TIMEOUT_RANGE, 28800),
        )
        self.galene_control = _Control()
        self.logins_in_progress = 0
        self.sessions = 0
        self.sessions_by_user: dict[str, int] = {}
        super().__init__(
            capabilities=SERVER_CAPABILITIES,
            control=self.galene_control,
            identity_provider=_ExecutorIdentityProvider(executor),
        )
        self._connection_tasks: set[asyncio.Task] = set()
        self.start_time = time.time()
        self.questions = 0  # statements run (COM_STATISTICS)

    @property
    def port(self) -> int:
        sockets = self.sockets()
        return sockets[0].getsockname()[1] if sockets else self._requested_port

    async def start(self) -> None:
        await self.start_server(host=self.host, port=self._requested_port, backlog=_ACCEPT_BACKLOG)
        logger.info("MySQL endpoint listening on %s:%s", self.host, self.port)

    async def stop(self) -> None:
        self.close()
        for connection in self.galene_control.connections():
            connection.kill(KillKind.CONNECTION)
        if self._connection_tasks:
            await asyncio.wait(list(self._connection_tasks), timeout=5)
        await self.wait_closed()

    def process_list(self) -> list[ProcessInfo]:
        """The logged-in connections with what each runs (SHOW PROCESSLIST, information_schema)."""
        now = time.time()
        out = []
        for connection in self.galene_control.connections():
            if not isinstance(connection, GaleneConnection) or connection.registered_user is None:
                continue
            session = connection.session
            peer = connection.stream.writer.get_extra_info("peername")
            out.append(
                ProcessInfo(
                    connection_id=connection.connection_id, user=connection.registered_user,
                    host=f"{peer[0]}:{peer[1]}" if peer else "", login_time=session.login_time,
                    database=session.database, command="Query" if connection.busy else "Sleep",
                    time_s=int(now - session.command_start), state=session.last_state, info=session.current_sql,
                )
            )  # fmt: skip
        return out

    def kill(self, connection_id: int, query_only: bool) -> None:
        connection = self.galene_control.get(connection_id)
        if connection is None:
            raise GaleneError(f"Unknown thread id: {connection_id}", ER_NO_SUCH_THREAD)
        connection.kill(KillKind.QUERY if query_only else KillKind.CONNECTION)

    # -- connection accounting ----------------------------------------------------------------
    def register_session(self, connection: GaleneConnection, user: str) -> str | None:
        """Count an authenticated session (Doris' ConnectPoolMgr.registerConnection), or say
        why it is refused. A connection that logs in again (COM_CHANGE_USER) is counted anew."""
        self.unregister_session(connection)
        if connection.logging_in:
            connection.logging_in = False
            self.logins_in_progress -= 1
        user_limit = self.max_user_connections
        if self.sessions >= self.qe_max_connection or self.sessions_by_user.get(user, 0) >= user_limit:
            return (
                f"Reach limit of connections. Total: {self.qe_max_connection}, User: {user_limit}, "
                f"Current: {self.sessions}"
            )
        self.sessions += 1
        self.sessions_by_user[user] = self.sessions_by_user.get(user, 0) + 1
        connection.registered_user = user
        return None

    def unregister_session(self, connection: GaleneConnection) -> None:
        user = connection.registered_user
        if user is None:
            return
        connection.registered_user = None
        self.sessions -= 1
        left = self.sessions_by_user[user] - 1
        if left:
            self.sessions_by_user[user] = left
        else:
            del self.sessions_by_user[user]

    async def _client_connected_cb(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connection_tasks.add(task)
        stream = GaleneStream(reader, writer, timeout=self.connect_timeout)
        connection = GaleneConnection(
            server=self,
            stream=stream,
            session=GaleneSession(self),
            control=self.galene_control,
            identity_provider=self.identity_provider,
            server_capabilities=self.capabilities,
        )
        connection_id = None
        try:
            if self.logins_in_progress >= self.qe_max_connection:
                # Sockets that have not logged in yet are bounded too: past the bound the
                # greeting is replaced by Doris' answer when it has no worker left.
                raise TooManyConnections()
            self.logins_in_progress += 1
            connection.logging_in = True
            connection_id = await self.galene_control.add(connection)
            connection.connection_id = connection_id
            await connection.start()
        except TooManyConnections:
            logger.debug("refused a connection: %s logins in progress", self.logins_in_progress)
            await connection._send_final_error(ER_TOO_MANY_USER_CONNECTIONS, "Too many connections")
        except (asyncio.CancelledError, ConnectionError):
            pass
        except Exception:
            logger.exception("connection %s failed", connection_id)
        finally:
            writer.close()
            if connection.logging_in:
                connection.logging_in = False
                self.logins_in_progress -= 1
            self.unregister_session(connection)
            if connection_id is not None:
                await self.galene_control.remove(connection_id)
            if task is not None:
                self._connection_tasks.discard(task)


# ---------------------------------------------------------------------------------------
# Result rows (their encodings: galene/fe/result_encoding.py)
# ---------------------------------------------------------------------------------------


def _materialize_rows(rows: list[tuple] | pa.Table | None) -> Iterator[tuple]:
    if rows is None:
        return iter(())
    if isinstance(rows, pa.Table):
        return (row for batch in python_row_batches(StatementResult(columns=[], rows=rows)) for row in batch)
    return iter(rows)


def python_row_batches(result: StatementResult) -> Iterator[list[tuple]]:
    """Rows as Python values, in bounded batches (pyarrow results converted column by column)."""
    rows = result.rows
    if rows is None:
        return
    if isinstance(rows, pa.Table):
        for batch in rows.to_batches(max_chunksize=_ROW_BATCH):
            yield list(zip(*(column.to_pylist() for column in batch.columns)))
        return
    for start in range(0, len(rows), _ROW_BATCH):
        yield list(rows[start : start + _ROW_BATCH])


async def _text_batches(result: StatementResult) -> AsyncIterator[list[tuple]]:
    """`result`'s rows as text-protocol values, a bounded batch at a time (a streamed result's
    converted one engine batch at a time)."""
    types = [c.type for c in result.columns or []]
    rows = result.rows
    if not isinstance(rows, ResultStream):
        for batch in text_row_batches(types, rows):
            yield batch
        return
    async for batch in rows.batches():
        for converted in text_row_batches(types, pa.Table.from_batches([batch])):
            yield converted


async def _arrow_batches(result: StatementResult) -> AsyncIterator[pa.Table | pa.RecordBatch]:
    """`result`'s rows as Arrow, at most _ROW_BATCH rows at a time (rows built in the FE
    converted to the declared types)."""
    rows = result.rows
    if rows is None:
        return
    if isinstance(rows, ResultStream):
        async for batch in rows.batches():
            for start in range(0, batch.num_rows, _ROW_BATCH):
                yield batch.slice(start, _ROW_BATCH)
        return
    if isinstance(rows, pa.Table):
        for batch in rows.to_batches(max_chunksize=_ROW_BATCH):
            if batch.num_rows:
                yield batch
        return
    types = [c.type for c in result.columns or []]
    for start in range(0, len(rows), _ROW_BATCH):
        yield python_columns(rows[start : start + _ROW_BATCH], types)


# ---------------------------------------------------------------------------------------
# Prepared-statement parameters
# ---------------------------------------------------------------------------------------

_MYSQL = MySQL()

_STRING_PARAM_TYPES = {
    MysqlType.VARCHAR,
    MysqlType.VAR_STRING,
    MysqlType.STRING,
    MysqlType.ENUM,
    MysqlType.SET,
    MysqlType.JSON,
    MysqlType.BIT,
}
_BLOB_PARAM_TYPES = {MysqlType.TINY_BLOB, MysqlType.MEDIUM_BLOB, MysqlType.LONG_BLOB, MysqlType.BLOB}
_DECIMAL_PARAM_TYPES = {MysqlType.DECIMAL, MysqlType.NEWDECIMAL}


def placeholder_spans(sql: str) -> list[tuple[int, int]]:
    """(start, end) of each `?` placeholder, found by the sqlglot tokenizer (quotes/comments aware)."""
    try:
        tokens = _MYSQL.tokenize(sql)
    except SqlglotError as exc:
        raise GaleneError(f"Syntax error in prepared statement: {exc}") from None
    return [(t.start, t.end + 1) for t in tokens if t.token_type == TokenType.PLACEHOLDER]


def substitute_parameters(sql: str, spans: list[tuple[int, int]], params: list[Any]) -> str:
    if len(spans) != len(params):
        raise GaleneError(f"Prepared statement expects {len(spans)} parameters, got {len(params)}")
    pieces = []
    previous = 0
    for (start, end), value in zip(spans, params):
        pieces.append(sql[previous:start])
        pieces.append(sql_literal(value))
        previous = end
    pieces.append(sql[previous:])
    return "".join(pieces)


def quote_string(value: str) -> str:
    """A MySQL/Doris single-quoted string literal that reads back as exactly `value`."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''").replace("\0", "\\0") + "'"


def sql_literal(value: Any) -> str:
    """A prepared-statement parameter as an SQL literal."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise GaleneError(f"Unsupported parameter value: {value}")
        return repr(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, str):
        return quote_string(value)
    if isinstance(value, (bytes, bytearray)):
        try:
            return quote_string(bytes(value).decode("utf-8"))
        except UnicodeDecodeError:
            return "X'" + bytes(value).hex() + "'"
    if isinstance(value, datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return quote_string(text + (f".{value.microsecond:06d}" if value.microsecond else ""))
    if isinstance(value, date):
        return quote_string(value.isoformat())
    if isinstance(value, timedelta):
        return quote_string(_format_time(value))
    return quote_string(str(value))


def _format_time(value: timedelta) -> str:
    sign = "-" if value < timedelta(0) else ""
    value = abs(value)
    hours, rest = divmod(value.days * 86400 + value.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{sign}{hours:02d}:{minutes:02d}:{seconds:02d}"
    return text + (f".{value.microseconds:06d}" if value.microseconds else "")


def _read_param_value(reader: io.BytesIO, type_code: int, unsigned: bool, charset: CharacterSet) -> Any:
    if type_code in _STRING_PARAM_TYPES:
        return charset.decode(read_str_len(reader))
    if type_code in _BLOB_PARAM_TYPES:
        return read_str_len(reader)
    if type_code in _DECIMAL_PARAM_TYPES:
        return Decimal(read_str_len(reader).decode("ascii"))
    if type_code == MysqlType.TINY:
        return read_uint_1(reader) if unsigned else read_int_1(reader)
    if type_code in (MysqlType.SHORT, MysqlType.YEAR):
        return read_uint_2(reader) if unsigned else read_int_2(reader)
    if type_code in (MysqlType.LONG, MysqlType.INT24):
        return read_uint_4(reader) if unsigned else read_int_4(reader)
    if type_code == MysqlType.LONGLONG:
        return read_uint_8(reader) if unsigned else read_int_8(reader)
    if type_code == MysqlType.FLOAT:
        return read_float(reader)
    if type_code == MysqlType.DOUBLE:
        return read_double(reader)
    if type_code == MysqlType.NULL:
        return None
    if type_code in (MysqlType.DATE, MysqlType.DATETIME, MysqlType.TIMESTAMP):
        return _read_binary_datetime(reader, as_date=type_code == MysqlType.DATE)
    if type_code == MysqlType.TIME:
        return _read_binary_time(reader)
    raise GaleneError(f"Unsupported parameter type: {type_code}")


def _long_data_value(data: bytes, type_code: int, charset: CharacterSet) -> Any:
    if type_code in _BLOB_PARAM_TYPES:
        return data
    if type_code in _DECIMAL_PARAM_TYPES:
        return Decimal(data.decode("ascii"))
    return charset.decode(data)


def _read_binary_datetime(reader: io.BytesIO, as_date: bool) -> date | datetime | str:
    length = read_uint_1(reader)
    if length == 0:
        return "0000-00-00" if as_date else "0000-00-00 00:00:00"
    year, month, day = read_uint_2(reader), read_uint_1(reader), read_uint_1(reader)
    hour = minute = second = micro = 0
    if length >= 7:
        hour, minute, second = read_uint_1(reader), read_uint_1(reader), read_uint_1(reader)
    if length >= 11:
        micro = read_uint_4(reader)
    if as_date:
        return date(year, month, day)
    return datetime(year, month, day, hour, minute, second, micro)


def _read_binary_time(reader: io.BytesIO) -> timedelta:
    length = read_uint_1(reader)
    if length == 0:
        return timedelta(0)
    negative = read_uint_1(reader)
    days = read_uint_4(reader)
    hour, minute, second = read_uint_1(reader), read_uint_1(reader), read_uint_1(reader)
    micro = read_uint_4(reader) if length >= 12 else 0
    value = timedelta(days=days, hours=hour, minutes=minute, seconds=second, microseconds=micro)
    return -value if negative else value
