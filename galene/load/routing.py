"""Routing parsed rows to tablets: partition by value, bucket by hash (or round robin).

Owns the mapping row -> (partition, tablet) of the BE write path (restricted to the
partitions a load names, if it names any) and the in-load merge of UNIQUE KEY tables (per
key the row with the highest sequence value wins when the table has a sequence column,
else the last row of the load). Everything is vectorized:
partition bounds are compared with pyarrow compute (or numpy searchsorted for a single
sortable column), and the bucket hash runs in numpy over the Arrow buffers, strings
included.

The bucket hash is part of the on-disk contract: a key must land in the same tablet in
every load, on every BE, in every Galene version, or UNIQUE KEY merging breaks. It is
defined here from first principles (a splitmix64 step over the value's integer form; a
polynomial over UTF-8 bytes for strings) and must never change for existing tables.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from galene.catalog.model import Partition, Table
from galene.common.errors import LoadError
from galene.load.convert import convert_strings
from galene.load.parse import ParsedBatch
from galene.load.source import RowError

# RANDOM distribution: consecutive slices of this many rows go to consecutive buckets.
RANDOM_SLICE_ROWS = 256 * 1024
# Up to this many tablets in one load, rows are split with one filter per tablet; beyond,
# with one sort and one gather (a filter reads every row and column once per tablet:
# measured on 256K rows x 16 columns, sorting wins from 3 tablets on, 3x at 10).
_FILTER_MAX_TABLETS = 2
# Strings are hashed this many rows at a time to bound the temporary per-byte arrays.
_STRING_HASH_CHUNK_ROWS = 64 * 1024

_U = np.uint64
_GAMMA = _U(0x9E3779B97F4A7C15)
_NULL_HASH = _U(0x5BD1E9955BD1E995)
_MIX1 = _U(0xBF58476D1CE4E5B9)
_MIX2 = _U(0x94D049BB133111EB)
_POLY = _U(0x100000001B3)  # FNV-64 prime as the polynomial base (odd)
_LEN_SALT = _U(0xD6E8FEB86659FD93)
_COMBINE = _U(0xC2B2AE3D27D4EB4F)


@dataclass
class RoutedBatch:
    per_tablet: dict[int, tuple[int, pa.Table]]  # tablet_id -> (partition_id, rows)
    num_filtered_extra: int = 0  # rows that fit no partition
    errors_extra: list[RowError] = field(default_factory=list)

    # Short names for the same counts (the stream-load handler reads these).
    @property
    def num_filtered(self) -> int:
        return self.num_filtered_extra

    @property
    def errors(self) -> list[RowError]:
        return self.errors_extra


def route_rows(
    batch: ParsedBatch,
    table: Table,
    max_error_rows: int = 50,
    random_start: int | None = None,
    partitions: list[str] | None = None,
) -> RoutedBatch:
    """Split a parsed batch by tablet. Rows fitting no partition are filtered with a reason.

    For UNIQUE KEY tables the batch is first reduced to one row per key (highest sequence
    value, else the last). `partitions` (the `partitions` header) restricts the load to
    those partitions: rows of any other partition are filtered, as in Doris. `random_start`
    fixes the first bucket of RANDOM distribution (tests); by default it is random.
    """
    data = batch.data
    allowed = selected_partitions(table, partitions)
    if table.keys_type == "UNIQUE_KEYS" and table.key_columns:
        seq = table.sequence_column()
        data = dedup_last_per_key(data, table.key_columns, seq.name if seq is not None else None)
    if data.num_rows == 0 or not table.partitions:
        if data.num_rows and not table.partitions:
            raise LoadError(f"table {table.name} has no partitions")
        return RoutedBatch({})

    part_idx = partition_index(data, table)
    if allowed is not None:
        outside = ~np.isin(part_idx, np.array(sorted(allowed), dtype=np.int64))
        part_idx = np.where(outside, -1, part_idx)
    unplaced = part_idx < 0
    num_unplaced = int(unplaced.sum())
    errors = (
        _no_partition_errors(data, table, np.flatnonzero(unplaced)[:max_error_rows]) if num_unplaced else []
    )

    multi_bucket = any(len(p.tablet_ids) > 1 for p in table.partitions)
    if multi_bucket and table.distribution_type == "HASH" and table.distribution_columns:
        hashes = hash_columns([data.column(_column_name(table, c)) for c in table.distribution_columns])
    else:
        hashes = None

    # slot = dense index of (partition, bucket); -1 for unplaced rows.
    total_tablets = sum(len(p.tablet_ids) for p in table.partitions)
    slot_type = np.int16 if total_tablets < 2**15 else np.int32  # small ints sort by radix
    slot_tablets: list[tuple[int, int]] = []  # slot -> (tablet_id, partition_id)
    single_partition = len(table.partitions) == 1 and num_unplaced == 0
    slot = (
        np.zeros(data.num_rows, dtype=slot_type)
        if single_partition
        else np.full(data.num_rows, -1, slot_type)
    )
    for p_i, part in enumerate(table.partitions):
        rows = slice(None) if single_partition else np.flatnonzero(part_idx == p_i)
        count = data.num_rows if single_partition else rows.size
        if count == 0:
            continue
        nb = len(part.tablet_ids)
        if nb == 0:
            raise LoadError(f"partition {part.name} of table {table.name} has no tablets")
        if nb == 1:
            bucket = 0
        elif hashes is not None:
            bucket = (hashes[rows] % _U(nb)).astype(slot_type)
        else:
            start = random.randrange(nb) if random_start is None else random_start
            bucket = ((start + np.arange(count) // RANDOM_SLICE_ROWS) % nb).astype(slot_type)
        base = len(slot_tablets)
        slot_tablets.extend((tid, part.id) for tid in part.tablet_ids)
        slot[rows] = base + bucket

    counts = np.bincount(slot[slot >= 0] if num_unplaced else slot, minlength=len(slot_tablets))
    used = np.flatnonzero(counts)
    per_tablet: dict[int, tuple[int, pa.Table]] = {}
    if used.size == 1 and num_unplaced == 0:
        tid, pid = slot_tablets[int(used[0])]
        per_tablet[tid] = (pid, data)
    elif used.size <= _FILTER_MAX_TABLETS:
        # A few tablets: one filter each is cheaper than sorting and gathering every row.
        for s in used.tolist():
            tid, pid = slot_tablets[s]
            per_tablet[tid] = (pid, data.filter(pa.array(slot == s)))
    else:
        placed = np.flatnonzero(slot >= 0) if num_unplaced else None
        keyed = slot[placed] if placed is not None else slot
        # A stable sort keeps load order inside each tablet.
        order = np.argsort(keyed, kind="stable")
        if placed is not None:
            order = placed[order]
        grouped = data.take(pa.array(order))
        offset = 0
        for s in used.tolist():
            tid, pid = slot_tablets[s]
            per_tablet[tid] = (pid, grouped.slice(offset, int(counts[s])))
            offset += int(counts[s])
    return RoutedBatch(per_tablet, num_unplaced, errors)


def selected_partitions(table: Table, names: list[str] | None) -> set[int] | None:
    """Indexes into table.partitions of the partitions a load names (None: all of them)."""
    if not names:
        return None
    # An unpartitioned table has one partition named after the table, as in Doris.
    by_name = {p.name.lower(): i for i, p in enumerate(table.partitions)}
    out = set()
    for name in names:
        i = by_name.get(name.lower())
        if i is None:
            raise LoadError(f"[ANALYSIS_ERROR]Unknown partition '{name}' in table '{table.name}'")
        out.add(i)
    return out


def _column_name(table: Table, name: str) -> str:
    col = table.column(name)
    if col is None:
        raise LoadError(f"Unknown column '{name}' in table {table.name}")
    return col.name


# --- partitions ----------------------------------------------------------------------------------


def partition_index(data: pa.Table, table: Table) -> np.ndarray:
    """Index into table.partitions of each row's partition; -1 where none fits."""
    n = data.num_rows
    if table.partition_type == "UNPARTITIONED" or not table.partition_columns:
        return np.zeros(n, dtype=np.int64)
    cols = [table.column(c) for c in table.partition_columns]
    if any(c is None for c in cols):
        raise LoadError(f"Unknown partition column of table {table.name}: {table.partition_columns}")
    arrays = [data.column(c.name) for c in cols]
    if table.partition_type == "RANGE":
        fast = _range_by_searchsorted(arrays, cols, table.partitions)
        if fast is not None:
            return fast
    result = np.full(n, -1, dtype=np.int64)
    for p_i, part in enumerate(table.partitions):
        if table.partition_type == "RANGE":
            mask = _range_mask(arrays, cols, part)
        else:
            mask = _list_mask(arrays, cols, part)
        result[mask & (result < 0)] = p_i
    return result


