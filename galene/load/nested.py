"""Nested values into ARRAY / MAP / STRUCT columns, and the aggregate-state columns' lists.

Two builders, both walking the column's TYPE tree level by level with an explicit stack (never
the rows, never recursion):

* `from_objects`: Python objects (a CSV or JSON field's nested text decoded by
  `galene.load.text_types`) into the storage Arrow type. A level's containers are checked and
  flattened with C-level iteration (`map`, `itertools`), its leaves built by one `pa.array`
  call and converted to the leaf type by the caller's leaf converter (Doris' scalar rules,
  `galene.load.convert`).
* `from_arrow`: an Arrow array (a Parquet column, an engine result: list / map / struct, with
  strings where text stands in) into the storage type, the same way over Arrow's child arrays.

As in Doris' text deserializers, an element that does not convert is a NULL element, and a
value of the wrong kind (a scalar where an array belongs, a struct of the wrong width) or a
MAP with a NULL key is a NULL value; either flags its row, which strict mode filters (as a
scalar that does not convert).

Also here: BITMAP's storage form (sorted distinct BIGINT list) from flattened values
(`normalize_bitmap`) and from `bitmap_from_string` text (`bitmap_text`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain, compress, repeat

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from galene.common.types import ColumnType
from galene.load.json_text import json_value_text
from galene.load.text_types import INVALID, decode_nested_values

# A leaf converter: (Arrow values, leaf type) -> (converted values, bad mask or None).
LeafConverter = Callable[[pa.Array, ColumnType], tuple[pa.Array, "np.ndarray | None"]]


@dataclass
class _Node:
    ctype: ColumnType
    n: int
    parent: int
    valid: np.ndarray | None = None  # non-null containers (nested nodes)
    bad: np.ndarray | None = None  # values of the wrong shape (nested nodes)
    lengths: np.ndarray | None = None  # elements per row (ARRAY / MAP)
    children: dict[int, int] = field(default_factory=dict)  # slot -> node id
    values: object = None  # leaves: the source values; after assembly: the Arrow result
    result_bad: np.ndarray | None = None


def _mask(arr) -> np.ndarray:
    return pc.fill_null(arr, False).to_numpy(zero_copy_only=False)


def _bools(it, n: int) -> np.ndarray:
    return np.fromiter(it, bool, n)


def _objects(values, n: int) -> np.ndarray:
    return np.fromiter(values, object, n)


# --- Python objects -> Arrow -------------------------------------------------------------------


def from_objects(objs: list, ctype: ColumnType, leaf: LeafConverter) -> tuple[pa.Array, np.ndarray]:
    """Decoded nested values (None = NULL, INVALID = unparsable) as `ctype`'s Arrow type, with
    the mask of rows whose value is bad."""
    n = len(objs)
    top_bad = _bools(map(operator.is_, objs, repeat(INVALID)), n)
    if top_bad.any():
        objs = [None if o is INVALID else o for o in objs]
    nodes: list[_Node] = []
    stack: list[tuple[ColumnType, list, int, int]] = [(ctype, objs, -1, 0)]
    while stack:
        t, vals, parent, slot = stack.pop()
        node = _Node(t, len(vals), parent)
        nid = len(nodes)
        nodes.append(node)
        if parent >= 0:
            nodes[parent].children[slot] = nid
        m = len(vals)
        if not t.is_nested:
            node.values = vals
            continue
        is_none = _bools(map(operator.is_, vals, repeat(None)), m)
        if t.name == "ARRAY":
            ok = _bools(map(operator.is_, map(type, vals), repeat(list)), m)
            goods = list(compress(vals, ok))
            node.lengths = np.zeros(m, np.int64)
            node.lengths[ok] = np.fromiter(map(len, goods), np.int64, len(goods))
            stack.append((t.element, list(chain.from_iterable(goods)), nid, 0))
        elif t.name == "MAP":
            ok = _bools(map(isinstance, vals, repeat(dict)), m)
            goods = list(compress(vals, ok))
            node.lengths = np.zeros(m, np.int64)
            node.lengths[ok] = np.fromiter(map(len, goods), np.int64, len(goods))
            stack.append((t.children[0], list(chain.from_iterable(map(dict.keys, goods))), nid, 0))
            stack.append((t.children[1], list(chain.from_iterable(map(dict.values, goods))), nid, 1))
        else:  # STRUCT: by name from an object, by position from a list of the right width
            width = len(t.children)
            named = _bools(map(isinstance, vals, repeat(dict)), m)
            listed = _bools(map(operator.is_, map(type, vals), repeat(list)), m)
            positional = listed.copy()
            if listed.any():
                sizes = np.fromiter(map(len, compress(vals, listed)), np.int64)
                positional[listed] = sizes == width
            ok = named | positional
            dicts = list(compress(vals, named))
            lists = list(compress(vals, positional))
            for i, (fname, ftype) in enumerate(t.fields()):
                child = np.full(m, None, object)
                if dicts:
                    child[named] = _objects(_fields_named(dicts, fname), len(dicts))
                if lists:
                    child[positional] = _objects(map(operator.itemgetter(i), lists), len(lists))
                stack.append((ftype, child.tolist(), nid, i))
        node.valid = ok
        node.bad = ~ok & ~is_none
    _assemble(nodes, leaf, _leaf_from_objects)
    root = nodes[0]
    bad = root.result_bad | top_bad
    return root.values, bad


def _fields_named(dicts: list[dict], name: str) -> list:
    """Each object's value for a struct field: the exact key by C-level lookups, then, only for
    the objects without it, the key that matches case-insensitively (as Doris matches names)."""
    found = list(map(operator.methodcaller("get", name), dicts))
    lower = name.lower()
    for i in compress(range(len(found)), map(operator.is_, found, repeat(None))):
        found[i] = next((v for k, v in dicts[i].items() if isinstance(k, str) and k.lower() == lower), None)
    return found


def _leaf_from_objects(vals: list) -> pa.Array:
    """A level's leaf objects as one Arrow array: inferred (ints, decimals, strings, bools) when
    they agree, else their JSON text (a container where a scalar belongs stays text and fails
    its conversion)."""
    try:
        arr = pa.array(vals)
        if not (pa.types.is_nested(arr.type) or pa.types.is_dictionary(arr.type)):
            return arr
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
        pass
    return pa.array(list(map(json_value_text, vals)), pa.string())


# --- Arrow -> Arrow ------------------------------------------------------------------------------


def from_arrow(arr: pa.Array, ctype: ColumnType, leaf: LeafConverter) -> tuple[pa.Array, np.ndarray]:
    """An Arrow array as `ctype`'s storage type; string levels are read as Doris nested text."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    nodes: list[_Node] = []
    stack: list[tuple[ColumnType, pa.Array, int, int]] = [(ctype, arr, -1, 0)]
    while stack:
        t, a, parent, slot = stack.pop()
        m = len(a)
        node = _Node(t, m, parent)
        nid = len(nodes)
        nodes.append(node)
        if parent >= 0:
            nodes[parent].children[slot] = nid
        if pa.types.is_fixed_size_list(a.type):
            a = a.cast(pa.list_(a.type.value_type))
        at = a.type
        if not t.is_nested:
            node.values = a
            continue
        if pa.types.is_string(at) or pa.types.is_large_string(at):
            # Text standing for a nested value: decode it, build it from objects.
            values, bad = from_objects(decode_nested_values(a), t, leaf)
            node.values, node.result_bad = values, bad
            node.valid = None
            continue
        present = _mask(pc.is_valid(a)) if a.null_count else np.ones(m, bool)
        kind_ok = (
            (t.name == "ARRAY" and _is_list(at))
            or (t.name == "MAP" and (pa.types.is_map(at) or _is_list_of_pairs(at)))
            or (t.name == "STRUCT" and pa.types.is_struct(at))
        )
        if not kind_ok:
            node.values = pa.nulls(m, t.to_arrow())
            node.result_bad = present & (not pa.types.is_null(at))
            continue
        node.valid = present
        node.bad = np.zeros(m, bool)
        if t.name in ("ARRAY", "MAP"):
            offsets = a.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
            node.lengths = np.diff(offsets)
            node.lengths[~present] = 0
            inner = a.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
            if a.null_count:
                # Slots under NULL rows are dropped so the children line up with the lengths.
                keep = np.repeat(present, np.diff(offsets))
                inner = inner.filter(pa.array(keep))
            if t.name == "ARRAY":
                stack.append((t.element, inner, nid, 0))
            else:
                kv = inner.flatten() if pa.types.is_struct(inner.type) else [inner.field(0), inner.field(1)]
                stack.append((t.children[0], kv[0], nid, 0))
                stack.append((t.children[1], kv[1], nid, 1))
        else:
            by_name = {at.field(i).name.lower(): i for i in range(at.num_fields)}
            flat = a.flatten()
            for i, (fname, ftype) in enumerate(t.fields()):
                j = by_name.get(fname.lower())
                if j is None and at.num_fields == len(t.children):
                    j = i  # same width: fields by position (a query's struct(...) names them col1…)
                child = flat[j] if j is not None else pa.nulls(m)
                stack.append((ftype, child, nid, i))
    _assemble(nodes, leaf, None)
    root = nodes[0]
    return root.values, root.result_bad


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)


