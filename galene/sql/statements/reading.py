"""Values read out of a parsed tree for the typed statements: table names, the names and
literal values of clauses, and PROPERTIES lists as ordered dicts of strings (also what
`galene.sql.ddl` reads a table's and an index's properties with)."""

from __future__ import annotations

from sqlglot import exp

from galene.common.errors import GaleneError
from galene.sql.dialect import Galene


def value_text(node: exp.Expr | None) -> str | None:
    """The plain value of a literal / identifier / var (a property key or value)."""
    if node is None:
        return None
    if isinstance(node, (exp.Literal, exp.Identifier, exp.Var)):
        return node.name
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, exp.Column) and not node.table:
        return node.name
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return f"-{node.this.name}"
    return node.sql(dialect=Galene)


def property_dict(props: list[exp.Expr] | None) -> dict[str, str]:
    """`PROPERTIES ('k'='v', "k2"="v2")` (Property or EQ nodes) as an ordered dict of strings."""
    out: dict[str, str] = {}
    for p in props or []:
        if isinstance(p, exp.Property) and "value" in p.args:
            out[value_text(p.this) or ""] = value_text(p.args.get("value")) or ""
        elif isinstance(p, exp.EQ):
            out[value_text(p.this) or ""] = value_text(p.expression) or ""
    return out


def table_parts(node: exp.Expr | None) -> tuple[str | None, str]:
    """(database or None, table) of a table reference (or of a Schema's table)."""
    if isinstance(node, exp.Schema):
        node = node.this
    if not isinstance(node, exp.Table) or not node.name:
        raise GaleneError("Expected a table name")
    return (node.db or None), node.name


def name_of(node: exp.Expr | None) -> str | None:
    """The name of an identifier-like node, None when absent."""
    return node.name if node is not None else None
