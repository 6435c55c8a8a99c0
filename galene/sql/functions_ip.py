"""Doris' IP functions on Spark: the IPV4/IPV6 family of the Doris → Spark function
translation (`galene.sql.functions` dispatches here by name).

IPV4/IPV6 values are stored as their canonical text ('1.2.3.4', '2001:db8::1';
galene/common/types.py). Doris' rules (docs, sql-manual/sql-functions/scalar-functions/
ip-functions/*):

* IPV4_NUM_TO_STRING / INET_NTOA(n): 'A.B.C.D', NULL for n < 0 or n > 4294967295.
* IPV4_STRING_TO_NUM(s): the number, an error for an invalid address; _OR_DEFAULT → 0,
  _OR_NULL and INET_ATON → NULL. TO_IPV4(s) (error) / TO_IPV4_OR_DEFAULT ('0.0.0.0') /
  TO_IPV4_OR_NULL and CAST(s AS IPV4) (NULL): the canonical text.
* IS_IPV4_STRING / IS_IPV6_STRING: BOOLEAN, NULL for NULL. TO_IPV6[_OR_NULL|_OR_DEFAULT] and
  CAST(s AS IPV6): the RFC 5952 text (as the load stores it: galene/load/text_types.py).
* IPV6_STRING_TO_NUM[_OR_DEFAULT|_OR_NULL] / INET6_ATON: the 16 bytes (an IPv4 text as
  ::ffff:a.b.c.d); IPV6_NUM_TO_STRING / INET6_NTOA: their text (NULL unless 16 bytes).
* IPV4_CIDR_TO_RANGE(ip, prefix): STRUCT<min, max>; IS_IP_ADDRESS_IN_RANGE(ip, 'a.b.c.d/n')
  for IPv4 addresses.
"""

from __future__ import annotations

from sqlglot import exp

from galene.common.errors import GaleneError
from galene.sql.sqlbuild import call, cast, let, string, template

NAMES = frozenset(
    {
        "IPV4_NUM_TO_STRING", "INET_NTOA", "IPV4_STRING_TO_NUM", "IPV4_STRING_TO_NUM_OR_DEFAULT",
        "IPV4_STRING_TO_NUM_OR_NULL", "INET_ATON", "IS_IPV4_STRING", "IS_IPV6_STRING", "TO_IPV4",
        "TO_IPV4_OR_DEFAULT", "TO_IPV4_OR_NULL", "TO_IPV6", "TO_IPV6_OR_DEFAULT", "TO_IPV6_OR_NULL",
        "IPV4_CIDR_TO_RANGE", "IS_IP_ADDRESS_IN_RANGE", "IPV6_NUM_TO_STRING", "INET6_NTOA",
        "IPV6_STRING_TO_NUM", "IPV6_STRING_TO_NUM_OR_DEFAULT", "IPV6_STRING_TO_NUM_OR_NULL", "INET6_ATON",
    }
)  # fmt: skip

_OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
IPV4_PATTERN = f"^{_OCTET}[.]{_OCTET}[.]{_OCTET}[.]{_OCTET}$"
# RFC 4291 text forms: eight groups, one `::` for a run of zero groups, an IPv4 tail.
_H = "[0-9A-Fa-f]{1,4}"
_V4 = f"{_OCTET}([.]{_OCTET}){{3}}"
IPV6_PATTERN = (
    f"^(({_H}:){{7}}{_H}|({_H}:){{1,7}}:|({_H}:){{1,6}}:{_H}|({_H}:){{1,5}}(:{_H}){{1,2}}"
    f"|({_H}:){{1,4}}(:{_H}){{1,3}}|({_H}:){{1,3}}(:{_H}){{1,4}}|({_H}:){{1,2}}(:{_H}){{1,5}}"
    f"|{_H}:(:{_H}){{1,6}}|:((:{_H}){{1,7}}|:)|({_H}:){{6}}{_V4}|::([fF]{{4}}(:0{{1,4}})?:)?{_V4}"
    f"|({_H}:){{1,4}}:{_V4})$"
)


def _number(text: exp.Expr) -> exp.Expr:
    """The BIGINT of a valid dotted-quad (NULL otherwise)."""
    return let(call("trim", cast(text, "STRING")), lambda s: _number_of(s))


