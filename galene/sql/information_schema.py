"""Metadata for tools: the `information_schema` database and the SHOW statements derived from it.

Owns the information_schema tables with Doris' column names and types
(`fe/fe-core/.../catalog/SchemaTable.java`), their rows computed on the FE from the catalog
(bounded by the catalog's size; nothing is stored), and the rows of the SHOW statements that
Doris answers from the same data: SHOW TABLE STATUS (a projection of `tables`), SHOW INDEX,
SHOW PARTITIONS, SHOW DATA, SHOW STREAM LOAD, SHOW TRANSACTION, SHOW [FULL] PROCESSLIST.

A query that reads only information_schema tables is answered here (`run_local`): the rows
of the tables it names (pre-filtered by its `TABLE_SCHEMA = '…'` / `TABLE_NAME = '…'`
conditions) go through sqlglot's Python executor — joins, CTEs, GROUP BY and ORDER BY
included, in milliseconds. A query it cannot evaluate, or one that mixes information_schema
with user tables, runs on the engine like any query: each information_schema table becomes a
small Arrow-backed view for the statement (`arrow_table`, registered the way table functions
are, see `galene.fe.table_functions`).

Privileges: every row that names a database or table passes `MetaContext.can_see`, the one
hook where `galene.fe.auth.can_see(state, user, db, table=None)` filters what a user may see
(everything is visible while that module does not exist).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa
from sqlglot import exp

from galene.catalog.model import CatalogState, Column, Table, Txn
from galene.common.errors import AnalysisError, GaleneError
from galene.common.types import ColumnType

log = logging.getLogger(__name__)

SCHEMA_NAME = "information_schema"
CATALOG = "internal"  # TABLE_CATALOG / CATALOG_NAME as Doris reports the internal catalog


def is_schema(name: str | None) -> bool:
    return name is not None and name.lower() == SCHEMA_NAME


# --- column types -------------------------------------------------------------------------
def _v(length: int) -> ColumnType:
    return ColumnType(name="VARCHAR", length=length)


BIGINT = ColumnType(name="BIGINT")
INT = ColumnType(name="INT")
DATETIME = ColumnType(name="DATETIME")
TEXT = ColumnType(name="STRING")
BOOLEAN = ColumnType(name="BOOLEAN")
DOUBLE = ColumnType(name="DOUBLE")
LARGEINT = ColumnType(name="LARGEINT")
JSON_TYPE = ColumnType(name="JSON")


# --- the catalog as tools see it ----------------------------------------------------------
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
    """What the row builders read: the catalog, the session asking, and the live connections."""

    state: CatalogState
    user: str = "root"
    database: str | None = None
    connection_id: int = 0
    variables: dict[str, Any] = field(default_factory=dict)  # this session's
    global_variables: dict[str, Any] = field(default_factory=dict)
    variable_defaults: dict[str, Any] = field(default_factory=dict)
    processes: Callable[[], list[ProcessInfo]] | None = None
    fe_host: str = "127.0.0.1"
    now: float = field(default_factory=time.time)
    user_host: str = "%"  # the host pattern of the session's account ('name'@'host')
    _can_see: Any = None

    def can_see(self, db: str, table: str | None = None) -> bool:
        """The privilege hook: whether this session's user may see `db` (and `table`)."""
        if self._can_see is None:
            self._can_see = _auth_can_see() or False
        if self._can_see is False:
            return True
        try:
            return bool(self._can_see(self.state, self.principal(), db, table))
        except Exception:  # a failing privilege check hides the object, never shows it
            log.exception("can_see(%r, %r, %r) failed", self.user, db, table)
            return False

    def is_admin(self) -> bool:
        """Whether the session's user holds ADMIN_PRIV (sees every connection in PROCESSLIST)."""
        try:
            from galene.fe import auth
        except ImportError:
            return True
        check = getattr(auth, "is_admin", None)
        return True if check is None else bool(check(self.state, self.principal()))

    def principal(self) -> Any:
        """The session's account for the auth module: its Identity ('name'@'host'), or the name."""
        try:
            from galene.fe import auth
        except ImportError:
            return self.user
        identity_of = getattr(auth, "identity_of", None)
        return identity_of(self.user, self.user_host) if identity_of is not None else self.user


def _auth_can_see() -> Callable | None:
    try:
        from galene.fe import auth  # the users-and-privileges module, once it exists
    except ImportError:
        return None
    return getattr(auth, "can_see", None)


def _is_view(obj: Any) -> bool:
    """A logical view (`Database.views`), as opposed to a table or a materialized view."""
    return not hasattr(obj, "rowsets")


def _mysql_table_type(obj: Any) -> tuple[str, str]:
    """(TABLE_TYPE, ENGINE) as Doris reports them (TableType.toMysqlType / toEngineName): an
    async materialized view is a VIEW there too."""
    if _is_view(obj):
        return "VIEW", "View"
    if getattr(obj, "mtmv", None) is not None:
        return "VIEW", "MATERIALIZED_VIEW"
    return "BASE TABLE", "Doris"


def visible_columns(obj: Any) -> list[Column]:
    if _is_view(obj):
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


def _time(ts: float) -> datetime | None:
    return datetime.fromtimestamp(ts).replace(microsecond=0) if ts and ts > 0 else None


def _time_text(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if ts and ts > 0 else "NULL"


# --- Doris type renderings (SchemaColumnsScanner, Type.getPrecision & co.) ----------------
_DATA_TYPES = {
    "BOOLEAN": "tinyint",
    "TINYINT": "tinyint",
    "SMALLINT": "smallint",
    "INT": "int",
    "BIGINT": "bigint",
    "LARGEINT": "bigint unsigned",
    "FLOAT": "float",
    "DOUBLE": "double",
    "DECIMAL": "decimal",
    "DATE": "date",
    "DATETIME": "datetime",
    "CHAR": "char",
    "VARCHAR": "varchar",
    "STRING": "varchar",
    "JSON": "json",
}
_INT_WIDTHS = {"TINYINT": 4, "SMALLINT": 6, "INT": 11, "BIGINT": 20}
_PRECISION = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19, "LARGEINT": 39, "FLOAT": 7, "DOUBLE": 15}
_DECIMAL_DIGITS = {"BOOLEAN": 0, "TINYINT": 0, "SMALLINT": 0, "INT": 0, "BIGINT": 0, "FLOAT": 7, "DOUBLE": 15}


def data_type(t: ColumnType) -> str:
    """information_schema.COLUMNS.DATA_TYPE."""
    return _DATA_TYPES.get(t.name, t.name.lower())


def column_type(t: ColumnType) -> str:
    """information_schema.COLUMNS.COLUMN_TYPE (MySQL spelling: `int(11)`, `varchar(20)`)."""
    if t.name == "BOOLEAN":
        return "tinyint(1)"
    if t.name in _INT_WIDTHS:
        return f"{t.name.lower()}({_INT_WIDTHS[t.name]})"
    if t.name == "LARGEINT":
        return "bigint(20) unsigned"
    return t.to_sql()


def numeric_precision(t: ColumnType) -> int | None:
    if t.name == "DECIMAL":
        return t.precision
    return _PRECISION.get(t.name)


def numeric_scale(t: ColumnType) -> int | None:
    if t.name == "DECIMAL":
        return t.scale
    return _DECIMAL_DIGITS.get(t.name)


def datetime_precision(t: ColumnType) -> int | None:
    return t.precision if t.name == "DATETIME" else None


def char_max_length(t: ColumnType) -> int | None:
    return t.length if t.name in ("CHAR", "VARCHAR") else None


