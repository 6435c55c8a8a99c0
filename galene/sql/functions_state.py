"""Doris' BITMAP, HLL and QUANTILE_STATE functions on Spark: the aggregate-state family of the
Doris → Spark function translation (`galene.sql.functions` dispatches here by name).

They work on the storage forms of galene/common/types.py, with engine expressions only:

* BITMAP = a sorted list<bigint> of distinct values. TO_BITMAP(v) (NULL for a negative or
  unreadable v), BITMAP_EMPTY(), BITMAP_FROM_STRING('1,2') (NULL when not that form),
  BITMAP_TO_STRING, BITMAP_TO_ARRAY, BITMAP_COUNT (0 for NULL), BITMAP_CONTAINS,
  BITMAP_HAS_ANY/HAS_ALL, BITMAP_MIN/MAX, BITMAP_AND/OR/XOR/NOT/AND_NOT (+ _COUNT),
  BITMAP_SUBSET_IN_RANGE/SUBSET_LIMIT; aggregates BITMAP_UNION, BITMAP_UNION_COUNT,
  BITMAP_INTERSECT, BITMAP_AGG, INTERSECT_COUNT(b, col, v1, v2…),
  ORTHOGONAL_BITMAP_INTERSECT(_COUNT), ORTHOGONAL_BITMAP_UNION_COUNT.
  BITMAP_HASH needs MurmurHash3 with Doris' seed, which neither engine offers: refused in
  queries (stream load computes it: galene/load/state_functions.py).
* HLL = Apache DataSketches HLL sketch bytes (Spark's and Sail's hll_* functions read them):
  HLL_UNION_AGG(h) → the estimate (BIGINT), HLL_UNION/HLL_RAW_AGG(h) → the merged sketch,
  HLL_CARDINALITY(h) (0 for NULL/empty), HLL_EMPTY(); HLL_HASH(x) is read where it is
  consumed: HLL_UNION_AGG(HLL_HASH(x)) is the estimate of hll_sketch_agg(CAST(x AS STRING)) (the text, as a load hashes it),
  HLL_UNION(HLL_HASH(x)) its sketch, HLL_CARDINALITY(HLL_HASH(x)) is 1 (0 for NULL); elsewhere
  (INSERT … SELECT hll_hash(x)) each row's sketch is a window over its value (hll_hash_per_row).
* QUANTILE_STATE = the list<double> of the values: TO_QUANTILE_STATE(v, compression),
  QUANTILE_STATE_EMPTY(), QUANTILE_UNION (aggregate), QUANTILE_PERCENT(q, p): Doris' explicit
  state rule (be/src/util/quantile_state.cpp get_explicit_value_by_percentile): the sorted
  values linearly interpolated at (n - 1) * p; NULL when empty.
"""

from __future__ import annotations

from sqlglot import exp

from galene.common.errors import GaleneError
from galene.sql.sqlbuild import call, let, template

NAMES = frozenset(
    {
        "TO_BITMAP", "BITMAP_EMPTY", "BITMAP_FROM_STRING", "BITMAP_TO_STRING", "BITMAP_TO_ARRAY",
        "BITMAP_FROM_ARRAY", "BITMAP_COUNT", "BITMAP_CONTAINS", "BITMAP_HAS_ANY", "BITMAP_HAS_ALL",
        "BITMAP_MIN", "BITMAP_MAX", "BITMAP_AND", "BITMAP_OR", "BITMAP_XOR", "BITMAP_NOT",
        "BITMAP_AND_NOT", "BITMAP_ANDNOT", "BITMAP_AND_COUNT", "BITMAP_OR_COUNT", "BITMAP_XOR_COUNT",
        "BITMAP_AND_NOT_COUNT", "BITMAP_ANDNOT_COUNT", "BITMAP_SUBSET_IN_RANGE", "BITMAP_SUBSET_LIMIT",
        "BITMAP_UNION", "BITMAP_UNION_COUNT", "BITMAP_INTERSECT", "BITMAP_AGG", "INTERSECT_COUNT",
        "ORTHOGONAL_BITMAP_INTERSECT", "ORTHOGONAL_BITMAP_INTERSECT_COUNT", "ORTHOGONAL_BITMAP_UNION_COUNT",
        "BITMAP_HASH", "BITMAP_HASH64", "HLL_UNION_AGG", "HLL_UNION", "HLL_RAW_AGG", "HLL_CARDINALITY",
        "HLL_EMPTY", "HLL_HASH", "TO_QUANTILE_STATE", "QUANTILE_STATE_EMPTY", "QUANTILE_UNION",
        "QUANTILE_PERCENT",
    }
)  # fmt: skip

_EMPTY = "CAST(array() AS ARRAY<BIGINT>)"
# sort_array, not array_sort: Spark's array_sort without a comparator runs an interpreted lambda
# (measured: a bitmap_union_count group-by over 200k rows took 2.9x the native form).
_UNION = "sort_array(array_distinct(flatten(collect_list(__b))))"
_UNION_SIZE = "CAST(size(array_distinct(flatten(collect_list(__b)))) AS BIGINT)"

