"""Statements on schema objects, answered from the FE's catalog (changes go through
`CatalogService`, one journal op each): databases, tables (CREATE — CTAS and LIKE are pipelines —
DROP, RENAME, SET PROPERTIES, column changes, REPLACE), views (CREATE / ALTER / DROP; the query is
analysed by the engine for its columns), async materialized views (`galene.fe.mtmv` plans and
refreshes them), and the SHOW / DESCRIBE statements that read them. `SchemaStatements` is a part
of `galene.fe.executor.SqlExecutor`."""

from __future__ import annotations

import functools

from sqlglot import exp

from galene.catalog.model import Column, View
from galene.common.errors import AnalysisError, unknown_database
from galene.common.types import from_spark_type_name
from galene.fe.executor_base import ExecutorBase, cols, like_filter
from galene.fe.mysql.boundary import StatementResult
from galene.fe.pipelines import view_definition
from galene.fe.table_functions import TableFunctionViews
from galene.sql import show, source_types
from galene.sql.ddl.alter_table import alter_table
from galene.sql.ddl.create_table import table_from_create
from galene.sql.ddl.render import (
    SHOW_CREATE_MV_COLUMNS,
    SHOW_CREATE_VIEW_COLUMNS,
    show_create_materialized_view,
    show_create_table,
    show_create_view_row,
)
from galene.sql.ddl.views import qualify_table_names
from galene.sql.information_schema import tables as schema_tables
from galene.sql.information_schema.context import SCHEMA_NAME, is_schema
from galene.sql.like import like_match
from galene.sql.show import describe, show_columns


