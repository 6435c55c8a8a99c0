"""Column types: the Doris type model and its mapping to Arrow, Spark and MySQL.

One `ColumnType` value describes a Doris column type in canonical form (aliases such as
DATEV2, DATETIMEV2, DECIMALV3, INTEGER are folded on parse). Everything else in Galene —
the BE's Arrow conversion, the Spark read schema, SHOW CREATE TABLE, result-set metadata —
derives from it here, so the mappings live in one place.

Nested types carry their element types in `children` (ARRAY: the element; MAP: key, value;
STRUCT: one per field, named by `field_names`), at most MAX_NESTING levels deep. How each
Doris type is stored (the Parquet/Arrow type both engines read natively):

  ARRAY / MAP / STRUCT   Arrow list / map / struct of their children
  VARIANT, JSON          JSON text (UTF-8), parsed by path functions at read
  IPV4, IPV6             canonical text (`1.2.3.4`, `2001:db8::1`): comparisons with literals
                         and the MySQL protocol see what Doris shows
  BITMAP                 sorted distinct BIGINT list: unions, counts and set operations are
                         the engines' own array functions (vectorized; exact, as Doris is)
  HLL                    an Apache DataSketches HLL sketch (binary): both engines' native
                         `hll_union_agg` / `hll_sketch_estimate` merge and count it
  QUANTILE_STATE         the DOUBLE values (a list), merged by concatenation; percentiles are
                         exact (Doris' TDigest is an approximation of them)
  DECIMAL(p > 38)        Arrow decimal256 (Doris' enable_decimal256), which only Sail reads
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import msgspec
import pyarrow as pa

# Canonical Doris type names.
INTEGER_TYPES = ("TINYINT", "SMALLINT", "INT", "BIGINT", "LARGEINT")
FLOAT_TYPES = ("FLOAT", "DOUBLE")
STRING_TYPES = ("CHAR", "VARCHAR", "STRING", "JSON")
NESTED_TYPES = ("ARRAY", "MAP", "STRUCT")
IP_TYPES = ("IPV4", "IPV6")
# Aggregate-state types and the one aggregation each allows in an AGGREGATE KEY table.
STATE_TYPES = {"BITMAP": "BITMAP_UNION", "HLL": "HLL_UNION", "QUANTILE_STATE": "QUANTILE_UNION"}
ALL_TYPES = (
    INTEGER_TYPES + FLOAT_TYPES + STRING_TYPES + NESTED_TYPES + IP_TYPES + tuple(STATE_TYPES)
    + ("DECIMAL", "DATE", "DATETIME", "BOOLEAN", "VARIANT", "TIME")
)  # fmt: skip
# Types only an expression has (Doris refuses them as a column of a table).
EXPRESSION_ONLY_TYPES = ("TIME",)
# Doris' decimal limits: 38 digits, 76 with the session variable enable_decimal256.
MAX_DECIMAL_PRECISION = 38
MAX_DECIMAL256_PRECISION = 76
# Nesting of ARRAY / MAP / STRUCT inside each other (Doris allows 9 levels).
MAX_NESTING = 9

_ALIASES = {
    "INTEGER": "INT",
    "DATEV2": "DATE",
    "DATEV1": "DATE",
    "DATETIMEV2": "DATETIME",
    "DATETIMEV1": "DATETIME",
    "DECIMALV2": "DECIMAL",
    "DECIMALV3": "DECIMAL",
    "DECIMAL32": "DECIMAL",
    "DECIMAL64": "DECIMAL",
    "DECIMAL128": "DECIMAL",
    "NUMERIC": "DECIMAL",
    "BOOL": "BOOLEAN",
    "TEXT": "STRING",
    "JSONB": "JSON",
    "REAL": "DOUBLE",
    "TIMEV2": "TIME",
    "DECIMAL256": "DECIMAL",
}

# Bounds used by range checks (galene.common.intcast): two's complement, LARGEINT included
# (Doris 4 accepts -2^127, whatever its documentation says).
INT_BOUNDS = {
    "TINYINT": (-(2**7), 2**7 - 1),
    "SMALLINT": (-(2**15), 2**15 - 1),
    "INT": (-(2**31), 2**31 - 1),
    "BIGINT": (-(2**63), 2**63 - 1),
    "LARGEINT": (-(2**127), 2**127 - 1),
}

MAX_VARCHAR_LENGTH = 65533
MAX_CHAR_LENGTH = 255


class TypeError_(ValueError):
    """A type string Galene does not understand."""


class ColumnType(msgspec.Struct, frozen=True, kw_only=True):
    """A Doris column type in canonical form."""

    name: str
    length: int = 0  # CHAR / VARCHAR length
    precision: int = 0  # DECIMAL precision; DATETIME / TIME fractional-second precision
    scale: int = 0  # DECIMAL scale
    # ARRAY: (element,); MAP: (key, value); STRUCT: the fields' types.
    children: tuple[ColumnType, ...] = ()
    field_names: tuple[str, ...] = ()  # STRUCT only

    # --- construction ---------------------------------------------------------------
    @staticmethod
    def array(element: ColumnType) -> ColumnType:
        return ColumnType(name="ARRAY", children=(element,))

    @staticmethod
    def map(key: ColumnType, value: ColumnType) -> ColumnType:
        return ColumnType(name="MAP", children=(key, value))

    @staticmethod
    def struct(fields: list[tuple[str, ColumnType]]) -> ColumnType:
        return ColumnType(
            name="STRUCT", children=tuple(t for _, t in fields), field_names=tuple(n for n, _ in fields)
        )

    # --- classification -------------------------------------------------------------
    @property
    def is_integer(self) -> bool:
        return self.name in INTEGER_TYPES

    @property
    def is_string(self) -> bool:
        return self.name in STRING_TYPES

    @property
    def is_numeric(self) -> bool:
        return self.name in INTEGER_TYPES or self.name in FLOAT_TYPES or self.name == "DECIMAL"

    @property
    def is_nested(self) -> bool:
        return self.name in NESTED_TYPES

    @property
    def is_state(self) -> bool:
        """An aggregate-state type (BITMAP, HLL, QUANTILE_STATE)."""
        return self.name in STATE_TYPES

    def walk(self) -> Iterator[ColumnType]:
        """This type and every type nested in it (an explicit stack: trees are bounded anyway)."""
        todo = [self]
        while todo:
            t = todo.pop()
            yield t
            todo.extend(t.children)

    def contains_wide_decimal(self) -> bool:
        """A DECIMAL of more than 38 digits in this type (Doris' decimal256)."""
        return any(t.name == "DECIMAL" and t.precision > MAX_DECIMAL_PRECISION for t in self.walk())

    @property
    def element(self) -> ColumnType:
        return self.children[0]

    def fields(self) -> list[tuple[str, ColumnType]]:
        return list(zip(self.field_names, self.children, strict=True))

    def contains(self, names: tuple[str, ...] | str) -> bool:
        """Whether this type or any type nested in it is one of `names`."""
        wanted = (names,) if isinstance(names, str) else names
        return any(t.name in wanted for t in self.walk())

    # --- renderings -----------------------------------------------------------------
    def to_sql(self) -> str:
        """The type as Doris prints it in SHOW CREATE TABLE (lower case, v2 names)."""
        n = self.name
        if n in NESTED_TYPES:
            return self._nested_text(lambda t: t.to_sql(), n.lower(), ":")
        if n in ("CHAR", "VARCHAR"):
            return f"{n.lower()}({self.length})"
        if n == "DECIMAL":
            return f"decimal({self.precision},{self.scale})"
        if n == "DATETIME":
            return f"datetime({self.precision})" if self.precision else "datetime"
        if n == "TIME":
            return f"time({self.precision})" if self.precision else "time"
        if n == "STRING":
            return "text"
        return n.lower()

    def to_desc(self) -> str:
        """The type as DESC / SHOW COLUMNS print it (Doris prints upper-case names)."""
        n = self.name
        if n in NESTED_TYPES:
            return self._nested_text(lambda t: t.to_desc(), n, ":")
        if n in ("CHAR", "VARCHAR"):
            return f"{n}({self.length})"
        if n == "DECIMAL":
            return f"DECIMAL({self.precision}, {self.scale})"
        if n == "DATETIME":
            return f"DATETIME({self.precision})" if self.precision else "DATETIME"
        if n == "TIME":
            return f"TIME({self.precision})" if self.precision else "TIME"
        if n == "STRING":
            return "TEXT"
        return n

    def _nested_text(self, render, name: str, sep: str) -> str:
        # Type trees are at most MAX_NESTING deep (make_nested checks), so recursion is bounded.
        if self.name == "STRUCT":
            inner = ",".join(f"{f}{sep}{render(t)}" for f, t in self.fields())
        else:
            inner = ",".join(render(t) for t in self.children)
        return f"{name}<{inner}>"

    def to_arrow(self) -> pa.DataType:
        n = self.name
        if n == "ARRAY":
            return pa.list_(self.element.to_arrow())
        if n == "MAP":
            return pa.map_(self.children[0].to_arrow(), self.children[1].to_arrow())
        if n == "STRUCT":
            return pa.struct([pa.field(f, t.to_arrow()) for f, t in self.fields()])
        return _ARROW[n](self)

    def to_spark_ddl(self) -> str:
        """Spark SQL DDL type string for reading this column."""
        n = self.name
        if n == "ARRAY":
            return f"ARRAY<{self.element.to_spark_ddl()}>"
        if n == "MAP":
            return f"MAP<{self.children[0].to_spark_ddl()},{self.children[1].to_spark_ddl()}>"
        if n == "STRUCT":
            return "STRUCT<" + ",".join(f"`{f}`:{t.to_spark_ddl()}" for f, t in self.fields()) + ">"
        return _SPARK[n](self)


_ARROW = {
    "TINYINT": lambda t: pa.int8(),
    "SMALLINT": lambda t: pa.int16(),
    "INT": lambda t: pa.int32(),
    "BIGINT": lambda t: pa.int64(),
    # Spark has no 128-bit integer. decimal128's 128-bit unscaled value holds every int128,
    # including the 39-digit ones past precision 38 (galene.common.intcast writes them); Sail
    # reads, compares and orders all of them, Apache Spark only those of up to 38 digits
    # (docs/ARCHITECTURE.md, "Integer conversions and LARGEINT").
    "LARGEINT": lambda t: pa.decimal128(38, 0),
    "FLOAT": lambda t: pa.float32(),
    "DOUBLE": lambda t: pa.float64(),
    "DECIMAL": lambda t: (
        pa.decimal128(t.precision, t.scale)
        if t.precision <= MAX_DECIMAL_PRECISION
        else pa.decimal256(t.precision, t.scale)
    ),
    "DATE": lambda t: pa.date32(),
    "DATETIME": lambda t: pa.timestamp("us"),
    "CHAR": lambda t: pa.string(),
    "VARCHAR": lambda t: pa.string(),
    "STRING": lambda t: pa.string(),
    "JSON": lambda t: pa.string(),
    "BOOLEAN": lambda t: pa.bool_(),
    "VARIANT": lambda t: pa.string(),
    "IPV4": lambda t: pa.string(),
    "IPV6": lambda t: pa.string(),
    "BITMAP": lambda t: pa.list_(pa.int64()),
    "HLL": lambda t: pa.binary(),
    "QUANTILE_STATE": lambda t: pa.list_(pa.float64()),
    "TIME": lambda t: pa.string(),
}

_SPARK = {
    "TINYINT": lambda t: "TINYINT",
    "SMALLINT": lambda t: "SMALLINT",
    "INT": lambda t: "INT",
    "BIGINT": lambda t: "BIGINT",
    "LARGEINT": lambda t: "DECIMAL(38,0)",
    "FLOAT": lambda t: "FLOAT",
    "DOUBLE": lambda t: "DOUBLE",
    "DECIMAL": lambda t: f"DECIMAL({t.precision},{t.scale})",
    "DATE": lambda t: "DATE",
    "DATETIME": lambda t: "TIMESTAMP_NTZ",
    "CHAR": lambda t: "STRING",
    "VARCHAR": lambda t: "STRING",
    "STRING": lambda t: "STRING",
    "JSON": lambda t: "STRING",
    "BOOLEAN": lambda t: "BOOLEAN",
    "VARIANT": lambda t: "STRING",
    "IPV4": lambda t: "STRING",
    "IPV6": lambda t: "STRING",
    "BITMAP": lambda t: "ARRAY<BIGINT>",
    "HLL": lambda t: "BINARY",
    "QUANTILE_STATE": lambda t: "ARRAY<DOUBLE>",
    "TIME": lambda t: "STRING",
}

_TYPE_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(\s*([^)]*)\s*\))?\s*$")


