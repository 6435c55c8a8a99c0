"""The Doris → Spark function translation table (galene/sql/functions.py), one test per entry.

Spark is not started here: each test checks the Spark SQL a Doris expression becomes. The
values these expressions compute are checked against Doris' own results, on Spark and on
Sail, in tests/integration/test_doris_functions.py.
"""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from galene.common.errors import GaleneError
from galene.sql.functions import DEFAULT_GROUP_CONCAT_SEPARATOR, mysql_format
from galene.sql.statements.parse import parse_statement
from galene.sql.translate import to_spark_sql


def spark(sql: str) -> str:
    out = to_spark_sql(parse_statement(sql).expr, lambda db, name: f"v_{name}")
    sqlglot.parse_one(out, read="spark")  # valid Spark syntax
    return out


def one(expr: str) -> str:
    """The Spark SQL of one Doris expression (the select item as generated, without its label)."""
    out = spark(f"SELECT {expr} AS x FROM t")
    return out[len("SELECT ") : out.rindex(" AS x FROM ")]


# --- date arithmetic ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("doris", "spark_sql"),
    [
        ("DATE_ADD(d, INTERVAL 3 HOUR)", "(CAST(d AS TIMESTAMP_NTZ) + INTERVAL '3' HOUR)"),
        ("DATE_SUB(d, INTERVAL 2 MONTH)", "(d - INTERVAL '2' MONTH)"),
        ("DATE_ADD(d, INTERVAL 1 QUARTER)", "(d + INTERVAL '3' MONTH)"),
        ("date_add(d, interval 1 week)", "(d + INTERVAL '7' DAY)"),
        ("DATE_ADD(d, 3)", "(d + INTERVAL '3' DAY)"),
        ("ADDDATE(d, INTERVAL 1 YEAR)", "(d + INTERVAL '1' YEAR)"),
        ("DAYS_ADD(d, 2)", "(d + INTERVAL '2' DAY)"),
        ("HOURS_SUB(d, 1)", "(CAST(d AS TIMESTAMP_NTZ) - INTERVAL '1' HOUR)"),
        ("MONTHS_ADD(d, x)", "(d + (x) * INTERVAL '1' MONTH)"),
        ("DAYS_SUB(d, x)", "(d - MAKE_INTERVAL(0, 0, 0, x, 0, 0, 0))"),
        ("WEEKS_ADD(d, x)", "(d + MAKE_INTERVAL(0, 0, x, 0, 0, 0, 0))"),
        ("TIMESTAMPADD(MINUTE, 5, d)", "(CAST(d AS TIMESTAMP_NTZ) + INTERVAL '5' MINUTE)"),
        # a string is a DATE or a DATETIME by its text, NULL a DATETIME
        ("DATE_ADD('2023-01-31', INTERVAL 1 MONTH)", "(CAST('2023-01-31' AS DATE) + INTERVAL '1' MONTH)"),
        (
            "DATE_ADD('2023-12-31 23:00:00', INTERVAL 2 DAY)",
            "(CAST('2023-12-31 23:00:00' AS TIMESTAMP_NTZ) + INTERVAL '2' DAY)",
        ),
        ("DATE_ADD(NULL, INTERVAL 1 MONTH)", "(CAST(NULL AS TIMESTAMP_NTZ) + INTERVAL '1' MONTH)"),
    ],
)
def test_date_arithmetic_keeps_units_and_types(doris, spark_sql):
    assert one(doris) == spark_sql


def test_datediff_is_days_as_int():
    assert one("DATEDIFF(a, b)") == "CAST(DATEDIFF(CAST(a AS DATE), CAST(b AS DATE)) AS INT)"


@pytest.mark.parametrize("unit", ["YEAR", "MONTH", "QUARTER"])
def test_month_based_diffs_compare_the_later_fields(unit):
    out = one(f"TIMESTAMPDIFF({unit}, a, b)")
    rem = "MMddHHmmssSSSSSS" if unit == "YEAR" else "ddHHmmssSSSSSS"
    assert (
        f"DATE_FORMAT(CAST(b AS TIMESTAMP_NTZ), '{rem}') < DATE_FORMAT(CAST(a AS TIMESTAMP_NTZ), '{rem}')"
        in out
    )
    assert out.startswith("CAST(") and out.endswith("AS BIGINT)")
    assert ("DIV 3" in out) == (unit == "QUARTER")


