"""Queries on the engine: a Doris query translated to Spark SQL with every table bound to a
snapshot of its rowsets at the version visible when it started (views expanded, information_schema
and table functions as small Arrow-backed views), run on the FE's long-lived engine session in a
worker thread so the MySQL endpoint stays responsive. A client's result is streamed (a reader
thread per result feeds a `ResultStream`, bounded by `query_timeout`, cancelled by KILL); the
result columns are typed as Doris types them by the plan. EXPLAIN answers the engine's plan; a
query over information_schema alone is answered on the FE. `QueryStatements` is a part of
`galene.fe.executor.SqlExecutor`."""

from __future__ import annotations

import asyncio
import itertools

from sqlglot import exp

from galene.catalog.model import Table, snapshot
from galene.common.errors import GaleneError
from galene.common.types import from_spark_type_name
from galene.fe import authorize
from galene.fe.executor_base import ExecutorBase, cols
from galene.fe.mysql.boundary import ResultColumn, SessionContext, StatementResult
from galene.fe.pipelines import view_definition
from galene.fe.result_stream import ResultStream, pump
from galene.fe.table_functions import TableFunctionViews
from galene.sql import source_types
from galene.sql.information_schema import tables as schema_tables
from galene.sql.information_schema.context import SCHEMA_NAME, is_schema
from galene.sql.information_schema.query import run_local
from galene.sql.statements.dml import Query
from galene.sql.statements.parse import parse_statement
from galene.sql.translate import to_spark_sql

_VIEW_SEQ = itertools.count(1)


def _query_timeout(timeout: int) -> GaleneError:
    return GaleneError(
        f"[TIMEOUT]Query timeout: the query ran longer than query_timeout ({timeout} s) and was cancelled"
    )