def parse_type(text: str) -> ColumnType:
    """Parse a Doris type string (`varchar(20)`, `DECIMALV3(10, 2)`, `datetimev2(3)`)."""
    m = _TYPE_RE.match(text)
    if not m:
        raise TypeError_(f"Unsupported data type: {text}")
    base = m.group(1).upper()
    base = _ALIASES.get(base, base)
    args = [a.strip() for a in m.group(2).split(",")] if m.group(2) else []
    if base not in ALL_TYPES:
        raise TypeError_(f"Unsupported data type: {text}")
    try:
        nums = [int(a) for a in args if a != ""]
    except ValueError:
        raise TypeError_(f"Unsupported data type: {text}") from None
    return make_type(base, nums, text)


def make_type(base: str, nums: list[int], text: str | None = None, *, decimal256: bool = False) -> ColumnType:
    """Build a canonical type from a base name and its numeric arguments, with Doris limits.

    `decimal256` is Doris' session variable enable_decimal256 (DECIMAL up to 76 digits)."""
    text = text or base
    base = _ALIASES.get(base.upper(), base.upper())
    if base not in ALL_TYPES or base in NESTED_TYPES:
        raise TypeError_(f"Unsupported data type: {text}")
    if base == "VARCHAR":
        length = nums[0] if nums else 1
        if not 1 <= length <= MAX_VARCHAR_LENGTH:
            raise TypeError_(f"Varchar size must between 1 and {MAX_VARCHAR_LENGTH}")
        return ColumnType(name=base, length=length)
    if base == "CHAR":
        length = nums[0] if nums else 1
        if not 1 <= length <= MAX_CHAR_LENGTH:
            raise TypeError_(f"Char size must between 1 and {MAX_CHAR_LENGTH}")
        return ColumnType(name=base, length=length)
    if base == "DECIMAL":
        precision = nums[0] if nums else 9
        scale = nums[1] if len(nums) > 1 else 0
        limit = MAX_DECIMAL256_PRECISION if decimal256 else MAX_DECIMAL_PRECISION
        if not 1 <= precision <= limit:
            raise TypeError_(
                f"Precision of decimal must between 1 and {limit}. Precision was set to: {precision}."
            )
        if not 0 <= scale <= precision:
            raise TypeError_(f"Scale of decimal must between 0 and precision. Scale was set to: {scale}.")
        return ColumnType(name=base, precision=precision, scale=scale)
    if base in ("DATETIME", "TIME"):
        p = nums[0] if nums else 0
        if not 0 <= p <= 6:
            raise TypeError_(f"Scale of Datetime/Time must between 0 and 6. Scale was set to: {p}")
        return ColumnType(name=base, precision=p)
    # Doris' parser reads the arguments of every other type and ignores them: INT(11) display
    # widths, and FLOAT(53) / DOUBLE(16) as SQLAlchemy and pandas spell floats, stay FLOAT / DOUBLE.
    return ColumnType(name=base)