def test_day_and_week_diffs_compare_the_time_of_day():
    out = one("TIMESTAMPDIFF(DAY, a, b)")
    assert "DATEDIFF(CAST(b AS TIMESTAMP_NTZ), CAST(a AS TIMESTAMP_NTZ))" in out
    assert "'HHmmssSSSSSS'" in out
    assert "DIV 7" in one("WEEKS_DIFF(b, a)")


def test_sub_day_diffs_and_unit_named_diffs():
    assert (
        one("TIMESTAMPDIFF(HOUR, a, b)")
        == "TIMESTAMPDIFF(HOUR, CAST(a AS TIMESTAMP_NTZ), CAST(b AS TIMESTAMP_NTZ))"
    )
    # X_DIFF(end, start) = TIMESTAMPDIFF(X, start, end)
    assert one("SECONDS_DIFF(b, a)") == one("TIMESTAMPDIFF(SECOND, a, b)")
    assert one("MONTHS_DIFF(b, a)") == one("TIMESTAMPDIFF(MONTH, a, b)")
    assert one("YEARS_DIFF(b, a)") == one("TIMESTAMPDIFF(YEAR, a, b)")


def test_unknown_diff_unit_is_refused():
    with pytest.raises(GaleneError, match="Unsupported time stamp diff time unit"):
        one("TIMESTAMPDIFF(FORTNIGHT, a, b)")


# --- time formats -------------------------------------------------------------------------------
def test_mysql_format_recovers_what_sqlglot_converted():
    # sqlglot keeps DATE_FORMAT's format in strftime form; the MySQL one is rebuilt from it
    node = parse_statement(
        "SELECT DATE_FORMAT(d, '%e %c %k %l %M %i %W %u %x %D %%') FROM t"
    ).expr.expressions[0]
    assert mysql_format(node.args["format"], converted=True) == "%e %c %k %l %M %i %W %u %x %D %%"
    assert mysql_format(exp.Literal.string("yyyy-MM-dd HH:mm:ss"), converted=False) == "%Y-%m-%d %H:%i:%s"


@pytest.mark.parametrize(
    ("doris", "spark_sql"),
    [
        ("DATE_FORMAT(d, '%Y-%m-%d %H:%i:%s')", "DATE_FORMAT(d, 'yyyy-MM-dd HH:mm:ss')"),
        ("DATE_FORMAT(d, 'yyyy-MM-dd')", "DATE_FORMAT(d, 'yyyy-MM-dd')"),
        ("DATE_FORMAT(d, 'yyyyMMdd')", "DATE_FORMAT(d, 'yyyyMMdd')"),
        ("DATE_FORMAT(d, '%W %M %Y')", "DATE_FORMAT(d, 'EEEE MMMM yyyy')"),
        (
            "DATE_FORMAT(d, '%e/%c %l%p %f %j %T')",
            "DATE_FORMAT(d, 'd/M hha SSSSSS DDD HH:mm:ss')".replace("hha", "ha"),
        ),
        # literal text stays out of the Java pattern (Sail refuses quoted text)
        ("DATE_FORMAT(d, 'Day: %d')", "CONCAT('Day: ', DATE_FORMAT(d, 'dd'))"),
        ("DATE_FORMAT(d, '%%%d')", "CONCAT('%', DATE_FORMAT(d, 'dd'))"),
        ("DATE_FORMAT(d, '%YT%m')", "CONCAT(DATE_FORMAT(d, 'yyyy'), 'T', DATE_FORMAT(d, 'MM'))"),
        ("DATE_FORMAT(d, 'ghg')", "IF(d IS NULL, NULL, 'ghg')"),
        (
            "DATE_FORMAT('2007-10-04 22:23:00', '%H')",
            "DATE_FORMAT(CAST('2007-10-04 22:23:00' AS TIMESTAMP_NTZ), 'HH')",
        ),
        ("FROM_UNIXTIME(ts)", "FROM_UNIXTIME(ts)"),
        ("FROM_UNIXTIME(ts, '%Y-%m-%d %H:%i:%s')", "FROM_UNIXTIME(ts)"),
        (
            "FROM_UNIXTIME(ts, '%Y-%m-%d')",
            "DATE_FORMAT(CAST(FROM_UNIXTIME(ts) AS TIMESTAMP_NTZ), 'yyyy-MM-dd')",
        ),
    ],
)
def test_date_format_compiles_mysql_formats(doris, spark_sql):
    assert one(doris) == spark_sql