def _literal(col, text: str) -> pa.Scalar:
    conv = convert_strings(pa.array([text], pa.string()), col.type)
    if conv.bad is not None:
        raise LoadError(f"invalid partition value {text!r} for column {col.name}")
    return conv.values[0]


def _np(mask) -> np.ndarray:
    return pc.fill_null(mask, False).to_numpy(zero_copy_only=False)


def _range_mask(arrays, cols, part: Partition) -> np.ndarray:
    n = len(arrays[0])
    # NULL sorts below every value (it belongs to the partition holding MINVALUE).
    ge = np.ones(n, dtype=bool)
    if part.range_lower is not None:
        ge = _lex_compare(arrays, cols, part.range_lower, lower=True)
    lt = np.ones(n, dtype=bool)
    if part.range_upper is not None:
        lt = _lex_compare(arrays, cols, part.range_upper, lower=False)
    return ge & lt


def _lex_compare(arrays, cols, bound: list[str], lower: bool) -> np.ndarray:
    """row >= bound (lower) or row < bound (upper), lexicographic over the bound's prefix."""
    k = len(bound)
    result = None
    for i in reversed(range(k)):
        value = _literal(cols[i], bound[i])
        arr = arrays[i]
        if lower:
            strict = _np(pc.greater(arr, value))
            last = _np(pc.greater_equal(arr, value))
        else:
            strict = _np(pc.less(arr, value)) | _np(pc.is_null(arr))
            last = strict
        if result is None:
            result = last
        else:
            result = strict | (_np(pc.equal(arr, value)) & result)
    return result


