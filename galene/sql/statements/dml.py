"""Queries and data statements: SELECT (and EXPLAIN of one), INSERT, UPDATE, DELETE and
TRUNCATE, and how each is read from its parsed tree."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from galene.sql import nodes
from galene.sql.statements.base import Other, Statement
from galene.sql.statements.reading import table_parts


@dataclass
class Query(Statement):
    expr: exp.Expr  # Select, Union/Intersect/Except or Subquery; a WITH sits on the Select


@dataclass
class Explain(Statement):
    """EXPLAIN [VERBOSE | … PLAN] <query>: the engine's plan of the query."""

    query: exp.Expr
    level: str = ""  # the level words as written, upper-cased ("VERBOSE", "SHAPE PLAN")


@dataclass
class Insert(Statement):
    """INSERT INTO / OVERWRITE. Exactly one of `query` (SELECT …) and `values` is set."""

    db: str | None
    table: str
    columns: list[str] | None = None
    query: exp.Expr | None = None
    values: list[list[exp.Expr]] | None = None
    label: str | None = None
    overwrite: bool = False
    partitions: list[str] | None = None


@dataclass
class Update(Statement):
    """UPDATE t [alias] SET col = expr, … [FROM …] [WHERE …] (UNIQUE KEY tables)."""

    db: str | None
    table: str
    alias: str | None
    assignments: list[tuple[str, exp.Expr]]
    sources: list[exp.Expr] = field(default_factory=list)  # FROM tables/joins, as written
    joins: list[exp.Expr] = field(default_factory=list)
    where: exp.Expr | None = None


@dataclass
class Delete(Statement):
    """DELETE FROM t [alias] [PARTITION p | PARTITIONS (p, …)] [USING …] WHERE …"""

    db: str | None
    table: str
    alias: str | None
    where: exp.Expr | None
    partitions: list[str] | None = None
    using: list[exp.Expr] = field(default_factory=list)


@dataclass
class Truncate(Statement):
    db: str | None
    table: str
    partitions: list[str] | None = None


# --- reading them -----------------------------------------------------------------------------


def classify_insert(node: exp.Insert, sql: str) -> Statement:
    target = node.this
    label = None
    if isinstance(target, nodes.LabeledInsertTarget):
        label = target.args["label"].name
        target = target.this
    columns = None
    if isinstance(target, exp.Schema):
        columns = [c.name for c in target.expressions]
        target = target.this
    if not isinstance(target, exp.Table):
        return Other(sql=sql)
    partition = target.args.get("partition")
    partitions = [p.name for p in partition.expressions] if partition is not None else None
    db, table = table_parts(target)
    source = node.expression
    query = values = None
    if isinstance(source, exp.Values):
        values = [
            list(row.expressions) if isinstance(row, exp.Tuple) else [row] for row in source.expressions
        ]
    elif isinstance(source, exp.Query):
        query = source
    else:
        return Other(sql=sql)
    return Insert(
        db=db,
        table=table,
        columns=columns,
        query=query,
        values=values,
        label=label,
        overwrite=bool(node.args.get("overwrite")),
        partitions=partitions,
        sql=sql,
    )


def classify_update(node: exp.Update, sql: str) -> Statement:
    target = node.this
    if not isinstance(target, exp.Table):
        return Other(sql=sql)
    db, table = table_parts(target)
    assignments: list[tuple[str, exp.Expr]] = []
    for eq in node.expressions:
        if not isinstance(eq, exp.EQ) or not isinstance(eq.this, exp.Column):
            return Other(sql=sql)
        assignments.append((eq.this.name, eq.expression))
    source = node.args.get("from_")
    sources = [source.this] if source is not None else []
    joins = list(node.args.get("joins") or [])
    where = node.args.get("where")
    return Update(
        db=db,
        table=table,
        alias=target.alias or None,
        assignments=assignments,
        sources=sources,
        joins=joins,
        where=where.this if where is not None else None,
        sql=sql,
    )


def classify_delete(node: exp.Delete, sql: str) -> Statement:
    target = node.this
    if not isinstance(target, exp.Table):
        return Other(sql=sql)
    db, table = table_parts(target)
    partition = target.args.get("partition")
    partitions = [p.name for p in partition.expressions] if partition is not None else None
    where = node.args.get("where")
    using = node.args.get("using") or []
    return Delete(
        db=db,
        table=table,
        alias=target.alias or None,
        where=where.this if where is not None else None,
        partitions=partitions,
        using=list(using) if isinstance(using, list) else [],
        sql=sql,
    )


def classify_truncate(node: exp.TruncateTable, sql: str) -> Statement:
    targets = node.expressions or []
    if len(targets) != 1 or not isinstance(targets[0], exp.Table) or node.args.get("is_database"):
        return Other(sql=sql)
    db, table = table_parts(targets[0])
    partition = targets[0].args.get("partition")
    partitions = [p.name for p in partition.expressions] if partition is not None else None
    return Truncate(db=db, table=table, partitions=partitions, sql=sql)


def classify_explain(node: exp.Describe, sql: str) -> Statement:
    return Explain(query=node.this, level=(node.text("style") or "").upper(), sql=sql)
