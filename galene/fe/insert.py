"""INSERT INTO … VALUES / SELECT in the FE: the rows become one stream load sent to a BE.

Owns the FE side of SQL inserts: checking the target columns, turning VALUES rows or a
SELECT's Arrow result into a JSON-lines body (vectorized: every value travels as JSON text
and the BE converts it with the same Doris rules as any stream load), sending that body to
a BE's `_stream_load` over the deadline client with the session's `group_commit`,
strict-mode and timeout settings, and rendering the BE's reply as Doris renders an INSERT:
affected rows plus `{'label':'…', 'status':'VISIBLE', 'txnId':'N'}`, or a 1105 error.

Going through the BE's stream load keeps one load path: label checks, the transaction,
atomic visibility, filtering, the error log and group commit all live there.

The FE does not know the user's password (MySQL native auth never sends it), so it
authenticates to the BE with `internal_password(token, user)`, an HMAC of the user name
under the cluster token; the FE's user check accepts it for an existing user.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import uuid
from dataclasses import dataclass
from urllib.parse import quote

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from galene.catalog.model import Table
from galene.common import intcast
from galene.common.errors import AnalysisError, GaleneError
from galene.common.types import MAX_NESTING, ColumnType
from galene.net.deadline import DeadlineExceeded

INTERNAL_PASSWORD_PREFIX = "galene-internal:"
GROUP_COMMIT_MODES = ("off_mode", "sync_mode", "async_mode")
# Added to the load timeout for the whole HTTP exchange with the BE (reply and commit).
RPC_MARGIN_S = 30.0


def session_rules(variables: dict) -> tuple[bool, float, int]:
    """(strict, max filter ratio, timeout in seconds) of an INSERT from the session's variables
    (enable_insert_strict, insert_max_filter_ratio, insert_timeout): INSERT … VALUES and the
    engine's INSERT … SELECT follow the same rules."""
    strict = variables.get("enable_insert_strict", True)
    if isinstance(strict, str):  # a value SET kept as text
        strict = strict.strip().lower() in ("1", "true", "on")
    ratio = float(variables.get("insert_max_filter_ratio", 1.0) or 0.0)
    timeout = int(variables.get("insert_timeout", 14400) or 14400)
    return bool(strict), ratio, timeout


def internal_password(token: str, user: str) -> str:
    """The password the FE presents for `user` on loads it sends to a BE on the user's behalf."""
    digest = hmac.new(token.encode(), user.split("@")[0].encode(), hashlib.sha256).hexdigest()
    return INTERNAL_PASSWORD_PREFIX + digest


def is_internal_password(token: str, user: str, password: str) -> bool:
    return password.startswith(INTERNAL_PASSWORD_PREFIX) and hmac.compare_digest(
        password, internal_password(token, user)
    )


def new_insert_label() -> str:
    # Doris: insert_<16 hex>_<16 hex>
    h = uuid.uuid4().hex
    return f"insert_{h[:16]}_{h[16:]}"


def info_text(label: str, status: str, txn_id: int) -> str:
    """The info string of Doris' OK packet for an INSERT (its exact quoting and spacing)."""
    return f"{{'label':'{label}', 'status':'{status}', 'txnId':'{txn_id}'}}"


# --- target columns ----------------------------------------------------------------------------


def target_columns(table: Table, columns: list[str] | None) -> list[str]:
    """Table column names the inserted values feed, in value order."""
    if not columns:
        return [c.name for c in table.visible_columns()]
    names: list[str] = []
    seen: set[str] = set()
    for name in columns:
        col = table.column(name)
        if col is None or col.hidden:
            raise AnalysisError(f"Unknown column '{name}' in '{table.name}'")
        if col.name.lower() in seen:
            raise AnalysisError(f"Duplicate column name '{col.name}'")
        seen.add(col.name.lower())
        names.append(col.name)
    return names


def check_value_count(values: list[list[exp.Expr]], n_columns: int) -> None:
    for row in values:
        if len(row) != n_columns:
            raise AnalysisError("Column count doesn't match value count")


# --- VALUES -> Arrow ---------------------------------------------------------------------------


class _NotLiteral(Exception):
    pass


