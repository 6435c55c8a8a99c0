"""Statement routing: one SQL text in, one typed statement out.

Owns `parse_statement` (parse with the Galene dialect and classify the sqlglot tree into the
dataclasses below), `split_statements` (split a multi-statement text on `;` with the
tokenizer, so semicolons inside strings and comments are left alone) and the MySQL-like
syntax error text. The executor dispatches on the statement class; `Other` is what Galene
does not serve.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from galene.common.errors import ER_UNKNOWN_ERROR, GaleneError
from galene.sql import nodes
from galene.sql.dialect import Galene


# --- statements -------------------------------------------------------------------------
@dataclass(kw_only=True)
class Statement:
    sql: str = ""  # the statement text as received, without the trailing ';'


@dataclass
class CreateDatabase(Statement):
    name: str
    if_not_exists: bool = False
    properties: dict[str, str] = field(default_factory=dict)


@dataclass
class DropDatabase(Statement):
    name: str
    if_exists: bool = False
    force: bool = False


@dataclass
class Use(Statement):
    db: str


@dataclass
class CreateTable(Statement):
    """CREATE TABLE. `expr` is the parsed tree; `galene.sql.ddl` turns it into a Table.

    like: (db or None, table) of `CREATE TABLE t LIKE src`; query: the SELECT of a CTAS.
    """

    db: str | None
    name: str
    if_not_exists: bool
    expr: exp.Create
    like: tuple[str | None, str] | None = None
    query: exp.Expr | None = None


@dataclass
class DropTable(Statement):
    db: str | None
    name: str
    if_exists: bool = False
    force: bool = False


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
class ShowBackends(Statement):
    pass


@dataclass
class ShowFrontends(Statement):
    pass


@dataclass
class ShowProc(Statement):
    path: str


@dataclass
class ShowLoad(Statement):
    db: str | None = None
    where: exp.Expr | None = None
    order: exp.Expr | None = None
    limit: int | None = None


@dataclass
class ShowVariables(Statement):
    like: str | None = None
    global_: bool = False
    where: exp.Expr | None = None


@dataclass
class AlterSystemAddBackend(Statement):
    host_port: str  # the first 'host:heartbeat_port'; host_ports has all of them
    properties: dict[str, str] = field(default_factory=dict)
    host_ports: list[str] = field(default_factory=list)


@dataclass
class AlterSystemDropBackend(Statement):
    host_port: str
    host_ports: list[str] = field(default_factory=list)
    action: str = "DROP"  # DROP, DROPP, DECOMMISSION as written, or CANCEL DECOMMISSION


@dataclass
class AlterSystemModifyBackend(Statement):
    host_port: str
    properties: dict[str, str] = field(default_factory=dict)
    host_ports: list[str] = field(default_factory=list)


@dataclass
class AlterTableSetProperties(Statement):
    db: str | None
    table: str
    properties: dict[str, str] = field(default_factory=dict)


@dataclass
class AlterTableRename(Statement):
    db: str | None
    table: str
    new_name: str


@dataclass
class Query(Statement):
    expr: exp.Expr  # Select, Union/Intersect/Except or Subquery; a WITH sits on the Select


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


@dataclass
class Set(Statement):
    expr: exp.Set


@dataclass
class Transaction(Statement):
    kind: str  # BEGIN, COMMIT or ROLLBACK


@dataclass
class AdminCompact(Statement):
    """ADMIN COMPACT TABLE t PARTITION p WHERE TYPE = 'BASE' | 'CUMULATIVE'."""

    db: str | None
    table: str
    partitions: list[str] = field(default_factory=list)
    compact_type: str | None = None  # BASE or CUMULATIVE when the WHERE clause is `type = '…'`
    where_given: bool = False


@dataclass
class ShowTablets(Statement):
    db: str | None
    table: str
    partitions: list[str] | None = None


@dataclass
class CreateJob(Statement):
    """CREATE JOB name [PROPERTIES (…)] ON STREAMING [COMMENT '…'] DO INSERT INTO … SELECT …"""

    name: str
    insert: Insert
    properties: dict[str, str] = field(default_factory=dict)
    comment: str = ""
    do_sql: str = ""


@dataclass
class JobControl(Statement):
    """PAUSE | RESUME | DROP JOB [IF EXISTS] WHERE jobname = '…'"""

    action: str  # PAUSE, RESUME or DROP
    name: str
    if_exists: bool = False


@dataclass
class AlterJob(Statement):
    """ALTER JOB name PROPERTIES (…)"""

    name: str
    properties: dict[str, str] = field(default_factory=dict)


# --- schema objects: views, schema change, materialized views ---------------------------------
@dataclass
class CreateView(Statement):
    """CREATE [OR REPLACE] VIEW [IF NOT EXISTS] v [(c [COMMENT '…'], …)] [COMMENT '…'] AS query,
    and ALTER VIEW v [(…)] AS query (`alter`)."""

    db: str | None
    name: str
    query: exp.Expr
    query_sql: str  # the query as written
    columns: list[tuple[str, str]] = field(default_factory=list)  # (name, comment)
    comment: str | None = None  # None: not given (ALTER VIEW keeps the view's)
    or_replace: bool = False
    if_not_exists: bool = False
    alter: bool = False


@dataclass
class DropView(Statement):
    db: str | None
    name: str
    if_exists: bool = False


@dataclass
class ShowCreateView(Statement):
    db: str | None
    name: str


@dataclass
class AddColumns:
    columns: list[exp.ColumnDef]
    position: tuple[str, str | None] | None = None  # ("FIRST", None) | ("AFTER", column)


@dataclass
class DropColumn:
    name: str


@dataclass
class ModifyColumn:
    column: exp.ColumnDef  # without a type: MODIFY COLUMN c COMMENT '…'
    position: tuple[str, str | None] | None = None


@dataclass
class RenameColumn:
    old: str
    new: str


@dataclass
class ModifyTableComment:
    comment: str


@dataclass
class AddIndex:
    """ADD INDEX / CREATE INDEX: `index` is the parsed IndexDef (galene.sql.ddl checks it)."""

    index: exp.Expr
    if_not_exists: bool = False


@dataclass
class DropIndex:
    name: str
    if_exists: bool = False


@dataclass
class AlterTableColumns(Statement):
    """ALTER TABLE t ADD/DROP/MODIFY/RENAME COLUMN …, MODIFY COMMENT '…', ADD/DROP INDEX (clauses in
    order; CREATE INDEX … ON t and DROP INDEX … ON t are these too, as in Doris)."""

    db: str | None
    table: str
    actions: list = field(default_factory=list)


@dataclass
class ReplaceTable(Statement):
    """ALTER TABLE a REPLACE WITH TABLE b [PROPERTIES('swap' = 'true' | 'false')]."""

    db: str | None
    table: str
    other: str
    swap: bool = True


@dataclass
class CreateMaterializedView(Statement):
    db: str | None
    name: str
    query: exp.Expr
    query_sql: str
    expr: exp.Expr  # the parsed statement (keys, comment, distribution, properties)
    columns: list[tuple[str, str]] = field(default_factory=list)
    if_not_exists: bool = False
    build: str = "IMMEDIATE"
    method: str = "COMPLETE"
    trigger: str = "MANUAL"
    interval: int = 0
    unit: str = ""
    starts: str = ""


@dataclass
class RefreshMaterializedView(Statement):
    db: str | None
    name: str
    method: str | None = None


@dataclass
class DropMaterializedView(Statement):
    db: str | None
    name: str
    if_exists: bool = False


@dataclass
class ShowCreateMaterializedView(Statement):
    db: str | None
    name: str


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


@dataclass
class Explain(Statement):
    """EXPLAIN [VERBOSE | … PLAN] <query>: the engine's plan of the query."""

    query: exp.Expr
    level: str = ""  # the level words as written, upper-cased ("VERBOSE", "SHAPE PLAN")


