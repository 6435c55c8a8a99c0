"""Stream-load request options: the Doris load headers, validated into one `LoadOptions`.

Owns the header vocabulary of a stream load that affects parsing and conversion (format,
separators, `columns` with expression mappings, `where`, `partitions`, strict mode, filter
ratio, JSON flags, merge type, delete condition, sequence column, time zone, ...) and the
Doris error texts for bad header values. Expressions are parsed here (so a bad one fails
before any data is read) by `galene.load.expressions`. Transport-level headers (label,
two_phase_commit, group_commit, ...) are read by the HTTP handler, not here.
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgspec
from sqlglot import exp

from galene.common.errors import LoadError
from galene.load.expressions import ColumnSpec, parse_columns, parse_condition

CSV_FORMATS = ("csv", "csv_with_names", "csv_with_names_and_types")
# Formats Doris accepts; the ones not in SUPPORTED_FORMATS are refused by parse_body.
KNOWN_FORMATS = CSV_FORMATS + ("json", "parquet", "orc", "arrow")
SUPPORTED_FORMATS = CSV_FORMATS + ("json", "parquet", "orc", "arrow")
COLUMNAR_FORMATS = ("parquet", "orc", "arrow")
MERGE_TYPES = ("APPEND", "DELETE", "MERGE")
SEQUENCE_COL_HEADER = "function_column.sequence_col"

# Doris `compress_type` values mapped to pyarrow codec names.
COMPRESS_CODECS = {
    "gz": "gzip",
    "gzip": "gzip",
    "bz2": "bz2",
    "lz4": "lz4",
    "lz4frame": "lz4",
    "zstd": "zstd",
}


def _invalid(message: str) -> LoadError:
    return LoadError(f"[INVALID_ARGUMENT]{message}")


def decode_separator(text: str, what: str = "column separator") -> bytes:
    """A separator header value as bytes: `\\x01` / `\\x0102` are hex, `\\t` `\\n` `\\r` escapes."""
    if text == "":
        raise _invalid(f"{what} is null or empty")
    if text[:2] in ("\\x", "\\X"):
        hex_text = text[2:]
        if not hex_text or len(hex_text) % 2:
            raise _invalid(f"Invalid hex format of {what}: {text}")
        try:
            return bytes.fromhex(hex_text)
        except ValueError:
            raise _invalid(f"Invalid hex format of {what}: {text}") from None
    # curl users write -H 'column_separator:\t' or -H 'line_delimiter:\n\n' and mean
    # control characters, anywhere in the value.
    for escape, char in (("\\t", "\t"), ("\\n", "\n"), ("\\r", "\r")):
        text = text.replace(escape, char)
    return text.encode("utf-8")


def _single_char(value: str, name: str) -> bytes:
    raw = decode_separator(value, name)
    if len(raw) != 1:
        raise _invalid(f"{name} must be a single character: {value}")
    return raw


def _header_bool(value: str) -> bool:
    # Doris reads these flags with iequal(value, "true"): anything else is false.
    return value.strip().lower() == "true"


@dataclass
class LoadOptions:
    format: str = "csv"  # csv | csv_with_names | csv_with_names_and_types | json | parquet | orc | arrow
    column_separator: bytes = b"\t"
    line_delimiter: bytes = b"\n"
    enclose: bytes | None = None  # CSV quote character; Doris reads quotes literally unless set
    escape: bytes | None = None
    trim_double_quotes: bool = False
    columns: list[str] | None = None  # source column names in file order (None: the table's)
    column_mappings: list[ColumnSpec] = field(default_factory=list)  # `target = expr` entries
    where: str | None = None  # row filter; rows it rejects are unselected, not filtered
    partitions: list[str] | None = None  # load only rows of these partitions
    strict_mode: bool = False
    max_filter_ratio: float = 0.0
    read_json_by_line: bool | None = None
    strip_outer_array: bool = False
    json_root: str | None = None
    jsonpaths: str | None = None  # JSON array of JSONPath strings, one per source column
    num_as_string: bool = False
    fuzzy_parse: bool = False
    skip_lines: int = 0
    empty_field_as_null: bool = False
    compress_type: str | None = None  # gz | bz2 | lz4 | zstd (body compressed as a whole)
    merge_type: str = "APPEND"  # APPEND | DELETE | MERGE (UNIQUE KEY tables)
    delete: str | None = None  # MERGE: rows where this holds are deletes
    sequence_col: str | None = None  # function_column.sequence_col: source of the sequence value
    timezone: str = "Asia/Shanghai"
    timeout_s: int = 600
    # The load's clock: now()/current_timestamp() and CURRENT_TIMESTAMP defaults give one
    # value for the whole load, however many blocks it is parsed in.
    started_at: _dt.datetime = field(default_factory=lambda: _dt.datetime.now(_dt.UTC))

    @functools.cached_property
    def where_expr(self) -> exp.Expression | None:
        return parse_condition(self.where, "where") if self.where else None

    @functools.cached_property
    def delete_expr(self) -> exp.Expression | None:
        return parse_condition(self.delete, "delete") if self.delete else None

    @property
    def needs_transform(self) -> bool:
        """Whether rows go through expressions (mappings, where, delete, sequence source)."""
        return bool(self.column_mappings or self.where or self.delete or self.sequence_col)

    def started_now(self) -> LoadOptions:
        """A copy of these options for a load that starts now (a shallow copy: the parsed
        expressions are shared, they are never changed)."""
        copy = object.__new__(LoadOptions)
        copy.__dict__.update(self.__dict__)
        copy.started_at = _dt.datetime.now(_dt.UTC)
        return copy

    def local_now(self) -> _dt.datetime:
        """The load's start time in its time zone, naive (how Doris DATETIME values are kept)."""
        return self.started_at.astimezone(zone_of(self.timezone)).replace(tzinfo=None)

    @property
    def json_by_line(self) -> bool:
        """JSON is read one object per line unless strip_outer_array says otherwise (Doris rule)."""
        if self.read_json_by_line is not None:
            return self.read_json_by_line
        return not self.strip_outer_array

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> LoadOptions:
        """Options from request headers (names case-insensitive). Bad values raise LoadError."""
        h = {k.lower(): v for k, v in headers.items()}
        opts = cls()

        fmt = h.get("format", "").strip()
        if fmt:
            if fmt.lower() not in KNOWN_FORMATS:
                raise LoadError(f"[INTERNAL_ERROR]unknown data format, format={fmt}")
            opts.format = fmt.lower()

        if h.get("column_separator"):
            opts.column_separator = decode_separator(h["column_separator"], "column separator")
        if h.get("line_delimiter"):
            opts.line_delimiter = decode_separator(h["line_delimiter"], "line delimiter")
        if h.get("enclose"):
            opts.enclose = _single_char(h["enclose"], "enclose")
        if h.get("escape"):
            opts.escape = _single_char(h["escape"], "escape")
        if h.get("trim_double_quotes"):
            opts.trim_double_quotes = _header_bool(h["trim_double_quotes"])

        if h.get("columns", "").strip():
            specs = parse_columns(h["columns"])
            opts.columns = [s.name for s in specs if s.expr is None] or None
            opts.column_mappings = [s for s in specs if s.expr is not None]
        if h.get("where", "").strip():
            opts.where = h["where"].strip()
            _ = opts.where_expr  # parse now: a bad expression fails before the body is read
        if h.get("partitions", "").strip():
            opts.partitions = parse_partitions_header(h["partitions"])
        if h.get("temporary_partitions", "").strip():
            raise LoadError("[NOT_IMPLEMENTED_ERROR]temporary partitions are not supported")

        merge = h.get("merge_type", "").strip()
        if merge:
            if merge.upper() not in MERGE_TYPES:
                raise _invalid(f"Invalid merge type {merge}")
            opts.merge_type = merge.upper()
        if h.get("delete", "").strip():
            opts.delete = h["delete"].strip()
        if opts.merge_type == "MERGE" and not opts.delete:
            raise _invalid("Excepted DELETE ON clause when merge type is MERGE.")
        if opts.merge_type != "MERGE" and opts.delete:
            raise _invalid("Not support DELETE ON clause when merge type is not MERGE.")
        if opts.delete:
            _ = opts.delete_expr
        if h.get(SEQUENCE_COL_HEADER, "").strip():
            opts.sequence_col = _unquote(h[SEQUENCE_COL_HEADER].strip())
        if h.get("jsonpaths", "").strip():
            opts.jsonpaths = h["jsonpaths"].strip()
            parse_jsonpaths(opts.jsonpaths)  # a bad path fails before the body is read
        if h.get("json_root", "").strip():
            opts.json_root = h["json_root"].strip()

        if h.get("strict_mode"):
            value = h["strict_mode"].strip().lower()
            if value not in ("true", "false"):
                raise _invalid("Invalid strict mode format. Must be bool type")
            opts.strict_mode = value == "true"

        if h.get("max_filter_ratio"):
            text = h["max_filter_ratio"].strip()
            try:
                ratio = float(text)
            except ValueError:
                raise _invalid(f"max_filter_ratio is not a number: {text}") from None
            if math.isnan(ratio) or not 0.0 <= ratio <= 1.0:
                raise _invalid("max_filter_ratio must between 0.0 and 1.0.")
            opts.max_filter_ratio = ratio

        if h.get("read_json_by_line"):
            opts.read_json_by_line = _header_bool(h["read_json_by_line"])
        if h.get("strip_outer_array"):
            opts.strip_outer_array = _header_bool(h["strip_outer_array"])
        if h.get("num_as_string"):
            opts.num_as_string = _header_bool(h["num_as_string"])
        if h.get("fuzzy_parse"):
            opts.fuzzy_parse = _header_bool(h["fuzzy_parse"])
        if h.get("empty_field_as_null"):
            opts.empty_field_as_null = _header_bool(h["empty_field_as_null"])

        if h.get("skip_lines"):
            opts.skip_lines = _parse_int(h["skip_lines"], "skip_lines")
            if opts.skip_lines < 0:
                raise _invalid(f"Invalid 'skip_lines': {opts.skip_lines}")

        if h.get("compress_type"):
            ct = h["compress_type"].strip().lower()
            if ct not in ("", "plain"):
                if ct not in COMPRESS_CODECS:
                    raise _invalid(f"unknown compress type: {h['compress_type']}")
                opts.compress_type = ct

        tz = h.get("timezone") or h.get("time_zone")
        if tz and tz.strip():
            opts.timezone = canonical_timezone(tz.strip())

        if h.get("timeout"):
            opts.timeout_s = _parse_int(h["timeout"], "timeout")
            if opts.timeout_s <= 0:
                raise _invalid(f"Invalid timeout: {opts.timeout_s}")
        return opts


