"""Doris functions on Spark: the function half of the Doris → Spark SQL translation.

`rewrite_function(node)` is called by `galene.sql.translate` on every node of a parsed Doris
query, children before parents, and returns the node to put in its place: a Spark SQL
expression that computes what Doris computes. Everything here is pure (sqlglot trees in,
sqlglot trees out) and engine-neutral: the rewrites use only functions that Apache Spark and
Sail both implement the same way (checked by tests/integration/test_doris_functions.py on
both), so where an engine's own function differs from Doris (Sail's TIMESTAMPDIFF(DAY), its
date patterns with quoted text, Spark's regex classes) the rewrite spells the computation out.
The session runs with `spark.sql.ansi.enabled=false` and the UTC time zone.

The functions of the nested, JSON/VARIANT, IP, aggregate-state and TIME types live in their
own modules, dispatched by name from `_FAMILIES` (the dialect parses those names as plain calls):
galene/sql/functions_nested.py (ARRAY/MAP/STRUCT, subscripts, explode_*), functions_json.py
(JSON functions, VARIANT paths and casts), functions_ip.py, functions_state.py (BITMAP, HLL,
QUANTILE_STATE), functions_time.py (TIME, NOW(p)); their values are checked on both engines by
tests/integration/test_types_functions.py. CAST(x AS DATETIME(p)) rounds to p digits here.

The table (Doris → what it becomes), with the Doris source of each expected value in
tests/integration/test_doris_functions.py:

* DATE_ADD/DATE_SUB/ADDDATE/SUBDATE(d, INTERVAL n unit), <UNIT>S_ADD/_SUB, TIMESTAMPADD →
  interval arithmetic (`d + INTERVAL '3' HOUR`, QUARTER = 3 months, WEEK = 7 days); a DATE
  stays a DATE for day and larger units, becomes a DATETIME (TIMESTAMP_NTZ) for smaller ones;
  month arithmetic clamps to the month's end as Doris does.
* DATEDIFF(a, b) → `CAST(datediff(a, b) AS INT)` (days, time ignored).
* TIMESTAMPDIFF(unit, a, b), <UNIT>S_DIFF(b, a) → for YEAR/QUARTER/MONTH a whole-month count
  less one when b's (day, time) is before a's (Doris' datetime_diff), for WEEK/DAY a day count
  less one when b's time of day is before a's, for HOUR/MINUTE/SECOND Spark's timestampdiff.
* DATE_FORMAT(d, fmt), FROM_UNIXTIME(ts, fmt) with MySQL formats → `date_format` over Java
  patterns for the plain fields, concatenated with literal text and with expressions for the
  fields Java has no letter for (%D %w %U %u %V %v %X %x); Doris' three Java-style formats
  (`yyyy-MM-dd` …) are read as their MySQL equivalents.
* STR_TO_DATE(s, fmt), UNIX_TIMESTAMP(s, fmt) → the format compiled to a regular expression
  whose groups are assembled into `yyyy-MM-dd HH:mm:ss.ffffff` and CAST: Doris' lenient
  parser (1-2 digit fields, skipped spaces, trailing text ignored, NULL on mismatch or an
  impossible date); a DATE when the format has no time field, else a DATETIME.
* UNIX_TIMESTAMP(d) → INT seconds (0 before 1970); FROM_UNIXTIME(ts) → `from_unixtime`.
* DATE_TRUNC(d, unit) / DATE_TRUNC(unit, d) → `date_trunc` as TIMESTAMP_NTZ (`trunc` → DATE
  for a DATE operand); WEEK/YEARWEEK(d[, mode]) and %U/%u/%V/%v/%X/%x → MySQL's calc_week
  for the constant mode, in closed form (the week's start and anchor day); TO_DAYS/FROM_DAYS/MAKEDATE, DAYNAME (full name),
  MICROSECOND, TIMESTAMP(d).
* GROUP_CONCAT([DISTINCT] x [, sep | SEPARATOR sep] [ORDER BY …]) → `concat_ws(sep,
  collect_list|collect_set(x))`, ordered through (keys, value) structs; default sep ", ".
* GET_JSON_STRING/JSON_EXTRACT_STRING → `get_json_object`; GET_JSON_INT/BIGINT/DOUBLE and
  JSON_EXTRACT_INT/BIGINT/DOUBLE/BOOL → its value CAST; JSON_EXTRACT(j, p…) → JSON text
  through VARIANT (strings keep their quotes, several paths give an array); JSON_OBJECT,
  JSON_ARRAY → JSON text (NULL → null); JSON_VALID → 1/0.
* LENGTH → bytes (`octet_length`), CHAR_LENGTH → characters; LOCATE(sub, s, pos) with Doris'
  empty-substring rules; LPAD/RPAD with an empty pad → ''; SPLIT_PART(s, sep, n) → the n-th
  field (from the right when n < 0, NULL out of range) of a literal split; REGEXP_EXTRACT
  keeps its group argument; POSIX classes ([[:digit:]] …) in regex literals → ASCII ranges
  (Spark's Java regexes do not know them); RE2 back-references \\1 → $1 in replacements;
  STRLEFT/STRRIGHT, NULL_OR_EMPTY/NOT_NULL_OR_EMPTY; TRUNCATE(x, d) → floor/ceil at scale d.
* Integer and decimal literal arithmetic (`SELECT 1 + 1`, `SELECT 5.0 / 3`) → folded here with
  Doris' result types (TINYINT + TINYINT → SMALLINT, INT + INT → BIGINT, decimal p/s rules,
  integer `/` → DOUBLE), so the MySQL result column carries Doris' type.
* CAST(x AS DATETIME|LARGEINT|UNSIGNED|VARCHAR|CHAR|TEXT|JSON) → TIMESTAMP_NTZ, DECIMAL(38, 0), STRING.
* CAST(x AS TINYINT|SMALLINT|INT|BIGINT|LARGEINT) → Doris' integer rule (galene/common/intcast.py:
  '20.50' → 20, '.5'/'1e3'/'0x10' → NULL, doubles and decimals truncated, overflow → NULL):
  folded for constants, otherwise a CASE on `typeof(x)` (text through intcast's regular
  expression, doubles range-checked, narrower integers as they are).
* Window functions: ROW_NUMBER/RANK/DENSE_RANK/NTILE → CAST(… AS BIGINT) (Doris' type; Spark's
  is INT); FIRST_VALUE/LAST_VALUE(x, ignore_null) with a constant boolean or number → Spark's
  `first_value(x, true)`, or the one-argument form when it is false.
* Unchanged (same meaning on both engines): IFNULL/NVL/COALESCE/NULLIF/IF, SUBSTRING_INDEX,
  CONCAT_WS (skips NULLs), REPLACE, REVERSE, MD5, DIV and % (sign of the dividend), `/` on
  integers (DOUBLE, NULL on division by zero), NULL ordering (NULLS FIRST for ASC, LAST for
  DESC), LIMIT m, n / LIMIT n OFFSET m, the other window functions (LAG/LEAD with a default,
  NTH_VALUE, CUME_DIST, PERCENT_RANK, aggregates over frames).
"""

from __future__ import annotations

import re
from decimal import ROUND_DOWN, Decimal, InvalidOperation

import sqlglot
from sqlglot import exp

from galene.common import intcast
from galene.common.errors import GaleneError
from galene.sql import (
    functions_ip,
    functions_json,
    functions_nested,
    functions_state,
    functions_time,
    int_cast,
    sqlbuild,
)

# Doris' GROUP_CONCAT joins with ", " when no separator is given (MySQL uses ",").
DEFAULT_GROUP_CONCAT_SEPARATOR = ", "