def _number_of(s: exp.Expr) -> exp.Expr:
    return template(
        f"CASE WHEN __s RLIKE '{IPV4_PATTERN}' THEN"
        " try_cast(split(__s, '[.]')[0] AS BIGINT) * 16777216 + try_cast(split(__s, '[.]')[1] AS BIGINT) * 65536"
        " + try_cast(split(__s, '[.]')[2] AS BIGINT) * 256 + try_cast(split(__s, '[.]')[3] AS BIGINT) END",
        s=s,
    )


def _text(number: exp.Expr) -> exp.Expr:
    """'A.B.C.D' of a number, NULL outside 0..4294967295."""
    return let(cast(number, "BIGINT"), _text_of)


def _canonical(text: exp.Expr) -> exp.Expr:
    """'A.B.C.D' of a valid dotted-quad text (leading zeros dropped), NULL otherwise."""
    return let(call("trim", cast(text, "STRING")), lambda s: let(_number_of(s), _text_of))


def _text_of(n: exp.Expr) -> exp.Expr:
    return template(
        "CASE WHEN __n >= 0 AND __n <= 4294967295 THEN concat_ws('.',"
        " CAST(__n div 16777216 AS STRING), CAST(__n div 65536 % 256 AS STRING),"
        " CAST(__n div 256 % 256 AS STRING), CAST(__n % 256 AS STRING)) END",
        n=n,
    )


def _or_error(given: exp.Expr, convert, message: str) -> exp.Expr:
    """convert(given), an error when that is NULL for a non-NULL `given` (each read once)."""
    return let(
        given,
        lambda g: let(
            convert(g),
            lambda v: template(
                f"CASE WHEN __g IS NULL THEN NULL WHEN __v IS NOT NULL THEN __v ELSE raise_error('{message}') END",
                v=v,
                g=g,
            ),
        ),
    )


def _ipv6_groups(s: exp.Expr) -> exp.Expr:
    """The eight 16-bit groups (array<int>) of a valid lower-case IPv6 text: an IPv4 tail
    (`::ffff:1.2.3.4`) becomes two groups, `::` the missing zero groups."""
    return let(
        template(
            "IF(substring_index(__s, ':', -1) LIKE '%.%', concat(substring(__s, 1, length(__s)"
            " - length(substring_index(__s, ':', -1))), lower(hex(try_cast(split(CAST(substring_index(__s, ':', -1) AS STRING),"
            " '[.]')[0] AS INT) * 256 + try_cast(split(CAST(substring_index(__s, ':', -1) AS STRING), '[.]')[1] AS INT))), ':',"
            " lower(hex(try_cast(split(CAST(substring_index(__s, ':', -1) AS STRING), '[.]')[2] AS INT) * 256"
            " + try_cast(split(CAST(substring_index(__s, ':', -1) AS STRING), '[.]')[3] AS INT)))), __s)",
            s=s,
        ),
        lambda h: let(
            template(
                "IF(instr(__h, '::') > 0, IF(substring_index(__h, '::', 1) = '', CAST(array() AS ARRAY<STRING>),"
                " split(CAST(substring_index(__h, '::', 1) AS STRING), ':')), split(__h, ':'))",
                h=h,
            ),
            lambda head: let(
                template(
                    "IF(instr(__h, '::') > 0 AND substring_index(__h, '::', -1) != '',"
                    " split(CAST(substring_index(__h, '::', -1) AS STRING), ':'), CAST(array() AS ARRAY<STRING>))",
                    h=h,
                ),
                lambda tail: template(
                    "transform(concat(__a, array_repeat('0', 8 - size(__a) - size(__b)), __b),"
                    " g -> CAST(conv(g, 16, 10) AS INT))",
                    a=head,
                    b=tail,
                ),
            ),
        ),
    )


_ZERO_RUNS = [":" + "0:" * k for k in range(8, 1, -1)]  # the longest run of zero groups first


