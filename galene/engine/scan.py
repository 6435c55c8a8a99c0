"""Reading one table at one snapshot version as a Spark DataFrame, with Doris key semantics.

A snapshot at version V is the table's rowsets with `version <= V`. What a query sees of
them depends on the key model:

* DUP_KEYS: every row. The frame is a plain Parquet read of the files with an explicit
  schema — no extra columns, no extra operators — so it costs exactly what raw Spark costs.
* UNIQUE_KEYS: per key, the row of the highest-version rowset; rows whose delete sign is
  set are then dropped (a newer delete hides older values); hidden columns are not output.
* AGG_KEYS: one row per key, value columns folded with their aggregation (SUM, MIN, MAX,
  REPLACE, REPLACE_IF_NOT_NULL); REPLACE takes the value from the highest version.

The version of a row is the version of the rowset its file belongs to, attached only when more
than one version is visible (a table with a single rowset version needs no merging across
versions). How depends on the engine:

* Apache Spark reports each row's file (`_metadata.file_name`; rowset ids make names unique in
  a table): one read of all files, the version looked up in a literal map.
* Sail has no file metadata column: one read per version with the version as a literal, the
  reads combined by UNION ALL as a balanced tree (a left-deep chain of 300 unions overflowed
  Sail's stack). On Apache Spark this shape is 2-60x slower than the map (measured: 10
  versions 0.75 s vs 0.23 s, 300 versions 63 s vs 1.1 s), so Spark keeps the map.

`file_names` says which: True (Apache Spark), False (Sail), None (find out once per session:
an external Spark Connect server may be either).
"""

from __future__ import annotations

import json
import threading
import weakref
from collections import defaultdict

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
)

from galene.catalog.model import DELETE_SIGN, Column, Rowset, Table, columns_at, key_columns
from galene.common.errors import GaleneError
from galene.common.types import ColumnType

VERSION_COL = "__galene_version"
_PLAIN_NAME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
_ROW_NUMBER_COL = "__galene_rn"

_SPARK_TYPES: dict[str, DataType] = {
    "TINYINT": ByteType(),
    "SMALLINT": ShortType(),
    "INT": IntegerType(),
    "BIGINT": LongType(),
    "FLOAT": FloatType(),
    "DOUBLE": DoubleType(),
    "DATE": DateType(),
    "TIMESTAMP_NTZ": TimestampNTZType(),
    "STRING": StringType(),
    "BOOLEAN": BooleanType(),
    "BINARY": BinaryType(),
}


def spark_type(ctype: ColumnType) -> DataType:
    """The Spark DataType a column of `ctype` is read as (built without the JVM).

    Built bottom-up over the type tree (at most MAX_NESTING levels: galene.common.types)."""
    order, todo = [], [ctype]
    while todo:
        t = todo.pop()
        order.append(t)
        todo.extend(t.children)
    built: dict[int, DataType] = {}
    for t in reversed(order):  # children before parents
        children = [built[id(c)] for c in t.children]
        if t.name == "ARRAY":
            out: DataType = ArrayType(children[0], True)
        elif t.name == "MAP":
            out = MapType(children[0], children[1], True)
        elif t.name == "STRUCT":
            out = StructType([StructField(n, c, True) for n, c in zip(t.field_names, children, strict=True)])
        else:
            out = _scalar_spark_type(t.to_spark_ddl())
        built[id(t)] = out
    return built[id(ctype)]


def _scalar_spark_type(ddl: str) -> DataType:
    name, _, args = ddl.partition("(")
    name = name.strip().upper()
    if name == "DECIMAL":
        precision, _, scale = args.rstrip(")").partition(",")
        return DecimalType(int(precision), int(scale or 0))
    if name == "ARRAY<BIGINT>":
        return ArrayType(LongType(), True)
    if name == "ARRAY<DOUBLE>":
        return ArrayType(DoubleType(), True)
    return _SPARK_TYPES[name]


def spark_schema(table: Table, include_hidden: bool) -> StructType:
    """Read schema of the table's files: every column (with hidden ones) or the visible ones."""
    columns = table.columns if include_hidden else table.visible_columns()
    return StructType([StructField(c.name, spark_type(c.type), True) for c in columns])


def visible_rowsets(table: Table, version: int | None = None) -> list[Rowset]:
    """Rowsets with files that a snapshot read at `version` (default: the visible one) sees."""
    v = table.visible_version if version is None else version
    return [r for r in table.rowsets if r.version <= v and r.files]


def file_uri(storage_uri: str, relative_path: str) -> str:
    return storage_uri.rstrip("/") + "/" + relative_path.lstrip("/")