class SchemaStatements(ExecutorBase):
    # --- databases ------------------------------------------------------------------
    async def _do_CreateDatabase(self, s, ctx):
        await self.blocking(
            self.fe.catalog.create_database, s.name, s.if_not_exists, getattr(s, "properties", None)
        )
        return StatementResult(affected_rows=0)

    async def _do_DropDatabase(self, s, ctx):
        await self.blocking(self.fe.catalog.drop_database, s.name, s.if_exists)
        return StatementResult()

    async def _do_Use(self, s, ctx):
        if not self.fe.catalog.has_db(s.db):
            raise unknown_database(s.db)
        return StatementResult(new_database=s.db)

    async def _do_ShowDatabases(self, s, ctx):
        names = sorted(self.fe.state.db_names) + ["information_schema"]
        names = like_filter(names, getattr(s, "like", None))
        names = [n for n in names if self.visible(ctx, n)]
        return StatementResult(columns=cols("Database"), rows=[(n,) for n in sorted(names)])

    async def _do_ShowCreateDatabase(self, s, ctx):
        db = self.fe.catalog.db(s.name)
        return StatementResult(
            columns=cols("Database", "Create Database"), rows=[(db.name, f"CREATE DATABASE `{db.name}`")]
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
        db_name = self.database_of(s.db, ctx)

        decimal256 = bool(ctx.variables.get("enable_decimal256", False))
        reads_decimal256 = self.fe.cfg.engine == "sail" or (self.fe.cfg.spark_master or "").startswith("sc://")

        def build(db_id, alloc, now):
            table = table_from_create(s, db_id=db_id, alloc_id=alloc, now=now, decimal256=decimal256)
            if not reads_decimal256:
                for c in table.columns:
                    if c.type.contains_wide_decimal():
                        raise AnalysisError(
                            f"Column {c.name} {c.type.to_desc()}: Apache Spark's decimals hold at most 38 digits; "
                            "DECIMAL of up to 76 digits needs the Sail engine (engine = sail in fe.conf)"
                        )
            return table

        await self.blocking(self.fe.catalog.create_table, db_name, build, s.if_not_exists)
        return StatementResult()

    async def _do_DropTable(self, s, ctx):
        await self.blocking(self.fe.catalog.drop_table, self.database_of(s.db, ctx), s.name, s.if_exists)
        return StatementResult()

    async def _do_AlterTableRename(self, s, ctx):
        await self.blocking(self.fe.catalog.rename_table, self.database_of(s.db, ctx), s.table, s.new_name)
        return StatementResult()

    async def _do_AlterTableSetProperties(self, s, ctx):
        await self.blocking(
            self.fe.catalog.set_table_properties, self.database_of(s.db, ctx), s.table, dict(s.properties)
        )
        return StatementResult()

    async def _do_ShowTables(self, s, ctx):
        db_name = self.database_of(s.db, ctx)
        if is_schema(db_name):
            names = like_filter(schema_tables.table_names(), getattr(s, "like", None))
            label = f"Tables_in_{SCHEMA_NAME}"
            if s.full:
                return StatementResult(columns=cols(label, "Table_type"), rows=[(n, "SYSTEM VIEW") for n in names])
            return StatementResult(columns=cols(label), rows=[(n,) for n in names])
        db = self.fe.catalog.db(db_name)
        names = like_filter(sorted([*db.tables, *db.views]), getattr(s, "like", None))
        names = [n for n in names if self.visible(ctx, db_name, n)]
        label = f"Tables_in_{db_name}"
        if s.full:
            kinds = [("VIEW" if n in db.views else "BASE TABLE") for n in names]
            return StatementResult(columns=cols(label, "Table_type"), rows=list(zip(names, kinds, strict=True)))
        return StatementResult(columns=cols(label), rows=[(n,) for n in names])

    async def _do_ShowColumns(self, s, ctx):
        view = self.view_of(s.db, s.table, ctx)
        if view is not None:
            names, rows = show.show_view_columns(view, s.full)
            rows = [r for r in rows if like_match(r[0], getattr(s, "like", None))]
            return StatementResult(columns=cols(*names), rows=rows)
        table = self.table_or_schema(s.db, s.table, ctx)
        names, rows = show_columns(table, s.full)
        rows = [r for r in rows if like_match(r[0], getattr(s, "like", None))]
        return StatementResult(columns=cols(*names), rows=rows)

    async def _do_Describe(self, s, ctx):
        view = self.view_of(s.db, s.table, ctx)
        if view is not None:
            names, rows = show.describe_view(view, getattr(s, "all", False))
            return StatementResult(columns=cols(*names), rows=rows)
        table = self.table_or_schema(s.db, s.table, ctx)
        names, rows = describe(table, getattr(s, "all", False))
        return StatementResult(columns=cols(*names), rows=rows)

    async def _do_ShowCreateTable(self, s, ctx):
        view = self.view_of(s.db, s.table, ctx)
        if view is not None:  # Doris answers SHOW CREATE TABLE on a view as SHOW CREATE VIEW
            return StatementResult(columns=cols(*SHOW_CREATE_VIEW_COLUMNS), rows=[show_create_view_row(view)])
        db_name, table = self.shown_table(s.db, s.table, ctx)
        return StatementResult(
            columns=cols("Table", "Create Table"), rows=[(table.name, show_create_table(table, db_name))]
        )

    # --- views, schema change, materialized views (schema objects) --------------------------
    async def _do_CreateView(self, s, ctx):
        """CREATE [OR REPLACE] VIEW / ALTER VIEW: the query is analysed by the engine (its output
        columns; unknown names fail here), the definition stored with its tables qualified."""
        db_name = self.database_of(s.db, ctx)
        self.fe.catalog.db(db_name)
        spark_sql, views = self.pipelines.plan_query(s.query, ctx)
        await self.fe.wait_engine()
        schema = await self.blocking(self.pipelines.query_schema, spark_sql, views)
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
            source_types.source_column_types(s.query, functools.partial(self.source_columns, db_name)),
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

        await self.blocking(
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

    async def _do_DropView(self, s, ctx):
        await self.blocking(self.fe.catalog.drop_view, self.database_of(s.db, ctx), s.name, s.if_exists)
        return StatementResult()

    async def _do_ShowCreateView(self, s, ctx):
        db_name = self.database_of(s.db, ctx)
        view = self.fe.catalog.view(db_name, s.name)
        if view is None:
            self.shown_table(db_name, s.name, ctx)  # Unknown table … when there is nothing at all
            raise AnalysisError(f"'{db_name}.{s.name}' is not VIEW")
        return StatementResult(columns=cols(*SHOW_CREATE_VIEW_COLUMNS), rows=[show_create_view_row(view)])

    async def _do_AlterTableColumns(self, s, ctx):
        """ALTER TABLE … ADD/DROP/MODIFY/RENAME COLUMN, MODIFY COMMENT: one journal op, no file
        rewritten (rowsets keep their schema version; readers map columns by id)."""
        actions = list(s.actions)
        await self.blocking(
            self.fe.catalog.alter_table, self.database_of(s.db, ctx), s.table, lambda t: alter_table(t, actions)
        )
        return StatementResult()

    async def _do_ReplaceTable(self, s, ctx):
        await self.blocking(
            self.fe.catalog.replace_table, self.database_of(s.db, ctx), s.table, s.other, s.swap
        )
        return StatementResult()

    async def _do_CreateMaterializedView(self, s, ctx):
        return await self.fe.mtmv.create(s, ctx)

    async def _do_RefreshMaterializedView(self, s, ctx):
        return await self.fe.mtmv.refresh_statement(s, ctx)

    async def _do_DropMaterializedView(self, s, ctx):
        db_name = self.database_of(s.db, ctx)
        await self.blocking(self.fe.catalog.drop_table, db_name, s.name, s.if_exists, "MATERIALIZED VIEW")
        return StatementResult()

    async def _do_ShowCreateMaterializedView(self, s, ctx):
        db_name, table = self.shown_table(s.db, s.name, ctx)
        if table.mtmv is None:
            raise AnalysisError(f"'{db_name}.{s.name}' is not MATERIALIZED VIEW")
        return StatementResult(
            columns=cols(*SHOW_CREATE_MV_COLUMNS), rows=[(table.name, show_create_materialized_view(table))]
        )
