"""Session statements: USE, SET and the transaction statements (BEGIN, COMMIT, ROLLBACK)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from galene.sql.statements.base import Statement


@dataclass
class Use(Statement):
    db: str


@dataclass
class Set(Statement):
    expr: exp.Set


@dataclass
class Transaction(Statement):
    kind: str  # BEGIN, COMMIT or ROLLBACK
