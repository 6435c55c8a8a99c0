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

from galene.catalog.model import DELETE_SIGN, SEQUENCE_COL, Column, Index, Partition, Table
from galene.common.errors import AnalysisError
from galene.common.types import ColumnType, TypeError_, make_type, parse_type
from galene.sql import nodes
from galene.sql.dialect import Galene
from galene.sql.statements.reading import property_dict
from galene.sql.statements.schema import CreateTable

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
        elif isinstance(c, nodes.AggregationColumnConstraint):
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


# --- indexes ----------------------------------------------------------------------------
_NGRAM_DEFAULTS = {"gram_size": "2", "bf_size": "256"}
_NGRAM_BOUNDS = {"gram_size": (1, 255), "bf_size": (64, 65535)}


def index_from_def(idef: exp.Expr, columns: list[Column], keys_type: str, missing: str) -> Index:
    """An IndexDef (CREATE TABLE's INDEX, ADD INDEX, CREATE INDEX) checked as Doris'
    IndexDefinition does; `missing` starts the text for a column the table lacks."""
    name = idef.name
    kind = idef.args.get("kind") or "INVERTED"
    names = [c.name for c in idef.expressions]
    props = property_dict(idef.args.get("properties"))
    comment_node = idef.args.get("comment")
    comment = comment_node.name if comment_node is not None else ""
    if kind in ("INVERTED", "BITMAP"):
        if len(names) != 1:
            raise AnalysisError(f"{kind} index can only apply to a single column.")
        if not name:
            raise AnalysisError("index name cannot be blank.")
        if len(name) > 64:
            raise AnalysisError("index name too long, the index name length at most is 64.")
        if len({n.lower() for n in names}) != len(names):
            raise AnalysisError("columns of index has duplicated.")
    if kind == "NGRAM_BF":
        props = {**_NGRAM_DEFAULTS, **props}
    resolved: list[str] = []
    for col_name in names:
        col = _find([c for c in columns if not c.hidden], col_name)
        if col is None:
            raise AnalysisError(f"{missing}. invalid column: {col_name}")
        if col.type.name == "JSON":
            raise AnalysisError(
                f"{col.type.to_sql().upper()} is not supported in {kind} index. invalid index: {name}"
            )
        if not col.is_key and keys_type == "AGG_KEYS":
            raise AnalysisError(
                "index should only be used in columns of DUP_KEYS/UNIQUE_KEYS table or key columns of "
                f"AGG_KEYS table. invalid index: {name}"
            )
        if kind == "NGRAM_BF":
            if not col.type.is_string:
                raise AnalysisError(
                    f"{col.type.to_sql().upper()} is not supported in ngram_bf index. invalid column: {col.name}"
                )
            if len(props) != 2:
                raise AnalysisError("ngram_bf index should have gram_size and bf_size properties")
            for key, (low, high) in _NGRAM_BOUNDS.items():
                try:
                    value = int(props.get(key, ""))
                except ValueError:
                    value = None
                if value is None or not low <= value <= high:
                    raise AnalysisError(
                        f"invalid ngram bf index params:'{key}' should be an integer between {low} and {high}."
                    )
        resolved.append(col.name)
    return Index(name=name, columns=resolved, index_type=kind, properties=props, comment=comment)


def _check_index_unique(indexes: list[Index], new: Index) -> None:
    """ADD INDEX against the table's indexes (Doris' checkDuplicateIndexes)."""
    cols = {c.lower() for c in new.columns}
    for index in indexes:
        if index.name.lower() == new.name.lower():
            raise AnalysisError(f"index `{new.name}` already exist.")
        if index.index_type == new.index_type and {c.lower() for c in index.columns} == cols:
            raise AnalysisError(
                f"{new.index_type} index for columns ({','.join(new.columns)}) already exist."
            )


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


