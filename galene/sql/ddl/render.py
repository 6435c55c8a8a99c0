"""The one writer of DDL text: SHOW CREATE TABLE, SHOW CREATE MATERIALIZED VIEW and SHOW CREATE
VIEW, laid out as Doris prints them.

SHOW CREATE TABLE puts the keys on their own line (dbt looks for "\\nUNIQUE KEY("), then the
comment, partitions, distribution and properties; a materialized view shares the keys,
distribution and properties clauses and adds its refresh rule and query. The texts parse
back, with the Galene dialect and `galene.sql.ddl.create_table.table_from_create`, into the
same definition. Hidden columns (the delete sign) are never shown.
"""

from __future__ import annotations

from sqlglot import exp

from galene.catalog.model import Column, Index, MaterializedView, Partition, Table, View
from galene.sql.ddl.partitions import bound_sort_key
from galene.sql.dialect import Galene

_KEYS_SQL = {"DUP_KEYS": "DUPLICATE KEY", "UNIQUE_KEYS": "UNIQUE KEY", "AGG_KEYS": "AGGREGATE KEY"}
# Defaults Doris prints unquoted because they are functions, not literals.
_FUNCTION_DEFAULTS = ("CURRENT_TIMESTAMP", "CURRENT_DATE")

SHOW_CREATE_VIEW_COLUMNS = ["View", "Create View", "character_set_client", "collation_connection"]
SHOW_CREATE_MV_COLUMNS = ["Materialized View", "Create Materialized View"]


def quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def quote_string(value: str, quote: str = '"') -> str:
    """A string literal the MySQL/Doris tokenizer reads back to `value`."""
    escaped = value.replace("\\", "\\\\").replace(quote, "\\" + quote)
    escaped = escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return quote + escaped + quote


# --- columns and indexes ----------------------------------------------------------------------
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


def _view_column_sql(c: Column) -> str:
    """A view's or materialized view's column: its name and comment (the query gives its type)."""
    return quote_ident(c.name) + (f" COMMENT {quote_string(c.comment, chr(39))}" if c.comment else "")


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


# --- partitions -------------------------------------------------------------------------------
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


def _partitions_sql(table: Table) -> list[str]:
    """`PARTITION BY …` and its partitions' line; none for an unpartitioned table."""
    if table.partition_type == "UNPARTITIONED":
        return []
    cols = ", ".join(quote_ident(c) for c in table.partition_columns)
    if table.partition_type == "RANGE":
        parts = [_range_partition_sql(p) for p in _partition_order(table)]
    else:
        parts = [_list_partition_sql(p, len(table.partition_columns)) for p in table.partitions]
    return [f"PARTITION BY {table.partition_type}({cols})", "(" + ",\n".join(parts) + ")"]


# --- the clauses after the columns (tables and materialized views) ----------------------------
def _keys_sql(table: Table) -> str:
    return f"{_KEYS_SQL[table.keys_type]}({', '.join(quote_ident(k) for k in table.key_columns)})"


def _distribution_sql(table: Table) -> str:
    buckets = "AUTO" if table.buckets_auto else str(table.buckets)
    if table.distribution_type == "HASH":
        cols = ", ".join(quote_ident(c) for c in table.distribution_columns)
        return f"DISTRIBUTED BY HASH({cols}) BUCKETS {buckets}"
    return f"DISTRIBUTED BY RANDOM BUCKETS {buckets}"


def _properties_sql(table: Table) -> str | None:
    """`PROPERTIES (…)`, one pair a line; None when the table has none."""
    if not table.properties:
        return None
    props = ",\n".join(f"{quote_string(k)} = {quote_string(v)}" for k, v in table.properties.items())
    return f"PROPERTIES (\n{props}\n)"


def _refresh_sql(mv: MaterializedView, starts_quoted: bool) -> str:
    trigger = f"ON {mv.trigger}"
    if mv.trigger == "SCHEDULE":
        starts = ""
        if mv.starts:
            starts = f" STARTS {quote_string(mv.starts, chr(39)) if starts_quoted else mv.starts}"
        trigger += f" EVERY {mv.interval} {mv.unit}{starts}"
    return f"BUILD {mv.build} REFRESH {mv.method} {trigger}"


# --- the statements ---------------------------------------------------------------------------
def show_create_table(table: Table, db_name: str | None = None) -> str:
    """The SHOW CREATE TABLE text. Doris prints the bare table name; `db_name` is not part
    of the text and is accepted so callers need not special-case it."""
    lines = [f"CREATE TABLE {quote_ident(table.name)} ("]
    columns = [_column_sql(c) for c in table.visible_columns()]
    columns += [_index_sql(i) for i in table.indexes]
    lines.append(",\n".join(columns))
    lines.append(") ENGINE=OLAP")
    lines.append(_keys_sql(table))
    lines.append("COMMENT " + quote_string(table.comment or "OLAP", "'"))
    lines += _partitions_sql(table)
    lines.append(_distribution_sql(table))
    properties = _properties_sql(table)
    if properties is not None:
        lines.append(f"{properties};")
    else:
        lines[-1] += ";"
    return "\n".join(lines)


def mv_refresh_info(mv: MaterializedView) -> str:
    """Doris' MTMVRefreshInfo text: `BUILD IMMEDIATE REFRESH COMPLETE ON SCHEDULE EVERY 1 HOUR …`."""
    return _refresh_sql(mv, starts_quoted=False)


def show_create_materialized_view(table: Table) -> str:
    """SHOW CREATE MATERIALIZED VIEW: the definition as it reads back (column names, refresh
    rule, keys, comment, distribution, properties, query)."""
    mv = table.mtmv
    cols = ", ".join(_view_column_sql(c) for c in table.visible_columns())
    lines = [f"CREATE MATERIALIZED VIEW {quote_ident(table.name)} ({cols})"]
    lines.append(_refresh_sql(mv, starts_quoted=True))
    lines.append(_keys_sql(table))
    lines.append("COMMENT " + quote_string(table.comment, "'"))
    lines.append(_distribution_sql(table))
    properties = _properties_sql(table)
    if properties is not None:
        lines.append(properties)
    lines.append(f"AS {mv.query_sql};")
    return "\n".join(lines)


def show_create_view(view: View) -> str:
    """SHOW CREATE VIEW's text, as Doris (2.1+) prints it: every output column, the comment,
    the stored (qualified) definition."""
    cols = ",".join(_view_column_sql(c) for c in view.columns)
    comment = f" COMMENT {quote_string(view.comment, chr(39))}" if view.comment else ""
    return f"CREATE VIEW {quote_ident(view.name)}\n({cols})\n{comment} AS {view.sql};"


def show_create_view_row(view: View) -> tuple:
    return (view.name, show_create_view(view), "utf8mb4", "utf8mb4_0900_bin")
