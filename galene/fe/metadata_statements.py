"""The SHOW statements Doris answers from information_schema's data, for tools: SHOW TABLE
STATUS, SHOW INDEX, SHOW PARTITIONS, SHOW DATA, SHOW STREAM LOAD, SHOW TRANSACTION, SHOW [FULL]
PROCESSLIST (rows: `galene.sql.information_schema.show_rows`, for the session's
`meta_context`). `MetadataStatements` is a part of `galene.fe.executor.SqlExecutor`."""

from __future__ import annotations

from galene.fe.executor_base import ExecutorBase, cols, sort_rows
from galene.fe.mysql.boundary import ResultColumn, StatementResult
from galene.sql import show
from galene.sql.information_schema import show_rows
from galene.sql.information_schema import tables as schema_tables


class MetadataStatements(ExecutorBase):
    async def _do_ShowTableStatus(self, s, ctx):
        db_name = self.existing_db(s.db, ctx)
        rows = show_rows.table_status(self.meta_context(ctx), db_name, s.like, s.where)
        return StatementResult(columns=[ResultColumn(n, t) for n, t in show_rows.TABLE_STATUS_COLUMNS], rows=rows)

    async def _do_ShowIndex(self, s, ctx):
        # Doris lists the inverted/bitmap/ngram_bf indexes (none for views and system tables).
        table = self.table_or_schema(s.db, s.table, ctx)
        return StatementResult(columns=cols(*show_rows.INDEX_COLUMNS), rows=show.index_rows(table))

    async def _do_ShowPartitions(self, s, ctx):
        _, table = self.shown_table(s.db, s.table, ctx)
        names = show_rows.PARTITIONS_COLUMNS
        rows = sort_rows(show_rows.partition_rows(table, s.where), s.order, names, "SHOW PARTITIONS")
        rows = rows[: s.limit] if s.limit is not None else rows
        return StatementResult(columns=cols(*names), rows=[tuple(r[n] for n in names) for r in rows])

    async def _do_ShowData(self, s, ctx):
        meta = self.meta_context(ctx)
        if s.table is not None:
            db_name, table = self.shown_table(s.db, s.table, ctx)
            names, rows = show_rows.DATA_TABLE_COLUMNS, show_rows.data_rows(meta, db_name, table)
        elif s.db or ctx.database:
            db_name = self.existing_db(s.db, ctx)
            names, rows = show_rows.DATA_DB_COLUMNS, show_rows.data_rows(meta, db_name, None, s.order)
        else:
            names, rows = show_rows.DATA_ALL_DB_COLUMNS, show_rows.all_db_data_rows(meta)
        return StatementResult(columns=cols(*names), rows=rows)

    async def _do_ShowStreamLoad(self, s, ctx):
        db_name = self.existing_db(s.db, ctx)
        names = show_rows.STREAM_LOAD_COLUMNS
        rows = [r for r in show_rows.stream_load_rows(self.meta_context(ctx), db_name) if show.row_matches(s.where, r)]
        rows = sort_rows(rows, s.order, names, "SHOW STREAM LOAD")
        rows = rows[: s.limit] if s.limit is not None else rows
        return StatementResult(columns=cols(*names), rows=[tuple(r[n] for n in names) for r in rows])

    async def _do_ShowTransaction(self, s, ctx):
        db_name = self.existing_db(s.db, ctx)
        meta = self.meta_context(ctx)
        txn = show_rows.find_transaction(meta, db_name, s.where)
        return StatementResult(
            columns=cols(*show_rows.TRANSACTION_COLUMNS), rows=[show_rows.transaction_row(meta, txn)]
        )

    async def _do_ShowProcesslist(self, s, ctx):
        rows = schema_tables.processlist_rows(self.meta_context(ctx), s.full)
        return StatementResult(columns=[ResultColumn(n, t) for n, t in show_rows.PROCESSLIST_COLUMNS], rows=rows)