def _is_list_of_pairs(t: pa.DataType) -> bool:
    return pa.types.is_list(t) and pa.types.is_struct(t.value_type) and t.value_type.num_fields == 2


# --- assembly, children first ------------------------------------------------------------------


def _assemble(nodes: list[_Node], leaf: LeafConverter, leaf_arrow) -> None:
    """Build every node's Arrow result from its children's (nodes are in pre-order, so walking
    them backwards meets every child before its parent).

    As Doris' text deserializers do, an element that does not convert becomes a NULL element
    and a value of the wrong kind (or a MAP with a NULL key, which Arrow cannot hold) a NULL
    value; either way its row is flagged (`result_bad`), so strict mode filters it."""
    for node in reversed(nodes):
        t = node.ctype
        if node.result_bad is not None:
            continue  # built already (text read whole, or the wrong kind of value)
        if not t.is_nested:
            source = node.values if leaf_arrow is None else leaf_arrow(node.values)
            values, bad = leaf(source, t)
            node.values = values
            node.result_bad = bad if bad is not None else np.zeros(node.n, bool)
            continue
        hard = node.bad.copy()  # this value itself is invalid: NULL
        flagged = np.zeros(node.n, bool)  # something inside it did not convert
        kids = [nodes[node.children[i]] for i in range(len(node.children))]
        if t.name in ("ARRAY", "MAP"):
            lengths = node.lengths
            parent_of = np.repeat(np.arange(node.n), lengths)
            for k in kids:
                flagged[parent_of[k.result_bad]] = True
            if t.name == "MAP" and kids[0].values.null_count:
                hard[parent_of[_mask(pc.is_null(kids[0].values))]] = True
            child_values = [k.values for k in kids]
            if hard.any():
                keep = ~hard[parent_of]
                child_values = [c.filter(pa.array(keep)) for c in child_values]
                lengths = np.where(hard, 0, lengths)
            valid = node.valid & ~hard
            offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32), pa.int32())
            mask = pa.array(~valid)
            if t.name == "ARRAY":
                out = pa.ListArray.from_arrays(offsets, child_values[0], mask=mask)
            else:
                out = pa.MapArray.from_arrays(offsets, child_values[0], child_values[1], mask=mask)
        else:
            for k in kids:
                flagged |= k.result_bad
            valid = node.valid & ~hard
            out = pa.StructArray.from_arrays(
                [k.values for k in kids],
                fields=[pa.field(f, c.to_arrow()) for f, c in t.fields()],
                mask=pa.array(~valid),
            )
        target = t.to_arrow()
        if out.type != target:
            out = out.cast(target)
        node.values = out
        node.result_bad = hard | flagged


