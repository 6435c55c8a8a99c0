"""Users and privileges, Doris' model: who may log in, and what each statement and load needs.

Pure functions over `CatalogState` (`accounts`, `roles`; changed only by journal ops through
`CatalogService`). This module owns:

* **Identities and logins.** A user is 'name'@'host' where host is a pattern (`%`, `_`) or a
  literal; a login picks the most specific account whose host pattern matches the client
  (MySQL's rule) and checks the password against it. Passwords are stored as MySQL native
  hashes, hex SHA1(SHA1(password)); the clear text is never kept or logged.
* **Privileges.** NODE, ADMIN, GRANT, SELECT, LOAD, ALTER, CREATE, DROP, USAGE, SHOW_VIEW
  granted on `*.*.*` (global), `ctl.*.*`, `ctl.db.*`, `ctl.db.tbl`, resources and workload
  groups, to users or to roles. A user holds the union of its own grants and its roles'. A
  check asks for any of a predicate's privileges (Doris' PrivPredicate, e.g. SELECT =
  Admin_priv | Select_priv) at the object's level or any level above it.
* **Enforcement helpers** with Doris' texts: `authorize` (every SQL statement, called by the
  executor before it runs one), `check_select` (every table a query reads), `can_see`
  (SHOW DATABASES/TABLES, information_schema), `check_load` (stream load, 2PC, group commit),
  `admin_or_node` (HTTP admin routes).
* **Rows** of SHOW GRANTS / SHOW ALL GRANTS / SHOW ROLES in Doris' columns.
* **Start-up**: the initial root password and the warning about an open root.

root ('root'@'%', role operator: NODE + ADMIN) and admin ('admin'@'%', role admin) exist in
every cluster, without a password unless `initial_root_password` or SET PASSWORD gives one.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from galene.catalog.model import PRIVILEGES, CatalogState, Grants, Role, UserAccount, account_key
from galene.common.errors import ER_UNKNOWN_ERROR, AnalysisError, DorisError

log = logging.getLogger(__name__)

INTERNAL = "internal"
# Databases every user may read (Doris' default role grants Select_priv on them).
PUBLIC_DBS = ("information_schema", "mysql")

ER_DBACCESS_DENIED = 1044
ER_TABLEACCESS_DENIED = 1142
ER_NONEXISTING_GRANT = 1141
ER_SPECIFIC_ALL_ACCESS_DENIED = 1223
ER_SPECIFIC_ACCESS_DENIED = 1227
ER_PASSWD_LENGTH = 1372

# Doris' Privilege names (SHOW GRANTS) and bit positions (their display order).
DISPLAY = {
    "NODE_PRIV": "Node_priv",
    "ADMIN_PRIV": "Admin_priv",
    "GRANT_PRIV": "Grant_priv",
    "SELECT_PRIV": "Select_priv",
    "LOAD_PRIV": "Load_priv",
    "ALTER_PRIV": "Alter_priv",
    "CREATE_PRIV": "Create_priv",
    "DROP_PRIV": "Drop_priv",
    "USAGE_PRIV": "Usage_priv",
    "SHOW_VIEW_PRIV": "Show_view_priv",
}
# Doris' AccessPrivilege aliases (legacy names).
_ALIASES = {
    "ALL": ("SELECT_PRIV", "LOAD_PRIV", "ALTER_PRIV", "CREATE_PRIV", "DROP_PRIV"),
    "READ_WRITE": ("SELECT_PRIV", "LOAD_PRIV", "ALTER_PRIV", "CREATE_PRIV", "DROP_PRIV"),
    "READ_ONLY": ("SELECT_PRIV",),
}


@dataclass(frozen=True)
class Predicate:
    """Doris' PrivPredicate with operator OR: any one of `privs` satisfies it."""

    privs: tuple[str, ...]

    def text(self) -> str:
        """PrivBitSet.toString(): `Admin_priv,Select_priv`."""
        return ",".join(DISPLAY[p] for p in PRIVILEGES if p in self.privs)

    def __str__(self) -> str:  # PrivPredicate.toString()
        return f"priv predicate: OR, {self.text()}"


