"""DDL semantics: what a table definition means and how it reads back.

`create_table` turns a CREATE TABLE into a catalog Table (with `columns`, `partitions` and
`indexes`, the rules CREATE and ALTER share), `alter_table` applies a schema change, `views`
qualifies a view's stored query, and `render` is the one writer of DDL text (SHOW CREATE
TABLE / VIEW / MATERIALIZED VIEW), which parses back into the same definition.
"""