_ONE = {
    "BITMAP_TO_STRING": "array_join(transform(__b, x -> CAST(x AS STRING)), ',')",
    "BITMAP_TO_ARRAY": "__b",
    "BITMAP_FROM_ARRAY": "sort_array(array_distinct(filter(transform(__b, x -> CAST(x AS BIGINT)), x -> x >= 0)))",
    "BITMAP_COUNT": "CAST(IF(__b IS NULL, 0, size(__b)) AS BIGINT)",
    "BITMAP_MIN": "array_min(__b)",
    "BITMAP_MAX": "array_max(__b)",
    "BITMAP_UNION": _UNION,
    "BITMAP_UNION_COUNT": _UNION_SIZE,
    "ORTHOGONAL_BITMAP_UNION_COUNT": _UNION_SIZE,
    "BITMAP_INTERSECT": (
        "sort_array(aggregate(collect_list(__b), try_element_at(collect_list(__b), 1),"
        " (acc, x) -> array_intersect(acc, x)))"
    ),
    "BITMAP_AGG": "sort_array(array_distinct(collect_list(IF(__b >= 0, __b, NULL))))",
    "HLL_UNION_AGG": "CAST(coalesce(hll_sketch_estimate(hll_union_agg(__b, true)), 0) AS BIGINT)",
    "HLL_UNION": "hll_union_agg(__b, true)",
    "HLL_RAW_AGG": "hll_union_agg(__b, true)",
    "HLL_CARDINALITY": "CAST(coalesce(hll_sketch_estimate(__b), 0) AS BIGINT)",
    "QUANTILE_UNION": "flatten(collect_list(__b))",
}

# the same functions over HLL_HASH(x): x itself
# (Doris' hll_hash takes a string; a load hashes the field's text: the query hashes the value's
# text too, so sketches from both sources count a value once.)
_OVER_HLL_HASH = {
    "HLL_UNION_AGG": "CAST(coalesce(hll_sketch_estimate(hll_sketch_agg(CAST(__x AS STRING))), 0) AS BIGINT)",
    "HLL_UNION": "hll_sketch_agg(CAST(__x AS STRING))",
    "HLL_RAW_AGG": "hll_sketch_agg(CAST(__x AS STRING))",
    "HLL_CARDINALITY": "CAST(IF(__x IS NULL, 0, 1) AS BIGINT)",
}

_TWO = {
    "BITMAP_CONTAINS": "array_contains(__a, CAST(__b AS BIGINT))",
    "BITMAP_HAS_ANY": "arrays_overlap(__a, __b)",
    "BITMAP_HAS_ALL": "size(array_except(__b, __a)) = 0",
    "BITMAP_XOR": "sort_array(array_union(array_except(__a, __b), array_except(__b, __a)))",
    "BITMAP_XOR_COUNT": "CAST(size(array_union(array_except(__a, __b), array_except(__b, __a))) AS BIGINT)",
    "BITMAP_NOT": "array_except(__a, __b)",
    "BITMAP_AND_NOT": "array_except(__a, __b)",
    "BITMAP_ANDNOT": "array_except(__a, __b)",
    "BITMAP_AND_NOT_COUNT": "CAST(size(array_except(__a, __b)) AS BIGINT)",
    "BITMAP_ANDNOT_COUNT": "CAST(size(array_except(__a, __b)) AS BIGINT)",
}

_PERCENT = (
    "CASE WHEN __n IS NULL OR __n = 0 THEN NULL"
    " WHEN CAST(floor((__n - 1) * __p) AS INT) >= __n - 1 THEN try_element_at(__s, __n)"
    " ELSE try_element_at(__s, CAST(floor((__n - 1) * __p) AS INT) + 2) * ((__n - 1) * __p - floor((__n - 1) * __p))"
    " + try_element_at(__s, CAST(floor((__n - 1) * __p) AS INT) + 1)"
    " * (floor((__n - 1) * __p) + 1 - (__n - 1) * __p) END"
)


def _is_hll_hash(node: exp.Expr) -> bool:
    return isinstance(node, exp.Anonymous) and node.name.upper() == "HLL_HASH" and len(node.expressions) == 1


def hll_hash_per_row(tree: exp.Expr) -> None:
    """An HLL_HASH(x) no consumer read (`INSERT INTO t SELECT hll_hash(x)`, `SELECT hll_hash(x)`):
    the one-value sketch of each row is the sketch of its value's partition, `hll_sketch_agg(x)
    OVER (PARTITION BY x)` (a sketch does not change with duplicates; NULL gives the empty
    sketch, as Doris' hll_hash(NULL)) — a window both engines compute (Sail has no sliding
    one-row frame for it)."""
    for node in list(tree.find_all(exp.Anonymous)):
        if node.name.upper() == "HLL_HASH" and len(node.expressions) == 1:
            value = node.expressions[0]
            node.replace(
                exp.Window(
                    this=call("hll_sketch_agg", exp.cast(value.copy(), "STRING")),
                    partition_by=[value.copy()],
                    over="OVER",
                )
            )


