"""Rendering table metadata the way Doris shows it: SHOW CREATE TABLE, DESC, SHOW COLUMNS.

Owns the text layout of SHOW CREATE TABLE (keys on their own line — dbt looks for
"\\nUNIQUE KEY(" — partitions, distribution, properties) and the rows of DESC [ALL] and
SHOW [FULL] COLUMNS. The SHOW CREATE TABLE text parses back, with the Galene dialect and
`galene.sql.ddl.table_from_create`, into the same table definition. Hidden columns (the
delete sign) are never shown.
"""

from __future__ import annotations

from sqlglot import exp

from galene.catalog.model import Column, Index, Partition, Table
from galene.sql.ddl.partitions import bound_sort_key
from galene.sql.dialect import Galene

_KEYS_SQL = {"DUP_KEYS": "DUPLICATE KEY", "UNIQUE_KEYS": "UNIQUE KEY", "AGG_KEYS": "AGGREGATE KEY"}
# Defaults Doris prints unquoted because they are functions, not literals.
_FUNCTION_DEFAULTS = ("CURRENT_TIMESTAMP", "CURRENT_DATE")

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


def quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def quote_string(value: str, quote: str = '"') -> str:
    """A string literal the MySQL/Doris tokenizer reads back to `value`."""
    escaped = value.replace("\\", "\\\\").replace(quote, "\\" + quote)
    escaped = escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return quote + escaped + quote


def _default_sql(default: str) -> str:
    if default.upper().startswith(_FUNCTION_DEFAULTS):
        return default
    return quote_string(default)


def _column_sql(c: Column) -> str:
    parts = [quote_ident(c.name), c.type.to_sql()]
    if c.aggregation:
        parts.append(c.aggregation)
    parts.append("NULL" if c.nullable else "NOT NULL")
    if c.default is not None:
        parts.append(f"DEFAULT {_default_sql(c.default)}")
    parts.append(f"COMMENT {quote_string(c.comment)}")
    return "  " + " ".join(parts)


def _partition_name(name: str) -> str:
    # Doris prints partition names bare; quote only what would not read back as a name.
    return exp.to_identifier(name).sql(dialect=Galene)


def _values_sql(values: list[str]) -> str:
    return "(" + ", ".join("MAXVALUE" if v == "MAXVALUE" else quote_string(v) for v in values) + ")"


def _range_partition_sql(p: Partition) -> str:
    upper = "(MAXVALUE)" if p.range_upper is None else _values_sql(p.range_upper)
    if p.range_lower is None:
        # The lowest partition: LESS THAN reads back with an unbounded lower end.
        return f"PARTITION {_partition_name(p.name)} VALUES LESS THAN {upper}"
    return f"PARTITION {_partition_name(p.name)} VALUES [{_values_sql(p.range_lower)}, {upper})"


def _list_partition_sql(p: Partition, n_columns: int) -> str:
    if n_columns == 1:
        items = ", ".join(quote_string(item[0]) for item in p.list_values)
    else:
        items = ", ".join(_values_sql(item) for item in p.list_values)
    return f"PARTITION {_partition_name(p.name)} VALUES IN ({items})"


def _partition_order(table: Table) -> list[Partition]:
    if table.partition_type != "RANGE":
        return list(table.partitions)
    # Printed lowest range first so the unbounded-below partition precedes the rest.
    columns = [table.column(n) for n in table.partition_columns]
    return sorted(table.partitions, key=lambda p: bound_sort_key(p.range_lower, columns, False))


def index_properties_sql(index: Index) -> str:
    """An index's properties as Doris prints them (Index.getPropertiesString): `("k" = "v")`."""
    if not index.properties:
        return ""
    return (
        "(" + ", ".join(f"{quote_string(k)} = {quote_string(v)}" for k, v in index.properties.items()) + ")"
    )


def _index_sql(index: Index) -> str:
    cols = ",".join(quote_ident(c) for c in index.columns)
    text = f"  INDEX {index.name} ({cols}) USING {index.index_type}"
    if index.properties:
        text += f" PROPERTIES{index_properties_sql(index)}"
    return text + " COMMENT " + quote_string(index.comment, "'")


def index_rows(table: Table) -> list[tuple]:
    """SHOW INDEX rows (Doris' ShowIndexCommand: one row per index, columns joined by ',')."""
    return [
        (table.name, "", i.name, "", ",".join(i.columns), "", "", "", "", "", i.index_type, i.comment,
         index_properties_sql(i))
        for i in table.indexes
    ]  # fmt: skip


