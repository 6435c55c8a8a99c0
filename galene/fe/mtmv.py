"""Async materialized views: CREATE MATERIALIZED VIEW, their refreshes and the FE's scheduler.

An MV is a catalog Table with a `MaterializedView` record (`galene.catalog.model`): its query,
refresh rule (BUILD IMMEDIATE | DEFERRED, REFRESH COMPLETE ON MANUAL | ON SCHEDULE EVERY n unit
[STARTS '…'] | ON COMMIT) and the state of its last refresh. It is read like any table.

A refresh is one INSERT OVERWRITE of the whole MV through the pipelines' write path
(`galene.fe.pipelines.Pipelines.run`): one engine job, one transaction whose commit op replaces
every rowset of the MV atomically, so a reader sees the old rows or the new ones, never a mix.
`SetMvRefresh` ops record REFRESHING before and SUCCESS | FAIL after (with the base tables'
versions it read, for SyncWithBaseTables); they survive checkpoints and restarts like any op.

`MvScheduler` is one asyncio task of the FE: it runs the build of a BUILD IMMEDIATE MV, manual
REFRESH requests, ON SCHEDULE refreshes when due and ON COMMIT refreshes when a base table
changed, one refresh at a time (queries keep the engine's other cores). Like Doris it answers
CREATE and REFRESH at once; the refresh's progress shows in `mv_infos("database"="db")` and
SHOW CREATE MATERIALIZED VIEW. A refresh the FE died during is recorded as FAIL at start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from dataclasses import dataclass, field

import msgspec
import pyarrow as pa
from sqlglot import exp

from galene.catalog.model import Column, MaterializedView, Table
from galene.common.errors import AnalysisError, GaleneError, error_message
from galene.fe.mysql.boundary import StatementResult
from galene.fe.pipelines import Target, ctas_types
from galene.sql.ddl.create_table import table_from_create
from galene.sql.ddl.render import mv_refresh_info
from galene.sql.ddl.views import qualify_table_names
from galene.sql.dialect import parse_one
from galene.sql.statements.schema import CreateTable

log = logging.getLogger(__name__)

UNIT_SECONDS = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400, "WEEK": 7 * 86400}
# The scheduler looks again at least this often (a new MV, a clock that jumped).
MAX_SLEEP_S = 30.0

MV_INFOS_COLUMNS = [
    ("Id", pa.int64()),
    ("Name", pa.string()),
    ("JobName", pa.string()),
    ("State", pa.string()),
    ("SchemaChangeDetail", pa.string()),
    ("RefreshState", pa.string()),
    ("RefreshInfo", pa.string()),
    ("QuerySql", pa.string()),
    ("EnvInfo", pa.string()),
    ("MvProperties", pa.string()),
    ("MvPartitionInfo", pa.string()),
    ("SyncWithBaseTables", pa.bool_()),
    # Galene: the last refresh (Doris shows these in tasks("type"="mv")).
    ("LastRefreshStartTime", pa.string()),
    ("LastRefreshFinishTime", pa.string()),
    ("LastRefreshErrorMsg", pa.string()),
    ("RefreshCount", pa.int64()),
]


@dataclass
class RefreshContext:
    """The session a refresh runs in: the MV's database, its definer, default variables."""

    database: str
    user: str = ""
    variables: dict = field(default_factory=dict)


def parse_starts(text: str) -> float:
    """STARTS 'yyyy-MM-dd HH:mm:ss' (local time) as a timestamp."""
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return time.mktime(time.strptime(text.strip(), fmt))
        except ValueError:
            continue
    raise AnalysisError(f"Invalid STARTS time: {text}; expected 'yyyy-MM-dd HH:mm:ss'")


def schedule_period(mv: MaterializedView) -> float:
    return mv.interval * UNIT_SECONDS.get(mv.unit, 60)


