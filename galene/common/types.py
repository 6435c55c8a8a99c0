"""Column types: the Doris type model and its mapping to Arrow, Spark and MySQL.

One `ColumnType` value describes a Doris column type in canonical form (aliases such as
DATEV2, DATETIMEV2, DECIMALV3, INTEGER are folded on parse). Everything else in Galene —
the BE's Arrow conversion, the Spark read schema, SHOW CREATE TABLE, result-set metadata —
derives from it here, so the mappings live in one place.
"""

from __future__ import annotations

import re

import msgspec
import pyarrow as pa

# Canonical Doris type names.
INTEGER_TYPES = ("TINYINT", "SMALLINT", "INT", "BIGINT", "LARGEINT")
FLOAT_TYPES = ("FLOAT", "DOUBLE")
STRING_TYPES = ("CHAR", "VARCHAR", "STRING", "JSON")
ALL_TYPES = INTEGER_TYPES + FLOAT_TYPES + STRING_TYPES + ("DECIMAL", "DATE", "DATETIME", "BOOLEAN")

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
    precision: int = 0  # DECIMAL precision; DATETIME fractional-second precision
    scale: int = 0  # DECIMAL scale

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

    # --- renderings -----------------------------------------------------------------
    def to_sql(self) -> str:
        """The type as Doris prints it in SHOW CREATE TABLE (lower case, v2 names)."""
        n = self.name
        if n in ("CHAR", "VARCHAR"):
            return f"{n.lower()}({self.length})"
        if n == "DECIMAL":
            return f"decimal({self.precision},{self.scale})"
        if n == "DATETIME":
            return f"datetime({self.precision})" if self.precision else "datetime"
        if n == "STRING":
            return "text"
        return n.lower()

    def to_desc(self) -> str:
        """The type as DESC / SHOW COLUMNS print it (Doris prints upper-case names)."""
        n = self.name
        if n in ("CHAR", "VARCHAR"):
            return f"{n}({self.length})"
        if n == "DECIMAL":
            return f"DECIMAL({self.precision}, {self.scale})"
        if n == "DATETIME":
            return f"DATETIME({self.precision})" if self.precision else "DATETIME"
        if n == "STRING":
            return "TEXT"
        return n

    def to_arrow(self) -> pa.DataType:
        return _ARROW[self.name](self)

    def to_spark_ddl(self) -> str:
        """Spark SQL DDL type string for reading this column."""
        return _SPARK[self.name](self)


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
    "DECIMAL": lambda t: pa.decimal128(t.precision, t.scale),
    "DATE": lambda t: pa.date32(),
    "DATETIME": lambda t: pa.timestamp("us"),
    "CHAR": lambda t: pa.string(),
    "VARCHAR": lambda t: pa.string(),
    "STRING": lambda t: pa.string(),
    "JSON": lambda t: pa.string(),
    "BOOLEAN": lambda t: pa.bool_(),
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


def make_type(base: str, nums: list[int], text: str | None = None) -> ColumnType:
    """Build a canonical type from a base name and its numeric arguments, with Doris limits."""
    text = text or base
    base = _ALIASES.get(base.upper(), base.upper())
    if base not in ALL_TYPES:
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
        if not 1 <= precision <= 38:
            raise TypeError_(
                f"Precision of decimal must between 1 and 38. Precision was set to: {precision}."
            )
        if not 0 <= scale <= precision:
            raise TypeError_(f"Scale of decimal must between 0 and precision. Scale was set to: {scale}.")
        return ColumnType(name=base, precision=precision, scale=scale)
    if base == "DATETIME":
        p = nums[0] if nums else 0
        if not 0 <= p <= 6:
            raise TypeError_(f"Scale of Datetime/Time must between 0 and 6. Scale was set to: {p}")
        return ColumnType(name=base, precision=p)
    # Doris' parser reads the arguments of every other type and ignores them: INT(11) display
    # widths, and FLOAT(53) / DOUBLE(16) as SQLAlchemy and pandas spell floats, stay FLOAT / DOUBLE.
    return ColumnType(name=base)


def from_spark_type_name(simple: str) -> ColumnType:
    """Map a Spark simpleString type (result of a query) back to a Doris type for result metadata."""
    s = simple.lower()
    if s.startswith("decimal"):
        m = re.match(r"decimal\((\d+),(\d+)\)", s)
        p, sc = (int(m.group(1)), int(m.group(2))) if m else (38, 18)
        return ColumnType(name="DECIMAL", precision=p, scale=sc)
    return ColumnType(
        name={
            "tinyint": "TINYINT",
            "smallint": "SMALLINT",
            "int": "INT",
            "bigint": "BIGINT",
            "float": "FLOAT",
            "double": "DOUBLE",
            "date": "DATE",
            "timestamp": "DATETIME",
            "timestamp_ntz": "DATETIME",
            "boolean": "BOOLEAN",
        }.get(s, "STRING")
    )
