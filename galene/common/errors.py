"""Errors with Doris codes and texts.

`GaleneError` carries a MySQL error code and the detail message; the MySQL endpoint renders
it as Doris does (`errCode = 2, detailMessage = …`, code 1105 unless stated), the HTTP API
renders it into the Doris JSON fields. Helpers below build the messages clients parse.
"""

from __future__ import annotations

ER_UNKNOWN_ERROR = 1105
ER_ACCESS_DENIED = 1045
ER_BAD_DB = 1049
ER_NO_DB = 1046
ER_PARSE = 1064
ER_BAD_TABLE = 1051  # Doris' ERR_BAD_TABLE_ERROR "Unknown table '%s'"


class GaleneError(Exception):
    """A user-facing error. `message` is the Doris detail message."""

    def __init__(self, message: str, code: int = ER_UNKNOWN_ERROR):
        super().__init__(message)
        self.message = message
        self.code = code

    def mysql_text(self) -> str:
        if self.code == ER_UNKNOWN_ERROR:
            return f"errCode = 2, detailMessage = {self.message}"
        return self.message


def error_message(e: BaseException) -> str:
    """The text a reply shows for `e`: its Doris message, or an INTERNAL_ERROR naming it."""
    if isinstance(e, GaleneError):
        return e.message
    return f"[INTERNAL_ERROR]{type(e).__name__}: {e}"


class DorisError(GaleneError):
    """An error Doris sends as `errCode = 2, detailMessage = …` whatever its MySQL code (a Doris
    UserException: its getMessage() carries the prefix, its MySQL code is its ErrorCode)."""

    def mysql_text(self) -> str:
        return f"errCode = 2, detailMessage = {self.message}"


class AnalysisError(DorisError):
    """Semantic error in a statement (unknown names, bad definitions)."""


class LoadError(GaleneError):
    """A load that fails as a whole. `status` is the Doris Status field."""

    def __init__(self, message: str, status: str = "Fail"):
        super().__init__(message)
        self.status = status


def unknown_database(name: str) -> AnalysisError:
    return AnalysisError(f"Unknown database '{name}'")


def unknown_table(name: str, db: str | None = None) -> AnalysisError:
    # SQLAlchemy Doris dialects look for "detailMessage = Unknown table".
    full = f"{db}.{name}" if db else name
    return AnalysisError(f"Unknown table '{full}'")


def bad_database(name: str) -> AnalysisError:
    """Doris' getDbOrAnalysisException (SHOW, DESCRIBE): MySQL code 1049, ERR_BAD_DB_ERROR."""
    return AnalysisError(f"Unknown database '{name}'", ER_BAD_DB)


def bad_table(name: str) -> AnalysisError:
    """Doris' getTableOr{Analysis,Ddl}Exception: what DESCRIBE, SHOW CREATE TABLE, SHOW COLUMNS,
    SHOW INDEX/PARTITIONS/DATA answer for a missing table. MySQL code 1051, which SQLAlchemy's
    MySQL dialect reads as "no such table" (has_table); the text keeps "detailMessage = Unknown
    table", which the Doris dialects read."""
    return AnalysisError(f"Unknown table '{name}'", ER_BAD_TABLE)


def no_database_selected() -> GaleneError:
    return GaleneError("No database selected", ER_NO_DB)
