"""What every statement handler of the FE's executor stands on (`ExecutorBase`, the base of
`galene.fe.executor.SqlExecutor`): the FE, the worker pools, the names a statement gives resolved
against the session (a database, a table, a view, an information_schema table; Doris' errors for
missing ones), what a session may see, and the metadata context information_schema reads — with
the session's privileges, built here from `galene.fe.auth` and passed in. Also the small helpers
the handlers share for result rows (columns, times, LIKE, ORDER BY of SHOW)."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from galene.catalog.model import Table
from galene.common.errors import AnalysisError, GaleneError, bad_database, bad_table, no_database_selected
from galene.common.types import ColumnType
from galene.fe import auth
from galene.fe.mysql.boundary import ResultColumn, SessionContext
from galene.fe.pipelines import Pipelines
from galene.sql.information_schema import tables as schema_tables
from galene.sql.information_schema.context import MetaContext, is_schema
from galene.sql.like import like_match

STR = ColumnType(name="VARCHAR", length=255)
BIGINT = ColumnType(name="BIGINT")
STREAM_READERS = 32  # query results read at once; more wait for a reader


def cols(*names: str, types: dict[str, ColumnType] | None = None) -> list[ResultColumn]:
    types = types or {}
    return [ResultColumn(name=n, type=types.get(n, STR)) for n in names]


def fmt_time(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if ts else "NULL"


class ExecutorBase:
    def __init__(self, fe):
        self.fe = fe
        self.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="galene-query")
        # A streamed result holds its reader thread until the client has read it all: a pool of
        # its own, so that slow clients do not stall the statements that use `pool`.
        self.stream_pool = ThreadPoolExecutor(max_workers=STREAM_READERS, thread_name_prefix="galene-result")
        self.pipelines = Pipelines(self)

    async def blocking(self, fn, *args):
        """`fn(*args)` on the worker pool (catalog changes, engine analysis): the event loop goes on."""
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    # --- names -----------------------------------------------------------------------
    def database_of(self, db: str | None, ctx: SessionContext) -> str:
        name = db or ctx.database
        if not name:
            raise no_database_selected()
        return name

    def table_of(self, db: str | None, name: str, ctx: SessionContext) -> tuple[str, Table]:
        db_name = self.database_of(db, ctx)
        return db_name, self.fe.catalog.table(db_name, name)

    def shown_db(self, db: str | None, ctx: SessionContext) -> str:
        """The database a SHOW or DESCRIBE names (Doris' getDbOrAnalysisException: a missing one is
        ERR_BAD_DB_ERROR, MySQL 1049)."""
        db_name = self.database_of(db, ctx)
        if not self.fe.catalog.has_db(db_name):
            raise bad_database(db_name)
        return db_name

    def shown_table(self, db: str | None, name: str, ctx: SessionContext) -> tuple[str, Table]:
        """The table a SHOW or DESCRIBE names. Doris looks these up with getTableOrAnalysisException
        / getTableOrDdlException: a missing one is ERR_BAD_TABLE_ERROR (MySQL 1051, "Unknown
        table 'name'"), where a query's is 1105."""
        db_name = self.shown_db(db, ctx)
        try:
            return db_name, self.fe.catalog.table(db_name, name)
        except AnalysisError:
            raise bad_table(name) from None

    def table_or_schema(self, db: str | None, name: str, ctx: SessionContext) -> Table:
        """A catalog table, or an information_schema table as one (DESC, SHOW COLUMNS/INDEX)."""
        if is_schema(self.database_of(db, ctx)):
            try:
                return schema_tables.table_model(name)
            except AnalysisError:
                raise bad_table(name) from None
        return self.shown_table(db, name, ctx)[1]

    def view_of(self, db: str | None, name: str, ctx: SessionContext):
        """The view `name` (None for a table or an information_schema name)."""
        db_name = self.shown_db(db, ctx)
        return None if is_schema(db_name) else self.fe.catalog.view(db_name, name)

    def existing_db(self, db: str | None, ctx: SessionContext) -> str:
        name = self.database_of(db, ctx)
        if not is_schema(name):
            self.fe.catalog.db(name)  # Unknown database
        return name

    def source_columns(self, default_db: str, db: str | None, name: str) -> list | None:
        """A catalog table's or view's columns (for source_types), None when there is none."""
        db_name = db or default_db
        if is_schema(db_name):
            return None
        try:
            view = self.fe.catalog.view(db_name, name)
            return view.columns if view is not None else self.fe.catalog.table(db_name, name).columns
        except GaleneError:
            return None


    # --- what a session sees ----------------------------------------------------------
    def visible(self, ctx: SessionContext, db: str, table: str | None = None) -> bool:
        ident = auth.session_identity(ctx)
        return auth.is_admin(self.fe.state, ident) or auth.can_see(self.fe.state, ident, db, table)

    def meta_context(self, ctx: SessionContext) -> MetaContext:
        """What information_schema and the metadata SHOW statements see for this session: its
        privileges (`auth.SessionPrivileges`) go with it."""
        mysql = getattr(self.fe, "mysql", None)
        variables = getattr(mysql, "global_variables", None)
        return MetaContext(
            state=self.fe.state, privileges=auth.SessionPrivileges(self.fe.state, auth.session_identity(ctx)),
            user=ctx.user, database=ctx.database, connection_id=ctx.connection_id,
            variables=ctx.variables, global_variables=variables.values if variables is not None else {},
            variable_defaults={n: v.default for n, v in variables.specs.items()} if variables is not None else {},
            processes=getattr(mysql, "process_list", None), fe_host=getattr(self.fe, "host", "127.0.0.1"),
        )  # fmt: skip


def json_text(d) -> str:
    return json.dumps(d, separators=(", ", ": "))


def like_filter(values: list[str], pattern: str | None) -> list[str]:
    return [v for v in values if like_match(v, pattern)]


def sort_rows(rows: list[dict], order, names: list[str], what: str) -> list[dict]:
    """ORDER BY of a SHOW statement over its columns (numbers compare as numbers)."""
    if order is None:
        return rows
    for ordered in reversed(order.expressions):
        key = ordered.this.name
        col = next((n for n in names if n.lower() == key.lower()), None)
        if col is None:
            raise AnalysisError(f"Title name[{key}] does not exist in {what}")

        def sort_key(r, c=col):
            v = r[c]
            return (0, float(v), "") if isinstance(v, str) and _is_number(v) else (1, 0.0, str(v))

        rows = sorted(rows, key=sort_key, reverse=bool(ordered.args.get("desc")))
    return rows


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