SELECT = Predicate(("ADMIN_PRIV", "SELECT_PRIV"))
LOAD = Predicate(("ADMIN_PRIV", "LOAD_PRIV"))
ALTER = Predicate(("ADMIN_PRIV", "ALTER_PRIV"))
CREATE = Predicate(("ADMIN_PRIV", "CREATE_PRIV"))
DROP = Predicate(("ADMIN_PRIV", "DROP_PRIV"))
GRANT = Predicate(("ADMIN_PRIV", "GRANT_PRIV"))
ADMIN = Predicate(("ADMIN_PRIV",))
OPERATOR = Predicate(("NODE_PRIV",))
ADMIN_OR_NODE = Predicate(("NODE_PRIV", "ADMIN_PRIV"))
SHOW = Predicate(("ADMIN_PRIV", "SELECT_PRIV", "LOAD_PRIV", "ALTER_PRIV", "CREATE_PRIV", "DROP_PRIV"))
SHOW_VIEW = Predicate(("ADMIN_PRIV", "SHOW_VIEW_PRIV"))


class AccessDenied(DorisError):
    """A refusal for want of a privilege."""


# --- identities -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Identity:
    """The account a session or request acts as (its host is the account's pattern)."""

    name: str
    host: str = "%"

    @property
    def key(self) -> str:
        return account_key(self.name, self.host)

    def __str__(self) -> str:  # Doris' UserIdentity.toString()
        return self.key


ROOT = Identity("root", "%")


def identity_of(who: Identity | UserAccount | str | None, default_host: str = "%") -> Identity:
    """An Identity from an Identity, an account, an account key or a bare user name."""
    if isinstance(who, Identity):
        return who
    if isinstance(who, UserAccount):
        return Identity(who.name, who.host)
    text = who or ""
    m = re.fullmatch(r"'(.*)'@'(.*)'", text)
    if m:
        return Identity(m.group(1), m.group(2))
    return Identity(text, default_host)


def session_identity(ctx: Any) -> Identity:
    """The identity of a SQL session (`SessionContext`: user and the account's host)."""
    return Identity(getattr(ctx, "user", "") or "", getattr(ctx, "user_host", "%") or "%")


def native_hash(password: str) -> str:
    """MySQL's stored form of a password: hex SHA1(SHA1(password)); "" stays ""."""
    if not password:
        return ""
    return hashlib.sha1(hashlib.sha1(password.encode("utf-8")).digest()).hexdigest()


def parse_hashed_password(text: str) -> str:
    """`'*6BB4…'` (PASSWORD() output, 41 characters) as the stored form; Doris' check."""
    if not text:
        return ""
    if len(text) != 41 or not text.startswith("*") or not re.fullmatch(r"[0-9A-Fa-f]{40}", text[1:]):
        raise DorisError("Password hash should be a 41-digit hexadecimal number", ER_PASSWD_LENGTH)
    return text[1:].lower()


def _host_regex(pattern: str) -> re.Pattern:
    out = []
    for ch in pattern:
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
    return re.compile("".join(out), re.IGNORECASE | re.DOTALL)


_LOOPBACK = ("127.0.0.1", "::1", "localhost")


def host_matches(pattern: str, host: str) -> bool:
    if pattern == "%":
        return True
    if pattern.lower() == "localhost" and host in _LOOPBACK:
        return True
    return _host_regex(pattern).fullmatch(host or "") is not None


def _specificity(account: UserAccount) -> tuple:
    # MySQL: literal hosts before patterns; among patterns, more literal characters first.
    wild = "%" in account.host or "_" in account.host
    literal = len(account.host.replace("%", "").replace("_", ""))
    return (wild, -literal, account.host)


def accounts_named(state: CatalogState, name: str) -> list[UserAccount]:
    return sorted((a for a in state.accounts.values() if a.name == name), key=_specificity)


def login_account(state: CatalogState, name: str, host: str) -> UserAccount | None:
    """The account a MySQL login as `name` from `host` is checked against, if any."""
    for account in accounts_named(state, name):
        if host_matches(account.host, host):
            return account
    return None


def http_account(state: CatalogState, name: str, password: str, host: str | None) -> UserAccount | None:
    """The account an HTTP request with Basic auth acts as, or None (wrong user or password).

    With the client's address (the FE's own endpoints) MySQL's rule applies; a request a BE
    relays carries no client address, so any account of that name whose password matches."""
    name = name.split("@")[0]
    if host is not None:
        account = login_account(state, name, host)
        return account if account is not None and account.password == native_hash(password) else None
    hashed = native_hash(password)
    for account in accounts_named(state, name):
        if account.password == hashed:
            return account
    return None