def test_date_format_fields_java_has_no_letter_for():
    day_with_suffix = one("DATE_FORMAT(d, '%D')")
    assert "WHEN DAY(d) IN (11, 12, 13) THEN 'th'" in day_with_suffix and "'st'" in day_with_suffix
    assert one("DATE_FORMAT(d, '%w')") == "CAST(DAYOFWEEK(d) - 1 AS STRING)"
    week = one("DATE_FORMAT(d, '%X-%V')")
    assert (
        week.startswith("CONCAT(LPAD(CAST(")
        and "'-'" in week
        and "DAYOFYEAR(DATE_ADD(CAST(d AS DATE)" in week
    )


def test_unix_timestamp():
    assert one("UNIX_TIMESTAMP()") == "UNIX_TIMESTAMP()"
    out = one("UNIX_TIMESTAMP(d)")
    assert out.startswith(
        "CAST(CASE WHEN UNIX_TIMESTAMP(CAST(d AS TIMESTAMP_NTZ)) < 0 THEN 0"
    )  # 0 before 1970
    assert out.endswith("AS INT)")
    with_format = one("UNIX_TIMESTAMP(s, '%Y-%m-%d %H:%i:%s')")
    assert "REGEXP_EXTRACT(CAST(s AS STRING)" in with_format and with_format.endswith("AS DECIMAL(16, 6))")


# --- STR_TO_DATE --------------------------------------------------------------------------------
def test_str_to_date_type_follows_the_format():
    assert one("STR_TO_DATE(s, '%Y-%m-%d')").startswith("CAST(CONCAT(LPAD(")
    assert one("STR_TO_DATE(s, '%Y-%m-%d')").endswith("AS DATE)")
    assert "AS TIMESTAMP_NTZ)" in one("STR_TO_DATE(s, '%Y-%m-%d %H:%i:%s')")
    # Doris' Java-style format with a time part is a DATETIME
    assert "AS TIMESTAMP_NTZ)" in one("STR_TO_DATE(s, 'yyyy-MM-dd HH:mm:ss')")


def test_str_to_date_regex_is_doris_lenient_reader():
    out = one("STR_TO_DATE(s, '%Y-%m-%d')")
    pattern = sqlglot.parse_one(out, read="spark").find(exp.RegexpExtract).expression.name
    # 1-4 / 1-2 digit fields with the spaces after them; each step may instead end the value
    assert (
        pattern
        == "^\\s*(\\d{1,4})(\\s*)(?:\\s*-(?:\\s*(\\d{1,2})(\\s*)(?:\\s*-(?:\\s*(\\d{1,2})(\\s*)|\\s*$)|\\s*$)|\\s*$)|\\s*$)"
    )
    # a short digits field right before another one is a parse Doris never makes
    assert "CASE WHEN LENGTH(" in one("STR_TO_DATE(s, '%Y%m%d')")


def test_str_to_date_month_names_and_12_hour_clock():
    out = one("STR_TO_DATE(s, '%b %d %Y %h:%i:%s %p')")
    assert "WHEN 'oct' THEN 10" in out and "UPPER(" in out and "% 12" in out


def test_str_to_date_refuses_what_it_cannot_do_rather_than_guess():
    with pytest.raises(GaleneError, match="%X is not supported"):
        one("STR_TO_DATE(s, '%X%V %W')")
    with pytest.raises(GaleneError, match="must be a constant"):
        one("STR_TO_DATE(s, fmt)")


# --- calendar functions -------------------------------------------------------------------------
def test_date_trunc_both_argument_orders_and_date_operands():
    assert (
        one("DATE_TRUNC(d, 'month')")
        == "CAST(DATE_TRUNC('MONTH', CAST(d AS TIMESTAMP_NTZ)) AS TIMESTAMP_NTZ)"
    )
    assert one("DATE_TRUNC('month', d)") == one("DATE_TRUNC(d, 'month')")
    assert one("DATE_TRUNC(CAST(x AS DATE), 'month')") == "TRUNC(CAST(x AS DATE), 'MONTH')"
    with pytest.raises(GaleneError, match="only support argument is"):
        one("DATE_TRUNC(d, 'quar')")


