"""The JSON reader of a load: a JSON body's rows as text source columns, with Doris' JSON options.

Owns `read_json_by_line` / `strip_outer_array` / `json_root` / `jsonpaths` / `num_as_string`
and Doris' errors for a document of the wrong shape. pyarrow's JSON reader goes first (fast,
threaded); documents it cannot read — value types that differ between rows, numbers whose
exact text a float would lose (big integers, long decimals, `num_as_string`), nested values
other than those headed for an ARRAY / STRUCT column whose leaves pyarrow read exactly (kept
typed, converted by `galene.load.convert.coerce`) — are decoded with msgspec, numbers as
their exact digits, and every value becomes the text `galene.load.json_text.json_value_text`
gives it (the one JSON value → text rule, shared with
the S3 table function's reader).
"""

from __future__ import annotations

import msgspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from galene.catalog.model import Column
from galene.common.errors import LoadError
from galene.load.json_text import EXACT_JSON, json_value_text
from galene.load.options import LoadOptions, parse_jsonpaths
from galene.load.source import Source, SourcePlan
from galene.load.text_types import keeps_values

JSON_BLOCK_SIZE = 8 << 20


def read_json(body: bytes, plan: SourcePlan, opts: LoadOptions) -> Source:
    """JSON rows as string columns (one per source name; keys matched case-insensitively).

    With `jsonpaths`, source column i is the value at the i-th path instead of the key named
    like it. Numbers keep their exact text whenever a float could not give it back
    (`num_as_string`, or a non-float target): those documents take the msgspec path.
    """
    wanted = [n.lower() for n in plan.names]
    paths = parse_jsonpaths(opts.jsonpaths) if opts.jsonpaths else None  # validated at from_headers
    struct = None
    if not opts.num_as_string:
        try:
            struct = _json_with_arrow(body, opts)
        except pa.ArrowInvalid:
            struct = None
    if struct is not None:
        columns = _json_columns_from_struct(struct, wanted, paths, plan)
        if columns is not None:
            return Source(len(struct), False, columns, [], 0, _json_renderer(plan.names, columns))
    rows = _json_rows_with_msgspec(body, opts)
    if paths is not None:
        columns = {
            idx: pa.array(
                [json_value_text(_py_at_path(r, paths[idx])) if idx < len(paths) else None for r in rows],
                pa.string(),
            )
            for idx in range(len(wanted))
        }
    else:
        columns = _columns_from_rows(rows, wanted)
    return Source(len(rows), False, columns, [], 0, _json_renderer(plan.names, columns))


def _json_columns_from_struct(struct, wanted, paths, plan: SourcePlan) -> dict[int, pa.Array] | None:
    """Source columns out of pyarrow's rows, or None when a value's text would not survive."""
    n = len(struct)
    columns: dict[int, pa.Array] = {}
    if paths is not None:
        for idx in range(len(wanted)):
            arr = _arrow_at_path(struct, paths[idx]) if idx < len(paths) else None
            if arr is None:
                columns[idx] = pa.nulls(n, pa.string())
                continue
            if not _arrow_to_text_ok(arr.type, plan.targets[idx]):
                return None
            columns[idx] = arr if arr.type == pa.string() else pc.cast(arr, pa.string())
        return columns
    by_key: dict[str, list[pa.Array]] = {}
    for i in range(struct.type.num_fields):
        by_key.setdefault(struct.type.field(i).name.lower(), []).append(struct.field(i))
    for idx, name in enumerate(wanted):
        arrays = by_key.get(name)
        if arrays is None:
            columns[idx] = pa.nulls(n, pa.string())
            continue
        target = plan.targets[idx]
        if (
            len(arrays) == 1
            and target is not None
            and target.type.is_nested
            and keeps_values(arrays[0].type, target.type)
        ):
            columns[idx] = arrays[0]  # JSON arrays / objects as pyarrow read them: converted typed
            continue
        if not all(_arrow_to_text_ok(a.type, target) for a in arrays):
            return None  # e.g. a timestamp-looking string headed for a VARCHAR: keep the text
        texts = [a if a.type == pa.string() else pc.cast(a, pa.string()) for a in arrays]
        # Keys differing only in case ("ID" in one row, "id" in another) are one column.
        columns[idx] = texts[0] if len(texts) == 1 else pc.coalesce(*texts)
    return columns


def _arrow_to_text_ok(arrow_type: pa.DataType, target: Column | None) -> bool:
    """Whether casting an inferred JSON column to text gives what the source said."""
    if pa.types.is_struct(arrow_type) or pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return False  # nested values: serialized by the fallback
    if pa.types.is_timestamp(arrow_type):
        # pyarrow turned an ISO-looking string into a timestamp; fine for temporal targets only.
        return target is not None and target.type.name in ("DATE", "DATETIME")
    if pa.types.is_floating(arrow_type):
        # A double may have dropped digits (big integers, long decimals): exact text needed
        # unless the column is a float itself.
        return target is not None and target.type.name in ("FLOAT", "DOUBLE")
    return True


def _arrow_at_path(arr, steps: list[str | int]):
    """The values at a JSONPath in pyarrow rows; None when no row has that path."""
    for step in steps:
        if isinstance(step, int):
            if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
                return None
            # Rows whose list is shorter give NULL, as a missing path does in Doris.
            lengths = pc.fill_null(pc.list_value_length(arr), 0)
            short = pc.less_equal(lengths, step)
            safe = pc.if_else(short, pa.scalar(None, arr.type), arr)
            arr = pc.list_element(pc.fill_null(safe, pa.scalar([None] * (step + 1), arr.type)), step)
        else:
            if not pa.types.is_struct(arr.type):
                return None
            child = _struct_child(arr, step)
            if child is None:
                return None
            if arr.null_count:
                child = pc.if_else(pc.is_null(arr), pa.scalar(None, child.type), child)
            arr = child
    return arr