def _parse_int(text: str, name: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise _invalid(f"Invalid {name} format: {text}") from None


def _unquote(name: str) -> str:
    if len(name) >= 2 and name[0] == "`" and name[-1] == "`":
        return name[1:-1]
    return name


def parse_partitions_header(text: str) -> list[str]:
    """`partitions: p1, p2` (names may be back-quoted)."""
    names = []
    for part in text.split(","):
        name = _unquote(part.strip())
        if not name:
            raise _invalid(f"Invalid partitions header: {text}")
        if name not in names:
            names.append(name)
    return names


_OFFSET_RE = re.compile(r"^(?:UTC|GMT)?([+-])(\d{1,2}):?(\d{2})$", re.IGNORECASE)


def canonical_timezone(text: str) -> str:
    """A Doris time-zone value as an IANA name or `+HH:MM` offset (Arrow and zoneinfo read both).

    Doris accepts region names, `+08:00`-style offsets, UTC/GMT and `CST` (China Standard Time).
    """
    upper = text.upper()
    if upper == "CST":
        return "Asia/Shanghai"
    if upper in ("UTC", "GMT", "Z"):
        return "UTC"
    m = _OFFSET_RE.match(text)
    if m:
        sign, hours, minutes = m.group(1), int(m.group(2)), int(m.group(3))
        if hours > 14 or minutes > 59:
            raise _invalid(f"Unknown or incorrect time zone: '{text}'")
        return f"{sign}{hours:02d}:{minutes:02d}"
    try:
        ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise _invalid(f"Unknown or incorrect time zone: '{text}'") from None
    return text


def zone_of(name: str) -> _dt.tzinfo:
    """tzinfo of a canonical time-zone value."""
    m = _OFFSET_RE.match(name)
    if m:
        delta = _dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3)))
        return _dt.timezone(delta if m.group(1) == "+" else -delta)
    return ZoneInfo(name)