# --- building blocks (galene/sql/sqlbuild.py) -------------------------------------------
_fn = sqlbuild.call
_str = sqlbuild.string
_num = sqlbuild.number
_cast = sqlbuild.cast
_needs_parens = sqlbuild.needs_parens
_wrap = sqlbuild.wrap
_tpl = sqlbuild.template
_string_value = sqlbuild.string_value
_int_value = sqlbuild.int_value


def _is_null(node: exp.Expr) -> bool:
    return isinstance(node, exp.Null)


# Operand conventions: Doris reads a string where a date is expected as a DATE or DATETIME
# depending on whether it has a time part; Spark needs the type spelled out.
def _datetime_operand(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Null):
        return _cast(node, "TIMESTAMP_NTZ")
    text = _string_value(node)
    if text is not None:
        return _cast(node, "TIMESTAMP_NTZ" if len(text.strip()) > 10 else "DATE")
    return node


def _as_timestamp(node: exp.Expr) -> exp.Expr:
    """Any date-like operand as TIMESTAMP_NTZ (a DATE at midnight)."""
    if isinstance(node, exp.Cast) and node.to.this == exp.DType.TIMESTAMPNTZ:
        return node
    return _cast(node, "TIMESTAMP_NTZ")


def _is_date_typed(node: exp.Expr) -> bool:
    """Whether `node` is known to be a DATE without knowing column types."""
    if isinstance(node, exp.Cast):
        return node.to.this == exp.DType.DATE
    if isinstance(node, (exp.TsOrDsToDate, exp.CurrentDate, exp.LastDay, exp.StrToDate)):
        return True
    text = _string_value(node)
    return text is not None and len(text.strip()) <= 10


# --- date arithmetic --------------------------------------------------------------------
# unit → (step per unit, Spark interval unit)
_INTERVAL_UNITS = {
    "YEAR": ("1", "YEAR"),
    "QUARTER": ("3", "MONTH"),
    "MONTH": ("1", "MONTH"),
    "WEEK": ("7", "DAY"),
    "DAY": ("1", "DAY"),
    "HOUR": ("1", "HOUR"),
    "MINUTE": ("1", "MINUTE"),
    "SECOND": ("1", "SECOND"),
    "MILLISECOND": ("0.001", "SECOND"),
    "MICROSECOND": ("0.000001", "SECOND"),
}
_SUB_DAY_UNITS = ("HOUR", "MINUTE", "SECOND", "MILLISECOND", "MICROSECOND")


def _date_delta(node: exp.DateAdd | exp.DateSub | exp.TimestampAdd) -> exp.Expr:
    """DATE_ADD/DATE_SUB/X_ADD/X_SUB/TIMESTAMPADD as Spark interval arithmetic with Doris result
    types: a DATE stays a DATE for whole-day units, anything plus hours is a DATETIME."""
    unit = (node.text("unit") or "DAY").upper()
    if unit not in _INTERVAL_UNITS:
        return node
    step, spark_unit = _INTERVAL_UNITS[unit]
    amount = node.expression if node.expression is not None else _num(1)
    base = _datetime_operand(node.this)
    if unit in _SUB_DAY_UNITS:
        # Spark would turn DATE + hours into a session-time-zone TIMESTAMP; Doris DATETIME is NTZ.
        base = _as_timestamp(base)
    n = _int_value(amount)
    if n is not None:
        quantity = format(Decimal(step) * n, "f")
        interval: exp.Expr = exp.Interval(this=_str(quantity), unit=exp.var(spark_unit))
    elif unit in ("DAY", "WEEK"):
        # DATE + a day-time interval is a TIMESTAMP in Spark; a calendar interval of whole
        # days keeps it a DATE (and a TIMESTAMP_NTZ stays one).
        zero = _num(0)
        weeks, days = (amount, zero) if unit == "WEEK" else (zero, amount)
        interval = _fn("make_interval", zero, zero, weeks, days, zero, zero, zero)
    else:
        unit_interval = exp.Interval(this=_str(step), unit=exp.var(spark_unit))
        interval = exp.Mul(this=exp.Paren(this=amount), expression=unit_interval)
    op = exp.Sub if isinstance(node, exp.DateSub) else exp.Add
    return exp.Paren(this=op(this=_wrap(base), expression=interval))


# Doris X_DIFF(end, start) counts whole units from start to end.
_DIFF_UNITS = {
    "YEARS_DIFF": "YEAR",
    "QUARTERS_DIFF": "QUARTER",
    "MONTHS_DIFF": "MONTH",
    "WEEKS_DIFF": "WEEK",
    "DAYS_DIFF": "DAY",
    "HOURS_DIFF": "HOUR",
    "MINUTES_DIFF": "MINUTE",
    "SECONDS_DIFF": "SECOND",
    "MILLISECONDS_DIFF": "MILLISECOND",
    "MICROSECONDS_DIFF": "MICROSECOND",
}
# (Doris' datetime_diff) the remainder compared after counting months / years: later fields as
# one fixed-width string, so that string order is time order.
_REMAINDER_AFTER_MONTH = "ddHHmmssSSSSSS"
_REMAINDER_AFTER_YEAR = "MMddHHmmssSSSSSS"
_REMAINDER_AFTER_DAY = "HHmmssSSSSSS"


def _timestamp_diff(unit: str, start: exp.Expr, end: exp.Expr) -> exp.Expr:
    """Whole `unit`s from start to end, as Doris counts them (BIGINT)."""
    unit = unit.upper()
    a, b = _as_timestamp(_datetime_operand(start)), _as_timestamp(_datetime_operand(end))
    if unit in ("YEAR", "QUARTER", "MONTH"):
        if unit == "YEAR":
            base = "year(__b) - year(__a)"
            rem = _REMAINDER_AFTER_YEAR
        else:
            base = "(year(__b) - year(__a)) * 12 + month(__b) - month(__a)"
            rem = _REMAINDER_AFTER_MONTH
        counted = (
            f"CASE WHEN ({base}) > 0 AND date_format(__b, '{rem}') < date_format(__a, '{rem}') "
            f"THEN ({base}) - 1 "
            f"WHEN ({base}) < 0 AND date_format(__b, '{rem}') > date_format(__a, '{rem}') "
            f"THEN ({base}) + 1 ELSE ({base}) END"
        )
        if unit == "QUARTER":
            counted = f"({counted}) div 3"
        return _tpl(f"CAST({counted} AS BIGINT)", a=a, b=b)
    if unit in ("DAY", "WEEK"):
        rem = _REMAINDER_AFTER_DAY
        base = "datediff(__b, __a)"
        counted = (
            f"CASE WHEN {base} > 0 AND date_format(__b, '{rem}') < date_format(__a, '{rem}') "
            f"THEN {base} - 1 "
            f"WHEN {base} < 0 AND date_format(__b, '{rem}') > date_format(__a, '{rem}') "
            f"THEN {base} + 1 ELSE {base} END"
        )
        if unit == "WEEK":
            counted = f"({counted}) div 7"
        return _tpl(f"CAST({counted} AS BIGINT)", a=a, b=b)
    if unit in ("HOUR", "MINUTE", "SECOND", "MILLISECOND", "MICROSECOND"):
        return _fn("timestampdiff", exp.var(unit), a, b)
    raise GaleneError(
        f"Unsupported time stamp diff time unit: {unit}, supported time unit: "
        "YEAR/QUARTER/MONTH/WEEK/DAY/HOUR/MINUTE/SECOND"
    )