def _list_mask(arrays, cols, part: Partition) -> np.ndarray:
    n = len(arrays[0])
    mask = np.zeros(n, dtype=bool)
    if len(cols) == 1:
        values = [_literal(cols[0], v[0]) for v in part.list_values if v]
        if values:
            mask = _np(pc.is_in(arrays[0], pa.array([v.as_py() for v in values], arrays[0].type)))
        return mask
    for tup in part.list_values:
        m = np.ones(n, dtype=bool)
        for i, text in enumerate(tup):
            m &= _np(pc.equal(arrays[i], _literal(cols[i], text)))
        mask |= m
    return mask


def _as_int64(arr):
    """Integer, date and timestamp arrays as int64 (days / time units since the epoch)."""
    t = arr.type
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pc.cast(arr.view(pa.int32()), pa.int64())
    if pa.types.is_integer(t):
        return pc.cast(arr, pa.int64())
    return arr.view(pa.int64())  # timestamp, date64, time64, duration


def _is_int_like(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_temporal(t)


def _sortable_numpy(arr) -> np.ndarray | None:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count:
        return None
    if _is_int_like(arr.type):
        return _as_int64(arr).to_numpy(zero_copy_only=False)
    if pa.types.is_floating(arr.type):
        return pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False)
    return None


def _range_by_searchsorted(arrays, cols, partitions: list[Partition]) -> np.ndarray | None:
    """Single-column RANGE partitions of a null-free numeric/temporal column: one searchsorted."""
    if len(arrays) != 1 or not partitions:
        return None
    if any(
        (p.range_lower is not None and len(p.range_lower) != 1)
        or (p.range_upper is not None and len(p.range_upper) != 1)
        for p in partitions
    ):
        return None
    values = _sortable_numpy(arrays[0])
    if values is None:
        return None
    col, arrow_type = cols[0], arrays[0].type

    def bound(text, default):
        if text is None:
            return default
        scalar = pa.array([_literal(col, text[0]).as_py()], arrow_type)
        return _sortable_numpy(scalar)[0]

    is_float = values.dtype.kind == "f"
    lo_default = -np.inf if is_float else np.iinfo(np.int64).min
    hi_default = np.inf if is_float else np.iinfo(np.int64).max
    lowers = np.array([bound(p.range_lower, lo_default) for p in partitions])
    uppers = np.array([bound(p.range_upper, hi_default) for p in partitions])
    order = np.argsort(lowers, kind="stable")
    sorted_lowers = lowers[order]
    pos = np.searchsorted(sorted_lowers, values, side="right") - 1
    candidate = order[np.clip(pos, 0, None)]
    upper_open = np.array([p.range_upper is None for p in partitions])
    fits = (pos >= 0) & ((values < uppers[candidate]) | upper_open[candidate])
    return np.where(fits, candidate, -1).astype(np.int64)


