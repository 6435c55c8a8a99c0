"""ALTER TABLE semantics: the schema-change clauses (ADD/DROP/MODIFY/RENAME COLUMN, MODIFY
COMMENT, ADD/DROP INDEX) applied to a catalog Table, checked with Doris' rules and texts, as
the fields of the AlterTable journal op.

Galene changes a schema without rewriting files (Doris' light schema change, and more): each
rowset keeps the schema version it was written with, and readers map its columns to today's
by column id (galene.engine.scan). A type change is allowed where every stored value reads
unchanged as the new type (a cast at read time); Doris rewrites data for some of those.
"""

from __future__ import annotations

import msgspec
from sqlglot import exp

from galene.catalog.model import DELETE_SIGN, SEQUENCE_COL, Column, Table, with_column_ids
from galene.common.errors import AnalysisError
from galene.common.types import ColumnType
from galene.sql import nodes
from galene.sql.ddl.columns import check_key_type, check_value_aggregation, column_from_def, find_column
from galene.sql.ddl.indexes import check_index_unique, index_from_def
from galene.sql.statements.schema import (
    AddColumns,
    AddIndex,
    DropColumn,
    DropIndex,
    ModifyColumn,
    ModifyTableComment,
    RenameColumn,
)

# --- type changes -----------------------------------------------------------------------------


# Doris' schema-change matrix (ColumnType.schemaChangeMatrix): source -> targets, by Doris'
# primitive type names (Galene's DATE/DATETIME are DATEV2/DATETIMEV2, DECIMAL is DECIMAL32/64/128).
_DORIS_CHANGES = {
    "TINYINT": {"SMALLINT", "INT", "BIGINT", "LARGEINT", "FLOAT", "DOUBLE", "VARCHAR", "STRING"},
    "SMALLINT": {"INT", "BIGINT", "LARGEINT", "FLOAT", "DOUBLE", "VARCHAR", "STRING"},
    "INT": {"BIGINT", "LARGEINT", "FLOAT", "DOUBLE", "DATEV2", "VARCHAR", "STRING"},
    "BIGINT": {"LARGEINT", "FLOAT", "DOUBLE", "VARCHAR", "STRING"},
    "LARGEINT": {"FLOAT", "DOUBLE", "VARCHAR", "STRING"},
    "FLOAT": {"DOUBLE", "VARCHAR", "STRING"},
    "DOUBLE": {"VARCHAR", "STRING"},
    "VARCHAR": {
        "TINYINT",
        "SMALLINT",
        "INT",
        "BIGINT",
        "LARGEINT",
        "FLOAT",
        "DOUBLE",
        "DATEV2",
        "STRING",
        "JSONB",
    },
    "STRING": {"JSONB"},
    "JSONB": {"STRING", "VARCHAR"},
    "CHAR": {
        "TINYINT",
        "SMALLINT",
        "INT",
        "BIGINT",
        "LARGEINT",
        "FLOAT",
        "DOUBLE",
        "DATEV2",
        "VARCHAR",
        "STRING",
    },
    "DECIMAL32": {"VARCHAR", "STRING", "DECIMAL64", "DECIMAL128"},
    "DECIMAL64": {"VARCHAR", "STRING", "DECIMAL32", "DECIMAL128"},
    "DECIMAL128": {"VARCHAR", "STRING", "DECIMAL32", "DECIMAL64"},
    "DATEV2": {"DATETIMEV2"},
    "DATETIMEV2": {"DATEV2", "DATETIMEV2"},
}


_INT_ORDER = ("TINYINT", "SMALLINT", "INT", "BIGINT", "LARGEINT")


# Doris' getColumnStringRepSize: the longest text of a value (numeric -> VARCHAR(n) needs n >= it).
_STRING_REP_SIZE = {
    "TINYINT": 4,
    "SMALLINT": 6,
    "INT": 11,
    "BIGINT": 20,
    "LARGEINT": 40,
    "FLOAT": 24,
    "DOUBLE": 24,
}


def doris_type_name(t: ColumnType) -> str:
    """The Doris primitive type name of `t` (the name Doris' schema-change errors print)."""
    if t.name == "DECIMAL":
        return "DECIMAL32" if t.precision <= 9 else "DECIMAL64" if t.precision <= 18 else "DECIMAL128"
    return {"DATE": "DATEV2", "DATETIME": "DATETIMEV2", "JSON": "JSONB"}.get(t.name, t.name)


