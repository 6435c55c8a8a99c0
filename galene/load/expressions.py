"""Stream-load expressions: the `columns` mappings, `where`, `delete` and sequence headers.

Owns the small SQL expression language of a load: parsing header text with the Galene
sqlglot dialect, and evaluating an AST over whole Arrow columns with pyarrow.compute — one
kernel call per node per batch, never a Python loop over rows.

Typing follows Doris' load planner loosely: source fields of text formats are strings;
where a string meets a number it is read as a number (int64 when every value is an
integer, else float64), where it meets a date or datetime it is read as one; a value that
does not read becomes NULL, as Doris' implicit casts do. Functions Galene does not know
raise a `LoadError` naming them, so a typo never loads silently wrong data. Text read as a
number or a date, a result brought to its column's type (`CAST`, the mapped column) and a
value printed as text all go through Doris' type conversion (`galene.load.convert`).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from galene.common.errors import LoadError
from galene.common.types import ColumnType, TypeError_, parse_type
from galene.load import state_functions
from galene.load.convert import coerce, convert_strings, days_from_civil, strftime, to_text
from galene.sql.ddl.columns import column_type_from_datatype
from galene.sql.dialect import Galene

Value = pa.Array | pa.ChunkedArray | pa.Scalar


@dataclass(frozen=True)
class ColumnSpec:
    """One entry of the `columns` header: a source field name, or `name = expression`."""

    name: str
    expr: exp.Expression | None = None


def _invalid(message: str) -> LoadError:
    return LoadError(f"[INVALID_ARGUMENT]{message}")


def _parse_select(text: str, header: str) -> list[exp.Expression]:
    try:
        tree = sqlglot.parse_one(f"SELECT {text}", read=Galene)
    except ParseError as e:
        raise _invalid(f"failed to parse the `{header}` header [{text}]: {e}") from None
    if not isinstance(tree, exp.Select) or tree.args.get("from_") or tree.args.get("where"):
        raise _invalid(f"failed to parse the `{header}` header [{text}]")
    return list(tree.expressions)


def parse_columns(text: str) -> list[ColumnSpec]:
    """The `columns` header: plain names (back-quoted or not) and `name = expr` mappings."""
    specs: list[ColumnSpec] = []
    seen: set[str] = set()
    for node in _parse_select(text, "columns"):
        if isinstance(node, exp.EQ) and isinstance(node.this, exp.Column):
            spec = ColumnSpec(node.this.name, node.expression)
        elif isinstance(node, exp.Column) and not node.table:
            spec = ColumnSpec(node.name)
        else:
            raise _invalid(
                f"Invalid columns header: {text}: [{node.sql(dialect=Galene)}] is not a column name"
            )
        if not spec.name:
            raise _invalid(f"Invalid columns header: {text}")
        if spec.name.lower() in seen and spec.expr is None:
            raise _invalid(f"Duplicate column: {spec.name}")
        seen.add(spec.name.lower())
        specs.append(spec)
    return specs


def parse_condition(text: str, header: str) -> exp.Expression:
    """A boolean header expression (`where`, `delete`)."""
    nodes = _parse_select(text, header)
    if len(nodes) != 1:
        raise _invalid(f"failed to parse the `{header}` header [{text}]")
    return nodes[0]


def referenced_columns(expr: exp.Expression) -> set[str]:
    return {c.name.lower() for c in expr.find_all(exp.Column)}


@dataclass
class EvalContext:
    """What an expression sees besides its columns: the batch size and the load's clock."""

    num_rows: int
    now: _dt.datetime  # load start, naive, in the load's time zone: now() is one value per load
    timezone: str = "Asia/Shanghai"


def evaluate(expr: exp.Expression, columns: Mapping[str, Value], ctx: EvalContext) -> pa.Array:
    """Evaluate `expr` over `columns` (lower-case names) to an array of ctx.num_rows values."""
    value = _Evaluator(columns, ctx).eval(expr)
    return broadcast(value, ctx.num_rows)


def broadcast(value: Value, n: int) -> pa.Array:
    if isinstance(value, pa.ChunkedArray):
        return value.combine_chunks() if value.num_chunks != 1 else value.chunk(0)
    if isinstance(value, pa.Array):
        return value
    if not value.is_valid:
        return pa.nulls(n, value.type if value.type != pa.null() else pa.null())
    return pa.array([value.as_py()], value.type).take(np.zeros(n, dtype=np.int32))


# --- typing helpers ------------------------------------------------------------------------------

_DATETIME6 = ColumnType(name="DATETIME", precision=6)
_DATE = ColumnType(name="DATE")
_INT_RE = r"^\s*[+-]?[0-9]{1,19}\s*$"


