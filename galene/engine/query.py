"""Running one Spark SQL query over table snapshots and returning the result as Arrow.

The caller (the SQL layer) has already rewritten the user's statement to Spark SQL over
view names it chose, and says which table snapshot each view name means. `run_query`
binds those names to `table_frame`s as temporary views for the duration of the query,
runs it, and returns the rows as an Arrow table together with the Spark column types.
`stream_query` is the same query with its rows as a sequence of Arrow batches, read from the
engine as they are consumed (a client's result: nothing holds it whole in this process).

DataFrames are kept per table snapshot in a small LRU: a DataFrame carries its resolved
file index, so a repeated query over the same snapshot does not list the files again. The
cache is keyed by the session generation, so a restarted session never sees frames of the
dead one.

If the engine dies during a query (the Spark JVM, the Sail server), the query fails with a Doris
error naming the engine and how it ended, and the next query runs on a new engine. It is not
re-run on its own: a query that killed the engine (memory) would kill the next one too, and
Doris fails a query whose backend died under it the same way.

A query that fails with a memory or broadcast failure on a live engine (Spark planned a broadcast
join from a size estimate its rows far exceed: `engine/failures.py`) runs once more, on the
engine's session without broadcast joins (`SparkEngine.spark_without_broadcast`; not on Sail,
which has none), unless it was cancelled. A streamed result is retried only before its first
row went out: the head comes with the first batch, so that is before the first `next()` returns.
Whatever still fails reaches the caller as a GaleneError of one short line; the engine's whole
text (plan, Java stack) goes to the log.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NoReturn

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from galene.catalog.model import Table
from galene.common.errors import GaleneError
from galene.engine import failures
from galene.engine.scan import table_frame, visible_rowsets
from galene.engine.session import SparkEngine

log = logging.getLogger(__name__)

FRAME_CACHE_SIZE = 64


@dataclass
class QueryOutput:
    columns: list[tuple[str, str]]  # (name, Spark simpleString type)
    table: pa.Table


class _FrameCache:
    """Bounded LRU of table snapshot -> DataFrame, valid for one session generation."""

    def __init__(self, size: int):
        self.size = size
        self._frames: OrderedDict[tuple, DataFrame] = OrderedDict()
        self._generation = -1
        self._lock = threading.Lock()

    def get_or_build(self, engine: SparkEngine, table: Table, version: int, storage_uri: str) -> DataFrame:
        spark = engine.spark()
        key = _snapshot_key(table, version, storage_uri)
        with self._lock:
            if self._generation != engine.generation:
                self._frames.clear()
                self._generation = engine.generation
            df = self._frames.get(key)
            if df is not None:
                self._frames.move_to_end(key)
                return df
        df = table_frame(spark, table, storage_uri, version, file_names=engine.file_names)
        with self._lock:
            if self._generation == engine.generation:
                self._frames[key] = df
                while len(self._frames) > self.size:
                    self._frames.popitem(last=False)
        return df

    def clear(self) -> None:
        with self._lock:
            self._frames.clear()


def _snapshot_key(table: Table, version: int, storage_uri: str) -> tuple:
    # Compaction replaces rowsets at an unchanged version and schema changes keep the id,
    # so the key names the exact files and columns read, not just (table id, version).
    rowsets = tuple((r.id, r.version, tuple(r.files)) for r in visible_rowsets(table, version))
    columns = tuple((c.name, c.type, c.hidden, c.is_key, c.aggregation) for c in table.columns)
    return (
        table.id,
        version,
        storage_uri,
        table.schema_version,  # a column dropped and added again reads differently
        table.keys_type,
        tuple(table.key_columns),
        columns,
        rowsets,
    )


_frame_cache = _FrameCache(FRAME_CACHE_SIZE)


def run_query(
    engine: SparkEngine,
    spark_sql: str,
    views: dict[str, tuple[Table, int]],
    storage_uri: str,
    job_tag: str | None = None,
) -> QueryOutput:
    """Run `spark_sql` with each view name bound to (table at version); rows as Arrow.

    `job_tag` tags the engine jobs of this query so that another thread can cancel them
    (`interrupt_jobs`) when the query times out or is killed."""

    def attempt(session: SparkSession | None) -> QueryOutput:
        with _bound_views(engine, views, storage_uri, job_tag, session) as spark:
            df, variants = _printable(spark.sql(spark_sql))
            columns, result = _collect(df)
            _mark_variants(columns, variants)
            return QueryOutput(columns=columns, table=result)

    try:
        return attempt(None)
    except Exception as e:  # noqa: BLE001 - every failure becomes the client's Doris error
        retry = _retry_session(engine, e, job_tag)
        if retry is None:
            _raise_failure(engine, e)
    try:
        return attempt(retry)
    except Exception as e:  # noqa: BLE001 - raised as a Doris error
        _raise_failure(engine, e, retried=True)


def _retry_session(engine: SparkEngine, e: BaseException, job_tag: str | None) -> SparkSession | None:
    """The session to run a failed query on once more (broadcast joins off), or None: not a
    memory or broadcast failure, the query was cancelled, the engine died or has no such session."""
    if not failures.may_pass_without_broadcast(e) or (job_tag and _was_interrupted(job_tag)):
        return None
    try:
        if not engine.is_alive():
            return None
        session = engine.spark_without_broadcast()
    except Exception:  # no retry; the first failure is the answer
        log.warning("no session without broadcast joins for a retry", exc_info=True)
        return None
    if session is not None:
        log.warning(
            "query failed on %s with a memory or broadcast failure; retrying it once without broadcast joins: %s",
            engine.name,
            failures.full_text(e),
        )
    return session


def _raise_failure(engine: SparkEngine, e: BaseException, retried: bool = False) -> NoReturn:
    """Raise the Doris error for a query's failure `e` (`e` itself when it is one), after
    logging the engine's whole text."""
    if isinstance(e, GaleneError):
        raise e
    from pyspark.errors import AnalysisException

    # A statement the engine refuses (unknown column, types) is the user's; others are the engine's.
    level = logging.INFO if isinstance(e, AnalysisException) else logging.WARNING
    log.log(
        level, "query failed on %s%s: %s", engine.name, " (retried)" if retried else "", failures.full_text(e)
    )
    memory = None if engine.is_connect else engine.conf.get("spark.driver.memory")
    raise failures.query_failure(e, engine.name, retried=retried, driver_memory=memory) from e