def _bound_values(bounds: list[exp.Expr], columns: list[Column], what: str) -> list[str]:
    if len(bounds) > len(columns):
        raise AnalysisError(f"Partition values number is more than partition column number: {what}")
    out = []
    for node, col in zip(bounds, columns):
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
    definitions: list[exp.Expr], columns: list[Column], alloc: Callable[[str], Partition]
) -> list[Partition]:
    parts: list[Partition] = []
    for node in definitions:
        if isinstance(node, nodes.RangePartitionLessThan):
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
        elif isinstance(node, nodes.RangePartitionFixed):
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
    definitions: list[exp.Expr], columns: list[Column], alloc: Callable[[str], Partition]
) -> list[Partition]:
    parts: list[Partition] = []
    seen: dict[tuple, str] = {}
    for node in definitions:
        if not isinstance(node, nodes.ListPartition):
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
        definitions = partition_prop.args.get("create_expressions") or []
        if any(isinstance(n, exp.PartitionByRangePropertyDynamic) for n in definitions):
            raise AnalysisError("FROM ... TO ... INTERVAL partitions are not supported; list the partitions")
        names = [n.name for n in definitions]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise AnalysisError(f"Duplicated partition name: {dup}")
        if kind == "RANGE":
            partitions = _range_partitions(definitions, pcols, alloc_partition)
        else:
            partitions = _list_partitions(definitions, pcols, alloc_partition)

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


# --- ALTER TABLE: schema change ---------------------------------------------------------
# Galene changes a schema without rewriting files (Doris' light schema change, and more): each
# rowset keeps the schema version it was written with, and readers map its columns to today's
# by column id (galene.engine.scan). A type change is allowed where every stored value reads
# unchanged as the new type (a cast at read time); Doris rewrites data for some of those.

# Doris' schema-change matrix (ColumnType.schemaChangeMatrix): source -> targets, by Doris'
# primitive type names (Galene's DATE/DATETIME are DATEV2/DATETIMEV2, DECIMAL is DECIMAL32/64/128).
_DORIS_CHANGES = {
    "TINYINT": {"SMALLINT", "INT", "BIGINT", "LARGEINT", "FLOAT", "DOUBLE", "VARCHAR", "STRING"},
    "SMALLINT": {"INT", "BIGINT", "LARGEINT", "FLOAT", "DOUBLE", "VARCHAR", "STRING"},
    "INT": {"BIGINT", "LARGEINT", "FLOAT", "DOUBLE", "DATEV2", "VARCHAR", "STRING"},
    "BIGINT": {"LARGEINT", "FLOAT", "DOUBLE", "VARCHAR", "STRING"},
    "LARGEINT": {"FLOAT", "DOUBLE", "VARCHAR", "STRING"},
    "FLOAT": {"DOUBLE", "VARCHAR", "STRING"},
    "DOUBLE": {"VARCHAR", "STRING"},
    "VARCHAR": {
        "TINYINT",
        "SMALLINT",
        "INT",
        "BIGINT",
        "LARGEINT",
        "FLOAT",
        "DOUBLE",
        "DATEV2",
        "STRING",
        "JSONB",
    },
    "STRING": {"JSONB"},
    "JSONB": {"STRING", "VARCHAR"},
    "CHAR": {
        "TINYINT",
        "SMALLINT",
        "INT",
        "BIGINT",
        "LARGEINT",
        "FLOAT",
        "DOUBLE",
        "DATEV2",
        "VARCHAR",
        "STRING",
    },
    "DECIMAL32": {"VARCHAR", "STRING", "DECIMAL64", "DECIMAL128"},
    "DECIMAL64": {"VARCHAR", "STRING", "DECIMAL32", "DECIMAL128"},
    "DECIMAL128": {"VARCHAR", "STRING", "DECIMAL32", "DECIMAL64"},
    "DATEV2": {"DATETIMEV2"},
    "DATETIMEV2": {"DATEV2", "DATETIMEV2"},
}
_INT_ORDER = ("TINYINT", "SMALLINT", "INT", "BIGINT", "LARGEINT")
# Doris' getColumnStringRepSize: the longest text of a value (numeric -> VARCHAR(n) needs n >= it).
_STRING_REP_SIZE = {
    "TINYINT": 4,
    "SMALLINT": 6,
    "INT": 11,
    "BIGINT": 20,
    "LARGEINT": 40,
    "FLOAT": 24,
    "DOUBLE": 24,
}


