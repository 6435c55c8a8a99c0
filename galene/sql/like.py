"""SQL LIKE matching of names for SHOW … LIKE (shared by the MySQL session layer and the executor)."""

from __future__ import annotations

import fnmatch


def like_match(value: str, pattern: str | None) -> bool:
    """SQL LIKE, case-insensitive as MySQL's default collations compare; `\\` escapes % and _.

    No pattern matches everything (SHOW TABLES without LIKE).
    """
    if not pattern:
        return True
    translated = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            translated.append("[" + pattern[i + 1] + "]")
            i += 2
            continue
        translated.append("*" if c == "%" else "?" if c == "_" else "[" + c + "]" if c in "[]*?" else c)
        i += 1
    return fnmatch.fnmatchcase(value.lower(), "".join(translated).lower())
