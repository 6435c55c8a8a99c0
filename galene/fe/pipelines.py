"""Statements that move data between tables, each one engine job and one transaction.

INSERT … SELECT, INSERT OVERWRITE, CREATE TABLE … AS SELECT, CREATE TABLE … LIKE, UPDATE,
DELETE and TRUNCATE. The FE plans the statement as a Doris query (translated to Spark SQL over
table snapshots bound as views), begins a transaction under the statement's label, and hands
the DataFrame to `galene.engine.write.write_frame`, whose tasks convert, route and write the
tablets; only the list of files comes back, and the FE commits it as one journal op (or aborts
the transaction and deletes the files, on any failure or cancellation). No data row passes
through the FE.

Doris' insert rules apply: `enable_insert_strict` (any filtered row fails the statement),
`insert_max_filter_ratio` otherwise, NOT NULL and partition ranges; the error texts and the
OK packet (`affected rows` + `{'label':…, 'status':'VISIBLE', 'txnId':…}`) are Doris'.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlglot import exp

from galene.catalog.model import Column, Partition, Table, snapshot
from galene.common.errors import AnalysisError, GaleneError, LoadError
from galene.common.types import ColumnType, from_spark_type_name
from galene.engine import failures
from galene.fe import insert as ins
from galene.fe.mysql.boundary import StatementResult
from galene.sql import source_types
from galene.sql.ddl.create_table import table_from_create
from galene.sql.statements.dml import Delete, Insert, Truncate, Update
from galene.sql.statements.schema import CreateTable
from galene.sql.translate import ViewDefinition, to_spark_sql

log = logging.getLogger(__name__)

_VIEW_SEQ = itertools.count(1)
# Doris: CTAS string columns become VARCHAR(65533) (a STRING cannot be a key column).
CTAS_VARCHAR = ColumnType(name="VARCHAR", length=65533)
CTAS_DATETIME = ColumnType(name="DATETIME", precision=6)


@dataclass
class Target:
    db_name: str
    table: Table
    columns: list[str]  # target column per frame column
    label: str
    partitions: list[str] | None = None  # PARTITION (p…): other rows are filtered
    replace_partitions: list[int] | None = None  # OVERWRITE / rewriting DELETE
    delete_sign: bool = False
    strict: bool = True
    max_filter_ratio: float = 0.0
    timeout_s: int = 14400
    load_type: str = "INSERT"  # SHOW LOAD's Type
    user: str = ""
    # A streaming job's batch (galene/fe/jobs.py): builds the job's step from the write's
    # result; the commit op carries it, so offset, statistics and rows commit together.
    job_progress: Callable[[Any], Any] | None = None


@dataclass
class Outcome:
    loaded: int
    txn_id: int
    label: str


class Pipelines:
    """The pipeline statements of one FE (`SqlExecutor` delegates to it)."""

    def __init__(self, executor):
        self.executor = executor
        self.fe = executor.fe

    # --- planning -------------------------------------------------------------------
    def plan_query(
        self, expr: exp.Expr, ctx, snapshots: dict | None = None, view_overrides: dict | None = None
    ) -> tuple[str, dict]:
        """Spark SQL for a Doris query, and the view name -> (table, version) it reads.

        `snapshots` overrides what a table name reads: (db, name) -> Table (e.g. a table
        restricted to some partitions' rowsets); `view_overrides` (db, name) -> ViewDefinition
        a view's definition (CREATE/ALTER VIEW checks the one it is about to store)."""
        views: dict[str, tuple[Table, int]] = {}
        bound: dict[tuple[str, str], str] = {}

        def resolve(db: str | None, name: str) -> str | ViewDefinition:
            db_name = self.executor.database_of(db, ctx)
            key = (db_name, name)
            if key in (view_overrides or {}):
                return view_overrides[key]
            if key not in bound:
                view = None if key in (snapshots or {}) else self.fe.catalog.view(db_name, name)
                if view is not None:  # expanded by the translator, its names resolved here too
                    return view_definition(view, db_name)
                table = (snapshots or {}).get(key) or snapshot(self.fe.catalog.table(db_name, name))
                view = f"__galene_w{table.id}_v{table.visible_version}_{next(_VIEW_SEQ)}"
                views[view] = (table, table.visible_version)
                bound[key] = view
            return bound[key]

        columns = lambda db, name: self.executor.source_columns(ctx.database, db, name)
        return to_spark_sql(expr, resolve, columns), views

    def _session_rules(self, ctx) -> tuple[bool, float, int]:
        return ins.session_rules(ctx.variables)

    # --- the write ------------------------------------------------------------------
    async def run(self, target: Target, spark_sql: str, views: dict, ctx=None) -> Outcome:
        """Begin the txn, run the engine job, check the insert rules, commit (or undo)."""
        from galene.engine import write as w

        fe = self.fe
        if ctx is not None and not target.user:
            target.user = ctx.user
        await fe.wait_engine()
        try:
            txn, table = await asyncio.to_thread(
                functools.partial(
                    fe.catalog.txns.begin_txn,
                    target.db_name,
                    target.table.name,
                    target.label,
                    timeout_s=target.timeout_s,
                    load_type=target.load_type,
                    user=target.user,
                )
            )
        except LoadError as e:
            raise GaleneError(e.message) from None
        rowset_ids = w.new_rowset_ids(table)
        fe.running_rowset_ids.update(rowset_ids.values())
        tag = f"galene-txn-{txn.id}"
        storage_uri = fe.cfg.storage_uri
        job = asyncio.ensure_future(
            asyncio.to_thread(self._write_job, table, target, spark_sql, views, rowset_ids, tag)
        )
        try:
            try:
                result = await asyncio.wait_for(asyncio.shield(job), timeout=target.timeout_s)
            except (TimeoutError, asyncio.CancelledError) as e:
                # The engine job keeps running until interrupted: stop it and wait for it, so
                # its files are gone before the statement answers.
                await asyncio.to_thread(self._interrupt, tag)
                # Its outcome is read even if this wait is cut short (the FE stopping).
                job.add_done_callback(lambda f: f.cancelled() or f.exception())
                try:
                    await asyncio.wait_for(asyncio.shield(job), timeout=60)
                except BaseException:  # the job's own error is not the point now
                    log.info("the interrupted job of %s ended", tag, exc_info=True)
                if isinstance(e, TimeoutError):
                    raise GaleneError(
                        f"[TIMEOUT]insert timeout after {target.timeout_s} s (insert_timeout); "
                        "the statement was cancelled"
                    ) from None
                raise
            self._check_rules(result, target)
            await asyncio.to_thread(
                fe.catalog.txns.commit_txn,
                txn.id,
                result.rowsets,
                num_rows=result.num_loaded,
                replace_partitions=target.replace_partitions,
                job_progress=target.job_progress(result) if target.job_progress else None,
            )
        except BaseException as e:
            reason = getattr(e, "message", None) or f"{type(e).__name__}: {e}"
            await asyncio.to_thread(self._undo, txn.id, table, rowset_ids, storage_uri, reason)
            if isinstance(e, GaleneError) or not isinstance(e, Exception):
                raise
            raise failures.job_failure(e) from None
        finally:
            fe.running_rowset_ids.difference_update(rowset_ids.values())
        return Outcome(loaded=result.num_loaded, txn_id=txn.id, label=target.label)

    def _write_job(self, table: Table, target: Target, spark_sql: str, views: dict, rowset_ids, tag: str):
        from galene.engine import write as w
        from galene.engine.scan import table_frame

        engine = self.fe.engine
        spark = engine.spark()
        registered: list[str] = []
        storage_uri = self.fe.cfg.storage_uri
        try:
            for name, (t, version) in views.items():
                table_frame(spark, t, storage_uri, version).createOrReplaceTempView(name)
                registered.append(name)
            df = spark.sql(spark_sql)
            if len(df.columns) != len(target.columns):
                raise AnalysisError("insert into cols should be corresponding to the query output")
            # Positional names the tasks can rely on (a SELECT may repeat or omit names).
            df = df.toDF(*[f"c{i}" for i in range(len(df.columns))])
            return w.write_frame(
                engine,
                df,
                table,
                storage_uri,
                columns=target.columns,
                strict=target.strict,
                partitions=target.partitions,
                delete_sign=target.delete_sign,
                shuffle_partitions=max(2, 2 * int(self.fe.cfg.spark_shuffle_partitions)),
                job_tag=tag,
                rowset_ids=rowset_ids,
            )
        finally:
            for name in registered:
                try:
                    spark.catalog.dropTempView(name)
                except Exception:
                    log.debug("dropping view %s failed", name, exc_info=True)

    def _interrupt(self, tag: str) -> None:
        from galene.engine import write as w

        try:
            w.interrupt(self.fe.engine.spark(), tag)
        except Exception:
            log.warning("could not interrupt %s", tag, exc_info=True)

    def _undo(self, txn_id: int, table: Table, rowset_ids, storage_uri: str, reason: str) -> None:
        from galene.engine import write as w

        try:
            self.fe.catalog.txns.abort_txn(txn_id, reason)
        except Exception:
            log.warning("abort of txn %s failed", txn_id, exc_info=True)
        try:
            w.discard_statement_files(storage_uri, table, rowset_ids, keep=set())
        except Exception:
            log.warning("removing the files of txn %s failed", txn_id, exc_info=True)

    @staticmethod
    def _check_rules(result, target: Target) -> None:
        if not result.num_filtered:
            return
        first = f" first_error_msg: {result.errors[0][1]}" if result.errors else ""
        if target.strict:
            raise GaleneError(f"Insert has filtered data in strict mode.{first}")
        selected = result.num_total - result.num_unselected
        if selected > 0 and result.num_filtered / selected > target.max_filter_ratio:
            raise GaleneError(
                f"Insert has too many filtered data {result.num_filtered}/{selected} "
                f"insert_max_filter_ratio is {target.max_filter_ratio}.{first}"
            )

    @staticmethod
    def ok(outcome: Outcome, affected: int | None = None) -> StatementResult:
        return StatementResult(
            affected_rows=outcome.loaded if affected is None else affected,
            info=ins.info_text(outcome.label, "VISIBLE", outcome.txn_id),
        )

    # --- INSERT … SELECT / OVERWRITE ------------------------------------------------
    async def insert(self, s: Insert, ctx) -> StatementResult:
        db_name, table = self.executor.table_of(s.db, s.table, ctx)
        names = ins.target_columns(table, s.columns)
        if s.values is not None:
            ins.check_value_count(s.values, len(names))
            query = ins.values_select(s.values)
        else:
            query = s.query
        strict, ratio, timeout = self._session_rules(ctx)
        replace = None
        if s.overwrite:
            replace = _partition_ids(table, s.partitions) if s.partitions else [p.id for p in table.partitions]
        elif s.partitions:
            _partition_ids(table, s.partitions)  # unknown names fail before anything runs
        target = Target(
            db_name=db_name,
            table=table,
            columns=names,
            label=s.label or ins.new_insert_label(),
            partitions=s.partitions,
            replace_partitions=replace,
            strict=strict,
            max_filter_ratio=ratio,
            timeout_s=timeout,
        )
        spark_sql, views = self.plan_query(query, ctx)
        return self.ok(await self.run(target, spark_sql, views, ctx))

    # --- CREATE TABLE … AS SELECT / LIKE ----------------------------------------------
    async def create_table_as_select(self, s: CreateTable, ctx) -> StatementResult:
        db_name = self.executor.database_of(s.db, ctx)
        if self.fe.catalog.has_db(db_name) and _table_exists(self.fe, db_name, s.name):
            if s.if_not_exists:
                return StatementResult()
            raise GaleneError(f"Table '{s.name}' already exists", 1050)
        spark_sql, views = self.plan_query(s.query, ctx)
        await self.fe.wait_engine()
        schema = await asyncio.to_thread(self.query_schema, spark_sql, views)
        types = ctas_types(s.query, schema, self.executor, ctx)
        columns = [Column(name=name, type=t) for (name, _), t in zip(schema, types, strict=True)]

        def build(db_id, alloc, now):
            return table_from_create(s, db_id=db_id, alloc_id=alloc, now=now, columns=columns)

        created = await asyncio.to_thread(self.fe.catalog.create_table, db_name, build, s.if_not_exists)
        if created is None:
            return StatementResult()
        strict, ratio, timeout = self._session_rules(ctx)
        target = Target(
            db_name=db_name,
            table=created,
            columns=[c.name for c in created.visible_columns()],
            label=ins.new_insert_label(),
            strict=strict,
            max_filter_ratio=ratio,
            timeout_s=timeout,
        )
        try:
            outcome = await self.run(target, spark_sql, views, ctx)
        except BaseException:
            # Doris drops the table a failed CTAS created.
            try:
                await asyncio.to_thread(self.fe.catalog.drop_table, db_name, s.name, True)
            except Exception:
                log.warning("dropping %s after a failed CTAS failed", s.name, exc_info=True)
            raise
        return self.ok(outcome)

    def query_schema(self, spark_sql: str, views: dict) -> list[tuple[str, str]]:
        from galene.engine.scan import table_frame

        spark = self.fe.engine.spark()
        registered = []
        try:
            for name, (t, version) in views.items():
                table_frame(spark, t, self.fe.cfg.storage_uri, version).createOrReplaceTempView(name)
                registered.append(name)
            fields = spark.sql(spark_sql).schema.fields
            return [(f.name, f.dataType.simpleString()) for f in fields]
        finally:
            for name in registered:
                try:
                    spark.catalog.dropTempView(name)
                except Exception:
                    log.debug("dropping view %s failed", name, exc_info=True)

    async def create_table_like(self, s: CreateTable, ctx) -> StatementResult:
        db_name = self.executor.database_of(s.db, ctx)
        src_db, src_name = s.like
        _, source = self.executor.table_of(src_db, src_name, ctx)

        def build(db_id, alloc, now):
            return copy_table_definition(source, s.name, db_id, alloc, now)

        await asyncio.to_thread(self.fe.catalog.create_table, db_name, build, s.if_not_exists)
        return StatementResult()

    # --- UPDATE ---------------------------------------------------------------------
    async def update(self, s: Update, ctx) -> StatementResult:
        db_name, table = self.executor.table_of(s.db, s.table, ctx)
        if table.keys_type != "UNIQUE_KEYS":
            raise GaleneError("Only unique table could be updated.")
        visible = table.visible_columns()
        assigned: dict[str, exp.Expr] = {}
        for name, expr in s.assignments:
            col = table.column(name)
            if col is None or col.hidden:
                raise AnalysisError(f"Unknown column '{name}' in '{table.name}'")
            if col.is_key or col.name in table.key_columns:
                raise AnalysisError(f"Only value columns of unique table could be updated, column: {col.name}")
            assigned[col.name] = expr
        qualifier = s.alias or s.table
        projections = [
            (assigned[c.name].copy() if c.name in assigned else exp.column(c.name, table=qualifier)).as_(c.name)
            for c in visible
        ]
        source = exp.Table(this=exp.to_identifier(s.table), db=exp.to_identifier(s.db) if s.db else None)
        if s.alias:
            source.set("alias", exp.TableAlias(this=exp.to_identifier(s.alias)))
        query = exp.select(*projections).from_(source)
        for extra in s.sources:  # UPDATE … FROM: the source tables, cross-joined, filtered by WHERE
            query = query.join(extra.copy(), join_type="CROSS")
        if s.where is not None:
            query = query.where(s.where.copy())
        strict, ratio, timeout = self._session_rules(ctx)
        target = Target(
            db_name=db_name,
            table=table,
            columns=[c.name for c in visible],
            label=ins.new_insert_label(),
            strict=strict,
            max_filter_ratio=ratio,
            timeout_s=timeout,
        )
        spark_sql, views = self.plan_query(query, ctx)
        return self.ok(await self.run(target, spark_sql, views, ctx))

    # --- DELETE ---------------------------------------------------------------------
    async def delete(self, s: Delete, ctx) -> StatementResult:
        db_name, table = self.executor.table_of(s.db, s.table, ctx)
        if s.where is None:
            raise AnalysisError("Where clause is required for DELETE; use TRUNCATE TABLE to remove all rows")
        part_ids = _partition_ids(table, s.partitions) if s.partitions else None
        qualifier = s.alias or s.table
        source = exp.Table(this=exp.to_identifier(s.table), db=exp.to_identifier(s.db) if s.db else None)
        if s.alias:
            source.set("alias", exp.TableAlias(this=exp.to_identifier(s.alias)))
        visible = table.visible_columns()
        strict, ratio, timeout = self._session_rules(ctx)
        snapshots = None
        if part_ids is not None:
            # Rows of other partitions are out of the statement's reach: read only these.
            kept = set(part_ids)
            snapshots = {
                (db_name, table.name): msgspec.structs.replace(
                    table, rowsets=[r for r in table.rowsets if r.partition_id in kept]
                )
            }
        if table.keys_type == "UNIQUE_KEYS":
            # The matched rows again, with the delete sign: the newer version hides them.
            query = exp.select(*[exp.column(c.name, table=qualifier).as_(c.name) for c in visible]).from_(source)
            for extra in s.using:
                query = query.join(extra.copy(), join_type="CROSS")
            query = query.where(s.where.copy())
            target = Target(
                db_name=db_name,
                table=table,
                columns=[c.name for c in visible],
                label=_delete_label(),
                load_type="DELETE",
                delete_sign=True,
                strict=strict,
                max_filter_ratio=ratio,
                timeout_s=timeout,
            )
            spark_sql, views = self.plan_query(query, ctx, snapshots)
            return self.ok(await self.run(target, spark_sql, views, ctx))
        if s.using:
            raise AnalysisError("DELETE … USING is only supported on UNIQUE KEY tables")
        if table.keys_type == "AGG_KEYS":
            keys = {k.lower() for k in table.key_columns}
            for column in s.where.find_all(exp.Column):
                if column.name.lower() not in keys:
                    raise AnalysisError(
                        f"delete predicate on value column only supports Unique table with merge-on-write "
                        f"enabled and Duplicate table, but Table[{table.name}] is an aggregate table."
                    )
        # DUPLICATE / AGGREGATE: the partitions are rewritten without the matched rows and
        # swapped in atomically (Doris keeps a delete predicate; the result is the same).
        keep = exp.Not(this=exp.Coalesce(this=exp.Paren(this=s.where.copy()), expressions=[exp.false()]))
        query = exp.select(*[exp.column(c.name, table=qualifier).as_(c.name) for c in visible]).from_(source)
        query = query.where(keep)
        target = Target(
            db_name=db_name,
            table=table,
            columns=[c.name for c in visible],
            label=_delete_label(),
            load_type="DELETE",
            replace_partitions=part_ids or [p.id for p in table.partitions],
            partitions=s.partitions,
            strict=False,
            max_filter_ratio=1.0,
            timeout_s=timeout,
        )
        spark_sql, views = self.plan_query(query, ctx, snapshots)
        outcome = await self.run(target, spark_sql, views, ctx)
        return self.ok(outcome, affected=0)

    # --- TRUNCATE -------------------------------------------------------------------
    async def truncate(self, s: Truncate, ctx) -> StatementResult:
        db_name, table = self.executor.table_of(s.db, s.table, ctx)
        part_ids = _partition_ids(table, s.partitions) if s.partitions else [p.id for p in table.partitions]
        label = f"truncate_{uuid.uuid4().hex}"

        def do() -> None:
            txn, _ = self.fe.catalog.txns.begin_txn(
                db_name, table.name, label, timeout_s=60, load_type="TRUNCATE", user=ctx.user
            )
            try:
                self.fe.catalog.txns.commit_txn(txn.id, [], replace_partitions=part_ids)
            except BaseException as e:
                self.fe.catalog.txns.abort_txn(txn.id, str(e))
                raise

        await asyncio.to_thread(do)
        return StatementResult()


# --- helpers -----------------------------------------------------------------------------------


def view_definition(view, db_name: str) -> ViewDefinition:
    """What the translator expands for a reference to `view` (a catalog View of `db_name`)."""
    return ViewDefinition(db=db_name, name=view.name, sql=view.sql, columns=tuple(view.column_names))



def _delete_label() -> str:
    h = uuid.uuid4().hex
    return f"delete_{h[:16]}_{h[16:]}"


def _partition_ids(table: Table, names: list[str]) -> list[int]:
    by_name = {p.name.lower(): p.id for p in table.partitions}
    ids = []
    for n in names:
        pid = by_name.get(n.lower())
        if pid is None:
            raise AnalysisError(f"Unknown partition '{n}' in table '{table.name}'")
        ids.append(pid)
    return ids


def _table_exists(fe, db_name: str, name: str) -> bool:
    try:
        fe.catalog.table(db_name, name)
        return True
    except GaleneError:
        return False


# Source column types a CTAS column keeps when it reads the column unchanged (the engine's type
# of it is a plainer one: DECIMAL(38, 0), a timestamp, a string, a list, nested strings).
_KEPT_SOURCE_TYPES = ("LARGEINT", "DATETIME", "JSON", "VARIANT", "IPV4", "IPV6")
_KEPT_SOURCE_TYPES += ("BITMAP", "HLL", "QUANTILE_STATE")


def _ctas_type(t: ColumnType, source: ColumnType | None = None) -> ColumnType:
    """The type of a CTAS (or materialized view) column from the engine's type `t` of the
    query's column and, when that column reads a table's column unchanged, `source`, the table
    column's type. Strings become VARCHAR(65533) as in Doris; a LARGEINT or DATETIME(p) read
    unchanged keeps its type (the engine's DECIMAL(38, 0) / timestamp lose them), and so do
    JSON, VARIANT, IPV4/IPV6, the aggregate states and nested types (ARRAY<VARCHAR(10)>); any other
    timestamp is DATETIME(6): the engine's timestamps keep microseconds without saying how many
    digits a computed one has, and a CTAS must not drop them."""
    if source is not None and (source.name in _KEPT_SOURCE_TYPES or source.is_nested):
        refined = source_types.refine([t], [source])[0]
        if refined == source:
            return source
    if t.name == "STRING":
        return CTAS_VARCHAR
    if t.name == "DATETIME":
        return CTAS_DATETIME
    return t


def ctas_types(query: exp.Expr, schema: list[tuple[str, str]], executor, ctx) -> list[ColumnType]:
    """The column types of a table made from `query`'s result (CTAS, materialized views), from
    the engine's (name, type) `schema` of it."""

    def lookup(db, name):
        return executor.source_columns(ctx.database, db, name) if (db or ctx.database) else None

    sources = source_types.source_column_types(query, lookup)
    if len(sources) != len(schema):
        sources = [None] * len(schema)
    return [_ctas_type(from_spark_type_name(t), src) for (_, t), src in zip(schema, sources, strict=True)]


def copy_table_definition(source: Table, name: str, db_id: int, alloc, now: float) -> Table:
    """CREATE TABLE … LIKE: the source's schema, keys, partitioning, distribution and
    properties under new ids, with no data."""
    table_id = alloc()
    partitions = []
    for p in source.partitions:
        pid = alloc()
        partitions.append(
            Partition(
                id=pid,
                name=p.name if source.partition_type != "UNPARTITIONED" else name,
                range_lower=p.range_lower,
                range_upper=p.range_upper,
                list_values=[list(v) for v in p.list_values],
                tablet_ids=[alloc() for _ in p.tablet_ids],
            )
        )
    return msgspec.structs.replace(
        source,
        id=table_id,
        db_id=db_id,
        name=name,
        columns=[msgspec.structs.replace(c) for c in source.columns],
        key_columns=list(source.key_columns),
        partition_columns=list(source.partition_columns),
        distribution_columns=list(source.distribution_columns),
        partitions=partitions,
        properties=dict(source.properties),
        create_time=now,
        update_time=now,
        visible_version=1,
        rowsets=[],
        # A new table: its schema starts at the source's columns (ids kept), with no history;
        # LIKE copies a materialized view's table, not the view.
        schema_version=0,
        schema_history=[],
        mtmv=None,
        indexes=[
            msgspec.structs.replace(i, columns=list(i.columns), properties=dict(i.properties))
            for i in source.indexes
        ],
    )