def _intersect_count(args: list[exp.Expr], count: bool) -> exp.Expr:
    """INTERSECT_COUNT(b, col, v1, v2…): the intersection of the unions of b over the rows
    where col = vi (one union per filter value)."""
    if len(args) < 3:
        raise GaleneError("intersect_count needs a bitmap, a filter column and at least one filter value")
    bitmap, column, values = args[0], args[1], args[2:]
    unions = [
        template("array_distinct(flatten(collect_list(IF(__c = __v, __b, NULL))))", b=bitmap, c=column, v=v)
        for v in values
    ]
    result = unions[0]
    for other in unions[1:]:
        result = template("array_intersect(__a, __b)", a=result, b=other)
    if count:
        return template("CAST(size(__r) AS BIGINT)", r=result)
    return template("sort_array(__r)", r=result)


def rewrite(name: str, args: list[exp.Expr]) -> exp.Expr | None:
    n = len(args)
    if name in ("BITMAP_HASH", "BITMAP_HASH64"):
        raise GaleneError(
            f"{name.lower()} is not supported in queries by Galene (stream load computes it: "
            "columns: b=bitmap_hash(x)); use to_bitmap of an integer id"
        )
    if name == "HLL_HASH":
        return None  # read by the function that consumes it (below); alone it is refused later
    if name in _OVER_HLL_HASH and n == 1 and _is_hll_hash(args[0]):
        return template(_OVER_HLL_HASH[name], x=args[0].expressions[0])
    if name == "TO_BITMAP" and n == 1:  # (the argument arrives as a BIGINT by Doris' integer rule)
        return template("IF(__v >= 0, array(__v), NULL)", v=args[0])
    if name in ("BITMAP_EMPTY", "QUANTILE_STATE_EMPTY") and n == 0:
        return template(_EMPTY if name == "BITMAP_EMPTY" else "CAST(array() AS ARRAY<DOUBLE>)")
    if name == "HLL_EMPTY" and n == 0:
        return template("CAST(NULL AS BINARY)")
    if name == "BITMAP_FROM_STRING" and n == 1:
        return template(
            "CASE WHEN trim(__s) = '' THEN CAST(array() AS ARRAY<BIGINT>)"
            " WHEN __s RLIKE '^ *[0-9]{1,18} *( *, *[0-9]{1,18} *)*$'"
            " THEN sort_array(array_distinct(transform(split(__s, ','), x -> try_cast(trim(x) AS BIGINT)))) END",
            s=args[0],
        )
    if name in _ONE and n == 1 and isinstance(args[0], exp.Null):  # (Sail refuses untyped NULLs)
        return template("CAST(0 AS BIGINT)") if name in ("BITMAP_COUNT", "HLL_CARDINALITY") else exp.Null()
    if name in _ONE and n == 1:
        return template(_ONE[name], b=args[0])
    if name in _TWO and n == 2:
        return template(_TWO[name], a=args[0], b=args[1])
    if name in ("BITMAP_AND", "BITMAP_AND_COUNT") and n >= 2:
        result = args[0]
        for other in args[1:]:
            result = template("array_intersect(__a, __b)", a=result, b=other)
        return template(
            "CAST(size(__r) AS BIGINT)" if name.endswith("_COUNT") else "sort_array(__r)", r=result
        )
    if name in ("BITMAP_OR", "BITMAP_OR_COUNT") and n >= 2:
        present = [template(f"coalesce(__b, {_EMPTY})", b=a) for a in args]  # NULL: no values
        merged = template("sort_array(array_distinct(flatten(__l)))", l=exp.Array(expressions=present))
        return template("CAST(size(__r) AS BIGINT)", r=merged) if name.endswith("_COUNT") else merged
    if name == "BITMAP_SUBSET_IN_RANGE" and n == 3:
        return template("filter(__b, x -> x >= __lo AND x < __hi)", b=args[0], lo=args[1], hi=args[2])
    if name == "BITMAP_SUBSET_LIMIT" and n == 3:
        return template(
            "slice(filter(__b, x -> x >= __lo), 1, greatest(CAST(__k AS INT), 0))",
            b=args[0],
            lo=args[1],
            k=args[2],
        )
    if name in ("INTERSECT_COUNT", "ORTHOGONAL_BITMAP_INTERSECT_COUNT"):
        return _intersect_count(args, count=True)
    if name == "ORTHOGONAL_BITMAP_INTERSECT":
        return _intersect_count(args, count=False)
    if name == "TO_QUANTILE_STATE" and n in (1, 2):
        return template("IF(__v IS NULL, NULL, array(CAST(__v AS DOUBLE)))", v=args[0])
    if name == "QUANTILE_PERCENT" and n == 2:
        fraction = template("CAST(CAST(__p AS FLOAT) AS DOUBLE)", p=args[1])
        return let(
            template("sort_array(__q)", q=args[0]),
            lambda s: template(_PERCENT, s=s, n=template("size(__s)", s=s), p=fraction),
        )
    raise GaleneError(f"{name.lower()}: wrong number of arguments ({n})")
