"""Doris' JSON/JSONB functions beyond the getters, and VARIANT sub-columns, on Spark: the JSON
family of the Doris → Spark function translation (`galene.sql.functions` dispatches here).

JSON and VARIANT values are stored as JSON text (galene/common/types.py); a document is read
with `try_parse_json` (Spark's VARIANT), its parts with `try_variant_get`/`get_json_object`,
and written back with `to_json`. Doris' rules (docs, sql-manual/sql-functions/scalar-functions/
json-functions/*; regression-test/suites/variant_p0/element_function.groovy):

* `v['a']['b']` on a VARIANT column (or on `CAST(x AS VARIANT)`) is the sub-value as Doris
  prints it: a string unquoted, a number, array or object as its JSON text, NULL when missing
  (`get_json_object` over the path); `CAST(v['a'] AS INT)` reads that text with Doris' CAST
  rules, `CAST(v['a'] AS ARRAY<…>|MAP<…>|STRUCT<…>)` parses it (`from_json`).
* JSON_LENGTH(j[, path]): an array's elements, an object's keys, 1 for a scalar; JSON_KEYS(j[,
  path]): the keys as a JSON array, NULL for a non-object; JSON_TYPE(j, path): object, array,
  string, int, bigint, double, bool or null; JSON_EXISTS_PATH/JSONB_EXISTS_PATH: BOOLEAN;
  JSON_EXTRACT_ISNULL: whether the value at the path is JSON null; JSON_QUOTE/JSON_UNQUOTE;
  JSON_CONTAINS(j, candidate[, path]): equal, or an element of an array; JSONB_EXTRACT =
  JSON_EXTRACT; JSON_PARSE/JSONB_PARSE[_ERROR_TO_NULL|_ERROR_TO_VALUE] → normalized JSON text.
"""

from __future__ import annotations

from sqlglot import exp

from galene.sql.sqlbuild import call, cast, int_value, let, string, string_value, template

NAMES = frozenset(
    {
        "JSON_LENGTH", "JSONB_LENGTH", "JSON_KEYS", "JSONB_KEYS", "JSON_TYPE", "JSONB_TYPE",
        "JSON_EXISTS_PATH", "JSONB_EXISTS_PATH", "JSON_EXTRACT_ISNULL", "JSONB_EXTRACT_ISNULL",
        "JSON_QUOTE", "JSON_UNQUOTE", "JSON_CONTAINS", "JSON_PARSE", "JSONB_PARSE",
        "JSON_PARSE_ERROR_TO_NULL", "JSONB_PARSE_ERROR_TO_NULL", "JSON_PARSE_ERROR_TO_VALUE",
        "JSONB_PARSE_ERROR_TO_VALUE", "JSON_PARSE_NOTNULL", "JSONB_PARSE_NOTNULL", "JSONB_EXTRACT",
    }
)  # fmt: skip

# Doris' json_type of Spark's schema_of_variant.
_TYPE_OF = (
    "CASE WHEN __v IS NULL THEN NULL"
    " WHEN schema_of_variant(__v) LIKE 'OBJECT%' THEN 'object'"
    " WHEN schema_of_variant(__v) LIKE 'ARRAY%' THEN 'array'"
    " WHEN schema_of_variant(__v) = 'STRING' THEN 'string'"
    " WHEN schema_of_variant(__v) = 'BOOLEAN' THEN 'bool'"
    " WHEN schema_of_variant(__v) = 'VOID' THEN 'null'"
    " WHEN schema_of_variant(__v) IN ('BIGINT', 'INT', 'SMALLINT', 'TINYINT')"
    " THEN IF(try_cast(to_json(__v) AS BIGINT) BETWEEN -2147483648 AND 2147483647, 'int', 'bigint')"
    " ELSE 'double' END"
)


def doc_path(node: exp.Expr | None) -> exp.Expr:
    """Doris JSON path → Spark's: `$.[1]` → `$[1]`, `$."a.b"` → `$['a.b']`."""
    if node is None:
        return string("$")
    text = string_value(node)
    if text is None:
        return node
    out, i = [], 0
    text = text.replace("$.[", "$[").replace(".[", "[")
    while i < len(text):  # ."quoted key" → ['quoted key']
        if text.startswith('."', i) and (end := text.find('"', i + 2)) != -1:
            out.append("['" + text[i + 2 : end] + "']")
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return string("".join(out))


def _value(doc: exp.Expr, path: exp.Expr | None = None) -> exp.Expr:
    """The VARIANT at `path` of the JSON text `doc` (NULL when invalid or missing)."""
    return call("try_variant_get", call("try_parse_json", doc.copy()), doc_path(path))


def _over_value(text: str, doc: exp.Expr, path: exp.Expr | None = None, **more: exp.Expr) -> exp.Expr:
    """`text` (a template over __v) with __v the document's value at `path`, parsed once."""
    return let(_value(doc, path), lambda v: template(text, v=v, **more))


# --- VARIANT sub-columns ----------------------------------------------------------------
def _path_step(key: exp.Expr) -> str | None:
    text = string_value(key)
    if text is not None:
        if text.replace("_", "").isalnum():
            return "." + text
        return "['" + text.replace("'", "\\'") + "']"
    index = int_value(key)
    return f"[{index}]" if index is not None and index >= 0 else None


def variant_subscript(node: exp.Bracket) -> exp.Expr | None:
    """`v['a']` when `v` is a VARIANT (a marked column, a CAST to VARIANT, or a sub-value of
    one): the sub-value as Doris prints it (`get_json_object`), else None."""
    base = node.this
    path = base.meta.get("variant_path")
    if path is not None:
        base, steps = path
    elif base.meta.get("doris_type") == "VARIANT" or base.meta.get("variant"):
        steps = "$"
    else:
        return None
    if len(node.expressions) != 1:
        return None
    step = _path_step(node.expressions[0])
    if step is None:
        return None  # a computed key: not a path Galene can spell
    steps = steps + step
    out = call("get_json_object", base.copy(), string(steps))
    out.meta["variant_path"] = (base, steps)
    return out


