"""Users and privileges: CREATE/ALTER/DROP USER, SET PASSWORD, roles, GRANT/REVOKE, SHOW GRANTS
and SHOW ROLES, and how each is read from the dialect's AccountStatement node (the rules
that decide them are galene/fe/auth.py's)."""

from __future__ import annotations

from dataclasses import dataclass

from galene.sql import nodes
from galene.sql.statements.base import Statement


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


# --- reading them -----------------------------------------------------------------------------


def classify_account(node: nodes.AccountStatement, sql: str) -> Statement:
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
        return CreateRole(
            name=a["role"], if_not_exists=bool(a.get("exists")), comment=a.get("comment") or "", sql=sql
        )
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