# --- users and privileges (galene/fe/auth.py has the rules) -------------------------------
@dataclass
class CreateUser(Statement):
    """CREATE USER [IF NOT EXISTS] 'u'@'h' [IDENTIFIED BY [PASSWORD] '…'] [DEFAULT ROLE 'r'] [COMMENT '…']"""

    user: str
    host: str = "%"
    if_not_exists: bool = False
    password: str | None = None  # clear text as written (hashed at once, never kept)
    hashed: str | None = None  # IDENTIFIED BY PASSWORD '*…'
    role: str | None = None
    comment: str | None = None


@dataclass
class AlterUser(Statement):
    user: str
    host: str = "%"
    if_exists: bool = False
    password: str | None = None
    hashed: str | None = None
    comment: str | None = None


@dataclass
class DropUser(Statement):
    user: str
    host: str = "%"
    if_exists: bool = False


@dataclass
class SetPassword(Statement):
    """SET PASSWORD [FOR 'u'@'h'] = PASSWORD('…') | '*…' (user None: the session's own)."""

    user: str | None = None
    host: str = "%"
    password: str | None = None
    hashed: str | None = None


@dataclass
class CreateRole(Statement):
    name: str
    if_not_exists: bool = False
    comment: str = ""


@dataclass
class DropRole(Statement):
    name: str
    if_exists: bool = False