# --- BITMAP --------------------------------------------------------------------------------------


def normalize_bitmap(parent: np.ndarray, values: pa.Array, n: int, valid_rows: np.ndarray) -> pa.Array:
    """BIGINT values, each with its row (`parent`), as one sorted distinct list per row."""
    v = values.to_numpy(zero_copy_only=False).astype(np.int64) if len(values) else np.zeros(0, np.int64)
    order = np.lexsort((v, parent))
    p, v = parent[order], v[order]
    if len(p):
        first = np.ones(len(p), bool)
        first[1:] = (p[1:] != p[:-1]) | (v[1:] != v[:-1])
        p, v = p[first], v[first]
    lengths = np.bincount(p, minlength=n) if len(p) else np.zeros(n, np.int64)
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32), pa.int32())
    return pa.ListArray.from_arrays(offsets, pa.array(v, pa.int64()), mask=pa.array(~valid_rows)).cast(
        pa.list_(pa.int64())
    )


def bitmap_from_lists(arr: pa.Array, to_int) -> tuple[pa.Array, np.ndarray]:
    """A list column (an engine's BITMAP, Parquet list of integers) as the BITMAP storage form;
    `to_int` converts the flattened elements to int64 by Doris' rule ((values, ok))."""
    n = len(arr)
    present = _mask(pc.is_valid(arr)) if arr.null_count else np.ones(n, bool)
    offsets = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    lengths = np.diff(offsets)
    inner = arr.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    parent = np.repeat(np.arange(n), lengths)
    keep = present[parent]
    if inner.null_count:
        keep &= _mask(pc.is_valid(inner))
    values, ok = to_int(inner)
    bad = np.zeros(n, bool)
    bad[parent[~ok & keep]] = True
    keep &= ok
    valid = present & ~bad
    keep &= valid[parent]
    return normalize_bitmap(parent[keep], values.filter(pa.array(keep)), n, valid), bad


