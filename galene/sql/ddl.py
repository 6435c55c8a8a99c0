"""CREATE TABLE semantics: a parsed CreateTable statement becomes a catalog Table.

Owns the Doris rules for a table definition: column types, key model and key columns
(explicit, or Doris' default short-key choice), aggregate types, partitions (RANGE bounds
normalized to [lower, upper), LIST values), distribution and buckets, properties, and the
hidden delete-sign column of UNIQUE tables. Ids for the table, its partitions and tablets
come from the caller's allocator, so the result can go straight into a journal op.
Errors carry Doris-like detail messages.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from decimal import Decimal, InvalidOperation

import msgspec
from sqlglot import exp

from galene.catalog.model import DELETE_SIGN, SEQUENCE_COL, Column, Partition, Table
from galene.common.errors import AnalysisError
from galene.common.types import ColumnType, TypeError_, make_type, parse_type
from galene.sql.dialect import (
    AggregationColumnConstraint,
    Galene,
    ListPartition,
    RangePartitionFixed,
    RangePartitionLessThan,
)
from galene.sql.statements import CreateTable, property_dict

SUPPORTED_AGGREGATIONS = ("SUM", "MIN", "MAX", "REPLACE", "REPLACE_IF_NOT_NULL")
DEFAULT_REPLICATION_ALLOCATION = "tag.location.default: 1"
# Doris picks the buckets of BUCKETS AUTO from data size; Galene starts every such table at 1.
AUTO_BUCKETS = 1
MAXVALUE = "MAXVALUE"

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

_DTYPE_NAMES = {
    exp.DType.TINYINT: "TINYINT",
    exp.DType.SMALLINT: "SMALLINT",
    exp.DType.INT: "INT",
    exp.DType.BIGINT: "BIGINT",
    exp.DType.INT128: "LARGEINT",
    exp.DType.FLOAT: "FLOAT",
    exp.DType.DOUBLE: "DOUBLE",
    exp.DType.DECIMAL: "DECIMAL",
    exp.DType.DATE: "DATE",
    exp.DType.DATETIME: "DATETIME",
    exp.DType.CHAR: "CHAR",
    exp.DType.VARCHAR: "VARCHAR",
    exp.DType.TEXT: "STRING",
    exp.DType.JSON: "JSON",
    exp.DType.BOOLEAN: "BOOLEAN",
}

_KEYS_TYPES = {
    exp.DuplicateKeyProperty: "DUP_KEYS",
    exp.UniqueKeyProperty: "UNIQUE_KEYS",
    exp.AggregateKeyProperty: "AGG_KEYS",
}


# --- types ------------------------------------------------------------------------------
def column_type_from_datatype(dt: exp.DataType) -> ColumnType:
    """A parsed column type as a canonical ColumnType (Doris limits apply)."""
    name = _DTYPE_NAMES.get(dt.this)
    if name is None:
        raise AnalysisError(f"Unsupported data type: {dt.sql(dialect=Galene)}")
    nums: list[int] = []
    for param in dt.expressions:
        value = param.this if isinstance(param, exp.DataTypeParam) else param
        try:
            nums.append(int(value.name))
        except (ValueError, AttributeError):
            raise AnalysisError(f"Unsupported data type: {dt.sql(dialect=Galene)}") from None
    if name == "VARCHAR" and not nums:
        nums = [65533]  # Doris: VARCHAR without a length is VARCHAR(65533)
    try:
        return make_type(name, nums, dt.sql(dialect=Galene))
    except TypeError_ as e:
        raise AnalysisError(str(e)) from None


# --- columns ----------------------------------------------------------------------------
def _literal_text(node: exp.Expr) -> str | None:
    """Default values and partition bounds as the literal text Doris keeps."""
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Literal):
        return node.name
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return f"-{node.this.name}"
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, exp.Paren):
        return _literal_text(node.this)
    if isinstance(node, exp.CurrentTimestamp):
        precision = node.this
        return f"CURRENT_TIMESTAMP({precision.name})" if precision is not None else "CURRENT_TIMESTAMP"
    if isinstance(node, exp.CurrentDate) or (
        isinstance(node, exp.Column) and not node.table and node.name.upper() == "CURRENT_DATE"
    ):
        return "CURRENT_DATE"
    raise AnalysisError(f"Unsupported value: {node.sql(dialect=Galene)}")


def _column_from_def(cdef: exp.ColumnDef) -> Column:
    name = cdef.name
    kind = cdef.args.get("kind")
    if not isinstance(kind, exp.DataType):
        raise AnalysisError(f"Column [{name}] has no data type")
    column = Column(name=name, type=column_type_from_datatype(kind))
    for constraint in cdef.args.get("constraints") or []:
        c = constraint.args.get("kind") if isinstance(constraint, exp.ColumnConstraint) else constraint
        if isinstance(c, exp.NotNullColumnConstraint):
            column.nullable = bool(c.args.get("allow_null"))
        elif isinstance(c, exp.DefaultColumnConstraint):
            column.default = _literal_text(c.this)
        elif isinstance(c, exp.CommentColumnConstraint):
            column.comment = c.this.name if c.this is not None else ""
        elif isinstance(c, AggregationColumnConstraint):
            column.aggregation = c.name.upper()
        else:
            text = constraint.sql(dialect=Galene)
            raise AnalysisError(f"Unsupported column attribute for column [{name}]: {text}")
    return column


def _check_names(columns: list[Column]) -> None:
    seen: set[str] = set()
    for c in columns:
        lower = c.name.lower()
        if lower in seen:
            raise AnalysisError(f"Duplicate column name '{c.name}'")
        if lower in (DELETE_SIGN.lower(), SEQUENCE_COL.lower()):
            raise AnalysisError(f"Column name '{c.name}' is reserved")
        seen.add(lower)


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


def _find(columns: list[Column], name: str) -> Column | None:
    lower = name.lower()
    return next((c for c in columns if c.name.lower() == lower), None)


def _apply_keys(columns: list[Column], keys_type: str, keys: list[str]) -> list[str]:
    if not keys:
        raise AnalysisError("Key columns should not be empty")
    for i, key in enumerate(keys):
        if _find(columns, key) is None:
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
        if c.type.name in ("FLOAT", "DOUBLE"):
            raise AnalysisError("Float or double can not used as a key, use decimal instead.")
        if c.type.name == "STRING":
            raise AnalysisError(f"String Type should not be used in key column[{c.name}].")
        if c.type.name == "JSON":
            raise AnalysisError(f"JSON type should not be used in key column[{c.name}].")
    for c in columns[len(keys) :]:
        if keys_type == "AGG_KEYS":
            if c.aggregation is None:
                raise AnalysisError(
                    f"AGG_KEYS table should specify aggregate type for non-key column[{c.name}]"
                )
            if c.aggregation not in SUPPORTED_AGGREGATIONS:
                raise AnalysisError(f"Aggregate type {c.aggregation} of column[{c.name}] is not supported")
            if c.aggregation == "SUM" and not c.type.is_numeric:
                raise AnalysisError(
                    f"Invalid aggregate function 'SUM' for column[{c.name}] of type {c.type.to_desc()}"
                )
        elif c.aggregation is not None:
            raise AnalysisError(
                f"{keys_type} table should not specify aggregate type for non-key column[{c.name}]"
            )
    return key_names


# --- partition values -------------------------------------------------------------------
def _normalize_value(value: str, column: Column) -> str:
    """A partition value in canonical text for its column type (what SHOW CREATE prints)."""
    t = column.type
    try:
        if t.is_integer:
            return str(int(value.strip()))
        if t.name == "DECIMAL":
            return str(Decimal(value.strip()))
        if t.name == "DATE":
            return _dt.date.fromisoformat(value.strip()[:10]).isoformat()
        if t.name == "DATETIME":
            text = value.strip()
            if len(text) == 10:
                text += " 00:00:00"
            return _dt.datetime.fromisoformat(text).isoformat(sep=" ")
        if t.name == "BOOLEAN":
            lowered = value.strip().lower()
            if lowered in ("true", "1"):
                return "true"
            if lowered in ("false", "0"):
                return "false"
            raise ValueError(value)
    except (ValueError, InvalidOperation):
        raise AnalysisError(
            f"Invalid {t.to_desc()} value '{value}' for partition column [{column.name}]"
        ) from None
    return value


def bound_sort_key(values: list[str] | None, columns: list[Column], upper: bool) -> tuple:
    """Comparable key of a bound. None = whole-tuple MIN (lower) or MAX (upper)."""
    if values is None:
        return ((2 if upper else 0, 0),) * len(columns)
    key = []
    for i, col in enumerate(columns):
        if i >= len(values):
            key.append((0, 0))  # missing trailing values are MIN
        elif values[i] == MAXVALUE:
            key.append((2, 0))
        else:
            key.append((1, _typed(values[i], col)))
    return tuple(key)


def _typed(value: str, column: Column):
    t = column.type
    if t.is_integer:
        return int(value)
    if t.name == "DECIMAL":
        return Decimal(value)
    return value  # ISO dates and datetimes order as text


def _bound_values(nodes: list[exp.Expr], columns: list[Column], what: str) -> list[str]:
    if len(nodes) > len(columns):
        raise AnalysisError(f"Partition values number is more than partition column number: {what}")
    out = []
    for node, col in zip(nodes, columns):
        if isinstance(node, exp.Var) and node.name.upper() == MAXVALUE:
            out.append(MAXVALUE)
            continue
        text = _literal_text(node)
        if text is None:
            raise AnalysisError(f"Partition value of column [{col.name}] can not be NULL: {what}")
        out.append(_normalize_value(text, col))
    return out


def _fmt_range(lower: list[str] | None, upper: list[str] | None) -> str:
    lo = "MINVALUE" if lower is None else ", ".join(lower)
    hi = MAXVALUE if upper is None else ", ".join(upper)
    return f"[({lo}), ({hi}))"


def _range_partitions(
    nodes: list[exp.Expr], columns: list[Column], alloc: Callable[[str], Partition]
) -> list[Partition]:
    parts: list[Partition] = []
    for node in nodes:
        if isinstance(node, RangePartitionLessThan):
            name = node.name
            values = _bound_values(node.expressions, columns, name)
            upper = None if values and all(v == MAXVALUE for v in values) else values
            upper_key = bound_sort_key(upper, columns, upper=True)
            # Doris: a LESS THAN partition starts where the highest range below it ends.
            below = [p for p in parts if bound_sort_key(p.range_upper, columns, True) < upper_key]
            lower = (
                max(below, key=lambda p: bound_sort_key(p.range_upper, columns, True)).range_upper
                if below
                else None
            )
        elif isinstance(node, RangePartitionFixed):
            name = node.name
            lower = _bound_values(node.args["lower"], columns, name)
            values = _bound_values(node.args["upper"], columns, name)
            upper = None if values and all(v == MAXVALUE for v in values) else values
            if any(v == MAXVALUE for v in lower):
                raise AnalysisError(f"The lower values of partition {name} can not be MAXVALUE")
        else:
            raise AnalysisError(
                "Only VALUES LESS THAN and VALUES [...) partitions are supported in RANGE partitioning"
            )
        lo_key = bound_sort_key(lower, columns, upper=False)
        hi_key = bound_sort_key(upper, columns, upper=True)
        if lo_key >= hi_key:
            raise AnalysisError(
                f"The lower values must smaller than upper values: partition {name} {_fmt_range(lower, upper)}"
            )
        for p in parts:
            p_lo = bound_sort_key(p.range_lower, columns, False)
            p_hi = bound_sort_key(p.range_upper, columns, True)
            if lo_key < p_hi and p_lo < hi_key:
                raise AnalysisError(
                    f"Range {_fmt_range(lower, upper)} of partition {name} is intersected with range "
                    f"{_fmt_range(p.range_lower, p.range_upper)} of partition {p.name}"
                )
        part = alloc(name)
        part.range_lower, part.range_upper = lower, upper
        parts.append(part)
    parts.sort(key=lambda p: bound_sort_key(p.range_lower, columns, False))
    return parts


def _list_partitions(
    nodes: list[exp.Expr], columns: list[Column], alloc: Callable[[str], Partition]
) -> list[Partition]:
    parts: list[Partition] = []
    seen: dict[tuple, str] = {}
    for node in nodes:
        if not isinstance(node, ListPartition):
            raise AnalysisError("Only VALUES IN partitions are supported in LIST partitioning")
        name = node.name
        items: list[list[str]] = []
        for value in node.expressions:
            elements = value.expressions if isinstance(value, exp.Tuple) else [value]
            if len(elements) != len(columns):
                raise AnalysisError(
                    f"partition item's size [{len(elements)}] is not equal to partition column size [{len(columns)}]"
                )
            item = _bound_values(elements, columns, name)
            if MAXVALUE in item:
                raise AnalysisError(f"MAXVALUE is not allowed in list partition {name}")
            key = tuple(_typed(v, c) for v, c in zip(item, columns))
            if key in seen:
                raise AnalysisError(
                    f"The partition key[{', '.join(item)}] in partition item[{name}] is conflict"
                )
            seen[key] = name
            items.append(item)
        if not items:
            raise AnalysisError(f"List partition {name} has no values")
        part = alloc(name)
        part.list_values = items
        parts.append(part)
    return parts


# --- the table --------------------------------------------------------------------------
def _partition_columns(prop: exp.Expr, columns: list[Column], keys_type: str, kind: str) -> list[Column]:
    result: list[Column] = []
    for node in prop.args.get("partition_expressions") or []:
        if not isinstance(node, (exp.Column, exp.Identifier)) or (
            isinstance(node, exp.Column) and node.table
        ):
            raise AnalysisError(f"Unsupported partition expression: {node.sql(dialect=Galene)}")
        col = _find(columns, node.name)
        if col is None:
            raise AnalysisError(f"Partition column[{node.name}] does not exist in column list.")
        if col.aggregation is not None:
            raise AnalysisError("The partition column could not be aggregated column")
        if keys_type != "DUP_KEYS" and not col.is_key:
            raise AnalysisError(f"The partition column[{col.name}] must be key column in {keys_type} table")
        if col.type.name in ("FLOAT", "DOUBLE"):
            raise AnalysisError("Floating point type column can not be partition column")
        if col.type.name in ("STRING", "JSON"):
            raise AnalysisError(
                f"Column[{col.name}] type[{col.type.to_desc()}] cannot be a {kind.lower()} partition key."
            )
        if col in result:
            raise AnalysisError(f"Duplicated partition column {col.name}")
        result.append(col)
    if not result:
        raise AnalysisError("Partition columns are missing")
    return result


def table_from_create(
    stmt: CreateTable,
    *,
    db_id: int,
    alloc_id: Callable[[], int],
    now: float,
    columns: list[Column] | None = None,
) -> Table:
    """Build the catalog Table a CREATE TABLE defines.

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
        cols = [_column_from_def(d) for d in defs]
    if not cols:
        raise AnalysisError("Table should contain at least one column")
    _check_names(cols)

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
            col = _find(cols, ident.name)
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
        pcols = _partition_columns(partition_prop, cols, keys_type, kind)
        partition_type = kind
        partition_columns = [c.name for c in pcols]
        nodes = partition_prop.args.get("create_expressions") or []
        if any(isinstance(n, exp.PartitionByRangePropertyDynamic) for n in nodes):
            raise AnalysisError("FROM ... TO ... INTERVAL partitions are not supported; list the partitions")
        names = [n.name for n in nodes]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise AnalysisError(f"Duplicated partition name: {dup}")
        if kind == "RANGE":
            partitions = _range_partitions(nodes, pcols, alloc_partition)
        else:
            partitions = _list_partitions(nodes, pcols, alloc_partition)

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
    )
