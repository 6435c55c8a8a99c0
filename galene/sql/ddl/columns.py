"""Column definitions as Doris reads them, for CREATE TABLE and ALTER TABLE alike: a parsed
column type as a ColumnType (Doris' limits), a column's attributes (NULL, DEFAULT, COMMENT,
aggregate type), the names a table may hold, and the types a key column may have."""

from __future__ import annotations

from sqlglot import exp

from galene.catalog.model import DELETE_SIGN, SEQUENCE_COL, Column
from galene.common.errors import AnalysisError
from galene.common.types import (
    EXPRESSION_ONLY_TYPES,
    STATE_TYPES,
    ColumnType,
    TypeError_,
    make_nested,
    make_type,
)
from galene.sql import nodes
from galene.sql.dialect import USER_DEFINED_TYPES, Galene

SUPPORTED_AGGREGATIONS = (
    "SUM", "MIN", "MAX", "REPLACE", "REPLACE_IF_NOT_NULL", "BITMAP_UNION", "HLL_UNION", "QUANTILE_UNION",
)  # fmt: skip


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
    exp.DType.VARIANT: "VARIANT",
    exp.DType.IPV4: "IPV4",
    exp.DType.IPV6: "IPV6",
    exp.DType.HLLSKETCH: "HLL",
    exp.DType.TIME: "TIME",
    exp.DType.ARRAY: "ARRAY",
    exp.DType.MAP: "MAP",
    exp.DType.STRUCT: "STRUCT",
}


def column_type_from_datatype(dt: exp.DataType, *, decimal256: bool = False) -> ColumnType:
    """A parsed column type as a canonical ColumnType (Doris limits apply).

    Nested types are read bottom-up from an explicit list of the tree's DataType nodes (the
    parser bounds the tree's depth; make_nested bounds it to Doris' limit)."""
    order: list[exp.DataType] = []
    todo = [dt]
    while todo:
        node = todo.pop()
        order.append(node)
        todo.extend(_type_children(node))
    built: dict[int, ColumnType] = {}
    for node in reversed(order):  # children before parents
        built[id(node)] = _one_type(node, [built[id(c)] for c in _type_children(node)], decimal256)
    return built[id(dt)]


def _type_children(node: exp.DataType) -> list[exp.DataType]:
    if node.this not in (exp.DType.ARRAY, exp.DType.MAP, exp.DType.STRUCT):
        return []
    out = []
    for e in node.expressions:
        if isinstance(e, exp.ColumnDef):
            e = e.args.get("kind")
        if not isinstance(e, exp.DataType):
            raise AnalysisError(f"Unsupported data type: {node.sql(dialect=Galene)}")
        out.append(e)
    return out


def _one_type(dt: exp.DataType, children: list[ColumnType], decimal256: bool) -> ColumnType:
    name = _DTYPE_NAMES.get(dt.this)
    if dt.this == exp.DType.USERDEFINED and str(dt.args.get("kind") or "").upper() in USER_DEFINED_TYPES:
        name = str(dt.args["kind"]).upper()
    if name is None:
        raise AnalysisError(f"Unsupported data type: {dt.sql(dialect=Galene)}")
    if name in ("ARRAY", "MAP", "STRUCT"):
        names = [e.name for e in dt.expressions if isinstance(e, exp.ColumnDef)] if name == "STRUCT" else None
        try:
            return make_nested(name, children, names)
        except TypeError_ as e:
            raise AnalysisError(str(e)) from None
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
        return make_type(name, nums, dt.sql(dialect=Galene), decimal256=decimal256)
    except TypeError_ as e:
        raise AnalysisError(str(e)) from None


def literal_text(node: exp.Expr) -> str | None:
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
        return literal_text(node.this)
    if isinstance(node, exp.CurrentTimestamp):
        precision = node.this
        return f"CURRENT_TIMESTAMP({precision.name})" if precision is not None else "CURRENT_TIMESTAMP"
    if isinstance(node, exp.CurrentDate) or (
        isinstance(node, exp.Column) and not node.table and node.name.upper() == "CURRENT_DATE"
    ):
        return "CURRENT_DATE"
    raise AnalysisError(f"Unsupported value: {node.sql(dialect=Galene)}")


