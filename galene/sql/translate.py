"""Doris query → Spark SQL.

Owns the rewrite of a parsed Doris query (Galene dialect tree) into Spark SQL text:
every table reference becomes the Spark view the caller names for it (CTE names are left
alone), Doris functions sqlglot transpiles wrongly or not at all are rewritten to Spark
equivalents, and unaliased top-level select items get their original text as alias so
result columns carry MySQL/Doris labels (`COUNT(*)`, `k + 1`).

The rewrites rely on non-ANSI Spark semantics where Doris returns NULL instead of failing
(e.g. a STR_TO_DATE that does not match); the engine's session is expected to run with
`spark.sql.ansi.enabled=false`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from decimal import Decimal

import sqlglot
from sqlglot import exp
from sqlglot.time import format_time

from galene.common.errors import GaleneError
from galene.sql.dialect import Galene

ResolveTable = Callable[[str | None, str], "str | ViewDefinition"]

# --- time formats -----------------------------------------------------------------------
# Python strftime directives (sqlglot's canonical form) → Java/Spark datetime patterns.
_PY_TO_SPARK = {
    "%Y": "yyyy",
    "%y": "yy",
    "%m": "MM",
    "%-m": "M",
    "%d": "dd",
    "%-d": "d",
    "%H": "HH",
    "%-H": "H",
    "%I": "hh",
    "%-I": "h",
    "%M": "mm",
    "%-M": "m",
    "%S": "ss",
    "%-S": "s",
    "%f": "SSSSSS",
    "%p": "a",
    "%B": "MMMM",
    "%b": "MMM",
    "%A": "EEEE",
    "%a": "EEE",
    "%j": "DDD",
}
# Parsing: a numeric field between separators may have one or two digits in Doris
# ('2020-1-5' matches %Y-%m-%d); one pattern letter parses both in Spark. Fields adjacent
# to another field ('%Y%m%d') keep their fixed width so Spark can split them.
_LENIENT = {"MM": "M", "dd": "d", "HH": "H", "hh": "h", "mm": "m", "ss": "s"}


def spark_time_format(python_format: str, *, parse: bool = False) -> str:
    """A Python-strftime format (sqlglot's canonical form) as a Spark datetime pattern."""
    pieces: list[tuple[str, bool]] = []  # (text, is_pattern)
    i = 0
    while i < len(python_format):
        ch = python_format[i]
        if ch == "%" and i + 1 < len(python_format):
            directive = python_format[i : i + 3] if python_format[i + 1] == "-" else python_format[i : i + 2]
            if directive == "%%":
                pieces.append(("%", False))
            elif directive in _PY_TO_SPARK:
                pieces.append((_PY_TO_SPARK[directive], True))
            else:
                pieces.append((directive, False))
            i += len(directive)
        else:
            pieces.append((ch, False))
            i += 1
    out: list[str] = []
    for idx, (text, is_pattern) in enumerate(pieces):
        if is_pattern:
            before_is_field = idx > 0 and pieces[idx - 1][1]
            after_is_field = idx + 1 < len(pieces) and pieces[idx + 1][1]
            if parse and text in _LENIENT and not before_is_field and not after_is_field:
                text = _LENIENT[text]
            out.append(text)
        elif text.isalpha() or text == "'":
            out.append("''" if text == "'" else f"'{text}'")
        else:
            out.append(text)
    return "".join(out)


def mysql_to_spark_format(mysql_format: str, *, parse: bool = False) -> str:
    """A Doris/MySQL format (`%Y-%m-%d %H:%i:%s`) as a Spark pattern (`yyyy-MM-dd HH:mm:ss`)."""
    python_format = format_time(mysql_format, Galene.TIME_MAPPING, Galene.TIME_TRIE) or mysql_format
    return spark_time_format(python_format, parse=parse)


# --- helpers ----------------------------------------------------------------------------
def _fn(name: str, *args: exp.Expr) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def _format_literal(node: exp.Expr | None, *, parse: bool, raw_mysql: bool = False) -> exp.Expr | None:
    if node is None:
        return None
    if isinstance(node, exp.Literal) and node.is_string:
        text = (
            mysql_to_spark_format(node.name, parse=parse)
            if raw_mysql
            else spark_time_format(node.name, parse=parse)
        )
        return exp.Literal.string(text)
    return node  # a non-literal format cannot be converted statically


def _int_literal(node: exp.Expr) -> int | None:
    if isinstance(node, exp.Literal):
        try:
            return int(node.name)
        except ValueError:
            return None
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        value = _int_literal(node.this)
        return -value if value is not None else None
    return None


def _as_datetime_operand(node: exp.Expr) -> exp.Expr:
    # A string literal has no type for Spark's interval arithmetic; Doris reads it as a
    # DATE or DATETIME depending on whether it has a time part.
    if isinstance(node, exp.Literal) and node.is_string:
        target = "TIMESTAMP_NTZ" if len(node.name.strip()) > 10 else "DATE"
        return exp.cast(node, exp.DataType.build(target, dialect="spark"))
    return node


# unit → (step per unit, Spark interval unit)
_INTERVAL_UNITS = {
    "YEAR": ("1", "YEAR"),
    "QUARTER": ("3", "MONTH"),
    "MONTH": ("1", "MONTH"),
    "WEEK": ("7", "DAY"),
    "DAY": ("1", "DAY"),
    "HOUR": ("1", "HOUR"),
    "MINUTE": ("1", "MINUTE"),
    "SECOND": ("1", "SECOND"),
    "MILLISECOND": ("0.001", "SECOND"),
    "MICROSECOND": ("0.000001", "SECOND"),
}


_SUB_DAY_UNITS = ("HOUR", "MINUTE", "SECOND", "MILLISECOND", "MICROSECOND")


def _date_delta(node: exp.DateAdd | exp.DateSub) -> exp.Expr:
    """DATE_ADD/DATE_SUB/X_ADD/X_SUB as Spark interval arithmetic with Doris result types:
    a DATE stays a DATE for whole-day units, anything plus hours is a DATETIME."""
    unit = (node.text("unit") or "DAY").upper()
    if unit not in _INTERVAL_UNITS:
        return node
    step, spark_unit = _INTERVAL_UNITS[unit]
    amount = node.expression if node.expression is not None else exp.Literal.number(1)
    base = _as_datetime_operand(node.this)
    if unit in _SUB_DAY_UNITS and not (isinstance(base, exp.Cast) and base.to.this == exp.DType.TIMESTAMPNTZ):
        # Spark would turn DATE + hours into a session-time-zone TIMESTAMP; Doris DATETIME is NTZ.
        base = exp.cast(base, exp.DataType.build("TIMESTAMP_NTZ", dialect="spark"))
    n = _int_literal(amount)
    if n is not None:
        quantity = format(Decimal(step) * n, "f")
        interval: exp.Expr = exp.Interval(this=exp.Literal.string(quantity), unit=exp.var(spark_unit))
    elif unit in ("DAY", "WEEK"):
        # DATE + a day-time interval is a TIMESTAMP in Spark; a calendar interval of whole
        # days keeps it a DATE (and a TIMESTAMP_NTZ stays one).
        zero = exp.Literal.number(0)
        weeks, days = (amount, zero) if unit == "WEEK" else (zero, amount)
        interval = _fn("make_interval", zero, zero, weeks, days, zero, zero, zero)
    else:
        unit_interval = exp.Interval(this=exp.Literal.string(step), unit=exp.var(spark_unit))
        interval = exp.Mul(this=exp.Paren(this=amount), expression=unit_interval)
    op = exp.Add if isinstance(node, exp.DateAdd) else exp.Sub
    return exp.Paren(this=op(this=base, expression=interval))


_DIFF_UNITS = {
    "YEARS_DIFF": "YEAR",
    "MONTHS_DIFF": "MONTH",
    "WEEKS_DIFF": "WEEK",
    "DAYS_DIFF": "DAY",
    "HOURS_DIFF": "HOUR",
    "MINUTES_DIFF": "MINUTE",
    "SECONDS_DIFF": "SECOND",
    "MILLISECONDS_DIFF": "MILLISECOND",
    "MICROSECONDS_DIFF": "MICROSECOND",
}
_JSON_GETTERS = {
    "GET_JSON_STRING": None,
    "JSON_EXTRACT_STRING": None,
    "GET_JSON_INT": "INT",
    "GET_JSON_BIGINT": "BIGINT",
    "GET_JSON_DOUBLE": "DOUBLE",
}
_REGEX_SPECIAL = set("\\.^$|?*+()[]{}")


def _regex_escape(text: str) -> str:
    return "".join("\\" + ch if ch in _REGEX_SPECIAL else ch for ch in text)


def _literal_split(string: exp.Expr, separator: exp.Expr) -> exp.Expr:
    # Doris splits on a literal separator; Spark's split takes a regular expression.
    if isinstance(separator, exp.Literal) and separator.is_string:
        separator = exp.Literal.string(_regex_escape(separator.name))
    return _fn("split", string, separator)


def _anonymous(node: exp.Anonymous) -> exp.Expr:
    name = node.name.upper()
    args = node.expressions
    if name in _DIFF_UNITS and len(args) == 2:
        # Doris X_DIFF(end, start) counts whole units from start to end.
        return _fn("timestampdiff", exp.var(_DIFF_UNITS[name]), args[1], args[0])
    if name in _JSON_GETTERS and len(args) == 2:
        getter = _fn("get_json_object", args[0], args[1])
        target = _JSON_GETTERS[name]
        return exp.cast(getter, exp.DataType.build(target, dialect="spark")) if target else getter
    if name == "EXPLODE_SPLIT" and len(args) == 2:
        return _fn("explode", _literal_split(args[0], args[1]))
    if name == "SPLIT_BY_STRING" and len(args) == 2:
        return _literal_split(args[0], args[1])
    if name == "UNIX_TIMESTAMP" and len(args) == 2:
        return _fn("unix_timestamp", args[0], _format_literal(args[1], parse=True, raw_mysql=True))
    return node


def _group_concat(node: exp.GroupConcat) -> exp.Expr:
    """GROUP_CONCAT → concat_ws(sep, collect_list(x)); with ORDER BY the values are collected
    with their sort keys, sorted, and projected back (Spark's listagg … WITHIN GROUP fails
    when ordering by another column)."""
    separator = node.args.get("separator") or exp.Literal.string(DEFAULT_GROUP_CONCAT_SEPARATOR)
    this = node.this
    order = None
    if isinstance(this, exp.Order):
        order, this = this, this.this
    distinct = isinstance(this, exp.Distinct)
    if distinct:
        this = this.expressions[0] if len(this.expressions) == 1 else exp.Concat(expressions=this.expressions)
    value = exp.cast(this, exp.DataType.build("STRING", dialect="spark"))
    collect = "collect_set" if distinct else "collect_list"
    if order is None:
        return _fn("concat_ws", separator, _fn(collect, value))
    fields: list[exp.Expr] = []
    for i, ordered in enumerate(order.expressions):
        key = ordered.this if isinstance(ordered, exp.Ordered) else ordered
        fields += [exp.Literal.string(f"k{i}"), key]
    fields += [exp.Literal.string("v"), value]
    # One direction for all keys: that of the first ORDER BY item.
    first = order.expressions[0]
    ascending = not (isinstance(first, exp.Ordered) and first.args.get("desc"))
    pairs = _fn(collect, _fn("named_struct", *fields))
    ordered_pairs = _fn("sort_array", pairs, exp.Boolean(this=ascending))
    project = exp.Lambda(this=exp.column("v", table="e"), expressions=[exp.to_identifier("e")])
    return _fn("concat_ws", separator, _fn("transform", ordered_pairs, project))


# Doris' GROUP_CONCAT joins with ", " when no separator is given (MySQL uses ",").
DEFAULT_GROUP_CONCAT_SEPARATOR = ", "

_CAST_TYPES = {
    exp.DType.DATETIME: "TIMESTAMP_NTZ",
    exp.DType.INT128: "DECIMAL(38, 0)",
    exp.DType.VARCHAR: "STRING",
    exp.DType.CHAR: "STRING",
    exp.DType.TEXT: "STRING",
    exp.DType.JSON: "STRING",
}


def _rewrite_function(node: exp.Expr) -> exp.Expr:
    if isinstance(node, (exp.DateAdd, exp.DateSub)):
        return _date_delta(node)
    if isinstance(node, exp.UnixToTime):
        fmt = node.args.get("format")
        if fmt is not None:
            return _fn("from_unixtime", node.this, _format_literal(fmt, parse=False))
        if node.args.get("scale") is None:
            return _fn("from_unixtime", node.this)  # Doris: a 'yyyy-MM-dd HH:mm:ss' string
        return node
    if isinstance(node, exp.UnixToStr):
        return _fn("from_unixtime", node.this, _format_literal(node.args.get("format"), parse=False))
    if isinstance(node, exp.StrToDate):
        return _fn("to_date", node.this, _format_literal(node.args.get("format"), parse=True))
    if isinstance(node, exp.StrToTime):
        return _fn("to_timestamp_ntz", node.this, _format_literal(node.args.get("format"), parse=True))
    if isinstance(node, exp.TimeToStr):
        value = node.this
        if isinstance(value, exp.TsOrDsToTimestamp):
            value = value.this
        return _fn("date_format", value, _format_literal(node.args.get("format"), parse=False))
    if isinstance(node, exp.GroupConcat):
        return _group_concat(node)
    if isinstance(node, exp.Anonymous):
        return _anonymous(node)
    if isinstance(node, exp.DataType) and node.this in _CAST_TYPES and isinstance(node.parent, exp.Cast):
        return exp.DataType.build(_CAST_TYPES[node.this], dialect="spark")
    return node


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
table_function_resolver: ContextVar[ResolveFunction | None] = ContextVar("table_function_resolver", default=None)


def table_function_call(table: exp.Table) -> tuple[str, dict[str, str], str] | None:
    """(name, properties, call text) when `table` is a call of a table function Galene serves."""
    call = table.this
    if not isinstance(call, exp.Anonymous) or call.name.lower() not in TABLE_FUNCTIONS:
        return None
    props: dict[str, str] = {}
    for arg in call.expressions:
        if not (isinstance(arg, exp.EQ) and isinstance(arg.this, exp.Literal) and isinstance(arg.expression, exp.Literal)):
            raise GaleneError(f'table function {call.name}: arguments must be "key" = "value" pairs')
        props[arg.this.name] = arg.expression.name
    return call.name.lower(), props, call.sql(dialect=Galene)


def _rewrite_table(
    table: exp.Table, resolve_table: ResolveTable, ctes: frozenset[str], views: _ViewExpansion | None = None
) -> bool:
    """Point a table reference at its engine view; True when it named a view (expanded)."""
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


def _label(item: exp.Expr) -> str:
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
            labels.append(_label(item))
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
            items.append(exp.alias_(item, _label(item), quoted=True))
    select.set("expressions", items)


# --- entry point ------------------------------------------------------------------------
def to_spark_sql(query: exp.Expr, resolve_table: ResolveTable) -> str:
    """Spark SQL for a Doris query. `resolve_table(db or None, name)` returns the Spark view
    name for a table, or a ViewDefinition for a view (expanded in place), and raises for an
    unknown one (the error propagates)."""
    tree = query.copy()
    _rewrite_all_tables(tree, resolve_table)
    _unqualify_databases(tree)
    _alias_projections(tree)
    # Children before parents, so a rewritten node's arguments are already rewritten
    # (sqlglot's transform() does not revisit the inside of a replaced node).
    for node in reversed(list(tree.dfs())):
        new = _rewrite_function(node)
        if new is not node:
            node.replace(new)
    return tree.sql(dialect="spark")
