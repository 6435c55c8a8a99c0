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
  CAST(s AS IPV6): the address in lower case when valid (IPv6 text is kept as written
  otherwise: zero runs are not re-compressed here).
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
        "IPV4_CIDR_TO_RANGE", "IS_IP_ADDRESS_IN_RANGE",
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


def _ipv6(text: exp.Expr) -> exp.Expr:
    return template(f"IF(trim(__s) RLIKE '{IPV6_PATTERN}', lower(trim(__s)), NULL)", s=cast(text, "STRING"))


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
