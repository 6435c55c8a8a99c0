"""Index definitions (CREATE TABLE's INDEX, ALTER TABLE … ADD INDEX, CREATE INDEX … ON t)
checked as Doris' IndexDefinition checks them: kinds, columns, NGRAM_BF parameters, and that
an added index is new."""

from __future__ import annotations

from sqlglot import exp

from galene.catalog.model import Column, Index
from galene.common.errors import AnalysisError
from galene.sql.ddl.columns import find_column
from galene.sql.statements.reading import property_dict

_NGRAM_DEFAULTS = {"gram_size": "2", "bf_size": "256"}


_NGRAM_BOUNDS = {"gram_size": (1, 255), "bf_size": (64, 65535)}


def index_from_def(idef: exp.Expr, columns: list[Column], keys_type: str, missing: str) -> Index:
    """An IndexDef (CREATE TABLE's INDEX, ADD INDEX, CREATE INDEX) checked as Doris'
    IndexDefinition does; `missing` starts the text for a column the table lacks."""
    name = idef.name
    kind = idef.args.get("kind") or "INVERTED"
    names = [c.name for c in idef.expressions]
    props = property_dict(idef.args.get("properties"))
    comment_node = idef.args.get("comment")
    comment = comment_node.name if comment_node is not None else ""
    if kind in ("INVERTED", "BITMAP"):
        if len(names) != 1:
            raise AnalysisError(f"{kind} index can only apply to a single column.")
        if not name:
            raise AnalysisError("index name cannot be blank.")
        if len(name) > 64:
            raise AnalysisError("index name too long, the index name length at most is 64.")
        if len({n.lower() for n in names}) != len(names):
            raise AnalysisError("columns of index has duplicated.")
    if kind == "NGRAM_BF":
        props = {**_NGRAM_DEFAULTS, **props}
    resolved: list[str] = []
    for col_name in names:
        col = find_column([c for c in columns if not c.hidden], col_name)
        if col is None:
            raise AnalysisError(f"{missing}. invalid column: {col_name}")
        if col.type.name == "JSON":
            raise AnalysisError(
                f"{col.type.to_sql().upper()} is not supported in {kind} index. invalid index: {name}"
            )
        if not col.is_key and keys_type == "AGG_KEYS":
            raise AnalysisError(
                "index should only be used in columns of DUP_KEYS/UNIQUE_KEYS table or key columns of "
                f"AGG_KEYS table. invalid index: {name}"
            )
        if kind == "NGRAM_BF":
            if not col.type.is_string:
                raise AnalysisError(
                    f"{col.type.to_sql().upper()} is not supported in ngram_bf index. invalid column: {col.name}"
                )
            if len(props) != 2:
                raise AnalysisError("ngram_bf index should have gram_size and bf_size properties")
            for key, (low, high) in _NGRAM_BOUNDS.items():
                try:
                    value = int(props.get(key, ""))
                except ValueError:
                    value = None
                if value is None or not low <= value <= high:
                    raise AnalysisError(
                        f"invalid ngram bf index params:'{key}' should be an integer between {low} and {high}."
                    )
        resolved.append(col.name)
    return Index(name=name, columns=resolved, index_type=kind, properties=props, comment=comment)


def check_index_unique(indexes: list[Index], new: Index) -> None:
    """ADD INDEX against the table's indexes (Doris' checkDuplicateIndexes)."""
    cols = {c.lower() for c in new.columns}
    for index in indexes:
        if index.name.lower() == new.name.lower():
            raise AnalysisError(f"index `{new.name}` already exist.")
        if index.index_type == new.index_type and {c.lower() for c in index.columns} == cols:
            raise AnalysisError(
                f"{new.index_type} index for columns ({','.join(new.columns)}) already exist."
            )
