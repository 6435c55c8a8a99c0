"""Doris' integer CAST on the engines: CAST(x AS TINYINT | SMALLINT | INT | BIGINT | LARGEINT)
as Spark SQL text that Apache Spark and Sail both run, and its value for a constant.

The rule is Doris' (galene/common/intcast.py, its one home: '20.50' → 20, '.5'/'1e3'/'0x10' →
NULL, doubles and decimals truncated, overflow → NULL); the engines' own casts differ from
Doris and from each other (Spark saturates 1e20 to BIGINT's maximum, wraps 300 into TINYINT and
reads '.5' as 0; Sail fails the query on CAST('20.50' AS BIGINT) and on any overflow). The
translation (`galene.sql.functions`) does not know the operand's type, so the Spark SQL
dispatches on `typeof` (every branch must type-check for every operand type); constants are
folded with the rule itself.
"""

from __future__ import annotations

import functools

import pyarrow as pa
from sqlglot import exp

from galene.common import intcast

# LARGEINT values the engines compute with are DECIMAL(38, 0): a CAST answers NULL for values
# beyond 38 digits (Apache Spark cannot hold them; see docs/ARCHITECTURE.md, LARGEINT).
LARGEINT_CAST_DIGITS = 38


def cast_constant(text: str, name: str) -> int | None:
    """CAST(<text> AS <name>) by Doris' rule; None is NULL."""
    values, ok = intcast.parse_int_text(pa.array([text], pa.string()), name)
    if not ok[0]:
        return None
    result = int(values[0].as_py())
    if len(str(abs(result))) > LARGEINT_CAST_DIGITS:
        return None
    return result


@functools.lru_cache(maxsize=8)
def integer_cast_template(name: str) -> str:
    """The Spark SQL of CAST(__x AS <name>) for an operand of any type.

    The operand is only ever read as text (`CAST(__x AS STRING)`, valid for every type on both
    engines), and every conversion is a TRY_CAST or cannot fail: Spark's analyzer checks every
    branch against the operand's type (TRY_CAST follows ANSI rules, which refuse DATE → INT),
    and Sail folds a constant operand through the branches a CASE does not take (a plain CAST
    there, 'abc' AS DOUBLE, fails the query). Strings go through intcast's regular expression
    (`$1$2` is the canonical integer); integers' text through TRY_CAST (NULL on overflow);
    decimals as strings (Spark writes those below 1e-6 in E notation: they truncate to 0);
    doubles as TRY_CAST of their (round-tripping) text, which truncates and answers NULL on
    overflow, NaN and infinity, with an explicit upper bound (Spark's TRY_CAST(2^63 AS BIGINT)
    saturates); booleans 1/0; dates and datetimes their digits (yyyymmdd[hhmmss]) where Doris
    casts them; anything else NULL.
    """
    regex = exp.Literal.string(intcast.INT_TEXT_REGEX).sql(dialect="spark")
    text = "CAST(__x AS STRING)"
    number = f"try_cast({text} AS DOUBLE)"
    target = "DECIMAL(38, 0)" if name == "LARGEINT" else name
    from_text = f"CASE WHEN {text} RLIKE {regex} THEN try_cast(regexp_replace({text}, {regex}, '$1$2') AS {target}) END"
    if name == "LARGEINT":
        # Doubles below 2^63 truncate through BIGINT (a decimal cast would round); larger ones
        # are whole numbers already.
        from_double = (
            f"CASE WHEN abs({number}) < CAST(9223372036854775808 AS DOUBLE) "
            f"THEN try_cast(try_cast({number} AS BIGINT) AS {target}) ELSE try_cast({number} AS {target}) END"
        )
    else:
        hi = intcast.INT_BOUNDS[name][1]
        from_double = f"CASE WHEN {number} < CAST({hi + 1} AS DOUBLE) THEN try_cast({number} AS {target}) END"
    digits = f"regexp_replace({text}, '[^0-9]', '')"
    temporal = ""
    if name in ("INT", "BIGINT", "LARGEINT"):  # Doris casts a date to INT and wider
        temporal += f"WHEN typeof(__x) = 'date' THEN try_cast(substring({digits}, 1, 8) AS {target}) "
    if name in ("BIGINT", "LARGEINT"):  # … and a datetime to BIGINT and wider
        temporal += (
            f"WHEN typeof(__x) LIKE 'timestamp%' THEN try_cast(substring({digits}, 1, 14) AS {target}) "
        )
    return (
        f"CASE WHEN typeof(__x) = 'string' THEN {from_text} "
        f"WHEN typeof(__x) IN ('tinyint', 'smallint', 'int', 'bigint') THEN try_cast({text} AS {target}) "
        f"WHEN typeof(__x) LIKE 'decimal%' THEN CASE WHEN {text} LIKE '%E%' THEN CAST(0 AS {target}) ELSE {from_text} END "
        f"WHEN typeof(__x) IN ('double', 'float') THEN {from_double} "
        f"WHEN typeof(__x) = 'boolean' THEN CASE {text} WHEN 'true' THEN CAST(1 AS {target}) "
        f"WHEN 'false' THEN CAST(0 AS {target}) END "
        f"{temporal}END"
    )
