"""The MySQL endpoint's listener: `GaleneMysqlServer` (`await start()`, `port`, `await stop()`).

It accepts sockets (a kernel backlog as Doris' mysql_nio_backlog_num), hands out small
sequential connection ids as Doris does, bounds the sockets still logging in and the logged-in
sessions (in all and per user: 1203), carries out KILL [QUERY], and lists the logged-in
connections for SHOW PROCESSLIST and information_schema. Server-wide variable defaults
(`GlobalVariables`) come from the FE config.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time

from mysql_mimic.connection import Connection
from mysql_mimic.constants import DEFAULT_SERVER_CAPABILITIES, KillKind
from mysql_mimic.control import LocalControl, TooManyConnections
from mysql_mimic.server import MysqlServer
from mysql_mimic.types import Capabilities

import galene
from galene.common.errors import GaleneError
from galene.fe.mysql.boundary import Executor
from galene.fe.mysql.connection import ExecutorIdentityProvider, GaleneConnection
from galene.fe.mysql.errors import ER_NO_SUCH_THREAD, ER_TOO_MANY_USER_CONNECTIONS
from galene.fe.mysql.framing import PACKET_LIMIT_RANGE, TIMEOUT_RANGE, GaleneStream, clamp
from galene.fe.mysql.session import GaleneSession
from galene.fe.mysql.variables import GlobalVariables
from galene.sql.information_schema.context import ProcessInfo
from galene.sql.limits import recursion_limit_for

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
# Connections the kernel queues before we accept them (Doris' mysql_nio_backlog_num): a burst
# waits in the queue instead of in SYN retransmits, and is answered (or refused) at once.
_ACCEPT_BACKLOG = 1024
# How long a stop waits for the connections it killed to end, and then for the server to close.
STOP_GRACE_S = 5.0


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
        self.max_allowed_packet = clamp(max_allowed_packet, PACKET_LIMIT_RANGE, 16 << 20)
        self.max_sql_nesting_depth = max_sql_nesting_depth
        # Statements within max_sql_nesting_depth must parse: sqlglot needs ~50 frames a level,
        # more than the interpreter's default limit of 1000 allows past ~20 levels.
        if sys.getrecursionlimit() < recursion_limit_for(max_sql_nesting_depth):
            sys.setrecursionlimit(recursion_limit_for(max_sql_nesting_depth))
        self.global_variables = GlobalVariables(
            version=version,
            version_comment=version_comment,
            max_allowed_packet=self.max_allowed_packet,
            wait_timeout=clamp(wait_timeout, TIMEOUT_RANGE, 28800),
        )
        self.galene_control = _Control()
        self.logins_in_progress = 0
        self.sessions = 0
        self.sessions_by_user: dict[str, int] = {}
        super().__init__(
            capabilities=SERVER_CAPABILITIES,
            control=self.galene_control,
            identity_provider=ExecutorIdentityProvider(executor),
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
        """Stop listening, kill every connection (its statement is cancelled) and give them
        STOP_GRACE_S to end; connections still open then (a statement stuck in the engine) are
        cut, since the server's `wait_closed` would wait for them forever."""
        self.close()
        for connection in self.galene_control.connections():
            connection.kill(KillKind.CONNECTION)
        if self._connection_tasks:
            _, pending = await asyncio.wait(list(self._connection_tasks), timeout=STOP_GRACE_S)
            if pending:
                logger.warning("%d MySQL connection(s) did not end within %.0f s of the stop: cut", len(pending), STOP_GRACE_S)
                for connection in self.galene_control.connections():
                    with contextlib.suppress(Exception):
                        connection.stream.writer.transport.abort()
                for task in pending:
                    task.cancel()
        try:
            await asyncio.wait_for(self.wait_closed(), STOP_GRACE_S)
        except TimeoutError:
            logger.warning("the MySQL endpoint did not close within %.0f s of the stop", STOP_GRACE_S)

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
            await connection.send_final_error(ER_TOO_MANY_USER_CONNECTIONS, "Too many connections")
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