def test_week_and_yearweek_need_a_constant_mode():
    # MySQL's calc_week in closed form: the week's start (Sunday or Monday), its anchor day
    assert one("WEEK(d)") == (
        "CAST((DATEDIFF(DATE_ADD(CAST(TO_DATE(d) AS DATE), -(DAYOFWEEK(CAST(TO_DATE(d) AS DATE)) - 1)), "
        "MAKE_DATE(YEAR(CAST(TO_DATE(d) AS DATE)), 1, 1)) + 7) DIV 7 AS INT)"
    )
    iso = one("YEARWEEK(d, 3)")  # Monday first, the week's Thursday names its year
    assert "* 100 +" in iso and "DATE_ADD(DATE_ADD(CAST(d AS DATE), -((DAYOFWEEK(" in iso and "), 3)" in iso
    with pytest.raises(GaleneError, match="mode must be a constant"):
        one("WEEK(d, m)")


@pytest.mark.parametrize(
    ("doris", "spark_sql"),
    [
        ("TO_DAYS(d)", "DATEDIFF(CAST(d AS DATE), CAST('0001-01-01' AS DATE)) + 366"),
        ("FROM_DAYS(n)", "DATE_ADD(CAST('0001-01-01' AS DATE), n - 366)"),
        ("MAKEDATE(y, n)", "DATE_ADD(MAKE_DATE(y, 1, 1), n - 1)"),
        ("DAYNAME(d)", "DATE_FORMAT(d, 'EEEE')"),
        ("MONTHNAME(d)", "DATE_FORMAT(TO_DATE(d), 'MMMM')"),
        ("MICROSECOND(d)", "CAST(DATE_FORMAT(CAST(d AS TIMESTAMP_NTZ), 'SSSSSS') AS INT)"),
        ("TIMESTAMP(d)", "CAST(d AS TIMESTAMP_NTZ)"),
    ],
)
def test_calendar_functions(doris, spark_sql):
    assert one(doris).replace("(", "").replace(")", "") == spark_sql.replace("(", "").replace(")", "")


# --- GROUP_CONCAT -------------------------------------------------------------------------------
def test_group_concat():
    assert DEFAULT_GROUP_CONCAT_SEPARATOR == ", "
    assert one("GROUP_CONCAT(x)") == "CONCAT_WS(', ', COLLECT_LIST(CAST(x AS STRING)))"
    assert one("GROUP_CONCAT(x, '-')") == "CONCAT_WS('-', COLLECT_LIST(CAST(x AS STRING)))"
    assert one("GROUP_CONCAT(DISTINCT x SEPARATOR ';')") == "CONCAT_WS(';', COLLECT_SET(CAST(x AS STRING)))"
    assert one("GROUP_CONCAT(x ORDER BY y DESC)") == (
        "CONCAT_WS(', ', TRANSFORM(SORT_ARRAY(COLLECT_LIST(NAMED_STRUCT('k0', y, 'v', CAST(x AS STRING))), FALSE), "
        "e -> e.v))"
    )


def test_group_concat_with_keys_in_different_directions_sorts_with_a_comparator():
    out = one("GROUP_CONCAT(x ORDER BY y DESC, z ASC)")
    assert "ARRAY_SORT(COLLECT_LIST(NAMED_STRUCT('k0', y, 'k1', z, 'v'" in out
    assert "WHEN l.k0 < r.k0 THEN 1" in out and "WHEN l.k1 < r.k1 THEN -1" in out


# --- JSON ---------------------------------------------------------------------------------------
def test_json_getters():
    assert one("GET_JSON_STRING(j, '$.k')").startswith("COALESCE(GET_JSON_OBJECT(j, '$.k'), IF(")
    assert one("GET_JSON_INT(j, '$.n')") == "CAST(GET_JSON_OBJECT(j, '$.n') AS INT)"
    assert one("GET_JSON_BIGINT(j, '$.n')") == "CAST(GET_JSON_OBJECT(j, '$.n') AS BIGINT)"
    assert one("JSON_EXTRACT_DOUBLE(j, '$.n')") == "CAST(GET_JSON_OBJECT(j, '$.n') AS DOUBLE)"
    # Doris path spellings: $.[1] and quoted keys with dots
    assert (
        one("GET_JSON_INT(j, '$.\"my.key\"[1]')") == "CAST(GET_JSON_OBJECT(j, '$[\\'my.key\\'][1]') AS INT)"
    )
    assert one("GET_JSON_INT(j, '$.[1]')") == "CAST(GET_JSON_OBJECT(j, '$[1]') AS INT)"