def is_variant_value(node: exp.Expr) -> bool:
    """A VARIANT (sub-)value, or a string literal (CAST('[1, 2]' AS ARRAY<INT>) reads its text)."""
    if isinstance(node, exp.Literal) and node.is_string:
        return True
    return node.meta.get("variant_path") is not None or node.meta.get("doris_type") == "VARIANT"


def variant_cast(value: exp.Expr, to: exp.DataType) -> exp.Expr | None:
    """CAST of a VARIANT (sub-)value to a nested type: its JSON text parsed; None otherwise."""
    if to.this in (exp.DType.ARRAY, exp.DType.MAP, exp.DType.STRUCT):
        return call("from_json", value, string(to.sql(dialect="spark")))
    return None


def variant_scalar(value: exp.Expr) -> exp.Expr:
    """A whole VARIANT column's value as the text a CAST to a scalar reads (a JSON string
    unquoted, anything else its JSON text)."""
    if value.meta.get("variant_path") is not None:
        return value  # already get_json_object's text
    return call("get_json_object", value.copy(), string("$"))


def to_variant(value: exp.Expr) -> exp.Expr:
    """CAST(x AS VARIANT): JSON text (a string is read as JSON when it is JSON, else kept as a
    JSON string), marked so that subscripts over it are paths."""
    text = cast(value, "STRING")
    out = template("coalesce(to_json(try_parse_json(__s)), to_json(CAST(__s AS VARIANT)))", s=text)
    out.meta["variant"] = True
    return out


# --- functions --------------------------------------------------------------------------
def extract(doc: exp.Expr, paths: list[exp.Expr]) -> exp.Expr:
    """JSON_EXTRACT/JSONB_EXTRACT(j, path…): the JSON text at the path (strings keep their
    quotes), several paths giving a JSON array of the values."""

    def one(path: exp.Expr) -> exp.Expr:
        return call("to_json", _value(doc, path))

    if len(paths) == 1:
        return one(paths[0])
    items = [call("coalesce", one(p), string("null")) for p in paths]
    return template(
        "IF(__j IS NULL, NULL, concat('[', __items, ']'))",
        j=doc,
        items=call("concat_ws", string(","), *items),
    )


def rewrite(name: str, args: list[exp.Expr]) -> exp.Expr | None:
    n = len(args)
    if name == "JSONB_EXTRACT" and n >= 2:
        return extract(args[0], args[1:])
    name = name.replace("JSONB_", "JSON_")
    if name == "JSON_LENGTH" and n in (1, 2):
        return _over_value(
            "CAST(CASE WHEN __v IS NULL THEN NULL WHEN schema_of_variant(__v) LIKE 'ARRAY%'"
            " THEN json_array_length(to_json(__v)) WHEN schema_of_variant(__v) LIKE 'OBJECT%'"
            " THEN size(json_object_keys(to_json(__v))) ELSE 1 END AS INT)",
            args[0],
            args[1] if n == 2 else None,
        )
    if name == "JSON_KEYS" and n in (1, 2):
        return template(
            "IF(schema_of_variant(__v) LIKE 'OBJECT%', to_json(json_object_keys(to_json(__v))), NULL)",
            v=_value(args[0], args[1] if n == 2 else None),
        )
    if name == "JSON_TYPE" and n in (1, 2):
        return _over_value(_TYPE_OF, args[0], args[1] if n == 2 else None)
    if name == "JSON_EXISTS_PATH" and n == 2:
        return template(
            "IF(__j IS NULL OR __p IS NULL, NULL, __v IS NOT NULL)",
            j=args[0],
            p=args[1],
            v=_value(args[0], args[1]),
        )
    if name == "JSON_EXTRACT_ISNULL" and n == 2:
        return template("IF(__v IS NULL, NULL, to_json(__v) = 'null')", v=_value(args[0], args[1]))
    if name == "JSON_QUOTE" and n == 1:
        return call("to_json", cast(cast(args[0], "STRING"), "VARIANT"))
    if name == "JSON_UNQUOTE" and n == 1:
        return template(
            "CASE WHEN __s LIKE '\"%\"' AND length(__s) >= 2"
            " THEN coalesce(try_variant_get(try_parse_json(__s), '$', 'string'), __s) ELSE __s END",
            s=args[0],
        )
    if name == "JSON_CONTAINS" and n in (2, 3):
        return template(
            "CASE WHEN __t IS NULL OR __c IS NULL THEN NULL"
            " WHEN to_json(__t) = to_json(__c) THEN true"
            " WHEN schema_of_variant(__t) LIKE 'ARRAY%' THEN"
            " exists(from_json(to_json(__t), 'array<string>'), e -> to_json(try_parse_json(e)) = to_json(__c)"
            " OR to_json(CAST(e AS VARIANT)) = to_json(__c))"
            " ELSE false END",
            t=_value(args[0], args[2] if n == 3 else None),
            c=_value(args[1]),
        )
    if name in ("JSON_PARSE", "JSON_PARSE_NOTNULL") and n == 1:
        return call("to_json", call("parse_json", args[0]))
    if name == "JSON_PARSE_ERROR_TO_NULL" and n == 1:
        return call("to_json", call("try_parse_json", args[0]))
    if name == "JSON_PARSE_ERROR_TO_VALUE" and n == 2:
        return call("coalesce", call("to_json", call("try_parse_json", args[0])), args[1])
    return None