@dataclass
class AlterRole(Statement):
    name: str
    comment: str = ""


@dataclass
class Grant(Statement):
    """GRANT privs ON ctl.db.tbl | RESOURCE 'r' | WORKLOAD GROUP 'g' TO 'u'@'h' | ROLE 'r'."""

    privileges: list[str]
    on: str  # TABLE, RESOURCE or WORKLOAD GROUP
    target: list[str] | str  # TABLE: the pattern's parts as written; else the name
    user: str | None = None
    host: str = "%"
    role: str | None = None


@dataclass
class Revoke(Grant):
    """REVOKE privs ON … FROM 'u'@'h' | ROLE 'r'."""


@dataclass
class GrantRole(Statement):
    """GRANT 'r'[, …] TO 'u'@'h'."""

    roles: list[str]
    user: str
    host: str = "%"


@dataclass
class RevokeRole(GrantRole):
    """REVOKE 'r'[, …] FROM 'u'@'h'."""


@dataclass
class ShowGrants(Statement):
    all: bool = False
    user: str | None = None
    host: str = "%"


@dataclass
class ShowRoles(Statement):
    pass


@dataclass
class Other(Statement):
    """Anything Galene does not classify; the executor answers "not supported"."""


# --- splitting and errors ---------------------------------------------------------------
def _tokenize(sql: str) -> list:
    try:
        return Galene().tokenize(sql)
    except TokenError as e:
        raise GaleneError(f"Syntax error in line 1:\n{sql}\n{e}", ER_UNKNOWN_ERROR) from None


def split_statements(sql: str) -> list[str]:
    """Split a multi-statement text on top-level ';' (not inside strings or comments)."""
    tokens = _tokenize(sql)
    statements: list[str] = []
    chunk: list = []
    for token in [*tokens, None]:
        if token is None or token.token_type == TokenType.SEMICOLON:
            if chunk:
                statements.append(sql[chunk[0].start : chunk[-1].end + 1].strip())
            chunk = []
        else:
            chunk.append(token)
    return statements


def _syntax_error(sql: str, error: ParseError) -> GaleneError:
    info = error.errors[0] if error.errors else {}
    line = info.get("line") or 1
    col = info.get("col") or 0
    highlight = info.get("highlight") or ""
    description = info.get("description") or str(error)
    lines = sql.splitlines() or [""]
    text = lines[min(line, len(lines)) - 1]
    caret_at = max(col - len(highlight), 0)
    parts = [f"Syntax error in line {line}:", text, " " * caret_at + "^"]
    if highlight:
        parts.append(f"Encountered: {highlight}")
    parts.append(description)
    return GaleneError("\n".join(parts), ER_UNKNOWN_ERROR)


# --- classification ---------------------------------------------------------------------
def _text(node: exp.Expr | None) -> str | None:
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
            out[_text(p.this) or ""] = _text(p.args.get("value")) or ""
        elif isinstance(p, exp.EQ):
            out[_text(p.this) or ""] = _text(p.expression) or ""
    return out


def _generic_properties(create: exp.Expr) -> dict[str, str]:
    props = create.args.get("properties")
    if not props:
        return {}
    plain = [p for p in props.expressions if type(p) is exp.Property]
    return property_dict(plain)


def _table_parts(node: exp.Expr | None) -> tuple[str | None, str]:
    if isinstance(node, exp.Schema):
        node = node.this
    if not isinstance(node, exp.Table) or not node.name:
        raise GaleneError("Expected a table name")
    return (node.db or None), node.name