def test_json_extract_keeps_json_text():
    assert one("JSON_EXTRACT(j, '$.k')") == "TO_JSON(TRY_VARIANT_GET(TRY_PARSE_JSON(j), '$.k'))"
    several = one("JSON_EXTRACT(j, '$.a', '$.b')")
    assert several.startswith("IF(j IS NULL, NULL, CONCAT('[', CONCAT_WS(',', COALESCE(TO_JSON(")


def test_json_constructors():
    assert one("JSON_ARRAY()") == "'[]'"
    assert one("JSON_ARRAY(1, 'a')") == (
        "CONCAT('[', CONCAT_WS(',', COALESCE(TO_JSON(CAST(1 AS VARIANT)), 'null'), "
        "COALESCE(TO_JSON(CAST('a' AS VARIANT)), 'null')), ']')"
    )
    assert one("JSON_OBJECT('k', v)") == (
        "CONCAT('{', CONCAT_WS(',', CONCAT(COALESCE(TO_JSON(CAST('k' AS VARIANT)), 'null'), ':', "
        "COALESCE(TO_JSON(CAST(v AS VARIANT)), 'null'))), '}')"
    )
    assert (
        one("JSON_VALID(j)")
        == "CASE WHEN j IS NULL THEN NULL WHEN TRY_PARSE_JSON(j) IS NULL THEN 0 ELSE 1 END"
    )


# --- strings ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("doris", "spark_sql"),
    [
        ("LENGTH(s)", "OCTET_LENGTH(s)"),  # Doris: bytes
        ("CHAR_LENGTH(s)", "CHAR_LENGTH(s)"),
        ("LOCATE('a', s)", "LOCATE('a', s)"),
        ("LOCATE('a', s, 2)", "LOCATE('a', s, 2)"),
        ("INSTR(s, 'a')", "LOCATE('a', s)"),
        ("LPAD(s, 5, 'xy')", "LPAD(s, 5, 'xy')"),
        ("SPLIT_PART(s, '.', 2)", "GET(SPLIT(s, '\\\\.', -1), 1)"),
        ("SPLIT_PART(s, ',', -1)", "GET(SPLIT(s, ',', -1), SIZE(SPLIT(s, ',', -1)) + (-1))"),
        ("SPLIT_PART(s, ',', 0)", "NULL"),
        ("REGEXP_EXTRACT(s, '([a-z]+)', 2)", "REGEXP_EXTRACT(s, '([a-z]+)', 2)"),
        ("REGEXP_EXTRACT(s, '([[:lower:]]+)', 1)", "REGEXP_EXTRACT(s, '([a-z]+)', 1)"),
        ("s REGEXP '^[[:digit:]]+$'", "s RLIKE '^[0-9]+$'"),
        ("REGEXP_REPLACE(s, '(b)', '<\\\\1>')", "REGEXP_REPLACE(s, '(b)', '<$1>')"),
        ("STRLEFT(s, 2)", "LEFT(s, 2)"),
        ("STRRIGHT(s, 2)", "RIGHT(s, 2)"),
        ("NULL_OR_EMPTY(s)", "(s IS NULL OR s = '')"),
        ("NOT_NULL_OR_EMPTY(s)", "(NOT s IS NULL AND s <> '')"),
        ("SUBSTRING_INDEX(s, '.', 1)", "SUBSTRING_INDEX(s, '.', 1)"),
        ("CONCAT_WS(',', a, NULL)", "CONCAT_WS(',', a, NULL)"),
        ("MD5(s)", "MD5(s)"),
        ("REVERSE(s)", "REVERSE(s)"),
        ("TRUNCATE(x, 2)", "CASE WHEN x < 0 THEN CEIL(x, 2) ELSE FLOOR(x, 2) END"),
    ],
)
def test_string_functions(doris, spark_sql):
    assert one(doris) == spark_sql


def test_locate_with_a_position_and_an_unknown_substring_follows_doris_empty_rules():
    out = one("LOCATE(sub, s, p)")
    assert "WHEN sub = '' THEN CASE WHEN p = 1 OR (p >= 1 AND p <= LENGTH(s)) THEN p ELSE 0 END" in out