def _datediff(node: exp.DateDiff) -> exp.Expr:
    unit = node.text("unit").upper()
    if unit and unit != "DAY":
        return _timestamp_diff(unit, node.expression, node.this)
    a = _cast(_datetime_operand(node.this), "DATE")
    b = _cast(_datetime_operand(node.expression), "DATE")
    return _cast(_fn("datediff", a, b), "INT")  # Doris: INT (Sail's datediff is BIGINT)


# --- MySQL time formats -----------------------------------------------------------------
# sqlglot keeps a parsed format in Python strftime form; these are the spellings its MySQL
# mapping changes, back to MySQL's (the rest are the same in both).
_PY_TO_MYSQL = {
    "%-d": "%e",
    "%-m": "%c",
    "%-H": "%k",
    "%-I": "%l",
    "%B": "%M",
    "%M": "%i",
    "%A": "%W",
    "%W": "%u",
    "%G": "%x",
}
# Doris reads these three Java-style formats as their MySQL equivalents.
_JAVA_STYLE_FORMATS = {
    "yyyyMMdd": "%Y%m%d",
    "yyyy-MM-dd": "%Y-%m-%d",
    "yyyy-MM-dd HH:mm:ss": "%Y-%m-%d %H:%i:%s",
}


def mysql_format(node: exp.Expr | None, *, converted: bool) -> str | None:
    """The MySQL format of a format argument; `converted` when sqlglot stored it in Python
    strftime form (DATE_FORMAT, FROM_UNIXTIME, STR_TO_DATE) rather than as written."""
    text = _string_value(node)
    if text is None:
        return None
    if converted:
        out, i = [], 0
        while i < len(text):
            if text[i] == "%" and i + 1 < len(text):
                token = text[i : i + 3] if text[i + 1] == "-" and i + 2 < len(text) else text[i : i + 2]
                out.append(_PY_TO_MYSQL.get(token, token))
                i += len(token)
            else:
                out.append(text[i])
                i += 1
        text = "".join(out)
    return _JAVA_STYLE_FORMATS.get(text, text)


def _format_tokens(fmt: str) -> list[tuple[str, str]]:
    """('spec', letter) for each %x, ('text', char) for everything else."""
    tokens, i = [], 0
    while i < len(fmt):
        if fmt[i] == "%" and i + 1 < len(fmt):
            tokens.append(("spec", fmt[i + 1]))
            i += 2
        else:
            tokens.append(("text", fmt[i]))
            i += 1
    return tokens


# MySQL specifier → Java pattern (the fields both Spark's and Sail's date_format print alike).
_JAVA_FIELDS = {
    "Y": "yyyy",
    "y": "yy",
    "m": "MM",
    "c": "M",
    "d": "dd",
    "e": "d",
    "H": "HH",
    "k": "H",
    "h": "hh",
    "I": "hh",
    "l": "h",
    "i": "mm",
    "s": "ss",
    "S": "ss",
    "f": "SSSSSS",
    "p": "a",
    "M": "MMMM",
    "b": "MMM",
    "W": "EEEE",
    "a": "EEE",
    "j": "DDD",
    "T": "HH:mm:ss",
    "r": "hh:mm:ss a",
}
# Literal characters that may stand unquoted in a pattern (Sail refuses quoted text).
_PATTERN_SAFE_TEXT = set(" -:/.,")
# calc_week behaviour flags per week specifier (MySQL's make_date_time): bit 1 Monday first,
# bit 2 week-of-year mode, bit 4 "first week has the first weekday".
_WEEK_SPECIFIERS = {"U": 4, "u": 1, "V": 6, "v": 3}
_WEEK_YEAR_SPECIFIERS = {"X": 6, "x": 3}


def _format_datetime(value: exp.Expr, fmt: str) -> exp.Expr:
    """Doris DATE_FORMAT(value, fmt) for a constant MySQL format."""
    value = _datetime_operand(value)
    pieces: list[exp.Expr] = []
    run: list[str] = []  # a Java pattern: fields and the literal characters safe in one
    text: list[str] = []  # literal text waiting to become a string piece

    def flush() -> None:
        if run:
            pieces.append(_fn("date_format", value.copy(), _str("".join(run))))
            run.clear()
        if text:
            pieces.append(_str("".join(text)))
            text.clear()

    for kind, ch in _format_tokens(fmt):
        if kind == "spec" and ch in _JAVA_FIELDS:
            if text:
                flush()
            run.append(_JAVA_FIELDS[ch])
        elif kind == "spec" and (ch in ("D", "w") or ch in _WEEK_SPECIFIERS or ch in _WEEK_YEAR_SPECIFIERS):
            flush()
            pieces.append(_special_field(value, ch))
        elif run and not text and ch in _PATTERN_SAFE_TEXT:
            run.append(ch)
        else:
            # literal text; an unknown specifier prints its letter, %% prints %
            if run:
                flush()
            text.append(ch)
    flush()
    if all(isinstance(p, exp.Literal) for p in pieces):
        literal = _str("".join(p.name for p in pieces))
        return _tpl("IF(__v IS NULL, NULL, __t)", v=value, t=literal)
    return pieces[0] if len(pieces) == 1 else _fn("concat", *pieces)


def _special_field(value: exp.Expr, letter: str) -> exp.Expr:
    if letter == "D":
        return _tpl(
            "concat(CAST(day(__v) AS STRING), CASE WHEN day(__v) IN (11, 12, 13) THEN 'th' "
            "WHEN day(__v) % 10 = 1 THEN 'st' WHEN day(__v) % 10 = 2 THEN 'nd' "
            "WHEN day(__v) % 10 = 3 THEN 'rd' ELSE 'th' END)",
            v=value,
        )
    if letter == "w":
        return _tpl("CAST(dayofweek(__v) - 1 AS STRING)", v=value)
    date = _cast(value, "DATE")
    if letter in _WEEK_SPECIFIERS:
        week, _ = _calc_week(date, _WEEK_SPECIFIERS[letter])
        return _tpl("lpad(CAST(__w AS STRING), 2, '0')", w=week)
    _, year = _calc_week(date, _WEEK_YEAR_SPECIFIERS[letter])
    return _tpl("lpad(CAST(__y AS STRING), 4, '0')", y=year)


def _calc_week(date: exp.Expr, behaviour: int) -> tuple[exp.Expr, exp.Expr]:
    """(week, year) of a DATE as MySQL's calc_week counts them for a constant behaviour (Doris
    uses the same algorithm for WEEK, YEARWEEK and the %U %u %V %v %X %x formats); the year is
    the week's year for a WEEK_YEAR behaviour (YEARWEEK, %X, %x), else the date's.

    In closed form rather than calc_week's branches (checked equal to them for every day of
    1900-2100 and all eight behaviours): the week starts on `start` = the date less its days
    since Sunday (Monday); a week belongs to the year holding its `anchor`, its first day when
    week 1 is the first week with a first weekday in the year (WEEK_FIRST_WEEKDAY), else its
    fourth day (week 1 is the first with four days in the year). Without WEEK_YEAR the count
    runs from the date's own year (0 before its week 1, up to 53 after it)."""
    monday_first = bool(behaviour & 1)
    week_year = bool(behaviour & 2)
    first_weekday = bool(behaviour & 4)
    since_start = "(dayofweek(__d) + 5) % 7" if monday_first else "dayofweek(__d) - 1"
    start = f"date_add(__d, -({since_start}))"
    anchor = start if first_weekday else f"date_add({start}, 3)"
    if week_year:
        week = _tpl(f"CAST((dayofyear({anchor}) - 1) div 7 + 1 AS INT)", d=date)
        year = _tpl(f"year({anchor})", d=date)
    else:
        week = _tpl(f"CAST((datediff({anchor}, make_date(year(__d), 1, 1)) + 7) div 7 AS INT)", d=date)
        year = _tpl("year(__d)", d=date)
    return week, year


