"""Statement execution in the FE: routes each parsed statement to the catalog or to Spark.

DDL and SHOW statements are answered from FE metadata (changes go through
`CatalogService`); queries are translated to Spark SQL with every table bound to a
snapshot of its rowsets at the version visible when the query started, and run on the FE's
long-lived Spark session in a worker thread so the MySQL endpoint stays responsive.
INSERT becomes one stream load sent to a BE (`galene.fe.insert`); the SELECT of an
INSERT … SELECT and VALUES holding expressions run on Spark like any query.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from sqlglot import exp

from galene import NODE_VERSION
from galene.catalog.model import Table, UserAccount, account_key, snapshot
from galene.common.errors import (
    AnalysisError,
    GaleneError,
    bad_database,
    bad_table,
    no_database_selected,
    unknown_database,
)
from galene.common.types import ColumnType, from_spark_type_name
from galene.fe import auth
from galene.fe import insert as ins
from galene.fe.mysql_server import ResultColumn, SessionContext, StatementResult
from galene.fe.pipelines import Pipelines, view_definition
from galene.fe.result_stream import ResultStream, pump
from galene.fe.table_functions import TableFunctionViews
from galene.sql import information_schema as infoschema
from galene.sql import show, source_types
from galene.sql.ddl import render
from galene.sql.ddl.create_table import table_from_create
from galene.sql.like import like_match
from galene.sql.show import describe, show_columns
from galene.sql.statements.account import Revoke, RevokeRole
from galene.sql.statements.dml import Query
from galene.sql.statements.parse import parse_statement
from galene.sql.statements.session import Use
from galene.sql.translate import to_spark_sql

log = logging.getLogger(__name__)

_VIEW_SEQ = itertools.count(1)
STR = ColumnType(name="VARCHAR", length=255)
BIGINT = ColumnType(name="BIGINT")


STREAM_READERS = 32  # query results read at once; more wait for a reader


def _query_timeout(timeout: int) -> GaleneError:
    return GaleneError(
        f"[TIMEOUT]Query timeout: the query ran longer than query_timeout ({timeout} s) and was cancelled"
    )


def _cols(*names: str, types: dict[str, ColumnType] | None = None) -> list[ResultColumn]:
    types = types or {}
    return [ResultColumn(name=n, type=types.get(n, STR)) for n in names]


def _fmt_time(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if ts else "NULL"


class SqlExecutor:
    def __init__(self, fe):
        self.fe = fe
        self.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="galene-query")
        # A streamed result holds its reader thread until the client has read it all: a pool of
        # its own, so that slow clients do not stall the statements that use `pool`.
        self.stream_pool = ThreadPoolExecutor(max_workers=STREAM_READERS, thread_name_prefix="galene-result")
        self.pipelines = Pipelines(self)

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
        auth.authorize(self.fe.state, ctx, Use(db=name))

    def is_admin(self, ctx: SessionContext) -> bool:
        return auth.is_admin(self.fe.state, auth.session_identity(ctx))

    def _visible(self, ctx: SessionContext, db: str, table: str | None = None) -> bool:
        ident = auth.session_identity(ctx)
        return auth.is_admin(self.fe.state, ident) or auth.can_see(self.fe.state, ident, db, table)

    async def execute(self, sql: str, ctx: SessionContext) -> StatementResult:
        stmt = parse_statement(sql)
        auth.authorize(self.fe.state, ctx, stmt)  # Doris' privilege rules, before anything runs
        handler = getattr(self, "_do_" + type(stmt).__name__, None)
        if handler is None:
            raise GaleneError(f"Unsupported statement: {sql.strip()[:200]}")
        return await handler(stmt, ctx)

    async def _blocking(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    def _db_name(self, db: str | None, ctx: SessionContext) -> str:
        name = db or ctx.database
        if not name:
            raise no_database_selected()
        return name

    # --- databases ------------------------------------------------------------------
    async def _do_CreateDatabase(self, s, ctx):
        await self._blocking(
            self.fe.catalog.create_database, s.name, s.if_not_exists, getattr(s, "properties", None)
        )
        return StatementResult(affected_rows=0)

    async def _do_DropDatabase(self, s, ctx):
        await self._blocking(self.fe.catalog.drop_database, s.name, s.if_exists)
        return StatementResult()

    async def _do_Use(self, s, ctx):
        if not self.fe.catalog.has_db(s.db):
            raise unknown_database(s.db)
        return StatementResult(new_database=s.db)

    async def _do_ShowDatabases(self, s, ctx):
        names = sorted(self.fe.state.db_names) + ["information_schema"]
        names = _like_filter(names, getattr(s, "like", None))
        names = [n for n in names if self._visible(ctx, n)]
        return StatementResult(columns=_cols("Database"), rows=[(n,) for n in sorted(names)])

    async def _do_ShowCreateDatabase(self, s, ctx):
        db = self.fe.catalog.db(s.name)
        return StatementResult(
            columns=_cols("Database", "Create Database"), rows=[(db.name, f"CREATE DATABASE `{db.name}`")]
        )

    # --- tables ---------------------------------------------------------------------
    async def _do_CreateTable(self, s, ctx):
        if s.query is not None:
            functions = TableFunctionViews(self.fe)  # CREATE TABLE … AS SELECT … FROM S3(…)
            await functions.prepare(s.query)
            async with functions.active():
                return await self.pipelines.create_table_as_select(s, ctx)
        if s.like is not None:
            return await self.pipelines.create_table_like(s, ctx)
        db_name = self._db_name(s.db, ctx)

        def build(db_id, alloc, now):
            return table_from_create(s, db_id=db_id, alloc_id=alloc, now=now)

        await self._blocking(self.fe.catalog.create_table, db_name, build, s.if_not_exists)
        return StatementResult()

    async def _do_DropTable(self, s, ctx):
        await self._blocking(self.fe.catalog.drop_table, self._db_name(s.db, ctx), s.name, s.if_exists)
        return StatementResult()

    async def _do_AlterTableRename(self, s, ctx):
        await self._blocking(self.fe.catalog.rename_table, self._db_name(s.db, ctx), s.table, s.new_name)
        return StatementResult()

    async def _do_AlterTableSetProperties(self, s, ctx):
        await self._blocking(
            self.fe.catalog.set_table_properties, self._db_name(s.db, ctx), s.table, dict(s.properties)
        )
        return StatementResult()

    async def _do_ShowTables(self, s, ctx):
        db_name = self._db_name(s.db, ctx)
        if infoschema.is_schema(db_name):
            names = _like_filter(infoschema.table_names(), getattr(s, "like", None))
            label = f"Tables_in_{infoschema.SCHEMA_NAME}"
            if s.full:
                return StatementResult(columns=_cols(label, "Table_type"), rows=[(n, "SYSTEM VIEW") for n in names])
            return StatementResult(columns=_cols(label), rows=[(n,) for n in names])
        db = self.fe.catalog.db(db_name)
        names = _like_filter(sorted([*db.tables, *db.views]), getattr(s, "like", None))
        names = [n for n in names if self._visible(ctx, db_name, n)]
        label = f"Tables_in_{db_name}"
        if s.full:
            kinds = [("VIEW" if n in db.views else "BASE TABLE") for n in names]
            return StatementResult(columns=_cols(label, "Table_type"), rows=list(zip(names, kinds, strict=True)))
        return StatementResult(columns=_cols(label), rows=[(n,) for n in names])

    def _table(self, db: str | None, name: str, ctx: SessionContext) -> tuple[str, Table]:
        db_name = self._db_name(db, ctx)
        return db_name, self.fe.catalog.table(db_name, name)

    def _shown_db(self, db: str | None, ctx: SessionContext) -> str:
        """The database a SHOW or DESCRIBE names (Doris' getDbOrAnalysisException: a missing one is
        ERR_BAD_DB_ERROR, MySQL 1049)."""
        db_name = self._db_name(db, ctx)
        if not self.fe.catalog.has_db(db_name):
            raise bad_database(db_name)
        return db_name

    def _shown_table(self, db: str | None, name: str, ctx: SessionContext) -> tuple[str, Table]:
        """The table a SHOW or DESCRIBE names. Doris looks these up with getTableOrAnalysisException
        / getTableOrDdlException: a missing one is ERR_BAD_TABLE_ERROR (MySQL 1051, "Unknown
        table 'name'"), where a query's is 1105."""
        db_name = self._shown_db(db, ctx)
        try:
            return db_name, self.fe.catalog.table(db_name, name)
        except AnalysisError:
            raise bad_table(name) from None

    def _table_or_schema(self, db: str | None, name: str, ctx: SessionContext) -> Table:
        """A catalog table, or an information_schema table as one (DESC, SHOW COLUMNS/INDEX)."""
        if infoschema.is_schema(self._db_name(db, ctx)):
            try:
                return infoschema.table_model(name)
            except AnalysisError:
                raise bad_table(name) from None
        return self._shown_table(db, name, ctx)[1]

    def _view(self, db: str | None, name: str, ctx: SessionContext):
        """The view `name` (None for a table or an information_schema name)."""
        db_name = self._shown_db(db, ctx)
        return None if infoschema.is_schema(db_name) else self.fe.catalog.view(db_name, name)

    async def _do_ShowColumns(self, s, ctx):
        view = self._view(s.db, s.table, ctx)
        if view is not None:
            names, rows = show.show_view_columns(view, s.full)
            rows = [r for r in rows if like_match(r[0], getattr(s, "like", None))]
            return StatementResult(columns=_cols(*names), rows=rows)
        table = self._table_or_schema(s.db, s.table, ctx)
        names, rows = show_columns(table, s.full)
        rows = [r for r in rows if like_match(r[0], getattr(s, "like", None))]
        return StatementResult(columns=_cols(*names), rows=rows)

    async def _do_Describe(self, s, ctx):
        view = self._view(s.db, s.table, ctx)
        if view is not None:
            names, rows = show.describe_view(view, getattr(s, "all", False))
            return StatementResult(columns=_cols(*names), rows=rows)
        table = self._table_or_schema(s.db, s.table, ctx)
        names, rows = describe(table, getattr(s, "all", False))
        return StatementResult(columns=_cols(*names), rows=rows)

    async def _do_ShowCreateTable(self, s, ctx):
        view = self._view(s.db, s.table, ctx)
        if view is not None:  # Doris answers SHOW CREATE TABLE on a view as SHOW CREATE VIEW
            return StatementResult(columns=_cols(*render.SHOW_CREATE_VIEW_COLUMNS), rows=[render.show_create_view_row(view)])
        db_name, table = self._shown_table(s.db, s.table, ctx)
        return StatementResult(
            columns=_cols("Table", "Create Table"), rows=[(table.name, render.show_create_table(table, db_name))]
        )

    # --- views, schema change, materialized views (schema objects) --------------------------
    async def _do_CreateView(self, s, ctx):
        """CREATE [OR REPLACE] VIEW / ALTER VIEW: the query is analysed by the engine (its output
        columns; unknown names fail here), the definition stored with its tables qualified."""
        from galene.catalog.model import Column, View
        from galene.sql.ddl.views import qualify_table_names

        db_name = self._db_name(s.db, ctx)
        self.fe.catalog.db(db_name)
        spark_sql, views = self.pipelines.plan_query(s.query, ctx)
        await self.fe.wait_engine()
        schema = await self._blocking(self.pipelines._query_schema, spark_sql, views)
        names = [n for n, _ in s.columns] or [n for n, _ in schema]
        if len(names) != len(schema):
            raise AnalysisError("View's SELECT and view's field list have different column counts")
        seen: set[str] = set()
        for n in names:
            if n.lower() in seen:
                raise AnalysisError(f"Duplicate column name '{n}'")
            seen.add(n.lower())
        comments = dict(s.columns)
        # Doris' view columns are typed by the plan: a column read unchanged keeps its table's
        # type (VARCHAR(10), not the engine's string).
        types = source_types.refine(
            [from_spark_type_name(t) for _, t in schema],
            source_types.source_column_types(s.query, functools.partial(self._source_columns, db_name)),
        )
        columns = [
            Column(name=n, type=t, comment=comments.get(n, "")) for n, t in zip(names, types, strict=True)
        ]
        definition = qualify_table_names(s.query_sql, ctx.database or db_name)
        db = self.fe.catalog.db(db_name)
        # The view as it will read, expanded through the views it reads: one that would reach
        # itself (ALTER VIEW a AS … FROM b, where b reads a) or nest too deep is refused now.
        explicit = [n for n, _ in s.columns]
        this = view_definition(View(id=0, db_id=db.id, name=s.name, sql=definition, column_names=explicit), db_name)
        probe = exp.select("*").from_(exp.Table(this=exp.to_identifier(s.name), db=exp.to_identifier(db_name)))
        self.pipelines.plan_query(probe, ctx, view_overrides={(db_name, s.name): this})

        def build(view_id, now, existing):
            comment = s.comment if s.comment is not None else (existing.comment if existing else "")
            return View(
                id=view_id, db_id=db.id, name=s.name, sql=definition, columns=columns,
                column_names=explicit, comment=comment, definer=ctx.user,
                create_time=existing.create_time if existing else now, update_time=now,
            )  # fmt: skip

        await self._blocking(
            functools.partial(
                self.fe.catalog.create_view,
                db_name,
                build,
                or_replace=s.or_replace,
                if_not_exists=s.if_not_exists,
                alter=s.alter,
            )
        )
        return StatementResult()

    def _source_columns(self, default_db: str, db: str | None, name: str) -> list | None:
        """A catalog table's or view's columns (for source_types), None when there is none."""
        db_name = db or default_db
        if infoschema.is_schema(db_name):
            return None
        try:
            view = self.fe.catalog.view(db_name, name)
            return view.columns if view is not None else self.fe.catalog.table(db_name, name).columns
        except GaleneError:
            return None

    async def _do_DropView(self, s, ctx):
        await self._blocking(self.fe.catalog.drop_view, self._db_name(s.db, ctx), s.name, s.if_exists)
        return StatementResult()

    async def _do_ShowCreateView(self, s, ctx):
        db_name = self._db_name(s.db, ctx)
        view = self.fe.catalog.view(db_name, s.name)
        if view is None:
            self._shown_table(db_name, s.name, ctx)  # Unknown table … when there is nothing at all
            raise AnalysisError(f"'{db_name}.{s.name}' is not VIEW")
        return StatementResult(columns=_cols(*render.SHOW_CREATE_VIEW_COLUMNS), rows=[render.show_create_view_row(view)])

    async def _do_AlterTableColumns(self, s, ctx):
        """ALTER TABLE … ADD/DROP/MODIFY/RENAME COLUMN, MODIFY COMMENT: one journal op, no file
        rewritten (rowsets keep their schema version; readers map columns by id)."""
        from galene.sql.ddl.alter_table import alter_table

        actions = list(s.actions)
        await self._blocking(
            self.fe.catalog.alter_table, self._db_name(s.db, ctx), s.table, lambda t: alter_table(t, actions)
        )
        return StatementResult()

    async def _do_ReplaceTable(self, s, ctx):
        await self._blocking(
            self.fe.catalog.replace_table, self._db_name(s.db, ctx), s.table, s.other, s.swap
        )
        return StatementResult()

    async def _do_CreateMaterializedView(self, s, ctx):
        return await self.fe.mtmv.create(s, ctx)

    async def _do_RefreshMaterializedView(self, s, ctx):
        return await self.fe.mtmv.refresh_statement(s, ctx)

    async def _do_DropMaterializedView(self, s, ctx):
        db_name = self._db_name(s.db, ctx)
        await self._blocking(self.fe.catalog.drop_table, db_name, s.name, s.if_exists, "MATERIALIZED VIEW")
        return StatementResult()

    async def _do_ShowCreateMaterializedView(self, s, ctx):
        db_name, table = self._shown_table(s.db, s.name, ctx)
        if table.mtmv is None:
            raise AnalysisError(f"'{db_name}.{s.name}' is not MATERIALIZED VIEW")
        return StatementResult(
            columns=_cols(*render.SHOW_CREATE_MV_COLUMNS), rows=[(table.name, render.show_create_materialized_view(table))]
        )

    # --- system ---------------------------------------------------------------------
    async def _do_AlterSystemAddBackend(self, s, ctx):
        hosts = [_host_port(h) for h in (s.host_ports or [s.host_port])]
        await self._blocking(self.fe.catalog.add_backends, hosts, _tags(getattr(s, "properties", None)))
        self.fe.backends.poke()
        return StatementResult()

    async def _do_AlterSystemDropBackend(self, s, ctx):
        """DROP / DROPP (at once), DECOMMISSION (drained, then dropped by the FE itself:
        fe/backends.py) and CANCEL DECOMMISSION of every host listed."""
        hosts = [_host_port(h) for h in (s.host_ports or [s.host_port])]
        if s.action == "DECOMMISSION":
            found = await self._blocking(self.fe.catalog.decommission_backends, hosts, True)
            for be in found:
                self.fe.backends.affinity.forget_backend(be.id)
            self.fe.backends.poke()  # the BE learns it from the heartbeat and starts draining
        elif s.action == "CANCEL DECOMMISSION":
            await self._blocking(self.fe.catalog.decommission_backends, hosts, False)
            self.fe.backends.poke()
        else:
            await self._blocking(self.fe.catalog.drop_backends, hosts)
        return StatementResult()

    async def _do_AlterSystemModifyBackend(self, s, ctx):
        props = dict(getattr(s, "properties", None) or {})
        flags: dict[str, bool | None] = {"disable_load": None, "disable_query": None}
        for key in list(props):
            if key.lower() in flags:
                flags[key.lower()] = props.pop(key).strip().lower() == "true"  # Boolean.valueOf, as Doris
        unknown = [k for k in props if not k.startswith("tag.")]
        if unknown:
            raise AnalysisError(f"unknown properties setting for key ({','.join(unknown)})")
        for host_port in s.host_ports or [s.host_port]:
            host, port = _host_port(host_port)
            await self._blocking(
                self.fe.catalog.modify_backend, host, port, _tags(props), flags["disable_load"], flags["disable_query"]
            )
        return StatementResult()

    async def _do_ShowBackends(self, s, ctx):
        """Doris' 28 columns, then Galene's write canary: Writable, LastCanaryTime,
        CanaryLatencyMs, CanaryError (fe/canary.py)."""
        names = [
            "BackendId", "Host", "HeartbeatPort", "BePort", "HttpPort", "BrpcPort", "ArrowFlightSqlPort",
            "LastStartTime", "LastHeartbeat", "Alive", "SystemDecommissioned", "TabletNum", "DataUsedCapacity",
            "TrashUsedCapacity", "AvailCapacity", "TotalCapacity", "UsedPct", "MaxDiskUsedPct",
            "RemoteUsedCapacity", "Tag", "ErrMsg", "Version", "Status", "HeartbeatFailureCounter", "CpuCores",
            "Memory", "RunningTasks", "NodeRole", "Writable", "LastCanaryTime", "CanaryLatencyMs", "CanaryError",
        ]  # fmt: skip
        tablets = sum(len(p.tablet_ids) for t in self.fe.state.tables.values() for p in t.partitions)
        rows = []
        backends = sorted(self.fe.state.backends.values(), key=lambda b: b.id)
        for be in backends:
            rt = self.fe.backends.status(be.id)
            tag = {"location": "default", **be.tags}
            health = rt.health or {}
            last_load = float(health.get("last_stream_load_time") or 0)
            status = {
                "lastSuccessReportTabletsTime": "N/A",
                "lastStreamLoadTime": int(last_load * 1000) if last_load else -1,
                "isQueryDisabled": be.disable_query,
                "isLoadDisabled": be.disable_load,
                # Galene: the BE's own view of its write path (its heartbeat answer).
                "ingestWorkerAlive": health.get("ingest_worker_alive"),
                "walFsyncAgeSec": health.get("wal_fsync_age_s"),
                "loopLagMs": health.get("loop_lag_ms"),
            }
            if health.get("problems"):
                status["problems"] = health["problems"]
            if be.decommissioned and rt.drain:
                status["drain"] = rt.drain
            canaried = rt.last_canary_time > 0
            rows.append(
                (
                    str(be.id), be.host, str(be.heartbeat_port), str(rt.be_port), str(rt.http_port),
                    str(rt.brpc_port), "-1", _fmt_time(rt.last_start_time), _fmt_time(rt.last_heartbeat),
                    "true" if rt.alive else "false", "true" if be.decommissioned else "false",
                    str(tablets // max(1, len(backends))), "0.000", "0.000", "0.000", "0.000", "0.00 %",
                    "0.00 %", "0.000", _json(tag), rt.err_msg, rt.version, _json(status),
                    str(rt.heartbeat_failures), str(rt.cpu_cores), "0.000", "0", "mix",
                    "true" if rt.writable else "false", _fmt_time(rt.last_canary_time) if canaried else "N/A",
                    f"{rt.canary_latency_ms:.1f}" if canaried else "N/A", rt.canary_error,
                )
            )  # fmt: skip
        return StatementResult(columns=_cols(*names), rows=rows)

    async def _do_ShowLoad(self, s, ctx):
        """SHOW LOAD: the engine jobs (INSERT … SELECT, OVERWRITE, CTAS, UPDATE, DELETE) of a
        database whose labels are still kept, in Doris' columns."""
        db_name = self._db_name(s.db, ctx)
        db = self.fe.catalog.db(db_name)
        names = [
            "JobId", "Label", "State", "Progress", "Type", "EtlInfo", "TaskInfo", "ErrorMsg", "CreateTime",
            "EtlStartTime", "EtlFinishTime", "LoadStartTime", "LoadFinishTime", "URL", "JobDetails",
            "TransactionId", "ErrorTablets", "User", "Comment",
        ]  # fmt: skip
        states = {"VISIBLE": "FINISHED", "COMMITTED": "FINISHED", "ABORTED": "CANCELLED"}
        rows = []
        for txn in sorted(self.fe.state.txns.values(), key=lambda t: t.id):
            if txn.db_id != db.id or txn.load_type == "STREAM_LOAD":
                continue
            state = states.get(txn.status, "LOADING")
            done = state != "LOADING"
            details = {
                "Unfinished backends": {}, "ScannedRows": txn.num_rows, "TaskNumber": 1,
                "LoadBytes": txn.load_bytes, "All backends": {}, "FileNumber": 0, "FileSize": 0,
            }  # fmt: skip
            row = {
                "JobId": str(txn.id), "Label": txn.label, "State": state,
                "Progress": "100.00% (1/1)" if done else "0.00% (0/1)", "Type": txn.load_type,
                "EtlInfo": "NULL", "TaskInfo": f"cluster:N/A; timeout(s):{txn.timeout_s}; max_filter_ratio:0.0",
                "ErrorMsg": f"type:LOAD_RUN_FAIL; msg:{txn.reason}" if txn.status == "ABORTED" else "NULL",
                "CreateTime": _fmt_time(txn.begin_time), "EtlStartTime": _fmt_time(txn.begin_time),
                "EtlFinishTime": _fmt_time(txn.begin_time), "LoadStartTime": _fmt_time(txn.begin_time),
                "LoadFinishTime": _fmt_time(txn.finish_time) if done else "NULL", "URL": "NULL",
                "JobDetails": _json(details), "TransactionId": str(txn.id), "ErrorTablets": "{}",
                "User": txn.user, "Comment": "",
            }  # fmt: skip
            if show.row_matches(s.where, row):
                rows.append(row)
        if s.order is not None:
            for ordered in reversed(s.order.expressions):
                key = ordered.this.name
                col = next((n for n in names if n.lower() == key.lower()), None)
                if col is None:
                    raise AnalysisError(f"Unknown column '{key}' in SHOW LOAD")
                numeric = col in ("JobId", "TransactionId")
                rows.sort(
                    key=lambda r, c=col, n=numeric: int(r[c]) if n else r[c],
                    reverse=bool(ordered.args.get("desc")),
                )
        if s.limit is not None:
            rows = rows[: s.limit]
        return StatementResult(columns=_cols(*names), rows=[tuple(r[n] for n in names) for r in rows])

    async def _do_ShowFrontends(self, s, ctx):
        names = [
            "Name", "Host", "EditLogPort", "HttpPort", "QueryPort", "RpcPort", "ArrowFlightSqlPort", "Role",
            "IsMaster", "ClusterId", "Join", "Alive", "ReplayedJournalId", "LastStartTime", "LastHeartbeat",
            "IsHelper", "ErrMsg", "Version", "CurrentConnected",
        ]  # fmt: skip
        fe = self.fe
        row = (
            fe.store.node_name if hasattr(fe.store, "node_name") else f"fe_{fe.host}_{fe.cfg.edit_log_port}",
            fe.host, str(fe.cfg.edit_log_port), str(fe.http_port), str(fe.query_port), str(fe.cfg.rpc_port),
            "-1", "FOLLOWER", "true", str(fe.store.cluster_id), "true", "true", str(fe.store.last_journal_id),
            _fmt_time(fe.start_time), _fmt_time(time.time()), "true", "", NODE_VERSION, "Yes",
        )  # fmt: skip
        return StatementResult(columns=_cols(*names), rows=[row])

    # --- compaction (galene/fe/compaction.py) ----------------------------------------
    async def _do_AdminCompact(self, s, ctx):
        """Doris' ADMIN COMPACT TABLE: compacts every tablet of one partition; answers OK once
        the compaction is committed (Doris answers once its BE tasks are sent)."""
        _, table = self._table(s.db, s.table, ctx)
        # Doris' AdminCompactTableStmt.analyze, in its order and texts.
        if not s.partitions:
            raise AnalysisError("No partition selected for compaction")
        if len(s.partitions) != 1:
            raise AnalysisError("Only support single partition for compaction")
        if not s.where_given:
            raise AnalysisError("Compaction type must be specified in Where clause like: type = 'BASE/CUMULATIVE'")
        if s.compact_type is None:
            raise AnalysisError("Where clause should looks like: type = 'BASE/CUMULATIVE'")
        await self.fe.compaction.admin_compact(table, s.partitions[0], s.compact_type.lower())
        return StatementResult()

    async def _do_ShowTablets(self, s, ctx):
        _, table = self._shown_table(s.db, s.table, ctx)
        rows = self.fe.compaction.show_tablets(table, s.partitions)
        return StatementResult(columns=_cols(*self.fe.compaction.SHOW_TABLETS_COLUMNS), rows=rows)

    async def _do_ShowProc(self, s, ctx):
        return await self.fe.show_proc(s.path)

    async def _do_Set(self, s, ctx):
        return StatementResult()

    async def _do_Transaction(self, s, ctx):
        # Doris autocommits every statement; BEGIN/COMMIT/ROLLBACK are accepted as no-ops.
        return StatementResult()

    # --- queries --------------------------------------------------------------------
    async def _do_Query(self, s, ctx):
        # A query over information_schema alone is answered on the FE, in milliseconds.
        local = infoschema.run_local(s.expr, self.meta_context(ctx)) if _reads_schema(s.expr, ctx) else None
        if local is not None:
            return StatementResult(columns=[ResultColumn(n, t) for n, t in local.columns], rows=local.rows)
        stream = await self._run_query(s.expr, ctx, stream=True)
        return StatementResult(columns=self._result_columns(s.expr, stream.head.columns, ctx), rows=stream)

    async def describe(self, sql: str, ctx: SessionContext) -> list[ResultColumn] | None:
        """A query's result columns without running it (COM_STMT_PREPARE): the engine analyses
        the statement (its parameters are NULLs here) and the columns are typed as a run of it
        types them. None for a statement that is no query."""
        stmt = parse_statement(sql)
        if not isinstance(stmt, Query):
            return None
        auth.authorize(self.fe.state, ctx, stmt)
        if _reads_schema(stmt.expr, ctx):
            local = infoschema.run_local(stmt.expr, self.meta_context(ctx))
            return None if local is None else [ResultColumn(n, t) for n, t in local.columns]
        spark_sql, views = self.pipelines.plan_query(stmt.expr, ctx)
        await self.fe.wait_engine()
        schema = await self._blocking(self.pipelines._query_schema, spark_sql, views)
        return self._result_columns(stmt.expr, schema, ctx)

    def _result_columns(self, expr, engine_columns: list[tuple[str, str]], ctx) -> list[ResultColumn]:
        """A query's result columns from the engine's (name, type): a column read unchanged from
        a table keeps that column's Doris type (LARGEINT, DATETIME(p), VARCHAR(n)), as Doris types
        a result by its plan; any other keeps the engine's type."""
        engine_types = [from_spark_type_name(t) for _, t in engine_columns]

        def lookup(db, name):
            return self._source_columns(ctx.database, db, name) if (db or ctx.database) else None

        types = source_types.refine(engine_types, source_types.source_column_types(expr, lookup))
        return [ResultColumn(name=n, type=t) for (n, _), t in zip(engine_columns, types, strict=True)]

    async def _run_query(self, expr, ctx, explain: str | None = None, stream: bool = False):
        """Run a Doris query on Spark over the table versions visible now; returns QueryOutput,
        or with `stream` a started ResultStream (a client's result, read as it is written)."""
        views: dict[str, tuple[Table, int]] = {}
        bound: dict[tuple[str, str], str] = {}

        def resolve(db: str | None, name: str) -> str:
            db_name = self._db_name(db, ctx)
            if infoschema.is_schema(db_name):  # a small Arrow-backed view for this statement
                key = f"{infoschema.SCHEMA_NAME}.{name.lower()}"
                return functions.add_table(key, lambda: infoschema.arrow_table(name, self.meta_context(ctx)))
            key = (db_name, name)
            if key not in bound:
                defined = self.fe.catalog.view(db_name, name)
                if defined is not None:  # a (logical) view: the translator expands its definition
                    return view_definition(defined, db_name)
                table = snapshot(self.fe.catalog.table(db_name, name))
                view = f"__galene_t{table.id}_v{table.visible_version}_{next(_VIEW_SEQ)}"
                views[view] = (table, table.visible_version)
                bound[key] = view
            return bound[key]

        # S3(…), jobs(…), tasks(…): planned on the FE, read as engine views (fe/table_functions.py).
        functions = TableFunctionViews(self.fe)
        await functions.prepare(expr)
        with functions.resolving():
            spark_sql = to_spark_sql(expr, resolve)
        if explain is not None:  # EXPLAIN: the engine's plan of the same statement
            spark_sql = f"EXPLAIN {explain} {spark_sql}"
        await self.fe.wait_engine()
        from galene.engine.query import interrupt_jobs, run_query

        timeout = int(ctx.variables.get("query_timeout", 900) or 900)
        tag = f"galene-query-{next(_VIEW_SEQ)}"
        storage_uri = self.fe.cfg.storage_uri
        if stream:
            return await self._start_stream(functions, spark_sql, views, tag, timeout)
        job = asyncio.ensure_future(
            self._blocking(functions.run, run_query, self.fe.engine, spark_sql, views, storage_uri, tag)
        )
        try:
            return await asyncio.wait_for(asyncio.shield(job), timeout=timeout)
        except (TimeoutError, asyncio.CancelledError) as e:
            # The engine keeps running a job nobody waits for: cancel it (query_timeout, KILL).
            await asyncio.to_thread(interrupt_jobs, self.fe.engine, tag)
            if isinstance(e, TimeoutError):
                raise _query_timeout(timeout) from None
            raise

    async def _start_stream(self, functions, spark_sql: str, views, tag: str, timeout: int) -> ResultStream:
        """The query's reader on its own thread (`stream_pool`), feeding a ResultStream; returns
        once the engine has the first batch. `query_timeout` bounds the whole stream."""
        from galene.engine.query import interrupt_jobs, stream_query

        loop = asyncio.get_running_loop()
        engine = self.fe.engine
        result = ResultStream(
            loop,
            deadline=loop.time() + timeout,
            timeout_error=lambda: _query_timeout(timeout),
            cancel=lambda: interrupt_jobs(engine, tag),
        )
        reader = stream_query(engine, spark_sql, views, self.fe.cfg.storage_uri, tag)

        def read() -> None:
            try:
                functions.run(pump, result, reader)
            except BaseException as e:  # noqa: BLE001 - a table function's view failed: the query's error
                result.finish(e)

        loop.run_in_executor(self.stream_pool, read)
        await result.start()  # KILL, timeout and errors close the stream (cancelling the job)
        return result

    # --- metadata for tools (rows: galene/sql/information_schema.py) ---------------------
    def meta_context(self, ctx: SessionContext) -> infoschema.MetaContext:
        """What information_schema and the metadata SHOW statements see for this session."""
        mysql = getattr(self.fe, "mysql", None)
        variables = getattr(mysql, "global_variables", None)
        return infoschema.MetaContext(
            state=self.fe.state, user=ctx.user, database=ctx.database, connection_id=ctx.connection_id,
            variables=ctx.variables, global_variables=variables.values if variables is not None else {},
            variable_defaults={n: v.default for n, v in variables.specs.items()} if variables is not None else {},
            processes=getattr(mysql, "process_list", None), fe_host=getattr(self.fe, "host", "127.0.0.1"),
            user_host=getattr(ctx, "user_host", "%") or "%",
        )  # fmt: skip

    def _existing_db(self, db: str | None, ctx: SessionContext) -> str:
        name = self._db_name(db, ctx)
        if not infoschema.is_schema(name):
            self.fe.catalog.db(name)  # Unknown database
        return name

    async def _do_ShowTableStatus(self, s, ctx):
        db_name = self._existing_db(s.db, ctx)
        rows = infoschema.table_status(self.meta_context(ctx), db_name, s.like, s.where)
        return StatementResult(columns=[ResultColumn(n, t) for n, t in infoschema.TABLE_STATUS_COLUMNS], rows=rows)

    async def _do_ShowIndex(self, s, ctx):
        # Doris lists the inverted/bitmap/ngram_bf indexes (none for views and system tables).
        table = self._table_or_schema(s.db, s.table, ctx)
        return StatementResult(columns=_cols(*infoschema.INDEX_COLUMNS), rows=show.index_rows(table))

    async def _do_ShowPartitions(self, s, ctx):
        _, table = self._shown_table(s.db, s.table, ctx)
        names = infoschema.PARTITIONS_COLUMNS
        rows = _sort_rows(infoschema.partition_rows(table, s.where), s.order, names, "SHOW PARTITIONS")
        rows = rows[: s.limit] if s.limit is not None else rows
        return StatementResult(columns=_cols(*names), rows=[tuple(r[n] for n in names) for r in rows])

    async def _do_ShowData(self, s, ctx):
        meta = self.meta_context(ctx)
        if s.table is not None:
            db_name, table = self._shown_table(s.db, s.table, ctx)
            names, rows = infoschema.DATA_TABLE_COLUMNS, infoschema.data_rows(meta, db_name, table)
        elif s.db or ctx.database:
            db_name = self._existing_db(s.db, ctx)
            names, rows = infoschema.DATA_DB_COLUMNS, infoschema.data_rows(meta, db_name, None, s.order)
        else:
            names, rows = infoschema.DATA_ALL_DB_COLUMNS, infoschema.all_db_data_rows(meta)
        return StatementResult(columns=_cols(*names), rows=rows)

    async def _do_ShowStreamLoad(self, s, ctx):
        db_name = self._existing_db(s.db, ctx)
        names = infoschema.STREAM_LOAD_COLUMNS
        rows = [r for r in infoschema.stream_load_rows(self.meta_context(ctx), db_name) if show.row_matches(s.where, r)]
        rows = _sort_rows(rows, s.order, names, "SHOW STREAM LOAD")
        rows = rows[: s.limit] if s.limit is not None else rows
        return StatementResult(columns=_cols(*names), rows=[tuple(r[n] for n in names) for r in rows])

    async def _do_ShowTransaction(self, s, ctx):
        db_name = self._existing_db(s.db, ctx)
        meta = self.meta_context(ctx)
        txn = infoschema.find_transaction(meta, db_name, s.where)
        return StatementResult(
            columns=_cols(*infoschema.TRANSACTION_COLUMNS), rows=[infoschema.transaction_row(meta, txn)]
        )

    async def _do_ShowProcesslist(self, s, ctx):
        rows = infoschema.processlist_rows(self.meta_context(ctx), s.full)
        return StatementResult(columns=[ResultColumn(n, t) for n, t in infoschema.PROCESSLIST_COLUMNS], rows=rows)

    async def _do_Explain(self, s, ctx):
        """EXPLAIN [VERBOSE] <query>: the engine's plan (Spark's `EXPLAIN [EXTENDED]` of the
        translated query over the same snapshot views), one row per line."""
        verbose = bool({"VERBOSE", "EXTENDED", "ALL"} & set(s.level.split()))
        out = await self._run_query(s.query, ctx, explain="EXTENDED" if verbose else "")
        text = "\n".join(str(v) for v in out.table.column(0).to_pylist()) if out.table.num_columns else ""
        rows = [(line,) for line in text.rstrip().splitlines()]
        return StatementResult(columns=_cols("Explain String(Nereids Planner)", types={}), rows=rows)

    # --- streaming jobs (galene/fe/jobs.py runs them) -----------------------------------
    async def _do_CreateJob(self, s, ctx):
        from galene.catalog.model import StreamingJob
        from galene.fe import jobs as jb
        from galene.storage.objectstore import parse_source

        db_name, table = self._table(s.insert.db, s.insert.table, ctx)
        ins.target_columns(table, s.insert.columns)
        props = jb.check_properties(s.properties)
        parse_source(jb.source_properties(s.insert))  # a bad uri/format/timeout fails here
        db = self.fe.catalog.db(db_name)

        def build(job_id, now):
            return StreamingJob(
                id=job_id, name=s.name, db_id=db.id, definer=ctx.user, execute_sql=s.do_sql, comment=s.comment,
                properties=props, create_time=now, offset=props.get("offset", ""), status_time=now,
            )  # fmt: skip

        await self._blocking(self.fe.catalog.create_job, build)
        self.fe.jobs.poke()
        return StatementResult()

    async def _do_JobControl(self, s, ctx):
        catalog = self.fe.catalog
        if s.action == "PAUSE":
            job = await self._blocking(catalog.pause_job, s.name)
            self.fe.jobs.cancel(job.id)
        elif s.action == "RESUME":
            job = await self._blocking(catalog.resume_job, s.name)
            self.fe.jobs.poke(job.id)
        else:
            job = await self._blocking(catalog.drop_job, s.name, s.if_exists)
            if job is not None:
                self.fe.jobs.cancel(job.id)
        return StatementResult()

    async def _do_AlterJob(self, s, ctx):
        from galene.fe import jobs as jb

        props = jb.check_properties(s.properties)
        await self._blocking(self.fe.catalog.alter_job, s.name, props, props.get("offset"))
        return StatementResult()

    # --- pipelines: engine jobs that write tablets -------------------------------------
    async def _do_Update(self, s, ctx):
        return await self.pipelines.update(s, ctx)

    async def _do_Delete(self, s, ctx):
        return await self.pipelines.delete(s, ctx)

    async def _do_Truncate(self, s, ctx):
        return await self.pipelines.truncate(s, ctx)

    # --- INSERT ---------------------------------------------------------------------
    async def _do_Insert(self, s, ctx):
        """INSERT … SELECT and INSERT OVERWRITE are engine jobs (fe/pipelines.py); INSERT …
        VALUES goes to a BE as one stream load (fe/insert.py), group commit included."""
        if s.overwrite or s.query is not None:
            functions = TableFunctionViews(self.fe)  # INSERT … SELECT … FROM S3(…)
            await functions.prepare(s.query)
            async with functions.active():
                return await self.pipelines.insert(s, ctx)
        db_name, table = self._table(s.db, s.table, ctx)
        names = ins.target_columns(table, s.columns)
        variables = ctx.variables
        group_commit = str(variables.get("group_commit") or "off_mode").lower()
        if group_commit not in ins.GROUP_COMMIT_MODES:
            raise GaleneError("group_commit can only be [async_mode, sync_mode, off_mode]")
        assert s.values is not None
        ins.check_value_count(s.values, len(names))
        rows = ins.literal_values_table(s.values, names, [table.column(n).type for n in names])
        if rows is None:  # expressions among the values: Spark evaluates them
            out = await self._run_query(ins.values_select(s.values), ctx)
            rows = out.table.rename_columns(names)
        if rows.num_rows == 0:
            return StatementResult(affected_rows=0)
        load = ins.InsertLoad(
            db=db_name,
            table=table.name,
            user=ctx.user,
            columns=names,
            label=s.label or ins.new_insert_label(),
            group_commit=group_commit,
            strict=_truthy(variables.get("enable_insert_strict", True)),
            max_filter_ratio=float(variables.get("insert_max_filter_ratio", 1.0)),
            timeout_s=int(variables.get("insert_timeout", 14400) or 14400),
            partitions=s.partitions,
        )
        body = await asyncio.to_thread(ins.json_lines, rows)
        reply = await ins.send_load(self.fe, load, body)
        affected, info = ins.reply_outcome(reply, load)
        return StatementResult(affected_rows=affected, info=info)

    # --- users and privileges (rules: galene/fe/auth.py) ---------------------------------------
    def _need_global(self, ctx, pred, what: str) -> None:
        if not auth.has_global(self.fe.state, auth.session_identity(ctx), pred):
            raise auth.specific_denied(what)

    @staticmethod
    def _password_hash(s) -> str | None:
        if s.password is not None:
            return auth.native_hash(s.password)
        if s.hashed is not None:
            return auth.parse_hashed_password(s.hashed)
        return None

    @staticmethod
    def _check_user_name(name: str) -> None:
        if not name:
            raise AnalysisError("Does not support anonymous user")

    async def _do_CreateUser(self, s, ctx):
        self._check_user_name(s.user)
        if s.user == "root":
            raise AnalysisError("Can not create root user")
        password = self._password_hash(s)
        role = s.role
        if role is not None:
            if role.upper() == "SUPERUSER":  # Doris' old name for admin
                role = "admin"
            if role == "operator":
                raise AnalysisError(f"Can not granted user to role: {role}")
        self._need_global(ctx, auth.GRANT, "GRANT")
        account = UserAccount(
            name=s.user, host=s.host, password=password or "", comment=s.comment or "", roles=[role] if role else []
        )
        await self._blocking(self.fe.catalog.create_user, account, s.if_not_exists)
        return StatementResult()

    def _check_root_password_change(self, ctx, name: str) -> None:
        if name == "root" and ctx.user != "root":
            raise AnalysisError("Can not set password for root user, except root itself")

    async def _do_AlterUser(self, s, ctx):
        self._check_user_name(s.user)
        password = self._password_hash(s)
        if password is not None:
            self._check_root_password_change(ctx, s.user)
        self._need_global(ctx, auth.GRANT, "GRANT")
        await self._blocking(
            functools.partial(
                self.fe.catalog.alter_user, s.user, s.host, password_sha1=password, comment=s.comment,
                if_exists=s.if_exists,
            )
        )  # fmt: skip
        return StatementResult()

    async def _do_DropUser(self, s, ctx):
        self._check_user_name(s.user)
        if s.user in ("root", "admin"):
            raise AnalysisError("Can not drop system user")
        self._need_global(ctx, auth.GRANT, "DROP USER")
        await self._blocking(self.fe.catalog.drop_user, s.user, s.host, s.if_exists)
        return StatementResult()

    async def _do_SetPassword(self, s, ctx):
        me = auth.session_identity(ctx)
        target = me if s.user is None else auth.Identity(s.user, s.host)
        password = self._password_hash(s) or ""
        self._check_root_password_change(ctx, target.name)
        if target != me:
            self._need_global(ctx, auth.GRANT, "GRANT")
        await self._blocking(self.fe.catalog.set_password, target.name, target.host, password)
        return StatementResult()

    @staticmethod
    def _check_role_name(role: str, what: str, can_be_admin: bool = False) -> None:
        if role == "operator" or (not can_be_admin and role == "admin"):
            raise AnalysisError(f"{what}: {role}")

    async def _do_CreateRole(self, s, ctx):
        self._check_role_name(s.name, "Can not create role")
        self._need_global(ctx, auth.GRANT, "GRANT")
        await self._blocking(self.fe.catalog.create_role, s.name, s.comment, s.if_not_exists)
        return StatementResult()

    async def _do_DropRole(self, s, ctx):
        self._check_role_name(s.name, "Can not drop role")
        self._need_global(ctx, auth.GRANT, "GRANT")
        await self._blocking(self.fe.catalog.drop_role, s.name, s.if_exists)
        return StatementResult()

    async def _do_AlterRole(self, s, ctx):
        self._check_role_name(s.name, "Can not alter role")
        self._need_global(ctx, auth.GRANT, "GRANT")
        await self._blocking(self.fe.catalog.alter_role, s.name, s.comment)
        return StatementResult()

    async def _do_Grant(self, s, ctx):
        state = self.fe.state
        revoke = isinstance(s, Revoke)
        privileges = auth.parse_privileges(s.privileges)
        if not privileges:
            raise AnalysisError("No privileges or roles in grant statement.")
        kind = {"TABLE": "TABLE", "RESOURCE": "RESOURCE"}.get(s.on, "WORKLOAD_GROUP")
        if kind == "TABLE":
            target = auth.table_pattern(list(s.target))
            if auth.pattern_level(target) == "TABLE":
                ctl, db, tbl = target.split(".", 2)
                target = f"{ctl}.{db}.{auth.canonical_table(state, db, tbl)}"
        else:
            target = s.target
        if s.role is not None:
            self._check_role_name(s.role, "Can not revoke from role" if revoke else "Can not grant to role")
        else:
            self._check_user_name(s.user)
        auth.check_grant_rules(state, auth.session_identity(ctx), kind, target, privileges)
        user = account_key(s.user, s.host) if s.role is None else None
        change = self.fe.catalog.revoke_privileges if revoke else self.fe.catalog.grant_privileges
        await self._blocking(change, user, s.role, kind, target, privileges)
        return StatementResult()

    _do_Revoke = _do_Grant

    async def _do_GrantRole(self, s, ctx):
        for role in s.roles:
            self._check_role_name(role, "Can not grant role", can_be_admin=True)
        self._need_global(ctx, auth.GRANT, "GRANT")
        change = self.fe.catalog.revoke_roles if isinstance(s, RevokeRole) else self.fe.catalog.grant_roles
        await self._blocking(change, account_key(s.user, s.host), list(s.roles))
        return StatementResult()

    _do_RevokeRole = _do_GrantRole

    async def _do_ShowGrants(self, s, ctx):
        state = self.fe.state
        me = auth.session_identity(ctx)
        target = None if s.all else (auth.Identity(s.user, s.host) if s.user is not None else me)
        if target != me:
            self._need_global(ctx, auth.GRANT, "GRANT")
        if target is not None and target != me and target.key not in state.accounts:
            raise AnalysisError(f"User: {target} does not exist")
        accounts = list(state.accounts.values()) if target is None else [state.accounts.get(target.key)]
        rows = sorted((auth.grants_row(state, a) for a in accounts if a is not None), key=lambda r: r[0])
        return StatementResult(columns=_cols(*auth.GRANTS_COLUMNS), rows=rows)

    async def _do_ShowRoles(self, s, ctx):
        self._need_global(ctx, auth.GRANT, "GRANT")
        state = self.fe.state
        rows = [auth.roles_row(state, state.roles[name]) for name in sorted(state.roles)]
        return StatementResult(columns=_cols(*auth.ROLES_COLUMNS), rows=rows)


def _truthy(value) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "on")
    return bool(value)


def _json(d) -> str:
    import json

    return json.dumps(d, separators=(", ", ": "))


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.strip().strip("'\"").rpartition(":")
    if not sep or not port.isdigit():
        raise AnalysisError(f"Invalid host port format: {text}")
    return host, int(port)


def _tags(props: dict | None) -> dict[str, str]:
    return {k[len("tag.") :]: v for k, v in (props or {}).items() if k.startswith("tag.")}


def _like_filter(values: list[str], pattern: str | None) -> list[str]:
    return [v for v in values if like_match(v, pattern)]


def _reads_schema(expr, ctx: SessionContext) -> bool:
    """Whether a query names an information_schema table (cheap: no tree walk for most queries)."""
    if infoschema.is_schema(ctx.database):
        return True
    return any(infoschema.is_schema(t.db) for t in expr.find_all(exp.Table) if t.db)


def _sort_rows(rows: list[dict], order, names: list[str], what: str) -> list[dict]:
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