def _ipv6_text(groups: exp.Expr) -> exp.Expr:
    """RFC 5952 text of eight groups (lower case, the first longest run of two or more zero
    groups as `::`), an IPv4-mapped or -compatible address with its IPv4 part dotted, as Doris
    (ClickHouse's formatIPv6) and the load (galene/load/text_types.py) print them."""

    def compressed(j: exp.Expr) -> exp.Expr:
        cases = " ".join(
            f"WHEN instr(__j, '{run}') > 0 THEN concat(IF(substring_index(__j, '{run}', 1) = '', '',"
            f" substring(substring_index(__j, '{run}', 1), 2)), '::', IF(substring(__j, instr(__j, '{run}')"
            f" + {len(run)}) = '', '', substring(substring(__j, instr(__j, '{run}') + {len(run)}), 1,"
            f" length(substring(__j, instr(__j, '{run}') + {len(run)})) - 1)))"
            for run in _ZERO_RUNS
        )
        return template(f"CASE {cases} ELSE substring(__j, 2, length(__j) - 2) END", j=j)

    dotted = "concat_ws('.', CAST(__g[6] div 256 AS STRING), CAST(__g[6] % 256 AS STRING), CAST(__g[7] div 256 AS STRING), CAST(__g[7] % 256 AS STRING))"
    return let(
        groups,
        lambda g: template(
            "CASE WHEN __g IS NULL THEN NULL"
            f" WHEN array_join(slice(__g, 1, 5), ',') = '0,0,0,0,0' AND __g[5] = 65535 THEN concat('::ffff:', {dotted})"
            f" WHEN array_join(slice(__g, 1, 6), ',') = '0,0,0,0,0,0' AND __g[6] != 0 THEN concat('::', {dotted})"
            " ELSE __c END",
            g=g,
            c=let(template("concat(':', array_join(transform(__g, x -> lower(hex(x))), ':'), ':')", g=g), compressed),
        ),
    )  # fmt: skip


def _ipv6(text: exp.Expr) -> exp.Expr:
    """The canonical text of an IPv6 address text; NULL when it is none."""
    return let(
        template("lower(trim(CAST(__s AS STRING)))", s=text),
        lambda s: template(f"IF(__s RLIKE '{IPV6_PATTERN}', __t, NULL)", s=s, t=_ipv6_text(_ipv6_groups(s))),
    )


def _ipv6_bytes(text: exp.Expr) -> exp.Expr:
    """IPV6_STRING_TO_NUM: the 16 bytes of an IPv6 text (an IPv4 text as ::ffff:a.b.c.d); NULL
    when it is neither."""
    return let(
        template("lower(trim(CAST(__s AS STRING)))", s=text),
        lambda s: template(
            f"CASE WHEN __s RLIKE '{IPV6_PATTERN}' THEN unhex(array_join(transform(__g, x -> lpad(hex(x), 4, '0')), ''))"
            f" WHEN __s RLIKE '{IPV4_PATTERN}' THEN unhex(concat('00000000000000000000FFFF', lpad(hex(__n), 8, '0'))) END",
            s=s,
            g=_ipv6_groups(s),
            n=_number_of(s),
        ),
    )  # fmt: skip


def _ipv6_from_bytes(value: exp.Expr) -> exp.Expr:
    """IPV6_NUM_TO_STRING: the text of 16 bytes; NULL for another length."""
    return let(
        template("lower(hex(__b))", b=value),
        lambda h: template(
            "IF(length(__h) = 32, __t, NULL)",
            h=h,
            t=_ipv6_text(
                template(
                    "transform(sequence(0, 7), i -> CAST(conv(substring(__h, i * 4 + 1, 4), 16, 10) AS INT))",
                    h=h,
                )
            ),
        ),
    )


def to_ipv4(value: exp.Expr) -> exp.Expr:
    """CAST(x AS IPV4): the canonical text of an address or of a number; NULL when invalid."""
    return let(
        cast(value, "STRING"),
        lambda x: template(
            "coalesce(__t, IF(__x RLIKE '^[0-9]+$', __n, NULL))",
            t=_canonical(x),
            x=x,
            n=_text(template("try_cast(__x AS BIGINT)", x=x)),
        ),
    )


def to_ipv6(value: exp.Expr) -> exp.Expr:
    return _ipv6(value)


