"""Name → object lookups over `CatalogState`, with Doris' errors for what is missing.

One rule for every writer that takes names (the FE's metadata service, the transaction
manager): database names are exact; table names are case-sensitive as in Doris, but a name
that matches exactly one table case-insensitively finds it.
"""

from __future__ import annotations

from galene.catalog.model import CatalogState, Database, Table
from galene.common.errors import unknown_database, unknown_table


def database(state: CatalogState, name: str) -> Database:
    db_id = state.db_names.get(name)
    if db_id is None:
        raise unknown_database(name)
    return state.databases[db_id]


def table(state: CatalogState, db_name: str, table_name: str) -> Table:
    db = database(state, db_name)
    table_id = db.tables.get(table_name)
    if table_id is None:
        # Doris table names are case-sensitive, but be forgiving when unambiguous.
        matches = [tid for n, tid in db.tables.items() if n.lower() == table_name.lower()]
        if len(matches) != 1:
            raise unknown_table(table_name, db_name)
        table_id = matches[0]
    return state.tables[table_id]