# --- privilege resolution -----------------------------------------------------------------------
def _sources(state: CatalogState, ident: Identity) -> list[Grants]:
    account = state.accounts.get(ident.key)
    if account is None:
        return []
    out = [account.grants]
    for name in account.roles:
        role = state.roles.get(name)
        if role is not None:
            out.append(role.grants)
    return out


def _held(state: CatalogState, ident: Identity, keys: tuple[str, ...]) -> set[str]:
    held: set[str] = set()
    for grants in _sources(state, ident):
        for key in keys:
            held.update(grants.tables.get(key, ()))
    return held


def _satisfies(held: set[str], pred: Predicate) -> bool:
    return any(p in held for p in pred.privs)


def has_global(state: CatalogState, ident: Identity, pred: Predicate) -> bool:
    return _satisfies(_held(state, ident, ("*.*.*",)), pred)


def has_db(state: CatalogState, ident: Identity, db: str, pred: Predicate, ctl: str = INTERNAL) -> bool:
    if any(p == "NODE_PRIV" for p in pred.privs) and len(pred.privs) == 1:
        return has_global(state, ident, pred)  # NODE is global only (Doris)
    return _satisfies(_held(state, ident, ("*.*.*", f"{ctl}.*.*", f"{ctl}.{db}.*")), pred)


def has_table(
    state: CatalogState, ident: Identity, db: str, table: str, pred: Predicate, ctl: str = INTERNAL
) -> bool:
    if any(p == "NODE_PRIV" for p in pred.privs) and len(pred.privs) == 1:
        return has_global(state, ident, pred)
    keys = ("*.*.*", f"{ctl}.*.*", f"{ctl}.{db}.*", f"{ctl}.{db}.{table}")
    return _satisfies(_held(state, ident, keys), pred)


def has_any_table_in_db(state: CatalogState, ident: Identity, db: str, pred: Predicate, ctl: str = INTERNAL) -> bool:
    prefix = f"{ctl}.{db}."
    for grants in _sources(state, ident):
        for key, privs in grants.tables.items():
            if key.startswith(prefix) and _satisfies(set(privs), pred):
                return True
    return False


def is_admin(state: CatalogState, ident: Identity) -> bool:
    return has_global(state, ident, ADMIN)


def can_see(state: CatalogState, user: Identity | UserAccount | str, db: str, table: str | None = None) -> bool:
    """Whether `user` may see database `db` (and table `table` in it): SHOW DATABASES/TABLES,
    information_schema. Doris: any of Admin/Select/Load/Alter/Create/Drop at the object's level
    or above; a database is also visible through a privilege on one of its tables."""
    ident = identity_of(user)
    if db.lower() in PUBLIC_DBS:
        return True
    if table is None:
        return has_db(state, ident, db, SHOW) or has_any_table_in_db(state, ident, db, SHOW)
    return has_table(state, ident, db, table, SHOW)


@dataclass(frozen=True)
class SessionPrivileges:
    """A session's privileges as information_schema asks for them (its `Privileges` hook, which
    the executor builds for every statement that reads metadata)."""

    state: CatalogState
    identity: Identity

    def can_see(self, db: str, table: str | None = None) -> bool:
        return can_see(self.state, self.identity, db, table)

    def is_admin(self) -> bool:
        return is_admin(self.state, self.identity)


# --- Doris' refusal texts -------------------------------------------------------------------------
def specific_denied(what: str) -> AccessDenied:
    """ERR_SPECIFIC_ACCESS_DENIED_ERROR (1227)."""
    return AccessDenied(
        f"Access denied; you need (at least one of) the ({what}) privilege(s) for this operation",
        ER_SPECIFIC_ACCESS_DENIED,
    )


def db_denied(ident: Identity, db: str) -> AccessDenied:
    """ERR_DBACCESS_DENIED_ERROR (1044): Doris names the user without its host."""
    return AccessDenied(f"Access denied for user '{ident.name}' to database '{db}'", ER_DBACCESS_DENIED)