def table_frame(
    spark: SparkSession,
    table: Table,
    storage_uri: str,
    version: int | None = None,
    *,
    file_names: bool | None = None,
) -> DataFrame:
    """The table as a query sees it at `version` (None = `table.visible_version`).

    `file_names`: whether the engine reports each row's file (see the module docstring)."""
    rowsets = visible_rowsets(table, version)
    if not rowsets:
        return empty_frame(spark, spark_schema(table, include_hidden=False))
    if table.keys_type == "DUP_KEYS":
        return _versioned_read(spark, table, rowsets, storage_uri, False, include_hidden=False)
    keys = key_columns(table)
    if not keys:
        raise GaleneError(f"table {table.name} of type {table.keys_type} has no key columns")
    if table.keys_type == "UNIQUE_KEYS":
        return _unique_frame(spark, table, keys, rowsets, storage_uri, file_names)
    if table.keys_type == "AGG_KEYS":
        return _agg_frame(spark, table, keys, rowsets, storage_uri, file_names)
    raise GaleneError(f"unknown keys type {table.keys_type}")


# Above this many files, the path list crosses into the JVM as one string: py4j would
# otherwise convert a Python list element by element, one round trip per file.
_BULK_PATHS_MIN = 64


def read_parquet(spark: SparkSession, schema: StructType, paths: list[str]) -> DataFrame:
    """Parquet files read with an explicit schema (no inference, no footer sampling)."""
    reader = spark.read.schema(schema)
    jvm = getattr(spark, "_jvm", None)  # None for Spark Connect, where paths travel in one message
    if jvm is None or len(paths) < _BULK_PATHS_MIN or any("\n" in p for p in paths):
        return reader.parquet(*paths)
    jpaths = jvm.java.util.regex.Pattern.compile("\n").splitAsStream("\n".join(paths)).toList()
    return DataFrame(reader._jreader.parquet(jvm.PythonUtils.toSeq(jpaths)), spark)


def empty_frame(spark: SparkSession, schema: StructType) -> DataFrame:
    # range(0) + typed NULLs is planned entirely in the JVM (an empty LocalRelation after
    # optimization) and works the same on Spark Connect; no local data is shipped.
    return spark.range(0).select([F.lit(None).cast(f.dataType).alias(f.name) for f in schema.fields])


# Whether a Connect session's server resolves `_metadata.file_name` (asked once per session).
_file_names_of_session: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_probe_lock = threading.Lock()


# --- schema versions ---------------------------------------------------------------------
# A rowset's files hold the columns the table had when they were written (`Rowset.schema_version`,
# `Table.schema_history`). They are read with that schema and mapped to today's columns by column
# id: a renamed column is read under its old name, a dropped one is not read, an added one reads as
# its default (or NULL), a widened type is cast. Files are never rewritten for a schema change
# (compaction writes its output with the current schema). Rowsets of the current version, the
# usual case, are read exactly as before: no projection.


def _sql_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _default_value(c: Column) -> SparkColumn:
    """What a row written before column `c` existed reads as: its default, else NULL."""
    t = spark_type(c.type)
    default = c.default
    if default is None or default.upper().startswith(("CURRENT_TIMESTAMP", "CURRENT_DATE", "NOW")):
        return F.lit(None).cast(t)
    return F.lit(default).cast(t)


def file_read_plan(
    table: Table, file_columns: list[Column], include_hidden: bool
) -> tuple[StructType, list[SparkColumn] | None]:
    """(read schema, projection) for files written with `file_columns`: the projection maps them
    to the table's current columns (all, or the visible ones); None when they are current."""
    if file_columns is table.columns:
        return spark_schema(table, include_hidden), None
    target = table.columns if include_hidden else table.visible_columns()
    by_id = {c.id: c for c in file_columns if c.id}
    read: list[StructField] = []
    projection: list[SparkColumn] = []
    for c in target:
        old = by_id.get(c.id) if c.id else None
        if old is None:
            projection.append(_default_value(c).alias(c.name))
            continue
        read.append(StructField(old.name, spark_type(old.type), True))
        col = F.col(_sql_name(old.name))
        if old.type.to_spark_ddl() != c.type.to_spark_ddl():
            col = col.cast(spark_type(c.type))
        projection.append(col.alias(c.name))
    if not read:  # every column these files have was dropped: read one, for the rows
        first = file_columns[0]
        read.append(StructField(first.name, spark_type(first.type), True))
    return StructType(read), projection


def schema_groups(table: Table, rowsets: list[Rowset]) -> list[tuple[list[Column], list[Rowset]]]:
    """The rowsets by the schema their files were written with (the current one first)."""
    groups: dict[int, list[Rowset]] = defaultdict(list)
    for r in rowsets:
        groups[r.schema_version].append(r)
    order = sorted(groups, key=lambda v: (v != table.schema_version, v))
    return [(columns_at(table, v), groups[v]) for v in order]


