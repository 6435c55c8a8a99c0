"""Metadata for tools: the `information_schema` database and the SHOW statements derived from it.

A library below the FE (it reads `CatalogState`, never the FE): the FE hands each entry point a
`MetaContext` — the catalog, the session asking, and the session's privileges, which the FE
builds from its users and privileges and passes in (there is no default: a context without
them is an error, never "everything visible").

* `context` — what the row builders read: `MetaContext` and its `Privileges` hook (every row
  that names a database or table passes `MetaContext.can_see`; a failing check hides the row),
  `ProcessInfo`, the relations a session may see, the names and column types.
* `tables` — the information_schema tables with Doris' column names and types
  (`fe/fe-core/.../catalog/SchemaTable.java`) and their rows computed on the FE from the
  catalog (bounded by the catalog's size; nothing is stored); as Arrow for the engine path.
* `query` — a query that reads only information_schema tables is answered here (`run_local`):
  the rows of the tables it names (pre-filtered by its `TABLE_SCHEMA = '…'` / `TABLE_NAME =
  '…'` conditions) go through sqlglot's Python executor — joins, CTEs, GROUP BY and ORDER BY
  included, in milliseconds. A query it cannot evaluate, or one that mixes information_schema
  with user tables, runs on the engine like any query: each information_schema table becomes a
  small Arrow-backed view for the statement (`tables.arrow_table`, registered the way table
  functions are, see `galene.fe.table_functions`).
* `show_rows` — the rows of the SHOW statements Doris answers from the same data: SHOW TABLE
  STATUS (a projection of `tables`), SHOW INDEX, SHOW PARTITIONS, SHOW DATA, SHOW STREAM LOAD,
  SHOW TRANSACTION, SHOW [FULL] PROCESSLIST.
"""