def column_from_def(cdef: exp.ColumnDef, *, decimal256: bool = False) -> Column:
    name = cdef.name
    kind = cdef.args.get("kind")
    if not isinstance(kind, exp.DataType):
        raise AnalysisError(f"Column [{name}] has no data type")
    column = Column(name=name, type=column_type_from_datatype(kind, decimal256=decimal256))
    check_column_type(column)
    for constraint in cdef.args.get("constraints") or []:
        c = constraint.args.get("kind") if isinstance(constraint, exp.ColumnConstraint) else constraint
        if isinstance(c, exp.NotNullColumnConstraint):
            column.nullable = bool(c.args.get("allow_null"))
        elif isinstance(c, exp.DefaultColumnConstraint):
            column.default = literal_text(c.this)
        elif isinstance(c, exp.CommentColumnConstraint):
            column.comment = c.this.name if c.this is not None else ""
        elif isinstance(c, nodes.AggregationColumnConstraint):
            column.aggregation = c.name.upper()
        else:
            text = constraint.sql(dialect=Galene)
            raise AnalysisError(f"Unsupported column attribute for column [{name}]: {text}")
    return column


def check_names(columns: list[Column]) -> None:
    seen: set[str] = set()
    for c in columns:
        lower = c.name.lower()
        if lower in seen:
            raise AnalysisError(f"Duplicate column name '{c.name}'")
        if lower in (DELETE_SIGN.lower(), SEQUENCE_COL.lower()):
            raise AnalysisError(f"Column name '{c.name}' is reserved")
        seen.add(lower)


def find_column(columns: list[Column], name: str) -> Column | None:
    lower = name.lower()
    return next((c for c in columns if c.name.lower() == lower), None)


_NESTED_NAMES = {"ARRAY": "Array", "MAP": "Map", "STRUCT": "Struct"}


def check_column_type(c: Column) -> None:
    """Doris' rules on a table column's type, whatever its role."""
    if c.type.name in EXPRESSION_ONLY_TYPES:
        raise AnalysisError("Time type is not supported for olap table")


def check_value_aggregation(c: Column) -> None:
    """Doris' rules on a value column's aggregate type in an AGGREGATE KEY table."""
    agg, t = c.aggregation, c.type
    if agg not in SUPPORTED_AGGREGATIONS:
        raise AnalysisError(f"Aggregate type {agg} of column[{c.name}] is not supported")
    if agg == "SUM" and not t.is_numeric:
        raise AnalysisError(f"Invalid aggregate function 'SUM' for column[{c.name}] of type {t.to_desc()}")
    if t.is_nested and agg not in ("REPLACE", "REPLACE_IF_NOT_NULL"):
        raise AnalysisError(f"{_NESTED_NAMES[t.name]} column can't support aggregation {agg}")
    state_agg = STATE_TYPES.get(t.name)
    if (state_agg is not None and agg != state_agg) or (state_agg is None and agg in STATE_TYPES.values()):
        raise AnalysisError(f"Aggregate type {agg} is not compatible with primitive type {t.to_desc()}")


def check_key_type(c: Column) -> None:
    if c.type.is_nested:
        raise AnalysisError(
            f"{_NESTED_NAMES[c.type.name]} can only be used in the non-key column of the duplicate table at present."
        )
    if c.type.is_state:
        raise AnalysisError(f"Key column can not set complex type:{c.name}")
    if c.type.name == "VARIANT":
        raise AnalysisError(f"Variant type should not be used in key column[{c.name}].")
    if c.type.name in ("FLOAT", "DOUBLE"):
        raise AnalysisError("Float or double can not used as a key, use decimal instead.")
    if c.type.name == "STRING":
        raise AnalysisError(f"String Type should not be used in key column[{c.name}].")
    if c.type.name == "JSON":
        raise AnalysisError(f"JSON type should not be used in key column[{c.name}].")
