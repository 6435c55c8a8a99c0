"""What each SQL statement needs, with Doris' rules and refusal texts: `authorize` (every
statement, called by the executor before it runs one) and `check_select` (every table a query
reads; a view needs SELECT on the view, as in Doris). Statement classes added later are checked
by their shape (a query they carry needs SELECT; CREATE…/DROP…/ALTER… naming a table need
CREATE / DROP / ALTER on it). The privileges themselves are `galene.fe.auth`'s.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from galene.catalog.model import CatalogState
from galene.common.errors import ER_UNKNOWN_ERROR
from galene.fe.auth import (
    ADMIN,
    ADMIN_OR_NODE,
    ALTER,
    CREATE,
    DROP,
    INTERNAL,
    LOAD,
    OPERATOR,
    PUBLIC_DBS,
    SELECT,
    SHOW,
    AccessDenied,
    Identity,
    Predicate,
    canonical_table,
    database_named,
    db_denied,
    has_any_table_in_db,
    has_db,
    has_global,
    has_table,
    is_admin,
    select_denied,
    session_identity,
    specific_denied,
    table_denied,
)


def _relation(state: CatalogState, db_name: str, name: str):
    """The Table or View object named, or None."""
    db = database_named(state, db_name)
    if db is None:
        return None
    table_id = db.tables.get(name)
    if table_id is not None:
        return state.tables.get(table_id)
    return (getattr(db, "views", {}) or {}).get(name)


def _visible_columns(relation) -> list[str]:
    return [c.name for c in getattr(relation, "columns", []) or [] if not getattr(c, "hidden", False)]


# --- queries --------------------------------------------------------------------------------------
def tables_read(expr: exp.Expr, default_db: str | None) -> list[tuple[str, str, exp.Table]]:
    """(db, table name as written, node) of every catalog table a query reads: CTE names and
    table functions (S3(…), jobs(…)) are not tables; a name without a database is in
    `default_db` (skipped when there is none: the statement then fails on its own)."""
    ctes = {cte.alias_or_name.lower() for cte in expr.find_all(exp.CTE)}
    out = []
    for node in expr.find_all(exp.Table):
        if not isinstance(node.this, exp.Identifier) or not node.name:
            continue  # a table function
        db = node.db or default_db
        if not node.db and node.name.lower() in ctes:
            continue
        if node.catalog and node.catalog.lower() != INTERNAL:
            continue
        if db is None:
            continue
        out.append((db, node.name, node))
    return out


def _columns_read(expr: exp.Expr, node: exp.Table, columns: list[str]) -> list[str]:
    """The columns of `node`'s table the query reads, in the table's order (Doris checks them
    in its relation's output order); every column for `*`."""
    qualifiers = {node.alias_or_name.lower(), node.name.lower()}
    known = {c.lower(): c for c in columns}
    wanted: set[str] = set()
    everything = False
    for col in expr.find_all(exp.Column):
        qualifier = col.table.lower() if col.table else None
        if isinstance(col.this, exp.Star):
            if qualifier is None or qualifier in qualifiers:
                everything = True
            continue
        if qualifier is not None and qualifier not in qualifiers:
            continue
        if col.name.lower() in known:
            wanted.add(col.name.lower())
    for star in expr.find_all(exp.Star):
        if isinstance(star.parent, exp.Select):  # SELECT * (not COUNT(*))
            everything = True
    if everything:
        return list(columns)
    return [c for c in columns if c.lower() in wanted]


def check_select(
    state: CatalogState, ident: Identity, expr: exp.Expr | None, default_db: str | None, skip: tuple = ()
) -> None:
    """SELECT_PRIV on every table `expr` reads (a view: on the view, not on what it reads, as
    Doris). `skip`: (db, table) pairs another check covers (the target of an UPDATE)."""
    if expr is None or is_admin(state, ident):
        return
    for db, name, node in tables_read(expr, default_db):
        if db.lower() in PUBLIC_DBS:
            continue
        table = canonical_table(state, db, name)
        if (db, table) in skip:
            continue
        if has_table(state, ident, db, table, SELECT):
            continue
        columns = _columns_read(expr, node, _visible_columns(_relation(state, db, table)))
        raise select_denied(ident, db, table, columns[0] if columns else None)


# --- statements -----------------------------------------------------------------------------------
def authorize(state: CatalogState, ctx: Any, stmt: Any) -> None:
    """Raise Doris' refusal if the session may not run `stmt` (a galene.sql.statements object).

    Account statements (CREATE USER, GRANT, …) check their own rules in the executor. Statement
    classes this function does not know are checked by shape: a query they carry needs SELECT,
    CREATE…/DROP…/ALTER… naming a table need CREATE/DROP/ALTER on it."""
    ident = session_identity(ctx)
    client_ip = getattr(ctx, "client_host", "") or ""
    default_db = getattr(ctx, "database", None)
    kind = type(stmt).__name__
    check = _CHECKS.get(kind)
    if check is not None:
        check(state, ident, client_ip, default_db, stmt)
        return
    _check_by_shape(state, ident, client_ip, default_db, stmt, kind)


def _db_of(stmt: Any, default_db: str | None) -> str | None:
    return getattr(stmt, "db", None) or default_db


def _need_table(
    state, ident, client_ip, db: str | None, table: str | None, pred: Predicate, command: str, sep: str = ": "
) -> None:
    if db is None or table is None or db.lower() in PUBLIC_DBS:
        return
    table = canonical_table(state, db, table)
    if not has_table(state, ident, db, table, pred):
        raise table_denied(command, ident, client_ip, f"{db}{sep}{table}")


def _need_db(state, ident, db: str | None, pred: Predicate) -> None:
    if db is None or db.lower() in PUBLIC_DBS:
        return
    if not (has_db(state, ident, db, pred) or (pred is SHOW and has_any_table_in_db(state, ident, db, pred))):
        raise db_denied(ident, db)


def _need_global(state, ident, pred: Predicate, what: str) -> None:
    if not has_global(state, ident, pred):
        raise specific_denied(what)


def _c_create_database(state, ident, ip, db, s):
    _need_db(state, ident, s.name, CREATE)


def _c_drop_database(state, ident, ip, db, s):
    _need_db(state, ident, s.name, DROP)


def _c_use(state, ident, ip, db, s):
    _need_db(state, ident, s.db, SHOW)


def _c_create_table(state, ident, ip, db, s):
    target_db = _db_of(s, db)
    public = target_db is None or target_db.lower() in PUBLIC_DBS
    if not public and not has_table(state, ident, target_db, s.name, CREATE):
        raise AccessDenied(specific_denied("CREATE").message, ER_UNKNOWN_ERROR)
    like = getattr(s, "like", None)
    if like is not None:
        _need_table(state, ident, ip, like[0] or db, like[1], SELECT, "SELECT")
    check_select(state, ident, getattr(s, "query", None), db)


def _c_drop_table(state, ident, ip, db, s):
    _need_table(state, ident, ip, _db_of(s, db), s.name, DROP, "DROP")


def _c_show_tables(state, ident, ip, db, s):
    _need_db(state, ident, _db_of(s, db), SHOW)


def _c_show_create_database(state, ident, ip, db, s):
    _need_db(state, ident, s.name, SHOW)


def _show_table(command: str):
    def check(state, ident, ip, db, s):
        _need_table(state, ident, ip, _db_of(s, db), s.table, SHOW, command)

    return check


def _c_alter_table(state, ident, ip, db, s):
    _need_table(state, ident, ip, _db_of(s, db), s.table, ALTER, "ALTER TABLE")


def _c_node(state, ident, ip, db, s):
    _need_global(state, ident, OPERATOR, "NODE")


def _c_admin_or_operator(state, ident, ip, db, s):
    _need_global(state, ident, ADMIN_OR_NODE, "ADMIN/OPERATOR")


def _c_admin(state, ident, ip, db, s):
    _need_global(state, ident, ADMIN, "ADMIN")


def _c_query(state, ident, ip, db, s):
    check_select(state, ident, s.expr, db)


def _c_insert(state, ident, ip, db, s):
    _need_table(state, ident, ip, _db_of(s, db), s.table, LOAD, "LOAD", sep=".")
    check_select(state, ident, s.query, db)


def _c_write(state, ident, ip, db, s):
    """UPDATE / DELETE / TRUNCATE: LOAD on the target; SELECT on the other tables read."""
    target_db = _db_of(s, db)
    _need_table(state, ident, ip, target_db, s.table, LOAD, "LOAD", sep=".")
    skip = ((target_db, canonical_table(state, target_db, s.table)),) if target_db else ()
    for part in [*getattr(s, "sources", []), *getattr(s, "joins", []), *getattr(s, "using", [])]:
        check_select(state, ident, part, db, skip)
    check_select(state, ident, getattr(s, "where", None), db, skip)
    for _, value in getattr(s, "assignments", []):
        check_select(state, ident, value, db, skip)


def _c_show_load(state, ident, ip, db, s):
    _need_db(state, ident, _db_of(s, db), SHOW)


def _c_create_job(state, ident, ip, db, s):
    _c_insert(state, ident, ip, db, s.insert)


def _c_job(state, ident, ip, db, s):
    job = next((j for j in state.jobs.values() if j.name == s.name), None)
    database = state.databases.get(job.db_id) if job is not None else None
    if database is not None and not has_db(state, ident, database.name, LOAD):
        raise db_denied(ident, database.name)


_CHECKS = {
    "CreateDatabase": _c_create_database,
    "DropDatabase": _c_drop_database,
    "Use": _c_use,
    "CreateTable": _c_create_table,
    "DropTable": _c_drop_table,
    "ShowTables": _c_show_tables,
    "ShowDatabases": lambda *a: None,  # filtered, not refused
    "ShowColumns": _show_table("SHOW COLUMNS"),
    "Describe": _show_table("DESCRIBE"),
    "ShowCreateTable": _show_table("SHOW CREATE TABLE"),
    "ShowCreateDatabase": _c_show_create_database,
    "ShowBackends": _c_admin_or_operator,
    "ShowFrontends": _c_admin_or_operator,
    "ShowProc": _c_admin,
    "ShowLoad": _c_show_load,
    "ShowVariables": lambda *a: None,
    "AlterSystemAddBackend": _c_node,
    "AlterSystemDropBackend": _c_node,
    "AlterSystemModifyBackend": _c_node,
    "AlterTableSetProperties": _c_alter_table,
    "AlterTableRename": _c_alter_table,
    "Query": _c_query,
    "Insert": _c_insert,
    "Update": _c_write,
    "Delete": _c_write,
    "Truncate": _c_write,
    "Set": lambda *a: None,
    "Transaction": lambda *a: None,
    "AdminCompact": _c_admin,
    "ShowTablets": _c_admin,
    "CreateJob": _c_create_job,
    "JobControl": _c_job,
    "AlterJob": _c_job,
    "Other": lambda *a: None,
}
# User and role statements: the executor applies their rules (GRANT_PRIV, root's password, …).
for _kind in ("CreateUser", "AlterUser", "DropUser", "SetPassword", "CreateRole", "DropRole", "AlterRole",
              "Grant", "Revoke", "GrantRole", "RevokeRole", "ShowGrants", "ShowRoles"):  # fmt: skip
    _CHECKS[_kind] = lambda *a: None


def _check_by_shape(state, ident, ip, default_db, stmt, kind: str) -> None:
    """Statements added after this module: the privilege their name and fields imply."""
    if is_admin(state, ident):
        return
    db = _db_of(stmt, default_db)
    table = getattr(stmt, "table", None) or getattr(stmt, "view", None)
    if table is None and isinstance(getattr(stmt, "name", None), str):
        table = stmt.name
    if not isinstance(table, str):
        table = None
    for prefix, pred in (("Create", CREATE), ("Drop", DROP), ("Alter", ALTER), ("Rename", ALTER),
                         ("Replace", ALTER), ("Refresh", LOAD)):  # fmt: skip
        if kind.startswith(prefix) and table is not None:
            _need_table(state, ident, ip, db, table, pred, prefix.upper())
            break
    if kind.startswith(("Show", "Desc")) and table is not None and db is not None:
        _need_table(state, ident, ip, db, table, SHOW, "SHOW")
    query = getattr(stmt, "query", None)
    if isinstance(query, exp.Expr):
        check_select(state, ident, query, default_db)
    expr = getattr(stmt, "expr", None)
    if isinstance(expr, exp.Query):
        check_select(state, ident, expr, default_db)