def _week_behaviour(mode: int) -> int:
    """MySQL's week_mode(): WEEK(d, mode) → calc_week behaviour."""
    behaviour = mode & 7
    if not behaviour & 1:
        behaviour ^= 4
    return behaviour


def _constant_mode(args: list[exp.Expr], name: str) -> int:
    if len(args) < 2:
        return 0
    mode = _int_value(args[1])
    if mode is None:
        raise GaleneError(f"{name}: the mode must be a constant integer")
    return mode


# --- parsing (STR_TO_DATE) --------------------------------------------------------------
_REGEX_SPECIAL = set("\\.^$|?*+()[]{}")


def _regex_escape(text: str) -> str:
    return "".join("\\" + ch if ch in _REGEX_SPECIAL else ch for ch in text)


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_TIME_SPECIFIERS = set("HhIiklrsSpTf")


def _parse_datetime(value: exp.Expr, fmt: str) -> exp.Expr:
    """Doris STR_TO_DATE(value, fmt) for a constant MySQL format: DATE or TIMESTAMP_NTZ."""
    fmt = fmt.replace("%T", "%H:%i:%s").replace("%r", "%h:%i:%s %p")
    tokens = _format_tokens(fmt)
    if not tokens:
        return exp.Null()
    has_time = any(kind == "spec" and ch in _TIME_SPECIFIERS for kind, ch in tokens)
    pieces: list[str] = []  # one regex piece per format token
    groups: dict[str, int] = {}
    numeric: list[tuple[int, int, int, int]] = []  # (piece index, digits group, width, spaces group)
    count = 0

    def group(field: str, regex: str, width: int = 0) -> None:
        nonlocal count
        count += 1
        groups[field] = count
        if width:
            # Doris reads up to `width` digits, greedily: the spaces after them are captured too, so
            # that a shorter read is recognised below as one Doris would not have made.
            count += 1
            numeric.append((len(pieces), groups[field], width, count))
            pieces.append(f"\\s*({regex})(\\s*)")
        else:
            pieces.append(f"\\s*({regex})")

    for kind, ch in tokens:
        if kind == "text":
            pieces.append("\\s*" if ch.isspace() else "\\s*" + _regex_escape(ch))
        elif ch in ("Y", "y"):
            group(
                "year" if ch == "Y" else "year2",
                "\\d{1,4}" if ch == "Y" else "\\d{1,2}",
                4 if ch == "Y" else 2,
            )
        elif ch in ("m", "c"):
            group("month", "\\d{1,2}", 2)
        elif ch in ("M", "b"):
            group("month_name", "[A-Za-z]+")
        elif ch in ("d", "e"):
            group("day", "\\d{1,2}", 2)
        elif ch in ("H", "k"):
            group("hour", "\\d{1,2}", 2)
        elif ch in ("h", "I", "l"):
            group("hour12", "\\d{1,2}", 2)
        elif ch == "i":
            group("minute", "\\d{1,2}", 2)
        elif ch in ("s", "S"):
            group("second", "\\d{1,2}", 2)
        elif ch == "f":
            group("fraction", "\\d{1,6}", 6)
        elif ch == "p":
            group("ampm", "[AaPp][Mm]")
        elif ch == "j":
            group("yearday", "\\d{1,3}", 3)
        elif ch in ("W", "a"):
            pieces.append("\\s*[A-Za-z]+")
        elif ch == "%":
            pieces.append("\\s*%")
        else:
            raise GaleneError(f"STR_TO_DATE: the format specifier %{ch} is not supported")
    # Doris stops where the value ends (the fields not reached keep their zero) and ignores what
    # follows the last field; any other mismatch is NULL. So each piece is followed by the rest
    # of the format or by the end of the value: p1(?:p2(?:p3|\s*$)|\s*$).
    pattern = ""
    for piece in reversed(pieces):
        pattern = f"{piece}(?:{pattern}|\\s*$)" if pattern else piece
    pattern = "^" + pattern
    regex = _str(pattern)
    src = _cast(value, "STRING")

    def field_at(index: int) -> exp.Expr:
        return _fn("regexp_extract", src.copy(), regex.copy(), _num(index))

    def field(name: str) -> exp.Expr:
        return field_at(groups[name])

    def number(name: str) -> exp.Expr:
        return _cast(field(name), "INT")

    def time_number(name: str) -> exp.Expr:
        # a time field the value ended before is 0 (an unmatched value leaves the date NULL)
        return _fn("coalesce", number(name), _num(0)) if name in groups else _num(0)

    # A digits field read short, right before another digits field (only format spaces between,
    # none in the value), is a parse Doris' greedy reader would not make: it fails there.
    short_reads: list[exp.Expr] = []
    for n, (index, digits, width, spaces) in enumerate(numeric):
        between = pieces[index + 1 : numeric[n + 1][0]] if n + 1 < len(numeric) else None
        if between is None or any(p != "\\s*" for p in between):
            continue
        short_reads.append(
            _tpl(
                "length(__d) < __w AND __s = '' AND __next != ''",
                d=field_at(digits),
                w=_num(width),
                s=field_at(spaces),
                next=field_at(numeric[n + 1][1]),
            )
        )

    if "year" in groups:
        year: exp.Expr = _tpl(
            "CASE WHEN length(__g) <= 2 THEN CASE WHEN CAST(__g AS INT) >= 70 THEN 1900 ELSE 2000 END "
            "+ CAST(__g AS INT) ELSE CAST(__g AS INT) END",
            g=field("year"),
        )
    elif "year2" in groups:
        year = _tpl("CASE WHEN __y >= 70 THEN 1900 + __y ELSE 2000 + __y END", y=number("year2"))
    else:
        year = _num(0)  # Doris' zero year: not a date Spark (or Doris' DATEV2) holds → NULL
    if "month_name" in groups:
        cases = " ".join(f"WHEN '{m}' THEN {i}" for i, m in enumerate(_MONTHS, 1))
        month: exp.Expr = _tpl(f"CASE lower(substr(__g, 1, 3)) {cases} END", g=field("month_name"))
    elif "month" in groups:
        month = number("month")
    else:
        month = _num(0)
    day = number("day") if "day" in groups else _num(0)
    if "hour12" in groups:
        # %h/%I/%l take 1-12; %p adds 12 for PM
        pm = (
            _tpl("CASE WHEN upper(__p) = 'PM' THEN 12 ELSE 0 END", p=field("ampm"))
            if "ampm" in groups
            else _num(0)
        )
        hour: exp.Expr = _tpl(
            "CASE WHEN __h BETWEEN 1 AND 12 THEN __h % 12 + __pm END", h=time_number("hour12"), pm=pm
        )
    elif "ampm" in groups:
        return exp.Null()  # Doris: %p without a 12-hour field never matches
    else:
        hour = time_number("hour")
    minute = time_number("minute")
    second = time_number("second")

    def two(n: exp.Expr) -> exp.Expr:
        return _fn("lpad", _cast(n, "STRING"), _num(2), _str("0"))

    date_text = _fn(
        "concat",
        _fn("lpad", _cast(year, "STRING"), _num(4), _str("0")),
        _str("-"),
        two(month),
        _str("-"),
        two(day),
    )
    if "yearday" in groups:
        jan1 = _fn("concat", _fn("lpad", _cast(year, "STRING"), _num(4), _str("0")), _str("-01-01"))
        date_text = _cast(_tpl("date_add(CAST(__j AS DATE), __n - 1)", j=jan1, n=number("yearday")), "STRING")
    if has_time:
        parts = [date_text, _str(" "), two(hour), _str(":"), two(minute), _str(":"), two(second)]
        if "fraction" in groups:
            parts += [_str("."), _fn("coalesce", _fn("nullif", field("fraction"), _str("")), _str("0"))]
        result = _cast(_fn("concat", *parts), "TIMESTAMP_NTZ")
    else:
        result = _cast(date_text, "DATE")
    if not short_reads:
        return result
    invalid = short_reads[0]
    for extra in short_reads[1:]:
        invalid = exp.Or(this=invalid, expression=extra)
    return _tpl("CASE WHEN __bad THEN NULL ELSE __r END", bad=invalid, r=result)


