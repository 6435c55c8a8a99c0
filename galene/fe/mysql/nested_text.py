"""Doris' text form of nested values (ARRAY / MAP / STRUCT) on the MySQL wire, vectorized.

Doris (be/src/vec/data_types/serde/data_type_{array,map,struct}_serde.cpp) prints

  ARRAY    `[1, 2, null]`, `["a", "b"]`          elements joined by ", "
  MAP      `{"a":1, "b":null}`                   key ":" value, pairs joined by ", "
  STRUCT   `{"f1":1, "f2":"x"}`                  every field by name, joined by ", "

nested in each other to any depth; a NULL inside is `null`. Strings, dates, datetimes and IP
addresses inside are wrapped in double quotes, as they are, without escaping (Doris' own
regression output: `["with"quotes""]`); numbers, booleans (1 / 0), decimals (at their scale) and
datetimes (at their precision) print as they do at the top level, a binary value as `0x…` hex.

The rendering walks the TYPE tree, not the rows: the tree of Arrow child arrays is collected
with an explicit stack (children after their parent), then rendered children first — a leaf by
the top-level renderer, a list by `binary_join` over the list's offsets, a map's pairs and a
struct's fields by `binary_join_element_wise` — so no Python runs per row or per value.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from galene.common.types import ColumnType

# Leaf types Doris wraps in double quotes inside a nested value.
QUOTED_TYPES = ("CHAR", "VARCHAR", "STRING", "DATE", "DATETIME", "IPV4", "IPV6", "TIME")
NULL_INSIDE = "null"

ScalarText = Callable[[pa.Array, ColumnType], pa.Array]

_TEXT = pa.large_string()


def is_nested_arrow(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t) or pa.types.is_struct(t)


def nested_text(array: pa.Array, ctype: ColumnType, scalar_text: ScalarText) -> pa.Array:
    """Each value of the nested column `array` (of Doris type `ctype`) as Doris prints it; a
    NULL value stays null. `scalar_text` renders a leaf column as the top level does."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    nodes: list[tuple[pa.Array, ColumnType]] = [(array, _matching(ctype, array.type))]
    kids: list[list[int]] = [[]]
    todo = [0]
    while todo:
        i = todo.pop()
        node, t = nodes[i]
        for child, child_type in _children(node, t):
            nodes.append((child, child_type))
            kids.append([])
            kids[i].append(len(nodes) - 1)
            todo.append(len(nodes) - 1)
    texts: list[pa.Array | None] = [None] * len(nodes)
    for i in range(len(nodes) - 1, -1, -1):  # a child's index is above its parent's
        node, t = nodes[i]
        if kids[i]:
            inner = [pc.fill_null(texts[k], NULL_INSIDE) for k in kids[i]]
            texts[i] = _compose(node, t, inner)
        else:
            texts[i] = _leaf(node, t, scalar_text)
        for k in kids[i]:
            texts[k] = None  # done with it
    return texts[0]


def _children(array: pa.Array, t: ColumnType) -> list[tuple[pa.Array, ColumnType]]:
    at = array.type
    if pa.types.is_map(at) or pa.types.is_list(at) or pa.types.is_large_list(at):
        # Only this slice's part of the child (a result batch is a slice of a bigger array,
        # whose `values` are the whole child); `_compose` rebases the offsets the same way.
        offsets = array.offsets
        start = offsets[0].as_py() if len(offsets) else 0
        length = (offsets[-1].as_py() if len(offsets) else 0) - start
        if pa.types.is_map(at):
            keys, items = array.keys.slice(start, length), array.items.slice(start, length)
            return [(keys, t.children[0]), (items, t.children[1])]
        return [(array.values.slice(start, length), t.children[0])]
    if pa.types.is_struct(at):
        return list(zip(array.flatten(), t.children, strict=True))
    return []


def _matching(ctype: ColumnType, at: pa.DataType) -> ColumnType:
    """`ctype` when it describes Arrow type `at` level by level, else the Doris type read from
    `at` (a computed column whose declared type lost its nesting)."""
    todo = [(ctype, at)]
    while todo:
        t, a = todo.pop()
        if pa.types.is_map(a):
            ok = t.name == "MAP"
            pairs = [(t.children[0], a.key_type), (t.children[1], a.item_type)] if ok else []
        elif pa.types.is_list(a) or pa.types.is_large_list(a):
            ok = t.name == "ARRAY"
            pairs = [(t.children[0], a.value_type)] if ok else []
        elif pa.types.is_struct(a):
            ok = t.name == "STRUCT" and len(t.children) == a.num_fields
            pairs = [(t.children[j], a.field(j).type) for j in range(a.num_fields)] if ok else []
        else:
            ok, pairs = not t.is_nested, []
        if not ok:
            return arrow_column_type(at)
        todo.extend(pairs)
    return ctype


