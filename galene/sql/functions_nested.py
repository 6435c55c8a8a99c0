"""Doris' ARRAY, MAP and STRUCT functions on Spark: the nested-type family of the Doris → Spark
function translation (`galene.sql.functions` dispatches here by name).

The dialect (galene/sql/dialect.py) parses every name in `NAMES` as a plain call, so the
arguments arrive in Doris' order and number; `rewrite(name, args)` returns the Spark expression,
or None when the call is not Doris' form (left to the engine, which reports it).

Doris' rules kept here (its docs, sql-manual/sql-functions/scalar-functions/array-functions/*):

* Arrays are 1-based; `a[i]` and ELEMENT_AT give NULL out of range and for i = 0, count from the
  end for i < 0 (`try_element_at`, the index 0 turned into NULL: Sail evaluates the index eagerly).
  `m[k]` is a map lookup (NULL when missing) — the same `try_element_at`.
* ARRAY_SORT puts NULLs first, ARRAY_REVERSE_SORT last (`sort_array`); ARRAY_COMPACT drops
  consecutive duplicates (Spark's array_compact drops NULLs); ARRAY_EXISTS is an array of
  booleans; ARRAY_RANGE's end is exclusive; sizes are BIGINT and NULL for a NULL array (Spark's
  `size(NULL)` is -1); ARRAY_SUM/ARRAY_AVG skip NULLs (NULL when nothing is left).
* ARRAY_MAP/ARRAY_FILTER/ARRAY_COUNT/ARRAY_FIRST… take the lambda first; a lambda over several
  arrays reads the others by the first one's position.
* MAP(k1, v1, …), MAP_SIZE, MAP_CONTAINS_VALUE, MAP_AGG(k, v) (NULL keys skipped);
  STRUCT_ELEMENT(s, 'f' | n) → `s.f` (`s.colN`). A function of an untyped NULL array is NULL.
* Not here: ARRAY_SUM/ARRAY_PRODUCT of a DECIMAL array (the accumulator's type must be the
  elements', which the translation does not know) fail in the engine.
* EXPLODE_NUMBERS(n), EXPLODE_JSON_ARRAY_INT/DOUBLE/STRING/JSON, EXPLODE_MAP → Spark generators
  (LATERAL VIEW keeps Doris' syntax).
"""

from __future__ import annotations

from sqlglot import exp

from galene.common.errors import GaleneError
from galene.sql.sqlbuild import call, int_value, number, string, string_value, template

# Doris names the dialect keeps as plain calls (sqlglot's own nodes for some of them check
# argument counts that differ from Doris', or reorder lambdas).
NAMES = frozenset(
    {
        "ARRAY_CONTAINS", "ARRAY_DISTINCT", "ARRAY_SORT", "ARRAY_REVERSE_SORT", "ARRAY_JOIN",
        "ARRAY_RANGE", "ARRAY_SIZE", "SIZE", "CARDINALITY", "ARRAY_UNION", "ARRAY_INTERSECT",
        "ARRAY_EXCEPT", "ARRAY_MAP", "ARRAY_FILTER", "ARRAY_MAX", "ARRAY_MIN", "ARRAY_SUM", "ARRAY_AVG",
        "ARRAY_PRODUCT", "ARRAY_POSITION", "ELEMENT_AT", "ARRAY_SLICE", "ARRAY_REMOVE", "ARRAY_COMPACT",
        "ARRAY_WITH_CONSTANT", "ARRAY_REPEAT", "ARRAY_POPBACK", "ARRAY_POPFRONT", "ARRAY_PUSHBACK",
        "ARRAY_PUSHFRONT", "ARRAYS_OVERLAP", "ARRAY_COUNT", "ARRAY_EXISTS", "ARRAY_FIRST", "ARRAY_LAST",
        "ARRAY_FIRST_INDEX", "ARRAY_LAST_INDEX", "ARRAY_CONCAT", "ARRAY_ENUMERATE", "ARRAY_SHUFFLE",
        "SHUFFLE", "COUNTEQUAL", "ARRAY_APPLY", "ARRAY_SORTBY",
        "MAP", "MAP_AGG", "MAP_KEYS", "MAP_VALUES", "MAP_SIZE", "MAP_CONTAINS_KEY", "MAP_CONTAINS_VALUE",
        "NAMED_STRUCT", "STRUCT_ELEMENT",
        "EXPLODE_NUMBERS", "EXPLODE_NUMBERS_OUTER", "EXPLODE_JSON_ARRAY_INT", "EXPLODE_JSON_ARRAY_DOUBLE",
        "EXPLODE_JSON_ARRAY_STRING", "EXPLODE_JSON_ARRAY_JSON", "EXPLODE_JSON_ARRAY_INT_OUTER",
        "EXPLODE_JSON_ARRAY_DOUBLE_OUTER", "EXPLODE_JSON_ARRAY_STRING_OUTER", "EXPLODE_MAP",
        "EXPLODE_MAP_OUTER",
    }
)  # fmt: skip