def doris_type_name(t: ColumnType) -> str:
    """The Doris primitive type name of `t` (the name Doris' schema-change errors print)."""
    if t.name == "DECIMAL":
        return "DECIMAL32" if t.precision <= 9 else "DECIMAL64" if t.precision <= 18 else "DECIMAL128"
    return {"DATE": "DATEV2", "DATETIME": "DATETIMEV2", "JSON": "JSONB"}.get(t.name, t.name)


def _reads_unchanged(old: ColumnType, new: ColumnType) -> bool:
    """Whether every value stored as `old` reads as the same value of `new` (a cast at read)."""
    a, b = old.name, new.name
    if a in _INT_ORDER and b in _INT_ORDER:
        return _INT_ORDER.index(b) >= _INT_ORDER.index(a)
    if (a in _INT_ORDER or a == "FLOAT") and b in ("FLOAT", "DOUBLE"):
        return True
    if a in ("CHAR", "VARCHAR") and b in ("VARCHAR", "STRING") or a == b == "CHAR":
        return True
    if a in ("STRING", "JSON") and b in ("STRING", "JSON", "VARCHAR"):
        return True
    if (old.is_numeric and a != "DECIMAL" or a == "DECIMAL") and b in ("VARCHAR", "STRING"):
        return True
    if a == b == "DECIMAL":
        return new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale
    if a == "DATE" and b == "DATETIME" or a == b == "DATETIME":
        return new.precision >= old.precision
    return False


def check_type_change(old: Column, new: Column) -> None:
    """Doris' Column.checkSchemaChangeAllowed for a type change, then Galene's rule above."""
    src, dst = doris_type_name(old.type), doris_type_name(new.type)
    if old.type == new.type:
        return
    if src != dst and dst not in _DORIS_CHANGES.get(src, set()):
        raise AnalysisError(f"Can not change {src} to {dst}")
    numeric = old.type.is_numeric and old.type.name != "DECIMAL"
    if numeric and new.type.name == "VARCHAR" and new.type.length < _STRING_REP_SIZE[old.type.name]:
        raise AnalysisError(
            f"Can not change from wider type {old.type.to_sql()} to narrower type {new.type.to_sql()}"
        )
    strings = old.type.name in ("CHAR", "VARCHAR") and new.type.name in ("CHAR", "VARCHAR")
    if strings and old.type.length > new.type.length:
        raise AnalysisError("Cannot shorten string length")
    if not _reads_unchanged(old.type, new.type):
        raise AnalysisError(
            f"Can not change {src} to {dst}: Galene changes a column's type without rewriting its data, "
            "only where every stored value reads unchanged as the new type"
        )


def _column_def_parts(cdef: exp.ColumnDef) -> tuple[exp.ColumnDef, bool]:
    """The definition without Doris' `KEY` marker, and whether it had one."""
    cdef = cdef.copy()
    constraints = cdef.args.get("constraints") or []
    kept = [
        c for c in constraints
        if not isinstance(c.args.get("kind") if isinstance(c, exp.ColumnConstraint) else c, nodes.KeyColumnConstraint)
    ]  # fmt: skip
    cdef.set("constraints", kept)
    return cdef, len(kept) != len(constraints)


def _position_index(cols: list[Column], position: tuple[str, str | None] | None, what: str) -> int | None:
    """Index a column goes to for `FIRST` / `AFTER c`; None when no position was given."""
    if position is None:
        return None
    kind, after = position
    if kind == "FIRST":
        return 0
    for i, c in enumerate(cols):
        if not c.hidden and c.name.lower() == (after or "").lower():
            return i + 1
    raise AnalysisError(f"Column[{after}] {what}")


_MODEL_NAMES = {"UNIQUE_KEYS": "Unique", "DUP_KEYS": "Duplicate", "AGG_KEYS": "Aggregate"}


