"""Partitions of a table definition: the partition columns Doris allows, RANGE bounds (LESS
THAN and fixed `[lower, upper)`) normalized to [lower, upper) and checked for overlap, LIST
values checked for conflicts, each value in the canonical text of its column type, and the
order of bounds (`bound_sort_key`, also how SHOW CREATE TABLE lists ranges)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from decimal import Decimal, InvalidOperation

from sqlglot import exp

from galene.catalog.model import Column, Partition
from galene.common.errors import AnalysisError
from galene.sql import nodes
from galene.sql.ddl.columns import find_column, literal_text
from galene.sql.dialect import Galene

MAXVALUE = "MAXVALUE"


def _normalize_value(value: str, column: Column) -> str:
    """A partition value in canonical text for its column type (what SHOW CREATE prints)."""
    t = column.type
    try:
        if t.is_integer:
            return str(int(value.strip()))
        if t.name == "DECIMAL":
            return str(Decimal(value.strip()))
        if t.name == "DATE":
            return _dt.date.fromisoformat(value.strip()[:10]).isoformat()
        if t.name == "DATETIME":
            text = value.strip()
            if len(text) == 10:
                text += " 00:00:00"
            return _dt.datetime.fromisoformat(text).isoformat(sep=" ")
        if t.name == "BOOLEAN":
            lowered = value.strip().lower()
            if lowered in ("true", "1"):
                return "true"
            if lowered in ("false", "0"):
                return "false"
            raise ValueError(value)
    except (ValueError, InvalidOperation):
        raise AnalysisError(
            f"Invalid {t.to_desc()} value '{value}' for partition column [{column.name}]"
        ) from None
    return value


def bound_sort_key(values: list[str] | None, columns: list[Column], upper: bool) -> tuple:
    """Comparable key of a bound. None = whole-tuple MIN (lower) or MAX (upper)."""
    if values is None:
        return ((2 if upper else 0, 0),) * len(columns)
    key = []
    for i, col in enumerate(columns):
        if i >= len(values):
            key.append((0, 0))  # missing trailing values are MIN
        elif values[i] == MAXVALUE:
            key.append((2, 0))
        else:
            key.append((1, _typed(values[i], col)))
    return tuple(key)


def _typed(value: str, column: Column):
    t = column.type
    if t.is_integer:
        return int(value)
    if t.name == "DECIMAL":
        return Decimal(value)
    return value  # ISO dates and datetimes order as text


def _bound_values(bounds: list[exp.Expr], columns: list[Column], what: str) -> list[str]:
    if len(bounds) > len(columns):
        raise AnalysisError(f"Partition values number is more than partition column number: {what}")
    out = []
    for node, col in zip(bounds, columns):
        if isinstance(node, exp.Var) and node.name.upper() == MAXVALUE:
            out.append(MAXVALUE)
            continue
        text = literal_text(node)
        if text is None:
            raise AnalysisError(f"Partition value of column [{col.name}] can not be NULL: {what}")
        out.append(_normalize_value(text, col))
    return out


def _fmt_range(lower: list[str] | None, upper: list[str] | None) -> str:
    lo = "MINVALUE" if lower is None else ", ".join(lower)
    hi = MAXVALUE if upper is None else ", ".join(upper)
    return f"[({lo}), ({hi}))"


def range_partitions(
    definitions: list[exp.Expr], columns: list[Column], alloc: Callable[[str], Partition]
) -> list[Partition]:
    parts: list[Partition] = []
    for node in definitions:
        if isinstance(node, nodes.RangePartitionLessThan):
            name = node.name
            values = _bound_values(node.expressions, columns, name)
            upper = None if values and all(v == MAXVALUE for v in values) else values
            upper_key = bound_sort_key(upper, columns, upper=True)
            # Doris: a LESS THAN partition starts where the highest range below it ends.
            below = [p for p in parts if bound_sort_key(p.range_upper, columns, True) < upper_key]
            lower = (
                max(below, key=lambda p: bound_sort_key(p.range_upper, columns, True)).range_upper
                if below
                else None
            )
        elif isinstance(node, nodes.RangePartitionFixed):
            name = node.name
            lower = _bound_values(node.args["lower"], columns, name)
            values = _bound_values(node.args["upper"], columns, name)
            upper = None if values and all(v == MAXVALUE for v in values) else values
            if any(v == MAXVALUE for v in lower):
                raise AnalysisError(f"The lower values of partition {name} can not be MAXVALUE")
        else:
            raise AnalysisError(
                "Only VALUES LESS THAN and VALUES [...) partitions are supported in RANGE partitioning"
            )
        lo_key = bound_sort_key(lower, columns, upper=False)
        hi_key = bound_sort_key(upper, columns, upper=True)
        if lo_key >= hi_key:
            raise AnalysisError(
                f"The lower values must smaller than upper values: partition {name} {_fmt_range(lower, upper)}"
            )
        for p in parts:
            p_lo = bound_sort_key(p.range_lower, columns, False)
            p_hi = bound_sort_key(p.range_upper, columns, True)
            if lo_key < p_hi and p_lo < hi_key:
                raise AnalysisError(
                    f"Range {_fmt_range(lower, upper)} of partition {name} is intersected with range "
                    f"{_fmt_range(p.range_lower, p.range_upper)} of partition {p.name}"
                )
        part = alloc(name)
        part.range_lower, part.range_upper = lower, upper
        parts.append(part)
    parts.sort(key=lambda p: bound_sort_key(p.range_lower, columns, False))
    return parts


def list_partitions(
    definitions: list[exp.Expr], columns: list[Column], alloc: Callable[[str], Partition]
) -> list[Partition]:
    parts: list[Partition] = []
    seen: dict[tuple, str] = {}
    for node in definitions:
        if not isinstance(node, nodes.ListPartition):
            raise AnalysisError("Only VALUES IN partitions are supported in LIST partitioning")
        name = node.name
        items: list[list[str]] = []
        for value in node.expressions:
            elements = value.expressions if isinstance(value, exp.Tuple) else [value]
            if len(elements) != len(columns):
                raise AnalysisError(
                    f"partition item's size [{len(elements)}] is not equal to partition column size [{len(columns)}]"
                )
            item = _bound_values(elements, columns, name)
            if MAXVALUE in item:
                raise AnalysisError(f"MAXVALUE is not allowed in list partition {name}")
            key = tuple(_typed(v, c) for v, c in zip(item, columns))
            if key in seen:
                raise AnalysisError(
                    f"The partition key[{', '.join(item)}] in partition item[{name}] is conflict"
                )
            seen[key] = name
            items.append(item)
        if not items:
            raise AnalysisError(f"List partition {name} has no values")
        part = alloc(name)
        part.list_values = items
        parts.append(part)
    return parts


def read_partition_columns(prop: exp.Expr, columns: list[Column], keys_type: str, kind: str) -> list[Column]:
    result: list[Column] = []
    for node in prop.args.get("partition_expressions") or []:
        if not isinstance(node, (exp.Column, exp.Identifier)) or (
            isinstance(node, exp.Column) and node.table
        ):
            raise AnalysisError(f"Unsupported partition expression: {node.sql(dialect=Galene)}")
        col = find_column(columns, node.name)
        if col is None:
            raise AnalysisError(f"Partition column[{node.name}] does not exist in column list.")
        if col.aggregation is not None:
            raise AnalysisError("The partition column could not be aggregated column")
        if keys_type != "DUP_KEYS" and not col.is_key:
            raise AnalysisError(f"The partition column[{col.name}] must be key column in {keys_type} table")
        if col.type.name in ("FLOAT", "DOUBLE"):
            raise AnalysisError("Floating point type column can not be partition column")
        if col.type.name in ("STRING", "JSON"):
            raise AnalysisError(
                f"Column[{col.name}] type[{col.type.to_desc()}] cannot be a {kind.lower()} partition key."
            )
        if col in result:
            raise AnalysisError(f"Duplicated partition column {col.name}")
        result.append(col)
    if not result:
        raise AnalysisError("Partition columns are missing")
    return result