# --- subscripts -------------------------------------------------------------------------
def element(container: exp.Expr, index: exp.Expr) -> exp.Expr:
    """Doris' `x[i]` / ELEMENT_AT(x, i) for an array (1-based, NULL out of range and for 0) or
    a map (the key's value, NULL when missing), the container's type unknown here."""
    if string_value(index) is not None:  # a string key: a map
        return call("try_element_at", container, index)
    value = int_value(index)
    if value is not None and value != 0:
        return call("try_element_at", container, index)
    if value == 0:
        return template("try_element_at(__x, IF(typeof(__x) LIKE 'array%', NULL, 0))", x=container)
    return template(
        "try_element_at(__x, IF(typeof(__x) LIKE 'array%' AND __i = 0, NULL, __i))", x=container, i=index
    )


def subscript(node: exp.Bracket) -> exp.Expr:
    if len(node.expressions) != 1:
        raise GaleneError("a subscript takes one index: x[i]")
    return element(node.this, node.expressions[0])


# --- lambdas ----------------------------------------------------------------------------
def _lambda_over(lam: exp.Expr, arrays: list[exp.Expr], name: str) -> tuple[exp.Expr, exp.Expr]:
    """(first array, a one-array lambda `(x, i) -> …`) for Doris' lambda over several arrays:
    the other arrays' parameters read those arrays at the first one's position."""
    if not isinstance(lam, exp.Lambda):
        raise GaleneError(f"{name.lower()}: the first argument must be a lambda (x -> ...)")
    params = [p.name for p in lam.expressions]
    if len(params) != len(arrays):
        raise GaleneError(
            f"{name.lower()}: the lambda takes {len(params)} arguments but {len(arrays)} arrays are given"
        )
    if len(arrays) == 1:
        return arrays[0], lam
    body = lam.this.copy()
    index = "galene_lambda_i"
    for ref in list(body.find_all(exp.Column, exp.Identifier)):
        # a parameter: a bare identifier (as sqlglot parses lambda bodies) or an unqualified column
        bare = isinstance(ref, exp.Identifier) and not isinstance(
            ref.parent, (exp.Column, exp.Dot, exp.Alias)
        )
        if not (bare or (isinstance(ref, exp.Column) and not ref.table)) or ref.name not in params[1:]:
            continue
        other = arrays[params.index(ref.name)]
        ref.replace(call("try_element_at", other.copy(), template(f"{index} + 1")))
    new = exp.Lambda(this=body, expressions=[exp.to_identifier(params[0]), exp.to_identifier(index)])
    return arrays[0], new


def _array_range(args: list[exp.Expr]) -> exp.Expr | None:
    if len(args) == 1:
        start, end, step = number(0), args[0], number(1)
    elif len(args) in (2, 3):
        start, end, step = args[0], args[1], (args[2] if len(args) == 3 else number(1))
    else:
        return None
    return template(
        "IF(__s < __e AND __st > 0, sequence(__s, __e - 1, __st), filter(array(__s), x -> false))",
        s=start,
        e=end,
        st=step,
    )


def _struct_element(args: list[exp.Expr]) -> exp.Expr:
    if len(args) != 2:
        raise GaleneError("struct_element takes a struct and a field name or position")
    field = string_value(args[1])
    if field is None:
        position = int_value(args[1])
        if position is None or position < 1:
            raise GaleneError("struct_element: the field must be a constant name or a position >= 1")
        field = f"col{position}"
    return exp.Dot(this=args[0], expression=exp.to_identifier(field, quoted=True))


_LAMBDA_SIMPLE = {
    # name: (template over the array __a and the lambda __f)
    "ARRAY_MAP": "transform(__a, __f)",
    "ARRAY_FILTER": "filter(__a, __f)",
    "ARRAY_EXISTS": "transform(__a, __f)",
    "ARRAY_COUNT": "CAST(size(filter(__a, __f)) AS BIGINT)",
    "ARRAY_FIRST": "try_element_at(filter(__a, __f), 1)",
    "ARRAY_LAST": "try_element_at(filter(__a, __f), -1)",
    "ARRAY_FIRST_INDEX": "CAST(array_position(transform(__a, __f), true) AS BIGINT)",
    "ARRAY_LAST_INDEX": (
        "CAST(IF(array_position(reverse(transform(__a, __f)), true) = 0, 0,"
        " size(__a) - array_position(reverse(transform(__a, __f)), true) + 1) AS BIGINT)"
    ),
}

