"""Cluster statements: backends (SHOW BACKENDS | FRONTENDS | PROC, ALTER SYSTEM … BACKEND,
CANCEL DECOMMISSION BACKEND), ADMIN COMPACT and SHOW TABLETS, and how each is read."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlglot import exp

from galene.common.errors import ER_UNKNOWN_ERROR, GaleneError
from galene.sql import nodes
from galene.sql.statements.base import Other, Statement
from galene.sql.statements.reading import property_dict, table_parts


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


# --- reading them -----------------------------------------------------------------------------


def classify_alter_system(node: nodes.AlterSystem, sql: str) -> Statement:
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


def classify_admin_compact(node: nodes.AdminCompact, sql: str) -> Statement:
    db, table = table_parts(node.this)
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


_CANCEL_DECOMMISSION = re.compile(
    r"^\s*CANCEL\s+DECOMMISSION\s+BACKEND\s+(.*?)\s*;?\s*$", re.IGNORECASE | re.DOTALL
)


_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")


def classify_show_tablets(node: nodes.ShowTablets, sql: str) -> Statement:
    db, table = table_parts(node.this)
    partitions = [p.name for p in node.args.get("partitions") or []] or None
    return ShowTablets(db=db, table=table, partitions=partitions, sql=sql)


def cancel_decommission(text: str) -> Statement | None:
    """Doris' CANCEL DECOMMISSION BACKEND "host:port"[, …] (no statement sqlglot reads), or None
    for any other text."""
    cancel = _CANCEL_DECOMMISSION.match(text)
    if cancel is None:
        return None
    hosts = [a or b for a, b in _QUOTED.findall(cancel.group(1))]
    if not hosts or _QUOTED.sub("", cancel.group(1)).replace(",", "").strip():
        raise GaleneError(
            f"Syntax error in line 1:\n{text}\nExpected 'host:port' after BACKEND", ER_UNKNOWN_ERROR
        )
    return AlterSystemDropBackend(
        host_port=hosts[0], host_ports=hosts, action="CANCEL DECOMMISSION", sql=text
    )