def column_size(t: ColumnType) -> int | None:
    """Doris' Type.getColumnSize: the precision of numbers, the length of CHAR/VARCHAR."""
    if t.name in ("CHAR", "VARCHAR"):
        return t.length
    return numeric_precision(t)


_KEY_ABBREVIATIONS = {"DUP_KEYS": "DUP", "UNIQUE_KEYS": "UNI", "AGG_KEYS": "AGG"}


# --- the tables ---------------------------------------------------------------------------
RowBuilder = Callable[[MetaContext, Filters], Iterable[tuple]]


@dataclass(frozen=True)
class SchemaTable:
    name: str
    columns: tuple[tuple[str, ColumnType], ...]
    rows: RowBuilder

    @property
    def column_names(self) -> list[str]:
        return [c for c, _ in self.columns]


def _empty(ctx: MetaContext, f: Filters) -> Iterable[tuple]:
    return ()


def _schemata_rows(ctx: MetaContext, f: Filters) -> Iterable[tuple]:
    names = sorted([*ctx.state.db_names, SCHEMA_NAME])
    for name in names:
        if f.db is not None and name != f.db:
            continue
        if name != SCHEMA_NAME and not ctx.can_see(name):
            continue
        yield (CATALOG, name, "utf8", "utf8_general_ci", None, "NO")


def _tables_rows(ctx: MetaContext, f: Filters) -> Iterable[tuple]:
    for db_name, table in relations(ctx, f):
        kind, engine = _mysql_table_type(table)
        rows, size = (0, 0) if _is_view(table) else table_stats(table)
        yield (
            CATALOG, db_name, table.name, kind, engine, None, None, rows, size // rows if rows else 0, size,
            None, None, None, None,
            _time(table.create_time), _time(table.update_time), None, "utf-8", None, None, table.comment or "",
        )  # fmt: skip
    if f.db is None or f.db == SCHEMA_NAME:
        for name in sorted(SCHEMA_TABLES):
            if f.table is None or name == f.table:
                yield (
                    CATALOG, SCHEMA_NAME, name, "SYSTEM VIEW", "SYSTEM VIEW", None, None, 0, 0, 0,
                    None, None, None, None, None, None, None, "utf-8", None, None, "",
                )  # fmt: skip


def _columns_rows(ctx: MetaContext, f: Filters) -> Iterable[tuple]:
    for db_name, table in relations(ctx, f):
        key = _KEY_ABBREVIATIONS.get(getattr(table, "keys_type", ""), "")
        for i, c in enumerate(visible_columns(table), 1):
            yield _column_row(db_name, table.name, i, c, key if c.is_key else "")
    if f.db is None or f.db == SCHEMA_NAME:
        for name in sorted(SCHEMA_TABLES):
            if f.table is None or name == f.table:
                for i, (cname, ctype) in enumerate(SCHEMA_TABLES[name].columns, 1):
                    yield _column_row(SCHEMA_NAME, name, i, Column(name=cname, type=ctype), "")


def _column_row(db: str, table: str, position: int, c: Column, key: str) -> tuple:
    t = c.type
    length = char_max_length(t)
    return (
        CATALOG, db, table, c.name, position, c.default, "YES" if c.nullable else "NO", data_type(t),
        length, length * 4 if length is not None else None, numeric_precision(t), numeric_scale(t),
        datetime_precision(t), None, None, column_type(t), key, "", "", c.comment or "", column_size(t),
        numeric_scale(t), None, None,
    )  # fmt: skip


def _views_rows(ctx: MetaContext, f: Filters) -> Iterable[tuple]:
    for db_name, table in relations(ctx, f):
        if _is_view(table):
            definer = getattr(table, "definer", "") or "root"
            definer = definer if "@" in definer else f"{definer}@%"
            yield (
                CATALOG, db_name, table.name, getattr(table, "sql", "") or "", "NONE", "NO", definer,
                "DEFINER", "utf8", "utf8_general_ci",
            )  # fmt: skip


# Doris privileges as MySQL names them in information_schema (Privilege.privInDorisToMysql);
# ADMIN_PRIV stands for all of them.
_MYSQL_PRIVILEGES = {
    "SELECT_PRIV": "SELECT",
    "LOAD_PRIV": "INSERT",
    "ALTER_PRIV": "ALTER",
    "CREATE_PRIV": "CREATE",
    "DROP_PRIV": "DROP",
    "USAGE_PRIV": "USAGE",
    "SHOW_VIEW_PRIV": "SHOW VIEW",
}


def _grantees(ctx: MetaContext) -> list[tuple[str, list[str]]]:
    """('name'@'host', the Doris privileges held on *.*.*) of every account: its own grants
    and its roles'. (A catalog without accounts: root and admin hold everything.)"""
    state = ctx.state
    accounts = getattr(state, "accounts", None)
    if accounts is None:
        return [(f"'{u}'@'%'", ["NODE_PRIV", "ADMIN_PRIV", "GRANT_PRIV"]) for u in ("admin", "root")]
    roles = getattr(state, "roles", None) or {}
    out = []
    for key in sorted(accounts):
        account = accounts[key]
        privs = list(account.grants.tables.get("*.*.*", []))
        for role_name in account.roles:
            role = roles.get(role_name)
            if role is not None:
                privs += [p for p in role.grants.tables.get("*.*.*", []) if p not in privs]
        out.append((key, privs))
    return out


def _user_privileges_rows(ctx: MetaContext, f: Filters) -> Iterable[tuple]:
    for grantee, privs in _grantees(ctx):
        name = grantee.split("'")[1] if grantee.startswith("'") else grantee
        if name != ctx.user and not ctx.is_admin():  # Doris: others' grants need a global privilege
            continue
        grantable = "YES" if "GRANT_PRIV" in privs or "ADMIN_PRIV" in privs else "NO"
        names: list[str] = []
        for p in privs:
            if p == "ADMIN_PRIV":
                names.extend(n for n in _MYSQL_PRIVILEGES.values() if n not in names)
            elif p in _MYSQL_PRIVILEGES and _MYSQL_PRIVILEGES[p] not in names:
                names.append(_MYSQL_PRIVILEGES[p])
        for priv in names:
            yield (grantee, "def", priv, grantable)


def _character_sets_rows(ctx: MetaContext, f: Filters) -> Iterable[tuple]:
    return [("utf8mb4", "utf8mb4_0900_bin", "UTF-8 Unicode", 4)]


def _collations_rows(ctx: MetaContext, f: Filters) -> Iterable[tuple]:
    return [("utf8mb4_0900_bin", "utf8mb4", 309, "Yes", "Yes", 1)]


def _partition_key(table: Table) -> str:
    return ", ".join(table.partition_columns)


def _partition_range(table: Table, p) -> str:
    """Doris' text of a partition's range / list (PartitionKey.toString style)."""
    types = ", ".join(table.column(c).type.name if table.column(c) else "?" for c in table.partition_columns)
    if table.partition_type == "RANGE":

        def key(values: list[str] | None, low: bool) -> str:
            if values is None:
                values = ["-2147483648" if low else "MAXVALUE"] * max(1, len(table.partition_columns))
            return f"types: [{types}]; keys: [{', '.join(values)}]; "

        return f"[{key(p.range_lower, True)}..{key(p.range_upper, False)})"
    if table.partition_type == "LIST":
        items = ", ".join(f"types: [{types}]; keys: [{', '.join(v)}]; " for v in p.list_values)
        return f"[{items}]"
    return ""


def _distribution(table: Table) -> str:
    if table.distribution_type == "HASH":
        return ", ".join(table.distribution_columns)
    return "RANDOM"


