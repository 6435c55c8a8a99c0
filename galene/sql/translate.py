"""Doris query → Spark SQL.

Owns the rewrite of a parsed Doris query (Galene dialect tree) into Spark SQL text:
every table reference becomes the Spark view the caller names for it (CTE names are left
alone), Doris functions are rewritten to Spark expressions with Doris' results
(`galene.sql.functions`, which holds the translation table), and unaliased top-level select
items get their original text as alias so result columns carry MySQL/Doris labels
(`COUNT(*)`, `k + 1`).

The rewrites rely on non-ANSI Spark semantics where Doris returns NULL instead of failing
(e.g. a STR_TO_DATE that does not match); the engine's session is expected to run with
`spark.sql.ansi.enabled=false`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp

from galene.common.errors import GaleneError
from galene.sql import functions_state
from galene.sql.dialect import Galene
from galene.sql.functions import rewrite_function

ResolveTable = Callable[[str | None, str], "str | ViewDefinition"]
ColumnTypes = Callable[[str | None, str], "Iterable[Any] | None"]


# --- views ------------------------------------------------------------------------------
# A resolver returns a ViewDefinition for a (logical) view: its definition replaces the reference
# as a subquery, whose own names resolve in the view's database. Views are expanded breadth-first
# from a work list (never by recursion into a view), at most MAX_VIEW_DEPTH levels deep; a view
# that reaches itself is refused.
MAX_VIEW_DEPTH = 64


@dataclass(frozen=True)
class ViewDefinition:
    db: str  # the view's database: names inside the definition resolve there
    name: str
    sql: str  # the view's query text (Doris' inline view definition)
    columns: tuple[str, ...] = ()  # `CREATE VIEW v (c1, c2)`: the output column names


@dataclass
class _ViewExpansion:
    pending: list[tuple[exp.Expr, str, tuple[tuple[str, str], ...]]] = field(default_factory=list)
    chain: tuple[tuple[str, str], ...] = ()  # the views enclosing the tree being rewritten

    def expand(self, table: exp.Table, view: ViewDefinition) -> None:
        key = (view.db.lower(), view.name.lower())
        path = " -> ".join(f"{d}.{n}" for d, n in (*self.chain, key))
        if key in self.chain:
            raise GaleneError(f"View `{view.db}`.`{view.name}` refers to itself: {path}")
        if len(self.chain) >= MAX_VIEW_DEPTH:
            raise GaleneError(f"Views are nested more than {MAX_VIEW_DEPTH} levels deep: {path}")
        try:
            inner = sqlglot.parse_one(view.sql, read=Galene)
        except Exception as e:  # noqa: BLE001 - a stored definition that no longer parses
            raise GaleneError(f"View `{view.db}`.`{view.name}` has an invalid definition: {e}") from None
        _alias_projections(inner)
        alias = exp.TableAlias(
            this=exp.to_identifier(table.alias or view.name),
            columns=[exp.to_identifier(c) for c in view.columns],
        )
        subquery = exp.Subquery(this=inner, alias=alias)
        if table.args.get("pivots"):
            subquery.set("pivots", table.args.get("pivots"))
        table.replace(subquery)
        self.pending.append((inner, view.db, (*self.chain, key)))


# --- tables -----------------------------------------------------------------------------
def _rewrite_tables(
    node: exp.Expr, resolve_table: ResolveTable, ctes: frozenset[str], views: _ViewExpansion | None = None
) -> None:
    if isinstance(node, exp.Table) and _rewrite_table(node, resolve_table, ctes, views):
        return  # a view: its definition is rewritten from the work list
    # a Table's own children (joins, laterals, pivots) may hold further tables
    with_ = node.args.get("with_")
    if isinstance(with_, exp.With):
        ctes = ctes | {cte.alias_or_name.lower() for cte in with_.expressions}
    for child in list(node.iter_expressions()):
        if isinstance(child, exp.Identifier):
            continue
        _rewrite_tables(child, resolve_table, ctes, views)


def _rewrite_all_tables(tree: exp.Expr, resolve_table: ResolveTable) -> None:
    """Every table reference of `tree`, and of the views it reads (expanded in place)."""
    views = _ViewExpansion()
    _rewrite_tables(tree, resolve_table, frozenset(), views)
    while views.pending:
        inner, db, views.chain = views.pending.pop()

        def resolve_in_view(name_db: str | None, name: str, _db: str = db) -> str | ViewDefinition:
            return resolve_table(name_db or _db, name)

        _rewrite_tables(inner, resolve_in_view, frozenset(), views)


# Table-valued functions Galene serves: S3(...) (galene/engine/s3source.py), jobs(...) and
# tasks(...) (galene/fe/jobs.py), mv_infos(...) (galene/fe/mtmv.py). The statement's caller
# prepares each as an engine view before
# translating and installs a resolver here: (function name in lower case, its "k"="v"
# properties, the call's SQL text) -> view name. A context variable, so the pipeline planner
# (galene/fe/pipelines.py) resolves them without knowing about them.
TABLE_FUNCTIONS = ("s3", "jobs", "tasks", "mv_infos")
ResolveFunction = Callable[[str, dict[str, str], str], str]
table_function_resolver: ContextVar[ResolveFunction | None] = ContextVar(
    "table_function_resolver", default=None
)


def table_function_call(table: exp.Table) -> tuple[str, dict[str, str], str] | None:
    """(name, properties, call text) when `table` is a call of a table function Galene serves."""
    call = table.this
    if not isinstance(call, exp.Anonymous) or call.name.lower() not in TABLE_FUNCTIONS:
        return None
    props: dict[str, str] = {}
    for arg in call.expressions:
        if not (
            isinstance(arg, exp.EQ)
            and isinstance(arg.this, exp.Literal)
            and isinstance(arg.expression, exp.Literal)
        ):
            raise GaleneError(f'table function {call.name}: arguments must be "key" = "value" pairs')
        props[arg.this.name] = arg.expression.name
    return call.name.lower(), props, call.sql(dialect=Galene)


def _is_dual(table: exp.Table) -> bool:
    """MySQL's DUAL (`SELECT 1 FROM DUAL`): the keyword, not a table; a quoted `dual` is a table."""
    name = table.this
    return (
        isinstance(name, exp.Identifier) and not name.quoted and name.name.lower() == "dual"
        and not table.db and isinstance(table.parent, exp.From)
    )  # fmt: skip


