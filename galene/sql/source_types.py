"""The Doris types of a query's output columns that are plain references to a table's columns,
or expressions of a Doris type the engine has no name for (`expression_type`).

The engine reports Spark types (`string`, `decimal(38,0)`, `timestamp`), which lose what Doris
keeps: VARCHAR(10) and CHAR lengths, TEXT vs VARCHAR, LARGEINT, JSON, DATETIME precision. A view
defined as `SELECT k, s FROM t` has, in Doris, the columns of `t` with their types; DESC,
SHOW COLUMNS and information_schema.COLUMNS (what SQLAlchemy, BI tools and dbt read) show them.
Any other output column (an expression, an aggregate) keeps the type the engine reports.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from galene.catalog.model import Column
from galene.common.types import ColumnType, TypeError_, parse_type

# The engine-side family of each Doris type: a source column's type is used only when the
# engine's type for the output is of the same family (a cast in between would change it).
_FAMILY = {
    "VARCHAR": "STRING",
    "CHAR": "STRING",
    "JSON": "STRING",
    "LARGEINT": "DECIMAL",
    # stored as text (types.py), read as the engine's strings
    "VARIANT": "STRING",
    "IPV4": "STRING",
    "IPV6": "STRING",
    "TIME": "STRING",
    # aggregate states: a BIGINT / DOUBLE list, an HLL sketch's bytes (binary reads as STRING)
    "BITMAP": "ARRAY",
    "QUANTILE_STATE": "ARRAY",
    "HLL": "STRING",
}

Lookup = Callable[[str | None, str], list[Column] | None]


def _family(t: ColumnType) -> str:
    return _FAMILY.get(t.name, t.name)


def _sources(select: exp.Select, lookup: Lookup) -> list[tuple[str, list[Column]]] | None:
    """(name or alias, visible columns) of each table the SELECT reads; None when one of them
    is not a catalog table or view (a subquery, a table function, a CTE)."""
    from_ = select.args.get("from_") or select.args.get("from")
    if from_ is None:
        return None
    nodes = [from_.this, *(j.this for j in select.args.get("joins") or [])]
    out = []
    for node in nodes:
        if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
            return None
        columns = lookup(node.text("db") or None, node.name)
        if columns is None:
            return None
        out.append((node.alias_or_name, [c for c in columns if not c.hidden]))
    return out


def _resolve(column: exp.Column, sources: list[tuple[str, list[Column]]]) -> Column | None:
    qualifier = column.table
    found = [
        c
        for name, cols in sources
        if not qualifier or name.lower() == qualifier.lower()
        for c in cols
        if c.name.lower() == column.name.lower()
    ]
    return found[0] if len(found) == 1 else None


def source_column_types(query: exp.Expr, lookup: Lookup) -> list[ColumnType | None]:
    """Per output column of `query`, the type of the table column it reads unchanged, or None
    (an expression, or a query shape this does not follow). `lookup(db, name)` gives a table's or
    view's columns, or None when there is no such catalog object."""
    if not isinstance(query, exp.Select) or query.args.get("with_") or query.args.get("with"):
        return []
    sources = _sources(query, lookup)
    out: list[ColumnType | None] = []
    for projection in query.expressions:
        node = projection.this if isinstance(projection, exp.Alias) else projection
        typed = expression_type(node)
        if typed is not None:
            out.append(typed)
        elif sources is None:
            if isinstance(node, exp.Star) or (
                isinstance(node, exp.Column) and isinstance(node.this, exp.Star)
            ):
                return []
            out.append(None)
        elif isinstance(node, exp.Star):
            out.extend(c.type for _, cols in sources for c in cols)
        elif isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
            out.extend(c.type for name, cols in sources if name.lower() == node.table.lower() for c in cols)
        elif isinstance(node, exp.Column):
            col = _resolve(node, sources)
            out.append(col.type if col is not None else None)
        else:
            out.append(None)
    if sources is None and all(t is None for t in out):
        return []
    return out