def _partitions_rows(ctx: MetaContext, f: Filters) -> Iterable[tuple]:
    for db_name, table in relations(ctx, f):
        if _is_view(table):
            continue
        for pos, p in enumerate(table.partitions, 1):
            rows, size = table_stats(table, p.id)
            yield (
                p.id, CATALOG, db_name, table.name, p.name, None, pos, None, table.partition_type,
                None, _partition_key(table), None, _partition_range(table, p), rows, size // rows if rows else 0,
                size, 0, 0, 0, int(table.create_time), _time(table.update_time), None, 0, "", "", "",
                str(size), "0", "NORMAL", "tag.location.default: 1", 1, "", "HDD", "253402271999000", "NULL",
                len(p.tablet_ids), p.visible_version, p.visible_version, _partition_key(table),
                _partition_range(table, p), _distribution(table),
            )  # fmt: skip


def processlist_rows(ctx: MetaContext, full: bool = True) -> list[tuple]:
    """Rows of SHOW [FULL] PROCESSLIST / information_schema.processlist (Doris' ThreadInfo.toRow):
    the Info of a non-FULL listing is cut at 100 characters."""
    out = []
    everyone = ctx.is_admin()
    for p in sorted(ctx.processes() if ctx.processes else [], key=lambda p: p.connection_id):
        if not everyone and p.user != ctx.user:
            continue
        info = p.info if full else p.info[:100]
        out.append(
            (
                "Yes" if p.connection_id == ctx.connection_id else "No", p.connection_id, p.user, p.host,
                _time_text(p.login_time), CATALOG, p.database or "", p.command, p.time_s, p.state, "", "",
                info, ctx.fe_host, "NULL",
            )
        )  # fmt: skip
    return out


def _processlist_rows(ctx: MetaContext, f: Filters) -> Iterable[tuple]:
    return [(r[0], r[1], r[2], r[3], _parse_time(r[4]), *r[5:]) for r in processlist_rows(ctx, full=True)]


def _parse_time(text: str) -> datetime | None:
    return None if text == "NULL" else datetime.strptime(text, "%Y-%m-%d %H:%M:%S")


def _variable_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _variables_rows(values: dict[str, Any], defaults: dict[str, Any]) -> list[tuple]:
    out = []
    for name in sorted(values):
        if name == "external_user":
            continue
        value, default = _variable_text(values[name]), _variable_text(defaults.get(name, values[name]))
        out.append((name, value, default, "0" if value == default else "1"))
    return out


def _session_variables_rows(ctx: MetaContext, f: Filters) -> Iterable[tuple]:
    return _variables_rows(ctx.variables, ctx.variable_defaults)


def _global_variables_rows(ctx: MetaContext, f: Filters) -> Iterable[tuple]:
    return _variables_rows(ctx.global_variables or ctx.variables, ctx.variable_defaults)


def _table_properties_rows(ctx: MetaContext, f: Filters) -> Iterable[tuple]:
    for db_name, table in relations(ctx, f):
        for k, v in sorted((getattr(table, "properties", None) or {}).items()):  # views have none
            yield (CATALOG, db_name, table.name, k, v)


def _schema_table(name: str, rows: RowBuilder, *columns: tuple[str, ColumnType]) -> SchemaTable:
    return SchemaTable(name=name, columns=tuple(columns), rows=rows)


_V64 = _v(64)
_V512 = _v(512)
_V32 = _v(32)