def _literal_text(e: exp.Expr) -> str | None:
    """The text of a constant VALUES item (None for NULL); raises _NotLiteral for expressions.

    A nested literal (`[1, 2]`, `array(…)`, `{'a': 1}`, `map(…)`, `struct(…)`,
    `named_struct(…)`) made only of constants becomes its JSON text, which the BE reads into
    the ARRAY / MAP / STRUCT column like any load's nested text."""
    if _is_nested_literal(e):
        return _nested_json(e)
    if isinstance(e, exp.Null):
        return None
    if isinstance(e, exp.Boolean):
        return "true" if e.this else "false"
    if isinstance(e, exp.Literal):
        return str(e.this)
    if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal) and not e.this.is_string:
        return "-" + str(e.this.this)
    if isinstance(e, exp.Paren):
        return _literal_text(e.this)
    raise _NotLiteral


def literal_values_table(
    values: list[list[exp.Expr]], names: list[str], types: list[ColumnType] | None = None
) -> pa.Table | None:
    """VALUES rows made only of literals as an all-string Arrow table; None if any is an expression.

    A number with an exponent (`1.5e3`, or a DOUBLE parameter 1e16 that a prepared statement
    substituted as `1e+16`) bound for an integer column of `types` is spelled out (`1500`): Doris
    casts such a DOUBLE literal by truncation, while its text rule refuses exponents (which it
    does for the string '1e3'). galene.common.intcast owns both rules.
    """
    try:
        columns = [[_literal_text(row[i]) for row in values] for i in range(len(names))]
    except _NotLiteral:
        return None
    for i, ctype in enumerate(types or []):
        if ctype.is_integer:
            columns[i] = [
                intcast.plain_number_text(text) if text is not None and _is_number(row[i]) else text
                for row, text in zip(values, columns[i])
            ]
    return pa.table({f"c{i}": pa.array(col, pa.string()) for i, col in enumerate(columns)}).rename_columns(
        names
    )


_NESTED_FUNCTIONS = ("ARRAY", "MAP", "STRUCT", "NAMED_STRUCT")


def _is_nested_literal(e: exp.Expr) -> bool:
    if isinstance(e, (exp.Array, exp.Struct)):
        return True
    return isinstance(e, exp.Anonymous) and str(e.this).upper() in _NESTED_FUNCTIONS


_JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def _json_scalar(e: exp.Expr) -> str:
    """A constant inside a nested literal as a JSON value: numbers and booleans as themselves
    (so a JSON column keeps their kind), everything else as a JSON string of its text."""
    text = _literal_text(e)
    if text is None:
        return "null"
    if isinstance(e, exp.Boolean) or (_is_number(e) and _JSON_NUMBER.fullmatch(text)):
        return text
    return msgspec.json.encode(text).decode()


def _nested_json(root: exp.Expr) -> str:
    """A nested literal as JSON text, built with an explicit stack (bounded by MAX_NESTING);
    scalars become JSON strings of their literal text (the BE converts them to the element
    type by Doris' rules). Raises _NotLiteral for anything that is not a constant."""
    out: list[str] = []
    stack: list[tuple[str, exp.Expr | str, int]] = [("node", root, 0)]
    while stack:
        kind, item, depth = stack.pop()
        if kind == "text":
            out.append(item)  # type: ignore[arg-type]
            continue
        node = item
        while isinstance(node, exp.Paren):
            node = node.this
        if not _is_nested_literal(node):
            out.append(_json_scalar(node))
            continue
        if depth >= MAX_NESTING:
            raise _NotLiteral
        name = str(node.this).upper() if isinstance(node, exp.Anonymous) else ""
        args = list(node.expressions)
        pieces: list[tuple[str, exp.Expr | str, int]] = []
        if isinstance(node, exp.Struct) and args and all(isinstance(a, exp.PropertyEQ) for a in args):
            pairs = [(exp.Literal.string(a.this.name), a.expression) for a in args]
            opener, closer = "{", "}"
        elif name in ("MAP", "NAMED_STRUCT"):
            if len(args) % 2:
                raise _NotLiteral
            pairs = list(zip(args[0::2], args[1::2]))
            opener, closer = "{", "}"
        else:  # [..], array(..), struct(..) by position
            pairs = [(None, a) for a in args]
            opener, closer = "[", "]"
        pieces.append(("text", opener, depth))
        for i, (key, value) in enumerate(pairs):
            if i:
                pieces.append(("text", ",", depth))
            if key is not None:
                key_text = _literal_text(key)
                if key_text is None or _is_nested_literal(key):
                    raise _NotLiteral
                pieces.append(("text", msgspec.json.encode(key_text).decode() + ":", depth))
            pieces.append(("node", value, depth + 1))
        pieces.append(("text", closer, depth))
        stack.extend(reversed(pieces))
    return "".join(out)