# Doris functions whose result is of a type the engine has no name for (a BITMAP is the
# engine's BIGINT list, a TIME or a JSON its string, …): the result column is declared with
# Doris' type (an aggregate state is then sent as NULL, a TIME as MYSQL_TYPE_TIME).
_FUNCTION_TYPES = {
    **dict.fromkeys(
        ("TO_BITMAP", "TO_BITMAP_WITH_CHECK", "BITMAP_FROM_STRING", "BITMAP_FROM_ARRAY", "BITMAP_EMPTY",
         "BITMAP_HASH", "BITMAP_HASH64", "BITMAP_UNION", "BITMAP_INTERSECT", "BITMAP_AGG", "BITMAP_AND",
         "BITMAP_OR", "BITMAP_XOR", "BITMAP_NOT", "BITMAP_AND_NOT", "BITMAP_ANDNOT", "BITMAP_SUBSET_IN_RANGE",
         "BITMAP_SUBSET_LIMIT", "SUB_BITMAP", "GROUP_BITMAP_XOR", "ORTHOGONAL_BITMAP_INTERSECT",
         "ORTHOGONAL_BITMAP_UNION"),
        "BITMAP",
    ),
    **dict.fromkeys(("HLL_HASH", "HLL_EMPTY", "HLL_UNION", "HLL_RAW_AGG", "HLL_FROM_BASE64"), "HLL"),
    **dict.fromkeys(("TO_QUANTILE_STATE", "QUANTILE_UNION", "QUANTILE_STATE_EMPTY"), "QUANTILE_STATE"),
    **dict.fromkeys(("SEC_TO_TIME", "TIMEDIFF", "CURTIME", "CURRENT_TIME", "MAKETIME"), "TIME"),
    **dict.fromkeys(
        ("JSON_ARRAY", "JSON_OBJECT", "JSON_PARSE", "JSONB_PARSE", "JSON_INSERT", "JSON_REPLACE", "JSON_SET",
         "JSONB_EXTRACT"),
        "JSON",
    ),
    **dict.fromkeys(("TO_IPV4", "TO_IPV4_OR_DEFAULT", "TO_IPV4_OR_NULL"), "IPV4"),
    **dict.fromkeys(("TO_IPV6", "TO_IPV6_OR_DEFAULT", "TO_IPV6_OR_NULL"), "IPV6"),
}  # fmt: skip
# Types of a CAST target kept for the result column (the engine's type loses them).
_CAST_TYPES = ("TIME", "IPV4", "IPV6", "JSON", "VARIANT", "BITMAP", "HLL", "QUANTILE_STATE", "DATETIME")


def expression_type(node: exp.Expr) -> ColumnType | None:
    """The Doris type of a result expression the engine types by a plainer one — a CAST to
    TIME(p) / IPV4 / JSON / DATETIME(p) …, a function returning a BITMAP, an HLL, a TIME, a
    JSON — or None (left to the engine's type)."""
    if isinstance(node, exp.Cast) and not isinstance(node, exp.TryCast):
        try:
            t = parse_type(node.to.sql())
        except TypeError_:
            return None
        if t.name not in _CAST_TYPES or (t.name == "DATETIME" and not t.precision):
            return None
        return t
    if isinstance(node, exp.JSONObject):
        return ColumnType(name="JSON")
    if isinstance(node, exp.Anonymous):
        name = _FUNCTION_TYPES.get(str(node.this).upper())
        if name is not None:
            return ColumnType(name=name)
    return None


def refine(engine_types: list[ColumnType], sources: list[ColumnType | None]) -> list[ColumnType]:
    """The engine's output types, each replaced by its source column's type where that is a
    plain reference of the same family."""
    if len(sources) != len(engine_types):
        return engine_types
    return [
        s if s is not None and _family(s) == _family(e) else e
        for e, s in zip(engine_types, sources, strict=True)
    ]
