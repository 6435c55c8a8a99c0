"""A view's (or materialized view's) stored definition: its query as written, with every table
reference qualified as Doris stores it (`internal`.`db`.`t`)."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from galene.sql.dialect import Galene


def _backquote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def qualify_table_names(sql: str, default_db: str) -> str:
    """`sql` (a view's query as written) with every table reference spelled
    `internal`.`db`.`t`, as Doris stores a view's definition; the rest of the text is kept as
    written. Unchanged when the text cannot be read this way."""
    try:
        tree = sqlglot.parse_one(sql, read=Galene)
    except Exception:  # noqa: BLE001 - the caller has parsed it already; keep the text then
        return sql
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    edits: list[tuple[int, int, str]] = []
    for table in tree.find_all(exp.Table):
        ident = table.this
        if not isinstance(ident, exp.Identifier):
            continue  # a table function
        db = table.args.get("db")
        if db is None and ident.name.lower() in ctes:
            continue
        parts = [p for p in (table.args.get("catalog"), db, ident) if p is not None]
        if any("start" not in p.meta or "end" not in p.meta for p in parts):
            return sql
        start = min(p.meta["start"] for p in parts)
        name = f"`internal`.{_backquote(table.db or default_db)}.{_backquote(ident.name)}"
        edits.append((start, ident.meta["end"] + 1, name))
    out = sql
    for start, end, text in sorted(edits, reverse=True):
        out = out[:start] + text + out[end:]
    try:
        sqlglot.parse_one(out, read=Galene)
    except Exception:  # noqa: BLE001
        return sql
    return out
