"""The rows of the SHOW statements that describe a table or a view: DESC [ALL], SHOW [FULL]
COLUMNS and SHOW INDEX, as Doris lists them, and the WHERE filter Doris' SHOW statements take
(`row_matches`). Hidden columns (the delete sign) are never shown. The CREATE texts (SHOW
CREATE TABLE / VIEW / MATERIALIZED VIEW) are `galene.sql.ddl.render`'s.
"""

from __future__ import annotations

from sqlglot import exp

from galene.catalog.model import Column, Table
from galene.sql.ddl.render import index_properties_sql
from galene.sql.like import like_match

DESC_COLUMNS = ["Field", "Type", "Null", "Key", "Default", "Extra"]
DESC_ALL_COLUMNS = [
    "IndexName",
    "IndexKeysType",
    "Field",
    "Type",
    "InternalType",
    "Null",
    "Key",
    "Default",
    "Extra",
    "Visible",
    "DefineExpr",
    "WhereClause",
]
SHOW_COLUMNS_COLUMNS = ["Field", "Type", "Null", "Key", "Default", "Extra"]
SHOW_FULL_COLUMNS_COLUMNS = [
    "Field",
    "Type",
    "Collation",
    "Null",
    "Key",
    "Default",
    "Extra",
    "Privileges",
    "Comment",
]


def index_rows(table: Table) -> list[tuple]:
    """SHOW INDEX rows (Doris' ShowIndexCommand: one row per index, columns joined by ',')."""
    return [
        (table.name, "", i.name, "", ",".join(i.columns), "", "", "", "", "", i.index_type, i.comment,
         index_properties_sql(i))
        for i in table.indexes
    ]  # fmt: skip


def _extra(c: Column) -> str:
    return c.aggregation or ""


def desc_rows(table: Table, all: bool = False) -> list[list]:
    """Rows of DESC t (DESC_COLUMNS) or DESC t ALL (DESC_ALL_COLUMNS)."""
    rows: list[list] = []
    for i, c in enumerate(table.visible_columns()):
        null = "Yes" if c.nullable else "No"
        key = "true" if c.is_key else "false"
        if not all:
            rows.append([c.name, c.type.to_desc(), null, key, c.default, _extra(c)])
        else:
            index_name, keys_type = (table.name, table.keys_type) if i == 0 else ("", "")
            rows.append(
                [
                    index_name,
                    keys_type,
                    c.name,
                    c.type.to_desc(),
                    _internal_type(c),
                    null,
                    key,
                    c.default,
                    _extra(c),
                    "true",
                    "",
                    "",
                ]
            )
    return rows


def describe(table: Table, all: bool = False) -> tuple[list[str], list[list]]:
    """(column names, rows) of DESC t [ALL]."""
    return (DESC_ALL_COLUMNS if all else DESC_COLUMNS), desc_rows(table, all)


def _internal_type(c: Column) -> str:
    t = c.type
    if t.name == "DATE":
        return "DATEV2"
    if t.name == "DATETIME":
        return f"DATETIMEV2({t.precision})"
    if t.name == "DECIMAL":
        return f"DECIMALV3({t.precision}, {t.scale})"
    return t.to_desc()


def show_columns(table: Table, full: bool = False) -> tuple[list[str], list[list]]:
    """(column names, rows) of SHOW [FULL] COLUMNS, in MySQL column order."""
    rows: list[list] = []
    for c in table.visible_columns():
        null = "YES" if c.nullable else "NO"
        key = "YES" if c.is_key else "NO"
        if full:
            rows.append([c.name, c.type.to_sql(), "", null, key, c.default, _extra(c), "", c.comment])
        else:
            rows.append([c.name, c.type.to_sql(), null, key, c.default, _extra(c)])
    return (SHOW_FULL_COLUMNS_COLUMNS if full else SHOW_COLUMNS_COLUMNS), rows


