"""Queries over information_schema answered on the FE, in milliseconds.

`run_local` answers a query that reads only information_schema tables: the rows of the tables
it names (pre-filtered by its `TABLE_SCHEMA = '…'` / `TABLE_NAME = '…'` conditions) go through
sqlglot's Python executor — joins, CTEs, GROUP BY and ORDER BY included — with the session's
information functions (DATABASE(), USER(), CONNECTION_ID()) as literals. The result is typed
as Doris types it (a column read as is keeps its declared type) and labelled as MySQL labels it.
A query it cannot evaluate (or one that also reads another table) gets None: the engine runs it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlglot import exp

from galene.common.errors import GaleneError
from galene.common.types import ColumnType
from galene.sql.dialect import Galene
from galene.sql.information_schema.context import (
    BIGINT,
    BOOLEAN,
    DATETIME,
    DOUBLE,
    SCHEMA_NAME,
    Filters,
    MetaContext,
    is_schema,
)
from galene.sql.information_schema.tables import SCHEMA_TABLES
from galene.sql.translate import expression_label

log = logging.getLogger(__name__)


def _cte_names(expr: exp.Expr) -> set[str]:
    names: set[str] = set()
    for cte in expr.find_all(exp.CTE):
        names.add(cte.alias_or_name.lower())
    return names


def query_tables(expr: exp.Expr, current_db: str | None) -> tuple[set[str], bool]:
    """(the information_schema tables a query reads, whether it reads anything else: a user
    table or a table function). CTE names are not tables."""
    ctes = _cte_names(expr)
    schema: set[str] = set()
    other = False
    for table in expr.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            other = True  # a table function
            continue
        db = table.db or None
        if db is None and table.name.lower() in ctes:
            continue
        if is_schema(db or current_db):
            schema.add(table.name.lower())
        else:
            other = True
    return schema, other


@dataclass
class LocalOutput:
    columns: list[tuple[str, ColumnType]]
    rows: list[tuple]


_SQLGLOT_TYPES = {
    "VARCHAR": "VARCHAR",
    "CHAR": "VARCHAR",
    "STRING": "VARCHAR",
    "JSON": "VARCHAR",
    "BIGINT": "BIGINT",
    "LARGEINT": "BIGINT",
    "INT": "INT",
    "SMALLINT": "INT",
    "TINYINT": "INT",
    "BOOLEAN": "BOOLEAN",
    "DATETIME": "DATETIME",
    "DATE": "DATE",
    "DOUBLE": "DOUBLE",
    "FLOAT": "DOUBLE",
}


def _pushdown(expr: exp.Expr, names: set[str]) -> dict[str, Filters]:
    """`TABLE_SCHEMA = 'x'` / `TABLE_NAME = 'y'` (or SCHEMA_NAME) conjuncts of a single-table
    SELECT's WHERE, as filters for that table's row builder."""
    if len(names) != 1 or not isinstance(expr, exp.Select) or expr.args.get("joins") or expr.find(exp.CTE):
        return {}
    where = expr.args.get("where")
    f = Filters()
    conjuncts = (
        list(where.this.flatten())
        if where is not None and isinstance(where.this, exp.And)
        else ([where.this] if where is not None else [])
    )
    for c in conjuncts:
        if not isinstance(c, exp.EQ):
            continue
        col, lit = c.this, c.expression
        if isinstance(lit, exp.Column) and isinstance(col, exp.Literal):
            col, lit = lit, col
        if not (isinstance(col, exp.Column) and isinstance(lit, exp.Literal) and lit.is_string):
            continue
        name = col.name.upper()
        if name in ("TABLE_SCHEMA", "SCHEMA_NAME"):
            f.db = lit.name
        elif name == "TABLE_NAME":
            f.table = lit.name
    return {next(iter(names)): f}


def _session_function_value(node: exp.Expr, ctx: MetaContext) -> exp.Expr | None:
    """DATABASE(), USER(), VERSION(), CONNECTION_ID() as literals (the executor knows none)."""
    if isinstance(node, exp.CurrentSchema):
        return exp.Literal.string(ctx.database) if ctx.database else exp.null()
    if isinstance(node, (exp.CurrentUser, exp.SessionUser)):
        return exp.Literal.string(f"'{ctx.user}'@'%'")
    if isinstance(node, exp.Anonymous) and not node.expressions:
        name = node.name.upper()
        if name in ("DATABASE", "SCHEMA"):
            return exp.Literal.string(ctx.database) if ctx.database else exp.null()
        if name in ("USER", "CURRENT_USER", "SESSION_USER", "SYSTEM_USER"):
            return exp.Literal.string(f"'{ctx.user}'@'%'")
        if name == "CONNECTION_ID":
            return exp.Literal.number(ctx.connection_id)
    return None


def run_local(expr: exp.Expr, ctx: MetaContext) -> LocalOutput | None:
    """Answer a query over information_schema tables only, on the FE; None when it needs the
    engine (another table, or SQL the Python executor does not know)."""
    names, other = query_tables(expr, ctx.database)
    if other or not names or any(n not in SCHEMA_TABLES for n in names):
        return None
    try:
        return _run_local(expr, ctx, names)
    except GaleneError:
        raise
    except Exception as e:  # noqa: BLE001 - anything the executor cannot do goes to the engine
        log.debug("information_schema query left to the engine: %r", e)
        return None


def _run_local(expr: exp.Expr, ctx: MetaContext, names: set[str]) -> LocalOutput:
    # (sqlglot's executor costs ~45 ms to import: loaded by the first such query, not at start-up)
    from sqlglot.executor.python import PythonExecutor
    from sqlglot.executor.table import Table as ExecutorTable
    from sqlglot.executor.table import ensure_tables
    from sqlglot.optimizer import optimize
    from sqlglot.planner import Plan

    filters = _pushdown(expr, names)
    ctes = _cte_names(expr)
    tree = expr.copy()
    for node in list(tree.walk()):
        value = _session_function_value(node, ctx)
        if value is not None:
            node.replace(value)
    for table in tree.find_all(exp.Table):
        if isinstance(table.this, exp.Identifier) and not (not table.db and table.name.lower() in ctes):
            table.set("db", exp.to_identifier(SCHEMA_NAME))
            table.set("catalog", None)
    # Names compare case-insensitively in Doris: the executor sees them all in lower case.
    for ident in tree.find_all(exp.Identifier):
        ident.set("this", ident.this.lower())
    tables: dict[str, ExecutorTable] = {}
    schema: dict[str, dict[str, str]] = {}
    for name in names:
        t = SCHEMA_TABLES[name]
        lowered = [c.lower() for c in t.column_names]
        tables[name] = ExecutorTable(
            columns=lowered, rows=[tuple(r) for r in t.rows(ctx, filters.get(name, Filters()))]
        )
        schema[name] = {c: _SQLGLOT_TYPES.get(ct.name, "VARCHAR") for c, (_, ct) in zip(lowered, t.columns)}
    optimized = optimize(tree, {SCHEMA_NAME: schema}, leave_tables_isolated=True, dialect=Galene)
    result = PythonExecutor(tables=ensure_tables({SCHEMA_NAME: tables}, dialect=Galene)).execute(
        Plan(optimized)
    )
    out_rows = [tuple(r) for r in result.rows]
    selects = optimized.selects if isinstance(optimized, exp.Query) else []
    declared = {c.lower(): ct for name in names for c, ct in SCHEMA_TABLES[name].columns}
    types = [
        _result_type(selects[i] if i < len(selects) else None, [r[i] for r in out_rows], declared)
        for i in range(len(result.columns))
    ]
    coerce = [
        i
        for i, t in enumerate(types)
        if t == _STRING_RESULT and any(not isinstance(r[i], (str, type(None))) for r in out_rows)
    ]
    if coerce:
        out_rows = [
            tuple(_coerce(v, types[i]) if i in coerce else v for i, v in enumerate(r)) for r in out_rows
        ]
    labels = _labels(expr, list(result.columns), names, ctes)
    return LocalOutput(columns=list(zip(labels, types)), rows=out_rows)


_TYPE_FROM_SQLGLOT = {
    exp.DType.BIGINT: BIGINT,
    exp.DType.INT: BIGINT,
    exp.DType.SMALLINT: BIGINT,
    exp.DType.TINYINT: BIGINT,
    exp.DType.BOOLEAN: BOOLEAN,
    exp.DType.DATETIME: DATETIME,
    exp.DType.TIMESTAMP: DATETIME,
    exp.DType.DOUBLE: DOUBLE,
    exp.DType.FLOAT: DOUBLE,
    exp.DType.DECIMAL: DOUBLE,
}
_STRING_RESULT = ColumnType(name="VARCHAR", length=65533)


def _family(t: ColumnType) -> str:
    if t.name in ("CHAR", "VARCHAR", "STRING", "JSON"):
        return "str"
    if t.name in ("TINYINT", "SMALLINT", "INT", "BIGINT", "LARGEINT"):
        return "int"
    if t.name in ("FLOAT", "DOUBLE", "DECIMAL"):
        return "num"
    return t.name.lower()


def _value_type(values: list[Any]) -> ColumnType | None:
    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return None
    if kinds <= {bool}:
        return BOOLEAN
    if kinds <= {int, bool}:
        return BIGINT
    if kinds <= {int, float, Decimal}:
        return DOUBLE
    if kinds <= {datetime}:
        return DATETIME
    return _STRING_RESULT


def _result_type(
    select: exp.Expr | None, values: list[Any], declared_columns: dict[str, ColumnType]
) -> ColumnType:
    """The result column's type: the information_schema column's own type for a column read
    as is, else the type sqlglot infers, as long as the values agree with it (else theirs)."""
    declared = None
    if select is not None:
        inner = select.this if isinstance(select, exp.Alias) else select
        if isinstance(inner, exp.Column):
            declared = declared_columns.get(inner.name.lower())
        if declared is None and select.type is not None:
            declared = _TYPE_FROM_SQLGLOT.get(select.type.this)
            if declared is None and select.type.this in (exp.DType.VARCHAR, exp.DType.TEXT, exp.DType.CHAR):
                declared = _STRING_RESULT
    actual = _value_type(values)
    if declared is None:
        return actual or _STRING_RESULT
    if actual is None or _family(declared) == _family(actual):
        return declared
    if _family(declared) == "num" and _family(actual) == "int":
        return declared
    return actual


def _coerce(value: Any, t: ColumnType) -> Any:
    if value is None:
        return None
    if t == _STRING_RESULT and not isinstance(value, str):
        return json.dumps(value, default=str) if isinstance(value, (list, dict)) else str(value)
    return value


def _canonical_columns(names: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in names:
        for c in SCHEMA_TABLES[name].column_names:
            out.setdefault(c.lower(), c)
    return out


def _labels(expr: exp.Expr, result_columns: list[str], names: set[str], ctes: set[str]) -> list[str]:
    """MySQL labels: aliases, columns and expressions as written in the query (`select
    table_name` is labelled `table_name`, as Doris and MySQL 5.7 label it; tools read rows by
    these names); `*` of information_schema tables read directly (no CTE or subquery in
    between) expands to the schema names (`TABLE_NAME`)."""
    canonical = _canonical_columns(names)
    select = expr if isinstance(expr, exp.Select) else None
    direct = (
        select is not None
        and not ctes
        and all(isinstance(t.this, exp.Identifier) for t in select.find_all(exp.Table))
        and not any(isinstance(s.this, exp.Subquery) for s in [select.args.get("from_")] if s is not None)
    )
    if select is None or any(
        isinstance(i, exp.Star) or (isinstance(i, exp.Column) and isinstance(i.this, exp.Star))
        for i in select.expressions
    ):
        return [canonical.get(c.lower(), c) if direct else c for c in result_columns]
    labels = []
    for item in select.expressions:
        if isinstance(item, exp.Alias):
            labels.append(item.alias)
        elif isinstance(item, exp.Column):
            labels.append(item.name)
        else:
            labels.append(expression_label(item))
    if len(labels) != len(result_columns):
        return result_columns
    return labels