# --- DATE_TRUNC and friends -------------------------------------------------------------
_TRUNC_UNITS = ("YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND")


def _date_trunc(node: exp.TimestampTrunc) -> exp.Expr:
    unit = node.text("unit").upper()
    if unit not in _TRUNC_UNITS:
        raise GaleneError(
            "date_trunc function time unit param only support argument is "
            "year|quarter|month|week|day|hour|minute|second"
        )
    value = node.this
    if _is_date_typed(value):
        date = (
            value if isinstance(value, exp.Cast) and value.to.this == exp.DType.DATE else _cast(value, "DATE")
        )
        if unit in ("DAY", "HOUR", "MINUTE", "SECOND"):
            return date
        return _fn("trunc", date, _str(unit))
    return _cast(_fn("date_trunc", _str(unit), _as_timestamp(value)), "TIMESTAMP_NTZ")


# --- JSON -------------------------------------------------------------------------------
_json_path = functions_json.doc_path  # Doris JSON path → Spark's


def _json_text(value: exp.Expr) -> exp.Expr:
    """A scalar as JSON text (strings quoted and escaped, NULL → null)."""
    return _fn("coalesce", _fn("to_json", _cast(value, "VARIANT")), _str("null"))


_JSON_GETTERS = {
    "GET_JSON_STRING": None,
    "JSON_EXTRACT_STRING": None,
    "JSONB_EXTRACT_STRING": None,
    "GET_JSON_INT": "INT",
    "JSON_EXTRACT_INT": "INT",
    "GET_JSON_BIGINT": "BIGINT",
    "JSON_EXTRACT_BIGINT": "BIGINT",
    "GET_JSON_DOUBLE": "DOUBLE",
    "JSON_EXTRACT_DOUBLE": "DOUBLE",
    "JSON_EXTRACT_BOOL": "BOOLEAN",
    "JSON_EXTRACT_LARGEINT": "DECIMAL(38, 0)",
    "JSONB_EXTRACT_INT": "INT",
    "JSONB_EXTRACT_BIGINT": "BIGINT",
    "JSONB_EXTRACT_LARGEINT": "DECIMAL(38, 0)",
    "JSONB_EXTRACT_DOUBLE": "DOUBLE",
    "JSONB_EXTRACT_BOOL": "BOOLEAN",
}


# --- strings ----------------------------------------------------------------------------
# POSIX bracket classes (RE2, Doris' regex engine) as ASCII ranges Java and Rust both read.
_POSIX_CLASSES = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": " \\t\\n\\r\\f\\x0b",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}


def _regex_literal(node: exp.Expr) -> exp.Expr:
    text = _string_value(node)
    if text is None or "[:" not in text:
        return node
    return _str(re.sub(r"\[:(\w+):\]", lambda m: _POSIX_CLASSES.get(m.group(1), m.group(0)), text))


def _replacement_literal(node: exp.Expr) -> exp.Expr:
    # RE2 (Doris) writes group references \1; Java (Spark) writes $1 and reads a bare $ as one.
    text = _string_value(node)
    if text is None:
        return node
    return _str(re.sub(r"\\(\d)", r"$\1", text.replace("$", "\\$")))


def _literal_split(string: exp.Expr, separator: exp.Expr, name: str) -> exp.Expr:
    # Doris splits on a literal separator; Spark's split takes a regular expression.
    text = _string_value(separator)
    if text is None:
        raise GaleneError(f"Argument at index 2 for function {name} must be constant")
    return _fn("split", string, _str(_regex_escape(text)), _num(-1))


def _locate(node: exp.StrPosition) -> exp.Expr:
    sub, string, pos = node.args["substr"], node.this, node.args.get("position")
    if pos is None:
        return _fn("locate", sub, string)
    sub_text = _string_value(sub)
    if sub_text:
        return _fn("locate", sub, string, pos)
    # Doris: an empty substring is found at pos when 1 <= pos <= length (and at 1 in '').
    return _tpl(
        "CASE WHEN __s IS NULL OR __p IS NULL OR __sub IS NULL THEN NULL "
        "WHEN __sub = '' THEN CASE WHEN __p = 1 OR (__p >= 1 AND __p <= char_length(__s)) THEN __p ELSE 0 END "
        "ELSE locate(__sub, __s, __p) END",
        s=string,
        p=pos,
        sub=sub,
    )


def _pad(node: exp.Pad) -> exp.Expr:
    name = "lpad" if node.args.get("is_left") else "rpad"
    string, length, fill = node.this, node.expression, node.args.get("fill_pattern")
    if fill is None:
        return _fn(name, string, length)
    call = _fn(name, string, length, fill)
    if _string_value(fill):
        return call
    # Doris: an empty pad gives an empty string.
    return _tpl(
        "CASE WHEN __s IS NULL OR __n IS NULL OR __f IS NULL THEN NULL WHEN __f = '' THEN '' ELSE __call END",
        s=string,
        n=length,
        f=fill,
        call=call,
    )


def _split_part(node: exp.SplitPart) -> exp.Expr:
    parts = _literal_split(node.this, node.args["delimiter"], "split_part")
    index = node.args["part_index"]
    n = _int_value(index)
    if n == 0:
        return exp.Null()
    if n is not None and n > 0:
        return _fn("get", parts, _num(n - 1))
    if n is not None:
        return _tpl("get(__a, size(__a) + __n)", a=parts, n=_num(n))
    return _tpl(
        "CASE WHEN __n > 0 THEN get(__a, __n - 1) WHEN __n < 0 THEN get(__a, size(__a) + __n) END",
        a=parts,
        n=index,
    )


# --- GROUP_CONCAT -----------------------------------------------------------------------
def _group_concat(node: exp.GroupConcat) -> exp.Expr:
    """GROUP_CONCAT → concat_ws(sep, collect_list(x)); with ORDER BY the values are collected
    with their sort keys, sorted, and projected back (Spark's listagg … WITHIN GROUP fails
    when ordering by another column)."""
    separator = node.args.get("separator") or _str(DEFAULT_GROUP_CONCAT_SEPARATOR)
    this = node.this
    order = None
    if isinstance(this, exp.Order):
        order, this = this, this.this
    distinct = isinstance(this, exp.Distinct)
    if distinct:
        this = this.expressions[0] if len(this.expressions) == 1 else exp.Concat(expressions=this.expressions)
    value = _cast(this, "STRING")
    collect = "collect_set" if distinct else "collect_list"
    if order is None:
        return _fn("concat_ws", separator, _fn(collect, value))
    fields: list[exp.Expr] = []
    keys: list[tuple[bool, bool]] = []  # (descending, nulls first)
    for i, ordered in enumerate(order.expressions):
        key = ordered.this if isinstance(ordered, exp.Ordered) else ordered
        desc = bool(isinstance(ordered, exp.Ordered) and ordered.args.get("desc"))
        nulls_first = ordered.args.get("nulls_first") if isinstance(ordered, exp.Ordered) else None
        keys.append((desc, (not desc) if nulls_first is None else bool(nulls_first)))
        fields += [_str(f"k{i}"), key]
    fields += [_str("v"), value]
    pairs = _fn(collect, _fn("named_struct", *fields))
    if all(k == (False, True) for k in keys) or all(k == (True, False) for k in keys):
        # one direction with Doris' default NULL placement: sort_array orders structs field by field
        ordered_pairs = _fn("sort_array", pairs, exp.Boolean(this=not keys[0][0]))
    else:
        ordered_pairs = _fn("array_sort", pairs, _comparator(keys))
    project = exp.Lambda(this=exp.column("v", table="e"), expressions=[exp.to_identifier("e")])
    return _fn("concat_ws", separator, _fn("transform", ordered_pairs, project))