def make_nested(name: str, children: list[ColumnType], field_names: list[str] | None = None) -> ColumnType:
    """An ARRAY / MAP / STRUCT of already-checked child types, with Doris' rules on them."""
    name = name.upper()
    depth = 1 + max((nesting_depth(c) for c in children), default=0)
    if depth > MAX_NESTING:
        raise TypeError_(f"Type exceeds the maximum nesting depth of {MAX_NESTING}")
    for c in children:
        if c.is_state or c.name in ("VARIANT", "TIME"):
            raise TypeError_(f"{name} unsupported sub-type: {c.to_sql()}")
    if name == "ARRAY":
        if len(children) != 1:
            raise TypeError_("ARRAY takes one element type")
        return ColumnType.array(children[0])
    if name == "MAP":
        if len(children) != 2:
            raise TypeError_("MAP takes a key type and a value type")
        if children[0].is_nested:
            raise TypeError_(f"MAP unsupported sub-type: {children[0].to_sql()}")
        return ColumnType.map(children[0], children[1])
    if name == "STRUCT":
        names = list(field_names or [])
        if not children or len(names) != len(children):
            raise TypeError_("STRUCT needs at least one named field")
        seen: set[str] = set()
        for n in names:
            if n.lower() in seen:
                raise TypeError_(f"Duplicate field name {n} in struct")
            seen.add(n.lower())
        return ColumnType.struct(list(zip(names, children, strict=True)))
    raise TypeError_(f"Unsupported data type: {name}")