@contextlib.contextmanager
def _bound_views(
    engine: SparkEngine,
    views: dict[str, tuple[Table, int]],
    storage_uri: str,
    job_tag: str | None,
    session: SparkSession | None = None,
) -> Iterator:
    """The engine's session (or `session`, one of the engine's others) for one query: each view
    name bound to its table snapshot and the job tag set, both undone at the end; a failure of an
    engine that died meanwhile is reported as that. Frames of another session are built for the
    query (the cache holds the main session's)."""
    spark = session if session is not None else engine.spark()
    registered: list[str] = []
    dead = False
    if job_tag:
        _call_quietly(spark, "addTag", job_tag)
    try:
        for name, (table, version) in views.items():
            if session is None:
                frame = _frame_cache.get_or_build(engine, table, version, storage_uri)
            else:
                frame = table_frame(session, table, storage_uri, version, file_names=engine.file_names)
            frame.createOrReplaceTempView(name)
            registered.append(name)
        yield spark
    except Exception as e:
        if engine.is_alive():
            raise
        dead = True
        reason = engine.death_reason()
        log.warning("%s died during a query (%s); the next query starts a new one", engine.name, reason)
        raise GaleneError(
            f"[CANCELLED]query engine ({engine.name}) died during the query ({reason}); "
            "a new one starts with the next query"
        ) from e
    finally:
        # A dead engine's tags and views died with it. (Calling it anyway made py4j retry on
        # closed sockets, logging each retry with the growing chain of the ones before.)
        if dead:
            registered.clear()
        elif job_tag:
            _call_quietly(spark, "removeTag", job_tag)
        for name in registered:
            try:
                spark.catalog.dropTempView(name)
            except Exception:  # the session may be dead; its views died with it
                log.debug("dropping temp view %s failed", name, exc_info=True)


