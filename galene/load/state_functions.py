"""Load expressions that build aggregate-state values: BITMAP, HLL and QUANTILE_STATE.

The `columns` header's functions for a BITMAP_UNION / HLL_UNION / QUANTILE_UNION column, over
whole Arrow columns, giving the storage forms of `galene.common.types`:

* `to_bitmap(v)`: a one-element bitmap of v read as a BIGINT by Doris' integer rule; a value
  that does not read, or is negative, gives NULL (Doris' to_bitmap answers NULL outside
  0..2^64-1; Galene's bitmaps hold BIGINT, so 2^63..2^64-1 are NULL too).
* `bitmap_hash(v)`: a one-element bitmap of MurmurHash3 x86_32 of v's UTF-8 bytes with Doris'
  seed 104729 (HashUtil::murmur_hash3_32 / MURMUR3_32_SEED), as an unsigned 32-bit number;
  computed vectorized in numpy over the distinct values, 4-byte blocks column by column.
* `bitmap_empty()`, `bitmap_from_string('1,2,3')` (text that is not that form gives NULL).
* `hll_hash(v)`: an Apache DataSketches HLL sketch (lg_k 12, HLL_8, compact serialization,
  what Spark's and Sail's hll_sketch_agg / hll_union_agg read) holding v's text (Doris'
  hll_hash takes a string, so a CSV field and a Parquet integer of the same number give the
  same sketch; DataSketches hashes a string's UTF-8 bytes as Spark's hll_sketch_agg does for a
  STRING column). Sketches of equal single values are equal bytes, so one sketch is
  built per DISTINCT value (dictionary-encode, build, take): the Python cost follows the
  distinct values, not the rows. NULL gives the empty sketch (Doris: hll_hash(NULL) is empty).
* `hll_empty()`: the empty sketch.
* `to_quantile_state(v, compression)`: the one-value list [v as DOUBLE] (NULL for NULL).

Each handler takes the evaluator (`galene.load.expressions`) and the call's argument nodes.
"""

from __future__ import annotations

import datasketches as ds
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from galene.common.errors import LoadError
from galene.common.types import ColumnType
from galene.load.convert import bool_mask, coerce, to_text
from galene.load.nested import bitmap_text, normalize_bitmap

HLL_LG_K = 12
DORIS_MURMUR3_SEED = 104729
_BITMAP = pa.list_(pa.int64())


def _one(ev, args, name: str):
    if len(args) != 1:
        raise LoadError(f"[INVALID_ARGUMENT]{name} takes one argument in load expressions")
    value = ev.eval(args[0])
    n = ev.ctx.num_rows
    if isinstance(value, pa.Scalar):
        value = pa.array([value.as_py()], value.type).take(np.zeros(n, np.int32))
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    return value


def _no_args(args, name: str) -> None:
    if args:
        raise LoadError(f"[INVALID_ARGUMENT]{name} takes no argument in load expressions")


def _singletons(values: pa.Array, valid: np.ndarray) -> pa.Array:
    """One-element bitmaps of `values` where `valid`, NULL elsewhere."""
    rows = np.flatnonzero(valid)
    return normalize_bitmap(rows, values.take(pa.array(rows, pa.int64())), len(values), valid)


def to_bitmap(ev, args):
    value = _one(ev, args, "to_bitmap")
    conv = coerce(value, ColumnType(name="BIGINT"))
    out = pc.fill_null(conv.values, -1)
    valid = bool_mask(pc.greater_equal(out, 0)) & bool_mask(pc.is_valid(conv.values))
    return _singletons(pc.cast(out, pa.int64()), valid)


def bitmap_hash(ev, args):
    value = _one(ev, args, "bitmap_hash")
    text = to_text(value) if not pa.types.is_null(value.type) else pa.nulls(len(value), pa.string())
    valid = bool_mask(pc.is_valid(text))
    encoded = pc.dictionary_encode(pc.fill_null(text, ""))
    hashes = murmur3_32(encoded.dictionary, DORIS_MURMUR3_SEED)
    per_row = pa.array(hashes.astype(np.int64), pa.int64()).take(encoded.indices)
    return _singletons(per_row, valid)


def bitmap_empty(ev, args):
    _no_args(args, "bitmap_empty")
    n = ev.ctx.num_rows
    return normalize_bitmap(np.zeros(0, np.int64), pa.array([], pa.int64()), n, np.ones(n, bool))


