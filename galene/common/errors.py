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


class AnalysisError(GaleneError):
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


def no_database_selected() -> GaleneError:
    return GaleneError("No database selected", ER_NO_DB)
