"""Session-level SQL of the MySQL endpoint: the statements a session answers without the executor.

This module owns what a MySQL/Doris session answers by itself: `SET` in all its client-sent
forms (over the variables of `galene.fe.mysql.variables`), `SELECT`s without a FROM clause over
literals/@@variables/information functions (with MySQL column labels: the item text as the
client wrote it), `SHOW VARIABLES|WARNINGS|ERRORS|STATUS|ENGINES|CHARSET|COLLATION`, and the
transaction no-ops. It knows nothing about sockets or the executor: `SessionSql.handle` returns
a `LocalResult`, or a `UseDatabase`/`KillConnection` request for the protocol layer to carry
out, or None when the statement belongs to the executor.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from galene.common.errors import GaleneError
from galene.common.types import ColumnType
from galene.fe.auth import specific_denied
from galene.fe.mysql.variables import DEFAULT, SessionVariables, display_value
from galene.sql.like import like_match

_MYSQL = MySQL()

BIGINT = ColumnType(name="BIGINT")
BOOLEAN = ColumnType(name="BOOLEAN")
DOUBLE = ColumnType(name="DOUBLE")
TEXT = ColumnType(name="STRING")

# ---------------------------------------------------------------------------------------
# Statement results handed back to the protocol layer
# ---------------------------------------------------------------------------------------


@dataclass
class LocalResult:
    """A statement answered locally. `columns` None means an OK packet."""

    columns: list[tuple[str, ColumnType]] | None = None
    rows: list[tuple] = field(default_factory=list)


@dataclass
class UseDatabase:
    """USE db: the protocol layer checks the database exists and switches."""

    database: str


@dataclass
class KillConnection:
    connection_id: int
    query_only: bool


@dataclass
class SessionInfo:
    """What information functions report for the current session."""

    user: str
    host: str
    database: str | None
    connection_id: int
    is_admin: Callable[[], bool]  # may SET GLOBAL (Doris: ADMIN_PRIV): the executor's check
    user_host: str = "%"  # the account's host pattern: CURRENT_USER() is 'user'@'user_host'


# ---------------------------------------------------------------------------------------
# Routing
# ---------------------------------------------------------------------------------------

# SET forms that are account/cluster statements, not variables: they go to the executor.
_EXECUTOR_SET_WORDS = {"PASSWORD", "PROPERTY", "LDAP_ADMIN_PASSWORD", "ROLE", "DEFAULT", "ALL"}
_LOCAL_SHOW_KINDS = {"VARIABLES", "WARNINGS", "ERRORS", "STATUS", "ENGINES", "CHARACTER SET", "COLLATION"}


def leading_words(sql: str, count: int = 2) -> list[str]:
    """The first keywords of a statement, upper-cased, skipping whitespace and comments.

    Routing looks only at these so that large INSERT statements bound for the executor are
    never tokenized or parsed here.
    """
    words: list[str] = []
    i, n = 0, len(sql)
    while i < n and len(words) < count:
        c = sql[i]
        if c.isspace():
            i += 1
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif sql.startswith("--", i) or c == "#":
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (sql[j].isalnum() or sql[j] == "_"):
                j += 1
            words.append(sql[i:j].upper())
            i = j
        else:
            words.append(c)
            i += 1
    return words


_FROM_WORD = re.compile(r"\bFROM\b", re.IGNORECASE)


def strip_statement(sql: str) -> str:
    """Drop surrounding whitespace and trailing statement terminators."""
    sql = sql.strip()
    while sql.endswith(";"):
        sql = sql[:-1].rstrip()
    return sql




class SessionSql:
    """Answers the session-level statements of one session."""

    def __init__(self, variables: SessionVariables):
        self.variables = variables
        self.user_variables: dict[str, Any] = {}
        # (Level, Code, Message) of the last statement: SHOW WARNINGS / SHOW ERRORS list them.
        # The protocol layer sets the error of a failed statement and clears it on success.
        self.diagnostics: list[tuple[str, int, str]] = []

    # -- entry point ----------------------------------------------------------------------
    def handle(self, sql: str, info: SessionInfo) -> LocalResult | UseDatabase | KillConnection | None:
        self._info = info
        words = leading_words(sql)
        if not words:
            raise GaleneError("Query was empty", 1065)
        first = words[0]
        if first == "SET":
            if len(words) > 1 and words[1] in _EXECUTOR_SET_WORDS:
                return None
            return self._handle_set(sql)
        if first in ("BEGIN", "COMMIT", "ROLLBACK") or words[:2] == ["START", "TRANSACTION"]:
            return LocalResult()
        if first == "SELECT":
            return self._handle_select(sql, info)
        if first == "SHOW":
            return self._handle_show(sql)
        if first == "USE":
            return self._handle_use(sql)
        if first == "KILL":
            return self._handle_kill(sql)
        return None

    # -- SET ------------------------------------------------------------------------------
    def _handle_set(self, sql: str) -> LocalResult | None:
        try:
            statement = sqlglot.parse_one(sql, read=_MYSQL)
        except SqlglotError:
            return None  # Doris-specific SET forms are the executor's
        if not isinstance(statement, exp.Set) or not statement.expressions:
            return None
        for item in statement.expressions:
            if not isinstance(item, exp.SetItem):
                return None
            kind = (item.text("kind") or "").upper()
            if kind == "NAMES":
                self._set_names(item)
            elif kind == "CHARACTER SET":
                self._set_character_set(item)
            elif kind == "TRANSACTION":
                self._set_transaction(item)
            elif kind in ("", "SESSION", "LOCAL", "GLOBAL", "PERSIST", "PERSIST_ONLY"):
                if self._set_variable(item, kind) is False:
                    return None
            else:
                return None
        return LocalResult()

    def _set_names(self, item: exp.SetItem) -> None:
        charset = item.name
        if charset.upper() == "DEFAULT":
            charset = self.variables.global_variables.values["character_set_client"]
        charset = charset.lower()
        collation = item.text("collate").lower() or _default_collation(charset)
        for name in ("character_set_client", "character_set_connection", "character_set_results"):
            self.variables.set(name, charset)
        self.variables.set("collation_connection", collation)

    def _set_character_set(self, item: exp.SetItem) -> None:
        charset = item.name
        if charset.upper() == "DEFAULT":
            charset = self.variables.global_variables.values["character_set_client"]
        charset = charset.lower()
        self.variables.set("character_set_client", charset)
        self.variables.set("character_set_results", charset)
        self.variables.set("character_set_connection", self.variables.get("character_set_database"))

    def _set_transaction(self, item: exp.SetItem) -> None:
        for characteristic in item.expressions:
            text = " ".join(characteristic.name.upper().split())
            if text.startswith("ISOLATION LEVEL "):
                self.variables.set("transaction_isolation", text[len("ISOLATION LEVEL ") :].replace(" ", "-"))
            elif text == "READ ONLY":
                self.variables.set("transaction_read_only", 1)
            elif text == "READ WRITE":
                self.variables.set("transaction_read_only", 0)
            else:
                raise GaleneError(f"Unsupported transaction characteristic: {text}")

    def _set_variable(self, item: exp.SetItem, kind: str) -> bool:
        assignment = item.this
        if not isinstance(assignment, exp.EQ):
            return False
        target, value_expr = assignment.this, assignment.expression
        scope = "GLOBAL" if kind in ("GLOBAL", "PERSIST", "PERSIST_ONLY") else "SESSION"
        if isinstance(target, exp.Parameter):  # @user_var
            self.user_variables[target.name.lower()] = self._set_value(value_expr, user_variable=True)
            return True
        if isinstance(target, exp.SessionParameter):
            name = target.name
            scope = "GLOBAL" if (target.text("kind") or "").upper() == "GLOBAL" else scope
        elif isinstance(target, (exp.Column, exp.Identifier, exp.Var)):
            name = target.name
        else:
            return False
        if name.lower() == "password":
            return False
        value = self._set_value(value_expr, user_variable=False)
        if scope == "GLOBAL" and not self._info.is_admin():
            raise specific_denied("ADMIN")  # Doris' VariableMgr: SET GLOBAL needs ADMIN_PRIV
        self.variables.set_scoped(name, value, scope)
        return True

    def _set_value(self, node: exp.Expression, user_variable: bool) -> Any:
        """The value of the right-hand side of a SET item."""
        if isinstance(node, exp.Paren):
            return self._set_value(node.this, user_variable)
        if isinstance(node, exp.Null):
            return None
        if isinstance(node, exp.Boolean):
            return node.this
        if isinstance(node, exp.Literal):
            return _literal_value(node)[0]
        if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
            return -_literal_value(node.this)[0]
        if isinstance(node, (exp.Var, exp.Column, exp.Identifier)):
            # Bare words: SET autocommit = OFF, SET group_commit = async_mode, = DEFAULT.
            if node.name.upper() == "DEFAULT" and not user_variable:
                return DEFAULT
            return node.name
        if isinstance(node, exp.SessionParameter):
            scope = (node.text("kind") or "SESSION").upper()
            return self.variables.read(node.name, scope)
        if isinstance(node, exp.Parameter):
            return self.user_variables.get(node.name.lower())
        if isinstance(node, (exp.Concat, exp.ConcatWs)):
            # MariaDB Connector/J connects with `sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES')`.
            parts = [self._set_value(e, user_variable=True) for e in node.expressions]
            if isinstance(node, exp.ConcatWs):
                if not parts or parts[0] is None:
                    return None
                return str(parts[0]).join(display_value(p) for p in parts[1:] if p is not None)
            return None if any(p is None for p in parts) else "".join(display_value(p) for p in parts)
        raise GaleneError(f"Unsupported value in SET statement: {node.sql(dialect=_MYSQL)}")

    # -- SELECT without FROM --------------------------------------------------------------
    def _handle_select(self, sql: str, info: SessionInfo) -> LocalResult | None:
        sql = strip_statement(sql)
        # A SELECT that reads a table is the executor's: skip parsing it twice (a TPC-H query
        # costs sqlglot milliseconds). A FROM inside a string literal only sends a constant
        # SELECT the long way round.
        if _FROM_WORD.search(sql):
            return None
        try:
            statement = sqlglot.parse_one(sql, read=_MYSQL)
        except SqlglotError:
            return None
        if not isinstance(statement, exp.Select):
            return None
        if any(statement.args.get(arg) for arg in set(exp.Select.arg_types) - {"expressions", "limit"}):
            return None
        items = statement.expressions
        evaluated = []
        for item in items:
            node = item.this if isinstance(item, exp.Alias) else item
            value = self._local_value(node, info)
            if value is None:
                return None  # not answerable here: the executor evaluates it
            evaluated.append(value)
        limit = statement.args.get("limit")
        row_count = 1
        if limit is not None:
            limit_value = limit.expression
            if not (isinstance(limit_value, exp.Literal) and not limit_value.is_string):
                return None
            row_count = min(1, int(limit_value.this))
        labels = select_item_labels(sql, items)
        columns = [(label, ctype) for label, (_, ctype) in zip(labels, evaluated)]
        row = tuple(v for v, _ in evaluated)
        return LocalResult(columns=columns, rows=[row] * row_count)

    def _local_value(self, node: exp.Expression, info: SessionInfo) -> tuple[Any, ColumnType] | None:
        """(value, type) of a select item this session can answer, or None."""
        if isinstance(node, exp.Null):
            return None, TEXT
        if isinstance(node, exp.Boolean):
            return int(node.this), BIGINT
        if isinstance(node, exp.Literal):
            return _literal_value(node)
        if isinstance(node, exp.National):
            return node.name, TEXT
        if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
            value, ctype = _literal_value(node.this)
            return -value, ctype
        if isinstance(node, exp.SessionParameter):
            scope = (node.text("kind") or "SESSION").upper()
            return _typed(self.variables.read(node.name, scope))
        if isinstance(node, exp.Parameter):
            return _typed(self.user_variables.get(node.name.lower()))
        if isinstance(node, exp.CurrentSchema):
            return info.database, TEXT
        if isinstance(node, exp.CurrentUser):
            return f"'{info.user}'@'{info.user_host}'", TEXT
        if isinstance(node, exp.SessionUser):
            return f"'{info.user}'@'{info.host}'", TEXT
        if isinstance(node, exp.CurrentVersion):
            return self.variables.get("version"), TEXT
        if isinstance(node, exp.Anonymous) and not node.expressions:
            name = node.name.upper()
            if name in ("USER", "SYSTEM_USER", "SESSION_USER"):
                return f"'{info.user}'@'{info.host}'", TEXT
            if name == "CONNECTION_ID":
                return info.connection_id, BIGINT
            if name in ("DATABASE", "SCHEMA"):
                return info.database, TEXT
            if name == "VERSION":
                return self.variables.get("version"), TEXT
        return None

    # -- SHOW -----------------------------------------------------------------------------
    def _handle_show(self, sql: str) -> LocalResult | None:
        try:
            statement = sqlglot.parse_one(strip_statement(sql), read=_MYSQL)
        except SqlglotError:
            return None
        if not isinstance(statement, exp.Show):
            return None
        kind = statement.name.upper()
        if kind not in _LOCAL_SHOW_KINDS:
            return None
        if kind == "VARIABLES":
            scope = "GLOBAL" if statement.args.get("global_") else "SESSION"
            columns = [("Variable_name", TEXT), ("Value", TEXT)]
            rows: list[tuple] = list(self.variables.listing(scope))
        elif kind in ("WARNINGS", "ERRORS"):
            columns = [("Level", TEXT), ("Code", BIGINT), ("Message", TEXT)]
            rows = [d for d in self.diagnostics if kind == "WARNINGS" or d[0] == "Error"]
        elif kind == "STATUS":
            columns = [("Variable_name", TEXT), ("Value", TEXT)]
            rows = []
        elif kind == "ENGINES":
            columns = [
                (n, TEXT) for n in ("Engine", "Support", "Comment", "Transactions", "XA", "Savepoints")
            ]
            rows = [
                ("Olap engine", "YES", "Default storage engine of Doris", "NO", "NO", "NO"),
                ("MySQL", "YES", "MySQL server which data is in it", "NO", "NO", "NO"),
            ]
        elif kind == "CHARACTER SET":
            columns = [
                ("Charset", TEXT),
                ("Description", TEXT),
                ("Default collation", TEXT),
                ("Maxlen", BIGINT),
            ]
            rows = [("utf8mb4", "UTF-8 Unicode", "utf8mb4_0900_bin", 4)]
        else:  # COLLATION
            columns = [
                ("Collation", TEXT),
                ("Charset", TEXT),
                ("Id", BIGINT),
                ("Default", TEXT),
                ("Compiled", TEXT),
                ("Sortlen", BIGINT),
            ]
            rows = [("utf8mb4_0900_bin", "utf8mb4", 309, "Yes", "Yes", 1)]
        like = statement.args.get("like")
        if like is not None:
            pattern = like.name
            rows = [r for r in rows if like_match(str(r[0]), pattern)]
        where = statement.args.get("where")
        if where is not None:
            names = [c[0].lower() for c in columns]
            rows = [r for r in rows if _truthy(_eval_filter(where.this, dict(zip(names, r))))]
        return LocalResult(columns=columns, rows=rows)

    # -- USE / KILL -----------------------------------------------------------------------
    def _handle_use(self, sql: str) -> UseDatabase | None:
        try:
            statement = sqlglot.parse_one(strip_statement(sql), read=_MYSQL)
        except SqlglotError:
            return None
        if not isinstance(statement, exp.Use) or not isinstance(statement.this, exp.Table):
            return None
        if statement.this.args.get("db") or statement.args.get("kind"):
            return None  # USE catalog.db: the executor's
        return UseDatabase(statement.this.name)

    def _handle_kill(self, sql: str) -> KillConnection | None:
        try:
            statement = sqlglot.parse_one(strip_statement(sql), read=_MYSQL)
        except SqlglotError:
            return None
        if not isinstance(statement, exp.Kill):
            return None
        target = statement.this
        if not (isinstance(target, exp.Literal) and not target.is_string):
            return None  # KILL QUERY '<query id>': the executor's
        return KillConnection(int(target.this), statement.text("kind").upper() == "QUERY")


# ---------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------


def _default_collation(charset: str) -> str:
    return "utf8mb4_0900_bin" if charset == "utf8mb4" else f"{charset}_general_ci"


def _literal_value(node: exp.Literal) -> tuple[Any, ColumnType]:
    if node.is_string:
        return node.this, TEXT
    text = node.this
    if "e" in text.lower():
        return float(text), DOUBLE
    if "." in text:
        value = Decimal(text)
        digits = len(value.as_tuple().digits)
        scale = max(0, -value.as_tuple().exponent)
        return value, ColumnType(name="DECIMAL", precision=max(digits, scale, 1), scale=scale)
    return int(text), BIGINT


def _typed(value: Any) -> tuple[Any, ColumnType]:
    if isinstance(value, bool):
        return int(value), BOOLEAN
    if isinstance(value, int):
        return value, BIGINT
    if isinstance(value, float):
        return value, DOUBLE
    if isinstance(value, Decimal):
        return _literal_value(exp.Literal.number(str(value)))
    return value, TEXT


def select_item_labels(sql: str, items: list[exp.Expression]) -> list[str]:
    """MySQL column labels for the select list: alias, string value, or the item text as written."""
    spans = _select_item_spans(sql)
    labels = []
    for i, item in enumerate(items):
        if isinstance(item, exp.Alias):
            labels.append(item.alias)
        elif isinstance(item, exp.Literal) and item.is_string:
            labels.append(item.this)
        elif spans is not None and len(spans) == len(items):
            start, end = spans[i]
            labels.append(sql[start:end])
        else:
            labels.append(item.sql(dialect=_MYSQL))
    return labels


_SELECT_LIST_END = {TokenType.FROM, TokenType.LIMIT, TokenType.INTO, TokenType.WHERE, TokenType.SEMICOLON}


def _select_item_spans(sql: str) -> list[tuple[int, int]] | None:
    """Source character spans of the top-level select items (from the tokenizer)."""
    try:
        tokens: list[Token] = _MYSQL.tokenize(sql)
    except SqlglotError:
        return None
    start_index = next((i for i, t in enumerate(tokens) if t.token_type == TokenType.SELECT), None)
    if start_index is None:
        return None
    spans: list[tuple[int, int]] = []
    depth = 0
    item_start: int | None = None
    item_end = 0
    for token in tokens[start_index + 1 :]:
        if depth == 0 and token.token_type in _SELECT_LIST_END:
            break
        if depth == 0 and token.token_type == TokenType.COMMA:
            if item_start is None:
                return None
            spans.append((item_start, item_end))
            item_start = None
            continue
        if token.token_type in (TokenType.L_PAREN, TokenType.L_BRACKET):
            depth += 1
        elif token.token_type in (TokenType.R_PAREN, TokenType.R_BRACKET):
            depth -= 1
        if item_start is None:
            item_start = token.start
        item_end = token.end + 1
    if item_start is not None:
        spans.append((item_start, item_end))
    return spans


def _truthy(value: Any) -> bool:
    return bool(value)


def _eval_filter(node: exp.Expression, row: dict[str, Any]) -> Any:
    """Evaluate the WHERE of a local SHOW over one row (comparisons, LIKE, IN, AND/OR/NOT)."""
    if isinstance(node, exp.Paren):
        return _eval_filter(node.this, row)
    if isinstance(node, exp.And):
        return _truthy(_eval_filter(node.this, row)) and _truthy(_eval_filter(node.expression, row))
    if isinstance(node, exp.Or):
        return _truthy(_eval_filter(node.this, row)) or _truthy(_eval_filter(node.expression, row))
    if isinstance(node, exp.Not):
        return not _truthy(_eval_filter(node.this, row))
    if isinstance(node, exp.Column):
        name = node.name.lower()
        if name not in row:
            raise GaleneError(f"Unknown column '{node.name}' in 'where clause'", 1054)
        return row[name]
    if isinstance(node, exp.Literal):
        return _literal_value(node)[0]
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Like):
        left, right = _eval_filter(node.this, row), _eval_filter(node.expression, row)
        return left is not None and right is not None and like_match(str(left), str(right))
    if isinstance(node, exp.In):
        left = _eval_filter(node.this, row)
        return any(_equal(left, _eval_filter(e, row)) for e in node.expressions)
    if isinstance(node, (exp.EQ, exp.NEQ)):
        equal = _equal(_eval_filter(node.this, row), _eval_filter(node.expression, row))
        return equal if isinstance(node, exp.EQ) else not equal
    raise GaleneError(f"Unsupported condition in SHOW ... WHERE: {node.sql(dialect=_MYSQL)}")


def _equal(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return False
    return str(a).lower() == str(b).lower()
