"""Doris' text forms of the types stored as text or parsed from text: JSON / VARIANT, IPV4 /
IPV6, and the nested ARRAY / MAP / STRUCT literals of a CSV field.

* JSON, VARIANT: the text must be one JSON document; it is stored compact (`{"a":1}`), numbers
  keeping their digits. Text that is not JSON does not convert (NULL, or its row filtered in
  strict mode / NOT NULL). Every value is decoded by msgspec's C decoder (one `map` over the
  column, no Python code per row); only a column holding invalid JSON is looked at value by
  value, to find which.
* IPV4: dotted quad, each part 0..255 (leading zeros read, dropped: `01.2.3.4` -> `1.2.3.4`),
  surrounding whitespace ignored; vectorized with Arrow's regex kernels.
* IPV6: stored in RFC 5952 form (compressed, lower case), an IPv4-mapped or IPv4-compatible
  address with its IPv4 part dotted (`::ffff:1.2.3.4`, `::1.2.3.4`), as Doris (ClickHouse's
  formatIPv6) prints them. Each
  distinct value is parsed once (Python's `ipaddress`), so the cost follows the distinct values.
* Nested text (`[1, 2]`, `{"k":1}`, `{1:"a"}`, `['a', 'b']`, `[abc, def]`, `{1, "x"}` for a
  STRUCT by position): a column of plain JSON arrays / objects is read whole by pyarrow's JSON
  reader (`json_column`); otherwise each value that is JSON is decoded by msgspec (C speed);
  the other spellings Doris reads — single quotes, unquoted strings and keys, `null`/`NULL` —
  go through `parse_doris_nested`, an iterative parser bounded in depth (MAX_NESTING) whose
  leaves stay text. The Python objects are then built into Arrow by `galene.load.nested`.
"""

from __future__ import annotations

import ipaddress
import operator
from itertools import repeat

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from galene.common.types import MAX_NESTING, ColumnType
from galene.load.bounds import json_depth
from galene.load.json_text import EXACT_JSON

_JSON_OUT = msgspec.json.Encoder(decimal_format="number")


class _Invalid:
    """Marks a value that did not parse (distinct from JSON null)."""


INVALID = _Invalid()


def _mask(arr) -> np.ndarray:
    return pc.fill_null(arr, False).to_numpy(zero_copy_only=False)


# Deepest JSON text decoded (Doris' load_json_max_depth default): msgspec recurses per level
# and, on a thread with a small stack, 100,000 levels crash the process instead of raising.
MAX_JSON_TEXT_DEPTH = 100


def decode_json_values(text: pa.Array) -> list:
    """Each text decoded as one JSON document (None stays None; INVALID where it is no JSON or
    nests deeper than MAX_JSON_TEXT_DEPTH, which is found before any decoder sees it)."""
    texts = text.to_pylist()
    deep = _too_deep(text)
    if deep is not None:
        texts = [None if d else t for t, d in zip(texts, deep)]
    present = [t for t in texts if t is not None] if None in texts else texts
    try:
        decoded = list(map(EXACT_JSON.decode, present))
    except (msgspec.DecodeError, TypeError, ValueError, RecursionError):
        decoded = [_try_decode(t) for t in present]  # only a column with invalid JSON comes here
    if present is not texts:
        it = iter(decoded)
        decoded = [None if t is None else next(it) for t in texts]
    if deep is not None:
        decoded = [INVALID if d else v for v, d in zip(decoded, deep)]
    return decoded


def _too_deep(text: pa.Array) -> np.ndarray | None:
    """Values nested deeper than MAX_JSON_TEXT_DEPTH (None when none can be): only values with
    more openers than the bound are scanned."""
    if not len(text) or (pc.max(pc.binary_length(text)).as_py() or 0) <= MAX_JSON_TEXT_DEPTH:
        return None  # no value is long enough to nest that deep
    openers = pc.add(pc.count_substring(text, "["), pc.count_substring(text, "{"))
    candidates = np.flatnonzero(_mask(pc.greater(openers, MAX_JSON_TEXT_DEPTH)))
    if not candidates.size:
        return None
    deep = np.zeros(len(text), bool)
    for i in candidates.tolist():  # values with over 100 brackets: rare, and bounded by the body
        deep[i] = json_depth(text[i].as_py().encode()) > MAX_JSON_TEXT_DEPTH
    return deep if deep.any() else None


