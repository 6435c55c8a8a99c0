"""JSON values as the text a load gives a column: the one JSON value → text rule.

A JSON value read into a text source column — every JSON value of a stream load (whose
conversion then reads the text into the column's type), every value of the S3 table
function's and streaming jobs' JSON files — becomes:

* a string: its characters (unescaped);
* a number: its digits exactly as the document wrote them (documents are decoded with
  `EXACT_JSON`, which keeps a non-integer number as a `Decimal` of its text and an integer of
  any size as an int, so a big integer or a long decimal loses no digit to a float); exponent
  forms are spelled out (`1e5` → `100000`), so a DECIMAL or integer column reads them;
* true / false: `true` / `false`;
* an object or an array: its compact JSON text, numbers again exactly as written;
* null: NULL.

Doris' JSON reader writes the raw JSON text of a number, object or array it loads into a text
column, which the exact digits and the nested JSON text keep. Two departures, kept as Galene has
always loaded them: exponents are spelled out (Doris keeps `1e5`), and booleans are `true` /
`false` (Doris writes `1` / `0`).
"""

from __future__ import annotations

from decimal import Decimal

import msgspec

# Floats decode to their exact text wrapped as Decimal: BIGINT/DECIMAL values lose no digits.
EXACT_JSON = msgspec.json.Decoder(float_hook=Decimal)
_JSON_OUT = msgspec.json.Encoder(decimal_format="number")


def json_value_text(value) -> str | None:
    """A value decoded by `EXACT_JSON` as the text of a source column (None for JSON null)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, Decimal):
        return format(value, "f")  # exponent forms spelled out: 1E+5 -> 100000
    return _JSON_OUT.encode(value).decode()
