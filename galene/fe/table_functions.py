"""Table-valued functions of one statement as engine views: `S3(…)`, `jobs(…)`, `tasks(…)`.

Owns the FE side of a statement that reads a table function: find the calls in the parsed
tree, plan each (S3: parse the properties, list the files and infer the schema from the first
one through `galene.load.objectstore`, every call under its deadline; jobs/tasks: the
streaming jobs' rows from `galene.fe.jobs` as a small Arrow table), register them as temporary
views on the engine for the statement's duration, and install the resolver
`galene.sql.translate` uses to replace each call by its view. The rows of an S3 source are
read by the engine's tasks (`galene.engine.s3source`), never by the FE.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
from sqlglot import exp

from galene.common.errors import AnalysisError
from galene.load.objectstore import FileEntry, SourceSpec, parse_source
from galene.net.deadline import with_deadline
from galene.sql.translate import table_function_call, table_function_resolver

log = logging.getLogger(__name__)

_SEQ = itertools.count(1)


@dataclass
class _View:
    name: str
    kind: str  # s3 | arrow
    spec: SourceSpec | None = None
    files: list[FileEntry] = field(default_factory=list)
    schema: pa.Schema | None = None
    table: pa.Table | None = None


def s3_calls(expr: exp.Expr | None) -> list[tuple[str, dict[str, str], str]]:
    """Every table-function call in `expr` as (name, properties, call text)."""
    if expr is None:
        return []
    out = []
    for table in expr.find_all(exp.Table):
        found = table_function_call(table)
        if found is not None:
            out.append(found)
    return out


class TableFunctionViews:
    """The table functions one statement reads (empty for most statements: then every method
    is a no-op)."""

    def __init__(self, fe):
        self.fe = fe
        self.views: dict[str, _View] = {}  # call text -> view

    async def prepare(self, expr: exp.Expr | None, files: list[FileEntry] | None = None) -> None:
        """Plan every call in `expr`. `files` (a streaming job's batch) replaces the listing of
        the one S3 call."""
        from galene.engine.s3source import plan_source

        for name, props, text in s3_calls(expr):
            if text in self.views:
                continue
            view = f"__galene_tvf_{name}_{next(_SEQ)}"
            if name == "s3":
                spec = parse_source(props)
                # The listing and the first file's read have their own deadlines; this bounds
                # the whole plan as well (a thread that outlives it is abandoned).
                budget = spec.listing_timeout + 2 * spec.call_timeout + 5
                listed, schema = await with_deadline(
                    asyncio.to_thread(plan_source, spec, files), budget, "planning S3 source", peer=spec.endpoint_text
                )
                self.views[text] = _View(view, "s3", spec=spec, files=listed, schema=schema)
            elif name == "mv_infos":  # the async materialized views of a database (galene/fe/mtmv.py)
                database = props.get("database") or props.get("Database")
                if not database:
                    raise AnalysisError('mv_infos() needs "database"="<db>"')
                self.views[text] = _View(view, "arrow", table=self.fe.mtmv.mv_infos_table(database))
            else:
                kind = (props.get("type") or "").lower()
                if kind != "insert":
                    raise AnalysisError(f'{name}() supports "type"="insert" only')
                table = self.fe.jobs.jobs_table() if name == "jobs" else self.fe.jobs.tasks_table()
                self.views[text] = _View(view, "arrow", table=table)

    def add_table(self, key: str, table: Callable[[], pa.Table]) -> str:
        """A small Arrow table (an information_schema table) as a view of this statement; the
        same `key` is one view. Returns the view name."""
        view = self.views.get(key)
        if view is None:
            view = self.views[key] = _View(f"__galene_is_{next(_SEQ)}", "arrow", table=table())
        return view.name

    def _resolve(self, name: str, props: dict[str, str], text: str) -> str:
        view = self.views.get(text)
        if view is None:  # planned statements only reach translate with their calls prepared
            raise AnalysisError(f"table function {name}() was not prepared")
        return view.name

    @contextlib.contextmanager
    def resolving(self):
        token = table_function_resolver.set(self._resolve)
        try:
            yield
        finally:
            table_function_resolver.reset(token)

    # --- on the engine (blocking; called in worker threads) -------------------------------------
    def register(self) -> None:
        if not self.views:
            return
        from galene.engine.s3source import source_frame

        spark = self.fe.engine.spark()
        for v in self.views.values():
            if v.kind == "s3":
                df = source_frame(spark, v.spec, v.files, v.schema)
            else:
                df = spark.createDataFrame(v.table)
            df.createOrReplaceTempView(v.name)

    def drop(self) -> None:
        if not self.views or self.fe.engine is None:
            return
        try:
            spark = self.fe.engine.spark()
            for v in self.views.values():
                spark.catalog.dropTempView(v.name)
        except Exception:  # a dead engine took its views with it
            log.debug("dropping table-function views failed", exc_info=True)

    def run(self, fn: Callable, *args):
        """`fn(*args)` with the views registered around it (one worker thread)."""
        self.register()
        try:
            return fn(*args)
        finally:
            self.drop()

    @contextlib.asynccontextmanager
    async def active(self):
        """Views registered and the resolver installed for the body (a pipeline statement)."""
        if not self.views:
            yield self
            return
        await self.fe.wait_engine()
        await asyncio.to_thread(self.register)
        try:
            with self.resolving():
                yield self
        finally:
            await asyncio.to_thread(self.drop)
