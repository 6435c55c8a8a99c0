"""Typed statements: one SQL text in, one statement dataclass out (`parse.parse_statement`).

The statements live by family, each module with the dataclasses and how they are read from
the dialect's tree: `dml` (queries and data statements), `schema` (DDL), `metadata` (DESC and
the catalog SHOWs), `session`, `cluster`, `account`, `jobs`; `base` is their root, `reading`
the values read out of a tree, `split` the token-level splitting of a multi-statement text.
"""