def test_empty_pad_gives_an_empty_string():
    assert (
        one("LPAD(s, 5, '')")
        == "CASE WHEN s IS NULL OR 5 IS NULL OR '' IS NULL THEN NULL WHEN '' = '' THEN '' ELSE LPAD(s, 5, '') END"
    )
    assert "WHEN f = '' THEN ''" in one("RPAD(s, 5, f)")


def test_literal_separators_are_required_where_doris_requires_them():
    with pytest.raises(GaleneError, match="must be constant"):
        one("SPLIT_PART(s, sep, 1)")
    assert "EXPLODE(SPLIT(s, '\\\\.', -1))" in spark(
        "SELECT e FROM t LATERAL VIEW EXPLODE_SPLIT(s, '.') tmp AS e"
    )


# --- literal arithmetic -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("doris", "spark_sql"),
    [
        ("1 + 1", "CAST(2 AS SMALLINT)"),  # TINYINT + TINYINT -> SMALLINT
        ("100 * 100", "CAST(10000 AS SMALLINT)"),
        ("1000 + 1", "CAST(1001 AS INT)"),  # SMALLINT + TINYINT -> INT
        ("2147483647 + 1", "CAST(2147483648 AS BIGINT)"),  # INT + TINYINT -> BIGINT
        ("9223372036854775807 + 1", "CAST(9223372036854775808 AS DECIMAL(38, 0))"),  # -> LARGEINT
        ("1 + 2 + 3", "CAST(6 AS INT)"),  # (SMALLINT) + TINYINT -> INT
        ("7 / 2", "CAST(3.5 AS DOUBLE)"),
        ("1 / 0", "CAST(NULL AS DOUBLE)"),
        ("1.5 * 2.25", "CAST('3.375' AS DECIMAL(5, 3))"),
        ("1.5 + 2.25", "CAST('3.75' AS DECIMAL(4, 2))"),
        ("5.0 / 3", "CAST('1.66666' AS DECIMAL(6, 5))"),  # s1 + 4 digits, truncated
        ("k + 1", "k + 1"),  # a column's type is the engine's business
        ("7 DIV 2", "7 DIV 2"),
        ("-7 % 3", "-7 % 3"),
    ],
)
def test_literal_arithmetic_is_folded_with_doris_types(doris, spark_sql):
    assert one(doris) == spark_sql


def test_cast_types():
    assert one("CAST(a AS DATETIME)") == "CAST(a AS TIMESTAMP_NTZ)"
    assert one("CAST(a AS VARCHAR(10))") == "CAST(a AS STRING)"
    assert one("CAST(a AS JSON)") == "CAST(a AS STRING)"
    # LARGEINT is DECIMAL(38, 0) to the engines, through Doris' integer rule (below).
    largeint = one("CAST(a AS LARGEINT)")
    assert largeint.startswith("CASE WHEN TYPEOF(a) = 'string' THEN") and "DECIMAL(38, 0)" in largeint
    assert one("CAST(a AS DECIMAL(38, 0))") == "CAST(a AS DECIMAL(38, 0))"


@pytest.mark.parametrize(
    ("doris", "spark_sql"),
    [
        # Constants are folded by galene.common.intcast's rule (Doris' string_to_int, truncation).
        ("CAST('20.50' AS BIGINT)", "CAST(20 AS BIGINT)"),
        ("CAST(' -3.9 ' AS INT)", "CAST(-3 AS INT)"),
        ("CAST('.5' AS INT)", "CAST(NULL AS INT)"),
        ("CAST('1e3' AS INT)", "CAST(NULL AS INT)"),
        ("CAST('128' AS TINYINT)", "CAST(NULL AS TINYINT)"),
        ("CAST(20.59 AS BIGINT)", "CAST(20 AS BIGINT)"),
        ("CAST(-0.5 AS SMALLINT)", "CAST(0 AS SMALLINT)"),
        ("CAST(1.5e3 AS INT)", "CAST(1500 AS INT)"),
        ("CAST(1e20 AS BIGINT)", "CAST(NULL AS BIGINT)"),
        ("CAST(300 AS TINYINT)", "CAST(NULL AS TINYINT)"),
        ("CAST('42' AS LARGEINT)", "CAST(42 AS DECIMAL(38, 0))"),
        ("CAST(NULL AS INT)", "CAST(NULL AS INT)"),
        ("CAST(1 + 1 AS TINYINT)", "CAST(2 AS TINYINT)"),
    ],
)
def test_integer_casts_of_constants_are_folded_by_dorises_rule(doris, spark_sql):
    assert one(doris) == spark_sql