def _reads_unchanged(old: ColumnType, new: ColumnType) -> bool:
    """Whether every value stored as `old` reads as the same value of `new` (a cast at read)."""
    a, b = old.name, new.name
    if a in _INT_ORDER and b in _INT_ORDER:
        return _INT_ORDER.index(b) >= _INT_ORDER.index(a)
    if (a in _INT_ORDER or a == "FLOAT") and b in ("FLOAT", "DOUBLE"):
        return True
    if a in ("CHAR", "VARCHAR") and b in ("VARCHAR", "STRING") or a == b == "CHAR":
        return True
    if a in ("STRING", "JSON") and b in ("STRING", "JSON", "VARCHAR"):
        return True
    if (old.is_numeric and a != "DECIMAL" or a == "DECIMAL") and b in ("VARCHAR", "STRING"):
        return True
    if a == b == "DECIMAL":
        return new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale
    if a == "DATE" and b == "DATETIME" or a == b == "DATETIME":
        return new.precision >= old.precision
    return False


def check_type_change(old: Column, new: Column) -> None:
    """Doris' Column.checkSchemaChangeAllowed for a type change, then Galene's rule above."""
    src, dst = doris_type_name(old.type), doris_type_name(new.type)
    if old.type == new.type:
        return
    if src != dst and dst not in _DORIS_CHANGES.get(src, set()):
        raise AnalysisError(f"Can not change {src} to {dst}")
    numeric = old.type.is_numeric and old.type.name != "DECIMAL"
    if numeric and new.type.name == "VARCHAR" and new.type.length < _STRING_REP_SIZE[old.type.name]:
        raise AnalysisError(
            f"Can not change from wider type {old.type.to_sql()} to narrower type {new.type.to_sql()}"
        )
    strings = old.type.name in ("CHAR", "VARCHAR") and new.type.name in ("CHAR", "VARCHAR")
    if strings and old.type.length > new.type.length:
        raise AnalysisError("Cannot shorten string length")
    if not _reads_unchanged(old.type, new.type):
        raise AnalysisError(
            f"Can not change {src} to {dst}: Galene changes a column's type without rewriting its data, "
            "only where every stored value reads unchanged as the new type"
        )


# --- columns ----------------------------------------------------------------------------------


def _column_def_parts(cdef: exp.ColumnDef) -> tuple[exp.ColumnDef, bool]:
    """The definition without Doris' `KEY` marker, and whether it had one."""
    cdef = cdef.copy()
    constraints = cdef.args.get("constraints") or []
    kept = [
        c for c in constraints
        if not isinstance(c.args.get("kind") if isinstance(c, exp.ColumnConstraint) else c, nodes.KeyColumnConstraint)
    ]  # fmt: skip
    cdef.set("constraints", kept)
    return cdef, len(kept) != len(constraints)


def _position_index(cols: list[Column], position: tuple[str, str | None] | None, what: str) -> int | None:
    """Index a column goes to for `FIRST` / `AFTER c`; None when no position was given."""
    if position is None:
        return None
    kind, after = position
    if kind == "FIRST":
        return 0
    for i, c in enumerate(cols):
        if not c.hidden and c.name.lower() == (after or "").lower():
            return i + 1
    raise AnalysisError(f"Column[{after}] {what}")


_MODEL_NAMES = {"UNIQUE_KEYS": "Unique", "DUP_KEYS": "Duplicate", "AGG_KEYS": "Aggregate"}


def _add_column(table: Table, cols: list[Column], cdef: exp.ColumnDef, position, new_id: int) -> Column:
    plain, key = _column_def_parts(cdef)
    col = column_from_def(plain)
    col.id = new_id
    name = col.name
    if name.lower() in (DELETE_SIGN.lower(), SEQUENCE_COL.lower()):
        raise AnalysisError(f"Column name '{name}' is reserved")
    if find_column(cols, name) is not None:
        raise AnalysisError(f"Can not add column which already exists in base table: {name}")
    kt = table.keys_type
    if kt == "AGG_KEYS":
        if key and col.aggregation is not None:
            raise AnalysisError(f"Can not assign aggregation method on key column: {name}")
        if col.aggregation is None:
            key = True
        elif col.aggregation == "SUM" and col.default is not None and col.default != "0":
            raise AnalysisError(f"The default value of '{name}' with SUM aggregation function must be zero")
        elif table.distribution_type == "RANDOM" and col.aggregation in ("REPLACE", "REPLACE_IF_NOT_NULL"):
            raise AnalysisError(
                f"Can not add value column with aggregation type {col.aggregation} for olap table with "
                f"random distribution : {name}"
            )
        if col.aggregation is not None:
            check_value_aggregation(col)
    elif col.aggregation is not None:
        raise AnalysisError(
            f"Can not assign aggregation method on column in {_MODEL_NAMES[kt]} data model table: {name}"
        )
    col.is_key = key
    if key:
        check_key_type(col)
    if not col.nullable and col.default is None:
        raise AnalysisError(
            f"Can not add column [{name}]: a NOT NULL column needs a DEFAULT value for the rows loaded before it"
        )
    index = _position_index(cols, position, "does not found")
    if index is None:
        if key:
            index = max((i + 1 for i, c in enumerate(cols) if c.is_key), default=0)
        else:
            index = max((i + 1 for i, c in enumerate(cols) if not c.hidden), default=0)
    cols.insert(index, col)
    return col


