"""Bounds on SQL text, checked before any parser sees it.

sqlglot's parser and generator are recursive descent: every bracket level of a statement
costs them about 25-30 Python frames, so a deeply bracketed statement ends in RecursionError
(or, with the recursion limit raised, could exhaust the C stack). `sql_nesting_depth`
measures the bracket depth of a statement with one regex scan — no recursion and no Python
loop over characters; only brackets, quotes and comment starts stop the scan — so the FE can
refuse such text with a clean error before it reaches sqlglot. `recursion_limit_for` says how
deep the interpreter must let Python recurse for statements within the bound to parse.
"""

from __future__ import annotations

import re

from galene.common.errors import GaleneError

# String literals, quoted identifiers and comments are skipped whole (their brackets do not
# nest anything); an unterminated one runs to the end of the text, as the tokenizer would
# read it. Quoting follows MySQL: backslash escapes and doubled quotes.
_SCAN = re.compile(
    r"""
      '[^'\\]*(?:(?:\\.|'')[^'\\]*)*(?:'|\\?\Z)
    | "[^"\\]*(?:(?:\\.|"")[^"\\]*)*(?:"|\\?\Z)
    | `[^`]*(?:``[^`]*)*(?:`|\Z)
    | --[^\n]*
    | \#[^\n]*
    | /\*.*?(?:\*/|\Z)
    | [(\[{)\]}]
    """,
    re.DOTALL | re.VERBOSE,
)
_OPENING = frozenset("([{")
_CLOSING = frozenset(")]}")


def sql_nesting_depth(sql: str, stop_above: int | None = None) -> int:
    """The deepest bracket nesting ((), [] and {}) of `sql` outside literals and comments.

    With `stop_above`, the scan stops as soon as the depth exceeds it and returns that depth,
    so a hostile statement costs no more than its first `stop_above + 1` open brackets.
    Unbalanced closing brackets never take the depth below zero.
    """
    depth = deepest = 0
    for match in _SCAN.finditer(sql):
        char = sql[match.start()]
        if char in _OPENING:
            depth += 1
            if depth > deepest:
                deepest = depth
                if stop_above is not None and deepest > stop_above:
                    break
        elif char in _CLOSING and depth:
            depth -= 1
    return deepest


def check_sql_nesting_depth(sql: str, max_depth: int) -> None:
    """Raise Doris' 1105 error when `sql` nests brackets deeper than `max_depth`."""
    if sql_nesting_depth(sql, stop_above=max_depth) > max_depth:
        raise nesting_error(max_depth)


def nesting_error(max_depth: int, *, brackets: bool = True) -> GaleneError:
    """The error for a statement nested deeper than the parser may go (1105, Doris style).

    `brackets=False`: the nesting was not in brackets (NOT NOT ..., a long chain of operators)
    and the parser itself ran out of depth.
    """
    where = f"more than {max_depth} levels of brackets" if brackets else "too deep for the parser"
    return GaleneError(f"The statement is nested too deeply: {where} (max_sql_nesting_depth = {max_depth})")


# Python frames sqlglot spends per nesting level, measured on sqlglot 30 over bracketed
# expressions, function calls, IN lists, subqueries and CASE (CASE is the deepest, ~48), plus
# headroom for the frames below the parser (event loop, protocol, executor).
_FRAMES_PER_LEVEL = 50
_FRAMES_BASE = 2000


def recursion_limit_for(max_depth: int) -> int:
    """The interpreter recursion limit under which statements of `max_depth` levels parse."""
    return _FRAMES_BASE + _FRAMES_PER_LEVEL * max_depth