def bitmap_from_string(ev, args):
    value = _one(ev, args, "bitmap_from_string")
    values, _bad = bitmap_text(to_text(value))
    return values


def _sketch_bytes(value) -> bytes:
    sketch = ds.hll_sketch(HLL_LG_K, ds.tgt_hll_type.HLL_8)
    if value is not None:
        sketch.update(value)
    return sketch.serialize_compact()


def hll_hash(ev, args):
    value = _one(ev, args, "hll_hash")
    if not pa.types.is_null(value.type):
        value = to_text(value)  # Doris' hll_hash takes a string: a number hashes as its text
    encoded = pc.dictionary_encode(value)
    sketches = pa.array(list(map(_sketch_bytes, encoded.dictionary.to_pylist())), pa.binary())
    empty = _sketch_bytes(None)
    return pc.fill_null(sketches.take(encoded.indices), pa.scalar(empty, pa.binary()))


def hll_empty(ev, args):
    _no_args(args, "hll_empty")
    return pa.array([_sketch_bytes(None)] * ev.ctx.num_rows, pa.binary())


def to_quantile_state(ev, args):
    if len(args) not in (1, 2):
        raise LoadError("[INVALID_ARGUMENT]to_quantile_state takes a value and a compression")
    value = _one(ev, args[:1], "to_quantile_state")
    n = len(value)
    if pa.types.is_null(value.type):
        doubles = pa.nulls(n, pa.float64())
    elif pa.types.is_string(value.type) or pa.types.is_large_string(value.type):
        doubles = coerce(value, ColumnType(name="DOUBLE")).values
    else:
        doubles = pc.cast(value, pa.float64())
    valid = bool_mask(pc.is_valid(doubles))
    offsets = pa.array(np.arange(n + 1, dtype=np.int32), pa.int32())
    return pa.ListArray.from_arrays(offsets, pc.fill_null(doubles, 0.0), mask=pa.array(~valid))


HANDLERS = {
    "TO_BITMAP": to_bitmap,
    "BITMAP_HASH": bitmap_hash,
    "BITMAP_EMPTY": bitmap_empty,
    "BITMAP_FROM_STRING": bitmap_from_string,
    "HLL_HASH": hll_hash,
    "HLL_EMPTY": hll_empty,
    "TO_QUANTILE_STATE": to_quantile_state,
}


# --- MurmurHash3 x86_32, vectorized ---------------------------------------------------------------

_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def murmur3_32(text: pa.Array, seed: int) -> np.ndarray:
    """MurmurHash3 x86_32 of each string's UTF-8 bytes (uint32), vectorized over the strings:
    the 4-byte blocks are processed one block position at a time for all strings at once."""
    n = len(text)
    if n == 0:
        return np.zeros(0, np.uint32)
    text = pc.cast(pc.fill_null(text, ""), pa.string())
    offsets = np.frombuffer(text.buffers()[1], np.int32, n + 1, text.offset * 4).astype(np.int64)
    data = (
        np.frombuffer(text.buffers()[2], np.uint8) if text.buffers()[2] is not None else np.zeros(0, np.uint8)
    )
    lengths = np.diff(offsets)
    width = int(lengths.max()) if n else 0
    width4 = (width + 3) // 4 * 4
    # Bytes of every string padded with zeros to a whole number of blocks.
    padded = np.zeros((n, max(width4, 4)), np.uint8)
    cols = np.arange(width)
    inside = cols[None, :] < lengths[:, None]
    idx = offsets[:-1, None] + cols[None, :]
    padded[:, :width][inside] = data[idx[inside]]
    words = padded.view("<u4")
    h = np.full(n, np.uint32(seed), np.uint32)
    nblocks = lengths // 4
    with np.errstate(over="ignore"):
        for b in range(words.shape[1]):
            k = words[:, b].copy()
            k = k * _C1
            k = _rotl(k, 15) * _C2
            full = nblocks > b
            mixed = _rotl(h ^ k, 13) * np.uint32(5) + np.uint32(0xE6546B64)
            # The tail block (1..3 bytes) is mixed in without the rotate-multiply-add step.
            tail = (nblocks == b) & (lengths % 4 != 0)
            h = np.where(full, mixed, np.where(tail, h ^ k, h))
        h = h ^ lengths.astype(np.uint32)
        h ^= h >> np.uint32(16)
        h = h * np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h = h * np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    return h