def _name(node: exp.Expr | None) -> str | None:
    return node.name if node is not None else None


def _like(node: exp.Expr) -> str | None:
    like = node.args.get("like")
    return like.name if like is not None else None


def _show_table(node: exp.Show) -> tuple[str | None, str]:
    target = node.args.get("target")
    if isinstance(target, exp.Table):
        return _table_parts(target)
    return _name(node.args.get("db")), target.name


def _classify_show(node: exp.Show, sql: str) -> Statement:
    what = (node.name or "").upper()
    db = _name(node.args.get("db"))
    target = _name(node.args.get("target"))
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
        return ShowPartitions(db=db, table=target, where=where, order=order, limit=_limit_value(node), sql=sql)
    if what == "DATA":
        return ShowData(db=db, table=target, order=order, sql=sql)
    if what == "STREAM LOAD":
        return ShowStreamLoad(db=db, where=where, order=order, limit=_limit_value(node), sql=sql)
    if what == "TRANSACTION":
        return ShowTransaction(db=db, where=where, sql=sql)
    if what == "PROCESSLIST":
        return ShowProcesslist(full=bool(node.args.get("full")), sql=sql)
    return None


def _classify_create(node: exp.Create, sql: str) -> Statement:
    kind = (node.args.get("kind") or "").upper()
    if kind in ("DATABASE", "SCHEMA"):
        name = _name(node.this)
        if not name:
            return Other(sql=sql)
        return CreateDatabase(
            name=name,
            if_not_exists=bool(node.args.get("exists")),
            properties=_generic_properties(node),
            sql=sql,
        )
    if kind == "VIEW":
        props = node.args.get("properties")
        if props is not None and props.find(exp.MaterializedProperty) is not None:
            return Other(sql=sql)
        return _classify_create_view(node, sql)
    if kind != "TABLE" or node.args.get("replace"):
        return Other(sql=sql)
    db, name = _table_parts(node.this)
    like = None
    props = node.args.get("properties")
    like_prop = props.find(exp.LikeProperty) if props else None
    if like_prop is not None:
        like = _table_parts(like_prop.this)
    query = node.args.get("expression")
    return CreateTable(
        db=db,
        name=name,
        if_not_exists=bool(node.args.get("exists")),
        expr=node,
        like=like,
        query=query if isinstance(query, exp.Query) else None,
        sql=sql,
    )


def _classify_drop(node: exp.Drop, sql: str) -> Statement:
    kind = (node.args.get("kind") or "").upper()
    targets = node.args.get("tables") or ([node.this] if node.this else [])
    if len(targets) != 1:
        return Other(sql=sql)
    if kind in ("DATABASE", "SCHEMA"):
        return DropDatabase(
            name=targets[0].name,
            if_exists=bool(node.args.get("exists")),
            force=bool(node.args.get("force")),
            sql=sql,
        )
    if kind == "VIEW":
        db, name = _table_parts(targets[0])
        if node.args.get("materialized"):
            return DropMaterializedView(db=db, name=name, if_exists=bool(node.args.get("exists")), sql=sql)
        return DropView(db=db, name=name, if_exists=bool(node.args.get("exists")), sql=sql)
    if kind == "TABLE":
        db, name = _table_parts(targets[0])
        return DropTable(
            db=db,
            name=name,
            if_exists=bool(node.args.get("exists")),
            force=bool(node.args.get("force")),
            sql=sql,
        )
    return Other(sql=sql)


def _classify_alter(node: exp.Alter, sql: str) -> Statement:
    if (node.args.get("kind") or "").upper() == "VIEW":
        return _classify_alter_view(node, sql)
    if (node.args.get("kind") or "").upper() != "TABLE":
        return Other(sql=sql)
    actions = node.args.get("actions") or []
    if len(actions) != 1:
        return Other(sql=sql)
    db, table = _table_parts(node.this)
    action = actions[0]
    if (
        isinstance(action, exp.AlterSet)
        and action.expressions
        and not any(k for k in action.args if k != "expressions" and action.args.get(k))
    ):
        return AlterTableSetProperties(
            db=db, table=table, properties=property_dict(action.expressions), sql=sql
        )
    if isinstance(action, exp.AlterRename) and isinstance(action.this, exp.Table):
        return AlterTableRename(db=db, table=table, new_name=action.this.name, sql=sql)
    return Other(sql=sql)


