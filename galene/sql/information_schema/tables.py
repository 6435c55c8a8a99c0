"""The information_schema tables: their columns, as Doris declares them
(`fe/fe-core/.../catalog/SchemaTable.java`), and their rows, computed on the FE from the catalog
for the session asking (bounded by the catalog's size; nothing is stored) — as Python tuples for
the FE's own evaluation, as Arrow for the engine. Column values render Doris' types as its
SchemaColumnsScanner does (`data_type`, `column_type`, precision and scale)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa

from galene.catalog.model import Column, Table
from galene.common.errors import AnalysisError
from galene.common.types import ColumnType
from galene.sql.information_schema.context import (
    BIGINT,
    CATALOG,
    DATETIME,
    DOUBLE,
    INT,
    JSON_TYPE,
    SCHEMA_NAME,
    TEXT,
    V32,
    V64,
    V512,
    Filters,
    MetaContext,
    as_datetime,
    is_view,
    mysql_table_type,
    relations,
    table_stats,
    time_text,
    varchar,
    visible_columns,
)

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


def tables_rows(ctx: MetaContext, f: Filters) -> Iterable[tuple]:
    for db_name, table in relations(ctx, f):
        kind, engine = mysql_table_type(table)
        rows, size = (0, 0) if is_view(table) else table_stats(table)
        yield (
            CATALOG, db_name, table.name, kind, engine, None, None, rows, size // rows if rows else 0, size,
            None, None, None, None,
            as_datetime(table.create_time), as_datetime(table.update_time), None, "utf-8", None, None, table.comment or "",
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
        if is_view(table):
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


def partition_key(table: Table) -> str:
    return ", ".join(table.partition_columns)


def partition_range(table: Table, p) -> str:
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


def distribution(table: Table) -> str:
    if table.distribution_type == "HASH":
        return ", ".join(table.distribution_columns)
    return "RANDOM"


def _partitions_rows(ctx: MetaContext, f: Filters) -> Iterable[tuple]:
    for db_name, table in relations(ctx, f):
        if is_view(table):
            continue
        for pos, p in enumerate(table.partitions, 1):
            rows, size = table_stats(table, p.id)
            yield (
                p.id, CATALOG, db_name, table.name, p.name, None, pos, None, table.partition_type,
                None, partition_key(table), None, partition_range(table, p), rows, size // rows if rows else 0,
                size, 0, 0, 0, int(table.create_time), as_datetime(table.update_time), None, 0, "", "", "",
                str(size), "0", "NORMAL", "tag.location.default: 1", 1, "", "HDD", "253402271999000", "NULL",
                len(p.tablet_ids), p.visible_version, p.visible_version, partition_key(table),
                partition_range(table, p), distribution(table),
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
                time_text(p.login_time), CATALOG, p.database or "", p.command, p.time_s, p.state, "", "",
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


SCHEMA_TABLES: dict[str, SchemaTable] = {
    t.name: t
    for t in (
        _schema_table(
            "tables", tables_rows,
            ("TABLE_CATALOG", varchar(512)), ("TABLE_SCHEMA", V64), ("TABLE_NAME", V64), ("TABLE_TYPE", V64),
            ("ENGINE", V64), ("VERSION", BIGINT), ("ROW_FORMAT", varchar(10)), ("TABLE_ROWS", BIGINT),
            ("AVG_ROW_LENGTH", BIGINT), ("DATA_LENGTH", BIGINT), ("MAX_DATA_LENGTH", BIGINT),
            ("INDEX_LENGTH", BIGINT), ("DATA_FREE", BIGINT), ("AUTO_INCREMENT", BIGINT),
            ("CREATE_TIME", DATETIME), ("UPDATE_TIME", DATETIME), ("CHECK_TIME", DATETIME),
            ("TABLE_COLLATION", V32), ("CHECKSUM", BIGINT), ("CREATE_OPTIONS", varchar(255)),
            ("TABLE_COMMENT", varchar(2048)),
        ),
        _schema_table(
            "schemata", _schemata_rows,
            ("CATALOG_NAME", V512), ("SCHEMA_NAME", V32), ("DEFAULT_CHARACTER_SET_NAME", V32),
            ("DEFAULT_COLLATION_NAME", V32), ("SQL_PATH", V512), ("DEFAULT_ENCRYPTION", varchar(3)),
        ),
        _schema_table(
            "columns", _columns_rows,
            ("TABLE_CATALOG", V512), ("TABLE_SCHEMA", V64), ("TABLE_NAME", V64), ("COLUMN_NAME", V64),
            ("ORDINAL_POSITION", BIGINT), ("COLUMN_DEFAULT", varchar(1024)), ("IS_NULLABLE", varchar(3)),
            ("DATA_TYPE", V64), ("CHARACTER_MAXIMUM_LENGTH", BIGINT), ("CHARACTER_OCTET_LENGTH", BIGINT),
            ("NUMERIC_PRECISION", BIGINT), ("NUMERIC_SCALE", BIGINT), ("DATETIME_PRECISION", BIGINT),
            ("CHARACTER_SET_NAME", V32), ("COLLATION_NAME", V32), ("COLUMN_TYPE", V32), ("COLUMN_KEY", varchar(3)),
            ("EXTRA", varchar(27)), ("PRIVILEGES", varchar(80)), ("COLUMN_COMMENT", varchar(1024)), ("COLUMN_SIZE", BIGINT),
            ("DECIMAL_DIGITS", BIGINT), ("GENERATION_EXPRESSION", V64), ("SRS_ID", BIGINT),
        ),
        _schema_table(
            "views", _views_rows,
            ("TABLE_CATALOG", V512), ("TABLE_SCHEMA", V64), ("TABLE_NAME", V64), ("VIEW_DEFINITION", varchar(8096)),
            ("CHECK_OPTION", varchar(8)), ("IS_UPDATABLE", varchar(3)), ("DEFINER", varchar(77)), ("SECURITY_TYPE", varchar(7)),
            ("CHARACTER_SET_CLIENT", V32), ("COLLATION_CONNECTION", V32),
        ),
        # Doris lists no indexes here (nor in SHOW INDEX) for tables without inverted/bitmap
        # indexes; Galene tables have none.
        _schema_table(
            "statistics", _empty,
            ("TABLE_CATALOG", V512), ("TABLE_SCHEMA", V64), ("TABLE_NAME", V64), ("NON_UNIQUE", BIGINT),
            ("INDEX_SCHEMA", V64), ("INDEX_NAME", V64), ("SEQ_IN_INDEX", BIGINT), ("COLUMN_NAME", V64),
            ("COLLATION", varchar(1)), ("CARDINALITY", BIGINT), ("SUB_PART", BIGINT), ("PACKED", varchar(10)),
            ("NULLABLE", varchar(3)), ("INDEX_TYPE", varchar(16)), ("COMMENT", varchar(16)), ("INDEX_COMMENT", varchar(1024)),
        ),
        # Doris keys are no constraints: key_column_usage and table_constraints are empty there too.
        _schema_table(
            "key_column_usage", _empty,
            ("CONSTRAINT_CATALOG", V64), ("CONSTRAINT_SCHEMA", V64), ("CONSTRAINT_NAME", V64),
            ("TABLE_CATALOG", V64), ("TABLE_SCHEMA", V64), ("TABLE_NAME", V64), ("COLUMN_NAME", V64),
            ("ORDINAL_POSITION", BIGINT), ("POSITION_IN_UNIQUE_CONSTRAINT", BIGINT),
            ("REFERENCED_TABLE_SCHEMA", V64), ("REFERENCED_TABLE_NAME", V64), ("REFERENCED_COLUMN_NAME", V64),
        ),
        _schema_table(
            "table_constraints", _empty,
            ("CONSTRAINT_CATALOG", V512), ("CONSTRAINT_SCHEMA", V64), ("CONSTRAINT_NAME", V64),
            ("TABLE_SCHEMA", V64), ("TABLE_NAME", V64), ("CONSTRAINT_TYPE", V64),
        ),
        _schema_table(
            "referential_constraints", _empty,
            ("CONSTRAINT_CATALOG", V64), ("CONSTRAINT_SCHEMA", V64), ("CONSTRAINT_NAME", V64),
            ("UNIQUE_CONSTRAINT_CATALOG", V64), ("UNIQUE_CONSTRAINT_SCHEMA", V64),
            ("UNIQUE_CONSTRAINT_NAME", V64), ("MATCH_OPTION", V64), ("UPDATE_RULE", V64),
            ("DELETE_RULE", V64), ("TABLE_NAME", V64), ("REFERENCED_TABLE_NAME", V64),
        ),
        _schema_table(
            "routines", _empty,
            ("SPECIFIC_NAME", V64), ("ROUTINE_CATALOG", V64), ("ROUTINE_SCHEMA", V64), ("ROUTINE_NAME", V64),
            ("ROUTINE_TYPE", V64), ("DTD_IDENTIFIER", V64), ("ROUTINE_BODY", V64),
            ("ROUTINE_DEFINITION", V64), ("EXTERNAL_NAME", V64), ("EXTERNAL_LANGUAGE", V64),
            ("PARAMETER_STYLE", V64), ("IS_DETERMINISTIC", V64), ("SQL_DATA_ACCESS", V64), ("SQL_PATH", V64),
            ("SECURITY_TYPE", V64), ("CREATED", DATETIME), ("LAST_ALTERED", DATETIME), ("SQL_MODE", V64),
            ("ROUTINE_COMMENT", V64), ("DEFINER", V64), ("CHARACTER_SET_CLIENT", V64),
            ("COLLATION_CONNECTION", V64), ("DATABASE_COLLATION", V64),
        ),
        _schema_table(
            "parameters", _empty,
            ("SPECIFIC_CATALOG", V64), ("SPECIFIC_SCHEMA", V64), ("SPECIFIC_NAME", V64),
            ("ORDINAL_POSITION", varchar(77)), ("PARAMETER_MODE", varchar(77)), ("PARAMETER_NAME", varchar(77)),
            ("DATA_TYPE", V64), ("CHARACTER_OCTET_LENGTH", V64), ("NUMERIC_PRECISION", V512),
            ("NUMERIC_SCALE", V64), ("DATETIME_PRECISION", V64), ("CHARACTER_SET_NAME", varchar(256)),
            ("COLLATION_NAME", V64), ("DTD_IDENTIFIER", V64), ("ROUTINE_TYPE", V64),
            ("DATA_TYPEDTD_IDENDS", V64),
        ),
        _schema_table(
            "triggers", _empty,
            ("TRIGGER_CATALOG", V512), ("TRIGGER_SCHEMA", V64), ("TRIGGER_NAME", V64),
            ("EVENT_MANIPULATION", varchar(6)), ("EVENT_OBJECT_CATALOG", V512), ("EVENT_OBJECT_SCHEMA", V64),
            ("EVENT_OBJECT_TABLE", V64), ("ACTION_ORDER", varchar(4)), ("ACTION_CONDITION", V512),
            ("ACTION_STATEMENT", V512), ("ACTION_ORIENTATION", varchar(9)), ("ACTION_TIMING", varchar(6)),
            ("ACTION_REFERENCE_OLD_TABLE", V64), ("ACTION_REFERENCE_NEW_TABLE", V64),
            ("ACTION_REFERENCE_OLD_ROW", varchar(3)), ("ACTION_REFERENCE_NEW_ROW", varchar(3)), ("CREATED", DATETIME),
            ("SQL_MODE", varchar(8192)), ("DEFINER", varchar(77)), ("CHARACTER_SET_CLIENT", V32),
            ("COLLATION_CONNECTION", V32), ("DATABASE_COLLATION", V32),
        ),
        _schema_table(
            "events", _empty,
            ("EVENT_CATALOG", V64), ("EVENT_SCHEMA", V64), ("EVENT_NAME", V64), ("DEFINER", varchar(77)),
            ("TIME_ZONE", V64), ("EVENT_BODY", varchar(8)), ("EVENT_DEFINITION", V512), ("EVENT_TYPE", varchar(9)),
            ("EXECUTE_AT", DATETIME), ("INTERVAL_VALUE", varchar(256)), ("INTERVAL_FIELD", varchar(18)),
            ("SQL_MODE", varchar(8192)), ("STARTS", DATETIME), ("ENDS", DATETIME), ("STATUS", varchar(18)),
            ("ON_COMPLETION", varchar(12)), ("CREATED", DATETIME), ("LAST_ALTERED", DATETIME),
            ("LAST_EXECUTED", DATETIME), ("EVENT_COMMENT", V64), ("ORIGINATOR", INT),
            ("CHARACTER_SET_CLIENT", V32), ("COLLATION_CONNECTION", V32), ("DATABASE_COLLATION", V32),
        ),
        _schema_table(
            "user_privileges", _user_privileges_rows,
            ("GRANTEE", varchar(81)), ("TABLE_CATALOG", V512), ("PRIVILEGE_TYPE", V64), ("IS_GRANTABLE", varchar(3)),
        ),
        _schema_table(
            "schema_privileges", _empty,
            ("GRANTEE", varchar(81)), ("TABLE_CATALOG", V512), ("TABLE_SCHEMA", V64), ("PRIVILEGE_TYPE", V64),
            ("IS_GRANTABLE", varchar(3)),
        ),
        _schema_table(
            "table_privileges", _empty,
            ("GRANTEE", varchar(81)), ("TABLE_CATALOG", V512), ("TABLE_SCHEMA", V64), ("TABLE_NAME", V64),
            ("PRIVILEGE_TYPE", V64), ("IS_GRANTABLE", varchar(3)),
        ),
        _schema_table(
            "column_privileges", _empty,
            ("GRANTEE", varchar(128)), ("TABLE_CATALOG", V512), ("TABLE_SCHEMA", V64), ("TABLE_NAME", V64),
            ("COLUMN_NAME", V64), ("PRIVILEGE_TYPE", V64), ("IS_GRANTABLE", varchar(3)),
        ),
        _schema_table(
            "engines", _empty,
            ("ENGINE", V64), ("SUPPORT", varchar(8)), ("COMMENT", varchar(80)), ("TRANSACTIONS", varchar(3)), ("XA", varchar(3)),
            ("SAVEPOINTS", varchar(3)),
        ),
        _schema_table(
            "character_sets", _character_sets_rows,
            ("CHARACTER_SET_NAME", V512), ("DEFAULT_COLLATE_NAME", V64), ("DESCRIPTION", V64),
            ("MAXLEN", BIGINT),
        ),
        _schema_table(
            "collations", _collations_rows,
            ("COLLATION_NAME", V512), ("CHARACTER_SET_NAME", V64), ("ID", BIGINT), ("IS_DEFAULT", V64),
            ("IS_COMPILED", V64), ("SORTLEN", BIGINT),
        ),
        _schema_table(
            "partitions", _partitions_rows,
            ("PARTITION_ID", BIGINT), ("TABLE_CATALOG", V64), ("TABLE_SCHEMA", V64), ("TABLE_NAME", V64),
            ("PARTITION_NAME", V64), ("SUBPARTITION_NAME", V64), ("PARTITION_ORDINAL_POSITION", INT),
            ("SUBPARTITION_ORDINAL_POSITION", INT), ("PARTITION_METHOD", varchar(13)), ("SUBPARTITION_METHOD", varchar(13)),
            ("PARTITION_EXPRESSION", varchar(2048)), ("SUBPARTITION_EXPRESSION", varchar(2048)),
            ("PARTITION_DESCRIPTION", TEXT), ("TABLE_ROWS", BIGINT), ("AVG_ROW_LENGTH", BIGINT),
            ("DATA_LENGTH", BIGINT), ("MAX_DATA_LENGTH", BIGINT), ("INDEX_LENGTH", BIGINT), ("DATA_FREE", BIGINT),
            ("CREATE_TIME", BIGINT), ("UPDATE_TIME", DATETIME), ("CHECK_TIME", DATETIME), ("CHECKSUM", BIGINT),
            ("PARTITION_COMMENT", TEXT), ("NODEGROUP", varchar(256)), ("TABLESPACE_NAME", varchar(268)),
            ("LOCAL_DATA_SIZE", TEXT), ("REMOTE_DATA_SIZE", TEXT), ("STATE", TEXT), ("REPLICA_ALLOCATION", TEXT),
            ("REPLICA_NUM", INT), ("STORAGE_POLICY", TEXT), ("STORAGE_MEDIUM", TEXT), ("COOLDOWN_TIME_MS", TEXT),
            ("LAST_CONSISTENCY_CHECK_TIME", TEXT), ("BUCKET_NUM", INT), ("COMMITTED_VERSION", BIGINT),
            ("VISIBLE_VERSION", BIGINT), ("PARTITION_KEY", TEXT), ("RANGE", TEXT), ("DISTRIBUTION", TEXT),
        ),
        _schema_table(
            "processlist", _processlist_rows,
            ("CurrentConnected", varchar(16)), ("Id", BIGINT), ("User", V32), ("Host", varchar(261)),
            ("LoginTime", DATETIME), ("Catalog", V64), ("Db", V64), ("Command", varchar(16)), ("Time", INT),
            ("State", V64), ("QueryId", varchar(256)), ("TraceId", varchar(256)), ("Info", varchar(65533)), ("FE", V64),
            ("CloudCluster", V64),
        ),
        _schema_table(
            "session_variables", _session_variables_rows,
            ("VARIABLE_NAME", V64), ("VARIABLE_VALUE", varchar(1024)), ("DEFAULT_VALUE", varchar(1024)), ("CHANGED", varchar(4)),
        ),
        _schema_table(
            "global_variables", _global_variables_rows,
            ("VARIABLE_NAME", V64), ("VARIABLE_VALUE", varchar(1024)), ("DEFAULT_VALUE", varchar(1024)), ("CHANGED", varchar(4)),
        ),
        _schema_table(
            "table_properties", _table_properties_rows,
            ("TABLE_CATALOG", V64), ("TABLE_SCHEMA", V64), ("TABLE_NAME", V64), ("PROPERTY_NAME", TEXT),
            ("PROPERTY_VALUE", TEXT),
        ),
        _schema_table(
            "column_statistics", _empty,
            ("SCHEMA_NAME", V64), ("TABLE_NAME", V64), ("COLUMN_NAME", V64), ("HISTOGRAM", JSON_TYPE),
        ),
        _schema_table(
            "profiling", _empty,
            ("QUERY_ID", INT), ("SEQ", INT), ("STATE", varchar(30)), ("DURATION", DOUBLE), ("CPU_USER", DOUBLE),
            ("CPU_SYSTEM", DOUBLE), ("CONTEXT_VOLUNTARY", INT), ("CONTEXT_INVOLUNTARY", INT),
            ("BLOCK_OPS_IN", INT), ("BLOCK_OPS_OUT", INT), ("MESSAGES_SENT", INT), ("MESSAGES_RECEIVED", INT),
            ("PAGE_FAULTS_MAJOR", INT), ("PAGE_FAULTS_MINOR", INT), ("SWAPS", INT), ("SOURCE_FUNCTION", varchar(30)),
            ("SOURCE_FILE", varchar(20)), ("SOURCE_LINE", INT),
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