def _rewrite_table(
    table: exp.Table, resolve_table: ResolveTable, ctes: frozenset[str], views: _ViewExpansion | None = None
) -> bool:
    """Point a table reference at its engine view; True when it named a view (expanded)."""
    if _is_dual(table):
        table.parent.pop()  # SELECT … FROM DUAL WHERE … is Spark's SELECT … WHERE …
        return False
    if not isinstance(table.this, exp.Identifier):
        found = table_function_call(table)
        if found is None:
            return False  # another table-valued function (e.g. numbers(...)): left to the engine
        resolver = table_function_resolver.get()
        if resolver is None:
            raise GaleneError(f"table function {found[0]}() is not supported in this statement")
        table.set("this", exp.to_identifier(resolver(*found)))
        return False
    name = table.name
    db = table.db or None
    if db is None and name.lower() in ctes:
        return False
    if table.args.get("partition") is not None:
        # The caller's view covers the whole table; silently reading every partition
        # would answer a different question.
        raise GaleneError(f"Reading named partitions of table '{name}' is not supported")
    resolved = resolve_table(db, name)
    if isinstance(resolved, ViewDefinition):
        (views or _ViewExpansion()).expand(table, resolved)
        return True
    view = exp.to_table(resolved, dialect="spark")
    table.set("this", view.this)
    table.set("db", view.args.get("db"))
    table.set("catalog", view.args.get("catalog"))
    if not table.args.get("alias"):
        # Column references qualified by the table name keep resolving.
        table.set("alias", exp.TableAlias(this=exp.to_identifier(name)))
    return False