def _classify_alter_system(node: nodes.AlterSystem, sql: str) -> Statement:
    hosts = [h.name for h in node.expressions]
    props = property_dict(node.args.get("properties"))
    action = node.name.upper()
    if action == "ADD":
        return AlterSystemAddBackend(host_port=hosts[0], properties=props, host_ports=hosts, sql=sql)
    if action in ("DROP", "DROPP", "DECOMMISSION"):
        return AlterSystemDropBackend(host_port=hosts[0], host_ports=hosts, action=action, sql=sql)
    if action == "MODIFY":
        return AlterSystemModifyBackend(host_port=hosts[0], properties=props, host_ports=hosts, sql=sql)
    return Other(sql=sql)


def _classify_insert(node: exp.Insert, sql: str) -> Statement:
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
    db, table = _table_parts(target)
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


def _classify_update(node: exp.Update, sql: str) -> Statement:
    target = node.this
    if not isinstance(target, exp.Table):
        return Other(sql=sql)
    db, table = _table_parts(target)
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


def _classify_delete(node: exp.Delete, sql: str) -> Statement:
    target = node.this
    if not isinstance(target, exp.Table):
        return Other(sql=sql)
    db, table = _table_parts(target)
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


def _classify_truncate(node: exp.TruncateTable, sql: str) -> Statement:
    targets = node.expressions or []
    if len(targets) != 1 or not isinstance(targets[0], exp.Table) or node.args.get("is_database"):
        return Other(sql=sql)
    db, table = _table_parts(targets[0])
    partition = targets[0].args.get("partition")
    partitions = [p.name for p in partition.expressions] if partition is not None else None
    return Truncate(db=db, table=table, partitions=partitions, sql=sql)


def _classify_admin_compact(node: nodes.AdminCompact, sql: str) -> Statement:
    db, table = _table_parts(node.this)
    where = node.args.get("where")
    cond = where.this if isinstance(where, exp.Where) else None
    kind = None
    # Doris' AdminCompactTableStmt.analyzeWhere: exactly `type = '<BASE|CUMULATIVE>'`.
    if (
        isinstance(cond, exp.EQ)
        and isinstance(cond.this, exp.Column)
        and not cond.this.table
        and cond.this.name.lower() == "type"
        and isinstance(cond.expression, exp.Literal)
        and cond.expression.is_string
        and cond.expression.name.upper() in ("BASE", "CUMULATIVE")
    ):
        kind = cond.expression.name.upper()
    partitions = [p.name for p in node.args.get("partitions") or []]
    return AdminCompact(
        db=db, table=table, partitions=partitions, compact_type=kind, where_given=cond is not None, sql=sql
    )


def _classify_create_job(node: nodes.CreateJob, sql: str) -> Statement:
    insert = _classify_insert(node.expression, node.meta.get("do_sql") or "")
    if not isinstance(insert, Insert) or insert.query is None or insert.overwrite:
        raise GaleneError("A streaming job's DO must be an INSERT INTO … SELECT … FROM S3(…) statement")
    comment = node.args.get("comment")
    return CreateJob(
        name=node.this.name,
        insert=insert,
        properties=property_dict(node.args.get("properties")),
        comment=comment.name if comment is not None else "",
        do_sql=node.meta.get("do_sql") or "",
        sql=sql,
    )


def _classify_job_control(node: nodes.JobControl, sql: str) -> Statement:
    where = node.args.get("where")
    cond = where.this if isinstance(where, exp.Where) else None
    # Doris accepts exactly `jobname = '<name>'` here.
    if not (
        isinstance(cond, exp.EQ)
        and isinstance(cond.this, exp.Column)
        and cond.this.name.lower() == "jobname"
        and isinstance(cond.expression, exp.Literal)
        and cond.expression.is_string
    ):
        raise GaleneError("Where clause should looks like: jobName = 'xxx'")
    return JobControl(action=node.name.upper(), name=cond.expression.name, if_exists=bool(node.args.get("exists")), sql=sql)


