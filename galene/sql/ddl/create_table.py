"""CREATE TABLE semantics: a parsed CreateTable statement becomes a catalog Table.

Owns the Doris rules for a table definition as a whole: the key model and key columns
(explicit, or Doris' default short-key choice), distribution and buckets, properties, the
hidden delete-sign column of UNIQUE tables and the sequence column; columns, partitions and
indexes are read by `columns`, `partitions` and `indexes` next to it. Ids for the table, its
partitions and tablets come from the caller's allocator, so the result can go straight into
a journal op. Errors carry Doris-like detail messages.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
from sqlglot import exp

from galene.catalog.model import DELETE_SIGN, SEQUENCE_COL, Column, Index, Partition, Table
from galene.common.errors import AnalysisError
from galene.common.types import ColumnType, TypeError_, parse_type
from galene.sql import nodes
from galene.sql.ddl.columns import (
    check_key_type,
    check_names,
    check_value_aggregation,
    column_from_def,
    find_column,
)
from galene.sql.ddl.indexes import index_from_def
from galene.sql.ddl.partitions import list_partitions, range_partitions, read_partition_columns
from galene.sql.dialect import Galene
from galene.sql.statements.reading import property_dict
from galene.sql.statements.schema import CreateTable

DEFAULT_REPLICATION_ALLOCATION = "tag.location.default: 1"


# Doris picks the buckets of BUCKETS AUTO from data size; Galene starts every such table at 1.
AUTO_BUCKETS = 1


# Doris' default DUPLICATE KEY: leading columns while they fit the short key (3 columns,
# 36 bytes); a VARCHAR ends it (included), types that cannot be short keys end it (excluded).
_SHORT_KEY_MAX_COLUMNS = 3


_SHORT_KEY_MAX_BYTES = 36


_INDEX_SIZE = {
    "TINYINT": 1,
    "BOOLEAN": 1,
    "SMALLINT": 2,
    "INT": 4,
    "BIGINT": 8,
    "LARGEINT": 16,
    "DATE": 4,
    "DATETIME": 8,
    "DECIMAL": 16,
    "CHAR": 20,
    "VARCHAR": 20,
}


_KEYS_TYPES = {
    exp.DuplicateKeyProperty: "DUP_KEYS",
    exp.UniqueKeyProperty: "UNIQUE_KEYS",
    exp.AggregateKeyProperty: "AGG_KEYS",
}


# --- keys -------------------------------------------------------------------------------------


def _default_dup_keys(columns: list[Column]) -> list[str]:
    keys: list[str] = []
    size = 0
    for c in columns:
        size += _INDEX_SIZE.get(c.type.name, 0)
        if len(keys) >= _SHORT_KEY_MAX_COLUMNS or size > _SHORT_KEY_MAX_BYTES:
            if not keys and c.type.name in ("CHAR", "VARCHAR"):
                keys.append(c.name)
            break
        if c.type.name not in _INDEX_SIZE:  # FLOAT, DOUBLE, STRING, JSON cannot be short keys
            break
        keys.append(c.name)
        if c.type.name == "VARCHAR":
            break
    if not keys:
        raise AnalysisError(
            "The olap table first column could not be float, double, string or array, struct, map, "
            "please use decimal or varchar instead."
        )
    return keys


def _apply_keys(columns: list[Column], keys_type: str, keys: list[str]) -> list[str]:
    if not keys:
        raise AnalysisError("Key columns should not be empty")
    for i, key in enumerate(keys):
        if find_column(columns, key) is None:
            raise AnalysisError(f"Key column[{key}] doesn't exist.")
        if i >= len(columns) or columns[i].name.lower() != key.lower():
            raise AnalysisError("Key columns should be a ordered prefix of the schema.")
    if len({k.lower() for k in keys}) != len(keys):
        raise AnalysisError("Duplicate key column in KEY clause")
    key_names = [c.name for c in columns[: len(keys)]]
    for c in columns[: len(keys)]:
        c.is_key = True
        if c.aggregation is not None:
            raise AnalysisError(f"Key column[{c.name}] should not specify aggregate type")
        check_key_type(c)
    for c in columns[len(keys) :]:
        if keys_type == "AGG_KEYS":
            if c.aggregation is None:
                raise AnalysisError(
                    f"AGG_KEYS table should specify aggregate type for non-key column[{c.name}]"
                )
            check_value_aggregation(c)
        elif c.aggregation is not None:
            raise AnalysisError(
                f"{keys_type} table should not specify aggregate type for non-key column[{c.name}]"
            )
    return key_names


def _add_sequence_column(keys_type: str, cols: list[Column], properties: dict[str, str]) -> None:
    """Check the sequence properties of a UNIQUE table; `function_column.sequence_type`
    adds Doris' hidden sequence column (loads fill it from `function_column.sequence_col`)."""
    seq_col = properties.get("function_column.sequence_col")
    seq_type = properties.get("function_column.sequence_type")
    if seq_col is None and seq_type is None:
        return
    if keys_type != "UNIQUE_KEYS":
        raise AnalysisError("sequence column only support UNIQUE_KEYS")
    if seq_col is not None and seq_type is not None:
        raise AnalysisError("The sequence_col and sequence_type cannot be set at the same time")
    if seq_col is not None:
        col = next((c for c in cols if c.name.lower() == seq_col.lower()), None)
        if col is None:
            raise AnalysisError(f"The specified sequence column[{seq_col}] not exists")
        ctype = col.type
    else:
        try:
            ctype = parse_type(seq_type or "")
        except TypeError_ as e:
            raise AnalysisError(str(e)) from None
    if not (ctype.is_integer or ctype.name in ("DATE", "DATETIME")):
        raise AnalysisError("sequence type only support integer types and datetime types")
    if seq_col is None:
        cols.append(Column(name=SEQUENCE_COL, type=ctype, nullable=True, hidden=True))


