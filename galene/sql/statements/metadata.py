"""Metadata statements: DESC and the SHOW statements that read the catalog (databases, tables,
columns, CREATE texts, variables, loads, and what tools send for metadata: TABLE STATUS,
INDEX, PARTITIONS, DATA, STREAM LOAD, TRANSACTION, PROCESSLIST), and how each is read. The
rows are built by `galene.sql.show` and `galene.sql.information_schema`."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from galene.sql import nodes
from galene.sql.statements.base import Other, Statement
from galene.sql.statements.cluster import ShowBackends, ShowFrontends, ShowProc
from galene.sql.statements.reading import name_of, table_parts


@dataclass
class ShowDatabases(Statement):
    like: str | None = None
    where: exp.Expr | None = None


@dataclass
class ShowTables(Statement):
    db: str | None = None
    full: bool = False
    like: str | None = None
    where: exp.Expr | None = None


@dataclass
class ShowColumns(Statement):
    db: str | None
    table: str
    full: bool = False
    like: str | None = None
    where: exp.Expr | None = None


@dataclass
class Describe(Statement):
    db: str | None
    table: str
    all: bool = False


@dataclass
class ShowCreateTable(Statement):
    db: str | None
    table: str


@dataclass
class ShowCreateDatabase(Statement):
    name: str


@dataclass
class ShowCreateView(Statement):
    db: str | None
    name: str


@dataclass
class ShowCreateMaterializedView(Statement):
    db: str | None
    name: str


@dataclass
class ShowVariables(Statement):
    like: str | None = None
    global_: bool = False
    where: exp.Expr | None = None


@dataclass
class ShowLoad(Statement):
    db: str | None = None
    where: exp.Expr | None = None
    order: exp.Expr | None = None
    limit: int | None = None


# --- metadata for tools (galene/sql/information_schema.py builds the rows) --------------------


@dataclass
class ShowTableStatus(Statement):
    db: str | None = None
    like: str | None = None
    where: exp.Expr | None = None


@dataclass
class ShowIndex(Statement):
    db: str | None
    table: str


@dataclass
class ShowPartitions(Statement):
    db: str | None
    table: str
    where: exp.Expr | None = None
    order: exp.Expr | None = None
    limit: int | None = None


@dataclass
class ShowData(Statement):
    db: str | None = None
    table: str | None = None  # SHOW DATA FROM [db.]t; None: the database's tables
    order: exp.Expr | None = None


@dataclass
class ShowStreamLoad(Statement):
    db: str | None = None
    where: exp.Expr | None = None
    order: exp.Expr | None = None
    limit: int | None = None


@dataclass
class ShowTransaction(Statement):
    db: str | None = None
    where: exp.Expr | None = None


@dataclass
class ShowProcesslist(Statement):
    full: bool = False


# --- reading them -----------------------------------------------------------------------------


def _like(node: exp.Expr) -> str | None:
    like = node.args.get("like")
    return like.name if like is not None else None


def _show_table(node: exp.Show) -> tuple[str | None, str]:
    target = node.args.get("target")
    if isinstance(target, exp.Table):
        return table_parts(target)
    return name_of(node.args.get("db")), target.name


def classify_show(node: exp.Show, sql: str) -> Statement:
    what = (node.name or "").upper()
    db = name_of(node.args.get("db"))
    target = name_of(node.args.get("target"))
    full = bool(node.args.get("full"))
    where_node = node.args.get("where")
    where = where_node.this if isinstance(where_node, exp.Where) else where_node
    if what == "DATABASES":
        return ShowDatabases(like=_like(node), where=where, sql=sql)
    if what == "TABLES":
        return ShowTables(db=db, full=full, like=_like(node), where=where, sql=sql)
    if what == "COLUMNS" and target:
        return ShowColumns(db=db, table=target, full=full, like=_like(node), where=where, sql=sql)
    if what == "CREATE TABLE" and target:
        return ShowCreateTable(db=db, table=target, sql=sql)
    if what == "CREATE VIEW" and target:
        return ShowCreateView(db=db, name=target, sql=sql)
    if what == "CREATE MATERIALIZED VIEW" and node.args.get("target") is not None:
        mv_db, mv_name = _show_table(node)
        return ShowCreateMaterializedView(db=mv_db, name=mv_name, sql=sql)
    if what == "CREATE DATABASE" and target:
        return ShowCreateDatabase(name=target, sql=sql)
    if what == "BACKENDS":
        return ShowBackends(sql=sql)
    if what == "FRONTENDS":
        return ShowFrontends(sql=sql)
    if what == "PROC" and target is not None:
        return ShowProc(path=target, sql=sql)
    if what == "LOAD":
        limit_node = node.args.get("limit")
        limit = int(limit_node.expression.name) if limit_node is not None and limit_node.expression else None
        return ShowLoad(db=db, where=where, order=node.args.get("order"), limit=limit, sql=sql)
    if what == "VARIABLES":
        return ShowVariables(like=_like(node), global_=bool(node.args.get("global_")), where=where, sql=sql)
    metadata = _classify_show_metadata(node, what, db, target, where, sql)
    if metadata is not None:
        return metadata
    return Other(sql=sql)


def _limit_value(node: exp.Expr) -> int | None:
    limit = node.args.get("limit")
    if limit is None:
        return None
    value = limit.expression if isinstance(limit, exp.Limit) else limit
    return int(value.name) if value is not None and value.name.isdigit() else None


def _classify_show_metadata(
    node: exp.Show, what: str, db: str | None, target: str | None, where: exp.Expr | None, sql: str
) -> Statement | None:
    """The SHOW statements tools send for metadata (rows: galene/sql/information_schema.py)."""
    order = node.args.get("order")
    if what == "TABLE STATUS":
        return ShowTableStatus(db=db, like=_like(node), where=where, sql=sql)
    if what == "INDEX" and target:
        return ShowIndex(db=db, table=target, sql=sql)
    if what == "PARTITIONS" and target:
        return ShowPartitions(
            db=db, table=target, where=where, order=order, limit=_limit_value(node), sql=sql
        )
    if what == "DATA":
        return ShowData(db=db, table=target, order=order, sql=sql)
    if what == "STREAM LOAD":
        return ShowStreamLoad(db=db, where=where, order=order, limit=_limit_value(node), sql=sql)
    if what == "TRANSACTION":
        return ShowTransaction(db=db, where=where, sql=sql)
    if what == "PROCESSLIST":
        return ShowProcesslist(full=bool(node.args.get("full")), sql=sql)
    return None


def classify_describe(node: exp.Describe, sql: str) -> Statement:
    if isinstance(node.this, exp.Table) and node.this.name:
        db, table = table_parts(node.this)
        return Describe(db=db, table=table, all=isinstance(node, nodes.DescribeAll), sql=sql)
    return Other(sql=sql)