def _add_column(table: Table, cols: list[Column], cdef: exp.ColumnDef, position, new_id: int) -> Column:
    plain, key = _column_def_parts(cdef)
    col = _column_from_def(plain)
    col.id = new_id
    name = col.name
    if name.lower() in (DELETE_SIGN.lower(), SEQUENCE_COL.lower()):
        raise AnalysisError(f"Column name '{name}' is reserved")
    if _find(cols, name) is not None:
        raise AnalysisError(f"Can not add column which already exists in base table: {name}")
    kt = table.keys_type
    if kt == "AGG_KEYS":
        if key and col.aggregation is not None:
            raise AnalysisError(f"Can not assign aggregation method on key column: {name}")
        if col.aggregation is None:
            key = True
        elif col.aggregation == "SUM" and col.default is not None and col.default != "0":
            raise AnalysisError(f"The default value of '{name}' with SUM aggregation function must be zero")
        elif table.distribution_type == "RANDOM" and col.aggregation in ("REPLACE", "REPLACE_IF_NOT_NULL"):
            raise AnalysisError(
                f"Can not add value column with aggregation type {col.aggregation} for olap table with "
                f"random distribution : {name}"
            )
        if col.aggregation is not None and col.aggregation not in SUPPORTED_AGGREGATIONS:
            raise AnalysisError(f"Aggregate type {col.aggregation} of column[{name}] is not supported")
        if col.aggregation == "SUM" and not col.type.is_numeric:
            raise AnalysisError(
                f"Invalid aggregate function 'SUM' for column[{name}] of type {col.type.to_desc()}"
            )
    elif col.aggregation is not None:
        raise AnalysisError(
            f"Can not assign aggregation method on column in {_MODEL_NAMES[kt]} data model table: {name}"
        )
    col.is_key = key
    if key:
        _check_key_type(col)
    if not col.nullable and col.default is None:
        raise AnalysisError(
            f"Can not add column [{name}]: a NOT NULL column needs a DEFAULT value for the rows loaded before it"
        )
    index = _position_index(cols, position, "does not found")
    if index is None:
        if key:
            index = max((i + 1 for i, c in enumerate(cols) if c.is_key), default=0)
        else:
            index = max((i + 1 for i, c in enumerate(cols) if not c.hidden), default=0)
    cols.insert(index, col)
    return col


def _check_key_type(c: Column) -> None:
    if c.type.name in ("FLOAT", "DOUBLE"):
        raise AnalysisError("Float or double can not used as a key, use decimal instead.")
    if c.type.name == "STRING":
        raise AnalysisError(f"String Type should not be used in key column[{c.name}].")
    if c.type.name == "JSON":
        raise AnalysisError(f"JSON type should not be used in key column[{c.name}].")


def _visible_column(cols: list[Column], name: str) -> tuple[int, Column] | None:
    for i, c in enumerate(cols):
        if not c.hidden and c.name.lower() == name.lower():
            return i, c
    return None