SCHEMA_TABLES: dict[str, SchemaTable] = {
    t.name: t
    for t in (
        _schema_table(
            "tables", _tables_rows,
            ("TABLE_CATALOG", _v(512)), ("TABLE_SCHEMA", _V64), ("TABLE_NAME", _V64), ("TABLE_TYPE", _V64),
            ("ENGINE", _V64), ("VERSION", BIGINT), ("ROW_FORMAT", _v(10)), ("TABLE_ROWS", BIGINT),
            ("AVG_ROW_LENGTH", BIGINT), ("DATA_LENGTH", BIGINT), ("MAX_DATA_LENGTH", BIGINT),
            ("INDEX_LENGTH", BIGINT), ("DATA_FREE", BIGINT), ("AUTO_INCREMENT", BIGINT),
            ("CREATE_TIME", DATETIME), ("UPDATE_TIME", DATETIME), ("CHECK_TIME", DATETIME),
            ("TABLE_COLLATION", _V32), ("CHECKSUM", BIGINT), ("CREATE_OPTIONS", _v(255)),
            ("TABLE_COMMENT", _v(2048)),
        ),
        _schema_table(
            "schemata", _schemata_rows,
            ("CATALOG_NAME", _V512), ("SCHEMA_NAME", _V32), ("DEFAULT_CHARACTER_SET_NAME", _V32),
            ("DEFAULT_COLLATION_NAME", _V32), ("SQL_PATH", _V512), ("DEFAULT_ENCRYPTION", _v(3)),
        ),
        _schema_table(
            "columns", _columns_rows,
            ("TABLE_CATALOG", _V512), ("TABLE_SCHEMA", _V64), ("TABLE_NAME", _V64), ("COLUMN_NAME", _V64),
            ("ORDINAL_POSITION", BIGINT), ("COLUMN_DEFAULT", _v(1024)), ("IS_NULLABLE", _v(3)),
            ("DATA_TYPE", _V64), ("CHARACTER_MAXIMUM_LENGTH", BIGINT), ("CHARACTER_OCTET_LENGTH", BIGINT),
            ("NUMERIC_PRECISION", BIGINT), ("NUMERIC_SCALE", BIGINT), ("DATETIME_PRECISION", BIGINT),
            ("CHARACTER_SET_NAME", _V32), ("COLLATION_NAME", _V32), ("COLUMN_TYPE", _V32), ("COLUMN_KEY", _v(3)),
            ("EXTRA", _v(27)), ("PRIVILEGES", _v(80)), ("COLUMN_COMMENT", _v(1024)), ("COLUMN_SIZE", BIGINT),
            ("DECIMAL_DIGITS", BIGINT), ("GENERATION_EXPRESSION", _V64), ("SRS_ID", BIGINT),
        ),
        _schema_table(
            "views", _views_rows,
            ("TABLE_CATALOG", _V512), ("TABLE_SCHEMA", _V64), ("TABLE_NAME", _V64), ("VIEW_DEFINITION", _v(8096)),
            ("CHECK_OPTION", _v(8)), ("IS_UPDATABLE", _v(3)), ("DEFINER", _v(77)), ("SECURITY_TYPE", _v(7)),
            ("CHARACTER_SET_CLIENT", _V32), ("COLLATION_CONNECTION", _V32),
        ),
        # Doris lists no indexes here (nor in SHOW INDEX) for tables without inverted/bitmap
        # indexes; Galene tables have none.
        _schema_table(
            "statistics", _empty,
            ("TABLE_CATALOG", _V512), ("TABLE_SCHEMA", _V64), ("TABLE_NAME", _V64), ("NON_UNIQUE", BIGINT),
            ("INDEX_SCHEMA", _V64), ("INDEX_NAME", _V64), ("SEQ_IN_INDEX", BIGINT), ("COLUMN_NAME", _V64),
            ("COLLATION", _v(1)), ("CARDINALITY", BIGINT), ("SUB_PART", BIGINT), ("PACKED", _v(10)),
            ("NULLABLE", _v(3)), ("INDEX_TYPE", _v(16)), ("COMMENT", _v(16)), ("INDEX_COMMENT", _v(1024)),
        ),
        # Doris keys are no constraints: key_column_usage and table_constraints are empty there too.
        _schema_table(
            "key_column_usage", _empty,
            ("CONSTRAINT_CATALOG", _V64), ("CONSTRAINT_SCHEMA", _V64), ("CONSTRAINT_NAME", _V64),
            ("TABLE_CATALOG", _V64), ("TABLE_SCHEMA", _V64), ("TABLE_NAME", _V64), ("COLUMN_NAME", _V64),
            ("ORDINAL_POSITION", BIGINT), ("POSITION_IN_UNIQUE_CONSTRAINT", BIGINT),
            ("REFERENCED_TABLE_SCHEMA", _V64), ("REFERENCED_TABLE_NAME", _V64), ("REFERENCED_COLUMN_NAME", _V64),
        ),
        _schema_table(
            "table_constraints", _empty,
            ("CONSTRAINT_CATALOG", _V512), ("CONSTRAINT_SCHEMA", _V64), ("CONSTRAINT_NAME", _V64),
            ("TABLE_SCHEMA", _V64), ("TABLE_NAME", _V64), ("CONSTRAINT_TYPE", _V64),
        ),
        _schema_table(
            "referential_constraints", _empty,
            ("CONSTRAINT_CATALOG", _V64), ("CONSTRAINT_SCHEMA", _V64), ("CONSTRAINT_NAME", _V64),
            ("UNIQUE_CONSTRAINT_CATALOG", _V64), ("UNIQUE_CONSTRAINT_SCHEMA", _V64),
            ("UNIQUE_CONSTRAINT_NAME", _V64), ("MATCH_OPTION", _V64), ("UPDATE_RULE", _V64),
            ("DELETE_RULE", _V64), ("TABLE_NAME", _V64), ("REFERENCED_TABLE_NAME", _V64),
        ),
        _schema_table(
            "routines", _empty,
            ("SPECIFIC_NAME", _V64), ("ROUTINE_CATALOG", _V64), ("ROUTINE_SCHEMA", _V64), ("ROUTINE_NAME", _V64),
            ("ROUTINE_TYPE", _V64), ("DTD_IDENTIFIER", _V64), ("ROUTINE_BODY", _V64),
            ("ROUTINE_DEFINITION", _V64), ("EXTERNAL_NAME", _V64), ("EXTERNAL_LANGUAGE", _V64),
            ("PARAMETER_STYLE", _V64), ("IS_DETERMINISTIC", _V64), ("SQL_DATA_ACCESS", _V64), ("SQL_PATH", _V64),
            ("SECURITY_TYPE", _V64), ("CREATED", DATETIME), ("LAST_ALTERED", DATETIME), ("SQL_MODE", _V64),
            ("ROUTINE_COMMENT", _V64), ("DEFINER", _V64), ("CHARACTER_SET_CLIENT", _V64),
            ("COLLATION_CONNECTION", _V64), ("DATABASE_COLLATION", _V64),
        ),
        _schema_table(
            "parameters", _empty,
            ("SPECIFIC_CATALOG", _V64), ("SPECIFIC_SCHEMA", _V64), ("SPECIFIC_NAME", _V64),
            ("ORDINAL_POSITION", _v(77)), ("PARAMETER_MODE", _v(77)), ("PARAMETER_NAME", _v(77)),
            ("DATA_TYPE", _V64), ("CHARACTER_OCTET_LENGTH", _V64), ("NUMERIC_PRECISION", _V512),
            ("NUMERIC_SCALE", _V64), ("DATETIME_PRECISION", _V64), ("CHARACTER_SET_NAME", _v(256)),
            ("COLLATION_NAME", _V64), ("DTD_IDENTIFIER", _V64), ("ROUTINE_TYPE", _V64),
            ("DATA_TYPEDTD_IDENDS", _V64),
        ),
        _schema_table(
            "triggers", _empty,
            ("TRIGGER_CATALOG", _V512), ("TRIGGER_SCHEMA", _V64), ("TRIGGER_NAME", _V64),
            ("EVENT_MANIPULATION", _v(6)), ("EVENT_OBJECT_CATALOG", _V512), ("EVENT_OBJECT_SCHEMA", _V64),
            ("EVENT_OBJECT_TABLE", _V64), ("ACTION_ORDER", _v(4)), ("ACTION_CONDITION", _V512),
            ("ACTION_STATEMENT", _V512), ("ACTION_ORIENTATION", _v(9)), ("ACTION_TIMING", _v(6)),
            ("ACTION_REFERENCE_OLD_TABLE", _V64), ("ACTION_REFERENCE_NEW_TABLE", _V64),
            ("ACTION_REFERENCE_OLD_ROW", _v(3)), ("ACTION_REFERENCE_NEW_ROW", _v(3)), ("CREATED", DATETIME),
            ("SQL_MODE", _v(8192)), ("DEFINER", _v(77)), ("CHARACTER_SET_CLIENT", _V32),
            ("COLLATION_CONNECTION", _V32), ("DATABASE_COLLATION", _V32),
        ),
        _schema_table(
            "events", _empty,
            ("EVENT_CATALOG", _V64), ("EVENT_SCHEMA", _V64), ("EVENT_NAME", _V64), ("DEFINER", _v(77)),
            ("TIME_ZONE", _V64), ("EVENT_BODY", _v(8)), ("EVENT_DEFINITION", _V512), ("EVENT_TYPE", _v(9)),
            ("EXECUTE_AT", DATETIME), ("INTERVAL_VALUE", _v(256)), ("INTERVAL_FIELD", _v(18)),
            ("SQL_MODE", _v(8192)), ("STARTS", DATETIME), ("ENDS", DATETIME), ("STATUS", _v(18)),
            ("ON_COMPLETION", _v(12)), ("CREATED", DATETIME), ("LAST_ALTERED", DATETIME),
            ("LAST_EXECUTED", DATETIME), ("EVENT_COMMENT", _V64), ("ORIGINATOR", INT),
            ("CHARACTER_SET_CLIENT", _V32), ("COLLATION_CONNECTION", _V32), ("DATABASE_COLLATION", _V32),
        ),
        _schema_table(
            "user_privileges", _user_privileges_rows,
            ("GRANTEE", _v(81)), ("TABLE_CATALOG", _V512), ("PRIVILEGE_TYPE", _V64), ("IS_GRANTABLE", _v(3)),
        ),
        _schema_table(
            "schema_privileges", _empty,
            ("GRANTEE", _v(81)), ("TABLE_CATALOG", _V512), ("TABLE_SCHEMA", _V64), ("PRIVILEGE_TYPE", _V64),
            ("IS_GRANTABLE", _v(3)),
        ),
        _schema_table(
            "table_privileges", _empty,
            ("GRANTEE", _v(81)), ("TABLE_CATALOG", _V512), ("TABLE_SCHEMA", _V64), ("TABLE_NAME", _V64),
            ("PRIVILEGE_TYPE", _V64), ("IS_GRANTABLE", _v(3)),
        ),
        _schema_table(
            "column_privileges", _empty,
            ("GRANTEE", _v(128)), ("TABLE_CATALOG", _V512), ("TABLE_SCHEMA", _V64), ("TABLE_NAME", _V64),
            ("COLUMN_NAME", _V64), ("PRIVILEGE_TYPE", _V64), ("IS_GRANTABLE", _v(3)),
        ),
        _schema_table(
            "engines", _empty,
            ("ENGINE", _V64), ("SUPPORT", _v(8)), ("COMMENT", _v(80)), ("TRANSACTIONS", _v(3)), ("XA", _v(3)),
            ("SAVEPOINTS", _v(3)),
        ),
        _schema_table(
            "character_sets", _character_sets_rows,
            ("CHARACTER_SET_NAME", _V512), ("DEFAULT_COLLATE_NAME", _V64), ("DESCRIPTION", _V64),
            ("MAXLEN", BIGINT),
        ),
        _schema_table(
            "collations", _collations_rows,
            ("COLLATION_NAME", _V512), ("CHARACTER_SET_NAME", _V64), ("ID", BIGINT), ("IS_DEFAULT", _V64),
            ("IS_COMPILED", _V64), ("SORTLEN", BIGINT),
        ),
        _schema_table(
            "partitions", _partitions_rows,
            ("PARTITION_ID", BIGINT), ("TABLE_CATALOG", _V64), ("TABLE_SCHEMA", _V64), ("TABLE_NAME", _V64),
            ("PARTITION_NAME", _V64), ("SUBPARTITION_NAME", _V64), ("PARTITION_ORDINAL_POSITION", INT),
            ("SUBPARTITION_ORDINAL_POSITION", INT), ("PARTITION_METHOD", _v(13)), ("SUBPARTITION_METHOD", _v(13)),
            ("PARTITION_EXPRESSION", _v(2048)), ("SUBPARTITION_EXPRESSION", _v(2048)),
            ("PARTITION_DESCRIPTION", TEXT), ("TABLE_ROWS", BIGINT), ("AVG_ROW_LENGTH", BIGINT),
            ("DATA_LENGTH", BIGINT), ("MAX_DATA_LENGTH", BIGINT), ("INDEX_LENGTH", BIGINT), ("DATA_FREE", BIGINT),
            ("CREATE_TIME", BIGINT), ("UPDATE_TIME", DATETIME), ("CHECK_TIME", DATETIME), ("CHECKSUM", BIGINT),
            ("PARTITION_COMMENT", TEXT), ("NODEGROUP", _v(256)), ("TABLESPACE_NAME", _v(268)),
            ("LOCAL_DATA_SIZE", TEXT), ("REMOTE_DATA_SIZE", TEXT), ("STATE", TEXT), ("REPLICA_ALLOCATION", TEXT),
            ("REPLICA_NUM", INT), ("STORAGE_POLICY", TEXT), ("STORAGE_MEDIUM", TEXT), ("COOLDOWN_TIME_MS", TEXT),
            ("LAST_CONSISTENCY_CHECK_TIME", TEXT), ("BUCKET_NUM", INT), ("COMMITTED_VERSION", BIGINT),
            ("VISIBLE_VERSION", BIGINT), ("PARTITION_KEY", TEXT), ("RANGE", TEXT), ("DISTRIBUTION", TEXT),
        ),
        _schema_table(
            "processlist", _processlist_rows,
            ("CurrentConnected", _v(16)), ("Id", BIGINT), ("User", _V32), ("Host", _v(261)),
            ("LoginTime", DATETIME), ("Catalog", _V64), ("Db", _V64), ("Command", _v(16)), ("Time", INT),
            ("State", _V64), ("QueryId", _v(256)), ("TraceId", _v(256)), ("Info", _v(65533)), ("FE", _V64),
            ("CloudCluster", _V64),
        ),
        _schema_table(
            "session_variables", _session_variables_rows,
            ("VARIABLE_NAME", _V64), ("VARIABLE_VALUE", _v(1024)), ("DEFAULT_VALUE", _v(1024)), ("CHANGED", _v(4)),
        ),
        _schema_table(
            "global_variables", _global_variables_rows,
            ("VARIABLE_NAME", _V64), ("VARIABLE_VALUE", _v(1024)), ("DEFAULT_VALUE", _v(1024)), ("CHANGED", _v(4)),
        ),
        _schema_table(
            "table_properties", _table_properties_rows,
            ("TABLE_CATALOG", _V64), ("TABLE_SCHEMA", _V64), ("TABLE_NAME", _V64), ("PROPERTY_NAME", TEXT),
            ("PROPERTY_VALUE", TEXT),
        ),
        _schema_table(
            "column_statistics", _empty,
            ("SCHEMA_NAME", _V64), ("TABLE_NAME", _V64), ("COLUMN_NAME", _V64), ("HISTOGRAM", JSON_TYPE),
        ),
        _schema_table(
            "profiling", _empty,
            ("QUERY_ID", INT), ("SEQ", INT), ("STATE", _v(30)), ("DURATION", DOUBLE), ("CPU_USER", DOUBLE),
            ("CPU_SYSTEM", DOUBLE), ("CONTEXT_VOLUNTARY", INT), ("CONTEXT_INVOLUNTARY", INT),
            ("BLOCK_OPS_IN", INT), ("BLOCK_OPS_OUT", INT), ("MESSAGES_SENT", INT), ("MESSAGES_RECEIVED", INT),
            ("PAGE_FAULTS_MAJOR", INT), ("PAGE_FAULTS_MINOR", INT), ("SWAPS", INT), ("SOURCE_FUNCTION", _v(30)),
            ("SOURCE_FILE", _v(20)), ("SOURCE_LINE", INT),
        ),
    )
}  # fmt: skip