def test_integer_cast_of_an_expression_dispatches_on_its_type():
    sql = one("CAST(s AS INT)")
    # The operand is read only as text and converted only by TRY_CAST: text through intcast's
    # regular expression, integers and doubles by TRY_CAST, dates as yyyymmdd.
    assert sql.startswith("CASE WHEN TYPEOF(s) = 'string' THEN CASE WHEN CAST(s AS STRING) RLIKE '^[ ")
    assert "WHEN TYPEOF(s) IN ('tinyint', 'smallint', 'int', 'bigint') THEN TRY_CAST(CAST(s AS STRING) AS INT)" in sql
    assert "THEN TRY_CAST(TRY_CAST(CAST(s AS STRING) AS DOUBLE) AS INT)" in sql
    assert "WHEN TYPEOF(s) = 'date' THEN TRY_CAST(SUBSTRING(" in sql
    assert "CAST(s AS INT)" not in sql and "TYPEOF(s) LIKE 'timestamp%'" not in sql  # no DATETIME → INT in Doris
    assert "TYPEOF(s) LIKE 'timestamp%'" in one("CAST(s AS BIGINT)")


def test_functions_spark_reads_the_same_way_pass_through():
    for doris, spark_sql in [
        ("IFNULL(a, 0)", "COALESCE(a, 0)"),
        ("NVL(a, 0)", "COALESCE(a, 0)"),
        ("NULLIF(a, 0)", "NULLIF(a, 0)"),
        ("IF(a > 0, 1, 2)", "IF(a > 0, 1, 2)"),
        ("COALESCE(a, b)", "COALESCE(a, b)"),
        ("LAG(a, 1, 0) OVER (ORDER BY b)", "LAG(a, 1, 0) OVER (ORDER BY b)"),
        ("FIRST_VALUE(a) OVER (ORDER BY b)", "FIRST_VALUE(a) OVER (ORDER BY b)"),
    ]:
        assert one(doris) == spark_sql


def test_window_functions():
    # ROW_NUMBER / RANK / DENSE_RANK / NTILE are BIGINT in Doris, INT in Spark
    for name in ("ROW_NUMBER()", "RANK()", "DENSE_RANK()", "NTILE(4)"):
        assert (
            one(f"{name} OVER (PARTITION BY a ORDER BY b)")
            == f"CAST({name} OVER (PARTITION BY a ORDER BY b) AS BIGINT)"
        )
    assert one("PERCENT_RANK() OVER (ORDER BY b)") == "PERCENT_RANK() OVER (ORDER BY b)"  # DOUBLE in both
    # FIRST_VALUE / LAST_VALUE(expr, ignore_null): Doris takes a boolean or a number, Spark a boolean literal
    assert one("FIRST_VALUE(a, true) OVER (ORDER BY b)") == "FIRST_VALUE(a, TRUE) OVER (ORDER BY b)"
    assert one("LAST_VALUE(a, 1) OVER (ORDER BY b)") == "LAST_VALUE(a, TRUE) OVER (ORDER BY b)"
    assert one("last_value(a, 0) OVER (ORDER BY b)") == "LAST_VALUE(a) OVER (ORDER BY b)"
    assert one("FIRST_VALUE(a, false) OVER (ORDER BY b)") == "FIRST_VALUE(a) OVER (ORDER BY b)"
    with pytest.raises(GaleneError, match="ignore_null"):
        one("FIRST_VALUE(a, c) OVER (ORDER BY b)")
    # the statement keeps Doris' spelling (views store it)
    assert parse_statement("SELECT FIRST_VALUE(a, 1) OVER (ORDER BY b) FROM t").expr.sql("doris") == (
        "SELECT FIRST_VALUE(a, 1) OVER (ORDER BY b) FROM t"
    )


def test_labels_are_taken_before_rewriting():
    out = spark("SELECT 1 + 1, DATE_FORMAT(d, '%Y') FROM t")
    names = [e.alias for e in sqlglot.parse_one(out, read="spark").expressions]
    assert names == ["1 + 1", "DATE_FORMAT(d, '%Y')"]