def alter_table(table: Table, actions: list) -> dict | None:
    """The AlterTable op's fields for `actions` (galene.sql.statements' ALTER TABLE clauses,
    applied in order), checked with Doris' rules and texts. Storage changes (add, drop, rename,
    type) bump the schema version and hand the current storage columns to the history. None when
    there is nothing to log (only ADD INDEX IF NOT EXISTS / DROP INDEX IF EXISTS that found their
    answer already, which Doris accepts silently)."""
    from galene.catalog.model import with_column_ids
    from galene.sql.statements.schema import (
        AddColumns,
        AddIndex,
        DropColumn,
        DropIndex,
        ModifyColumn,
        ModifyTableComment,
        RenameColumn,
    )

    previous = with_column_ids(table.columns)
    cols = [msgspec.structs.replace(c) for c in previous]
    props = dict(table.properties)
    comment = table.comment
    partitions = list(table.partition_columns)
    distribution = list(table.distribution_columns)
    # Never reuse an id: a dropped column's id lives on in the history (files still hold it).
    next_id = max(c.id for c in [*cols, *(c for h in table.schema_history for c in h.columns)]) + 1
    storage_changed = False
    changed = False
    skipped = False  # an IF [NOT] EXISTS index clause with nothing to do
    indexes = [msgspec.structs.replace(i, columns=list(i.columns)) for i in table.indexes]
    indexes_changed = False
    index_name = table.name
    seq_map = props.get("function_column.sequence_col")
    for action in actions:
        if isinstance(action, AddColumns):
            position = action.position
            for cdef in action.columns:
                added = _add_column(table, cols, cdef, position, next_id)
                next_id += 1
                if position is not None:  # the next column of `ADD COLUMN (a, b) AFTER x` follows a
                    position = ("AFTER", added.name)
            storage_changed = changed = True
        elif isinstance(action, DropColumn):
            found = _visible_column(cols, action.name)
            if found is None:
                raise AnalysisError(f"Column does not exists: {action.name}")
            i, col = found
            if table.keys_type == "UNIQUE_KEYS":
                if col.is_key:
                    raise AnalysisError("Can not drop key column in Unique data model table")
                if seq_map and seq_map.lower() == col.name.lower():
                    raise AnalysisError(
                        f"Can not drop sequence mapping column[{col.name}] in Unique data model table[{table.name}]"
                    )
            if (
                table.keys_type == "AGG_KEYS"
                and col.is_key
                and any(c.aggregation in ("REPLACE", "REPLACE_IF_NOT_NULL") for c in cols)
            ):
                raise AnalysisError(
                    "Can not drop key column when table has value column with REPLACE aggregation method"
                )
            if any(p.lower() == col.name.lower() for p in partitions):
                raise AnalysisError(f"Partition column[{col.name}] cannot be dropped. index[{index_name}]")
            if table.distribution_type == "HASH" and any(d.lower() == col.name.lower() for d in distribution):
                raise AnalysisError(f"Distribution column[{col.name}] cannot be dropped. index[{index_name}]")
            del cols[i]
            # Doris drops the indexes of a dropped column with it.
            kept = [x for x in indexes if all(c.lower() != col.name.lower() for c in x.columns)]
            indexes_changed |= len(kept) != len(indexes)
            indexes = kept
            storage_changed = changed = True
        elif isinstance(action, ModifyColumn):
            name = action.column.name
            found = _visible_column(cols, name)
            if found is None:
                raise AnalysisError(f"Column[{name}] does not exists")
            i, old = found
            if action.column.args.get("kind") is None:  # MODIFY COLUMN c COMMENT '…'
                plain, _ = _column_def_parts(action.column)
                for constraint in plain.args.get("constraints") or []:
                    kind = (
                        constraint.args.get("kind")
                        if isinstance(constraint, exp.ColumnConstraint)
                        else constraint
                    )
                    if isinstance(kind, exp.CommentColumnConstraint):
                        cols[i] = msgspec.structs.replace(old, comment=kind.this.name if kind.this else "")
                changed = True
                continue
            plain, _ = _column_def_parts(action.column)
            new = _column_from_def(plain)
            kt = table.keys_type
            if kt == "AGG_KEYS":
                if old.is_key and new.aggregation is not None:
                    raise AnalysisError(f"Can not assign aggregation method on key column: {old.name}")
                if not old.is_key and new.aggregation is None:
                    raise AnalysisError(f"Aggregate method must be specified for value column: {old.name}")
            elif new.aggregation is not None:
                raise AnalysisError(
                    f"Can not assign aggregation method on column in {_MODEL_NAMES[kt]} data model table: {old.name}"
                )
            check_type_change(old, new)
            if (old.aggregation or None) != (new.aggregation or None) and kt == "AGG_KEYS":
                raise AnalysisError("Can not change aggregation type")
            if old.nullable and not new.nullable:
                raise AnalysisError("Can not change from nullable to non-nullable")
            if old.default != new.default:
                raise AnalysisError("Can not change default value")
            type_changed = old.type != new.type
            if type_changed and any(p.lower() == old.name.lower() for p in partitions):
                raise AnalysisError(f"Can not modify partition column[{old.name}]. index[{index_name}]")
            if type_changed and any(d.lower() == old.name.lower() for d in distribution):
                raise AnalysisError(f"Can not modify distribution column[{old.name}]. index[{index_name}]")
            if type_changed and seq_map and seq_map.lower() == old.name.lower():
                raise AnalysisError(f"Can not alter sequence column[{old.name}]")
            modified = msgspec.structs.replace(
                old, type=new.type, nullable=new.nullable, comment=new.comment, aggregation=old.aggregation
            )
            del cols[i]
            index = _position_index(cols, action.position, "does not exists")
            cols.insert(i if index is None else index, modified)
            storage_changed |= type_changed
            changed = True
        elif isinstance(action, RenameColumn):
            found = _visible_column(cols, action.old)
            if found is None:
                raise AnalysisError(f"Column[{action.old}] does not exists")
            if action.old.lower() == action.new.lower():
                raise AnalysisError("Same column name")
            if _find(cols, action.new) is not None:
                raise AnalysisError(f"Column name[{action.new}] is already used")
            i, col = found
            cols[i] = msgspec.structs.replace(col, name=action.new)

            def renamed(names: list[str], old=col.name, new=action.new) -> list[str]:
                return [new if n.lower() == old.lower() else n for n in names]

            partitions, distribution = renamed(partitions), renamed(distribution)
            for x in indexes:
                if any(c.lower() == col.name.lower() for c in x.columns):
                    x.columns = renamed(x.columns)
                    indexes_changed = True
            if seq_map and seq_map.lower() == col.name.lower():
                props["function_column.sequence_col"] = seq_map = action.new
            storage_changed = changed = True
        elif isinstance(action, ModifyTableComment):
            comment = action.comment
            changed = True
        elif isinstance(action, AddIndex):
            exists = any(x.name.lower() == action.index.name.lower() for x in indexes)
            if exists and action.if_not_exists:
                skipped = True
                continue
            index = index_from_def(
                action.index, cols, table.keys_type, "index column does not exist in table"
            )
            _check_index_unique(indexes, index)
            indexes.append(index)
            indexes_changed = changed = True
        elif isinstance(action, DropIndex):
            kept = [x for x in indexes if x.name.lower() != action.name.lower()]
            if len(kept) == len(indexes):
                if action.if_exists:
                    skipped = True
                    continue
                raise AnalysisError(f"index {action.name} does not exist")
            indexes = kept
            indexes_changed = changed = True
        else:  # pragma: no cover - the classifier builds only the clauses above
            raise AnalysisError(f"Unsupported ALTER TABLE clause: {action}")
    if not changed:
        if skipped:
            return None
        raise AnalysisError("Nothing is changed. please check your alter stmt.")
    _check_key_order(cols, index_name, table.keys_type)
    return {
        "columns": cols,
        "key_columns": [c.name for c in cols if c.is_key],
        "partition_columns": partitions,
        "distribution_columns": distribution,
        "properties": props,
        "comment": comment,
        "schema_version": table.schema_version + 1 if storage_changed else table.schema_version,
        "previous_columns": previous if storage_changed else None,
        "indexes": indexes if indexes_changed else None,
    }