_ONE_ARRAY = {
    "ARRAY_DISTINCT": "array_distinct(__a)",
    "ARRAY_SORT": "sort_array(__a, true)",
    "ARRAY_REVERSE_SORT": "sort_array(__a, false)",
    "ARRAY_SIZE": "CAST(IF(__a IS NULL, NULL, size(__a)) AS BIGINT)",
    "ARRAY_MAX": "array_max(__a)",
    "ARRAY_MIN": "array_min(__a)",
    "ARRAY_SUM": (
        "aggregate(__a, try_element_at(filter(__a, x -> false), 1),"
        " (acc, x) -> CASE WHEN x IS NULL THEN acc WHEN acc IS NULL THEN x ELSE acc + x END)"
    ),
    "ARRAY_PRODUCT": (
        "aggregate(__a, CAST(NULL AS DOUBLE),"
        " (acc, x) -> CASE WHEN x IS NULL THEN acc WHEN acc IS NULL THEN CAST(x AS DOUBLE) ELSE acc * x END)"
    ),
    "ARRAY_AVG": (
        "aggregate(__a, named_struct('s', CAST(0 AS DOUBLE), 'n', CAST(0 AS BIGINT)),"
        " (acc, x) -> IF(x IS NULL, acc, named_struct('s', acc.s + x, 'n', acc.n + 1)),"
        " acc -> IF(acc.n = 0, NULL, acc.s / acc.n))"
    ),
    "ARRAY_COMPACT": "filter(__a, (x, i) -> i = 0 OR NOT (x <=> try_element_at(__a, IF(i = 0, NULL, i))))",
    "ARRAY_POPBACK": "filter(__a, (x, i) -> i < size(__a) - 1)",
    "ARRAY_POPFRONT": "filter(__a, (x, i) -> i > 0)",
    "ARRAY_ENUMERATE": "transform(__a, (x, i) -> CAST(i + 1 AS BIGINT))",
    "ARRAY_SHUFFLE": "shuffle(__a)",
    "SHUFFLE": "shuffle(__a)",
    "MAP_KEYS": "map_keys(__a)",
    "MAP_VALUES": "map_values(__a)",
    "MAP_SIZE": "CAST(IF(__a IS NULL, NULL, size(__a)) AS BIGINT)",
    "SIZE": "CAST(IF(__a IS NULL, NULL, size(__a)) AS BIGINT)",
    "CARDINALITY": "CAST(IF(__a IS NULL, NULL, size(__a)) AS BIGINT)",
}

_TWO_ARGS = {
    "ARRAY_CONTAINS": "array_contains(__a, __b)",
    "ARRAY_POSITION": "CAST(array_position(__a, __b) AS BIGINT)",
    "ARRAY_REMOVE": "array_remove(__a, __b)",
    "ARRAY_UNION": "array_union(__a, __b)",
    "ARRAY_INTERSECT": "array_intersect(__a, __b)",
    "ARRAY_EXCEPT": "array_except(__a, __b)",
    "ARRAYS_OVERLAP": "arrays_overlap(__a, __b)",
    "ARRAY_WITH_CONSTANT": "array_repeat(__b, CAST(__a AS INT))",
    "ARRAY_REPEAT": "array_repeat(__a, CAST(__b AS INT))",
    "ARRAY_PUSHBACK": "concat(__a, array(__b))",
    "ARRAY_PUSHFRONT": "concat(array(__b), __a)",
    "COUNTEQUAL": "CAST(size(filter(__a, x -> x <=> __b)) AS BIGINT)",
    "MAP_CONTAINS_KEY": "map_contains_key(__a, __b)",
    "MAP_CONTAINS_VALUE": "array_contains(map_values(__a), __b)",
}

_EXPLODE_JSON = {
    "EXPLODE_JSON_ARRAY_INT": "BIGINT",
    "EXPLODE_JSON_ARRAY_DOUBLE": "DOUBLE",
    "EXPLODE_JSON_ARRAY_STRING": "STRING",
}

_APPLY_OPERATORS = ("=", "!=", ">", ">=", "<", "<=")


# functions of an array (or map) first argument: NULL for an untyped NULL there (Doris' result;
# the engines refuse a NULL-typed argument)
_NULL_IN_NULL_OUT = {*_ONE_ARRAY, *_TWO_ARGS, "ARRAY_JOIN", "ARRAY_SLICE", "ELEMENT_AT", "ARRAY_APPLY"} - {
    "ARRAY_WITH_CONSTANT",
    "ARRAY_REPEAT",
}


