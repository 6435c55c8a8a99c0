"""What the MySQL endpoint and the FE's statement dispatcher exchange.

`Executor` is the protocol the dispatcher (`galene.fe.executor.SqlExecutor`) implements for
the endpoint: it runs statements and describes queries, and it is the endpoint's only source of
accounts and privileges — every method is required, so a missing privilege check is an error,
never a pass. `SessionContext` is a session as the executor sees it; `StatementResult` its
answer (an OK packet, or columns and rows: a list, an Arrow table, or a query's `ResultStream`
read as the engine writes it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from galene.common.types import ColumnType
from galene.fe.result_stream import ResultStream


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

    async def describe(self, sql: str, ctx: SessionContext) -> list[ResultColumn] | None:
        """A query's result columns without running it (COM_STMT_PREPARE); None for no query."""
        ...

    def database_exists(self, name: str) -> bool: ...

    def check_password(self, user: str) -> str | None: ...  # hex SHA1(SHA1(pw)), "" = empty, None = no user

    def login_account(self, user: str, host: str) -> tuple[str, str] | None:
        """(the account's host pattern, its stored hash) a login as `user` from `host` is
        checked against (MySQL's rule: the most specific matching account), None for none."""
        ...

    def check_database_access(self, name: str, ctx: SessionContext) -> None:
        """Raises Doris' 1044 when the session's user has no privilege in database `name`."""
        ...

    def is_admin(self, ctx: SessionContext) -> bool: ...  # the session's user holds ADMIN_PRIV