def _is_number(e: exp.Expr) -> bool:
    while isinstance(e, (exp.Paren, exp.Neg)):
        e = e.this
    return isinstance(e, exp.Literal) and not e.is_string


def values_select(values: list[list[exp.Expr]]) -> exp.Query:
    """VALUES rows with expressions as one Doris query whose columns are the values as text.

    Each value is cast to STRING so rows of different value types can be unioned (a constant
    is its literal text already); the BE converts the text to the column type exactly as for
    any load.
    """
    selects = [exp.select(*(_as_text_column(e).as_(f"c{i}") for i, e in enumerate(row))) for row in values]
    query: exp.Query = selects[0]
    for s in selects[1:]:
        query = exp.union(query, s, distinct=False)
    return query


def _as_text_column(e: exp.Expr) -> exp.Expr:
    """A VALUES item as a STRING column: a constant (nested ones included) as its literal text,
    so the engine never types it (a 39-digit LARGEINT literal is no Spark decimal), anything
    else cast to STRING."""
    try:
        text = _literal_text(e)
    except _NotLiteral:
        return exp.Cast(this=e.copy(), to=exp.DataType.build("STRING"))
    if text is None:
        return exp.Cast(this=exp.Null(), to=exp.DataType.build("STRING"))
    if _is_number(e):
        text = intcast.plain_number_text(text)  # 1.5e3 -> 1500, as the literal-only path spells it
    return exp.Literal.string(text)


# --- Arrow -> JSON lines -----------------------------------------------------------------------


def _as_text(arr: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_timestamp(arr.type) and arr.type.tz is not None:
        arr = arr.cast(pa.timestamp(arr.type.unit))
    if pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.large_string())  # fails loudly on invalid UTF-8 rather than corrupting
    if not pa.types.is_large_string(arr.type):
        arr = pc.cast(arr, pa.large_string())
    return arr


_CONTROL = "[\\x00-\\x1f]"


def _json_escape(text: pa.Array) -> pa.Array:
    text = pc.replace_substring(text, "\\", "\\\\")
    text = pc.replace_substring(text, '"', '\\"')
    if len(text) and pc.any(pc.match_substring_regex(text, _CONTROL)).as_py():
        for code in range(32):
            text = pc.replace_substring(text, chr(code), f"\\u{code:04x}")
    return text


def json_lines(table: pa.Table) -> bytes:
    """One JSON object per row (`{"col":"text",…}\\n`), every non-null value as a JSON string."""
    if table.num_rows == 0:
        return b""

    def text(value: str) -> pa.Scalar:
        return pa.scalar(value, pa.large_string())

    pieces: list = []
    for i, name in enumerate(table.column_names):
        quoted = pc.binary_join_element_wise(
            text('"'), _json_escape(_as_text(table.column(i))), text('"'), text("")
        )
        key = msgspec.json.encode(name).decode()
        pieces += [text(("{" if i == 0 else ",") + key + ":"), pc.fill_null(quoted, text("null"))]
    lines = pc.binary_join_element_wise(*pieces, text("}\n"), text(""))
    if isinstance(lines, pa.ChunkedArray):
        lines = lines.combine_chunks()
    lines = lines.cast(pa.large_string())
    # The rows are contiguous in the value buffer: take it whole instead of joining in Python.
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)[lines.offset : lines.offset + len(lines) + 1]
    return lines.buffers()[2].to_pybytes()[int(offsets[0]) : int(offsets[-1])]