def query_text_after_as(sql: str) -> str:
    """The text after the first top-level AS of a CREATE/ALTER [MATERIALIZED] VIEW: its query as
    written (column lists and properties are in brackets, comments are strings)."""
    depth = 0
    for token in _tokenize(sql):
        if token.token_type in (TokenType.L_PAREN, TokenType.L_BRACKET):
            depth += 1
        elif token.token_type in (TokenType.R_PAREN, TokenType.R_BRACKET):
            depth -= 1
        elif depth == 0 and token.token_type == TokenType.ALIAS:
            return sql[token.end + 1 :].strip()
    raise GaleneError("Expected AS <query>")


def _named_columns(definitions) -> list[tuple[str, str]]:
    out = []
    for node in definitions or []:
        comment = ""
        if isinstance(node, exp.ColumnDef):
            for c in node.args.get("constraints") or []:
                kind = c.args.get("kind") if isinstance(c, exp.ColumnConstraint) else c
                if isinstance(kind, exp.CommentColumnConstraint) and kind.this is not None:
                    comment = kind.this.name
        out.append((node.name, comment))
    return out


def _classify_create_view(node: exp.Create, sql: str) -> Statement:
    target = node.this
    columns = _named_columns(target.expressions) if isinstance(target, exp.Schema) else []
    db, name = _table_parts(target)
    props = node.args.get("properties")
    comment_prop = props.find(exp.SchemaCommentProperty) if props else None
    if node.args.get("replace") and node.args.get("exists"):
        raise GaleneError("[OR REPLACE] and [IF NOT EXISTS] cannot used at the same time")
    query = node.args.get("expression")
    if not isinstance(query, exp.Query):
        return Other(sql=sql)
    return CreateView(
        db=db,
        name=name,
        query=query,
        query_sql=query_text_after_as(sql),
        columns=columns,
        comment=comment_prop.this.name if comment_prop is not None else None,
        or_replace=bool(node.args.get("replace")),
        if_not_exists=bool(node.args.get("exists")),
        sql=sql,
    )


def _classify_alter_view(node: exp.Alter, sql: str) -> Statement:
    actions = node.args.get("actions") or []
    if len(actions) != 1 or not isinstance(actions[0], exp.Query):
        return Other(sql=sql)
    target = node.this
    columns = _named_columns(target.expressions) if isinstance(target, exp.Schema) else []
    db, name = _table_parts(target)
    return CreateView(
        db=db, name=name, query=actions[0], query_sql=query_text_after_as(sql), columns=columns, alter=True, sql=sql
    )


def _position(node: exp.Expr) -> tuple[str, str | None] | None:
    if node.args.get("first"):
        return ("FIRST", None)
    after = node.args.get("after")
    return ("AFTER", after.name) if after is not None else None


def _classify_alter_table_clauses(node: nodes.AlterTableClauses, sql: str) -> Statement:
    db, table = _table_parts(node.this)
    clauses = node.expressions
    replace = [c for c in clauses if isinstance(c, nodes.ReplaceWithTableClause)]
    if replace:
        if len(clauses) != 1:
            raise GaleneError("REPLACE WITH TABLE cannot be combined with other ALTER TABLE clauses")
        props = property_dict(replace[0].args.get("properties"))
        swap = props.get("swap", "true").strip().lower() != "false"
        _, other = _table_parts(replace[0].this)
        return ReplaceTable(db=db, table=table, other=other, swap=swap, sql=sql)
    actions: list = []
    for c in clauses:
        if isinstance(c, nodes.AddColumnsClause):
            actions.append(AddColumns(columns=list(c.expressions), position=_position(c)))
        elif isinstance(c, nodes.DropColumnClause):
            actions.append(DropColumn(name=c.this.name))
        elif isinstance(c, nodes.ModifyColumnClause):
            actions.append(ModifyColumn(column=c.this, position=_position(c)))
        elif isinstance(c, nodes.RenameColumnClause):
            actions.append(RenameColumn(old=c.this.name, new=c.expression.name))
        elif isinstance(c, nodes.ModifyCommentClause):
            actions.append(ModifyTableComment(comment=c.this.name if c.this is not None else ""))
        elif isinstance(c, nodes.AddIndexClause):
            actions.append(AddIndex(index=c.this, if_not_exists=bool(c.this.args.get("exists"))))
        elif isinstance(c, nodes.DropIndexClause):
            actions.append(DropIndex(name=c.this.name, if_exists=bool(c.args.get("exists"))))
    return AlterTableColumns(db=db, table=table, actions=actions, sql=sql)