def table_denied(command: str, ident: Identity, client_ip: str, table_text: str) -> AccessDenied:
    """ERR_TABLEACCESS_DENIED_ERROR (1142): the client's address, as Doris' getRemoteIP()."""
    return AccessDenied(
        f"{command} command denied to user '{ident.name}'@'{client_ip or '%'}' for table '{table_text}'",
        ER_TABLEACCESS_DENIED,
    )


def select_denied(ident: Identity, db: str, table: str, column: str | None) -> AccessDenied:
    """Doris 2.1+ (Auth.checkColsPriv / UserAuthentication): the first column read without the
    privilege, or, when the query reads no column of the table, the table."""
    if column is None:
        return AccessDenied(
            f"Access denied; you need (at least one of) the ({SELECT.text()}) privilege(s) "
            f"on table {table} for this operation",
            ER_UNKNOWN_ERROR,
        )
    return AccessDenied(
        f"Permission denied: user [{ident}] does not have privilege for [{SELECT}] command on "
        f"[{INTERNAL}].[{db}].[{table}].[{column}]",
        ER_UNKNOWN_ERROR,
    )


def http_denied(pred: Predicate) -> str:
    """Doris' FE REST text (BaseController.checkTblAuth / checkGlobalAuth)."""
    return f"Access denied; you need (at least one of) the {pred.text()} privilege(s) for this operation"


def load_denied_text(pred: Predicate = LOAD) -> str:
    """Doris' FrontendServiceImpl text for a load the BE begins without the privilege."""
    return (
        "errCode = 2, detailMessage = Access denied; you need (at least one of) the "
        f"({pred}) privilege(s) for this operation"
    )


def check_load(state: CatalogState, ident: Identity, db: str, table: str | None) -> bool:
    """Stream load, 2PC, group commit: LOAD_PRIV on the table (on the database without one)."""
    if table is None:
        return has_db(state, ident, db, LOAD) or has_any_table_in_db(state, ident, db, LOAD)
    return has_table(state, ident, db, canonical_table(state, db, table), LOAD)


def admin_or_node(state: CatalogState, ident: Identity) -> bool:
    return has_global(state, ident, ADMIN_OR_NODE)


# --- names ----------------------------------------------------------------------------------------
def _database(state: CatalogState, name: str):
    db_id = state.db_names.get(name)
    return state.databases.get(db_id) if db_id is not None else None


def canonical_table(state: CatalogState, db_name: str, name: str) -> str:
    """The table or view's name as the catalog spells it (lookups forgive case when the match
    is unambiguous, as `CatalogService.table`), or `name` when there is none."""
    db = _database(state, db_name)
    if db is None:
        return name
    names = list(db.tables) + list(getattr(db, "views", {}) or {})
    if name in names:
        return name
    matches = [n for n in names if n.lower() == name.lower()]
    return matches[0] if len(matches) == 1 else name


def _relation(state: CatalogState, db_name: str, name: str):
    """The Table or View object named, or None."""
    db = _database(state, db_name)
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


# --- GRANT / REVOKE validation ----------------------------------------------------------------------
def parse_privileges(names: list[str]) -> list[str]:
    """Privilege names as written (any case, Doris' legacy aliases) in PRIVILEGES order."""
    out: set[str] = set()
    for raw in names:
        name = raw.upper()
        if name in _ALIASES:
            out.update(_ALIASES[name])
        elif name in PRIVILEGES:
            out.add(name)
        else:
            raise AnalysisError(f"Unknown privilege type {raw}")
    return [p for p in PRIVILEGES if p in out]


def table_pattern(parts: list[str]) -> str:
    """`ctl.db.tbl`, `db.tbl`, `db.*`, `*.*`, `*.*.*` as a grant key (Doris' TablePattern: a
    two-part pattern is in the internal catalog; a specific part under a wildcard is refused)."""
    if len(parts) == 2:
        parts = [INTERNAL, *parts]
    if len(parts) != 3:
        raise AnalysisError(f"Do not support format: {'.'.join(parts)}")
    ctl, db, tbl = parts
    if (tbl != "*" and (db == "*" or ctl == "*")) or (db != "*" and ctl == "*"):
        raise AnalysisError(f"Do not support format: {ctl}.{db}.{tbl}")
    if ctl != "*":
        ctl = ctl.lower()
    return f"{ctl}.{db}.{tbl}"


