"""Column definitions as Doris reads them, for CREATE TABLE and ALTER TABLE alike: a parsed
column type as a ColumnType (Doris' limits), a column's attributes (NULL, DEFAULT, COMMENT,
aggregate type), the names a table may hold, and the types a key column may have."""

from __future__ import annotations

from sqlglot import exp

from galene.catalog.model import DELETE_SIGN, SEQUENCE_COL, Column
from galene.common.errors import AnalysisError
from galene.common.types import ColumnType, TypeError_, make_type
from galene.sql import nodes
from galene.sql.dialect import Galene

SUPPORTED_AGGREGATIONS = ("SUM", "MIN", "MAX", "REPLACE", "REPLACE_IF_NOT_NULL")


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


def column_from_def(cdef: exp.ColumnDef) -> Column:
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


def check_key_type(c: Column) -> None:
    if c.type.name in ("FLOAT", "DOUBLE"):
        raise AnalysisError("Float or double can not used as a key, use decimal instead.")
    if c.type.name == "STRING":
        raise AnalysisError(f"String Type should not be used in key column[{c.name}].")
    if c.type.name == "JSON":
        raise AnalysisError(f"JSON type should not be used in key column[{c.name}].")