def arrow_column_type(at: pa.DataType) -> ColumnType:
    """The Doris type of an Arrow type (a result column the engine typed only by its values),
    built children first with an explicit stack."""
    built: list[ColumnType] = []
    todo: list[tuple[pa.DataType, bool]] = [(at, False)]
    while todo:
        a, expanded = todo.pop()
        kids = _arrow_children(a)
        if kids and not expanded:
            todo.append((a, True))
            todo.extend((k, False) for k in reversed(kids))  # the first child is built first
            continue
        if not kids:
            built.append(_arrow_scalar_type(a))
            continue
        children = built[len(built) - len(kids) :]
        del built[len(built) - len(kids) :]
        if pa.types.is_map(a):
            built.append(ColumnType.map(children[0], children[1]))
        elif pa.types.is_struct(a):
            built.append(ColumnType.struct([(a.field(j).name, c) for j, c in enumerate(children)]))
        else:
            built.append(ColumnType.array(children[0]))
    return built[0]


def _arrow_children(a: pa.DataType) -> list[pa.DataType]:
    if pa.types.is_map(a):
        return [a.key_type, a.item_type]
    if pa.types.is_list(a) or pa.types.is_large_list(a):
        return [a.value_type]
    if pa.types.is_struct(a):
        return [a.field(j).type for j in range(a.num_fields)]
    return []


def _arrow_scalar_type(at: pa.DataType) -> ColumnType:
    if pa.types.is_decimal(at):
        return ColumnType(name="DECIMAL", precision=at.precision, scale=at.scale)
    simple = {
        pa.int8(): "TINYINT", pa.int16(): "SMALLINT", pa.int32(): "INT", pa.int64(): "BIGINT",
        pa.float32(): "FLOAT", pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN", pa.date32(): "DATE",
    }  # fmt: skip
    if at in simple:
        return ColumnType(name=simple[at])
    if pa.types.is_timestamp(at):
        return ColumnType(name="DATETIME")
    return ColumnType(name="STRING")


def _leaf(array: pa.Array, t: ColumnType, scalar_text: ScalarText) -> pa.Array:
    at = array.type
    if pa.types.is_binary(at) or pa.types.is_large_binary(at) or pa.types.is_fixed_size_binary(at):
        return _hex(array)
    text = scalar_text(array, t).cast(_TEXT)
    if t.name in QUOTED_TYPES or (pa.types.is_date(at) or pa.types.is_timestamp(at)):
        text = _concat('"', text, '"', "")
    return text


def _hex(array: pa.Array) -> pa.Array:
    """Binary values as `0x` and upper-case hex digits (how Doris prints VARBINARY inside)."""
    data = array.cast(pa.large_binary())
    n = len(data)
    offsets = np.frombuffer(data.buffers()[1], np.int64, n + 1, data.offset * 8)  # (offset in bytes)
    raw = data.buffers()[2]
    body = (
        np.frombuffer(raw, np.uint8)[offsets[0] : offsets[n]]
        if raw is not None and n
        else np.zeros(0, np.uint8)
    )
    digits = np.frombuffer(b"0123456789ABCDEF", np.uint8)
    pairs = np.empty((len(body), 2), np.uint8)
    pairs[:, 0] = digits[body >> 4]
    pairs[:, 1] = digits[body & 15]
    hex_offsets = ((offsets - offsets[0]) * 2).astype(np.int64)
    hexed = pa.LargeStringArray.from_buffers(n, pa.py_buffer(hex_offsets), pa.py_buffer(pairs.tobytes()))
    return pc.if_else(data.is_null(), pa.scalar(None, _TEXT), _concat("0x", hexed, ""))


def _concat(*parts) -> pa.Array:
    """Element-wise concatenation; the last part is the separator (str parts are scalars)."""
    return pc.binary_join_element_wise(*(pa.scalar(p, _TEXT) if isinstance(p, str) else p for p in parts))


def _compose(array: pa.Array, t: ColumnType, inner: list[pa.Array]) -> pa.Array:
    at = array.type
    nulls = array.is_null()
    if pa.types.is_struct(at):
        names = [at.field(j).name for j in range(at.num_fields)]
        parts = [_concat(f'"{name}":', text, "") for name, text in zip(names, inner, strict=True)]
        body = _concat(*parts, ", ") if len(parts) > 1 else parts[0]
        joined = _concat("{", body, "}", "")
        return pc.if_else(nulls, pa.scalar(None, _TEXT), joined)
    if pa.types.is_map(at):
        elements, opening, closing = _concat(inner[0], inner[1], ":"), "{", "}"
    else:
        elements, opening, closing = inner[0], "[", "]"
    offsets = array.offsets.cast(pa.int64())
    if len(offsets):
        offsets = pc.subtract(offsets, offsets[0])
    lists = pa.LargeListArray.from_arrays(offsets, elements, mask=nulls)
    joined = pc.binary_join(lists, pa.scalar(", ", _TEXT))
    return _concat(opening, joined, closing, "")