def _try_decode(text: str):
    try:
        return EXACT_JSON.decode(text)
    except (msgspec.DecodeError, TypeError, ValueError, RecursionError):
        return INVALID  # not JSON, or nested past the decoder's depth limit


def json_text(text: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """JSON / VARIANT text: (compact JSON text, ok mask); ok is False where the text is no JSON."""
    decoded = decode_json_values(text)
    ok = np.fromiter(map(operator.is_not, decoded, repeat(INVALID)), bool, len(decoded))
    if not ok.all():
        decoded = [None if d is INVALID else d for d in decoded]
    out = pa.array(list(map(_JSON_OUT.encode, decoded)), pa.binary()).cast(pa.string())
    present = _mask(pc.is_valid(text))
    keep = ok & present
    if not keep.all():
        out = pc.if_else(pa.array(keep), out, pa.scalar(None, pa.string()))
    return out, ok | ~present


def nested_json_text(values: pa.Array) -> pa.Array:
    """Arrow lists / structs / maps as compact JSON text (a map as an object of its keys)."""
    objs = values.to_pylist()
    if pa.types.is_map(values.type):
        objs = list(map(_pairs_as_object, objs))  # only an engine's map headed for a JSON column
    text = pa.array(list(map(_JSON_OUT.encode, objs)), pa.binary()).cast(pa.string())
    if values.null_count:
        text = pc.if_else(pc.is_valid(values), text, pa.scalar(None, pa.string()))
    return text


def _pairs_as_object(pairs):
    return None if pairs is None else dict(pairs)


# --- IP addresses ---------------------------------------------------------------------------------

_IPV4_RE = r"^\s*" + r"\.".join(f"(?P<o{i}>[0-9]{{1,3}})" for i in range(4)) + r"\s*$"


def ipv4_text(text: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """IPV4 text: (canonical dotted text, ok mask)."""
    parts = pc.extract_regex(text, _IPV4_RE)
    shape = _mask(pc.is_valid(parts))
    octets = []
    ok = shape.copy()
    for i in range(4):
        child = pc.fill_null(parts.field(i), "0")
        value = pc.cast(pc.if_else(pa.array(shape), child, "0"), pa.int32())
        ok &= _mask(pc.less_equal(value, 255))
        octets.append(pc.cast(value, pa.string()))
    joined = pc.binary_join_element_wise(*octets, ".")
    out = pc.if_else(pa.array(ok), joined, pa.scalar(None, pa.string()))
    present = _mask(pc.is_valid(text))
    return out, ok | ~present


def ipv4_from_int(values: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """IPv4 addresses given as their 32-bit number (Doris stores IPV4 as one): (dotted text,
    ok mask); a number outside 0..2^32-1 does not convert."""
    wide = pc.cast(values, pa.int64())
    ok = _mask(pc.and_(pc.greater_equal(wide, 0), pc.less_equal(wide, 2**32 - 1)))
    safe = pc.if_else(pa.array(ok), wide, 0)
    octets = [
        pc.cast(pc.bit_wise_and(pc.shift_right(safe, shift), 255), pa.string()) for shift in (24, 16, 8, 0)
    ]
    out = pc.if_else(pa.array(ok), pc.binary_join_element_wise(*octets, "."), pa.scalar(None, pa.string()))
    present = _mask(pc.is_valid(values))
    return out, ok | ~present


def _ipv6_canonical(text: str) -> str | None:
    try:
        addr = ipaddress.IPv6Address(text.strip())
    except (ipaddress.AddressValueError, ValueError):
        return None
    if addr.scope_id is not None:
        return None
    if addr.ipv4_mapped is not None:
        return f"::ffff:{addr.ipv4_mapped}"
    packed = addr.packed
    if packed[:12] == bytes(12) and packed[12:14] != b"\0\0":
        # IPv4-compatible (::a.b.c.d): formatIPv6 prints the IPv4 part dotted when the leading
        # zero run is exactly six words long.
        return "::" + ".".join(str(b) for b in packed[12:])
    return addr.compressed


def ipv6_text(text: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """IPV6 text: (canonical text, ok mask), each distinct value parsed once."""
    encoded = pc.dictionary_encode(text)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    canon = pa.array(list(map(_ipv6_canonical, encoded.dictionary.to_pylist())), pa.string())
    out = pc.take(canon, encoded.indices)
    present = _mask(pc.is_valid(text))
    ok = _mask(pc.is_valid(out)) | ~present
    return out, ok


# --- nested text -------------------------------------------------------------------------------


def json_column(text: pa.Array, ctype: ColumnType) -> pa.Array | None:
    """The fast route for a column of nested JSON text (`[1, 2]`, `["a"]`, `{"a": 1}` for a
    STRUCT): every value wrapped as a `{"v": <text>}` line and read by pyarrow's JSON reader
    (C++, threaded). None unless every value reads and every leaf's inferred type keeps the
    value exactly for its column type (integers for integer columns, strings for string
    columns, …); the caller then takes the general route. MAPs always take the general route
    (pyarrow reads a JSON object as a struct of its keys)."""
    if ctype.contains("MAP") or not len(text):
        return None
    lines = pc.binary_join_element_wise('{"v":', pc.fill_null(text, "null"), "}\n", "")
    if isinstance(lines, pa.ChunkedArray):
        lines = lines.combine_chunks()
    lines = lines.cast(pa.large_string())
    offsets = np.frombuffer(lines.buffers()[1], np.int64)[lines.offset : lines.offset + len(lines) + 1]
    body = lines.buffers()[2].to_pybytes()[int(offsets[0]) : int(offsets[-1])]
    # pyarrow's JSON parser recurses per level (100,000 levels overflowed the C stack and took
    # the process down, docs/ARCHITECTURE.md "Input bounds"): text nested past
    # MAX_JSON_TEXT_DEPTH never reaches it.
    if _too_deep(text) is not None:
        return None
    try:
        table = pajson.read_json(
            pa.BufferReader(body),
            read_options=pajson.ReadOptions(
                use_threads=len(body) > (1 << 20), block_size=max(1 << 20, len(body) // 8 + 1)
            ),
            parse_options=pajson.ParseOptions(unexpected_field_behavior="error"),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != len(text) or table.num_columns != 1:
        return None
    column = table.column(0).combine_chunks()
    return column if keeps_values(column.type, ctype) else None


def keeps_values(arrow_type: pa.DataType, ctype: ColumnType) -> bool:
    """Whether pyarrow's inferred type gives every value of `ctype` back exactly (type tree
    walked with a stack)."""
    todo = [(arrow_type, ctype)]
    while todo:
        at, t = todo.pop()
        if pa.types.is_null(at):
            continue
        if t.name == "ARRAY":
            if not pa.types.is_list(at):
                return False
            todo.append((at.value_type, t.element))
        elif t.name == "STRUCT":
            if not pa.types.is_struct(at):
                return False
            names = {at.field(i).name.lower(): at.field(i).type for i in range(at.num_fields)}
            if any(k not in {f.lower() for f in t.field_names} for k in names):
                return False  # keys the struct does not have: let the general route decide
            todo.extend((names[f.lower()], c) for f, c in t.fields() if f.lower() in names)
        elif t.is_integer and t.name != "LARGEINT" or t.name == "BOOLEAN":
            if not (pa.types.is_int64(at) or pa.types.is_boolean(at)):
                return False
        elif t.name in ("FLOAT", "DOUBLE"):
            if not (pa.types.is_int64(at) or pa.types.is_float64(at)):
                return False
        elif t.name in ("CHAR", "VARCHAR", "STRING", "IPV4", "IPV6", "DATE"):
            if not pa.types.is_string(at):
                return False
        else:
            return False  # decimals, LARGEINT, datetimes, JSON: their exact text matters
    return True


class DorisPairs(dict):
    """A `{k: v, …}` container read from Doris text (a MAP, or a STRUCT by name)."""


def decode_nested_values(text: pa.Array) -> list:
    """Nested text values as Python objects (lists, dicts; leaves as JSON scalars or text);
    None for NULL, INVALID where the text does not parse. JSON first, Doris' spellings after."""
    decoded = decode_json_values(text)
    if any(d is INVALID for d in decoded):
        texts = text.to_pylist()
        decoded = [parse_doris_nested(t) if d is INVALID else d for t, d in zip(texts, decoded)]
    return decoded


_QUOTES = "\"'"
_CLOSE = {"[": "]", "{": "}"}


def parse_doris_nested(text: str):
    """One value in Doris' nested text forms, without recursion (depth <= MAX_NESTING).

    Returns lists for `[…]` and for `{a, b}` (a STRUCT by position), DorisPairs for
    `{k: v, …}`, leaves as str (quoted or not) or None (`null`, `NULL`); INVALID when the
    text is malformed."""
    s = text.strip()
    if not s or s[0] not in _CLOSE:
        return INVALID
    n = len(s)
    i = 0
    # Each frame: [opening char, items, pending key (for pairs), expecting-value flag, is_pairs]
    stack: list[list] = []
    result = INVALID
    value_ready = False
    value = None
    while i < n:
        c = s[i]
        if c in " \t\r\n":
            i += 1
            continue
        if c in _CLOSE:
            if value_ready or len(stack) >= MAX_NESTING:
                return INVALID
            stack.append([c, [], INVALID, None])
            i += 1
            continue
        if not stack:
            return INVALID
        frame = stack[-1]
        if c in "]}":
            if _CLOSE[frame[0]] != c:
                return INVALID
            if value_ready:
                if not _add(frame, value):
                    return INVALID
            elif frame[2] is not INVALID or frame[3]:
                return INVALID  # a key without a value, or a trailing comma among pairs
            elif frame[1]:
                frame[1].append(None)  # `[1, 2, ]`: an empty element is NULL, as in Doris
            stack.pop()
            done = _finish(frame)
            if done is INVALID:
                return INVALID
            i += 1
            if not stack:
                result = done
                if s[i:].strip():
                    return INVALID
                return result
            value, value_ready = done, True
            continue
        if c == ",":
            if not value_ready:
                if frame[3] or frame[2] is not INVALID:
                    return INVALID
                value, value_ready = None, True  # `[, 1]`: an empty element is NULL
            if not _add(frame, value):
                return INVALID
            value_ready = False
            i += 1
            continue
        if c == ":":
            if frame[0] != "{" or not value_ready or frame[2] is not INVALID:
                return INVALID
            if isinstance(value, (list, dict)):
                return INVALID
            frame[2] = value
            frame[3] = True  # pairs
            value_ready = False
            i += 1
            continue
        if value_ready:
            return INVALID
        if c in _QUOTES:
            j = i + 1
            out = []
            while j < n and s[j] != c:
                if s[j] == "\\" and j + 1 < n:
                    j += 1
                out.append(s[j])
                j += 1
            if j >= n:
                return INVALID
            value, value_ready = "".join(out), True
            i = j + 1
            continue
        j = i
        while j < n and s[j] not in ",]}:":
            j += 1
        token = s[i:j].strip()
        value = None if token in ("null", "NULL") else token
        value_ready = True
        i = j
    return INVALID


def _add(frame: list, value) -> bool:
    if frame[2] is not INVALID:
        frame[1].append((frame[2], value))
        frame[2] = INVALID
        return True
    if frame[3]:
        return False  # a value without key among pairs
    frame[3] = False
    frame[1].append(value)
    return True


def _finish(frame: list):
    items = frame[1]
    if frame[0] == "[":
        return items
    if frame[3]:
        return DorisPairs(items)
    return items  # `{a, b}`: a STRUCT by position