def union_tree(frames: list[DataFrame]) -> DataFrame:
    """UNION ALL (by position) as a balanced tree: depth log2(n), never a chain as deep as n."""
    while len(frames) > 1:
        frames = [
            frames[i].unionAll(frames[i + 1]) if i + 1 < len(frames) else frames[i]
            for i in range(0, len(frames), 2)
        ]
    return frames[0]


def _versioned_read(
    spark: SparkSession,
    table: Table,
    rowsets: list[Rowset],
    storage_uri: str,
    with_version: bool,
    file_names: bool | None = None,
    include_hidden: bool = True,
) -> DataFrame:
    """The rowsets' rows in the table's current columns (all, or the visible ones), plus
    VERSION_COL (the rowset version) if asked."""
    frames = []
    for file_columns, group in schema_groups(table, rowsets):
        schema, projection = file_read_plan(table, file_columns, include_hidden)
        df = _read_files(spark, schema, group, storage_uri, with_version, file_names)
        if projection is not None:
            df = df.select(*projection, *([F.col(VERSION_COL)] if with_version else []))
        frames.append(df)
    return union_tree(frames)


def _read_files(
    spark: SparkSession,
    schema: StructType,
    rowsets: list[Rowset],
    storage_uri: str,
    with_version: bool,
    file_names: bool | None = None,
) -> DataFrame:
    """The rowsets' files read with `schema`, plus VERSION_COL (the rowset version) if asked."""
    paths = [file_uri(storage_uri, f) for r in rowsets for f in r.files]
    if not with_version:
        return read_parquet(spark, schema, paths)
    if file_names is not False:
        df = _read_with_file_versions(spark, schema, rowsets, paths)
        if df is not None and (file_names or _resolves_file_names(spark, df)):
            return df
    return _read_per_version(spark, schema, rowsets, storage_uri)


def _resolves_file_names(spark: SparkSession, df: DataFrame) -> bool:
    """Whether the session's engine resolves `_metadata.file_name` (used by `df`): Apache Spark
    does; a Connect server, which may be Spark or Sail, is asked once per session."""
    if getattr(spark, "_jvm", None) is not None:
        return True
    with _probe_lock:
        known = _file_names_of_session.get(spark)
    if known is None:
        try:
            df.schema  # noqa: B018 - analysis on the server: one round trip
            known = True
        except Exception as e:  # Sail: "attribute … _metadata … is missing from the schema"
            if "_metadata" not in str(e):
                raise
            known = False
        with _probe_lock:
            _file_names_of_session[spark] = known
    return known


def _read_with_file_versions(
    spark: SparkSession, schema: StructType, rowsets: list[Rowset], paths: list[str]
) -> DataFrame | None:
    """One read of every file, VERSION_COL looked up by file name; None if names are ambiguous."""
    version_of_name: dict[str, int] = {}
    names_unique = True
    for r in rowsets:
        for f in r.files:
            name = f.rsplit("/", 1)[-1]
            # Spark reports file names URL-encoded; only names that encode to themselves
            # (rowset ids are hex) can be matched against the literal map.
            if name in version_of_name or not _PLAIN_NAME.issuperset(name):
                names_unique = False
            version_of_name[name] = r.version
    if not names_unique:
        # Same file name under two tablets, or unusual names: one read per version instead.
        return None
    # One JSON string literal instead of a literal per file: building the map costs one
    # call into the JVM whatever the number of files, and the optimizer folds
    # from_json(literal) into a map literal evaluated once.
    version_map = F.from_json(F.lit(json.dumps(version_of_name)), MapType(StringType(), LongType()))
    df = read_parquet(spark, schema, paths)
    return df.withColumn(VERSION_COL, version_map[F.col("_metadata.file_name")])


def _read_per_version(
    spark: SparkSession, schema: StructType, rowsets: list[Rowset], storage_uri: str
) -> DataFrame:
    """One read per rowset version with VERSION_COL as a literal, combined by UNION ALL."""
    files_by_version: dict[int, list[str]] = defaultdict(list)
    for r in rowsets:
        files_by_version[r.version].extend(file_uri(storage_uri, f) for f in r.files)
    frames = [
        read_parquet(spark, schema, files).withColumn(VERSION_COL, F.lit(v).cast("long"))
        for v, files in sorted(files_by_version.items())
    ]
    # A balanced tree of unions: depth log2(versions), where a left-deep chain is as deep as
    # there are versions (Sail's planner recursed past its stack at 300).
    while len(frames) > 1:
        frames = [
            frames[i].unionAll(frames[i + 1]) if i + 1 < len(frames) else frames[i]
            for i in range(0, len(frames), 2)
        ]
    return frames[0]


