"""A load's source: which source field feeds which table column, and what a reader hands back.

Owns the source plan of a load (`SourcePlan`: the source names in file order — the `columns`
header or the table's visible columns —, the table column each feeds, the columns computed
from expressions (`columns` mappings, a MERGE's delete sign, the sequence column), and the
fill of every column the source does not give: its default, the load's clock for
CURRENT_TIMESTAMP defaults, the delete sign of a DELETE load), Doris' checks of the merge
options against the table, and `Source`, what every reader (CSV, JSON, Parquet, a query's typed
rows) returns: its columns, the rows it rejected while reading, and how to show a row as text
in the error log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import msgspec
import numpy as np
import pyarrow as pa
from sqlglot import exp

from galene.catalog.model import DELETE_SIGN, SEQUENCE_COL, Column, Table
from galene.common.errors import LoadError
from galene.load.convert import convert_strings
from galene.load.options import LoadOptions


@dataclass
class RowError:
    """A rejected source row and why (the error log's line)."""

    raw: str  # the source row as text (CSV fields joined by the separator, or a JSON object)
    reason: str


@dataclass
class Source:
    """What a reader hands back: the source's columns and the rows it rejected while reading."""

    num_rows: int
    # typed=True: `columns` maps lower-case table column -> final array (CSV fast path).
    # typed=False: `columns` maps source index -> string array; every source field is present.
    typed: bool
    columns: dict
    count_errors: list[RowError]  # rows rejected while reading (wrong column count)
    num_bad_count: int
    render_rows: object = None  # callable(indices) -> raw texts, for the error list


def check_merge_options(table: Table, opts: LoadOptions) -> None:
    """Doris' checks of merge_type / delete / sequence headers against the table."""
    if opts.merge_type != "APPEND":
        if table.keys_type != "UNIQUE_KEYS":
            raise LoadError("[ANALYSIS_ERROR]load by MERGE or DELETE is only supported in unique tables.")
        if table.column(DELETE_SIGN) is None:
            raise LoadError(
                "[ANALYSIS_ERROR]load by MERGE or DELETE need to upgrade table to support batch delete."
            )
    seq = table.sequence_column()
    mapped_sequence = bool(table.properties.get("function_column.sequence_col"))
    has_sequence_type = "function_column.sequence_type" in table.properties
    if opts.sequence_col and seq is None and not has_sequence_type:
        raise LoadError(f"[ANALYSIS_ERROR]There is no sequence column in the table {table.name}")
    if has_sequence_type and not mapped_sequence:
        if seq is None:
            raise LoadError(
                f"[NOT_IMPLEMENTED_ERROR]table {table.name} was created with function_column.sequence_type "
                "but has no hidden sequence column; recreate it with function_column.sequence_col"
            )
        if not opts.sequence_col:
            raise LoadError(
                f"[ANALYSIS_ERROR]Table {table.name} has sequence column, need to specify the sequence column"
            )


@dataclass
class SourcePlan:
    """Which source field feeds which table column, and the fill of the columns it does not."""

    names: list[str]  # source names in file order
    targets: list[Column | None]  # table column each source field feeds; None = read and dropped
    fills: dict[str, pa.Scalar | None]  # lower-case table column name -> fill for columns not in the source
    # Table columns computed from expressions over the source row (`columns` mappings, the
    # delete sign of a MERGE, the sequence column from function_column.sequence_col).
    mappings: list[tuple[Column, exp.Expression]] = field(default_factory=list)
    delete_sign: Column | None = None  # MERGE: set from opts.delete_expr
    sequence: tuple[Column, str] | None = None  # (hidden sequence column, source/target name)

    @classmethod
    def build(cls, table: Table, opts: LoadOptions) -> SourcePlan:
        if opts.columns:
            names = list(opts.columns)
        else:
            names = [c.name for c in table.visible_columns()]
        # `x = expr` entries whose x is no table column are dropped, as Doris drops them.
        mappings = [(table.column(m.name), m.expr) for m in opts.column_mappings if table.column(m.name)]
        computed = {c.name.lower() for c, _ in mappings}
        delete_sign = table.column(DELETE_SIGN) if opts.merge_type == "MERGE" else None
        if delete_sign is not None or opts.merge_type == "DELETE":
            computed.add(DELETE_SIGN.lower())  # the merge type decides it, not the source
        sequence = None
        seq_col = table.sequence_column()
        if opts.sequence_col and seq_col is not None and seq_col.name == SEQUENCE_COL:
            sequence = (seq_col, opts.sequence_col)
            computed.add(seq_col.name.lower())
        # A source name that is no table column is read and dropped (or only feeds
        # expressions): that is how Doris users skip a field (`columns: k1, skipped, k2`).
        targets = []
        for n in names:
            col = table.column(n)
            targets.append(None if col is None or col.name.lower() in computed else col)
        present = {t.name.lower() for t in targets if t is not None} | computed
        fills: dict[str, pa.Scalar | None] = {}
        for col in table.columns:
            if col.name.lower() in present and not (col.name == DELETE_SIGN and opts.merge_type == "DELETE"):
                continue
            fills[col.name.lower()] = _fill_value(col, opts)
        return cls(names, targets, fills, mappings, delete_sign, sequence)

    def fill_array(self, col: Column, arrow_type: pa.DataType, n: int) -> pa.Array:
        value = self.fills.get(col.name.lower())
        if value is None:
            return pa.nulls(n, arrow_type)
        return pa.array([value.as_py()], arrow_type).take(np.zeros(n, dtype=np.int32))


_CLOCK_DEFAULT = re.compile(r"^(CURRENT_TIMESTAMP(\(\d*\))?|NOW\(\d*\)|CURRENT_DATE(\(\))?)$")
_clock_tables: dict[int, tuple[Table, bool]] = {}


def is_clock_default(text: str | None) -> bool:
    """Whether a column default is the load's clock (CURRENT_TIMESTAMP[(p)], NOW(), CURRENT_DATE)."""
    return text is not None and _CLOCK_DEFAULT.match(text.upper().replace(" ", "")) is not None


def has_clock_defaults(table: Table) -> bool:
    """Whether any column of `table` defaults to the load's clock (memoized per Table object:
    asked for every small load)."""
    hit = _clock_tables.get(id(table))
    if hit is not None and hit[0] is table:
        return hit[1]
    found = any(is_clock_default(c.default) for c in table.columns)
    if len(_clock_tables) >= 256:
        _clock_tables.clear()
    _clock_tables[id(table)] = (table, found)
    return found


def _fill_value(col: Column, opts: LoadOptions) -> pa.Scalar | None:
    """The value a table column gets when the source does not provide it (Doris: its default)."""
    arrow_type = col.type.to_arrow()
    if col.name == DELETE_SIGN:
        return pa.scalar(1 if opts.merge_type == "DELETE" else 0, arrow_type)
    text = col.default
    if text is None or text.upper() == "NULL":
        if not col.nullable:
            raise LoadError(f"Column has no default value. column: {col.name}")
        return None
    if is_clock_default(text):
        text = opts.local_now().strftime("%Y-%m-%d %H:%M:%S.%f")
    conv = convert_strings(pa.array([text], pa.string()), col.type)
    if conv.bad is not None and conv.bad[0] or conv.too_long is not None and conv.too_long[0]:
        raise LoadError(f"Invalid default value for column {col.name}: {col.default}")
    return conv.values[0]


def typed_renderer(names: list[str], columns: dict[int, pa.Array]):
    """Raw texts of typed source rows for the error list: a JSON object per row."""

    def render(indices: list[int]) -> list[str]:
        picked = [columns[i].take(pa.array(indices, pa.int64())).to_pylist() for i in range(len(names))]
        return [
            msgspec.json.encode({names[i]: _json_safe(picked[i][r]) for i in range(len(names))}).decode()
            for r in range(len(indices))
        ]

    return render


def _json_safe(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
