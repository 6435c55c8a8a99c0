"""One MySQL connection of the endpoint: login and the command loop.

Login: mysql_native_password against the executor's stored hashes (the account is the most
specific one whose host pattern matches the client, MySQL's rule), an auth switch for clients
that answer with another plugin, Doris' 1045 / 1049 / 1044 for a wrong password, an unknown
database or one the user has no privilege in, and 1203 past the server's session limits;
COM_CHANGE_USER logs in again (a failed one closes the connection). A login must finish within
`connect_timeout`; a client that sends garbage gets 1043 "Bad handshake".

The command loop reads each command within the session's `wait_timeout` and the packet bounds
of its variables (`framing`), runs it, and answers every failure with an error packet (the
session lives on; a framing failure ends it): COM_QUERY (several statements in one when the
client allows it), COM_INIT_DB, COM_FIELD_LIST, COM_STATISTICS, COM_PING, the prepared
statements' commands (`prepared`), KILL QUERY / KILL CONNECTION. The answers are `results`'.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any, Protocol

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
from mysql_mimic.constants import KillKind
from mysql_mimic.stream import ConnectionClosed
from mysql_mimic.types import Capabilities, ColumnDefinition, Commands, ServerStatus

from galene.common.errors import ER_ACCESS_DENIED, ER_BAD_DB, GaleneError
from galene.common.types import ColumnType, TypeError_, parse_type
from galene.fe.mysql.boundary import Executor, SessionContext
from galene.fe.mysql.errors import (
    ER_HANDSHAKE,
    ER_QUERY_INTERRUPTED,
    ER_TOO_MANY_USER_CONNECTIONS,
    ER_UNKNOWN_COMMAND,
    malformed_packet,
)
from galene.fe.mysql.framing import PACKET_LIMIT_RANGE, TIMEOUT_RANGE, GaleneStream, WireError, clamp
from galene.fe.mysql.prepared import PreparedStatements
from galene.fe.mysql.result_encoding import mysql_column_spec
from galene.fe.mysql.results import ResultWriting, materialize_rows
from galene.fe.mysql.session import Endpoint, GaleneSession
from galene.sql.statements.split import split_statements

logger = logging.getLogger(__name__)


class Listener(Endpoint, Protocol):
    """What a connection reads and does of its server (`galene.fe.mysql.server`)."""

    connect_timeout: float
    max_allowed_packet: int
    start_time: float
    sessions: int

    def register_session(self, connection: GaleneConnection, user: str) -> str | None: ...


class ExecutorIdentityProvider(IdentityProvider):
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
        found = self.executor.login_account(username, host)
        if found is None:
            return None
        host_pattern, stored = found
        user = User(name=username, auth_string=stored.lstrip("*"), auth_plugin=NativePasswordAuthPlugin.name)
        return user, host_pattern


class GaleneConnection(PreparedStatements, ResultWriting, Connection):
    session: GaleneSession

    def __init__(self, *, server: Listener, **kwargs: Any):
        super().__init__(**kwargs)
        self.server = server
        self.authenticated = False
        self.busy = False
        self.logging_in = False  # counted in the server's logins in progress
        self.registered_user: str | None = None  # counted in the server's sessions
        self.status_flags = ServerStatus.SERVER_STATUS_AUTOCOMMIT
        self._init_prepared_statements()

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
            await self.send_final_error(exc.code, exc.message)
            return
        except (ConnectionClosed, asyncio.IncompleteReadError, ConnectionError):
            return
        except Exception as exc:  # noqa: BLE001 - whatever a client sends, it gets an answer, not a stack
            # Unauthenticated peers (probes, scanners, broken clients) are not worth more than a
            # debug line each, as Doris logs them.
            logger.debug("connection %s: bad handshake: %r", self.connection_id, exc)
            await self.send_final_error(ER_HANDSHAKE, "Bad handshake")
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
        if database:  # Doris' 1044: no privilege in that database
            as_user = SessionContext(
                connection_id=self.connection_id, user=decision.authenticated_as, database=None, variables={},
                user_host=user_host, client_host=self.client_host,
            )  # fmt: skip
            try:
                self.server.executor.check_database_access(database, as_user)
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
        with malformed_packet():
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
                await self.send_final_error(exc.code, exc.message)
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
        return clamp(self.session.variables.get(name, default), TIMEOUT_RANGE, default)

    def _apply_session_bounds(self) -> None:
        """The stream's bounds for the next command, from the session's variables (SET may
        have changed them)."""
        stream = self.stream
        assert isinstance(stream, GaleneStream)
        stream.max_payload = clamp(
            self.session.variables.get("max_allowed_packet"),
            PACKET_LIMIT_RANGE,
            self.server.max_allowed_packet,
        )
        stream.discard_oversized = True
        stream.read_timeout = self._session_seconds("net_read_timeout", 600)
        stream.write_timeout = self._session_seconds("net_write_timeout", 600)

    async def send_final_error(self, code: int, message: str) -> None:
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
        with malformed_packet():
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
        for row in materialize_rows(result.rows):
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