def _no_partition_errors(data: pa.Table, table: Table, rows: np.ndarray) -> list[RowError]:
    if rows.size == 0:
        return []
    visible = [c.name for c in table.visible_columns()]
    picked = data.select(visible).take(pa.array(rows)).to_pylist()
    errors = []
    for row in picked:
        values = " ".join("NULL" if v is None else str(v) for v in row.values())
        tup = ", ".join(f"{c}={row[c]!r}" for c in visible if table.column(c).name in _partition_names(table))
        errors.append(RowError(raw=values, reason=f"no partition for this tuple. tuple=({tup})"))
    return errors


def _partition_names(table: Table) -> set[str]:
    return {table.column(c).name for c in table.partition_columns}


# --- hashing -------------------------------------------------------------------------------------


def _mix(z: np.ndarray) -> np.ndarray:
    """One splitmix64 step on uint64 arrays (wrapping arithmetic); 0 does not map to 0."""
    with np.errstate(over="ignore"):
        z = z + _GAMMA
        z = (z ^ (z >> _U(30))) * _MIX1
        z = (z ^ (z >> _U(27))) * _MIX2
        return z ^ (z >> _U(31))


def hash_columns(columns) -> np.ndarray:
    """Deterministic 64-bit hash per row over one or more columns (Arrow arrays or chunked arrays)."""
    h = None
    for col in columns:
        ch = hash_array(col)
        if h is None:
            h = ch
        else:
            with np.errstate(over="ignore"):
                h = _mix(h * _COMBINE + ch)
    return h