def pattern_level(pattern: str) -> str:
    ctl, db, tbl = pattern.split(".", 2)
    if ctl == "*":
        return "GLOBAL"
    if db == "*":
        return "CATALOG"
    return "DATABASE" if tbl == "*" else "TABLE"


def check_grant_rules(state: CatalogState, grantor: Identity, kind: str, target: str, privileges: list[str]) -> None:
    """Doris' GrantTablePrivilegeCommand.checkTablePrivileges (and the resource variant)."""
    if kind == "TABLE":
        if "USAGE_PRIV" in privileges:
            raise AnalysisError("Can not grant/revoke Usage_priv to/from any other users or roles")
        if pattern_level(target) != "GLOBAL" and ({"ADMIN_PRIV", "NODE_PRIV"} & set(privileges)):
            raise AnalysisError("ADMIN_PRIV and NODE_PRIV can only be granted/revoke on/from *.*.*")
    else:
        wrong = [p for p in privileges if p not in ("GRANT_PRIV", "USAGE_PRIV")]
        if wrong:
            raise AnalysisError(f"Can not grant/revoke {DISPLAY[wrong[0]]} to/from any other users or roles")
    if "NODE_PRIV" in privileges and not has_global(state, grantor, OPERATOR):
        raise AnalysisError("Only user with NODE_PRIV can grant/revoke NODE_PRIV to other user")
    if is_admin(state, grantor):
        return
    wanted = set(privileges) | {"GRANT_PRIV"}  # AND: every one of them, at the level or above
    if kind == "TABLE":
        ctl, db, tbl = target.split(".", 2)
        keys = ["*.*.*"]
        if ctl != "*":
            keys.append(f"{ctl}.*.*")
            if db != "*":
                keys.append(f"{ctl}.{db}.*")
                if tbl != "*":
                    keys.append(target)
        held = _held(state, grantor, tuple(keys))
    else:
        held = _held(state, grantor, ("*.*.*",))
        for grants in _sources(state, grantor):
            entries = grants.resources if kind == "RESOURCE" else grants.workload_groups
            held.update(entries.get(target, ()))
            held.update(entries.get("%", ()))
    if not wanted <= held:
        listed = ", ".join(DISPLAY[p] for p in PRIVILEGES if p in wanted)
        raise AccessDenied(
            f"Access denied; you need all  [{listed}] privilege(s) for this operation", ER_SPECIFIC_ALL_ACCESS_DENIED
        )


# --- SHOW GRANTS / SHOW ROLES ------------------------------------------------------------------------
GRANTS_COLUMNS = (
    "UserIdentity", "Comment", "Password", "Roles", "GlobalPrivs", "CatalogPrivs", "DatabasePrivs",
    "TablePrivs", "ColPrivs", "ResourcePrivs", "CloudClusterPrivs", "CloudStagePrivs", "StorageVaultPrivs",
    "WorkloadGroupPrivs", "ComputeGroupPrivs",
)  # fmt: skip
ROLES_COLUMNS = (
    "Name", "Comment", "Users", "GlobalPrivs", "CatalogPrivs", "DatabasePrivs", "TablePrivs", "ResourcePrivs",
    "CloudClusterPrivs", "CloudStagePrivs", "StorageVaultPrivs", "WorkloadGroupPrivs", "ComputeGroupPrivs",
)  # fmt: skip

# What Doris' default role gives every user (shown in its SHOW GRANTS).
_DEFAULT_GRANTS = Grants(
    tables={f"{INTERNAL}.{db}.*": ["SELECT_PRIV"] for db in PUBLIC_DBS},
    workload_groups={"normal": ["USAGE_PRIV"]},
)


def _privs_text(privs) -> str:
    return ",".join(DISPLAY[p] for p in PRIVILEGES if p in privs)


def _merge(grant_sets: list[Grants]) -> Grants:
    merged = Grants()
    for grants in grant_sets:
        for mine, theirs in (
            (merged.tables, grants.tables),
            (merged.resources, grants.resources),
            (merged.workload_groups, grants.workload_groups),
        ):
            for key, privs in theirs.items():
                mine[key] = [p for p in PRIVILEGES if p in set(mine.get(key, ())) | set(privs)]
    return merged


