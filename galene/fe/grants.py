"""GRANT / REVOKE with Doris' rules (privilege names and aliases, grant patterns, what a grantor
must hold) and the rows of SHOW GRANTS / SHOW ALL GRANTS / SHOW ROLES in Doris' columns, over the
privileges of `galene.fe.auth`."""

from __future__ import annotations

from galene.catalog.model import PRIVILEGES, CatalogState, Grants, Role, UserAccount
from galene.common.errors import AnalysisError
from galene.fe.auth import (
    DISPLAY,
    ER_SPECIFIC_ALL_ACCESS_DENIED,
    INTERNAL,
    OPERATOR,
    PUBLIC_DBS,
    AccessDenied,
    Identity,
    grant_sources,
    has_global,
    held_privileges,
    is_admin,
)

_ALIASES = {
    "ALL": ("SELECT_PRIV", "LOAD_PRIV", "ALTER_PRIV", "CREATE_PRIV", "DROP_PRIV"),
    "READ_WRITE": ("SELECT_PRIV", "LOAD_PRIV", "ALTER_PRIV", "CREATE_PRIV", "DROP_PRIV"),
    "READ_ONLY": ("SELECT_PRIV",),
}



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
        held = held_privileges(state, grantor, tuple(keys))
    else:
        held = held_privileges(state, grantor, ("*.*.*",))
        for grants in grant_sources(state, grantor):
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
    grants = _merge([_DEFAULT_GRANTS, *grant_sources(state, ident)])
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