def _check_key_order(cols: list[Column], index_name: str, keys_type: str) -> None:
    meet_value = False
    has_key = False
    for c in cols:
        if c.hidden:
            continue
        if c.is_key and meet_value:
            raise AnalysisError(f"Invalid column order. value should be after key. index[{index_name}]")
        if c.is_key:
            has_key = True
        else:
            meet_value = True
    if not has_key:
        raise AnalysisError(f"No key column left. index[{index_name}]")


# --- views ------------------------------------------------------------------------------
def _backquote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def qualify_table_names(sql: str, default_db: str) -> str:
    """`sql` (a view's query as written) with every table reference spelled
    `internal`.`db`.`t`, as Doris stores a view's definition; the rest of the text is kept as
    written. Unchanged when the text cannot be read this way."""
    import sqlglot

    try:
        tree = sqlglot.parse_one(sql, read=Galene)
    except Exception:  # noqa: BLE001 - the caller has parsed it already; keep the text then
        return sql
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    edits: list[tuple[int, int, str]] = []
    for table in tree.find_all(exp.Table):
        ident = table.this
        if not isinstance(ident, exp.Identifier):
            continue  # a table function
        db = table.args.get("db")
        if db is None and ident.name.lower() in ctes:
            continue
        parts = [p for p in (table.args.get("catalog"), db, ident) if p is not None]
        if any("start" not in p.meta or "end" not in p.meta for p in parts):
            return sql
        start = min(p.meta["start"] for p in parts)
        name = f"`internal`.{_backquote(table.db or default_db)}.{_backquote(ident.name)}"
        edits.append((start, ident.meta["end"] + 1, name))
    out = sql
    for start, end, text in sorted(edits, reverse=True):
        out = out[:start] + text + out[end:]
    try:
        sqlglot.parse_one(out, read=Galene)
    except Exception:  # noqa: BLE001
        return sql
    return out
