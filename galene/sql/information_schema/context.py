"""What information_schema's row builders read: the catalog, the session asking, its privileges.

`MetaContext` is built by the FE for each statement. Its `privileges` (a `Privileges`: may the
session see this database / table, is it an admin) are required — the FE builds them from its
users and privileges (`galene.fe.auth`) and passes them in; this package never looks them up,
and a check that fails hides the object, never shows it. `relations` lists the tables and views
a session may see. The names (`SCHEMA_NAME`, the `internal` catalog) and the column types the
tables are declared with live here too.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from galene.catalog.model import CatalogState, Column, Table
from galene.common.types import ColumnType

log = logging.getLogger(__name__)

SCHEMA_NAME = "information_schema"
CATALOG = "internal"  # TABLE_CATALOG / CATALOG_NAME as Doris reports the internal catalog


def is_schema(name: str | None) -> bool:
    return name is not None and name.lower() == SCHEMA_NAME


# --- column types -------------------------------------------------------------------------
def varchar(length: int) -> ColumnType:
    return ColumnType(name="VARCHAR", length=length)


BIGINT = ColumnType(name="BIGINT")
INT = ColumnType(name="INT")
DATETIME = ColumnType(name="DATETIME")
TEXT = ColumnType(name="STRING")
BOOLEAN = ColumnType(name="BOOLEAN")
DOUBLE = ColumnType(name="DOUBLE")
LARGEINT = ColumnType(name="LARGEINT")
JSON_TYPE = ColumnType(name="JSON")
V64 = varchar(64)
V512 = varchar(512)
V32 = varchar(32)


# --- the session asking -------------------------------------------------------------------
class Privileges(Protocol):
    """A session's privileges as information_schema asks for them (the FE's
    `galene.fe.auth.SessionPrivileges` is one)."""

    def can_see(self, db: str, table: str | None = None) -> bool:
        """Whether the session's user may see database `db` (and table `table` in it)."""
        ...

    def is_admin(self) -> bool:
        """Whether the session's user holds ADMIN_PRIV (sees every connection in PROCESSLIST,
        everyone's grants in USER_PRIVILEGES)."""
        ...


@dataclass
class ProcessInfo:
    """One MySQL connection, as SHOW PROCESSLIST and information_schema.processlist list it."""

    connection_id: int
    user: str
    host: str  # host:port of the client
    login_time: float
    database: str | None
    command: str  # Sleep | Query
    time_s: int  # seconds in the current command (since the last one ended, when sleeping)
    state: str  # OK | ERR
    info: str  # the current (or last) statement


@dataclass
class Filters:
    """Equality conditions pushed into the row builders (the query still applies its WHERE)."""

    db: str | None = None
    table: str | None = None


@dataclass
class MetaContext:
    """What the row builders read: the catalog, the session asking (its user and privileges,
    both required), and the live connections."""

    state: CatalogState
    privileges: Privileges
    user: str
    database: str | None = None
    connection_id: int = 0
    variables: dict[str, Any] = field(default_factory=dict)  # this session's
    global_variables: dict[str, Any] = field(default_factory=dict)
    variable_defaults: dict[str, Any] = field(default_factory=dict)
    processes: Callable[[], list[ProcessInfo]] | None = None
    fe_host: str = "127.0.0.1"
    now: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        if self.privileges is None:
            raise TypeError("MetaContext needs the session's privileges")

    def can_see(self, db: str, table: str | None = None) -> bool:
        """The privilege hook: whether this session's user may see `db` (and `table`)."""
        try:
            return bool(self.privileges.can_see(db, table))
        except Exception:  # a failing privilege check hides the object, never shows it
            log.exception("can_see(%r, %r, %r) failed", self.user, db, table)
            return False

    def is_admin(self) -> bool:
        """Whether the session's user holds ADMIN_PRIV (sees every connection in PROCESSLIST)."""
        return bool(self.privileges.is_admin())


# --- the relations a session sees ---------------------------------------------------------
def is_view(obj: Any) -> bool:
    """A logical view (`Database.views`), as opposed to a table or a materialized view."""
    return not hasattr(obj, "rowsets")


def mysql_table_type(obj: Any) -> tuple[str, str]:
    """(TABLE_TYPE, ENGINE) as Doris reports them (TableType.toMysqlType / toEngineName): an
    async materialized view is a VIEW there too."""
    if is_view(obj):
        return "VIEW", "View"
    if getattr(obj, "mtmv", None) is not None:
        return "VIEW", "MATERIALIZED_VIEW"
    return "BASE TABLE", "Doris"


def visible_columns(obj: Any) -> list[Column]:
    if is_view(obj):
        return list(getattr(obj, "columns", None) or [])
    return obj.visible_columns()


def relations(ctx: MetaContext, filters: Filters | None = None) -> Iterator[tuple[str, Any]]:
    """(database name, table or view) of every relation the session may see, by db then name."""
    state = ctx.state
    f = filters or Filters()
    for db_name in sorted(state.db_names):
        if f.db is not None and db_name != f.db:
            continue
        if not ctx.can_see(db_name):
            continue
        db = state.databases[state.db_names[db_name]]
        views = getattr(db, "views", None) or {}
        found: dict[str, Any] = {}
        for name, table_id in db.tables.items():
            table = state.tables.get(table_id)
            if table is not None:
                found[name] = table
        for name, view in views.items():
            found.setdefault(name, view)
        for name in sorted(found):
            if f.table is not None and name != f.table:
                continue
            if ctx.can_see(db_name, name):
                yield db_name, found[name]


def table_stats(table: Table, partition_id: int | None = None) -> tuple[int, int]:
    """(rows, bytes) stored in the table's rowsets (before key merging, as Doris counts)."""
    rows = size = 0
    for r in table.rowsets:
        if partition_id is None or r.partition_id == partition_id:
            rows += r.num_rows
            size += r.data_size
    return rows, size


def as_datetime(ts: float) -> datetime | None:
    return datetime.fromtimestamp(ts).replace(microsecond=0) if ts and ts > 0 else None


def time_text(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if ts and ts > 0 else "NULL"