def rewrite(name: str, args: list[exp.Expr]) -> exp.Expr | None:
    """The Spark expression for Doris' `name(args)` of this family, or None."""
    n = len(args)
    if name in _NULL_IN_NULL_OUT and args and isinstance(args[0], exp.Null):
        return exp.Null()
    if name == "MAP_AGG" and n == 2:  # (rows with a NULL key are skipped)
        return template(
            "map_from_entries(collect_list(IF(__k IS NULL, NULL, named_struct('k', __k, 'v', __v))))",
            k=args[0],
            v=args[1],
        )
    if name in _LAMBDA_SIMPLE and n >= 2 and isinstance(args[0], exp.Lambda):
        array, lam = _lambda_over(args[0], args[1:], name)
        return template(_LAMBDA_SIMPLE[name], a=array, f=lam)
    if name == "ARRAY_FILTER" and n == 2:  # array_filter(arr, array_of_booleans)
        return template(
            "filter(__a, (x, i) -> coalesce(try_element_at(__b, i + 1), false))", a=args[0], b=args[1]
        )
    if name == "ARRAY_COUNT" and n == 1:
        return template(
            "CAST(size(filter(__a, x -> x IS NOT NULL AND CAST(x AS BOOLEAN))) AS BIGINT)", a=args[0]
        )
    if name in _ONE_ARRAY and n == 1:
        return template(_ONE_ARRAY[name], a=args[0])
    if name in _TWO_ARGS and n == 2:
        return template(_TWO_ARGS[name], a=args[0], b=args[1])
    if name == "ARRAY_JOIN" and n in (2, 3):
        return call("array_join", *args)
    if name == "ARRAY_RANGE":
        return _array_range(args)
    if name == "ELEMENT_AT" and n == 2:
        return element(args[0], args[1])
    if name == "ARRAY_SLICE" and n in (2, 3):
        length = (
            args[2] if n == 3 else template("IF(__o < 0, -__o, greatest(size(__a), 0))", a=args[0], o=args[1])
        )
        return template(
            "CASE WHEN __o = 0 OR __l < 0 THEN filter(__a, x -> false) ELSE slice(__a, __o, __l) END",
            a=args[0],
            o=args[1],
            l=length,
        )
    if name == "ARRAY_CONCAT" and n >= 1:
        return call("concat", *args)
    if name == "ARRAY_APPLY" and n == 3:
        op = string_value(args[1])
        if op not in _APPLY_OPERATORS:
            raise GaleneError(f"array_apply: the operator must be one of {', '.join(_APPLY_OPERATORS)}")
        return template(f"filter(__a, x -> x {op} __v)", a=args[0], v=args[2])
    if name == "ARRAY_SORTBY" and n == 2:
        return template(
            "transform(array_sort(arrays_zip(__k, __a), (l, r) -> CASE WHEN l['0'] IS NULL AND r['0'] IS NULL"
            " THEN 0 WHEN l['0'] IS NULL THEN -1 WHEN r['0'] IS NULL THEN 1 WHEN l['0'] < r['0'] THEN -1"
            " WHEN l['0'] > r['0'] THEN 1 ELSE 0 END), z -> z['1'])",
            a=args[0],
            k=args[1],
        )
    if name == "MAP":
        if n % 2:
            raise GaleneError("map() takes an even number of arguments: key1, value1, key2, value2, ...")
        return call("map", *args)
    if name == "NAMED_STRUCT":
        return call("named_struct", *args)
    if name == "STRUCT_ELEMENT":
        return _struct_element(args)
    if name in ("EXPLODE_NUMBERS", "EXPLODE_NUMBERS_OUTER") and n == 1:
        generator = "explode" if name == "EXPLODE_NUMBERS" else "explode_outer"
        return template(
            f"{generator}(IF(__n > 0, sequence(0, CAST(__n AS INT) - 1), filter(array(0), x -> false)))",
            n=args[0],
        )
    base = name.removesuffix("_OUTER")
    generator = "explode_outer" if name.endswith("_OUTER") else "explode"
    if base in _EXPLODE_JSON and n == 1:
        return call(generator, call("from_json", args[0], string(f"array<{_EXPLODE_JSON[base]}>")))
    if base == "EXPLODE_JSON_ARRAY_JSON" and n == 1:
        return template(
            f"{generator}(transform(from_json(__j, 'array<string>'), x -> to_json(try_parse_json(x))))",
            j=args[0],
        )
    if base == "EXPLODE_MAP" and n == 1:  # (Sail's explode of a map fails: its entries instead)
        return call("inline_outer" if name.endswith("_OUTER") else "inline", call("map_entries", args[0]))
    return None