def _visible_select(table: Table) -> list[str]:
    return [c.name for c in table.visible_columns()]


def _unique_frame(
    spark: SparkSession,
    table: Table,
    keys: list[str],
    rowsets: list[Rowset],
    storage_uri: str,
    file_names: bool | None,
) -> DataFrame:
    # Keys are unique within one rowset (deduplicated at write time) and a key lives in one
    # tablet, so merging is only needed when some tablet has more than one visible rowset.
    # (After compaction every tablet has one rowset, each at its own version.)
    several_versions = len({r.tablet_id for r in rowsets}) < len(rowsets)
    df = _versioned_read(spark, table, rowsets, storage_uri, several_versions, file_names)
    if several_versions:
        # row_number() = 1 lets Spark insert a per-partition group limit before the shuffle.
        # With a sequence column the highest sequence value wins and the version only breaks
        # ties (a late load with an older sequence value does not replace a newer row).
        order = [F.col(VERSION_COL).desc()]
        seq_col = table.sequence_column()
        seq = seq_col.name if seq_col is not None else None
        if seq is not None:
            order.insert(0, F.col(seq).desc_nulls_last())
        latest_first = Window.partitionBy(*keys).orderBy(*order)
        df = df.withColumn(_ROW_NUMBER_COL, F.row_number().over(latest_first)).where(
            F.col(_ROW_NUMBER_COL) == 1
        )
    if table.column(DELETE_SIGN) is not None:
        # The delete sign may be stored as TINYINT (Doris) or BOOLEAN: anything but 0 deletes.
        df = df.where(F.coalesce(F.col(DELETE_SIGN).cast("int"), F.lit(0)) == 0)
    return df.select(*_visible_select(table))


def _agg_frame(
    spark: SparkSession,
    table: Table,
    keys: list[str],
    rowsets: list[Rowset],
    storage_uri: str,
    file_names: bool | None,
) -> DataFrame:
    key_set = {k.lower() for k in keys}
    values = [c for c in table.columns if c.name.lower() not in key_set and not c.hidden]
    needs_version = len({r.version for r in rowsets}) > 1 and any(
        _aggregation(c) in ("REPLACE", "REPLACE_IF_NOT_NULL") for c in values
    )
    df = _versioned_read(spark, table, rowsets, storage_uri, needs_version, file_names)
    aggs = [aggregate_column(c, needs_version) for c in values]
    if aggs:
        df = df.groupBy(*keys).agg(*aggs)
    else:
        df = df.select(*keys).distinct()
    return df.select(*_visible_select(table))


def _aggregation(c: Column) -> str:
    # A value column without an aggregation keeps the latest value (REPLACE), as Doris does
    # for value columns of a table whose definition omits it.
    return (c.aggregation or "REPLACE").upper()


def aggregate_column(c: Column, by_version: bool) -> SparkColumn:
    """A value column of an AGGREGATE table folded over one key's rows with its aggregation
    (SUM keeping the column's type, MIN, MAX, REPLACE and REPLACE_IF_NOT_NULL by version when
    `by_version`, i.e. when the rows carry VERSION_COL): the read-time merge compaction shares."""
    col = F.col(c.name)
    target = spark_type(c.type)
    agg = _aggregation(c)
    if agg == "SUM":
        # Spark widens SUM (INT -> BIGINT, DECIMAL(p) -> DECIMAL(p+10)); Doris keeps the type.
        out = F.sum(col).cast(target)
    elif agg == "MIN":
        out = F.min(col)
    elif agg == "MAX":
        out = F.max(col)
    elif agg == "REPLACE":
        out = F.max_by(col, F.col(VERSION_COL)) if by_version else F.any_value(col)
    elif agg == "REPLACE_IF_NOT_NULL":
        if by_version:
            # Rows whose value is NULL get a NULL ordering and are never picked by max_by.
            out = F.max_by(col, F.when(col.isNotNull(), F.col(VERSION_COL)))
        else:
            out = F.any_value(col, ignoreNulls=True)
    elif agg == "BITMAP_UNION":
        # A bitmap is a sorted distinct BIGINT list: the union of a key's lists, vectorized.
        out = F.sort_array(F.array_distinct(F.flatten(F.collect_list(col))))  # array_sort runs a lambda comparator
    elif agg == "HLL_UNION":
        out = F.hll_union_agg(col, True)  # DataSketches HLL sketches of any lgK
    elif agg == "QUANTILE_UNION":
        out = F.flatten(F.collect_list(col))
    else:
        raise GaleneError(f"aggregation {agg} of column {c.name} is not supported")
    return out.alias(c.name)
