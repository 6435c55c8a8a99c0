"""Statement text read by tokens: a multi-statement text split on its top-level `;` (the
tokenizer leaves semicolons inside strings and comments alone), with the MySQL-like syntax
error of a text that does not tokenize."""

from __future__ import annotations

from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

from galene.common.errors import ER_UNKNOWN_ERROR, GaleneError
from galene.sql.dialect import Galene


def tokenize(sql: str) -> list:
    """The dialect's tokens of `sql`; a text that does not tokenize is a syntax error."""
    try:
        return Galene().tokenize(sql)
    except TokenError as e:
        raise GaleneError(f"Syntax error in line 1:\n{sql}\n{e}", ER_UNKNOWN_ERROR) from None


def split_statements(sql: str) -> list[str]:
    """Split a multi-statement text on top-level ';' (not inside strings or comments)."""
    tokens = tokenize(sql)
    statements: list[str] = []
    chunk: list = []
    for token in [*tokens, None]:
        if token is None or token.token_type == TokenType.SEMICOLON:
            if chunk:
                statements.append(sql[chunk[0].start : chunk[-1].end + 1].strip())
            chunk = []
        else:
            chunk.append(token)
    return statements