def _printable(df: DataFrame) -> tuple[DataFrame, list[int]]:
    """`df` with each top-level VARIANT column as its JSON text (`to_json`, on both engines),
    and those columns' positions: Arrow carries a variant as its binary encoding (metadata and
    value), which no client reads, and Doris prints a VARIANT as JSON."""
    from pyspark.sql.types import VariantType

    fields = df.schema.fields
    variants = [i for i, f in enumerate(fields) if isinstance(f.dataType, VariantType)]
    names = [f.name for f in fields]
    if not variants or len(set(names)) != len(names):  # (selected by name below)
        return df, []
    from pyspark.sql import functions as F

    return df.select(
        *(
            F.to_json(F.col(f"`{f.name.replace('`', '``')}`")).alias(f.name)
            if isinstance(f.dataType, VariantType)
            else F.col(f"`{f.name.replace('`', '``')}`")
            for f in fields
        )
    ), variants


def _mark_variants(columns: list[tuple[str, str]], variants: list[int]) -> None:
    """The columns `_printable` turned into JSON text keep their type name: a VARIANT result
    column is declared as Doris declares it (MYSQL_TYPE_JSON)."""
    for i in variants:
        columns[i] = (columns[i][0], "variant")


_WIDE_DECIMAL = re.compile(r"decimal\((\d+),")