def _privilege_columns(grants: Grants) -> list[str | None]:
    """GlobalPrivs, CatalogPrivs, DatabasePrivs, TablePrivs texts (NULL when empty)."""
    levels: dict[str, list[str]] = {"GLOBAL": [], "CATALOG": [], "DATABASE": [], "TABLE": []}
    for key in sorted(grants.tables):
        privs = grants.tables[key]
        if not privs:
            continue
        level = pattern_level(key)
        ctl, db, tbl = key.split(".", 2)
        if level == "GLOBAL":
            levels[level].append(_privs_text(privs))
        elif level == "CATALOG":
            levels[level].append(f"{ctl}: {_privs_text(privs)}")
        elif level == "DATABASE":
            levels[level].append(f"{ctl}.{db}: {_privs_text(privs)}")
        else:
            levels[level].append(f"{ctl}.{db}.{tbl}: {_privs_text(privs)}")
    return ["; ".join(v) or None for v in levels.values()]


def _named_text(entries: dict[str, list[str]]) -> str | None:
    return "; ".join(f"{k}: {_privs_text(v)}" for k, v in sorted(entries.items()) if v) or None


def grants_row(state: CatalogState, account: UserAccount) -> tuple:
    ident = Identity(account.name, account.host)
    grants = _merge([_DEFAULT_GRANTS, *_sources(state, ident)])
    global_, catalog, database, table = _privilege_columns(grants)
    return (
        ident.key, account.comment, "Yes" if account.password else "No", ",".join(account.roles),
        global_, catalog, database, table, None, _named_text(grants.resources), None, None, None,
        _named_text(grants.workload_groups), None,
    )  # fmt: skip


def roles_row(state: CatalogState, role: Role) -> tuple:
    users = ",".join(sorted(k for k, a in state.accounts.items() if role.name in a.roles))
    global_, catalog, database, table = _privilege_columns(role.grants)
    return (
        role.name, role.comment, users, global_, catalog, database, table,
        _named_text(role.grants.resources), None, None, None, _named_text(role.grants.workload_groups), None,
    )  # fmt: skip


# --- start-up ------------------------------------------------------------------------------------
def initial_root_hash(value: str) -> str:
    """`initial_root_password`: Doris takes the hashed form (`*` + 40 hex digits, PASSWORD()'s
    output); Galene also takes a clear password and stores only its hash."""
    value = value.strip()
    if len(value) == 41 and value.startswith("*") and re.fullmatch(r"[0-9A-Fa-f]{40}", value[1:]):
        return value[1:].lower()
    return native_hash(value)


def is_loopback(host: str) -> bool:
    return host in _LOOPBACK or host.startswith("127.")


def open_root_warning(state: CatalogState, host: str) -> str | None:
    """The warning to show while root has no password on a node reachable beyond loopback."""
    root = state.accounts.get(ROOT.key)
    if root is None or root.password or is_loopback(host):
        return None
    return (
        f"root has no password and this node listens on {host}: anyone who reaches it is root. "
        "Set one (SET PASSWORD FOR 'root' = PASSWORD('…')) or start a new cluster with "
        "initial_root_password (fe.conf, GALENE_INITIAL_ROOT_PASSWORD or --conf)."
    )


_SECRET_WORDS = re.compile(r"\b(IDENTIFIED|PASSWORD)\b", re.IGNORECASE)


def redact_passwords(sql: str) -> str:
    """A statement as logs may show it: one that may carry a password shows its first words."""
    if not _SECRET_WORDS.search(sql):
        return sql
    return " ".join(sql.split()[:2]) + " … (redacted: may hold a password)"


def on_fe_start(catalog, *, fresh: bool, initial_root_password: str, host: str) -> None:
    """At FE start: a new cluster's root gets `initial_root_password` (one journaled
    SetUserPassword, as Doris applies it only when the cluster is created); then the warning
    when root is open on a node reachable beyond loopback."""
    if initial_root_password:
        if fresh:
            catalog.set_password("root", "%", initial_root_hash(initial_root_password))
            log.info("root's password set from initial_root_password")
        else:
            log.info("initial_root_password not applied: it sets root's password only when a cluster is created")
    warning = open_root_warning(catalog.state, host)
    if warning is not None:
        log.warning(warning)
