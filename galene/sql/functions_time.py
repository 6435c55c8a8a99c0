"""Doris' TIME values and the precision of the current time on Spark: the TIME family of the
Doris → Spark function translation (`galene.sql.functions` dispatches here).

Neither engine has a TIME type that both share, and Doris refuses TIME columns, so a TIME value
is its text 'HH:MM:SS[.ffffff]' (galene/common/types.py; hours run past 24 and may be negative,
to Doris' ±838:59:59). Doris' rules (docs, sql-manual/sql-functions/scalar-functions/
date-time-functions/*; sql-manual/basic-element/sql-data-types/date-time/TIME.md):

* CAST(x AS TIME[(p)]): 'H:M[:S[.f]]' text → the normalized time; a DATETIME (or its text)
  → its time of day; a number HHMMSS → that time; NULL otherwise. p fractional digits (0: none).
* TIMEDIFF(a, b): a - b as a TIME (sign, at least two hour digits), clamped to ±838:59:59;
  SEC_TO_TIME(n); TIME_TO_SEC(t); CURTIME()/CURRENT_TIME() → the current time of day.
* NOW([p]) / CURRENT_TIMESTAMP([p]) / LOCALTIME / LOCALTIMESTAMP: the current DATETIME with p
  (0..6, default 0) fractional digits (truncated, as Doris takes the clock).
"""

from __future__ import annotations

from sqlglot import exp

from galene.common.errors import GaleneError
from galene.sql.sqlbuild import int_value, let, template

NAMES = frozenset({"NOW", "SEC_TO_TIME", "TIME_TO_SEC", "TIMEDIFF", "CURTIME", "CURRENT_TIME"})

MAX_TIME_SECONDS = 838 * 3600 + 59 * 60 + 59


def precision(node: exp.Expr | None, name: str) -> int:
    if node is None:
        return 0
    value = int_value(node.this if isinstance(node, exp.DataTypeParam) else node)
    if value is None or not 0 <= value <= 6:
        raise GaleneError(f"{name}: the precision must be a constant from 0 to 6")
    return value


def current_timestamp(p: int) -> exp.Expr:
    """The current DATETIME (TIMESTAMP_NTZ) with p fractional digits."""
    if p == 0:
        return template("CAST(date_trunc('SECOND', current_timestamp()) AS TIMESTAMP_NTZ)")
    if p == 6:
        return template("CAST(current_timestamp() AS TIMESTAMP_NTZ)")
    unit = 10 ** (6 - p)
    return template(
        f"CAST(timestamp_micros(unix_micros(current_timestamp()) div {unit} * {unit}) AS TIMESTAMP_NTZ)"
    )


def _from_micros(micros: exp.Expr, p: int) -> exp.Expr:
    """TIME text of a signed microsecond count (clamped to Doris' range), p fractional digits."""
    limit = MAX_TIME_SECONDS * 1_000_000 + (999_999 // 10 ** (6 - p)) * 10 ** (6 - p)
    frac = f", '.', substring(lpad(CAST(abs(__m) % 1000000 AS STRING), 6, '0'), 1, {p})" if p else ""
    return let(
        template(f"IF(__u IS NULL, NULL, greatest(least(__u, {limit}), -{limit}))", u=micros),
        lambda m: template(
            "CASE WHEN __m IS NULL THEN NULL ELSE concat(IF(__m < 0, '-', ''),"
            " IF(abs(__m) < 36000000000, '0', ''), CAST(abs(__m) div 3600000000 AS STRING), ':',"
            " lpad(CAST(abs(__m) div 60000000 % 60 AS STRING), 2, '0'), ':',"
            f" lpad(CAST(abs(__m) div 1000000 % 60 AS STRING), 2, '0'){frac}) END",
            m=m,
        ),
    )


def to_time(value: exp.Expr, p: int) -> exp.Expr:
    """CAST(value AS TIME(p)) as text."""
    text = template("trim(CAST(__v AS STRING))", v=value)
    return let(text, lambda t: _from_micros(_clock_micros(t), p))


def _clock_micros(t: exp.Expr) -> exp.Expr:
    """Signed microseconds of a TIME text, a DATETIME text or an HHMMSS number (NULL otherwise)."""
    clock = (
        "(IF(__t LIKE '-%', -1, 1) * (try_cast(split(ltrim('-', __t), ':')[0] AS BIGINT) * 3600000000"
        " + try_cast(split(__t, ':')[1] AS BIGINT) * 60000000"
        " + coalesce(try_cast(try_cast(split(__t, ':')[2] AS DECIMAL(9, 6)) * 1000000 AS BIGINT), 0)))"
    )
    return template(
        "CASE WHEN __t RLIKE '^-?[0-9]{1,3}:[0-5]?[0-9](:[0-5]?[0-9]([.][0-9]{1,6})?)?$' THEN " + clock
        + " WHEN __t RLIKE '^[0-9]{1,6}$' AND try_cast(__t AS INT) % 100 < 60 AND try_cast(__t AS INT) div 100 % 100 < 60"
        " THEN (try_cast(__t AS BIGINT) div 10000 * 3600 + try_cast(__t AS BIGINT) div 100 % 100 * 60"
        " + try_cast(__t AS BIGINT) % 100) * 1000000"
        " WHEN try_cast(__t AS TIMESTAMP_NTZ) IS NOT NULL AND __t LIKE '%-%'"
        " THEN unix_micros(CAST(try_cast(__t AS TIMESTAMP_NTZ) AS TIMESTAMP))"
        " - unix_micros(CAST(CAST(try_cast(__t AS TIMESTAMP_NTZ) AS DATE) AS TIMESTAMP)) END",
        t=t,
    )  # fmt: skip


def _micros_of(value: exp.Expr) -> exp.Expr:
    return template("unix_micros(CAST(CAST(__v AS TIMESTAMP_NTZ) AS TIMESTAMP))", v=value)


def rewrite(name: str, args: list[exp.Expr]) -> exp.Expr | None:
    n = len(args)
    if name == "NOW" and n <= 1:
        return current_timestamp(precision(args[0] if args else None, "now"))
    if name in ("CURTIME", "CURRENT_TIME") and n <= 1:
        p = precision(args[0] if args else None, name.lower())
        return to_time(current_timestamp(p), p)
    if name == "TIMEDIFF" and n == 2:
        return _from_micros(template("__a - __b", a=_micros_of(args[0]), b=_micros_of(args[1])), 0)
    if name == "SEC_TO_TIME" and n == 1:
        return _from_micros(template("CAST(__s AS BIGINT) * 1000000", s=args[0]), 0)
    if name == "TIME_TO_SEC" and n == 1:
        text = template("trim(CAST(__v AS STRING))", v=args[0])
        return let(text, lambda t: template("CAST(__m div 1000000 AS INT)", m=_clock_micros(t)))
    return None


def cast_to_time(node: exp.Cast) -> exp.Expr:
    params = node.to.expressions
    return to_time(node.this, precision(params[0] if params else None, "TIME"))