def _comparator(keys: list[tuple[bool, bool]]) -> exp.Expr:
    body = "0"
    for i in reversed(range(len(keys))):
        desc, nulls_first = keys[i]
        lo, hi = ("1", "-1") if desc else ("-1", "1")
        null_l, null_r = ("-1", "1") if nulls_first else ("1", "-1")
        body = (
            f"CASE WHEN l.k{i} IS NULL AND r.k{i} IS NULL THEN {body} "
            f"WHEN l.k{i} IS NULL THEN {null_l} WHEN r.k{i} IS NULL THEN {null_r} "
            f"WHEN l.k{i} < r.k{i} THEN {lo} WHEN l.k{i} > r.k{i} THEN {hi} ELSE {body} END"
        )
    lam = sqlglot.parse_one(f"array_sort(x, (l, r) -> {body})", read="spark").find(exp.Lambda)
    assert lam is not None
    return lam.copy()


# --- literal arithmetic -----------------------------------------------------------------
_INT_TYPES = ("TINYINT", "SMALLINT", "INT", "BIGINT", "LARGEINT")
_INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64, "LARGEINT": 128}
_SPARK_INT = {
    "TINYINT": "TINYINT",
    "SMALLINT": "SMALLINT",
    "INT": "INT",
    "BIGINT": "BIGINT",
    "LARGEINT": "DECIMAL(38, 0)",
}
_MAX_DECIMAL_PRECISION = 38
_DIV_PRECISION_INCREMENT = 4


def _literal_number(node: exp.Expr) -> tuple[Decimal, str, int, int] | None:
    """(value, Doris type, precision, scale) of a numeric literal or an already folded one."""
    folded = node.meta.get("doris_number") if isinstance(node, exp.Expr) else None
    if folded is not None:
        return folded
    negative = False
    while isinstance(node, (exp.Neg, exp.Paren)):
        negative ^= isinstance(node, exp.Neg)
        node = node.this
    if not isinstance(node, exp.Literal) or node.is_string:
        return None
    text = node.name
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    if "e" in text.lower():
        return None  # a DOUBLE literal: left to Spark
    value = -value if negative else value
    if "." not in text:
        for name in _INT_TYPES:
            bits = _INT_BITS[name]
            if -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
                return value, name, len(text.lstrip("-")), 0
        return None
    digits = text.lstrip("-").replace(".", "")
    scale = len(text.split(".", 1)[1])
    precision = max(len(digits.lstrip("0")) or 1, scale)
    if precision > _MAX_DECIMAL_PRECISION:
        return None
    return value, "DECIMAL", max(precision, scale), scale


def _int_decimal_precision(value: Decimal) -> int:
    return len(str(abs(int(value))))


def _fold_arithmetic(node: exp.Add | exp.Sub | exp.Mul | exp.Div) -> exp.Expr:
    """Integer and decimal literal arithmetic folded with Doris' result type and value."""
    left, right = _literal_number(node.this), _literal_number(node.expression)
    if left is None or right is None:
        return node
    (a, ta, pa, sa), (b, tb, pb, sb) = left, right
    if isinstance(node, exp.Div) and ta in _INT_TYPES and tb in _INT_TYPES:
        if b == 0:
            return _cast(exp.Null(), "DOUBLE")
        return _cast(_num(repr(float(a) / float(b))), "DOUBLE")  # Doris: integer / integer is DOUBLE
    if ta in _INT_TYPES and tb in _INT_TYPES:
        value = {exp.Add: a + b, exp.Sub: a - b, exp.Mul: a * b}[type(node)]
        widest = max(_INT_TYPES.index(ta), _INT_TYPES.index(tb))
        result_type = _INT_TYPES[min(widest + 1, len(_INT_TYPES) - 1)]
        bits = _INT_BITS[result_type]
        if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
            return node
        out = _cast(_num(str(value)), _SPARK_INT[result_type])
        out.meta["doris_number"] = (value, result_type, _int_decimal_precision(value), 0)
        return out
    # DECIMAL (an integer literal joins as DECIMAL(its digits, 0)); Doris' DECIMALV3 rules
    if ta in _INT_TYPES:
        pa, sa = _int_decimal_precision(a), 0
    if tb in _INT_TYPES:
        pb, sb = _int_decimal_precision(b), 0
    if isinstance(node, (exp.Add, exp.Sub)):
        scale = max(sa, sb)
        precision = max(pa - sa, pb - sb) + scale + 1
        value = a + b if isinstance(node, exp.Add) else a - b
    elif isinstance(node, exp.Mul):
        precision, scale = pa + pb, sa + sb
        value = a * b
    else:
        precision, scale = pa + sb + _DIV_PRECISION_INCREMENT, sa + _DIV_PRECISION_INCREMENT
        if b == 0:
            return _cast(exp.Null(), f"DECIMAL({min(precision, 38)}, {min(scale, 38)})")
        value = (a / b).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_DOWN)
    if precision > _MAX_DECIMAL_PRECISION:
        return node  # Doris' overflow rules: left to Spark
    value = value.quantize(Decimal(1).scaleb(-scale))
    out = _cast(_str(format(value, "f")), f"DECIMAL({precision}, {scale})")
    out.meta["doris_number"] = (value, "DECIMAL", precision, scale)
    return out


# --- CAST types -------------------------------------------------------------------------
_CAST_TYPES = {
    exp.DType.DATETIME: "TIMESTAMP_NTZ",
    exp.DType.INT128: "DECIMAL(38, 0)",
    exp.DType.UBIGINT: "DECIMAL(38, 0)",  # CAST(x AS UNSIGNED): Doris' LARGEINT
    exp.DType.VARCHAR: "STRING",
    exp.DType.CHAR: "STRING",
    exp.DType.TEXT: "STRING",
    exp.DType.JSON: "STRING",
}


def _cast_type(node: exp.DataType) -> exp.DataType:
    built = exp.DataType.build(_CAST_TYPES[node.this], dialect="spark")
    if node.this in (exp.DType.INT128, exp.DType.UBIGINT):  # LARGEINT, and AS UNSIGNED (Doris: LARGEINT)
        built.meta["doris_type"] = "LARGEINT"  # the integer CAST below must tell it from DECIMAL
    if node.this == exp.DType.DATETIME and node.expressions:  # DATETIME(p): rounded to p digits below
        built.meta["datetime_precision"] = functions_time.precision(node.expressions[0], "DATETIME")
    return built