def schema_table(name: str) -> SchemaTable:
    """The information_schema table `name` (any case), or Doris' unknown-table error."""
    table = SCHEMA_TABLES.get(name.lower())
    if table is None:
        raise AnalysisError(f"Unknown table '{SCHEMA_NAME}.{name}'")
    return table


def table_names() -> list[str]:
    return sorted(SCHEMA_TABLES)


def table_model(name: str) -> Table:
    """An information_schema table as a catalog Table (for DESC / SHOW COLUMNS / field lists)."""
    t = schema_table(name)
    return Table(
        id=0, db_id=0, name=t.name, keys_type="DUP_KEYS",
        columns=[Column(name=c, type=ct, nullable=True) for c, ct in t.columns],
    )  # fmt: skip


def rows(name: str, ctx: MetaContext, filters: Filters | None = None) -> list[tuple]:
    return list(schema_table(name).rows(ctx, filters or Filters()))


def arrow_table(name: str, ctx: MetaContext) -> pa.Table:
    """The table's rows as Arrow, typed as Doris declares them (for the engine path)."""
    t = schema_table(name)
    data = rows(name, ctx)
    arrays = []
    for i, (_, ctype) in enumerate(t.columns):
        arrays.append(pa.array([r[i] for r in data], type=ctype.to_arrow()))
    return pa.Table.from_arrays(arrays, names=t.column_names)


# --- queries over information_schema --------------------------------------------------------
def _cte_names(expr: exp.Expr) -> set[str]:
    names: set[str] = set()
    for cte in expr.find_all(exp.CTE):
        names.add(cte.alias_or_name.lower())
    return names


def query_tables(expr: exp.Expr, current_db: str | None) -> tuple[set[str], bool]:
    """(the information_schema tables a query reads, whether it reads anything else: a user
    table or a table function). CTE names are not tables."""
    ctes = _cte_names(expr)
    schema: set[str] = set()
    other = False
    for table in expr.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            other = True  # a table function
            continue
        db = table.db or None
        if db is None and table.name.lower() in ctes:
            continue
        if is_schema(db or current_db):
            schema.add(table.name.lower())
        else:
            other = True
    return schema, other


@dataclass
class LocalOutput:
    columns: list[tuple[str, ColumnType]]
    rows: list[tuple]


_SQLGLOT_TYPES = {
    "VARCHAR": "VARCHAR",
    "CHAR": "VARCHAR",
    "STRING": "VARCHAR",
    "JSON": "VARCHAR",
    "BIGINT": "BIGINT",
    "LARGEINT": "BIGINT",
    "INT": "INT",
    "SMALLINT": "INT",
    "TINYINT": "INT",
    "BOOLEAN": "BOOLEAN",
    "DATETIME": "DATETIME",
    "DATE": "DATE",
    "DOUBLE": "DOUBLE",
    "FLOAT": "DOUBLE",
}