def _classify_create_mtmv(node: nodes.CreateMaterializedView, sql: str) -> Statement:
    db, name = _table_parts(node.this)
    return CreateMaterializedView(
        db=db,
        name=name,
        query=node.expression,
        query_sql=node.meta.get("query_sql") or node.expression.sql(dialect=Galene),
        expr=node,
        columns=_named_columns(node.args.get("columns")),
        if_not_exists=bool(node.args.get("exists")),
        build=node.args.get("build") or "IMMEDIATE",
        method=node.args.get("method") or "COMPLETE",
        trigger=node.args.get("trigger") or "MANUAL",
        interval=node.args.get("interval") or 0,
        unit=node.args.get("unit") or "",
        starts=node.args.get("starts") or "",
        sql=sql,
    )


def _classify_rename_command(node: exp.Command, sql: str) -> Statement:
    """`RENAME TABLE a TO b` (sqlglot keeps RENAME statements opaque)."""
    words = (node.expression.name if node.expression is not None else "").split()
    if len(words) == 4 and words[0].upper() == "TABLE" and words[2].upper() == "TO":
        source = sqlglot.parse_one(words[1], read=Galene, into=exp.Table)
        target = sqlglot.parse_one(words[3], read=Galene, into=exp.Table)
        db, table = _table_parts(source)
        return AlterTableRename(db=db, table=table, new_name=target.name, sql=sql)
    return Other(sql=sql)


def _classify_account(node: nodes.AccountStatement, sql: str) -> Statement:
    a = node.args
    what = node.name
    ident = a.get("user")
    user = ident.name if ident is not None else None
    host = (ident.args.get("host") if ident is not None else None) or "%"
    if what == "CREATE USER":
        return CreateUser(
            user=user, host=host, if_not_exists=bool(a.get("exists")), password=a.get("password"),
            hashed=a.get("hashed"), role=a.get("role"), comment=a.get("comment"), sql=sql,
        )  # fmt: skip
    if what == "ALTER USER":
        return AlterUser(
            user=user, host=host, if_exists=bool(a.get("exists")), password=a.get("password"),
            hashed=a.get("hashed"), comment=a.get("comment"), sql=sql,
        )  # fmt: skip
    if what == "DROP USER":
        return DropUser(user=user, host=host, if_exists=bool(a.get("exists")), sql=sql)
    if what == "SET PASSWORD":
        return SetPassword(user=user, host=host, password=a.get("password"), hashed=a.get("hashed"), sql=sql)
    if what == "CREATE ROLE":
        return CreateRole(name=a["role"], if_not_exists=bool(a.get("exists")), comment=a.get("comment") or "", sql=sql)
    if what == "DROP ROLE":
        return DropRole(name=a["role"], if_exists=bool(a.get("exists")), sql=sql)
    if what == "ALTER ROLE":
        return AlterRole(name=a["role"], comment=a.get("comment") or "", sql=sql)
    if what in ("GRANT", "REVOKE"):
        if a.get("roles"):
            cls = GrantRole if what == "GRANT" else RevokeRole
            return cls(roles=list(a["roles"]), user=user, host=host, sql=sql)
        cls = Grant if what == "GRANT" else Revoke
        return cls(
            privileges=list(a["privileges"]), on=a["on"], target=a["target"], user=user, host=host,
            role=a.get("role"), sql=sql,
        )  # fmt: skip
    if what == "SHOW GRANTS":
        return ShowGrants(all=bool(a.get("all")), user=user, host=host, sql=sql)
    return ShowRoles(sql=sql)