def next_scheduled(mv: MaterializedView, created: float) -> float:
    """When an ON SCHEDULE MV refreshes next: the first period boundary (from STARTS, else from
    its creation) after its last refresh began."""
    period = schedule_period(mv)
    base = parse_starts(mv.starts) if mv.starts else created
    if not mv.last_refresh_start:
        return base if mv.starts else base + period
    if mv.last_refresh_start < base:
        return base
    return base + (int((mv.last_refresh_start - base) // period) + 1) * period


_PARTITION_INFO = (
    "MTMVPartitionInfo{partitionType=SELF_MANAGE, relatedTable=null, relatedCol='null', partitionCol='null'}"
)


def _fmt(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else ""


class MvScheduler:
    """The FE's materialized-view refresher (see the module docstring)."""

    def __init__(self, fe):
        self.fe = fe
        self._task: asyncio.Task | None = None
        self._wake: asyncio.Event | None = None
        self._requested: list[int] = []  # table ids of REFRESH statements, in order
        self._commit_seen: dict[int, dict[str, int]] = {}  # ON COMMIT: base versions last tried
        self.running: int | None = None  # the MV being refreshed now

    # --- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        self._wake = asyncio.Event()
        self._task = asyncio.create_task(self._loop(), name="fe-mtmv-scheduler")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def poke(self, table_id: int | None = None) -> None:
        if table_id is not None and table_id not in self._requested:
            self._requested.append(table_id)
        if self._wake is not None:
            self._wake.set()

    # --- statements -------------------------------------------------------------------------
    async def create(self, s, ctx) -> StatementResult:
        """CREATE MATERIALIZED VIEW: the table (columns from the query's result, as CTAS) with
        its MV record, in one CreateTable op; BUILD IMMEDIATE then refreshes it at once."""
        ex = self.fe.executor
        db_name = ex.database_of(s.db, ctx)
        catalog = self.fe.catalog
        db = catalog.db(db_name)
        if s.name in db.tables or s.name in db.views:
            if s.if_not_exists:
                return StatementResult()
            raise AnalysisError(f"Table '{s.name}' already exists")
        if s.trigger == "SCHEDULE":
            if s.interval <= 0:
                raise AnalysisError("interval must be greater than 0")
            if s.unit not in UNIT_SECONDS:
                raise AnalysisError(
                    f"interval time unit can not be {s.unit}; use one of {', '.join(UNIT_SECONDS)}"
                )
            if s.starts and parse_starts(s.starts) < time.time():
                raise AnalysisError("starts time must be greater than current time")
        spark_sql, views = ex.pipelines.plan_query(s.query, ctx)
        await self.fe.wait_engine()
        schema = await asyncio.to_thread(ex.pipelines.query_schema, spark_sql, views)
        names = [n for n, _ in s.columns] or [n for n, _ in schema]
        if len(names) != len(schema):
            raise AnalysisError("The number of columns in the column list and the query do not match")
        comments = dict(s.columns)
        columns = [
            Column(name=n, type=t, comment=comments.get(n, ""))
            for n, t in zip(names, ctas_types(s.query, schema, ex, ctx), strict=True)
        ]
        create = exp.Create(
            this=exp.Table(this=exp.to_identifier(s.name)),
            kind="TABLE",
            properties=exp.Properties(expressions=list(s.expr.args.get("properties") or [])),
        )
        stmt = CreateTable(db=s.db, name=s.name, if_not_exists=s.if_not_exists, expr=create)
        mv = MaterializedView(
            query_sql=qualify_table_names(s.query_sql, ctx.database or db_name),
            build=s.build,
            method=s.method,
            trigger=s.trigger,
            interval=s.interval,
            unit=s.unit,
            starts=s.starts,
            column_names=[n for n, _ in s.columns],
            definer=ctx.user,
        )

        def build(db_id, alloc, now):
            table = table_from_create(stmt, db_id=db_id, alloc_id=alloc, now=now, columns=columns)
            return msgspec.structs.replace(table, mtmv=mv)

        await asyncio.to_thread(catalog.create_table, db_name, build, s.if_not_exists)
        self.poke()  # BUILD IMMEDIATE builds now; a schedule starts counting
        return StatementResult()

    async def refresh_statement(self, s, ctx) -> StatementResult:
        """REFRESH MATERIALIZED VIEW mv [COMPLETE | AUTO]: queued; answered at once (Doris too)."""
        db_name, table = self.fe.executor.table_of(s.db, s.name, ctx)
        if table.mtmv is None:
            raise AnalysisError(f"'{db_name}.{s.name}' is not MATERIALIZED VIEW")
        self.poke(table.id)
        return StatementResult()

    # --- the scheduler ----------------------------------------------------------------------
    def _due_at(self, table: Table, now: float) -> float | None:
        mv = table.mtmv
        if mv is None or mv.refresh_state == "REFRESHING":
            return None
        if mv.refresh_state == "INIT" and mv.build == "IMMEDIATE" and not mv.last_refresh_start:
            return now
        if mv.trigger == "SCHEDULE" and mv.interval > 0:
            return next_scheduled(mv, table.create_time)
        if mv.trigger == "COMMIT" and mv.refresh_count:
            versions = self._base_versions_now(mv)
            if versions != mv.base_versions and versions != self._commit_seen.get(table.id):
                return now
        return None

    def _base_versions_now(self, mv: MaterializedView) -> dict[str, int]:
        tables = self.fe.state.tables
        return {
            tid: (tables[int(tid)].visible_version if int(tid) in tables else -1) for tid in mv.base_versions
        }

    def in_sync(self, table: Table) -> bool:
        mv = table.mtmv
        return bool(mv and mv.refresh_state == "SUCCESS" and self._base_versions_now(mv) == mv.base_versions)

    async def _loop(self) -> None:
        await self._recover()
        while True:
            try:
                await self._round()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("materialized view scheduler round failed")
                await asyncio.sleep(1)

    async def _recover(self) -> None:
        """A refresh the FE died during never committed (its txn is aborted): record it failed."""
        for table in list(self.fe.state.tables.values()):
            if table.mtmv is not None and table.mtmv.refresh_state == "REFRESHING":
                await asyncio.to_thread(
                    self.fe.catalog.set_mv_refresh,
                    table.id,
                    "FAIL",
                    error="the FE restarted during the refresh",
                )

    async def _round(self) -> None:
        now = time.time()
        due: list[int] = []
        wake_at = now + MAX_SLEEP_S
        while self._requested:
            tid = self._requested.pop(0)
            if tid not in due:
                due.append(tid)
        for table in list(self.fe.state.tables.values()):
            when = self._due_at(table, now)
            if when is None:
                continue
            if when <= now:
                if table.id not in due:
                    due.append(table.id)
            else:
                wake_at = min(wake_at, when)
        for tid in due:
            await self.refresh(tid)
        if due:
            return
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), timeout=max(0.05, wake_at - time.time()))
        except TimeoutError:
            pass

    # --- one refresh ------------------------------------------------------------------------
    async def refresh(self, table_id: int) -> bool:
        """Refresh one MV now: INSERT OVERWRITE of its query, one transaction. True on success."""
        state = self.fe.state
        table = state.tables.get(table_id)
        if table is None or table.mtmv is None or table.db_id not in state.databases:
            return False
        mv = table.mtmv
        db_name = state.databases[table.db_id].name
        catalog = self.fe.catalog
        pipelines = self.fe.executor.pipelines
        if not await asyncio.to_thread(catalog.set_mv_refresh, table_id, "REFRESHING"):
            return False
        self.running = table_id
        try:
            ctx = RefreshContext(database=db_name, user=mv.definer)
            query = parse_one(mv.query_sql)
            if not isinstance(query, exp.Query):
                raise GaleneError(f"the materialized view's query is not a query: {mv.query_sql[:200]}")
            spark_sql, views = pipelines.plan_query(query, ctx)
            if mv.trigger == "COMMIT":
                self._commit_seen[table_id] = {str(t.id): v for t, v in views.values()}
            current = state.tables.get(table_id, table)
            target = Target(
                db_name=db_name,
                table=current,
                columns=[c.name for c in current.visible_columns()],
                label=f"mtmv_{table_id}_{uuid.uuid4().hex}",
                replace_partitions=[p.id for p in current.partitions],
                strict=True,
                max_filter_ratio=0.0,
                timeout_s=14400,
                user=mv.definer,
            )
            outcome = await pipelines.run(target, spark_sql, views, ctx)
        except asyncio.CancelledError:
            await asyncio.to_thread(
                catalog.set_mv_refresh, table_id, "FAIL", error="cancelled (the FE stopped)"
            )
            raise
        except Exception as e:  # noqa: BLE001 - every failure is the refresh's FAIL state
            log.warning("refresh of materialized view %s.%s failed: %s", db_name, table.name, e)
            await asyncio.to_thread(catalog.set_mv_refresh, table_id, "FAIL", error=error_message(e))
            return False
        finally:
            self.running = None
        base = {str(t.id): v for t, v in views.values()}
        await asyncio.to_thread(
            catalog.set_mv_refresh, table_id, "SUCCESS", txn_id=outcome.txn_id, base_versions=base
        )
        log.info(
            "materialized view %s.%s refreshed: %d rows (%s)",
            db_name,
            table.name,
            outcome.loaded,
            outcome.label,
        )
        return True

    # --- mv_infos("database"="db") ------------------------------------------------------------
    def mv_infos_table(self, db_name: str) -> pa.Table:
        """Doris' mv_infos() rows for the MVs of one database (and Galene's refresh columns)."""
        db = self.fe.catalog.db(db_name)
        rows = []
        for table in sorted(self.fe.state.tables.values(), key=lambda t: t.id):
            mv = table.mtmv
            if mv is None or table.db_id != db.id:
                continue
            rows.append(
                [
                    table.id, table.name, f"inner_mtmv_{table.id}", mv.state, "", mv.refresh_state,
                    mv_refresh_info(mv), mv.query_sql, f"EnvInfo{{ctlId='0', dbId='{db.id}'}}",
                    "{" + ", ".join(f"{k}={v}" for k, v in table.properties.items()) + "}",
                    _PARTITION_INFO,
                    self.in_sync(table), _fmt(mv.last_refresh_start), _fmt(mv.last_refresh_finish),
                    mv.last_refresh_error, mv.refresh_count,
                ]
            )  # fmt: skip
        columns = list(zip(*rows, strict=True)) if rows else [[] for _ in MV_INFOS_COLUMNS]
        return pa.table(
            [pa.array(list(col), type=t) for col, (_, t) in zip(columns, MV_INFOS_COLUMNS, strict=True)],
            names=[n for n, _ in MV_INFOS_COLUMNS],
        )