def _connect_arrow_schema(schema) -> pa.Schema:
    """PySpark's `to_arrow_schema` of a Spark Connect result, except that a DECIMAL of more
    than 38 digits (Sail's decimal256: Doris' enable_decimal256) is declared decimal256 —
    PySpark's mapping builds a decimal128, which cannot hold it. A wide decimal nested in
    another type is declared NULL, so the column keeps the type its values are sent with."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import DecimalType, NullType, StructField, StructType

    wide: dict[int, pa.DataType] = {}
    fields = list(schema.fields)
    for i, f in enumerate(fields):
        if any(int(p) > 38 for p in _WIDE_DECIMAL.findall(f.dataType.simpleString())):
            t = f.dataType
            wide[i] = pa.decimal256(t.precision, t.scale) if isinstance(t, DecimalType) else pa.null()
            fields[i] = StructField(f.name, NullType(), True)
    declared = to_arrow_schema(
        StructType(fields) if wide else schema, error_on_duplicated_field_names_in_struct=True, timezone="UTC"
    )
    for i, t in wide.items():
        declared = declared.set(i, declared.field(i).with_type(t))
    return declared


def _spark_type_name(sent: pa.DataType, declared: str) -> str:
    """The Spark type name of a column kept with the Arrow type it was sent with."""
    from pyspark.sql.pandas.types import from_arrow_type

    if pa.types.is_decimal256(sent):  # (PySpark maps no decimal256)
        return f"decimal({sent.precision},{sent.scale})"
    try:
        return from_arrow_type(sent).simpleString()
    except (TypeError, ValueError):
        return declared


def _collect(df: DataFrame) -> tuple[list[tuple[str, str]], pa.Table]:
    """The result's (name, Spark type) columns and its rows as Arrow.

    Over Spark Connect the rows arrive as Arrow batches typed by the server's plan, and the
    declared schema is a separate answer. Sail 0.7 answers a UNION's schema from its first
    branch: `SELECT NULL AS c UNION ALL SELECT 10` is declared NULL-typed but sent as INT, and
    `SELECT 1 UNION ALL SELECT 2.5` declared with a DECIMAL scale that the sent values exceed;
    PySpark's `toArrow` then fails to cast the rows to the declaration. Such a column keeps the
    type it was sent with, and reports it."""
    fields = df.schema.fields
    columns = [(f.name, f.dataType.simpleString()) for f in fields]
    to_table = getattr(df, "_to_table", None)  # Spark Connect's DataFrame; classic Spark converts itself
    if to_table is None:
        return columns, df.toArrow()
    declared = _connect_arrow_schema(df.schema)
    table, _ = to_table()
    try:
        return columns, table.cast(declared)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        pass
    arrays, out_fields = [], []
    for i, field in enumerate(declared):
        data = table.column(i)
        try:
            if pa.types.is_null(field.type) and not pa.types.is_null(data.type):
                raise pa.ArrowNotImplementedError("a NULL-typed declaration")
            arrays.append(data.cast(field.type))
            out_fields.append(field)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
            log.debug("column %s: declared %s, sent %s; kept as sent", field.name, field.type, data.type)
            columns[i] = (field.name, _spark_type_name(data.type, columns[i][1]))
            arrays.append(data)
            out_fields.append(field.with_type(data.type))
    return columns, pa.Table.from_arrays(arrays, schema=pa.schema(out_fields, metadata=declared.metadata))


# The tags `interrupt_jobs` was called for, newest last (bounded: a tag is only asked about
# while its query runs, and removed when it ends).
_INTERRUPTED_KEPT = 1024
_interrupted: OrderedDict[str, None] = OrderedDict()
_interrupted_lock = threading.Lock()


def _was_interrupted(job_tag: str) -> bool:
    with _interrupted_lock:
        return job_tag in _interrupted


def interrupt_jobs(engine: SparkEngine, job_tag: str) -> None:
    """Cancel the engine jobs tagged `job_tag` (a query past its timeout, or killed)."""
    with _interrupted_lock:
        _interrupted[job_tag] = None
        while len(_interrupted) > _INTERRUPTED_KEPT:
            _interrupted.popitem(last=False)
    if engine.is_alive():
        spark = engine.spark()
        for session in engine.sessions():  # a retried query runs on another session
            _call_quietly(session, "interruptTag", job_tag)
        if getattr(spark, "_jsparkSession", None) is not None:  # classic: a streamed result's jobs
            _call_quietly(spark.sparkContext, "cancelJobsWithTag", job_tag)


def _call_quietly(spark, method: str, tag: str) -> None:  # a session, or classic Spark's context
    # SparkSession.addTag/removeTag/interruptTag exist on classic Spark 3.5+ and on Spark
    # Connect; without them a query just cannot be cancelled mid-job.
    try:
        getattr(spark, method)(tag)
    except Exception:
        log.debug("%s(%s) failed", method, tag, exc_info=True)


# --- streaming --------------------------------------------------------------------------


@dataclass
class ResultHead:
    """What `stream_query` yields before the rows: the (name, Spark type) columns and the Arrow
    schema every following batch has."""

    columns: list[tuple[str, str]]
    schema: pa.Schema


def stream_query(
    engine: SparkEngine,
    spark_sql: str,
    views: dict[str, tuple[Table, int]],
    storage_uri: str,
    job_tag: str | None = None,
) -> Iterator[ResultHead | pa.RecordBatch]:
    """`run_query`, but the rows come as they are read: one `ResultHead`, then the batches.

    A generator to be driven to its end or closed in one thread: the job tag and the temp
    views are that thread's, and are removed when the generator ends, fails or is closed.
    The head comes only once the first batch (or the end) is in hand, so an error of the
    engine before the first row fails the first `next()`, before any column is announced:
    that is when a memory or broadcast failure is retried (see the module docstring)."""
    retried = False
    attempt = _stream_attempt(engine, spark_sql, views, storage_uri, job_tag, None)
    try:
        head = next(attempt)
    except Exception as e:  # noqa: BLE001 - every failure becomes the client's Doris error
        retry = _retry_session(engine, e, job_tag)
        if retry is None:
            _raise_failure(engine, e)
        retried = True
        attempt = _stream_attempt(engine, spark_sql, views, storage_uri, job_tag, retry)
        try:
            head = next(attempt)
        except Exception as e2:  # noqa: BLE001 - raised as a Doris error
            _raise_failure(engine, e2, retried=True)
    try:
        yield head
        yield from attempt
    except Exception as e:  # noqa: BLE001 - after rows went out: no retry
        _raise_failure(engine, e, retried)
    finally:
        attempt.close()


def _stream_attempt(
    engine: SparkEngine,
    spark_sql: str,
    views: dict[str, tuple[Table, int]],
    storage_uri: str,
    job_tag: str | None,
    session: SparkSession | None,
) -> Iterator[ResultHead | pa.RecordBatch]:
    """One run of `stream_query` on the engine's session, or on `session`."""
    with _bound_views(engine, views, storage_uri, job_tag, session) as spark:
        df, variants = _printable(spark.sql(spark_sql))
        classic = getattr(df, "_to_table", None) is None  # Spark Connect's DataFrame has it
        if classic and job_tag:
            # The partition jobs below run outside a SQL execution, where the session's tags
            # are not applied: the context's tag (a thread property) marks them instead.
            _call_quietly(spark.sparkContext, "addJobTag", job_tag)
        try:
            batches = _classic_batches(df, job_tag) if classic else _connect_batches(df)
            head = next(batches)
            _mark_variants(head.columns, variants)
            first = next(batches, None)
            yield head
            if first is not None:
                yield first
                yield from batches
        finally:
            if job_tag:
                if classic and engine.is_alive():  # a dead JVM's thread properties died with it
                    _call_quietly(spark.sparkContext, "removeJobTag", job_tag)
                with _interrupted_lock:
                    _interrupted.pop(job_tag, None)