def _round_datetime(value: exp.Expr, p: int) -> exp.Expr:
    """A TIMESTAMP_NTZ rounded (half up) to p fractional digits, as Doris' CAST AS DATETIME(p)."""
    unit = 10 ** (6 - p)
    return _tpl(
        f"CAST(timestamp_micros((unix_micros(CAST(__t AS TIMESTAMP)) + {unit // 2}) div {unit} * {unit})"
        " AS TIMESTAMP_NTZ)",
        t=value,
    )


# --- CAST to an integer type ------------------------------------------------------------
# Doris' integer rule spelled in Spark SQL, and folded for constants: galene/sql/int_cast.py.
_INT_CAST_TARGETS = {
    exp.DType.TINYINT: "TINYINT",
    exp.DType.SMALLINT: "SMALLINT",
    exp.DType.INT: "INT",
    exp.DType.BIGINT: "BIGINT",
}


def _integer_target(to: exp.DataType) -> str | None:
    if to.meta.get("doris_type") == "LARGEINT":
        return "LARGEINT"
    return _INT_CAST_TARGETS.get(to.this)


def _fold_integer_cast(value: exp.Expr, name: str) -> exp.Expr | None:
    """CAST of a constant folded with intcast's rule; None when `value` is no constant."""
    if isinstance(value, exp.Literal) and value.is_string:
        text = value.name
    elif isinstance(value, exp.Boolean):
        text = "1" if value.this else "0"
    elif (number := _literal_number(value)) is not None:
        text = format(number[0], "f")
    else:
        inner, negative = value, False
        while isinstance(inner, (exp.Neg, exp.Paren)):
            negative ^= isinstance(inner, exp.Neg)
            inner = inner.this
        if not isinstance(inner, exp.Literal) or inner.is_string:
            return None
        text = intcast.plain_number_text(("-" if negative else "") + inner.name)  # a DOUBLE literal
    result = int_cast.cast_constant(text, name)
    spark_type = _SPARK_INT[name]
    if result is None:
        return _cast(exp.Null(), spark_type)
    out = _cast(_num(str(result)), spark_type)
    out.meta["doris_number"] = (Decimal(result), name, _int_decimal_precision(Decimal(result)), 0)
    return out


def _integer_cast(value: exp.Expr, name: str) -> exp.Expr:
    folded = _fold_integer_cast(value, name)
    if folded is not None:
        return folded
    return _tpl(int_cast.integer_cast_template(name), x=value)


# --- window functions -------------------------------------------------------------------
# Doris types ROW_NUMBER/RANK/DENSE_RANK/NTILE as BIGINT (nereids/.../functions/window/*.java,
# and the "Return Value" of each function's page); Spark's are INT.
_BIGINT_WINDOW_FUNCTIONS = (exp.RowNumber, exp.Rank, exp.DenseRank, exp.Ntile)


# --- functions sqlglot leaves anonymous -------------------------------------------------
def _ignore_null_flag(name: str, node: exp.Expr) -> bool:
    """Doris' FIRST_VALUE/LAST_VALUE ignore_null: a constant boolean, or a number as in
    `last_value(state, 1)` of Doris' docs (Spark takes only a boolean literal)."""
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    number = _literal_number(node)
    if number is not None:
        return number[0] != 0
    raise GaleneError(f"{name.lower()}: the second argument (ignore_null) must be a constant boolean")


# The function families of the new types, each in its own module: name → its rewrite.
_FAMILIES = {
    **{name: functions_nested.rewrite for name in functions_nested.NAMES},
    **{name: functions_json.rewrite for name in functions_json.NAMES},
    **{name: functions_ip.rewrite for name in functions_ip.NAMES},
    **{name: functions_state.rewrite for name in functions_state.NAMES},
    **{name: functions_time.rewrite for name in functions_time.NAMES},
}


def _anonymous(node: exp.Anonymous) -> exp.Expr:
    name = node.name.upper()
    args = node.expressions
    family = _FAMILIES.get(name)
    if name == "TO_BITMAP" and len(args) == 1:  # Doris reads the value as a BIGINT by its integer rule
        args = [_integer_cast(args[0], "BIGINT")]
    if family is not None:
        rewritten = family(name, args)
        if rewritten is not None:
            return rewritten
    if name in _DIFF_UNITS and len(args) == 2:
        return _timestamp_diff(_DIFF_UNITS[name], args[1], args[0])
    if name in _JSON_GETTERS and len(args) == 2:
        getter = _fn("get_json_object", args[0], _json_path(args[1]))
        target = _JSON_GETTERS[name]
        if target:
            return _cast(getter, target)
        # a JSON null is the string "null" (get_json_object answers NULL)
        found = _fn(
            "to_json", _fn("try_variant_get", _fn("try_parse_json", args[0].copy()), _json_path(args[1]))
        )
        return _fn("coalesce", getter, _tpl("IF(__j = 'null', 'null', NULL)", j=found))
    if name in ("JSON_ARRAY", "JSONB_ARRAY"):
        if not args:
            return _str("[]")
        return _fn(
            "concat", _str("["), _fn("concat_ws", _str(","), *[_json_text(a) for a in args]), _str("]")
        )
    if name in ("JSON_VALID",) and len(args) == 1:
        return _tpl(
            "CASE WHEN __j IS NULL THEN NULL WHEN try_parse_json(__j) IS NULL THEN 0 ELSE 1 END", j=args[0]
        )
    if name == "EXPLODE_SPLIT" and len(args) == 2:
        return _fn("explode", _literal_split(args[0], args[1], "explode_split"))
    if name == "UNIX_TIMESTAMP":
        if not args:
            return _fn("unix_timestamp")
        if len(args) == 2:
            fmt = mysql_format(args[1], converted=False)
            if fmt is None:
                raise GaleneError("UNIX_TIMESTAMP: the format must be a constant string")
            seconds = _fn("unix_timestamp", _parse_datetime(args[0], fmt))
            return _tpl("CAST(CASE WHEN __t < 0 THEN 0 ELSE __t END AS DECIMAL(16, 6))", t=seconds)
        seconds = _fn("unix_timestamp", _as_timestamp(_datetime_operand(args[0])))
        return _tpl("CAST(CASE WHEN __t < 0 THEN 0 ELSE __t END AS INT)", t=seconds)
    if name == "YEARWEEK" and args:
        week, year = _calc_week(
            _cast(_datetime_operand(args[0]), "DATE"), _week_behaviour(_constant_mode(args, name)) | 2
        )
        return _tpl("__y * 100 + __w", y=year, w=week)
    if name == "WEEKDAY" and len(args) == 1:
        return _fn("weekday", _datetime_operand(args[0]))
    if name == "TO_DAYS" and len(args) == 1:
        return _tpl("datediff(CAST(__d AS DATE), DATE'0001-01-01') + 366", d=_datetime_operand(args[0]))
    if name == "FROM_DAYS" and len(args) == 1:
        return _tpl("date_add(DATE'0001-01-01', __n - 366)", n=args[0])
    if name == "MAKEDATE" and len(args) == 2:
        return _tpl("date_add(make_date(__y, 1, 1), __n - 1)", y=args[0], n=args[1])
    if name == "MICROSECOND" and len(args) == 1:
        return _tpl("CAST(date_format(__d, 'SSSSSS') AS INT)", d=_as_timestamp(_datetime_operand(args[0])))
    if name in ("STRLEFT", "STRRIGHT") and len(args) == 2:
        return _fn("left" if name == "STRLEFT" else "right", *args)
    if name == "NULL_OR_EMPTY" and len(args) == 1:
        return _tpl("(__s IS NULL OR __s = '')", s=args[0])
    if name == "NOT_NULL_OR_EMPTY" and len(args) == 1:
        return _tpl("(__s IS NOT NULL AND __s != '')", s=args[0])
    if name in ("FIRST_VALUE", "LAST_VALUE") and len(args) == 2:
        if _ignore_null_flag(name, args[1]):
            return _fn(name, args[0], exp.true())
        return (exp.FirstValue if name == "FIRST_VALUE" else exp.LastValue)(this=args[0])
    if name == "NDV" and len(args) == 1:
        return _fn("approx_count_distinct", args[0])
    return node