class QueryStatements(ExecutorBase):
    async def _do_Query(self, s, ctx):
        # A query over information_schema alone is answered on the FE, in milliseconds.
        local = run_local(s.expr, self.meta_context(ctx)) if _reads_schema(s.expr, ctx) else None
        if local is not None:
            return StatementResult(columns=[ResultColumn(n, t) for n, t in local.columns], rows=local.rows)
        stream = await self.run_query(s.expr, ctx, stream=True)
        return StatementResult(columns=self.result_columns(s.expr, stream.head.columns, ctx), rows=stream)

    async def describe(self, sql: str, ctx: SessionContext) -> list[ResultColumn] | None:
        """A query's result columns without running it (COM_STMT_PREPARE): the engine analyses
        the statement (its parameters are NULLs here) and the columns are typed as a run of it
        types them. None for a statement that is no query."""
        stmt = parse_statement(sql)
        if not isinstance(stmt, Query):
            return None
        authorize.authorize(self.fe.state, ctx, stmt)
        if _reads_schema(stmt.expr, ctx):
            local = run_local(stmt.expr, self.meta_context(ctx))
            return None if local is None else [ResultColumn(n, t) for n, t in local.columns]
        spark_sql, views = self.pipelines.plan_query(stmt.expr, ctx)
        await self.fe.wait_engine()
        schema = await self.blocking(self.pipelines.query_schema, spark_sql, views)
        return self.result_columns(stmt.expr, schema, ctx)

    def result_columns(self, expr, engine_columns: list[tuple[str, str]], ctx) -> list[ResultColumn]:
        """A query's result columns from the engine's (name, type): a column read unchanged from
        a table keeps that column's Doris type (LARGEINT, DATETIME(p), VARCHAR(n)), as Doris types
        a result by its plan; any other keeps the engine's type."""
        engine_types = [from_spark_type_name(t) for _, t in engine_columns]

        def lookup(db, name):
            return self.source_columns(ctx.database, db, name) if (db or ctx.database) else None

        types = source_types.refine(engine_types, source_types.source_column_types(expr, lookup))
        return [ResultColumn(name=n, type=t) for (n, _), t in zip(engine_columns, types, strict=True)]

    async def run_query(self, expr, ctx, explain: str | None = None, stream: bool = False):
        """Run a Doris query on Spark over the table versions visible now; returns QueryOutput,
        or with `stream` a started ResultStream (a client's result, read as it is written)."""
        views: dict[str, tuple[Table, int]] = {}
        bound: dict[tuple[str, str], str] = {}

        def resolve(db: str | None, name: str) -> str:
            db_name = self.database_of(db, ctx)
            if is_schema(db_name):  # a small Arrow-backed view for this statement
                key = f"{SCHEMA_NAME}.{name.lower()}"
                return functions.add_table(
                    key, lambda: schema_tables.arrow_table(name, self.meta_context(ctx))
                )
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
            spark_sql = to_spark_sql(
                expr, resolve, lambda db, name: self.source_columns(ctx.database, db, name)
            )
        if explain is not None:  # EXPLAIN: the engine's plan of the same statement
            spark_sql = f"EXPLAIN {explain} {spark_sql}"
        await self.fe.wait_engine()
        # (the engine's modules load PySpark: imported by the first query, not at the FE's start)
        from galene.engine import query as engine_query

        timeout = int(ctx.variables.get("query_timeout", 900) or 900)
        tag = f"galene-query-{next(_VIEW_SEQ)}"
        storage_uri = self.fe.cfg.storage_uri
        if stream:
            return await self.start_stream(functions, spark_sql, views, tag, timeout)
        job = asyncio.ensure_future(
            self.blocking(
                functions.run, engine_query.run_query, self.fe.engine, spark_sql, views, storage_uri, tag
            )
        )
        try:
            return await asyncio.wait_for(asyncio.shield(job), timeout=timeout)
        except (TimeoutError, asyncio.CancelledError) as e:
            # The engine keeps running a job nobody waits for: cancel it (query_timeout, KILL).
            await asyncio.to_thread(engine_query.interrupt_jobs, self.fe.engine, tag)
            if isinstance(e, TimeoutError):
                raise _query_timeout(timeout) from None
            raise

    async def start_stream(self, functions, spark_sql: str, views, tag: str, timeout: int) -> ResultStream:
        """The query's reader on its own thread (`stream_pool`), feeding a ResultStream; returns
        once the engine has the first batch. `query_timeout` bounds the whole stream."""
        from galene.engine import query as engine_query  # (PySpark: as in run_query)

        loop = asyncio.get_running_loop()
        engine = self.fe.engine
        result = ResultStream(
            loop,
            deadline=loop.time() + timeout,
            timeout_error=lambda: _query_timeout(timeout),
            cancel=lambda: engine_query.interrupt_jobs(engine, tag),
        )
        reader = engine_query.stream_query(engine, spark_sql, views, self.fe.cfg.storage_uri, tag)

        def read() -> None:
            try:
                functions.run(pump, result, reader)
            except BaseException as e:  # noqa: BLE001 - a table function's view failed: the query's error
                result.finish(e)

        loop.run_in_executor(self.stream_pool, read)
        await result.start()  # KILL, timeout and errors close the stream (cancelling the job)
        return result

    async def _do_Explain(self, s, ctx):
        """EXPLAIN [VERBOSE] <query>: the engine's plan (Spark's `EXPLAIN [EXTENDED]` of the
        translated query over the same snapshot views), one row per line."""
        verbose = bool({"VERBOSE", "EXTENDED", "ALL"} & set(s.level.split()))
        out = await self.run_query(s.query, ctx, explain="EXTENDED" if verbose else "")
        text = "\n".join(str(v) for v in out.table.column(0).to_pylist()) if out.table.num_columns else ""
        rows = [(line,) for line in text.rstrip().splitlines()]
        return StatementResult(columns=cols("Explain String(Nereids Planner)", types={}), rows=rows)


def _reads_schema(expr, ctx: SessionContext) -> bool:
    """Whether a query names an information_schema table (cheap: no tree walk for most queries)."""
    if is_schema(ctx.database):
        return True
    return any(is_schema(t.db) for t in expr.find_all(exp.Table) if t.db)