def _unqualify_databases(tree: exp.Expr) -> None:
    # `db.t.c` column references: the database part names nothing in Spark.
    for column in tree.find_all(exp.Column):
        if column.args.get("db") is not None:
            column.set("db", None)
            column.set("catalog", None)


# --- labels -----------------------------------------------------------------------------
def _outer_select(query: exp.Expr) -> exp.Select | None:
    node = query
    while True:
        if isinstance(node, exp.Select):
            return node
        if isinstance(node, (exp.SetOperation, exp.Subquery)):
            node = node.this
        else:
            return None


def expression_label(item: exp.Expr) -> str:
    """The label MySQL gives an unaliased select item that is no column: the item as written
    (a string literal: its value)."""
    if isinstance(item, exp.Literal) and item.is_string:
        return item.name  # MySQL labels a string literal with its value
    return item.meta.get("sql_text") or item.sql(dialect=Galene)


def output_labels(query: exp.Expr) -> list[str] | None:
    """Result column labels Doris/MySQL show, or None when a `*` makes them schema-dependent."""
    select = _outer_select(query)
    if select is None:
        return None
    labels: list[str] = []
    for item in select.expressions:
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
            return None
        if isinstance(item, exp.Alias):
            labels.append(item.alias)
        elif isinstance(item, exp.Column):
            labels.append(item.name)
        else:
            labels.append(expression_label(item))
    return labels


def _alias_projections(query: exp.Expr) -> None:
    select = _outer_select(query)
    if select is None:
        return
    items = []
    for item in select.expressions:
        if isinstance(item, (exp.Alias, exp.Column, exp.Star)):
            items.append(item)
        else:
            items.append(exp.alias_(item, expression_label(item), quoted=True))
    select.set("expressions", items)


# --- entry point ------------------------------------------------------------------------
def _mark_variant_columns(tree: exp.Expr, names: set[str]) -> None:
    """Column references named like a VARIANT column of a table the query reads carry
    meta["doris_type"] = "VARIANT": their subscripts are JSON paths (galene/sql/functions_json.py)."""
    if not names:
        return
    for column in tree.find_all(exp.Column):
        if column.name.lower() in names:
            column.meta["doris_type"] = "VARIANT"


def to_spark_sql(
    query: exp.Expr, resolve_table: ResolveTable, column_types: ColumnTypes | None = None
) -> str:
    """Spark SQL for a Doris query. `resolve_table(db or None, name)` returns the Spark view
    name for a table, or a ViewDefinition for a view (expanded in place), and raises for an
    unknown one (the error propagates). `column_types(db or None, name)`, when given, returns a
    table's catalog columns (objects with `name` and a ColumnType `type`), or None: a query over
    VARIANT columns needs them (`v['a']` is a JSON path there, a subscript elsewhere)."""
    tree = query.copy()
    variant_names: set[str] = set()

    def resolve(db: str | None, name: str) -> str | ViewDefinition:
        resolved = resolve_table(db, name)
        if column_types is not None and isinstance(resolved, str):
            for column in column_types(db, name) or ():
                if column.type.name == "VARIANT":
                    variant_names.add(column.name.lower())
        return resolved

    _rewrite_all_tables(tree, resolve)
    _mark_variant_columns(tree, variant_names)
    _unqualify_databases(tree)
    _alias_projections(tree)
    # Children before parents, so a rewritten node's arguments are already rewritten
    # (sqlglot's transform() does not revisit the inside of a replaced node).
    for node in reversed(list(tree.dfs())):
        new = rewrite_function(node)
        if new is not node:
            node.replace(new)
    functions_state.hll_hash_per_row(tree)
    return tree.sql(dialect="spark")