def rewrite(name: str, args: list[exp.Expr]) -> exp.Expr | None:
    n = len(args)
    if name in ("IPV4_NUM_TO_STRING", "INET_NTOA") and n == 1:
        return _text(args[0])
    if name == "IPV4_STRING_TO_NUM" and n == 1:
        return _or_error(args[0], _number, "Invalid IPv4 value")
    if name == "IPV4_STRING_TO_NUM_OR_DEFAULT" and n == 1:
        return call("coalesce", _number(args[0]), template("CAST(0 AS BIGINT)"))
    if name in ("IPV4_STRING_TO_NUM_OR_NULL", "INET_ATON") and n == 1:
        return _number(args[0])
    if name == "IS_IPV4_STRING" and n == 1:
        return template(f"trim(__s) RLIKE '{IPV4_PATTERN}'", s=cast(args[0], "STRING"))
    if name == "IS_IPV6_STRING" and n == 1:
        return template(f"trim(__s) RLIKE '{IPV6_PATTERN}'", s=cast(args[0], "STRING"))
    if name == "TO_IPV4" and n == 1:
        return _or_error(args[0], _canonical, "Invalid IPv4 value")
    if name == "TO_IPV4_OR_DEFAULT" and n == 1:
        return call("coalesce", _canonical(args[0]), string("0.0.0.0"))
    if name == "TO_IPV4_OR_NULL" and n == 1:
        return _canonical(args[0])
    if name == "TO_IPV6" and n == 1:
        return _or_error(args[0], _ipv6, "Invalid IPv6 value")
    if name == "TO_IPV6_OR_DEFAULT" and n == 1:
        return call("coalesce", _ipv6(args[0]), string("::"))
    if name == "TO_IPV6_OR_NULL" and n == 1:
        return _ipv6(args[0])
    if name in ("IPV6_NUM_TO_STRING", "INET6_NTOA") and n == 1:
        return _ipv6_from_bytes(args[0])
    if name == "IPV6_STRING_TO_NUM" and n == 1:
        return _or_error(args[0], _ipv6_bytes, "Invalid IPv6 value")
    if name == "IPV6_STRING_TO_NUM_OR_DEFAULT" and n == 1:
        return call("coalesce", _ipv6_bytes(args[0]), call("unhex", string("0" * 32)))
    if name in ("IPV6_STRING_TO_NUM_OR_NULL", "INET6_ATON") and n == 1:
        return _ipv6_bytes(args[0])
    if name == "IPV4_CIDR_TO_RANGE" and n == 2:
        block = template("CAST(pow(2, 32 - __p) AS BIGINT)", p=args[1])
        return let(
            call("trim", cast(args[0], "STRING")),
            lambda s: let(
                _number_of(s),
                lambda ip: template(
                    "CASE WHEN __p < 0 OR __p > 32 THEN raise_error('Illegal cidr value')"
                    " ELSE named_struct('min', __lo, 'max', __hi) END",
                    p=args[1],
                    lo=_text(template("__n - __n % __b", n=ip, b=block)),
                    hi=_text(template("__n - __n % __b + __b - 1", n=ip, b=block)),
                ),
            ),
        )
    if name == "IS_IP_ADDRESS_IN_RANGE" and n == 2:
        ip, cidr = _number(args[0]), cast(args[1], "STRING")
        prefix = template("try_cast(substring_index(__c, '/', -1) AS INT)", c=cidr)
        network = _number(template("substring_index(__c, '/', 1)", c=cidr))
        block = template("CAST(pow(2, 32 - __p) AS BIGINT)", p=prefix)
        return template(
            "CASE WHEN __a IS NULL OR __c IS NULL THEN NULL"
            " WHEN __ip IS NULL OR __net IS NULL OR NOT (__c RLIKE '/[0-9]{1,2}$') OR __p > 32"
            " THEN raise_error('is_ip_address_in_range: an IPv4 address and an IPv4 CIDR are expected')"
            " ELSE __ip - __ip % __b = __net - __net % __b END",
            a=args[0],
            c=cidr,
            ip=ip,
            net=network,
            p=prefix,
            b=block,
        )
    if name.startswith(("IPV4_", "IS_IP", "TO_IPV")):
        raise GaleneError(f"{name.lower()}: wrong number of arguments ({n})")
    return None