def classify(node: exp.Expr, sql: str) -> Statement:
    """Map a parsed Galene-dialect tree to its statement class."""
    if isinstance(node, nodes.AccountStatement):
        return _classify_account(node, sql)
    if isinstance(node, nodes.CreateJob):
        return _classify_create_job(node, sql)
    if isinstance(node, nodes.AlterTableClauses):
        return _classify_alter_table_clauses(node, sql)
    if isinstance(node, nodes.CreateMaterializedView):
        return _classify_create_mtmv(node, sql)
    if isinstance(node, nodes.RefreshMaterializedView):
        db, name = _table_parts(node.this)
        return RefreshMaterializedView(db=db, name=name, method=node.args.get("method"), sql=sql)
    if isinstance(node, exp.Command) and (node.name or "").upper() == "RENAME":
        return _classify_rename_command(node, sql)
    if isinstance(node, nodes.JobControl):
        return _classify_job_control(node, sql)
    if isinstance(node, nodes.AlterJob):
        return AlterJob(name=node.this.name, properties=property_dict(node.args.get("properties")), sql=sql)
    if isinstance(node, exp.Query):
        return Query(expr=node, sql=sql)
    if isinstance(node, exp.Show):
        return _classify_show(node, sql)
    if isinstance(node, nodes.ShowTablets):
        db, table = _table_parts(node.this)
        partitions = [p.name for p in node.args.get("partitions") or []] or None
        return ShowTablets(db=db, table=table, partitions=partitions, sql=sql)
    if isinstance(node, nodes.AdminCompact):
        return _classify_admin_compact(node, sql)
    if isinstance(node, exp.Describe) and isinstance(node.this, exp.Query):
        return Explain(query=node.this, level=(node.text("style") or "").upper(), sql=sql)
    if isinstance(node, exp.Describe):
        if isinstance(node.this, exp.Table) and node.this.name:
            db, table = _table_parts(node.this)
            return Describe(db=db, table=table, all=isinstance(node, nodes.DescribeAll), sql=sql)
        return Other(sql=sql)
    if isinstance(node, exp.Create):
        return _classify_create(node, sql)
    if isinstance(node, exp.Drop):
        return _classify_drop(node, sql)
    if isinstance(node, exp.Use):
        if node.this is not None and not node.args.get("kind"):
            return Use(db=node.this.name, sql=sql)
        return Other(sql=sql)
    if isinstance(node, exp.Insert):
        return _classify_insert(node, sql)
    if isinstance(node, exp.Set):
        return Set(expr=node, sql=sql)
    if isinstance(node, exp.Update):
        return _classify_update(node, sql)
    if isinstance(node, exp.Delete):
        return _classify_delete(node, sql)
    if isinstance(node, exp.TruncateTable):
        return _classify_truncate(node, sql)
    if isinstance(node, nodes.AlterSystem):
        return _classify_alter_system(node, sql)
    if isinstance(node, exp.Alter):
        return _classify_alter(node, sql)
    if isinstance(node, exp.Transaction):
        return Transaction(kind="BEGIN", sql=sql)
    if isinstance(node, exp.Commit):
        return Transaction(kind="COMMIT", sql=sql)
    if isinstance(node, exp.Rollback):
        return Transaction(kind="ROLLBACK", sql=sql)
    return Other(sql=sql)


_CANCEL_DECOMMISSION = re.compile(r"^\s*CANCEL\s+DECOMMISSION\s+BACKEND\s+(.*?)\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")


def parse_statement(sql: str) -> Statement:
    """Parse exactly one statement (a trailing ';' is allowed) into its typed form."""
    parts = split_statements(sql)
    if not parts:
        raise GaleneError("Query was empty", 1065)
    if len(parts) > 1:
        raise GaleneError("Only one statement is supported per call; got several separated by ';'")
    text = parts[0]
    cancel = _CANCEL_DECOMMISSION.match(text)
    if cancel is not None:  # Doris' CANCEL DECOMMISSION BACKEND "host:port"[, …]
        hosts = [a or b for a, b in _QUOTED.findall(cancel.group(1))]
        if not hosts or _QUOTED.sub("", cancel.group(1)).replace(",", "").strip():
            raise GaleneError(f"Syntax error in line 1:\n{text}\nExpected 'host:port' after BACKEND", ER_UNKNOWN_ERROR)
        return AlterSystemDropBackend(host_port=hosts[0], host_ports=hosts, action="CANCEL DECOMMISSION", sql=text)
    try:
        node = sqlglot.parse_one(text, read=Galene)
    except ParseError as e:
        raise _syntax_error(text, e) from None
    except TokenError as e:
        raise GaleneError(f"Syntax error in line 1:\n{text}\n{e}", ER_UNKNOWN_ERROR) from None
    return classify(node, text)