def parse_jsonpaths(text: str) -> list[list[str | int]]:
    """The `jsonpaths` header: a JSON array of JSONPath strings (`$.a.b`, `$['a'][0]`)."""
    try:
        paths = msgspec.json.decode(text.encode())
    except msgspec.DecodeError:
        raise LoadError(f"[INVALID_ARGUMENT]Invalid jsonpaths: {text}") from None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise LoadError(f"[INVALID_ARGUMENT]Invalid jsonpaths: {text}")
    return [_jsonpath_steps(p) for p in paths]


def _jsonpath_steps(path: str) -> list[str | int]:
    text = path.strip()
    if not text.startswith("$"):
        raise LoadError(f"[INVALID_ARGUMENT]Invalid json path: {path}")
    steps: list[str | int] = []
    i = 1
    while i < len(text):
        ch = text[i]
        if ch == ".":
            j = i + 1
            while j < len(text) and text[j] not in ".[":
                j += 1
            if j == i + 1:
                raise LoadError(f"[INVALID_ARGUMENT]Invalid json path: {path}")
            steps.append(text[i + 1 : j])
            i = j
        elif ch == "[":
            j = text.find("]", i)
            if j < 0:
                raise LoadError(f"[INVALID_ARGUMENT]Invalid json path: {path}")
            inner = text[i + 1 : j].strip()
            if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
                steps.append(inner[1:-1])
            else:
                try:
                    steps.append(int(inner))
                except ValueError:
                    raise LoadError(f"[INVALID_ARGUMENT]Invalid json path: {path}") from None
            i = j + 1
        else:
            raise LoadError(f"[INVALID_ARGUMENT]Invalid json path: {path}")
    return steps
