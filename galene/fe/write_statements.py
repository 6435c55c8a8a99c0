"""Statements that write rows: INSERT … VALUES (one stream load sent to a BE, group commit
included: `galene.fe.insert`; values holding expressions are evaluated on the engine first),
INSERT … SELECT / INSERT OVERWRITE / UPDATE / DELETE / TRUNCATE (engine jobs:
`galene.fe.pipelines`), and the streaming jobs that run INSERTs continuously (CREATE / ALTER /
PAUSE / RESUME / DROP JOB; `galene.fe.jobs` runs them). `WriteStatements` is a part of
`galene.fe.executor.SqlExecutor`."""

from __future__ import annotations

import asyncio

from galene.catalog.model import StreamingJob
from galene.common.errors import GaleneError
from galene.fe import insert as ins
from galene.fe import jobs as jb
from galene.fe.executor_base import ExecutorBase
from galene.fe.mysql.boundary import StatementResult
from galene.fe.table_functions import TableFunctionViews
from galene.load.objectstore import parse_source


class WriteStatements(ExecutorBase):
    # --- streaming jobs (galene/fe/jobs.py runs them) -----------------------------------
    async def _do_CreateJob(self, s, ctx):
        db_name, table = self.table_of(s.insert.db, s.insert.table, ctx)
        ins.target_columns(table, s.insert.columns)
        props = jb.check_properties(s.properties)
        parse_source(jb.source_properties(s.insert))  # a bad uri/format/timeout fails here
        db = self.fe.catalog.db(db_name)

        def build(job_id, now):
            return StreamingJob(
                id=job_id, name=s.name, db_id=db.id, definer=ctx.user, execute_sql=s.do_sql, comment=s.comment,
                properties=props, create_time=now, offset=props.get("offset", ""), status_time=now,
            )  # fmt: skip

        await self.blocking(self.fe.catalog.create_job, build)
        self.fe.jobs.poke()
        return StatementResult()

    async def _do_JobControl(self, s, ctx):
        catalog = self.fe.catalog
        if s.action == "PAUSE":
            job = await self.blocking(catalog.pause_job, s.name)
            self.fe.jobs.cancel(job.id)
        elif s.action == "RESUME":
            job = await self.blocking(catalog.resume_job, s.name)
            self.fe.jobs.poke(job.id)
        else:
            job = await self.blocking(catalog.drop_job, s.name, s.if_exists)
            if job is not None:
                self.fe.jobs.cancel(job.id)
        return StatementResult()

    async def _do_AlterJob(self, s, ctx):
        props = jb.check_properties(s.properties)
        await self.blocking(self.fe.catalog.alter_job, s.name, props, props.get("offset"))
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
        db_name, table = self.table_of(s.db, s.table, ctx)
        names = ins.target_columns(table, s.columns)
        variables = ctx.variables
        strict, max_filter_ratio, timeout_s = ins.session_rules(variables)
        group_commit = str(variables.get("group_commit") or "off_mode").lower()
        if group_commit not in ins.GROUP_COMMIT_MODES:
            raise GaleneError("group_commit can only be [async_mode, sync_mode, off_mode]")
        assert s.values is not None
        ins.check_value_count(s.values, len(names))
        rows = ins.literal_values_table(s.values, names, [table.column(n).type for n in names])
        if rows is None:  # expressions among the values: Spark evaluates them
            out = await self.run_query(ins.values_select(s.values), ctx)
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
            strict=strict,
            max_filter_ratio=max_filter_ratio,
            timeout_s=timeout_s,
            partitions=s.partitions,
        )
        body = await asyncio.to_thread(ins.json_lines, rows)
        reply = await ins.send_load(self.fe, load, body)
        affected, info = ins.reply_outcome(reply, load)
        return StatementResult(affected_rows=affected, info=info)