# --- sending the load --------------------------------------------------------------------------


@dataclass
class InsertLoad:
    """What one INSERT sends to the BE besides the body."""

    db: str
    table: str
    user: str
    columns: list[str]
    label: str
    group_commit: str  # off_mode | sync_mode | async_mode
    strict: bool
    max_filter_ratio: float
    timeout_s: int
    partitions: list[str] | None = None


def load_headers(load: InsertLoad, token: str) -> dict[str, str]:
    cred = f"{load.user}:{internal_password(token, load.user)}"
    headers = {
        "Authorization": "Basic " + base64.b64encode(cred.encode()).decode(),
        "format": "json",
        "read_json_by_line": "true",
        "columns": ", ".join("`" + c + "`" for c in load.columns),
        "strict_mode": "true" if load.strict else "false",
        "max_filter_ratio": "0" if load.strict else repr(float(load.max_filter_ratio)),
        "timeout": str(load.timeout_s),
        "label": load.label,
        "Content-Type": "application/json",
    }
    if load.group_commit != "off_mode":
        headers["group_commit"] = load.group_commit
    if load.partitions:
        headers["partitions"] = ", ".join(load.partitions)
    return headers


async def send_load(fe, load: InsertLoad, body: bytes) -> dict:
    """Send one INSERT's body to a load-available BE (alive, writable, loads enabled; a group
    commit INSERT to its table's owner BE; a BE still joining is waited for); returns the BE's
    stream-load reply."""
    await fe.backends.wait_for_joining()
    choice = None
    if load.group_commit != "off_mode":
        try:
            choice = fe.backends.group_commit_owner(fe.catalog.table(load.db, load.table))
        except GaleneError:
            choice = None  # the BE answers the missing table
    if choice is None:
        choice = fe.backends.choose_for_load()
    if choice is None:
        raise GaleneError("No available backends to load data. Check SHOW BACKENDS.")
    be, rt = choice
    url = f"http://{be.host}:{rt.http_port}/api/{quote(load.db, safe='')}/{quote(load.table, safe='')}/_stream_load"
    try:
        status, _, raw = await fe.rpc.call(
            "PUT",
            url,
            data=body,
            headers=load_headers(load, fe.store.token),
            timeout_s=load.timeout_s + RPC_MARGIN_S,
        )
    except DeadlineExceeded as e:
        raise GaleneError(f"insert timeout: no reply from backend {be.host}:{rt.http_port}: {e}") from e
    except ConnectionError as e:
        raise GaleneError(f"backend {be.host}:{rt.http_port} unavailable during insert: {e}") from e
    try:
        reply = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        reply = None
    if status != 200 or not isinstance(reply, dict):
        raise GaleneError(f"insert failed: backend answered HTTP {status}: {raw[:500]!r}")
    return reply


def reply_outcome(reply: dict, load: InsertLoad) -> tuple[int, str]:
    """(affected rows, OK-packet info) of a successful reply; raises the Doris INSERT error otherwise."""
    status = reply.get("Status")
    if status not in ("Success", "Publish Timeout"):
        message = str(reply.get("Message") or "insert failed")
        if "too many filtered rows" in message:
            url = reply.get("ErrorURL", "")
            if load.strict:
                raise GaleneError(f"Insert has filtered data in strict mode, tracking_url={url}")
            filtered = int(reply.get("NumberFilteredRows", 0))
            total = int(reply.get("NumberTotalRows", 0)) - int(reply.get("NumberUnselectedRows", 0))
            raise GaleneError(
                f"Insert has too many filtered data {filtered}/{total} "
                f"insert_max_filter_ratio is {load.max_filter_ratio}. url: {url}"
            )
        raise GaleneError(message)
    label = str(reply.get("Label") or load.label)
    txn_id = int(reply.get("TxnId") or 0)
    if reply.get("GroupCommit"):
        # Doris answers a group-committed INSERT with the merged load's label and PREPARE.
        txn_status = "PREPARE"
    else:
        txn_status = "VISIBLE" if status == "Success" else "COMMITTED"
    return int(reply.get("NumberLoadedRows", 0)), info_text(label, txn_status, txn_id)