def row_matches(where: exp.Expr | None, row: dict[str, object]) -> bool:
    """Whether a SHOW row (column name -> value, names case-insensitive) passes a WHERE of
    comparisons (=, !=, <, <=, >, >=, LIKE, IN) joined by AND / OR / NOT, as Doris' SHOW
    statements take them. Walks the expression with an explicit stack (a WHERE can be long)."""
    if where is None:
        return True
    lowered = {k.lower(): v for k, v in row.items()}

    def value(node: exp.Expr):
        if isinstance(node, exp.Column):
            return lowered.get(node.name.lower())
        if isinstance(node, exp.Literal):
            return node.this if node.is_string else _number(node.this)
        if isinstance(node, exp.Null):
            return None
        if isinstance(node, exp.Paren):
            return value(node.this)
        return node.sql()

    def compare(node: exp.Expr) -> bool:
        if isinstance(node, exp.Like):
            left = value(node.this)
            return left is not None and like_match(str(left), str(value(node.expression)))
        if isinstance(node, exp.In):
            left = value(node.this)
            return any(_same(left, value(e)) for e in node.expressions)
        left, right = value(node.this), value(node.expression)
        if isinstance(node, exp.EQ):
            return _same(left, right)
        if isinstance(node, exp.NEQ):
            return not _same(left, right)
        if left is None or right is None:
            return False
        a, b = (left, right) if type(left) is type(right) else (str(left), str(right))
        if isinstance(node, exp.GT):
            return a > b
        if isinstance(node, exp.GTE):
            return a >= b
        if isinstance(node, exp.LT):
            return a < b
        if isinstance(node, exp.LTE):
            return a <= b
        raise ValueError(f"unsupported condition in SHOW … WHERE: {node.sql()}")

    # Post-order evaluation of the boolean tree without recursion.
    results: dict[int, bool] = {}
    stack: list[tuple[exp.Expr, bool]] = [(where, False)]
    while stack:
        node, done = stack.pop()
        if isinstance(node, exp.Paren):
            node_inner = node.this
            if done:
                results[id(node)] = results[id(node_inner)]
            else:
                stack += [(node, True), (node_inner, False)]
            continue
        if isinstance(node, (exp.And, exp.Or)):
            if done:
                a, b = results[id(node.this)], results[id(node.expression)]
                results[id(node)] = (a and b) if isinstance(node, exp.And) else (a or b)
            else:
                stack += [(node, True), (node.this, False), (node.expression, False)]
            continue
        if isinstance(node, exp.Not):
            if done:
                results[id(node)] = not results[id(node.this)]
            else:
                stack += [(node, True), (node.this, False)]
            continue
        results[id(node)] = compare(node)
    return results[id(where)]


def _number(text: str):
    try:
        return int(text)
    except ValueError:
        return float(text)


def _same(a, b) -> bool:
    if a is None or b is None:
        return False
    if type(a) is not type(b):
        return str(a).lower() == str(b).lower()
    return a == b if not isinstance(a, str) else a.lower() == b.lower()


# --- views ------------------------------------------------------------------------------------


def describe_view(view, all: bool = False) -> tuple[list[str], list[list]]:
    """DESC v [ALL]: the view's output columns (nullable, no keys), as Doris lists them."""
    rows: list[list] = []
    for i, c in enumerate(view.columns):
        if all:
            rows.append(
                [view.name if i == 0 else "", "DUP_KEYS" if i == 0 else "", c.name, c.type.to_desc(),
                 _internal_type(c), "Yes", "false", None, "", "true", "", ""]
            )  # fmt: skip
        else:
            rows.append([c.name, c.type.to_desc(), "Yes", "false", None, ""])
    return (DESC_ALL_COLUMNS if all else DESC_COLUMNS), rows


def show_view_columns(view, full: bool = False) -> tuple[list[str], list[list]]:
    rows: list[list] = []
    for c in view.columns:
        if full:
            rows.append([c.name, c.type.to_sql(), "", "YES", "NO", None, "", "", c.comment])
        else:
            rows.append([c.name, c.type.to_sql(), "YES", "NO", None, ""])
    return (SHOW_FULL_COLUMNS_COLUMNS if full else SHOW_COLUMNS_COLUMNS), rows