def nesting_depth(t: ColumnType) -> int:
    """Levels of ARRAY / MAP / STRUCT in `t` (0 for a scalar), walked without recursion."""
    deepest, todo = 0, [(t, 0)]
    while todo:
        node, depth = todo.pop()
        if node.is_nested:
            depth += 1
            deepest = max(deepest, depth)
            todo.extend((c, depth) for c in node.children)
    return deepest


_SPARK_SCALARS = {
    "tinyint": "TINYINT",
    "byte": "TINYINT",
    "smallint": "SMALLINT",
    "short": "SMALLINT",
    "int": "INT",
    "integer": "INT",
    "bigint": "BIGINT",
    "long": "BIGINT",
    "float": "FLOAT",
    "real": "FLOAT",
    "double": "DOUBLE",
    "date": "DATE",
    "timestamp": "DATETIME",
    "timestamp_ntz": "DATETIME",
    "timestamp_ltz": "DATETIME",
    "boolean": "BOOLEAN",
    "variant": "VARIANT",
}
_SPARK_NESTED = {"array": "ARRAY", "map": "MAP", "struct": "STRUCT"}
_SPARK_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)*`)|([A-Za-z_][A-Za-z0-9_]*(?:\([^)]*\))?)|([<>,:]))")


def from_spark_type_name(simple: str) -> ColumnType:
    """The Doris type of a Spark simpleString type (a query result's column): scalars
    (`decimal(76,2)`, `timestamp`, `variant`; strings, binaries and anything else as STRING) and
    nested ones (`array<int>`, `map<string,int>`, `struct<a:int,b:array<string>>`), read with an
    explicit stack. A text that is no type string is STRING."""
    try:
        return _parse_spark_type(simple)
    except (ValueError, IndexError, KeyError):
        return ColumnType(name="STRING")


def _spark_scalar(word: str) -> ColumnType:
    base, _, args = word.lower().partition("(")
    nums = [int(a) for a in args.rstrip(")").split(",") if a.strip()] if args else []
    if base == "decimal":
        p, sc = (nums + [10, 0][len(nums) :])[:2] if nums else (10, 0)
        return ColumnType(name="DECIMAL", precision=p, scale=sc)
    if base == "time":
        return ColumnType(name="TIME", precision=nums[0] if nums else 0)
    return ColumnType(name=_SPARK_SCALARS.get(base, "STRING"))


def _parse_spark_type(simple: str) -> ColumnType:
    tokens: list[str] = []
    pos, text = 0, simple.strip()
    while pos < len(text):
        m = _SPARK_TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(simple)
        tokens.append(m.group(1) or m.group(2) or m.group(3))
        pos = m.end()
    # A frame per open ARRAY / MAP / STRUCT: [name, children, field names, expecting a name].
    frames: list[list] = []
    result: ColumnType | None = None
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        frame = frames[-1] if frames else None
        if frame is not None and frame[0] == "STRUCT" and frame[3]:  # a field's name, then ':'
            if tokens[i + 1] != ":":
                raise ValueError(simple)
            frame[2].append(tok[1:-1].replace("``", "`") if tok.startswith("`") else tok)
            frame[3] = False
            i += 2
            continue
        if tok == ",":
            if frame is None:
                raise ValueError(simple)
            frame[3] = frame[0] == "STRUCT"
            i += 1
            continue
        if tok == ">":
            if frame is None:
                raise ValueError(simple)
            frames.pop()
            name, children, names = frame[0], frame[1], frame[2]
            if name == "ARRAY":
                t = ColumnType.array(children[0])
            elif name == "MAP":
                t = ColumnType.map(children[0], children[1])
            else:
                t = ColumnType.struct(list(zip(names, children, strict=True)))
        elif i + 1 < len(tokens) and tokens[i + 1] == "<" and tok.lower() in _SPARK_NESTED:
            if len(frames) > 4 * MAX_NESTING:
                raise ValueError(simple)
            kind = _SPARK_NESTED[tok.lower()]
            frames.append([kind, [], [], kind == "STRUCT"])
            i += 2
            continue
        elif tok in "<:":
            raise ValueError(simple)
        else:
            t = _spark_scalar(tok)
        i += 1
        if frames:
            frames[-1][1].append(t)
        elif result is None:
            result = t
        else:
            raise ValueError(simple)
    if frames or result is None:
        raise ValueError(simple)
    return result
