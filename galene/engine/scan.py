"""Reading one table at one snapshot version as a Spark DataFrame, with Doris key semantics.

A snapshot at version V is the table's rowsets with `version <= V`. What a query sees of
them depends on the key model:

* DUP_KEYS: every row. The frame is a plain Parquet read of the files with an explicit
  schema — no extra columns, no extra operators — so it costs exactly what raw Spark costs.
* UNIQUE_KEYS: per key, the row of the highest-version rowset; rows whose delete sign is
  set are then dropped (a newer delete hides older values); hidden columns are not output.
* AGG_KEYS: one row per key, value columns folded with their aggregation (SUM, MIN, MAX,
  REPLACE, REPLACE_IF_NOT_NULL); REPLACE takes the value from the highest version.

The version of a row is the version of the rowset its file belongs to. It is attached by
looking the file name (`_metadata.file_name`; rowset ids make names unique in a table) up
in a literal map, and only when more than one version is visible — a table with a single
rowset version needs no merging across versions.
"""

from __future__ import annotations

import json
from collections import defaultdict

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
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

from galene.catalog.model import DELETE_SIGN, Column, Rowset, Table
from galene.common.errors import GaleneError

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
}


def spark_type(ddl: str) -> DataType:
    """The Spark DataType of a `ColumnType.to_spark_ddl()` string (built without the JVM)."""
    name, _, args = ddl.partition("(")
    name = name.strip().upper()
    if name == "DECIMAL":
        precision, _, scale = args.rstrip(")").partition(",")
        return DecimalType(int(precision), int(scale or 0))
    return _SPARK_TYPES[name]


def spark_schema(table: Table, include_hidden: bool) -> StructType:
    """Read schema of the table's files: every column (with hidden ones) or the visible ones."""
    columns = table.columns if include_hidden else table.visible_columns()
    return StructType([StructField(c.name, spark_type(c.type.to_spark_ddl()), True) for c in columns])


def visible_rowsets(table: Table, version: int | None = None) -> list[Rowset]:
    """Rowsets with files that a snapshot read at `version` (default: the visible one) sees."""
    v = table.visible_version if version is None else version
    return [r for r in table.rowsets if r.version <= v and r.files]


def file_uri(storage_uri: str, relative_path: str) -> str:
    return storage_uri.rstrip("/") + "/" + relative_path.lstrip("/")


def table_frame(spark: SparkSession, table: Table, storage_uri: str, version: int | None = None) -> DataFrame:
    """The table as a query sees it at `version` (None = `table.visible_version`)."""
    rowsets = visible_rowsets(table, version)
    if not rowsets:
        return empty_frame(spark, spark_schema(table, include_hidden=False))
    if table.keys_type == "DUP_KEYS":
        paths = [file_uri(storage_uri, f) for r in rowsets for f in r.files]
        return read_parquet(spark, spark_schema(table, include_hidden=False), paths)
    keys = _key_columns(table)
    if not keys:
        raise GaleneError(f"table {table.name} of type {table.keys_type} has no key columns")
    if table.keys_type == "UNIQUE_KEYS":
        return _unique_frame(spark, table, keys, rowsets, storage_uri)
    if table.keys_type == "AGG_KEYS":
        return _agg_frame(spark, table, keys, rowsets, storage_uri)
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


def _key_columns(table: Table) -> list[str]:
    if table.key_columns:
        return list(table.key_columns)
    return [c.name for c in table.columns if c.is_key]


def _versioned_read(
    spark: SparkSession, table: Table, rowsets: list[Rowset], storage_uri: str, with_version: bool
) -> DataFrame:
    """All columns of the rowsets' files, plus VERSION_COL (the rowset version) if asked."""
    schema = spark_schema(table, include_hidden=True)
    paths = [file_uri(storage_uri, f) for r in rowsets for f in r.files]
    if not with_version:
        return read_parquet(spark, schema, paths)
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
    if names_unique:
        # One JSON string literal instead of a literal per file: building the map costs one
        # call into the JVM whatever the number of files, and the optimizer folds
        # from_json(literal) into a map literal evaluated once.
        version_map = F.from_json(F.lit(json.dumps(version_of_name)), MapType(StringType(), LongType()))
        df = read_parquet(spark, schema, paths)
        return df.withColumn(VERSION_COL, version_map[F.col("_metadata.file_name")])
    # Same file name under two tablets, or unusual names: fall back to one read per version.
    files_by_version: dict[int, list[str]] = defaultdict(list)
    for r in rowsets:
        files_by_version[r.version].extend(file_uri(storage_uri, f) for f in r.files)
    frames = [
        read_parquet(spark, schema, files).withColumn(VERSION_COL, F.lit(v).cast("long"))
        for v, files in sorted(files_by_version.items())
    ]
    df = frames[0]
    for other in frames[1:]:
        df = df.unionAll(other)
    return df


def _visible_select(table: Table) -> list[str]:
    return [c.name for c in table.visible_columns()]


def _unique_frame(
    spark: SparkSession, table: Table, keys: list[str], rowsets: list[Rowset], storage_uri: str
) -> DataFrame:
    # Keys are unique within one rowset version (deduplicated at write time), so merging is
    # only needed when more than one version is visible.
    several_versions = len({r.version for r in rowsets}) > 1
    df = _versioned_read(spark, table, rowsets, storage_uri, with_version=several_versions)
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
    spark: SparkSession, table: Table, keys: list[str], rowsets: list[Rowset], storage_uri: str
) -> DataFrame:
    key_set = {k.lower() for k in keys}
    values = [c for c in table.columns if c.name.lower() not in key_set and not c.hidden]
    needs_version = len({r.version for r in rowsets}) > 1 and any(
        _aggregation(c) in ("REPLACE", "REPLACE_IF_NOT_NULL") for c in values
    )
    df = _versioned_read(spark, table, rowsets, storage_uri, with_version=needs_version)
    aggs = [_aggregate(c, needs_version) for c in values]
    if aggs:
        df = df.groupBy(*keys).agg(*aggs)
    else:
        df = df.select(*keys).distinct()
    return df.select(*_visible_select(table))


def _aggregation(c: Column) -> str:
    # A value column without an aggregation keeps the latest value (REPLACE), as Doris does
    # for value columns of a table whose definition omits it.
    return (c.aggregation or "REPLACE").upper()


def _aggregate(c: Column, by_version: bool) -> SparkColumn:
    col = F.col(c.name)
    target = spark_type(c.type.to_spark_ddl())
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
    else:
        raise GaleneError(f"aggregation {agg} of column {c.name} is not supported")
    return out.alias(c.name)