def _pushdown(expr: exp.Expr, names: set[str]) -> dict[str, Filters]:
    """`TABLE_SCHEMA = 'x'` / `TABLE_NAME = 'y'` (or SCHEMA_NAME) conjuncts of a single-table
    SELECT's WHERE, as filters for that table's row builder."""
    if len(names) != 1 or not isinstance(expr, exp.Select) or expr.args.get("joins") or expr.find(exp.CTE):
        return {}
    where = expr.args.get("where")
    f = Filters()
    conjuncts = (
        list(where.this.flatten())
        if where is not None and isinstance(where.this, exp.And)
        else ([where.this] if where is not None else [])
    )
    for c in conjuncts:
        if not isinstance(c, exp.EQ):
            continue
        col, lit = c.this, c.expression
        if isinstance(lit, exp.Column) and isinstance(col, exp.Literal):
            col, lit = lit, col
        if not (isinstance(col, exp.Column) and isinstance(lit, exp.Literal) and lit.is_string):
            continue
        name = col.name.upper()
        if name in ("TABLE_SCHEMA", "SCHEMA_NAME"):
            f.db = lit.name
        elif name == "TABLE_NAME":
            f.table = lit.name
    return {next(iter(names)): f}


def _session_function_value(node: exp.Expr, ctx: MetaContext) -> exp.Expr | None:
    """DATABASE(), USER(), VERSION(), CONNECTION_ID() as literals (the executor knows none)."""
    if isinstance(node, exp.CurrentSchema):
        return exp.Literal.string(ctx.database) if ctx.database else exp.null()
    if isinstance(node, (exp.CurrentUser, exp.SessionUser)):
        return exp.Literal.string(f"'{ctx.user}'@'%'")
    if isinstance(node, exp.Anonymous) and not node.expressions:
        name = node.name.upper()
        if name in ("DATABASE", "SCHEMA"):
            return exp.Literal.string(ctx.database) if ctx.database else exp.null()
        if name in ("USER", "CURRENT_USER", "SESSION_USER", "SYSTEM_USER"):
            return exp.Literal.string(f"'{ctx.user}'@'%'")
        if name == "CONNECTION_ID":
            return exp.Literal.number(ctx.connection_id)
    return None


def run_local(expr: exp.Expr, ctx: MetaContext) -> LocalOutput | None:
    """Answer a query over information_schema tables only, on the FE; None when it needs the
    engine (another table, or SQL the Python executor does not know)."""
    names, other = query_tables(expr, ctx.database)
    if other or not names or any(n not in SCHEMA_TABLES for n in names):
        return None
    try:
        return _run_local(expr, ctx, names)
    except GaleneError:
        raise
    except Exception as e:  # noqa: BLE001 - anything the executor cannot do goes to the engine
        log.debug("information_schema query left to the engine: %r", e)
        return None


def _run_local(expr: exp.Expr, ctx: MetaContext, names: set[str]) -> LocalOutput:
    from sqlglot.executor.python import PythonExecutor
    from sqlglot.executor.table import Table as ExecutorTable
    from sqlglot.executor.table import ensure_tables
    from sqlglot.optimizer import optimize
    from sqlglot.planner import Plan

    from galene.sql.dialect import Galene

    filters = _pushdown(expr, names)
    ctes = _cte_names(expr)
    tree = expr.copy()
    for node in list(tree.walk()):
        value = _session_function_value(node, ctx)
        if value is not None:
            node.replace(value)
    for table in tree.find_all(exp.Table):
        if isinstance(table.this, exp.Identifier) and not (not table.db and table.name.lower() in ctes):
            table.set("db", exp.to_identifier(SCHEMA_NAME))
            table.set("catalog", None)
    # Names compare case-insensitively in Doris: the executor sees them all in lower case.
    for ident in tree.find_all(exp.Identifier):
        ident.set("this", ident.this.lower())
    tables: dict[str, ExecutorTable] = {}
    schema: dict[str, dict[str, str]] = {}
    for name in names:
        t = SCHEMA_TABLES[name]
        lowered = [c.lower() for c in t.column_names]
        tables[name] = ExecutorTable(
            columns=lowered, rows=[tuple(r) for r in t.rows(ctx, filters.get(name, Filters()))]
        )
        schema[name] = {c: _SQLGLOT_TYPES.get(ct.name, "VARCHAR") for c, (_, ct) in zip(lowered, t.columns)}
    optimized = optimize(tree, {SCHEMA_NAME: schema}, leave_tables_isolated=True, dialect=Galene)
    result = PythonExecutor(tables=ensure_tables({SCHEMA_NAME: tables}, dialect=Galene)).execute(
        Plan(optimized)
    )
    out_rows = [tuple(r) for r in result.rows]
    selects = optimized.selects if isinstance(optimized, exp.Query) else []
    declared = {c.lower(): ct for name in names for c, ct in SCHEMA_TABLES[name].columns}
    types = [
        _result_type(selects[i] if i < len(selects) else None, [r[i] for r in out_rows], declared)
        for i in range(len(result.columns))
    ]
    coerce = [
        i
        for i, t in enumerate(types)
        if t == _STRING_RESULT and any(not isinstance(r[i], (str, type(None))) for r in out_rows)
    ]
    if coerce:
        out_rows = [
            tuple(_coerce(v, types[i]) if i in coerce else v for i, v in enumerate(r)) for r in out_rows
        ]
    labels = _labels(expr, list(result.columns), names, ctes)
    return LocalOutput(columns=list(zip(labels, types)), rows=out_rows)


_TYPE_FROM_SQLGLOT = {
    exp.DType.BIGINT: BIGINT,
    exp.DType.INT: BIGINT,
    exp.DType.SMALLINT: BIGINT,
    exp.DType.TINYINT: BIGINT,
    exp.DType.BOOLEAN: BOOLEAN,
    exp.DType.DATETIME: DATETIME,
    exp.DType.TIMESTAMP: DATETIME,
    exp.DType.DOUBLE: DOUBLE,
    exp.DType.FLOAT: DOUBLE,
    exp.DType.DECIMAL: DOUBLE,
}
_STRING_RESULT = ColumnType(name="VARCHAR", length=65533)


def _family(t: ColumnType) -> str:
    if t.name in ("CHAR", "VARCHAR", "STRING", "JSON"):
        return "str"
    if t.name in ("TINYINT", "SMALLINT", "INT", "BIGINT", "LARGEINT"):
        return "int"
    if t.name in ("FLOAT", "DOUBLE", "DECIMAL"):
        return "num"
    return t.name.lower()


def _value_type(values: list[Any]) -> ColumnType | None:
    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return None
    if kinds <= {bool}:
        return BOOLEAN
    if kinds <= {int, bool}:
        return BIGINT
    if kinds <= {int, float, Decimal}:
        return DOUBLE
    if kinds <= {datetime}:
        return DATETIME
    return _STRING_RESULT


def _result_type(
    select: exp.Expr | None, values: list[Any], declared_columns: dict[str, ColumnType]
) -> ColumnType:
    """The result column's type: the information_schema column's own type for a column read
    as is, else the type sqlglot infers, as long as the values agree with it (else theirs)."""
    declared = None
    if select is not None:
        inner = select.this if isinstance(select, exp.Alias) else select
        if isinstance(inner, exp.Column):
            declared = declared_columns.get(inner.name.lower())
        if declared is None and select.type is not None:
            declared = _TYPE_FROM_SQLGLOT.get(select.type.this)
            if declared is None and select.type.this in (exp.DType.VARCHAR, exp.DType.TEXT, exp.DType.CHAR):
                declared = _STRING_RESULT
    actual = _value_type(values)
    if declared is None:
        return actual or _STRING_RESULT
    if actual is None or _family(declared) == _family(actual):
        return declared
    if _family(declared) == "num" and _family(actual) == "int":
        return declared
    return actual