# --- the table --------------------------------------------------------------------------------


def table_from_create(
    stmt: CreateTable,
    *,
    db_id: int,
    alloc_id: Callable[[], int],
    now: float,
    columns: list[Column] | None = None,
    decimal256: bool = False,
) -> Table:
    """Build the catalog Table a CREATE TABLE defines.

    `decimal256` is the session's enable_decimal256 (DECIMAL columns of up to 76 digits).

    `columns` supplies the schema of a CTAS (derived by the caller from the query result);
    a names-only column list in the statement (`CREATE TABLE t (a, b) AS …`) renames them.
    Ids are drawn from `alloc_id` in this order: table, then per partition its id followed
    by one id per tablet (bucket).
    """
    create = stmt.expr
    schema = create.this if isinstance(create.this, exp.Schema) else None
    defs = [e for e in (schema.expressions if schema else []) if isinstance(e, exp.ColumnDef)]
    if columns is not None:
        # copies: the caller's columns are not mutated
        cols = [msgspec.structs.replace(c, is_key=False, aggregation=None) for c in columns]
        names = [e.name for e in (schema.expressions if schema else []) if isinstance(e, exp.Identifier)]
        names += [d.name for d in defs if d.args.get("kind") is None]
        if names:
            if len(names) != len(cols):
                raise AnalysisError("Number of columns don't equal number of SELECT statement's select list")
            for c, n in zip(cols, names):
                c.name = n
    else:
        if stmt.like is not None:
            raise AnalysisError("CREATE TABLE LIKE is resolved by the executor, not here")
        cols = [column_from_def(d, decimal256=decimal256) for d in defs]
    if not cols:
        raise AnalysisError("Table should contain at least one column")
    check_names(cols)

    engine = "OLAP"
    keys_type: str | None = None
    key_names: list[str] | None = None
    comment = ""
    partition_prop: exp.Expr | None = None
    distribution: exp.DistributedByProperty | None = None
    generic: list[exp.Expr] = []
    props = create.args.get("properties")
    for prop in props.expressions if props else []:
        if type(prop) in _KEYS_TYPES:
            if keys_type is not None:
                raise AnalysisError("Only one of DUPLICATE KEY, UNIQUE KEY and AGGREGATE KEY may be given")
            keys_type = _KEYS_TYPES[type(prop)]
            key_names = [k.name for k in prop.expressions]
        elif isinstance(prop, exp.EngineProperty):
            engine = prop.this.name.upper()
        elif isinstance(prop, exp.SchemaCommentProperty):
            comment = prop.this.name
        elif isinstance(prop, (exp.PartitionByRangeProperty, exp.PartitionByListProperty)):
            partition_prop = prop
        elif isinstance(prop, exp.DistributedByProperty):
            distribution = prop
        elif type(prop) is exp.Property:
            generic.append(prop)
        else:
            raise AnalysisError(f"Unsupported clause in CREATE TABLE: {prop.sql(dialect=Galene)}")
    if engine != "OLAP":
        raise AnalysisError(f"Unsupported table engine: {engine}; Galene tables are ENGINE=OLAP")
    # Doris prints COMMENT 'OLAP' for a table without a comment; reading it back means none.
    if comment == "OLAP":
        comment = ""

    if keys_type is None:
        aggregated = [c for c in cols if c.aggregation is not None]
        if aggregated:
            keys_type = "AGG_KEYS"
            key_names = [c.name for c in cols[: cols.index(aggregated[0])]]
            if not key_names:
                raise AnalysisError("The first column of an aggregate table must be a key column")
        else:
            keys_type = "DUP_KEYS"
            key_names = _default_dup_keys(cols)
    key_names = _apply_keys(cols, keys_type, key_names or [])

    # distribution
    if distribution is None:
        dist_type = "RANDOM" if keys_type == "DUP_KEYS" else "HASH"
        dist_cols = [] if dist_type == "RANDOM" else list(key_names)
        buckets, buckets_auto = AUTO_BUCKETS, True
    else:
        dist_type = (distribution.text("kind") or "HASH").upper()
        dist_cols = []
        for ident in distribution.expressions:
            col = find_column(cols, ident.name)
            if col is None:
                raise AnalysisError(f"Distribution column[{ident.name}] is not found.")
            if keys_type != "DUP_KEYS" and not col.is_key:
                raise AnalysisError(f"Distribution column[{col.name}] is not key column")
            if col.type.name in ("FLOAT", "DOUBLE"):
                raise AnalysisError(f"Floating point type column can not be distribution column[{col.name}]")
            if col.name in dist_cols:
                raise AnalysisError(f"Duplicated distribution column {col.name}")
            dist_cols.append(col.name)
        if dist_type == "HASH" and not dist_cols:
            raise AnalysisError("Hash distribution requires at least one column")
        if dist_type == "RANDOM":
            if keys_type == "UNIQUE_KEYS":
                raise AnalysisError("Random distribution for unique key table is unsupported")
            if keys_type == "AGG_KEYS" and any(
                c.aggregation in ("REPLACE", "REPLACE_IF_NOT_NULL") for c in cols
            ):
                raise AnalysisError(
                    "Random distribution for aggregate key table with REPLACE/REPLACE_IF_NOT_NULL is unsupported"
                )
        bucket_node = distribution.args.get("buckets")
        if bucket_node is None or (isinstance(bucket_node, exp.Var) and bucket_node.name.upper() == "AUTO"):
            buckets, buckets_auto = AUTO_BUCKETS, True
        else:
            buckets, buckets_auto = int(bucket_node.name), False
            if buckets <= 0:
                raise AnalysisError("Number of hash distribution should be larger than zero.")

    if keys_type == "UNIQUE_KEYS":
        cols.append(
            Column(
                name=DELETE_SIGN,
                type=ColumnType(name="TINYINT"),
                nullable=False,
                default="0",
                hidden=True,
            )
        )

    table_id = alloc_id()

    def alloc_partition(name: str) -> Partition:
        pid = alloc_id()
        return Partition(id=pid, name=name, tablet_ids=[alloc_id() for _ in range(buckets)])

    partition_type = "UNPARTITIONED"
    partition_columns: list[str] = []
    if partition_prop is None:
        partitions = [alloc_partition(stmt.name)]
    else:
        kind = "RANGE" if isinstance(partition_prop, exp.PartitionByRangeProperty) else "LIST"
        pcols = read_partition_columns(partition_prop, cols, keys_type, kind)
        partition_type = kind
        partition_columns = [c.name for c in pcols]
        definitions = partition_prop.args.get("create_expressions") or []
        if any(isinstance(n, exp.PartitionByRangePropertyDynamic) for n in definitions):
            raise AnalysisError("FROM ... TO ... INTERVAL partitions are not supported; list the partitions")
        names = [n.name for n in definitions]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise AnalysisError(f"Duplicated partition name: {dup}")
        if kind == "RANGE":
            partitions = range_partitions(definitions, pcols, alloc_partition)
        else:
            partitions = list_partitions(definitions, pcols, alloc_partition)

    indexes: list[Index] = []
    for idef in (e for e in (schema.expressions if schema else []) if isinstance(e, nodes.IndexDef)):
        index = index_from_def(idef, cols, keys_type, "Column does not exist in table")
        if any(i.name.lower() == index.name.lower() for i in indexes):
            raise AnalysisError("index name must be unique.")
        if any(
            i.index_type == index.index_type
            and [c.lower() for c in i.columns] == [c.lower() for c in index.columns]
            for i in indexes
        ):
            raise AnalysisError("same index columns have multiple same type index is not allowed.")
        indexes.append(index)

    properties = property_dict(generic)
    _add_sequence_column(keys_type, cols, properties)
    if "replication_allocation" not in properties:
        replicas = properties.get("replication_num", "1")
        properties["replication_allocation"] = f"tag.location.default: {replicas}"

    return Table(
        id=table_id,
        db_id=db_id,
        name=stmt.name,
        columns=cols,
        keys_type=keys_type,  # type: ignore[arg-type]
        key_columns=key_names,
        partition_type=partition_type,  # type: ignore[arg-type]
        partition_columns=partition_columns,
        partitions=partitions,
        distribution_type=dist_type,  # type: ignore[arg-type]
        distribution_columns=dist_cols,
        buckets=buckets,
        buckets_auto=buckets_auto,
        properties=properties,
        comment=comment,
        create_time=now,
        update_time=now,
        indexes=indexes,
    )