def rewrite_function(node: exp.Expr) -> exp.Expr:
    """The Spark equivalent of one Doris node (its children already rewritten); `node` itself
    when Spark reads it the same way."""
    if isinstance(node, (exp.DateAdd, exp.DateSub, exp.TimestampAdd)):
        return _date_delta(node)
    if isinstance(node, exp.TimestampDiff):
        return _timestamp_diff(node.text("unit") or "DAY", node.expression, node.this)
    if isinstance(node, exp.DateDiff):
        return _datediff(node)
    if isinstance(node, exp.TimeToStr):
        fmt = mysql_format(node.args.get("format"), converted=True)
        value = node.this.this if isinstance(node.this, exp.TsOrDsToTimestamp) else node.this
        if fmt is None:
            return _fn("date_format", value, node.args["format"])  # a computed format: Java's
        return _format_datetime(value, fmt)
    if isinstance(node, exp.UnixToTime):
        if node.args.get("scale") is not None:
            return node
        fmt = mysql_format(node.args.get("format"), converted=True)
        if node.args.get("format") is None or fmt in ("%Y-%m-%d %H:%i:%s", "%Y-%m-%d %H:%i:%S"):
            return _fn("from_unixtime", node.this)  # Doris: a 'yyyy-MM-dd HH:mm:ss' string
        if fmt is None:
            raise GaleneError("FROM_UNIXTIME: the format must be a constant string")
        return _format_datetime(_cast(_fn("from_unixtime", node.this), "TIMESTAMP_NTZ"), fmt)
    if isinstance(node, exp.UnixToStr):
        fmt = mysql_format(node.args.get("format"), converted=True)
        if fmt is None:
            raise GaleneError("FROM_UNIXTIME: the format must be a constant string")
        return _format_datetime(_cast(_fn("from_unixtime", node.this), "TIMESTAMP_NTZ"), fmt)
    if isinstance(node, (exp.StrToDate, exp.StrToTime)):
        fmt = mysql_format(node.args.get("format"), converted=True)
        if fmt is None:
            raise GaleneError("STR_TO_DATE: the format must be a constant string")
        return _parse_datetime(node.this, fmt)
    if isinstance(node, exp.TimestampTrunc):
        return _date_trunc(node)
    if isinstance(node, exp.Week):
        mode = _int_value(node.args.get("mode")) if node.args.get("mode") is not None else 0
        if mode is None:
            raise GaleneError("WEEK: the mode must be a constant integer")
        week, _ = _calc_week(_cast(_datetime_operand(node.this), "DATE"), _week_behaviour(mode))
        return week
    if isinstance(node, exp.Dayname):
        return _fn("date_format", _datetime_operand(node.this), _str("EEEE"))
    if isinstance(node, exp.Timestamp) and node.this is not None and node.args.get("zone") is None:
        return _as_timestamp(_datetime_operand(node.this))
    if isinstance(node, exp.GroupConcat):
        return _group_concat(node)
    if isinstance(node, exp.Window) and isinstance(node.this, _BIGINT_WINDOW_FUNCTIONS):
        return _cast(node, "BIGINT")  # Doris: BIGINT (Spark's are INT)
    if isinstance(node, exp.Length) and node.args.get("binary"):
        return _fn("octet_length", node.this)
    if isinstance(node, exp.Length):
        return _fn("char_length", node.this)
    if isinstance(node, exp.StrPosition):
        return _locate(node)
    if isinstance(node, exp.Pad):
        return _pad(node)
    if isinstance(node, exp.SplitPart):
        return _split_part(node)
    if isinstance(node, exp.StringToArray) and node.expression is not None:
        return _literal_split(node.this, node.expression, "split_by_string")
    if isinstance(node, exp.RegexpExtract):
        group = node.args.get("position") or node.args.get("group")
        args = [node.this, _regex_literal(node.expression)] + ([group] if group is not None else [])
        return _fn("regexp_extract", *args)
    if isinstance(node, exp.RegexpReplace):
        return _fn(
            "regexp_replace",
            node.this,
            _regex_literal(node.expression),
            _replacement_literal(node.args["replacement"]),
        )
    if isinstance(node, exp.RegexpLike):
        return exp.RegexpLike(this=node.this, expression=_regex_literal(node.expression))
    if isinstance(node, exp.Trunc) and node.args.get("decimals") is not None:
        return _tpl(
            "CASE WHEN __x < 0 THEN ceil(__x, __d) ELSE floor(__x, __d) END",
            x=node.this,
            d=node.args["decimals"],
        )
    if isinstance(node, exp.JSONExtract):
        return functions_json.extract(node.this, [node.expression, *(node.expressions or [])])
    if isinstance(node, exp.JSONObject):
        items = []
        for kv in node.expressions:
            key, value = (kv.this, kv.expression) if isinstance(kv, exp.JSONKeyValue) else (kv, exp.Null())
            items.append(_fn("concat", _json_text(key), _str(":"), _json_text(value)))
        return _fn("concat", _str("{"), _fn("concat_ws", _str(","), *items), _str("}"))
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div)) and not isinstance(node, exp.IntDiv):
        return _fold_arithmetic(node)
    if isinstance(node, exp.Anonymous):
        return _anonymous(node)
    if isinstance(node, exp.Bracket):
        return functions_json.variant_subscript(node) or functions_nested.subscript(node)
    if isinstance(node, exp.DataType) and node.this in _CAST_TYPES and isinstance(node.parent, exp.Cast):
        return _cast_type(node)
    if isinstance(node, exp.CurrentTimestamp):
        return functions_time.current_timestamp(functions_time.precision(node.this, "current_timestamp"))
    if isinstance(node, exp.Localtimestamp):
        return functions_time.current_timestamp(0)
    if isinstance(node, exp.CurrentTime):
        p = functions_time.precision(node.this, "current_time")
        return functions_time.to_time(functions_time.current_timestamp(p), p)
    if isinstance(node, exp.Cast) and node.to.meta.get("datetime_precision", 6) < 6:
        p = node.to.meta.pop("datetime_precision")
        return _round_datetime(node, p)
    if isinstance(node, exp.Cast) and node.to.this == exp.DType.TIME:
        return functions_time.cast_to_time(node)
    if isinstance(node, exp.Cast) and node.to.this in (exp.DType.IPV4, exp.DType.IPV6):
        return (functions_ip.to_ipv4 if node.to.this == exp.DType.IPV4 else functions_ip.to_ipv6)(node.this)
    if isinstance(node, exp.Cast) and node.to.this == exp.DType.VARIANT:
        return functions_json.to_variant(node.this)
    if isinstance(node, exp.Cast) and functions_json.is_variant_value(node.this):
        parsed = functions_json.variant_cast(node.this, node.to)
        if parsed is not None:
            return parsed
        if not isinstance(node.this, exp.Literal):
            node.set("this", functions_json.variant_scalar(node.this))
    if isinstance(node, exp.Cast) and not isinstance(node.this, exp.Null):
        name = _integer_target(node.to)
        if name is not None:
            return _integer_cast(node.this, name)
    return node
