"""Messy inputs more than one test file loads."""

from __future__ import annotations

# One JSON document per line, the values a text column can get from JSON: nested object, array,
# float, big integer, a number with more digits than a double keeps, an exponent, unicode
# (escaped and raw, a surrogate pair), null, a boolean.
JSON_VALUES = (
    b'{"k": 1, "v": {"a": 1, "b": [1, 2.50, {"c": null}], "d": "\\u00e9"}}\n'
    b'{"k": 2, "v": [1, "x", true, 0.1]}\n'
    b'{"k": 3, "v": 1.5}\n'
    b'{"k": 4, "v": 123456789012345678901234567890}\n'
    b'{"k": 5, "v": 12345.678901234567890123}\n'
    b'{"k": 6, "v": 1e5}\n'
    b'{"k": 7, "v": "h\xc3\xa9llo \xe2\x98\x83 \\ud834\\udd1e"}\n'
    b'{"k": 8, "v": null}\n'
    b'{"k": 9, "v": false}\n'
)