def _py_at_path(doc, steps: list[str | int]):
    for step in steps:
        if isinstance(step, int):
            if not isinstance(doc, list) or step >= len(doc):
                return None
            doc = doc[step]
        else:
            if not isinstance(doc, dict):
                return None
            if step in doc:
                doc = doc[step]
            else:
                lower = step.lower()
                doc = next((v for k, v in doc.items() if k.lower() == lower), None)
    return doc


def _json_root_path(json_root: str | None) -> list[str]:
    if not json_root:
        return []
    path = json_root.strip()
    path = path.removeprefix("$")
    return [p for p in path.split(".") if p]


def _json_with_arrow(body: bytes, opts: LoadOptions) -> pa.StructArray | None:
    """Rows as one StructArray via pyarrow's JSON reader, or None for shapes it cannot give."""
    root = _json_root_path(opts.json_root)
    if opts.json_by_line and not opts.strip_outer_array:
        table = pajson.read_json(
            pa.BufferReader(body),
            read_options=pajson.ReadOptions(use_threads=True, block_size=JSON_BLOCK_SIZE),
        )
        rows = table.to_struct_array().combine_chunks() if table.num_columns else None
        if rows is None:
            return None
        for key in root:
            rows = _struct_child(rows, key)
            if rows is None or not pa.types.is_struct(rows.type):
                return None
        return rows
    # Whole-document modes: wrap the body so pyarrow sees one object holding it, then unwrap.
    wrapped = b'{"__galene_doc":' + body + b"}"
    table = pajson.read_json(
        pa.BufferReader(wrapped),
        read_options=pajson.ReadOptions(use_threads=False, block_size=len(wrapped) + 1024),
        parse_options=pajson.ParseOptions(newlines_in_values=True),
    )
    if table.num_rows != 1:
        return None
    doc = table.column(0).combine_chunks()
    for key in root:
        if not pa.types.is_struct(doc.type):
            return None
        doc = _struct_child(doc, key)
        if doc is None:
            return None
    if pa.types.is_list(doc.type):
        if not opts.strip_outer_array:
            raise LoadError(
                "[DATA_QUALITY_ERROR]JSON data is array-object, `strip_outer_array` must be TRUE."
            )
        rows = pc.list_flatten(doc)
        return rows if pa.types.is_struct(rows.type) else None
    if pa.types.is_struct(doc.type):
        if opts.strip_outer_array:
            raise LoadError(
                "[DATA_QUALITY_ERROR]JSON data is not an array-object, `strip_outer_array` must be FALSE."
            )
        return doc
    return None


def _struct_child(arr: pa.StructArray, key: str):
    lkey = key.lower()
    for i in range(arr.type.num_fields):
        if arr.type.field(i).name.lower() == lkey:
            return arr.field(i)
    return None


def _decode_json(data: bytes, where: str = ""):
    try:
        return EXACT_JSON.decode(data)
    except msgspec.DecodeError as e:
        raise LoadError(f"[DATA_QUALITY_ERROR]Parse json data failed{where}: {e}") from None


def _descend(doc, root: list[str]):
    for key in root:
        if not isinstance(doc, dict):
            return None
        lower = {k.lower(): v for k, v in doc.items()}
        doc = lower.get(key.lower())
    return doc


def _json_rows_with_msgspec(body: bytes, opts: LoadOptions) -> list[dict]:
    """Fallback for JSON whose value types vary between rows: decode to Python objects."""
    root = _json_root_path(opts.json_root)
    rows: list = []
    if opts.json_by_line and not opts.strip_outer_array:
        for number, line in enumerate(body.splitlines(), 1):
            if not line.strip():
                continue
            doc = _descend(_decode_json(line, f" at line {number}"), root)
            if isinstance(doc, list):
                raise LoadError(
                    "[DATA_QUALITY_ERROR]JSON data is array-object, `strip_outer_array` must be TRUE."
                )
            rows.append(doc)
    else:
        doc = _descend(_decode_json(body), root)
        if isinstance(doc, list):
            if not opts.strip_outer_array:
                raise LoadError(
                    "[DATA_QUALITY_ERROR]JSON data is array-object, `strip_outer_array` must be TRUE."
                )
            rows = doc
        else:
            if opts.strip_outer_array:
                raise LoadError(
                    "[DATA_QUALITY_ERROR]JSON data is not an array-object, `strip_outer_array` must be FALSE."
                )
            rows = [doc]
    for row in rows:
        if not isinstance(row, dict):
            raise LoadError(
                f"[DATA_QUALITY_ERROR]JSON row is not an object: {msgspec.json.encode(row).decode()}"
            )
    return rows


def _columns_from_rows(rows: list[dict], wanted: list[str]) -> dict[int, pa.Array]:
    lowered = [{k.lower(): v for k, v in row.items()} for row in rows]
    return {
        idx: pa.array([json_value_text(r.get(name)) for r in lowered], pa.string())
        for idx, name in enumerate(wanted)
    }


def _json_renderer(names: list[str], columns: dict[int, pa.Array]):
    def render(indices: list[int]) -> list[str]:
        picked = [columns[i].take(pa.array(indices, pa.int64())).to_pylist() for i in range(len(names))]
        return [
            msgspec.json.encode({names[i]: picked[i][r] for i in range(len(names))}).decode()
            for r in range(len(indices))
        ]

    return render