def _classic_batches(df: DataFrame, job_tag: str | None) -> Iterator[ResultHead | pa.RecordBatch]:
    """Classic Spark: the result's Arrow batches a group of partitions at a time, in order.

    `toArrow` (`collectAsArrowToPython`) cannot stream: the JVM sends the batches in the order
    partitions finish and their true order only after the last one, so the Python side must
    hold all of them to reorder. Instead the result's Arrow batch RDD (`toArrowBatchRdd`,
    Spark-internal but public in the JVM) is run as `RDD.runJob` runs jobs: one job per group
    of `defaultParallelism` partitions (all cores busy, as for a collect), whose batches the
    driver JVM holds and serves in partition order over a socket that Python reads one batch
    at a time; the next group starts once Python has read this one. So Python holds one
    batch, the driver JVM one group of partitions (toLocalIterator's one partition at a time
    would run a scan on one core). The batches come as bare Arrow IPC messages; their schema
    is the one Spark writes, taken from an empty `collectAsArrowToPython` of the same query,
    then cast like `toArrow` does. A group is not started once `interrupt_jobs` was called
    for `job_tag` (a cancel between two groups has no job to cancel). Without that internal API (another Spark version) the
    result is collected whole, as before, and a warning says so."""
    from py4j.protocol import Py4JError, Py4JJavaError
    from pyspark.core.rdd import _load_from_socket
    from pyspark.errors.exceptions.captured import unwrap_spark_exception
    from pyspark.serializers import NoOpSerializer
    from pyspark.sql.pandas.types import to_arrow_schema

    spark = df.sparkSession
    columns = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
    large = str(spark.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false")).lower() == "true"
    declared = to_arrow_schema(
        df.schema, error_on_duplicated_field_names_in_struct=True, timezone="UTC", prefers_large_types=large
    )
    try:
        # With adaptive execution this runs the query's shuffle stages (spilled by the engine,
        # not held here); the last stage runs group by group as Python reads.
        rdd = df._jdf.toArrowBatchRdd()
        jrdd = rdd.toJavaRDD()
        partitions = rdd.getNumPartitions()
        run_job = spark._jvm.org.apache.spark.api.python.PythonRDD.runJob
    except Py4JJavaError:
        raise  # the query failed: not a missing API
    except Py4JError:
        log.warning("this Spark has no Arrow batch RDD: the query result is collected whole", exc_info=True)
        table = df.toArrow()
        yield ResultHead(columns, table.schema)
        yield from table.to_batches()
        return
    with unwrap_spark_exception():
        sent = df.limit(0)._collect_as_arrow(empty_list_if_zero_records=False, prefers_large_var_types=large)
    sent_schema = sent[0].schema
    yield ResultHead(columns, declared)
    sc = spark.sparkContext
    group = max(1, int(sc.defaultParallelism))
    for start in range(0, partitions, group):
        if job_tag and _was_interrupted(job_tag):
            raise GaleneError("[CANCELLED]the query was cancelled")
        with unwrap_spark_exception():
            sock_info = run_job(sc._jsc.sc(), jrdd, list(range(start, min(partitions, start + group))))
        with _load_from_socket(sock_info, NoOpSerializer()) as messages:
            for message in messages:
                batch = pa.ipc.read_record_batch(pa.py_buffer(message), sent_schema)
                yield batch.cast(declared) if batch.schema != declared else batch


def _connect_batches(df: DataFrame) -> Iterator[ResultHead | pa.RecordBatch]:
    """Spark Connect (Sail): the batches as the server sends them (`toLocalIterator`'s reader).

    The columns' types are those of `_collect`, decided from the declared schema and the first
    batch (the column definitions go out before the first row): a column keeps the type it was
    sent with when its declaration cannot hold that type's values in general (NULL, or fewer
    decimal places: the first batch of `1 UNION ALL 2.5` holds only the 1) or cannot hold the
    first batch's. Every later batch is cast to the same types; one that cannot be is an error
    of the query."""
    from pyspark.sql.types import StructType

    columns = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
    declared = _connect_arrow_schema(df.schema)
    client = df._session.client
    tables = (
        t
        for t in client.to_table_as_iterator(df._plan.to_proto(client), df._plan.observations)
        if not isinstance(t, StructType)
    )
    first = next(tables, None)
    schema = declared
    if first is not None:
        fields = []
        for i, field in enumerate(declared):
            data = first.column(i)
            try:
                if _keeps_sent_type(field.type, data.type):
                    raise pa.ArrowNotImplementedError("a declaration narrower than the values sent")
                data.cast(field.type)
                fields.append(field)
            except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
                log.debug("column %s: declared %s, sent %s; kept as sent", field.name, field.type, data.type)
                columns[i] = (field.name, _spark_type_name(data.type, columns[i][1]))
                fields.append(field.with_type(data.type))
        schema = pa.schema(fields, metadata=declared.metadata)
    yield ResultHead(columns, schema)
    if first is None:
        return
    for table in itertools.chain([first], tables):
        try:
            cast = table.cast(schema) if table.schema != schema else table
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid) as e:
            raise GaleneError(
                f"a result batch does not fit the result's column types {schema.types}: {e}"
            ) from e
        yield from cast.to_batches()


def _keeps_sent_type(declared: pa.DataType, sent: pa.DataType) -> bool:
    """Whether values sent as `sent` may not fit `declared` whatever they are (Sail's UNION
    declarations, see `_collect`)."""
    if declared == sent:
        return False
    if pa.types.is_null(declared):
        return not pa.types.is_null(sent)
    if pa.types.is_decimal(sent) and sent.scale > 0:
        return pa.types.is_integer(declared) or (
            pa.types.is_decimal(declared) and declared.scale < sent.scale
        )
    return False