def _visible_column(cols: list[Column], name: str) -> tuple[int, Column] | None:
    for i, c in enumerate(cols):
        if not c.hidden and c.name.lower() == name.lower():
            return i, c
    return None


# --- the clauses ------------------------------------------------------------------------------


def alter_table(table: Table, actions: list) -> dict | None:
    """The AlterTable op's fields for `actions` (galene.sql.statements' ALTER TABLE clauses,
    applied in order), checked with Doris' rules and texts. Storage changes (add, drop, rename,
    type) bump the schema version and hand the current storage columns to the history. None when
    there is nothing to log (only ADD INDEX IF NOT EXISTS / DROP INDEX IF EXISTS that found their
    answer already, which Doris accepts silently)."""
    previous = with_column_ids(table.columns)
    cols = [msgspec.structs.replace(c) for c in previous]
    props = dict(table.properties)
    comment = table.comment
    partitions = list(table.partition_columns)
    distribution = list(table.distribution_columns)
    # Never reuse an id: a dropped column's id lives on in the history (files still hold it).
    next_id = max(c.id for c in [*cols, *(c for h in table.schema_history for c in h.columns)]) + 1
    storage_changed = False
    changed = False
    skipped = False  # an IF [NOT] EXISTS index clause with nothing to do
    indexes = [msgspec.structs.replace(i, columns=list(i.columns)) for i in table.indexes]
    indexes_changed = False
    index_name = table.name
    seq_map = props.get("function_column.sequence_col")
    for action in actions:
        if isinstance(action, AddColumns):
            position = action.position
            for cdef in action.columns:
                added = _add_column(table, cols, cdef, position, next_id)
                next_id += 1
                if position is not None:  # the next column of `ADD COLUMN (a, b) AFTER x` follows a
                    position = ("AFTER", added.name)
            storage_changed = changed = True
        elif isinstance(action, DropColumn):
            found = _visible_column(cols, action.name)
            if found is None:
                raise AnalysisError(f"Column does not exists: {action.name}")
            i, col = found
            if table.keys_type == "UNIQUE_KEYS":
                if col.is_key:
                    raise AnalysisError("Can not drop key column in Unique data model table")
                if seq_map and seq_map.lower() == col.name.lower():
                    raise AnalysisError(
                        f"Can not drop sequence mapping column[{col.name}] in Unique data model table[{table.name}]"
                    )
            if (
                table.keys_type == "AGG_KEYS"
                and col.is_key
                and any(c.aggregation in ("REPLACE", "REPLACE_IF_NOT_NULL") for c in cols)
            ):
                raise AnalysisError(
                    "Can not drop key column when table has value column with REPLACE aggregation method"
                )
            if any(p.lower() == col.name.lower() for p in partitions):
                raise AnalysisError(f"Partition column[{col.name}] cannot be dropped. index[{index_name}]")
            if table.distribution_type == "HASH" and any(d.lower() == col.name.lower() for d in distribution):
                raise AnalysisError(f"Distribution column[{col.name}] cannot be dropped. index[{index_name}]")
            del cols[i]
            # Doris drops the indexes of a dropped column with it.
            kept = [x for x in indexes if all(c.lower() != col.name.lower() for c in x.columns)]
            indexes_changed |= len(kept) != len(indexes)
            indexes = kept
            storage_changed = changed = True
        elif isinstance(action, ModifyColumn):
            name = action.column.name
            found = _visible_column(cols, name)
            if found is None:
                raise AnalysisError(f"Column[{name}] does not exists")
            i, old = found
            if action.column.args.get("kind") is None:  # MODIFY COLUMN c COMMENT '…'
                plain, _ = _column_def_parts(action.column)
                for constraint in plain.args.get("constraints") or []:
                    kind = (
                        constraint.args.get("kind")
                        if isinstance(constraint, exp.ColumnConstraint)
                        else constraint
                    )
                    if isinstance(kind, exp.CommentColumnConstraint):
                        cols[i] = msgspec.structs.replace(old, comment=kind.this.name if kind.this else "")
                changed = True
                continue
            plain, _ = _column_def_parts(action.column)
            new = column_from_def(plain)
            kt = table.keys_type
            if kt == "AGG_KEYS":
                if old.is_key and new.aggregation is not None:
                    raise AnalysisError(f"Can not assign aggregation method on key column: {old.name}")
                if not old.is_key and new.aggregation is None:
                    raise AnalysisError(f"Aggregate method must be specified for value column: {old.name}")
            elif new.aggregation is not None:
                raise AnalysisError(
                    f"Can not assign aggregation method on column in {_MODEL_NAMES[kt]} data model table: {old.name}"
                )
            check_type_change(old, new)
            if (old.aggregation or None) != (new.aggregation or None) and kt == "AGG_KEYS":
                raise AnalysisError("Can not change aggregation type")
            if old.nullable and not new.nullable:
                raise AnalysisError("Can not change from nullable to non-nullable")
            if old.default != new.default:
                raise AnalysisError("Can not change default value")
            type_changed = old.type != new.type
            if type_changed and any(p.lower() == old.name.lower() for p in partitions):
                raise AnalysisError(f"Can not modify partition column[{old.name}]. index[{index_name}]")
            if type_changed and any(d.lower() == old.name.lower() for d in distribution):
                raise AnalysisError(f"Can not modify distribution column[{old.name}]. index[{index_name}]")
            if type_changed and seq_map and seq_map.lower() == old.name.lower():
                raise AnalysisError(f"Can not alter sequence column[{old.name}]")
            modified = msgspec.structs.replace(
                old, type=new.type, nullable=new.nullable, comment=new.comment, aggregation=old.aggregation
            )
            del cols[i]
            index = _position_index(cols, action.position, "does not exists")
            cols.insert(i if index is None else index, modified)
            storage_changed |= type_changed
            changed = True
        elif isinstance(action, RenameColumn):
            found = _visible_column(cols, action.old)
            if found is None:
                raise AnalysisError(f"Column[{action.old}] does not exists")
            if action.old.lower() == action.new.lower():
                raise AnalysisError("Same column name")
            if find_column(cols, action.new) is not None:
                raise AnalysisError(f"Column name[{action.new}] is already used")
            i, col = found
            cols[i] = msgspec.structs.replace(col, name=action.new)

            def renamed(names: list[str], old=col.name, new=action.new) -> list[str]:
                return [new if n.lower() == old.lower() else n for n in names]

            partitions, distribution = renamed(partitions), renamed(distribution)
            for x in indexes:
                if any(c.lower() == col.name.lower() for c in x.columns):
                    x.columns = renamed(x.columns)
                    indexes_changed = True
            if seq_map and seq_map.lower() == col.name.lower():
                props["function_column.sequence_col"] = seq_map = action.new
            storage_changed = changed = True
        elif isinstance(action, ModifyTableComment):
            comment = action.comment
            changed = True
        elif isinstance(action, AddIndex):
            exists = any(x.name.lower() == action.index.name.lower() for x in indexes)
            if exists and action.if_not_exists:
                skipped = True
                continue
            index = index_from_def(
                action.index, cols, table.keys_type, "index column does not exist in table"
            )
            check_index_unique(indexes, index)
            indexes.append(index)
            indexes_changed = changed = True
        elif isinstance(action, DropIndex):
            kept = [x for x in indexes if x.name.lower() != action.name.lower()]
            if len(kept) == len(indexes):
                if action.if_exists:
                    skipped = True
                    continue
                raise AnalysisError(f"index {action.name} does not exist")
            indexes = kept
            indexes_changed = changed = True
        else:  # pragma: no cover - the classifier builds only the clauses above
            raise AnalysisError(f"Unsupported ALTER TABLE clause: {action}")
    if not changed:
        if skipped:
            return None
        raise AnalysisError("Nothing is changed. please check your alter stmt.")
    _check_key_order(cols, index_name, table.keys_type)
    return {
        "columns": cols,
        "key_columns": [c.name for c in cols if c.is_key],
        "partition_columns": partitions,
        "distribution_columns": distribution,
        "properties": props,
        "comment": comment,
        "schema_version": table.schema_version + 1 if storage_changed else table.schema_version,
        "previous_columns": previous if storage_changed else None,
        "indexes": indexes if indexes_changed else None,
    }


def _check_key_order(cols: list[Column], index_name: str, keys_type: str) -> None:
    meet_value = False
    has_key = False
    for c in cols:
        if c.hidden:
            continue
        if c.is_key and meet_value:
            raise AnalysisError(f"Invalid column order. value should be after key. index[{index_name}]")
        if c.is_key:
            has_key = True
        else:
            meet_value = True
    if not has_key:
        raise AnalysisError(f"No key column left. index[{index_name}]")