def show_create_table(table: Table, db_name: str | None = None) -> str:
    """The SHOW CREATE TABLE text. Doris prints the bare table name; `db_name` is not part
    of the text and is accepted so callers need not special-case it."""
    lines = [f"CREATE TABLE {quote_ident(table.name)} ("]
    columns = [_column_sql(c) for c in table.visible_columns()]
    columns += [_index_sql(i) for i in table.indexes]
    lines.append(",\n".join(columns))
    lines.append(") ENGINE=OLAP")
    lines.append(f"{_KEYS_SQL[table.keys_type]}({', '.join(quote_ident(k) for k in table.key_columns)})")
    lines.append("COMMENT " + quote_string(table.comment or "OLAP", "'"))
    if table.partition_type != "UNPARTITIONED":
        cols = ", ".join(quote_ident(c) for c in table.partition_columns)
        lines.append(f"PARTITION BY {table.partition_type}({cols})")
        if table.partition_type == "RANGE":
            parts = [_range_partition_sql(p) for p in _partition_order(table)]
        else:
            parts = [_list_partition_sql(p, len(table.partition_columns)) for p in table.partitions]
        lines.append("(" + ",\n".join(parts) + ")")
    buckets = "AUTO" if table.buckets_auto else str(table.buckets)
    if table.distribution_type == "HASH":
        cols = ", ".join(quote_ident(c) for c in table.distribution_columns)
        lines.append(f"DISTRIBUTED BY HASH({cols}) BUCKETS {buckets}")
    else:
        lines.append(f"DISTRIBUTED BY RANDOM BUCKETS {buckets}")
    if table.properties:
        props = ",\n".join(f"{quote_string(k)} = {quote_string(v)}" for k, v in table.properties.items())
        lines.append(f"PROPERTIES (\n{props}\n);")
    else:
        lines[-1] += ";"
    return "\n".join(lines)


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
    from galene.sql.like import like_match

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


# --- views and materialized views -------------------------------------------------------------
SHOW_CREATE_VIEW_COLUMNS = ["View", "Create View", "character_set_client", "collation_connection"]
SHOW_CREATE_MV_COLUMNS = ["Materialized View", "Create Materialized View"]


def show_create_view(view) -> str:
    """SHOW CREATE VIEW's text, as Doris (2.1+) prints it: every output column, the comment,
    the stored (qualified) definition."""
    cols = ",".join(_view_column_sql(c) for c in view.columns)
    comment = f" COMMENT {quote_string(view.comment, chr(39))}" if view.comment else ""
    return f"CREATE VIEW {quote_ident(view.name)}\n({cols})\n{comment} AS {view.sql};"


def _view_column_sql(c: Column) -> str:
    return quote_ident(c.name) + (f" COMMENT {quote_string(c.comment, chr(39))}" if c.comment else "")


def show_create_view_row(view) -> tuple:
    return (view.name, show_create_view(view), "utf8mb4", "utf8mb4_0900_bin")


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


def mv_refresh_info(mv) -> str:
    """Doris' MTMVRefreshInfo text: `BUILD IMMEDIATE REFRESH COMPLETE ON SCHEDULE EVERY 1 HOUR …`."""
    trigger = f"ON {mv.trigger}"
    if mv.trigger == "SCHEDULE":
        trigger += f" EVERY {mv.interval} {mv.unit}" + (f" STARTS {mv.starts}" if mv.starts else "")
    return f"BUILD {mv.build} REFRESH {mv.method} {trigger}"


def show_create_materialized_view(table: Table) -> str:
    """SHOW CREATE MATERIALIZED VIEW: the definition as it reads back (column names, refresh
    rule, keys, comment, distribution, properties, query)."""
    mv = table.mtmv
    cols = ", ".join(_view_column_sql(c) for c in table.visible_columns())
    lines = [f"CREATE MATERIALIZED VIEW {quote_ident(table.name)} ({cols})"]
    trigger = f"ON {mv.trigger}"
    if mv.trigger == "SCHEDULE":
        starts = f" STARTS {quote_string(mv.starts, chr(39))}" if mv.starts else ""
        trigger += f" EVERY {mv.interval} {mv.unit}{starts}"
    lines.append(f"BUILD {mv.build} REFRESH {mv.method} {trigger}")
    lines.append(f"{_KEYS_SQL[table.keys_type]}({', '.join(quote_ident(k) for k in table.key_columns)})")
    lines.append("COMMENT " + quote_string(table.comment, "'"))
    buckets = "AUTO" if table.buckets_auto else str(table.buckets)
    if table.distribution_type == "HASH":
        cols = ", ".join(quote_ident(c) for c in table.distribution_columns)
        lines.append(f"DISTRIBUTED BY HASH({cols}) BUCKETS {buckets}")
    else:
        lines.append(f"DISTRIBUTED BY RANDOM BUCKETS {buckets}")
    if table.properties:
        props = ",\n".join(f"{quote_string(k)} = {quote_string(v)}" for k, v in table.properties.items())
        lines.append(f"PROPERTIES (\n{props}\n)")
    lines.append(f"AS {mv.query_sql};")
    return "\n".join(lines)
