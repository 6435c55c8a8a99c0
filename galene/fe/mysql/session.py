"""One MySQL client session: its variables, its current database, and the routing of its
statements — session-level ones (SET, SELECT @@var, SHOW VARIABLES, USE, KILL, ...) answered by
`session_sql`, everything else sent as SQL text to the executor (`boundary.Executor`) — with what
SHOW PROCESSLIST shows of it (login time, the current or last statement and how it ended)."""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

from mysql_mimic.connection import Connection
from mysql_mimic.session import BaseSession

from galene.common.errors import ER_BAD_DB, GaleneError
from galene.fe.auth import redact_passwords
from galene.fe.mysql.boundary import Executor, ResultColumn, SessionContext, StatementResult
from galene.fe.mysql.session_sql import (
    KillConnection,
    LocalResult,
    SessionInfo,
    SessionSql,
    UseDatabase,
    leading_words,
    strip_statement,
)
from galene.fe.mysql.variables import GlobalVariables, SessionVariables
from galene.sql.limits import check_sql_nesting_depth, nesting_error

logger = logging.getLogger(__name__)


class Endpoint(Protocol):
    """What a session reads and does of its server (`galene.fe.mysql.server`)."""

    executor: Executor
    global_variables: GlobalVariables
    max_sql_nesting_depth: int
    questions: int  # statements run (COM_STATISTICS)

    def kill(self, connection_id: int, query_only: bool) -> None: ...


class GaleneSession(BaseSession):
    """One client session: its variables, current database, and statement routing."""

    def __init__(self, server: Endpoint):
        self.server = server
        self.executor = server.executor
        self.variables = SessionVariables(server.global_variables)
        self.statements = SessionSql(self.variables)
        self.username: str | None = None
        self.user_host = "%"  # the account's host pattern (its identity is 'username'@'user_host')
        self.database: str | None = None
        self.connection: Any = None  # its GaleneConnection, from login to close
        # What SHOW PROCESSLIST shows of this session: login, its current (or last) statement.
        self.login_time = time.time()
        self.command_start = self.login_time
        self.current_sql = ""
        self.last_state = "OK"

    async def init(self, connection: Connection) -> None:
        self.connection = connection

    async def close(self) -> None:
        self.connection = None

    def _is_admin(self) -> bool:
        return self.executor.is_admin(self.context())

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
        self.executor.check_database_access(name, self.context())  # Doris' 1044: no privilege in it
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
            if local is not None:
                return []
            return list(await self.executor.describe(strip_statement(sql), self.context()) or [])
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
