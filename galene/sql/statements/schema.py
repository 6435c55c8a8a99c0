"""Schema statements (DDL): databases, tables, views, ALTER TABLE's clauses and asynchronous
materialized views, and how each is read from its parsed tree. What a definition means (the
Table it makes, the schema change it asks for) is `galene.sql.ddl`."""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.tokens import TokenType

from galene.common.errors import GaleneError
from galene.sql import nodes
from galene.sql.dialect import Galene
from galene.sql.statements.base import Other, Statement
from galene.sql.statements.reading import name_of, property_dict, table_parts
from galene.sql.statements.split import tokenize

# --- databases and tables ---------------------------------------------------------------------


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
class AlterTableSetProperties(Statement):
    db: str | None
    table: str
    properties: dict[str, str] = field(default_factory=dict)


@dataclass
class AlterTableRename(Statement):
    db: str | None
    table: str
    new_name: str


# --- views ------------------------------------------------------------------------------------


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


# --- ALTER TABLE's schema-change clauses ------------------------------------------------------


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


# --- materialized views -----------------------------------------------------------------------


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


# --- reading them -----------------------------------------------------------------------------


def _generic_properties(create: exp.Expr) -> dict[str, str]:
    props = create.args.get("properties")
    if not props:
        return {}
    plain = [p for p in props.expressions if type(p) is exp.Property]
    return property_dict(plain)


def classify_create(node: exp.Create, sql: str) -> Statement:
    kind = (node.args.get("kind") or "").upper()
    if kind in ("DATABASE", "SCHEMA"):
        name = name_of(node.this)
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
    db, name = table_parts(node.this)
    like = None
    props = node.args.get("properties")
    like_prop = props.find(exp.LikeProperty) if props else None
    if like_prop is not None:
        like = table_parts(like_prop.this)
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


def classify_drop(node: exp.Drop, sql: str) -> Statement:
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
        db, name = table_parts(targets[0])
        if node.args.get("materialized"):
            return DropMaterializedView(db=db, name=name, if_exists=bool(node.args.get("exists")), sql=sql)
        return DropView(db=db, name=name, if_exists=bool(node.args.get("exists")), sql=sql)
    if kind == "TABLE":
        db, name = table_parts(targets[0])
        return DropTable(
            db=db,
            name=name,
            if_exists=bool(node.args.get("exists")),
            force=bool(node.args.get("force")),
            sql=sql,
        )
    return Other(sql=sql)


def classify_alter(node: exp.Alter, sql: str) -> Statement:
    if (node.args.get("kind") or "").upper() == "VIEW":
        return _classify_alter_view(node, sql)
    if (node.args.get("kind") or "").upper() != "TABLE":
        return Other(sql=sql)
    actions = node.args.get("actions") or []
    if len(actions) != 1:
        return Other(sql=sql)
    db, table = table_parts(node.this)
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


def query_text_after_as(sql: str) -> str:
    """The text after the first top-level AS of a CREATE/ALTER [MATERIALIZED] VIEW: its query as
    written (column lists and properties are in brackets, comments are strings)."""
    depth = 0
    for token in tokenize(sql):
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
    db, name = table_parts(target)
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
    db, name = table_parts(target)
    return CreateView(
        db=db,
        name=name,
        query=actions[0],
        query_sql=query_text_after_as(sql),
        columns=columns,
        alter=True,
        sql=sql,
    )


def _position(node: exp.Expr) -> tuple[str, str | None] | None:
    if node.args.get("first"):
        return ("FIRST", None)
    after = node.args.get("after")
    return ("AFTER", after.name) if after is not None else None


def classify_alter_table_clauses(node: nodes.AlterTableClauses, sql: str) -> Statement:
    db, table = table_parts(node.this)
    clauses = node.expressions
    replace = [c for c in clauses if isinstance(c, nodes.ReplaceWithTableClause)]
    if replace:
        if len(clauses) != 1:
            raise GaleneError("REPLACE WITH TABLE cannot be combined with other ALTER TABLE clauses")
        props = property_dict(replace[0].args.get("properties"))
        swap = props.get("swap", "true").strip().lower() != "false"
        _, other = table_parts(replace[0].this)
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


def classify_create_mtmv(node: nodes.CreateMaterializedView, sql: str) -> Statement:
    db, name = table_parts(node.this)
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


def classify_rename_command(node: exp.Command, sql: str) -> Statement:
    """`RENAME TABLE a TO b` (sqlglot keeps RENAME statements opaque)."""
    words = (node.expression.name if node.expression is not None else "").split()
    if len(words) == 4 and words[0].upper() == "TABLE" and words[2].upper() == "TO":
        source = sqlglot.parse_one(words[1], read=Galene, into=exp.Table)
        target = sqlglot.parse_one(words[3], read=Galene, into=exp.Table)
        db, table = table_parts(source)
        return AlterTableRename(db=db, table=table, new_name=target.name, sql=sql)
    return Other(sql=sql)


def classify_refresh_mtmv(node: nodes.RefreshMaterializedView, sql: str) -> Statement:
    db, name = table_parts(node.this)
    return RefreshMaterializedView(db=db, name=name, method=node.args.get("method"), sql=sql)