def _t(v: Value) -> pa.DataType:
    return v.type


def _is_str(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _is_num(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _is_null(t: pa.DataType) -> bool:
    return pa.types.is_null(t)


def _null(t: pa.DataType) -> pa.Scalar:
    return pa.scalar(None, t)


def _cast(v: Value, t: pa.DataType, safe: bool = True) -> Value:
    if v.type == t:
        return v
    return pc.cast(v, t, safe=safe)


def _text_to_number(v: Value) -> Value:
    """Strings as numbers: int64 when every value is an integer literal, else float64."""
    if isinstance(v, pa.Scalar):
        text = v.as_py()
        if text is None:
            return _null(pa.int64())
        arr = _text_to_number(pa.array([text], pa.string()))
        return arr[0]
    trimmed = pc.utf8_trim_whitespace(v)
    is_int = pc.match_substring_regex(trimmed, _INT_RE)
    if pc.all(pc.or_kleene(is_int, pc.is_null(trimmed))).as_py() is not False:
        try:
            return pc.cast(trimmed, pa.int64())
        except pa.ArrowInvalid:  # a 19-digit value beyond int64
            pass
    conv = convert_strings(trimmed, ColumnType(name="DOUBLE"))
    return conv.values


def _as_number(v: Value) -> Value:
    t = _t(v)
    if _is_str(t):
        return _text_to_number(v)
    if pa.types.is_boolean(t):
        return _cast(v, pa.int64())
    if _is_null(t):
        return _cast(v, pa.int64())
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        # Doris reads a date as the number yyyymmdd[hhmmss] in arithmetic; rare in loads.
        raise LoadError(
            "[INVALID_ARGUMENT]arithmetic on DATE/DATETIME values is not supported in load expressions"
        )
    return v


def _as_temporal(v: Value, like: pa.DataType) -> Value:
    """Strings (and dates) as `like` (date32 or timestamp[us]); unreadable text -> NULL."""
    t = _t(v)
    if t == like:
        return v
    if _is_str(t):
        ctype = _DATE if pa.types.is_date(like) else _DATETIME6
        if isinstance(v, pa.Scalar):
            conv = convert_strings(pa.array([v.as_py()], pa.string()), ctype)
            return conv.values[0]
        return convert_strings(v, ctype).values
    if pa.types.is_date(t) and pa.types.is_timestamp(like):
        return pc.cast(v, pa.timestamp("us"))
    if pa.types.is_timestamp(t) and pa.types.is_date(like):
        return pc.cast(v, pa.date32())
    if _is_null(t):
        return _cast(v, like)
    return v


def _to_temporal_any(v: Value) -> Value:
    """A value as a date or datetime: text reads as DATETIME (a date reads at midnight)."""
    t = _t(v)
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return v
    return _as_temporal(v, pa.timestamp("us"))


def _unify_numbers(a: Value, b: Value) -> tuple[Value, Value]:
    ta, tb = _t(a), _t(b)
    if pa.types.is_floating(ta) or pa.types.is_floating(tb):
        return _cast(a, pa.float64()), _cast(b, pa.float64())
    if pa.types.is_decimal(ta) or pa.types.is_decimal(tb):
        if pa.types.is_decimal(ta) and pa.types.is_decimal(tb):
            return a, b
        # decimal with an integer: Arrow promotes the integer itself.
        return a, b
    return _cast(a, pa.int64()), _cast(b, pa.int64())


def _unify(a: Value, b: Value) -> tuple[Value, Value]:
    """Two values brought to one type for comparison or a branch result."""
    ta, tb = _t(a), _t(b)
    if ta == tb:
        return a, b
    if _is_null(ta):
        return _cast(a, tb), b
    if _is_null(tb):
        return a, _cast(b, ta)
    temporal = [t for t in (ta, tb) if pa.types.is_date(t) or pa.types.is_timestamp(t)]
    if temporal:
        like = pa.timestamp("us") if any(pa.types.is_timestamp(t) for t in temporal) else pa.date32()
        return _as_temporal(a, like), _as_temporal(b, like)
    if _is_str(ta) and _is_str(tb):
        return _cast(a, pa.string()), _cast(b, pa.string())
    if (
        (_is_num(ta) or pa.types.is_boolean(ta))
        and (_is_num(tb) or pa.types.is_boolean(tb))
        or (_is_str(ta) != _is_str(tb))
    ):
        return _unify_numbers(_as_number(a), _as_number(b))
    return to_text(a), to_text(b)


def _unify_branches(values: list[Value]) -> list[Value]:
    """Branch results (if/case/coalesce) of one type; text wins over numbers, as in Doris."""
    known = [v for v in values if not _is_null(_t(v))]
    if not known:
        return values
    types = {_t(v) for v in known}
    if len(types) == 1:
        target = types.pop()
        return [_cast(v, target) for v in values]
    if any(_is_str(t) for t in types):
        return [to_text(v) if not _is_null(_t(v)) else _cast(v, pa.string()) for v in values]
    out = values
    first = known[0]
    for other in known[1:]:
        first, _ = _unify(first, other)
    target = _t(first)
    unified = []
    for v in out:
        if _t(v) == target:
            unified.append(v)
        elif _is_num(target):
            unified.append(_cast(_as_number(v), target))
        else:
            unified.append(_cast(v, target))
    return unified


def _bool(v: Value) -> Value:
    t = _t(v)
    if pa.types.is_boolean(t):
        return v
    if _is_null(t):
        return _cast(v, pa.bool_())
    num = _as_number(v)
    return pc.not_equal(num, 0)


def _literal_int(node: exp.Expression, what: str) -> int:
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return -_literal_int(node.this, what)
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return int(node.name)
        except ValueError:
            pass
    raise LoadError(f"[INVALID_ARGUMENT]{what} must be an integer literal, got {node.sql(dialect=Galene)}")


def _literal_str(node: exp.Expression | None, what: str) -> str:
    if isinstance(node, exp.Literal) and node.is_string:
        return node.name
    shown = node.sql(dialect=Galene) if node is not None else "nothing"
    raise LoadError(f"[INVALID_ARGUMENT]{what} must be a string literal, got {shown}")


def _has_time_directive(fmt: str) -> bool:
    return any(d in fmt for d in ("%H", "%I", "%M", "%S", "%f", "%p", "%T", "%r", "%X"))


# --- the evaluator -------------------------------------------------------------------------------


class _Evaluator:
    def __init__(self, columns: Mapping[str, Value], ctx: EvalContext):
        self.columns = columns
        self.ctx = ctx

    def eval(self, node: exp.Expression) -> Value:
        handler = _NODE_HANDLERS.get(type(node))
        if handler is not None:
            return handler(self, node)
        if isinstance(node, exp.Anonymous):
            name = str(node.this).upper()
            fn = _ANONYMOUS.get(name)
            if fn is None:
                raise LoadError(f"[INVALID_ARGUMENT]unknown function {name.lower()} in load expression")
            return fn(self, node.expressions)
        if isinstance(node, exp.Func):
            name = node.sql_name() if hasattr(node, "sql_name") else type(node).__name__
            raise LoadError(f"[INVALID_ARGUMENT]unknown function {str(name).lower()} in load expression")
        raise LoadError(f"[INVALID_ARGUMENT]unsupported expression in load: {node.sql(dialect=Galene)}")

    def args(self, nodes) -> list[Value]:
        return [self.eval(n) for n in nodes]

    # leaves
    def column(self, node: exp.Column) -> Value:
        name = node.name.lower()
        if name not in self.columns:
            raise LoadError(f"[INVALID_ARGUMENT]Unknown column '{node.name}' in load expression")
        return self.columns[name]

    def var(self, node: exp.Var) -> Value:
        name = node.name.lower()
        if name in self.columns:
            return self.columns[name]
        raise LoadError(f"[INVALID_ARGUMENT]unsupported expression in load: {node.name}")

    def literal(self, node: exp.Literal) -> Value:
        text = node.name
        if node.is_string:
            return pa.scalar(text, pa.string())
        try:
            value = int(text)
            if -(2**63) <= value < 2**63:
                return pa.scalar(value, pa.int64())
        except ValueError:
            pass
        return pa.scalar(float(text), pa.float64())

    # arithmetic
    def arith(self, node: exp.Binary) -> Value:
        a, b = _unify_numbers(_as_number(self.eval(node.this)), _as_number(self.eval(node.expression)))
        kind = type(node)
        if kind is exp.Div:
            a, b = _cast(a, pa.float64()), _cast(b, pa.float64())
            return pc.divide(a, _nonzero(b))
        if kind is exp.IntDiv:
            if pa.types.is_floating(_t(a)):
                return pc.cast(pc.trunc(pc.divide(a, _nonzero(b))), pa.int64(), safe=False)
            return pc.divide(a, _nonzero(b))
        if kind is exp.Mod:
            b = _nonzero(b)
            if pa.types.is_floating(_t(a)):
                return pc.subtract(a, pc.multiply(pc.trunc(pc.divide(a, b)), b))
            return pc.subtract(a, pc.multiply(pc.divide(a, b), b))
        fn = {exp.Add: "add_checked", exp.Sub: "subtract_checked", exp.Mul: "multiply_checked"}[kind]
        try:
            return pc.call_function(fn, [a, b])
        except pa.ArrowInvalid:
            # Integer overflow: Doris widens; float64 keeps the magnitude.
            return pc.call_function(fn, [_cast(a, pa.float64()), _cast(b, pa.float64())])

    def neg(self, node: exp.Neg) -> Value:
        return pc.negate(_as_number(self.eval(node.this)))

    # predicates
    def compare(self, node: exp.Binary) -> Value:
        a, b = _unify(self.eval(node.this), self.eval(node.expression))
        fn = {
            exp.EQ: "equal",
            exp.NEQ: "not_equal",
            exp.GT: "greater",
            exp.GTE: "greater_equal",
            exp.LT: "less",
            exp.LTE: "less_equal",
        }[type(node)]
        return pc.call_function(fn, [a, b])

    def null_safe_eq(self, node: exp.NullSafeEQ) -> Value:
        a, b = _unify(self.eval(node.this), self.eval(node.expression))
        both_null = pc.and_(pc.is_null(a), pc.is_null(b))
        return pc.if_else(both_null, True, pc.fill_null(pc.equal(a, b), False))

    def and_(self, node: exp.And) -> Value:
        return pc.and_kleene(_bool(self.eval(node.this)), _bool(self.eval(node.expression)))

    def or_(self, node: exp.Or) -> Value:
        return pc.or_kleene(_bool(self.eval(node.this)), _bool(self.eval(node.expression)))

    def not_(self, node: exp.Not) -> Value:
        return pc.invert(_bool(self.eval(node.this)))

    def is_(self, node: exp.Is) -> Value:
        if not isinstance(node.expression, exp.Null):
            raise LoadError(f"[INVALID_ARGUMENT]unsupported expression in load: {node.sql(dialect=Galene)}")
        return pc.is_null(self.eval(node.this))

    def in_(self, node: exp.In) -> Value:
        value = self.eval(node.this)
        result = None
        for item in node.expressions:
            a, b = _unify(value, self.eval(item))
            eq = pc.equal(a, b)
            result = eq if result is None else pc.or_kleene(result, eq)
        if result is None:
            raise LoadError("[INVALID_ARGUMENT]IN needs at least one value")
        return result

    def between(self, node: exp.Between) -> Value:
        value = self.eval(node.this)
        lo_a, lo_b = _unify(value, self.eval(node.args["low"]))
        hi_a, hi_b = _unify(value, self.eval(node.args["high"]))
        return pc.and_kleene(pc.greater_equal(lo_a, lo_b), pc.less_equal(hi_a, hi_b))

    def like(self, node: exp.Like) -> Value:
        pattern = _literal_str(node.expression, "LIKE pattern")
        return pc.match_like(to_text(self.eval(node.this)), pattern)

    def paren(self, node: exp.Paren) -> Value:
        return self.eval(node.this)

    def null(self, node: exp.Null) -> Value:
        return pa.scalar(None, pa.null())

    def boolean(self, node: exp.Boolean) -> Value:
        return pa.scalar(bool(node.this), pa.bool_())

    # conditionals
    def if_(self, node: exp.If) -> Value:
        cond = pc.fill_null(_bool(self.eval(node.this)), False)
        false = node.args.get("false")
        t, f = _unify_branches(
            [
                self.eval(node.args["true"]),
                self.eval(false) if false is not None else pa.scalar(None, pa.null()),
            ]
        )
        if _is_null(_t(t)) and _is_null(_t(f)):
            return pa.scalar(None, pa.null())
        return pc.if_else(cond, t, f)

    def case(self, node: exp.Case) -> Value:
        subject = node.this
        conds, results = [], []
        for branch in node.args.get("ifs") or []:
            cond_node = branch.this
            if subject is not None:
                a, b = _unify(self.eval(subject), self.eval(cond_node))
                conds.append(pc.fill_null(pc.equal(a, b), False))
            else:
                conds.append(pc.fill_null(_bool(self.eval(cond_node)), False))
            results.append(self.eval(branch.args["true"]))
        default = node.args.get("default")
        results.append(self.eval(default) if default is not None else pa.scalar(None, pa.null()))
        results = _unify_branches(results)
        out = results[-1]
        for cond, value in zip(reversed(conds), reversed(results[:-1])):
            out = pc.if_else(cond, value, out)
        return out

    def coalesce(self, node: exp.Coalesce) -> Value:
        values = _unify_branches(self.args([node.this, *node.expressions]))
        if all(_is_null(_t(v)) for v in values):
            return values[0]
        return pc.coalesce(*values)

    def nullif(self, node: exp.Nullif) -> Value:
        a, b = _unify(self.eval(node.this), self.eval(node.expression))
        return pc.if_else(pc.fill_null(pc.equal(a, b), False), _null(_t(a)), a)

    # casts
    def cast(self, node: exp.Cast) -> Value:
        try:
            if node.to.expressions and node.to.this in (
                exp.DataType.Type.ARRAY,
                exp.DataType.Type.MAP,
                exp.DataType.Type.STRUCT,
            ):
                ctype = column_type_from_datatype(node.to, decimal256=True)  # CAST(x AS ARRAY<INT>)
            else:
                ctype = parse_type(node.to.sql(dialect=Galene))
        except TypeError_ as e:
            raise LoadError(f"[INVALID_ARGUMENT]{e}") from None
        value = broadcast(self.eval(node.this), self.ctx.num_rows)
        return coerce(value, ctype).values

    # strings
    def concat(self, node: exp.Concat) -> Value:
        parts = [to_text(v) for v in self.args(node.expressions)]
        return pc.binary_join_element_wise(*parts, "")

    def concat_ws(self, node: exp.ConcatWs) -> Value:
        sep, *rest = self.args(node.expressions)
        parts = [to_text(v) for v in rest]
        return pc.binary_join_element_wise(*parts, to_text(sep), null_handling="skip")

    def upper(self, node) -> Value:
        return pc.utf8_upper(to_text(self.eval(node.this)))

    def lower(self, node) -> Value:
        return pc.utf8_lower(to_text(self.eval(node.this)))

    def substring(self, node: exp.Substring) -> Value:
        text = to_text(self.eval(node.this))
        start = _literal_int(node.args["start"], "substr position")
        length_node = node.args.get("length")
        length = _literal_int(length_node, "substr length") if length_node is not None else None
        return _substr(text, start, length)

    def left(self, node: exp.Left) -> Value:
        n = _literal_int(node.expression, "left length")
        return pc.utf8_slice_codeunits(to_text(self.eval(node.this)), 0, max(n, 0))

    def right(self, node: exp.Right) -> Value:
        n = _literal_int(node.expression, "right length")
        text = to_text(self.eval(node.this))
        if n <= 0:
            return pc.utf8_slice_codeunits(text, 0, 0)
        return pc.utf8_slice_codeunits(text, -n)

    def trim(self, node: exp.Trim) -> Value:
        text = to_text(self.eval(node.this))
        chars = node.expression
        what = " " if chars is None else _literal_str(chars, "trim characters")
        position = (node.args.get("position") or "BOTH").upper()
        fn = {"LEADING": pc.utf8_ltrim, "TRAILING": pc.utf8_rtrim}.get(position, pc.utf8_trim)
        return fn(text, characters=what)

    def length(self, node: exp.Length) -> Value:
        text = to_text(self.eval(node.this))
        # Doris length() counts bytes, char_length() characters.
        if node.args.get("binary"):
            return pc.cast(pc.binary_length(text), pa.int64())
        return pc.cast(pc.utf8_length(text), pa.int64())

    def replace(self, node: exp.Replace) -> Value:
        text = to_text(self.eval(node.this))
        old = _literal_str(node.expression, "replace pattern")
        new = _literal_str(node.args.get("replacement"), "replace replacement")
        return pc.replace_substring(text, pattern=old, replacement=new)

    # numbers
    def round_(self, node: exp.Round) -> Value:
        value = _as_number(self.eval(node.this))
        decimals = node.args.get("decimals")
        nd = _literal_int(decimals, "round digits") if decimals is not None else 0
        if pa.types.is_integer(_t(value)) and nd >= 0:
            return value
        return pc.round(value, ndigits=nd, round_mode="half_towards_infinity")

    def abs_(self, node: exp.Abs) -> Value:
        return pc.abs(_as_number(self.eval(node.this)))

    def floor(self, node: exp.Floor) -> Value:
        value = _as_number(self.eval(node.this))
        return (
            value
            if pa.types.is_integer(_t(value))
            else pc.cast(pc.floor(_cast(value, pa.float64())), pa.int64())
        )

    def ceil(self, node: exp.Ceil) -> Value:
        value = _as_number(self.eval(node.this))
        return (
            value
            if pa.types.is_integer(_t(value))
            else pc.cast(pc.ceil(_cast(value, pa.float64())), pa.int64())
        )

    # dates
    def date_part(self, node) -> Value:
        value = _to_temporal_any(self.eval(_unwrap_date(node.this)))
        fn = {
            exp.Year: pc.year,
            exp.Month: pc.month,
            exp.Day: pc.day,
            exp.DayOfMonth: pc.day,
            exp.Hour: pc.hour,
            exp.Minute: pc.minute,
            exp.Second: pc.second,
            exp.Quarter: pc.quarter,
            exp.DayOfYear: pc.day_of_year,
        }[type(node)]
        if type(node) in (exp.Hour, exp.Minute, exp.Second) and pa.types.is_date(_t(value)):
            value = pc.cast(value, pa.timestamp("us"))
        return pc.cast(fn(value), pa.int32())

    def to_date(self, node) -> Value:
        return _as_temporal(self.eval(node.this), pa.date32())

    def to_timestamp(self, node) -> Value:
        return _as_temporal(self.eval(node.this), pa.timestamp("us"))

    def date_format(self, node: exp.TimeToStr) -> Value:
        fmt = _literal_str(node.args.get("format"), "date_format format")
        value = _to_temporal_any(self.eval(_unwrap_date(node.this)))
        if pa.types.is_date(_t(value)):
            value = pc.cast(value, pa.timestamp("us"))
        return strftime(value, fmt)

    def str_to_date(self, node) -> Value:
        fmt = _literal_str(node.args.get("format"), "str_to_date format")
        text = to_text(self.eval(node.this))
        parsed = pc.strptime(text, format=fmt, unit="us", error_is_null=True)
        # Arrow rolls impossible dates over (2024/02/30 -> March 1); Doris answers NULL. A
        # value is kept only if printing it back gives the input, leading zeros aside.
        back = strftime(parsed, fmt)
        same = pc.equal(_without_leading_zeros(back), _without_leading_zeros(pc.utf8_trim_whitespace(text)))
        parsed = pc.if_else(pc.fill_null(same, False), parsed, _null(parsed.type))
        if _has_time_directive(fmt):
            return parsed
        return pc.cast(parsed, pa.date32())

    def from_unixtime(self, node: exp.UnixToTime) -> Value:
        seconds = _as_number(self.eval(node.this))
        if not pa.types.is_integer(_t(seconds)):
            seconds = pc.cast(pc.floor(_cast(seconds, pa.float64())), pa.int64())
        # Doris: values outside [0, 32536771199] give NULL.
        valid = pc.and_(pc.greater_equal(seconds, 0), pc.less_equal(seconds, 32536771199))
        seconds = pc.if_else(valid, seconds, _null(pa.int64()))
        utc = pc.cast(_cast(seconds, pa.int64()), pa.timestamp("s", tz=self.ctx.timezone))
        local = pc.cast(pc.local_timestamp(utc), pa.timestamp("us"))
        fmt_node = node.args.get("format")
        fmt = _literal_str(fmt_node, "from_unixtime format") if fmt_node is not None else "%Y-%m-%d %H:%M:%S"
        return strftime(local, fmt)

    def date_add(self, node) -> Value:
        value = _to_temporal_any(self.eval(node.this))
        amount = _as_number(self.eval(node.expression))
        unit_node = node.args.get("unit")
        unit = (unit_node.name if unit_node is not None else "DAY").upper()
        if isinstance(node, exp.DateSub):
            amount = pc.negate(amount)
        was_date = pa.types.is_date(_t(value))
        months_per_unit = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}.get(unit)
        if months_per_unit is not None:
            n = self.ctx.num_rows
            micros = broadcast(pc.cast(_cast(value, pa.timestamp("us")), pa.int64()), n)
            months = broadcast(pc.multiply(_cast(amount, pa.int64()), months_per_unit), n)
            out = pc.cast(_add_months(micros, months), pa.timestamp("us"))
            return pc.cast(out, pa.date32()) if was_date else out
        per_unit = {"WEEK": 7 * 86_400_000_000, "DAY": 86_400_000_000, "HOUR": 3_600_000_000,
                    "MINUTE": 60_000_000, "SECOND": 1_000_000}.get(unit)  # fmt: skip
        if per_unit is None:
            raise LoadError(
                f"[INVALID_ARGUMENT]date arithmetic in {unit} units is not supported in load expressions"
            )
        micros = pc.cast(_cast(value, pa.timestamp("us")), pa.int64())
        shifted = pc.add(micros, pc.multiply(_cast(amount, pa.int64()), per_unit))
        out = pc.cast(shifted, pa.timestamp("us"))
        return pc.cast(out, pa.date32()) if was_date and unit in ("DAY", "WEEK") else out

    def datediff(self, node: exp.DateDiff) -> Value:
        a = pc.cast(_as_temporal(self.eval(node.this), pa.date32()), pa.int32())
        b = pc.cast(_as_temporal(self.eval(node.expression), pa.date32()), pa.int32())
        return pc.cast(pc.subtract(a, b), pa.int64())

    def current_date(self, node) -> Value:
        return pa.scalar(self.ctx.now.date(), pa.date32())

    def current_timestamp(self, node) -> Value:
        return pa.scalar(self.ctx.now, pa.timestamp("us"))


_DAY_US = 86_400_000_000


def _civil_from_days(z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    z = z + 719468
    era = np.floor_divide(z, 146097)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + np.where(mp < 10, 3, -9)
    return yoe + era * 400 + (m <= 2), m, d


def _add_months(micros: pa.Array, months: pa.Array) -> pa.Array:
    """Timestamps (µs) shifted by whole months; a day past the new month's end becomes its
    last day, as Doris' months_add (2024-01-31 + 1 month = 2024-02-29)."""
    valid = pc.and_(pc.is_valid(micros), pc.is_valid(months))
    us = pc.fill_null(micros, 0).to_numpy(zero_copy_only=False).astype(np.int64)
    shift = pc.fill_null(months, 0).to_numpy(zero_copy_only=False).astype(np.int64)
    days = np.floor_divide(us, _DAY_US)
    time_of_day = us - days * _DAY_US
    y, m, d = _civil_from_days(days)
    total = y * 12 + (m - 1) + shift
    ny, nm = np.floor_divide(total, 12), np.mod(total, 12) + 1
    month_len = days_from_civil(ny + (nm == 12), np.mod(nm, 12) + 1, 1) - days_from_civil(ny, nm, 1)
    out = days_from_civil(ny, nm, np.minimum(d, month_len)) * _DAY_US + time_of_day
    return pa.array(out, pa.int64(), mask=~valid.to_numpy(zero_copy_only=False))


def _nonzero(v: Value) -> Value:
    """Divisor with zeros as NULL: Doris answers NULL for x / 0 and x % 0."""
    return pc.if_else(pc.equal(v, 0), _null(_t(v)), v)


def _substr(text: Value, start: int, length: int | None) -> Value:
    # Doris: 1-based; 0 gives ''; a negative start counts from the end.
    if start == 0 or (length is not None and length <= 0):
        return pc.utf8_slice_codeunits(text, 0, 0)
    begin = start - 1 if start > 0 else start
    if length is None:
        return pc.utf8_slice_codeunits(text, begin)
    stop = begin + length
    if begin < 0 and stop >= 0:
        return pc.utf8_slice_codeunits(text, begin)
    return pc.utf8_slice_codeunits(text, begin, stop)


def _without_leading_zeros(text: Value) -> Value:
    return pc.replace_substring_regex(text, r"(^|[^0-9])0+([0-9])", r"\1\2")


def _unwrap_date(node: exp.Expression) -> exp.Expression:
    # sqlglot wraps date-function arguments in TsOrDsTo* nodes; the evaluator converts itself.
    while isinstance(node, (exp.TsOrDsToDate, exp.TsOrDsToTimestamp)) and node.args.get("format") is None:
        node = node.this
    return node


def _anon_now(ev: _Evaluator, args) -> Value:
    return ev.current_timestamp(None)


def _anon_unix_timestamp(ev: _Evaluator, args) -> Value:
    if not args:
        local = pa.scalar(ev.ctx.now, pa.timestamp("us"))
    else:
        local = _to_temporal_any(ev.eval(args[0]))
        if pa.types.is_date(_t(local)):
            local = pc.cast(local, pa.timestamp("us"))
    zoned = pc.assume_timezone(broadcast(local, ev.ctx.num_rows), timezone=ev.ctx.timezone,
                               ambiguous="earliest", nonexistent="earliest")  # fmt: skip
    seconds = pc.divide(pc.cast(pc.cast(zoned, pa.timestamp("us", tz="UTC")), pa.int64()), 1_000_000)
    return seconds


def _anon_strleft(ev: _Evaluator, args) -> Value:
    return pc.utf8_slice_codeunits(
        to_text(ev.eval(args[0])), 0, max(_literal_int(args[1], "strleft length"), 0)
    )


def _anon_strright(ev: _Evaluator, args) -> Value:
    n = _literal_int(args[1], "strright length")
    text = to_text(ev.eval(args[0]))
    return pc.utf8_slice_codeunits(text, -n) if n > 0 else pc.utf8_slice_codeunits(text, 0, 0)


def _pad(ev: _Evaluator, node: exp.Pad) -> Value:
    fn_name = "lpad" if node.args.get("is_left") else "rpad"
    text = to_text(ev.eval(node.this))
    width = _literal_int(node.expression, f"{fn_name} length")
    fill_node = node.args.get("fill_pattern")
    fill = _literal_str(fill_node, f"{fn_name} padding") if fill_node is not None else " "
    if len(fill) != 1:
        raise LoadError(f"[INVALID_ARGUMENT]{fn_name} padding must be one character in load expressions")
    padded = (pc.utf8_lpad if fn_name == "lpad" else pc.utf8_rpad)(text, width=width, padding=fill)
    # Doris cuts an input longer than `width` to its first `width` characters, both pads.
    return pc.utf8_slice_codeunits(padded, 0, width)


_ANONYMOUS: dict[str, Callable] = {
    "NOW": _anon_now,
    "CURRENT_TIMESTAMP": _anon_now,
    "LOCALTIMESTAMP": _anon_now,
    "UNIX_TIMESTAMP": _anon_unix_timestamp,
    "STRLEFT": _anon_strleft,
    "STRRIGHT": _anon_strright,
    **state_functions.HANDLERS,  # to_bitmap, bitmap_hash, hll_hash, to_quantile_state, …
}

_NODE_HANDLERS: dict[type, Callable] = {
    exp.Column: _Evaluator.column,
    exp.Var: _Evaluator.var,
    exp.Literal: _Evaluator.literal,
    exp.Null: _Evaluator.null,
    exp.Boolean: _Evaluator.boolean,
    exp.Paren: _Evaluator.paren,
    exp.Add: _Evaluator.arith,
    exp.Sub: _Evaluator.arith,
    exp.Mul: _Evaluator.arith,
    exp.Div: _Evaluator.arith,
    exp.IntDiv: _Evaluator.arith,
    exp.Mod: _Evaluator.arith,
    exp.Neg: _Evaluator.neg,
    exp.EQ: _Evaluator.compare,
    exp.NEQ: _Evaluator.compare,
    exp.GT: _Evaluator.compare,
    exp.GTE: _Evaluator.compare,
    exp.LT: _Evaluator.compare,
    exp.LTE: _Evaluator.compare,
    exp.NullSafeEQ: _Evaluator.null_safe_eq,
    exp.And: _Evaluator.and_,
    exp.Or: _Evaluator.or_,
    exp.Not: _Evaluator.not_,
    exp.Is: _Evaluator.is_,
    exp.In: _Evaluator.in_,
    exp.Between: _Evaluator.between,
    exp.Like: _Evaluator.like,
    exp.If: _Evaluator.if_,
    exp.Case: _Evaluator.case,
    exp.Coalesce: _Evaluator.coalesce,
    exp.Nullif: _Evaluator.nullif,
    exp.Cast: _Evaluator.cast,
    exp.TryCast: _Evaluator.cast,
    exp.Concat: _Evaluator.concat,
    exp.ConcatWs: _Evaluator.concat_ws,
    exp.Upper: _Evaluator.upper,
    exp.Lower: _Evaluator.lower,
    exp.Substring: _Evaluator.substring,
    exp.Left: _Evaluator.left,
    exp.Right: _Evaluator.right,
    exp.Trim: _Evaluator.trim,
    exp.Length: _Evaluator.length,
    exp.Replace: _Evaluator.replace,
    exp.Round: _Evaluator.round_,
    exp.Abs: _Evaluator.abs_,
    exp.Floor: _Evaluator.floor,
    exp.Ceil: _Evaluator.ceil,
    exp.Year: _Evaluator.date_part,
    exp.Month: _Evaluator.date_part,
    exp.Day: _Evaluator.date_part,
    exp.DayOfMonth: _Evaluator.date_part,
    exp.Hour: _Evaluator.date_part,
    exp.Minute: _Evaluator.date_part,
    exp.Second: _Evaluator.date_part,
    exp.Quarter: _Evaluator.date_part,
    exp.DayOfYear: _Evaluator.date_part,
    exp.TsOrDsToDate: _Evaluator.to_date,
    exp.TsOrDsToTimestamp: _Evaluator.to_timestamp,
    exp.TimeToStr: _Evaluator.date_format,
    exp.StrToDate: _Evaluator.str_to_date,
    exp.StrToTime: _Evaluator.str_to_date,
    exp.UnixToTime: _Evaluator.from_unixtime,
    exp.DateAdd: _Evaluator.date_add,
    exp.DateSub: _Evaluator.date_add,
    exp.DateDiff: _Evaluator.datediff,
    exp.CurrentDate: _Evaluator.current_date,
    exp.CurrentTimestamp: _Evaluator.current_timestamp,
    exp.Pad: _pad,
}