def _coerce(value: Any, t: ColumnType) -> Any:
    if value is None:
        return None
    if t == _STRING_RESULT and not isinstance(value, str):
        return json.dumps(value, default=str) if isinstance(value, (list, dict)) else str(value)
    return value


def _canonical_columns(names: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in names:
        for c in SCHEMA_TABLES[name].column_names:
            out.setdefault(c.lower(), c)
    return out


def _labels(expr: exp.Expr, result_columns: list[str], names: set[str], ctes: set[str]) -> list[str]:
    """MySQL labels: aliases, columns and expressions as written in the query (`select
    table_name` is labelled `table_name`, as Doris and MySQL 5.7 label it; tools read rows by
    these names); `*` of information_schema tables read directly (no CTE or subquery in
    between) expands to the schema names (`TABLE_NAME`)."""
    from galene.sql.translate import expression_label as _label

    canonical = _canonical_columns(names)
    select = expr if isinstance(expr, exp.Select) else None
    direct = (
        select is not None
        and not ctes
        and all(isinstance(t.this, exp.Identifier) for t in select.find_all(exp.Table))
        and not any(isinstance(s.this, exp.Subquery) for s in [select.args.get("from_")] if s is not None)
    )
    if select is None or any(
        isinstance(i, exp.Star) or (isinstance(i, exp.Column) and isinstance(i.this, exp.Star))
        for i in select.expressions
    ):
        return [canonical.get(c.lower(), c) if direct else c for c in result_columns]
    labels = []
    for item in select.expressions:
        if isinstance(item, exp.Alias):
            labels.append(item.alias)
        elif isinstance(item, exp.Column):
            labels.append(item.name)
        else:
            labels.append(_label(item))
    if len(labels) != len(result_columns):
        return result_columns
    return labels


# --- SHOW statements -----------------------------------------------------------------------
TABLE_STATUS_COLUMNS = [
    ("Name", _V64), ("Engine", _v(10)), ("Version", BIGINT), ("Row_format", _V64), ("Rows", BIGINT),
    ("Avg_row_length", BIGINT), ("Data_length", BIGINT), ("Max_data_length", BIGINT), ("Index_length", BIGINT),
    ("Data_free", BIGINT), ("Auto_increment", BIGINT), ("Create_time", DATETIME), ("Update_time", DATETIME),
    ("Check_time", DATETIME), ("Collation", _V64), ("Checksum", BIGINT), ("Create_options", _V64),
    ("Comment", _V64),
]  # fmt: skip
# SHOW TABLE STATUS column -> information_schema.tables column (Doris' ShowTableStatusCommand)
_TABLE_STATUS_SOURCE = [
    "TABLE_NAME", "ENGINE", "VERSION", "ROW_FORMAT", "TABLE_ROWS", "AVG_ROW_LENGTH", "DATA_LENGTH",
    "MAX_DATA_LENGTH", "INDEX_LENGTH", "DATA_FREE", "AUTO_INCREMENT", "CREATE_TIME", "UPDATE_TIME",
    "CHECK_TIME", "TABLE_COLLATION", "CHECKSUM", "CREATE_OPTIONS", "TABLE_COMMENT",
]  # fmt: skip


def table_status(ctx: MetaContext, db: str, like: str | None, where: exp.Expr | None) -> list[tuple]:
    """SHOW TABLE STATUS [FROM db] [LIKE '…' | WHERE …]: information_schema.tables of one
    database under the SHOW names (the WHERE may use either)."""
    from galene.sql.like import like_match
    from galene.sql.show import row_matches

    source = SCHEMA_TABLES["tables"].column_names
    index = [source.index(c) for c in _TABLE_STATUS_SOURCE]
    out = []
    for r in _tables_rows(ctx, Filters(db=db)):
        if like is not None and not like_match(r[2], like):
            continue
        status = tuple(r[i] for i in index)
        if where is not None:
            row = dict(zip(source, r))
            row.update(zip([n for n, _ in TABLE_STATUS_COLUMNS], status))
            if not row_matches(where, row):
                continue
        out.append(status)
    return out


INDEX_COLUMNS = [
    "Table", "Non_unique", "Key_name", "Seq_in_index", "Column_name", "Collation", "Cardinality", "Sub_part",
    "Packed", "Null", "Index_type", "Comment", "Properties",
]  # fmt: skip


PARTITIONS_COLUMNS = [
    "PartitionId", "PartitionName", "VisibleVersion", "VisibleVersionTime", "State", "PartitionKey", "Range",
    "DistributionKey", "Buckets", "ReplicationNum", "StorageMedium", "CooldownTime", "RemoteStoragePolicy",
    "LastConsistencyCheckTime", "DataSize", "IsInMemory", "ReplicaAllocation", "IsMutable", "SyncWithBaseTables",
    "UnsyncTables", "CommittedVersion", "RowCount",
]  # fmt: skip


def byte_text(n: int) -> str:
    """Doris' DebugUtil.printByteWithUnit: `0.000 `, `1.500 KB`, `3.000 GB`."""
    for unit, size in (("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3f} {unit}"
    return f"{float(n):.3f} "


def partition_rows(table: Table, where: exp.Expr | None = None) -> list[dict[str, Any]]:
    """SHOW PARTITIONS FROM t rows (Doris' ShowPartitionsCommand columns) as dicts."""
    from galene.sql.show import row_matches

    out = []
    for p in table.partitions:
        rows, size = table_stats(table, p.id)
        row = {
            "PartitionId": str(p.id), "PartitionName": p.name, "VisibleVersion": str(p.visible_version),
            "VisibleVersionTime": _time_text(table.update_time or table.create_time), "State": "NORMAL",
            "PartitionKey": _partition_key(table), "Range": _partition_range(table, p),
            "DistributionKey": _distribution(table), "Buckets": str(len(p.tablet_ids)), "ReplicationNum": "1",
            "StorageMedium": "HDD", "CooldownTime": "9999-12-31 23:59:59", "RemoteStoragePolicy": "",
            "LastConsistencyCheckTime": "NULL", "DataSize": byte_text(size), "IsInMemory": "false",
            "ReplicaAllocation": "tag.location.default: 1", "IsMutable": "true", "SyncWithBaseTables": "true",
            "UnsyncTables": "NULL", "CommittedVersion": str(p.visible_version), "RowCount": str(rows),
        }  # fmt: skip
        if row_matches(where, row):
            out.append(row)
    return out


DATA_DB_COLUMNS = ["TableName", "Size", "ReplicaCount", "RemoteSize", "BinlogSize"]
DATA_TABLE_COLUMNS = [
    "TableName",
    "IndexName",
    "Size",
    "ReplicaCount",
    "RowCount",
    "RemoteSize",
    "BinlogSize",
]
_DB_DATA_QUOTA = (1 << 63) - 1
_DB_REPLICA_QUOTA = 1073741824


def data_rows(ctx: MetaContext, db: str, table: Table | None, order: exp.Expr | None = None) -> list[tuple]:
    """SHOW DATA (a database: a row per table, then Total / Quota / Left; ORDER BY sorts the
    tables by their raw values) and SHOW DATA FROM db.t (a row per index: Galene tables have
    their base index only, then Total)."""
    if table is not None:
        rows, size = table_stats(table)
        replicas = sum(len(p.tablet_ids) for p in table.partitions)
        return [
            (table.name, table.name, byte_text(size), str(replicas), str(rows), byte_text(0), byte_text(0)),
            ("", "Total", byte_text(size), str(replicas), "", byte_text(0), byte_text(0)),
        ]
    raw = []
    for _, t in relations(ctx, Filters(db=db)):
        if _is_view(t):
            continue
        raw.append((t.name, table_stats(t)[1], sum(len(p.tablet_ids) for p in t.partitions), 0, 0))
    for ordered in reversed(order.expressions if order is not None else []):
        key = ordered.this.name.lower()
        names = [n.lower() for n in DATA_DB_COLUMNS]
        if key not in names:
            raise AnalysisError(f"Title name[{ordered.this.name}] does not exist")
        index = names.index(key)
        raw.sort(key=lambda r, i=index: r[i], reverse=bool(ordered.args.get("desc")))
    out = [(n, byte_text(size), str(replicas), byte_text(0), byte_text(0)) for n, size, replicas, _, _ in raw]
    total_size = sum(r[1] for r in raw)
    total_replicas = sum(r[2] for r in raw)
    out.append(("Total", byte_text(total_size), str(total_replicas), byte_text(0), byte_text(0)))
    out.append(("Quota", byte_text(_DB_DATA_QUOTA), str(_DB_REPLICA_QUOTA), "", ""))
    left_size, left_replicas = max(0, _DB_DATA_QUOTA - total_size), max(0, _DB_REPLICA_QUOTA - total_replicas)
    out.append(("Left", byte_text(left_size), str(left_replicas), "", ""))
    return out


DATA_ALL_DB_COLUMNS = [
    "DbId",
    "DbName",
    "Size",
    "RemoteSize",
    "BinlogSize",
    "RecycleSize",
    "RecycleRemoteSize",
]


def all_db_data_rows(ctx: MetaContext) -> list[tuple]:
    """SHOW DATA without a current database: a row per database (Doris' getAllDbStats)."""
    state = ctx.state
    out = []
    for name in sorted(state.db_names):
        if not ctx.can_see(name):
            continue
        size = sum(table_stats(t)[1] for _, t in relations(ctx, Filters(db=name)) if not _is_view(t))
        out.append((str(state.db_names[name]), name, str(size), "0", "0", "0", "0"))
    return out


STREAM_LOAD_COLUMNS = [
    "Label", "Db", "Table", "ClientIp", "Status", "Message", "Url", "TotalRows", "LoadedRows", "FilteredRows",
    "UnselectedRows", "LoadBytes", "StartTime", "FinishTime", "User", "Comment",
]  # fmt: skip


def _table_name(state: CatalogState, table_id: int) -> str:
    table = state.tables.get(table_id)
    return table.name if table is not None else ""


_INSERT_LABEL_PREFIX = "insert_"  # galene.fe.insert.new_insert_label


def stream_load_rows(ctx: MetaContext, db: str) -> list[dict[str, Any]]:
    """SHOW STREAM LOAD: the finished stream loads of a database whose labels are kept."""
    state = ctx.state
    db_id = state.db_names.get(db)
    out = []
    for txn in sorted(state.txns.values(), key=lambda t: t.id):
        if txn.db_id != db_id or txn.load_type != "STREAM_LOAD":
            continue
        if txn.status not in ("VISIBLE", "COMMITTED", "ABORTED"):
            continue
        if txn.label.startswith(_INSERT_LABEL_PREFIX):  # INSERT … VALUES rides on a stream load
            continue
        table = _table_name(state, txn.table_id)
        if not ctx.can_see(db, table or None):
            continue
        ok = txn.status != "ABORTED"
        out.append(
            {
                "Label": txn.label, "Db": db, "Table": table, "ClientIp": "", "Status": "SUCCESS" if ok else "FAIL",
                "Message": "OK" if ok else txn.reason, "Url": "N/A", "TotalRows": str(txn.num_rows),
                "LoadedRows": str(txn.num_rows if ok else 0), "FilteredRows": "0", "UnselectedRows": "0",
                "LoadBytes": str(txn.load_bytes), "StartTime": _time_text(txn.begin_time),
                "FinishTime": _time_text(txn.finish_time), "User": txn.user or "", "Comment": "",
            }
        )  # fmt: skip
    return out


TRANSACTION_COLUMNS = [
    "TransactionId", "Label", "Coordinator", "TransactionStatus", "LoadJobSourceType", "PrepareTime",
    "PreCommitTime", "CommitTime", "PublishTime", "FinishTime", "Reason", "ErrorReplicasCount", "ListenerId",
    "TimeoutMs", "ErrMsg",
]  # fmt: skip
# Doris' TransactionState.LoadJobSourceType of each Galene load type.
_SOURCE_TYPES = {
    "STREAM_LOAD": "BACKEND_STREAMING",
    "INSERT": "INSERT_STREAMING",
    "DELETE": "INSERT_STREAMING",
}


def transaction_row(ctx: MetaContext, txn: Txn) -> tuple:
    backend = ctx.state.backends.get(txn.backend_id)
    stream = txn.load_type == "STREAM_LOAD"
    coordinator = f"BE: {backend.host}" if stream and backend is not None else f"FE: {ctx.fe_host}"
    precommit = txn.commit_time if txn.status == "PRECOMMITTED" else 0
    committed = txn.status in ("COMMITTED", "VISIBLE")
    return (
        str(txn.id), txn.label, coordinator, txn.status, _SOURCE_TYPES.get(txn.load_type, "INSERT_STREAMING"),
        _time_text(txn.begin_time), _time_text(precommit), _time_text(txn.commit_time if committed else 0),
        _time_text(txn.finish_time if txn.status == "VISIBLE" else 0),
        _time_text(txn.finish_time if txn.status in ("VISIBLE", "ABORTED") else 0), txn.reason, "0", "-1",
        str(txn.timeout_s * 1000), "",
    )  # fmt: skip


def find_transaction(ctx: MetaContext, db: str, where: exp.Expr | None) -> Txn:
    """The txn of SHOW TRANSACTION [FROM db] WHERE id = N | label = 'x' (Doris accepts just these)."""
    cond = where.this if isinstance(where, exp.Where) else where
    if not (
        isinstance(cond, exp.EQ)
        and isinstance(cond.this, exp.Column)
        and cond.this.name.lower() in ("id", "label")
        and isinstance(cond.expression, exp.Literal)
    ):
        raise AnalysisError("Where clause should looks like: id = 123 or label = 'label'")
    state = ctx.state
    db_id = state.db_names.get(db)
    if cond.this.name.lower() == "id":
        if cond.expression.is_string or not cond.expression.name.isdigit():
            raise AnalysisError("Where clause should looks like: id = 123 or label = 'label'")
        txn_id = int(cond.expression.name)
        txn = state.txns.get(txn_id)
        if txn is None or txn.db_id != db_id:
            raise AnalysisError(f"transaction with id {txn_id} does not exist")
        return txn
    label = cond.expression.name
    db_obj = state.databases.get(db_id) if db_id is not None else None
    txn_id = db_obj.labels.get(label) if db_obj is not None else None
    txn = state.txns.get(txn_id) if txn_id is not None else None
    if txn is None:
        matches = [t for t in state.txns.values() if t.db_id == db_id and t.label == label]
        txn = max(matches, key=lambda t: t.id) if matches else None
    if txn is None:
        raise AnalysisError(f"transaction with label {label} does not exist")
    return txn


PROCESSLIST_COLUMNS = [(c, t) for c, t in SCHEMA_TABLES["processlist"].columns]
