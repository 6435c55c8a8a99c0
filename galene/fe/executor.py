"""The FE's statement dispatcher: every SQL statement a session sends (through the MySQL
endpoint, `galene.fe.mysql`) is parsed into a typed statement (`galene.sql.statements`), checked
against Doris' privilege rules (`galene.fe.auth`) before anything runs, and routed by its type to
its handler:

* `schema_statements` — databases, tables, views, materialized views and their SHOWs, answered
  from FE metadata (changes go through `CatalogService`);
* `query_statements` — queries (and EXPLAIN) translated to Spark SQL over snapshots of the
  tables' rowsets, run on the FE's engine session in a worker thread, results streamed;
* `write_statements` — INSERT (VALUES as one stream load to a BE; SELECT and the other writes as
  engine jobs, `galene.fe.pipelines`) and streaming jobs;
* `metadata_statements` — the SHOW statements of tools (information_schema's data);
* `system_statements` — backends, frontends, loads, compaction, SHOW PROC, no-ops;
* `user_statements` — users, roles, grants.

`SqlExecutor` is also the endpoint's source of accounts and privilege checks (the `Executor`
protocol of `galene.fe.mysql.boundary`).
"""

from __future__ import annotations

from galene.common.errors import GaleneError
from galene.fe import auth, authorize
from galene.fe.metadata_statements import MetadataStatements
from galene.fe.mysql.boundary import SessionContext, StatementResult
from galene.fe.query_statements import QueryStatements
from galene.fe.schema_statements import SchemaStatements
from galene.fe.system_statements import SystemStatements
from galene.fe.user_statements import UserStatements
from galene.fe.write_statements import WriteStatements
from galene.sql.statements.parse import parse_statement
from galene.sql.statements.session import Use


class SqlExecutor(
    SchemaStatements, QueryStatements, WriteStatements, MetadataStatements, SystemStatements, UserStatements
):
    """Routes a statement to the handler `_do_<statement type>` of its part."""

    # --- the Executor protocol of the MySQL endpoint ---------------------------------
    def database_exists(self, name: str) -> bool:
        return self.fe.catalog.has_db(name)

    def check_password(self, user: str) -> str | None:
        account = auth.login_account(self.fe.state, user, "127.0.0.1")
        return account.password if account is not None else None

    def login_account(self, user: str, host: str) -> tuple[str, str] | None:
        """(the account's host pattern, its stored hash) a login from `host` is checked against."""
        account = auth.login_account(self.fe.state, user, host)
        return (account.host, account.password) if account is not None else None

    def check_database_access(self, name: str, ctx: SessionContext) -> None:
        """USE / COM_INIT_DB / the database of a login: Doris' 1044 for a database the user
        has no privilege in."""
        authorize.authorize(self.fe.state, ctx, Use(db=name))

    def is_admin(self, ctx: SessionContext) -> bool:
        return auth.is_admin(self.fe.state, auth.session_identity(ctx))

    async def execute(self, sql: str, ctx: SessionContext) -> StatementResult:
        stmt = parse_statement(sql)
        authorize.authorize(self.fe.state, ctx, stmt)  # Doris' privilege rules, before anything runs
        handler = getattr(self, "_do_" + type(stmt).__name__, None)
        if handler is None:
            raise GaleneError(f"Unsupported statement: {sql.strip()[:200]}")
        return await handler(stmt, ctx)
