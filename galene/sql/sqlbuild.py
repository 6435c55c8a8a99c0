"""Building blocks for the Doris → Spark function rewrites (galene.sql.functions and its family
modules): sqlglot nodes for calls, literals, CASTs and Spark SQL templates. Pure and tiny."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable

import sqlglot
from sqlglot import exp


def call(name: str, *args: exp.Expr) -> exp.Anonymous:
    """`name(args…)` as Spark reads it."""
    return exp.Anonymous(this=name, expressions=list(args))


def string(text: str) -> exp.Literal:
    return exp.Literal.string(text)


def number(value: int | str) -> exp.Literal:
    return exp.Literal.number(value)


def cast(node: exp.Expr, spark_type: str) -> exp.Cast:
    return exp.cast(node, exp.DataType.build(spark_type, dialect="spark"))


def needs_parens(node: exp.Expr) -> bool:
    return not isinstance(
        node,
        (
            exp.Column,
            exp.Literal,
            exp.Func,
            exp.Paren,
            exp.Null,
            exp.Boolean,
            exp.Identifier,
            exp.Dot,
            exp.Lambda,
        ),
    )


def wrap(node: exp.Expr) -> exp.Expr:
    return exp.Paren(this=node) if needs_parens(node) else node


@functools.lru_cache(maxsize=1024)
def _parsed(template: str) -> exp.Expr:
    return sqlglot.parse_one(template, read="spark")


def template(text: str, **args: exp.Expr) -> exp.Expr:
    """A Spark SQL expression from `text`, with each `__name` column replaced by args[name]."""
    tree = _parsed(text).copy()
    for column in list(tree.find_all(exp.Column)):
        name = column.name
        if not column.table and name.startswith("__") and name[2:] in args:
            column.replace(wrap(args[name[2:]].copy()))
    return wrap(tree)


def string_value(node: exp.Expr | None) -> str | None:
    return node.name if isinstance(node, exp.Literal) and node.is_string else None


def int_value(node: exp.Expr | None) -> int | None:
    """The value of an integer literal (or its negation, in parentheses), else None."""
    if isinstance(node, exp.Literal):  # INTERVAL '3' HOUR keeps its amount as a string
        try:
            return int(node.name)
        except ValueError:
            return None
    if isinstance(node, exp.Neg):
        value = int_value(node.this)
        return -value if value is not None else None
    if isinstance(node, exp.Paren):
        return int_value(node.this)
    return None


_LET_NAMES = itertools.count(1)


def let(value: exp.Expr, body: Callable[[exp.Expr], exp.Expr]) -> exp.Expr:
    """`body(v)` with v bound to `value`, computed once: `aggregate(array(0), value, (acc, i) ->
    acc, v -> body)` (Spark SQL has no LET; a rewrite that reads an argument several times would
    otherwise copy it, and nested rewrites would grow the text exponentially). Not
    `transform(array(value), v -> body)`: Sail refuses that form when `value` holds a lambda."""
    n = next(_LET_NAMES)
    name = f"galene_v{n}"
    keep = exp.Lambda(
        this=exp.column(f"galene_a{n}"),
        expressions=[exp.to_identifier(f"galene_a{n}"), exp.to_identifier(f"galene_i{n}")],
    )
    bound = exp.Lambda(this=body(exp.column(name)), expressions=[exp.to_identifier(name)])
    return call("aggregate", exp.Array(expressions=[number(0)]), value, keep, bound)
