"""Users and privileges, Doris' model: who may log in and what privileges each account holds.

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
  Admin_priv | Select_priv) at the object's level or any level above it: `can_see` (SHOW
  DATABASES/TABLES, information_schema, through `SessionPrivileges`), `check_load` (stream load,
  2PC, group commit), `admin_or_node` (HTTP admin routes), and Doris' refusal texts.
* **Start-up**: the initial root password and the warning about an open root.

What each SQL statement needs is `galene.fe.authorize`'s; GRANT / REVOKE's rules and the rows
of SHOW GRANTS / SHOW ROLES are `galene.fe.grants`'.

root ('root'@'%', role operator: NODE + ADMIN) and admin ('admin'@'%', role admin) exist in
every cluster, without a password unless `initial_root_password` or SET PASSWORD gives one.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from typing import Any

from galene.catalog.model import PRIVILEGES, CatalogState, Grants, UserAccount, account_key
from galene.common.errors import ER_UNKNOWN_ERROR, DorisError

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
def grant_sources(state: CatalogState, ident: Identity) -> list[Grants]:
    """The grants an account holds: its own, then its roles'."""
    account = state.accounts.get(ident.key)
    if account is None:
        return []
    out = [account.grants]
    for name in account.roles:
        role = state.roles.get(name)
        if role is not None:
            out.append(role.grants)
    return out


def held_privileges(state: CatalogState, ident: Identity, keys: tuple[str, ...]) -> set[str]:
    """The table privileges an account holds on any of the grant keys `keys`."""
    held: set[str] = set()
    for grants in grant_sources(state, ident):
        for key in keys:
            held.update(grants.tables.get(key, ()))
    return held


def _satisfies(held: set[str], pred: Predicate) -> bool:
    return any(p in held for p in pred.privs)


def has_global(state: CatalogState, ident: Identity, pred: Predicate) -> bool:
    return _satisfies(held_privileges(state, ident, ("*.*.*",)), pred)


def has_db(state: CatalogState, ident: Identity, db: str, pred: Predicate, ctl: str = INTERNAL) -> bool:
    if any(p == "NODE_PRIV" for p in pred.privs) and len(pred.privs) == 1:
        return has_global(state, ident, pred)  # NODE is global only (Doris)
    return _satisfies(held_privileges(state, ident, ("*.*.*", f"{ctl}.*.*", f"{ctl}.{db}.*")), pred)


def has_table(
    state: CatalogState, ident: Identity, db: str, table: str, pred: Predicate, ctl: str = INTERNAL
) -> bool:
    if any(p == "NODE_PRIV" for p in pred.privs) and len(pred.privs) == 1:
        return has_global(state, ident, pred)
    keys = ("*.*.*", f"{ctl}.*.*", f"{ctl}.{db}.*", f"{ctl}.{db}.{table}")
    return _satisfies(held_privileges(state, ident, keys), pred)


def has_any_table_in_db(state: CatalogState, ident: Identity, db: str, pred: Predicate, ctl: str = INTERNAL) -> bool:
    prefix = f"{ctl}.{db}."
    for grants in grant_sources(state, ident):
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
def database_named(state: CatalogState, name: str):
    """The database `name`, or None."""
    db_id = state.db_names.get(name)
    return state.databases.get(db_id) if db_id is not None else None


def canonical_table(state: CatalogState, db_name: str, name: str) -> str:
    """The table or view's name as the catalog spells it (lookups forgive case when the match
    is unambiguous, as `CatalogService.table`), or `name` when there is none."""
    db = database_named(state, db_name)
    if db is None:
        return name
    names = list(db.tables) + list(getattr(db, "views", {}) or {})
    if name in names:
        return name
    matches = [n for n in names if n.lower() == name.lower()]
    return matches[0] if len(matches) == 1 else name

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