def bitmap_text(text: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """`bitmap_from_string` text (comma-separated non-negative integers, '' = empty) as the
    BITMAP storage form; (values, bad)."""
    n = len(text)
    present = _mask(pc.is_valid(text)) if text.null_count else np.ones(n, bool)
    stripped = pc.utf8_trim_whitespace(pc.fill_null(text, ""))
    shape = _mask(pc.match_substring_regex(stripped, r"^([0-9]+(\s*,\s*[0-9]+)*)?$"))
    safe = pc.if_else(pa.array(shape), stripped, "")
    split = pc.split_pattern(safe, ",")
    lengths = pc.list_value_length(split).to_numpy(zero_copy_only=False)
    flat = pc.utf8_trim_whitespace(pc.list_flatten(split))
    nonempty = _mask(pc.not_equal(flat, ""))
    digits = pc.utf8_length(flat).to_numpy(zero_copy_only=False)
    short = digits <= 18  # anything longer is checked against the BIGINT range as a decimal
    parent = np.repeat(np.arange(n), lengths)
    ok = shape.copy()
    if (~short & nonempty).any():
        wide = pc.cast(pc.if_else(pa.array(nonempty), flat, "0"), pa.decimal256(76, 0))
        in_range = _mask(pc.less_equal(wide, pa.scalar(2**63 - 1, pa.decimal256(76, 0))))
        ok[parent[~in_range & nonempty]] = False
        nonempty &= in_range
    values = pc.cast(pc.if_else(pa.array(nonempty), flat, "0"), pa.int64())
    valid = present & ok
    keep = nonempty & valid[parent]
    out = normalize_bitmap(parent[keep], values.filter(pa.array(keep)), n, valid)
    return out, present & ~ok
