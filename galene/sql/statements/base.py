"""The root of the typed statements: `Statement` (every statement keeps its text) and `Other`
(what Galene does not classify; the executor answers "not supported")."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(kw_only=True)
class Statement:
    sql: str = ""  # the statement text as received, without the trailing ';'


@dataclass
class Other(Statement):
    """Anything Galene does not classify; the executor answers "not supported"."""