def hash_array(arr) -> np.ndarray:
    """uint64 hash of each value; equal values hash equal whatever the chunking."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.cast(t.value_type)
        t = arr.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t):
        h = _hash_strings(arr)
    elif pa.types.is_decimal(t):
        # Canonical text of the decimal (fixed scale per column) hashes like a string.
        h = _hash_strings(pc.cast(arr, pa.string()))
    elif pa.types.is_floating(t):
        values = pc.cast(pc.fill_null(arr, 0), pa.float64()).to_numpy(zero_copy_only=False).copy()
        values[values == 0.0] = 0.0  # -0.0 hashes like 0.0
        values[np.isnan(values)] = np.nan
        h = _mix(values.view(np.uint64))
    elif pa.types.is_boolean(t):
        h = _mix(pc.fill_null(arr, False).to_numpy(zero_copy_only=False).astype(np.uint64))
    elif _is_int_like(t):
        as_int = pc.fill_null(_as_int64(arr), 0)
        h = _mix(as_int.to_numpy(zero_copy_only=False).view(np.uint64))
    else:
        raise LoadError(f"cannot distribute by a column of type {t}")
    if arr.null_count:
        h = np.where(_np(pc.is_null(arr)), _NULL_HASH, h)
    return h


_powers = np.ones(1, dtype=np.uint64)  # P**i mod 2**64, grown on demand, never shrunk


def _poly_powers(n: int) -> np.ndarray:
    global _powers
    powers = _powers  # one read: another thread may swap in a grown table meanwhile
    if powers.size < n:
        size = max(n, 2 * powers.size)
        with np.errstate(over="ignore"):
            grown = np.empty(size, dtype=np.uint64)
            grown[0] = 1
            grown[1:] = np.cumprod(np.full(size - 1, _POLY, dtype=np.uint64))
        powers = grown
        if grown.size > _powers.size:
            _powers = grown
    return powers[:n]


def _hash_strings(arr: pa.Array) -> np.ndarray:
    """Polynomial hash of each value's bytes: sum(b[i] * P**i) mod 2**64, then mixed with its length."""
    if pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type):
        offset_type = np.int64
    else:
        offset_type = np.int32
    n = len(arr)
    out = np.empty(n, dtype=np.uint64)
    buffers = arr.buffers()
    offsets_all = np.frombuffer(buffers[1], dtype=offset_type)[arr.offset : arr.offset + n + 1].astype(
        np.int64
    )
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    with np.errstate(over="ignore"):
        for start in range(0, n, _STRING_HASH_CHUNK_ROWS):
            stop = min(n, start + _STRING_HASH_CHUNK_ROWS)
            offs = offsets_all[start : stop + 1]
            lengths = np.diff(offs)
            first, last = int(offs[0]), int(offs[-1])
            rel_starts = offs[:-1] - first
            total = last - first
            if total:
                pos = np.arange(total, dtype=np.int64) - np.repeat(rel_starts, lengths)
                weights = _poly_powers(int(lengths.max()))[pos]
                contrib = data[first:last].astype(np.uint64) * weights
                cums = np.concatenate([np.zeros(1, np.uint64), np.cumsum(contrib, dtype=np.uint64)])
                sums = cums[rel_starts + lengths] - cums[rel_starts]
            else:
                sums = np.zeros(stop - start, dtype=np.uint64)
            out[start:stop] = _mix(sums ^ (lengths.astype(np.uint64) * _LEN_SALT))
    return out


# --- UNIQUE KEY ----------------------------------------------------------------------------------


def dedup_last_per_key(data: pa.Table, key_columns: list[str], sequence_col: str | None = None) -> pa.Table:
    """Keep one row per key, preserving the order of the kept rows.

    Without a sequence column the last row of the load wins. With one, the row with the
    highest sequence value wins (NULL below every value) and the later row breaks ties,
    as Doris merges a memtable of a sequence-column table.
    """
    n = data.num_rows
    if n <= 1:
        return data
    names = []
    for key in key_columns:
        names.append(_data_column(data, key, "key"))
    row_col = "__galene_row"
    keyed = data.select(names).append_column(row_col, pa.array(np.arange(n, dtype=np.int64)))
    if sequence_col is not None:
        seq_name = _data_column(data, sequence_col, "sequence")
        seq_key = "__galene_seq"
        keyed = keyed.append_column(seq_key, data.column(seq_name))
        # Sorted by (sequence, row), the last row of each key group is the winner; a
        # single-threaded group_by keeps that order for "last".
        ordered = keyed.sort_by([(seq_key, "ascending", "at_start"), (row_col, "ascending", "at_start")])
        last = ordered.group_by(names, use_threads=False).aggregate([(row_col, "last")])
        winners = last.column(f"{row_col}_last").to_numpy()
        if last.num_rows == n:
            return data
        return data.take(pa.array(np.sort(winners)))
    last = keyed.group_by(names).aggregate([(row_col, "max")])
    if last.num_rows == n:
        return data
    keep = np.sort(last.column(f"{row_col}_max").to_numpy())
    return data.take(pa.array(keep))


def _data_column(data: pa.Table, name: str, what: str) -> str:
    match = [c for c in data.column_names if c.lower() == name.lower()]
    if not match:
        raise LoadError(f"Unknown {what} column '{name}'")
    return match[0]
