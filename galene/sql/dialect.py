"""The Galene SQL dialect: sqlglot's Doris dialect extended to the Doris grammar Galene serves.

Owns tokenizing, parsing and re-generating Doris SQL. Off-the-shelf sqlglot (30.x) fails on
aggregate column suffixes, LARGEINT/…V2/V3 type names, `VALUES LESS THAN MAXVALUE`,
`BUCKETS AUTO` (it drops it), `AGGREGATE KEY`, `DESC t ALL`, `SHOW BACKENDS|FRONTENDS|PROC`,
`ALTER SYSTEM … BACKEND`, `INSERT … WITH LABEL`, `ADMIN COMPACT TABLE`, `SHOW TABLETS` and the
streaming-job statements (`CREATE JOB … ON STREAMING DO INSERT …`, `ALTER JOB`, `PAUSE | RESUME |
DROP JOB WHERE …`);
this module adds them as parser rules building Galene's own nodes (`galene.sql.nodes`), each
with its generator rule so a parsed statement prints back as Doris SQL. Nothing here
interprets a statement: classification is `galene.sql.statements`, table semantics are
`galene.sql.ddl`.
"""

from __future__ import annotations

import typing as t

from sqlglot import exp
from sqlglot.dialects.doris import Doris
from sqlglot.tokens import TokenType
from sqlglot.trie import new_trie

from galene.sql import nodes

# Aggregate types Doris accepts after a column type in AGGREGATE KEY tables.
AGGREGATION_TYPES = (
    "SUM",
    "MIN",
    "MAX",
    "REPLACE",
    "REPLACE_IF_NOT_NULL",
    "HLL_UNION",
    "BITMAP_UNION",
    "QUANTILE_UNION",
    "GENERIC",
)

# Doris date-arithmetic functions named after their unit: NAME -> (node class, unit).
_UNIT_ADD_FUNCTIONS: dict[str, tuple[type[exp.Expr], str]] = {}
for _unit in ("YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND"):
    _UNIT_ADD_FUNCTIONS[f"{_unit}S_ADD"] = (exp.DateAdd, _unit)
    _UNIT_ADD_FUNCTIONS[f"{_unit}S_SUB"] = (exp.DateSub, _unit)


# Doris' EXPLAIN levels (EXPLAIN VERBOSE SELECT …, EXPLAIN SHAPE PLAN SELECT …).
EXPLAIN_LEVELS = frozenset(
    ("VERBOSE", "GRAPH", "PLAN", "PARSED", "ANALYZED", "REWRITTEN", "LOGICAL", "OPTIMIZED", "PHYSICAL",
     "SHAPE", "MEMO", "DISTRIBUTED", "ALL", "PROCESS", "EXTENDED")
)  # fmt: skip
_QUERY_STARTS = frozenset((TokenType.SELECT, TokenType.WITH, TokenType.L_PAREN))


def _build_unit_delta(node: type[exp.Expr], unit: str) -> t.Callable[[list[exp.Expr]], exp.Expr]:
    def build(args: list[exp.Expr]) -> exp.Expr:
        return node(this=args[0], expression=args[1] if len(args) > 1 else None, unit=exp.var(unit))

    return build


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _value_window_function(node: type[exp.Expr], name: str, args: list[exp.Expr]) -> exp.Expr:
    """FIRST_VALUE/LAST_VALUE(expr[, ignore_null]): sqlglot's node for one argument, else the call
    as written (galene.sql.functions turns Doris' ignore_null into Spark's boolean literal)."""
    if len(args) == 1:
        return node(this=args[0])
    return exp.Anonymous(this=name, expressions=args)


def _property_pairs(node: exp.Expr) -> list[exp.Property]:
    return list(node.args.get("properties") or [])


def _unparenthesized_column(node: exp.Expr | None) -> exp.Expr | None:
    """A select item `(k)` (or `((t.k))`, aliased or not) as the column `k` itself.

    Doris' parser returns the inner expression of a parenthesized one, so `SELECT distinct(k)`
    is `SELECT DISTINCT k`: the column keeps its name as label and ORDER BY k finds it. A
    Paren node left in place would be labelled `(k)` and hide `k` from an ORDER BY over the
    DISTINCT. Other parenthesized items keep their parentheses (their label is their text)."""
    target = node.this if isinstance(node, exp.Alias) else node
    inner = target
    while isinstance(inner, exp.Paren):
        inner = inner.this
    if inner is target or not isinstance(inner, exp.Column) or isinstance(inner.this, exp.Star):
        return node
    if target is node:
        return inner
    node.set("this", inner)
    return node


class Galene(Doris):
    """Doris SQL as Galene accepts it."""

    class Tokenizer(Doris.Tokenizer):
        KEYWORDS: t.ClassVar[dict] = {
            **Doris.Tokenizer.KEYWORDS,
            "LARGEINT": TokenType.INT128,
            "DATEV1": TokenType.DATE,
            "DATEV2": TokenType.DATE,
            "DATETIMEV1": TokenType.DATETIME,
            "DATETIMEV2": TokenType.DATETIME,
            "DECIMALV2": TokenType.DECIMAL,
            "DECIMALV3": TokenType.DECIMAL,
            "JSONB": TokenType.JSON,
        }

    class Parser(Doris.Parser):
        FUNCTIONS: t.ClassVar[dict] = {
            **Doris.Parser.FUNCTIONS,
            **{name: _build_unit_delta(node, unit) for name, (node, unit) in _UNIT_ADD_FUNCTIONS.items()},
            # sqlglot rewrites TO_DAYS into a DATEDIFF from year 0, which no engine date holds.
            "TO_DAYS": lambda args: exp.Anonymous(this="TO_DAYS", expressions=args),
            # Doris' FIRST_VALUE/LAST_VALUE(expr, ignore_null): sqlglot's nodes take one argument.
            "FIRST_VALUE": lambda args: _value_window_function(exp.FirstValue, "FIRST_VALUE", args),
            "LAST_VALUE": lambda args: _value_window_function(exp.LastValue, "LAST_VALUE", args),
        }

        FUNCTION_PARSERS: t.ClassVar[dict] = {
            **Doris.Parser.FUNCTION_PARSERS,
            "GROUP_CONCAT": lambda self: self._parse_doris_group_concat(),
        }

        PROPERTY_PARSERS: t.ClassVar[dict] = {
            **Doris.Parser.PROPERTY_PARSERS,
            "AGGREGATE": lambda self: self._parse_composite_key_property(exp.AggregateKeyProperty),
        }

        SHOW_PARSERS: t.ClassVar[dict] = {
            **Doris.Parser.SHOW_PARSERS,
            # Metadata for tools (executor: galene/sql/information_schema.py).
            "INDEXES": lambda self: self._parse_show_mysql("INDEX", target="FROM"),
            "KEYS": lambda self: self._parse_show_mysql("INDEX", target="FROM"),
            "PARTITIONS": lambda self: self._parse_show_partitions(),
            "DATA": lambda self: self._parse_show_data(),
            "STREAM LOAD": lambda self: self._parse_show_load("STREAM LOAD"),
            "TRANSACTION": lambda self: self._parse_show_transaction(),
            "BACKENDS": lambda self: self.expression(exp.Show(this="BACKENDS")),
            "FRONTENDS": lambda self: self.expression(exp.Show(this="FRONTENDS")),
            "PROC": lambda self: self.expression(exp.Show(this="PROC", target=self._parse_string())),
            "TABLETS": lambda self: self._parse_show_tablets(),
            "LOAD": lambda self: self._parse_show_load(),
            "CREATE MATERIALIZED VIEW": lambda self: self._parse_show_mysql(
                "CREATE MATERIALIZED VIEW", target=True
            ),
        }
        SHOW_TRIE = new_trie(key.split(" ") for key in SHOW_PARSERS)

        # sqlglot logs a warning for every statement it keeps opaque; the statement router
        # answers those itself, so the warning is noise.
        def _warn_unsupported(self) -> None:
            return None

        # Each top-level select item remembers the text it was written as: MySQL labels an
        # unaliased result column with exactly that text (`COUNT(*)`, `k + 1`).
        def _parse_statement(self) -> exp.Expr | None:
            account = self._parse_account_statement()
            if account is not None:
                return account
            # Doris' ADMIN statements are not SQL sqlglot knows; ADMIN COMPACT is served.
            if (
                self._curr is not None
                and self._next is not None
                and self._curr.text.upper() == "ADMIN"
                and self._next.text.upper() == "COMPACT"
            ):
                self._advance(2)
                return self._parse_admin_compact()
            # Doris' streaming jobs: CREATE/ALTER/PAUSE/RESUME/DROP JOB.
            if (
                self._curr is not None
                and self._next is not None
                and self._next.text.upper() == "JOB"
                and self._curr.text.upper() in ("CREATE", "ALTER", "PAUSE", "RESUME", "DROP")
            ):
                action = self._curr.text.upper()
                self._advance(2)
                if action == "CREATE":
                    return self._parse_create_job()
                if action == "ALTER":
                    return self._parse_alter_job()
                return self._parse_job_control(action)
            # Async materialized views (schema objects).
            if self._curr is not None and self._next is not None:
                words = [tok.text.upper() for tok in self._tokens[self._index : self._index + 3]]
                if words[:2] in (["CREATE", "INDEX"], ["DROP", "INDEX"]):
                    self._advance(2)
                    return self._parse_index_statement(words[0])
                if words == ["CREATE", "MATERIALIZED", "VIEW"]:
                    self._advance(3)
                    return self._parse_create_mtmv()
                if words == ["REFRESH", "MATERIALIZED", "VIEW"]:
                    self._advance(3)
                    table = self._parse_table_parts()
                    method = self._curr.text.upper() if self._match_texts(("COMPLETE", "AUTO")) else None
                    return self.expression(nodes.RefreshMaterializedView(this=table, method=method))
            return super()._parse_statement()

        def _parse_create_mtmv(self) -> exp.Expr:
            exists = bool(self._match_text_seq("IF", "NOT", "EXISTS"))
            table = self._parse_table_parts(schema=True)
            columns = (
                self._parse_wrapped_csv(self._parse_named_column)
                if self._match(TokenType.L_PAREN, advance=False)
                else []
            )
            args: dict[str, t.Any] = {"this": table, "columns": columns, "exists": exists}
            props: list[exp.Expr] = []
            while self._curr is not None and not self._match(TokenType.ALIAS):
                if self._match_text_seq("BUILD"):
                    if not self._match_texts(("IMMEDIATE", "DEFERRED")):
                        self.raise_error("Expected IMMEDIATE or DEFERRED after BUILD")
                    args["build"] = self._prev.text.upper()
                elif self._match_text_seq("REFRESH"):
                    if self._match_texts(("COMPLETE", "AUTO", "INCREMENTAL")):
                        args["method"] = self._prev.text.upper()
                    if self._match_text_seq("ON"):
                        if self._match_texts(("MANUAL", "COMMIT")):
                            args["trigger"] = self._prev.text.upper()
                        elif self._match_text_seq("SCHEDULE", "EVERY"):
                            args["trigger"] = "SCHEDULE"
                            number = self._parse_number()
                            if number is None or not self._curr:
                                self.raise_error("Expected EVERY <n> <unit>")
                            args["interval"] = int(number.name)
                            self._advance()
                            args["unit"] = self._prev.text.upper()
                            if self._match_text_seq("STARTS"):
                                starts = self._parse_string()
                                args["starts"] = starts.name if starts is not None else ""
                        else:
                            self.raise_error("Expected MANUAL, COMMIT or SCHEDULE after REFRESH … ON")
                elif self._match_text_seq("DUPLICATE", "KEY") or self._match_text_seq("KEY"):
                    props.append(
                        self.expression(exp.DuplicateKeyProperty(expressions=self._parse_wrapped_id_vars()))
                    )
                elif self._match(TokenType.COMMENT):
                    props.append(self.expression(exp.SchemaCommentProperty(this=self._parse_string())))
                elif self._match_text_seq("DISTRIBUTED"):
                    props.append(self._parse_distributed_property())
                elif self._match_text_seq("PROPERTIES"):
                    props.extend(self._parse_job_properties())
                elif self._match_text_seq("PARTITION", "BY"):
                    self.raise_error("Galene's materialized views are not partitioned (no PARTITION BY)")
                else:
                    self.raise_error("Unexpected clause in CREATE MATERIALIZED VIEW")
            start = self._curr
            query = super()._parse_statement()
            if not isinstance(query, exp.Query) or start is None:
                self.raise_error("Expected AS <query> in CREATE MATERIALIZED VIEW")
            args["properties"] = props
            args["expression"] = query
            node = self.expression(nodes.CreateMaterializedView(**args))
            node.meta["query_sql"] = self.sql[start.start : self._prev.end + 1]
            return node

        def _parse_named_column(self) -> exp.Expr:
            """`name [COMMENT '…']` of a view's or MV's column list."""
            name = self._parse_id_var()
            if name is None:
                self.raise_error("Expected a column name")
            constraints = []
            if self._match(TokenType.COMMENT):
                comment = exp.CommentColumnConstraint(this=self._parse_string())
                constraints.append(exp.ColumnConstraint(kind=comment))
            return self.expression(exp.ColumnDef(this=name, constraints=constraints))

        # --- indexes ---------------------------------------------------------------------
        def _parse_index_def(self, name: exp.Expr | None = None, exists: bool = False) -> exp.Expr:
            """The rest of an index definition (after `INDEX`, or after `CREATE INDEX n ON t`)."""
            if name is None:
                exists = bool(self._match_text_seq("IF", "NOT", "EXISTS"))
                name = self._parse_id_var(any_token=False)
                if name is None:
                    self.raise_error("Expected an index name")
            columns = self._parse_wrapped_id_vars()
            kind = None
            if self._match(TokenType.USING):
                if not self._match_texts(("INVERTED", "BITMAP", "NGRAM_BF")):
                    self.raise_error("Expected INVERTED, BITMAP or NGRAM_BF after USING")
                kind = self._prev.text.upper()
            properties = self._parse_job_properties() if self._match_text_seq("PROPERTIES") else []
            comment = self._parse_string() if self._match(TokenType.COMMENT) else None
            return self.expression(
                nodes.IndexDef(
                    this=name,
                    expressions=columns,
                    kind=kind,
                    properties=properties,
                    comment=comment,
                    exists=exists,
                )
            )

        def _parse_index_statement(self, verb: str) -> exp.Expr:
            """`CREATE INDEX [IF NOT EXISTS] n ON t (c) …` / `DROP INDEX [IF EXISTS] n ON t`: the
            ALTER TABLE t ADD INDEX / DROP INDEX they are in Doris."""
            if verb == "CREATE":
                exists = bool(self._match_text_seq("IF", "NOT", "EXISTS"))
            else:
                exists = bool(self._match_text_seq("IF", "EXISTS"))
            name = self._parse_id_var(any_token=False)
            if name is None:
                self.raise_error("Expected an index name")
            if not self._match(TokenType.ON):
                self.raise_error(f"Expected ON <table> after {verb} INDEX {name.name}")
            # [ctl.][db.]t, read by parts: _parse_table_parts would take `t (c)` for a function call.
            parts = [self._parse_id_var(any_token=False)]
            while self._match(TokenType.DOT):
                parts.append(self._parse_id_var(any_token=False))
            if any(p is None for p in parts) or len(parts) > 3:
                self.raise_error(f"Expected a table name after {verb} INDEX … ON")
            parts = [None] * (3 - len(parts)) + parts
            table = exp.Table(this=parts[2], db=parts[1], catalog=parts[0])
            if verb == "CREATE":
                clause: exp.Expr = nodes.AddIndexClause(this=self._parse_index_def(name, exists))
            else:
                clause = nodes.DropIndexClause(this=name, exists=exists)
            return self.expression(nodes.AlterTableClauses(this=table, expressions=[self.expression(clause)]))

        def _parse_constraint(self) -> exp.Expr | None:
            # `INDEX name (c) USING …` among CREATE TABLE's columns (Doris' indexDef).
            if self._curr is not None and self._curr.token_type == TokenType.INDEX:
                self._advance()
                return self._parse_index_def()
            return super()._parse_constraint()

        def _parse_alter_table_clauses(self) -> exp.Expr | None:
            """`ALTER TABLE t` + Galene's schema-change clauses; None (nothing consumed after the
            table) when the first clause is one sqlglot reads."""
            table = self._parse_table_parts()
            clauses: list[exp.Expr] = []
            while True:
                clause = self._parse_alter_table_clause()
                if clause is None:
                    if clauses:
                        self.raise_error("Unsupported clause in ALTER TABLE")
                    return None
                clauses.append(clause)
                if not self._match(TokenType.COMMA):
                    break
            return self.expression(nodes.AlterTableClauses(this=table, expressions=clauses))

        def _parse_position(self) -> dict[str, t.Any]:
            if self._match_text_seq("FIRST"):
                return {"first": True}
            if self._match_text_seq("AFTER"):
                return {"after": self._parse_id_var()}
            return {}

        def _column_position(self, cdef: exp.Expr) -> dict[str, t.Any]:
            # sqlglot reads MySQL's `FIRST` / `AFTER c` into the column definition.
            pos = cdef.args.get("position") if isinstance(cdef, exp.ColumnDef) else None
            if pos is None:
                return self._parse_position()
            cdef.set("position", None)
            if (pos.text("position") or "").upper() == "FIRST":
                return {"first": True}
            return {"after": exp.to_identifier(pos.this.name)}

        def _parse_alter_table_clause(self) -> exp.Expr | None:
            words = [tok.text.upper() for tok in self._tokens[self._index : self._index + 3]]
            if words[:2] == ["ADD", "COLUMN"]:
                self._advance(2)
                if self._match(TokenType.L_PAREN, advance=False):
                    defs = self._parse_wrapped_csv(self._parse_field_def)
                    return self.expression(nodes.AddColumnsClause(expressions=defs, **self._parse_position()))
                cdef = self._parse_field_def()
                return self.expression(
                    nodes.AddColumnsClause(expressions=[cdef], **self._column_position(cdef))
                )
            if words[:2] == ["DROP", "COLUMN"]:
                self._advance(2)
                return self.expression(nodes.DropColumnClause(this=self._parse_id_var()))
            if words[:2] == ["MODIFY", "COLUMN"]:
                self._advance(2)
                cdef = self._parse_field_def()
                return self.expression(nodes.ModifyColumnClause(this=cdef, **self._column_position(cdef)))
            if words[:2] == ["RENAME", "COLUMN"]:
                self._advance(2)
                old = self._parse_id_var()
                self._match_text_seq("TO")
                return self.expression(nodes.RenameColumnClause(this=old, expression=self._parse_id_var()))
            if words[:2] == ["ADD", "INDEX"]:
                self._advance(2)
                return self.expression(nodes.AddIndexClause(this=self._parse_index_def()))
            if words[:2] == ["DROP", "INDEX"]:
                self._advance(2)
                exists = bool(self._match_text_seq("IF", "EXISTS"))
                return self.expression(
                    nodes.DropIndexClause(this=self._parse_id_var(any_token=False), exists=exists)
                )
            if words[:2] == ["MODIFY", "COMMENT"]:
                self._advance(2)
                return self.expression(nodes.ModifyCommentClause(this=self._parse_string()))
            if words == ["REPLACE", "WITH", "TABLE"]:
                self._advance(3)
                other = self._parse_table_parts()
                props = self._parse_job_properties() if self._match_text_seq("PROPERTIES") else []
                return self.expression(nodes.ReplaceWithTableClause(this=other, properties=props))
            return None

        def _parse_job_properties(self) -> list[exp.Expr]:
            props: list[exp.Expr] = []
            for item in self._parse_wrapped_properties():
                props.extend(item) if isinstance(item, list) else props.append(item)
            return props

        def _parse_create_job(self) -> exp.Expr:
            name = self._parse_id_var()
            if name is None:
                self.raise_error("Expected a job name after CREATE JOB")
            properties = self._parse_job_properties() if self._match_text_seq("PROPERTIES") else []
            if not self._match_text_seq("ON", "STREAMING"):
                self.raise_error("Expected ON STREAMING (Galene serves streaming jobs)")
            comment = self._parse_string() if self._match(TokenType.COMMENT) else None
            if not self._match_text_seq("DO"):
                self.raise_error("Expected DO <INSERT statement>")
            start = self._curr
            body = super()._parse_statement()
            if not isinstance(body, exp.Insert) or start is None:
                self.raise_error("A streaming job's DO must be an INSERT INTO … SELECT … statement")
            node = self.expression(
                nodes.CreateJob(this=name, properties=properties, comment=comment, expression=body)
            )
            node.meta["do_sql"] = self.sql[start.start : self._prev.end + 1]
            return node

        def _parse_alter_job(self) -> exp.Expr:
            name = self._parse_id_var()
            if name is None or not self._match_text_seq("PROPERTIES"):
                self.raise_error("Expected ALTER JOB <name> PROPERTIES (…)")
            return self.expression(nodes.AlterJob(this=name, properties=self._parse_job_properties()))

        def _parse_job_control(self, action: str) -> exp.Expr:
            exists = action == "DROP" and self._match_text_seq("IF", "EXISTS")
            where = self._parse_where()
            if where is None:
                self.raise_error(f"Expected WHERE jobname = '…' after {action} JOB")
            return self.expression(nodes.JobControl(this=action, where=where, exists=exists))

        # --- users and privileges ---------------------------------------------------------
        def _parse_account_statement(self) -> exp.Expr | None:
            """Doris' user/role statements, or None (nothing consumed) for any other statement."""
            words = [tok.text.upper() for tok in self._tokens[self._index : self._index + 3]]
            if len(words) > 1 and words[0] in ("CREATE", "ALTER", "DROP") and words[1] in ("USER", "ROLE"):
                self._advance(2)
                return self._parse_user_or_role(f"{words[0]} {words[1]}")
            if (
                words[:2] == ["SET", "PASSWORD"]
                and self._tokens[self._index + 1].token_type != TokenType.STRING
            ):
                self._advance(2)
                return self._parse_set_password()
            if words[:1] in (["GRANT"], ["REVOKE"]):
                self._advance()
                return self._parse_grant(words[0])
            if words[:2] == ["SHOW", "GRANTS"] or words == ["SHOW", "ALL", "GRANTS"]:
                all_ = words[1] == "ALL"
                self._advance(3 if all_ else 2)
                user = self._parse_user_identity() if self._match_text_seq("FOR") else None
                return self.expression(nodes.AccountStatement(this="SHOW GRANTS", user=user, all=all_))
            if words[:2] == ["SHOW", "ROLES"]:
                self._advance(2)
                return self.expression(nodes.AccountStatement(this="SHOW ROLES"))
            return None

        def _parse_account_name(self, what: str) -> str:
            """A user or role name: 'quoted', `backquoted` or bare."""
            if self._match(TokenType.STRING):
                return self._prev.text
            name = self._parse_id_var(any_token=False)
            if name is None:
                self.raise_error(f"Expected a {what} name")
            return name.name

        def _parse_user_identity(self) -> exp.Expr:
            name = self._parse_account_name("user")
            host = None
            if self._match(TokenType.PARAMETER):  # '@'
                if self._match(TokenType.L_BRACKET):
                    self.raise_error("Galene does not support domain user identities ('user'@['domain'])")
                if self._match(TokenType.STRING) or self._match(TokenType.MOD):
                    host = self._prev.text
                else:
                    host_id = self._parse_id_var(any_token=False)
                    if host_id is None:
                        self.raise_error("Expected a host after '@'")
                    host = host_id.name
            return self.expression(nodes.UserIdentity(this=name, host=host))

        def _parse_password_spec(self, args: dict) -> None:
            """`IDENTIFIED BY [PASSWORD] 'text'` (PASSWORD: the text is the stored hash)."""
            if self._match_text_seq("IDENTIFIED", "BY"):
                hashed = self._match_text_seq("PASSWORD")
                if not self._match(TokenType.STRING):
                    self.raise_error("Expected a quoted password after IDENTIFIED BY")
                args["hashed" if hashed else "password"] = self._prev.text

        def _parse_user_or_role(self, what: str) -> exp.Expr:
            args: dict = {"this": what}
            verb, kind = what.split()
            if verb == "CREATE":
                args["exists"] = self._match_text_seq("IF", "NOT", "EXISTS")
            elif verb == "DROP" or kind == "USER":
                args["exists"] = self._match_text_seq("IF", "EXISTS")
            if kind == "ROLE":
                args["role"] = self._parse_account_name("role")
            else:
                args["user"] = self._parse_user_identity()
                self._parse_password_spec(args)
                if verb == "CREATE" and self._match_text_seq("DEFAULT", "ROLE"):
                    args["role"] = self._parse_account_name("role")
            while self._curr is not None and verb != "DROP":
                if self._match(TokenType.COMMENT):
                    if not self._match(TokenType.STRING):
                        self.raise_error("Expected a quoted comment")
                    args["comment"] = self._prev.text
                elif self._match_text_seq("ACCOUNT_UNLOCK"):
                    continue
                elif self._match_texts(("PASSWORD_HISTORY", "PASSWORD_EXPIRE", "FAILED_LOGIN_ATTEMPTS",
                                        "PASSWORD_LOCK_TIME", "PASSWORD_REUSE")):  # fmt: skip
                    self.raise_error(f"Galene does not support password policies ({self._prev.text})")
                else:
                    break
            return self.expression(nodes.AccountStatement(**args))

        def _parse_set_password(self) -> exp.Expr:
            user = self._parse_user_identity() if self._match_text_seq("FOR") else None
            if not self._match(TokenType.EQ):
                self.raise_error("Expected '=' in SET PASSWORD")
            args: dict = {"this": "SET PASSWORD", "user": user}
            if self._match_text_seq("PASSWORD"):
                if not (self._match(TokenType.L_PAREN) and self._match(TokenType.STRING)):
                    self.raise_error("Expected PASSWORD('password')")
                args["password"] = self._prev.text
                if not self._match(TokenType.R_PAREN):
                    self.raise_error("Expected ')' after PASSWORD('password'")
            elif self._match(TokenType.STRING):
                args["hashed"] = self._prev.text
            else:
                self.raise_error("Expected PASSWORD('password') or the quoted password hash")
            return self.expression(nodes.AccountStatement(**args))

        def _parse_privilege_level(self) -> list[str]:
            parts: list[str] = []
            while True:
                if self._match(TokenType.STAR):
                    parts.append("*")
                else:
                    part = self._parse_id_var(any_token=True)
                    if part is None:
                        self.raise_error("Expected a privilege level like db.*, db.tbl or ctl.db.tbl")
                    parts.append(part.name)
                if not self._match(TokenType.DOT):
                    return parts

        def _parse_grant(self, verb: str) -> exp.Expr:
            args: dict = {"this": verb}
            if self._curr is not None and self._curr.token_type == TokenType.STRING:
                roles = []
                while self._match(TokenType.STRING):
                    roles.append(self._prev.text)
                    if not self._match(TokenType.COMMA):
                        break
                args["roles"] = roles
            else:
                privileges = []
                while self._curr is not None and self._curr.text.upper() != "ON":
                    self._advance()
                    privileges.append(self._prev.text)
                    if self._match(TokenType.L_PAREN, advance=False):
                        self.raise_error("Galene does not support column privileges")
                    if not self._match(TokenType.COMMA):
                        break
                if not privileges or not self._match_text_seq("ON"):
                    self.raise_error(f"Expected {verb} privilege[, …] ON … or {verb} 'role'[, …]")
                args["privileges"] = privileges
                if self._match_text_seq("RESOURCE"):
                    args["on"], args["target"] = "RESOURCE", self._parse_account_name("resource")
                elif self._match_text_seq("WORKLOAD", "GROUP"):
                    args["on"], args["target"] = "WORKLOAD GROUP", self._parse_account_name("workload group")
                else:
                    args["on"], args["target"] = "TABLE", self._parse_privilege_level()
            if not self._match_text_seq("TO" if verb == "GRANT" else "FROM"):
                self.raise_error(f"Expected {'TO' if verb == 'GRANT' else 'FROM'} after the privilege level")
            if "roles" not in args and self._match_text_seq("ROLE"):
                args["role"] = self._parse_account_name("role")
            else:
                args["user"] = self._parse_user_identity()
            return self.expression(nodes.AccountStatement(**args))

        def _parse_partition_names(self) -> list[exp.Expr]:
            """`PARTITION p`, `PARTITION (p, …)` or `PARTITIONS (p, …)`; [] when absent."""
            if not self._match_texts(("PARTITION", "PARTITIONS")):
                return []
            if self._match(TokenType.L_PAREN, advance=False):
                return self._parse_wrapped_csv(self._parse_id_var)
            name = self._parse_id_var()
            if name is None:
                self.raise_error("Expected a partition name")
            return [name]

        def _parse_admin_compact(self) -> exp.Expr:
            if not self._match(TokenType.TABLE):
                self.raise_error("Expected TABLE after ADMIN COMPACT")
            table = self._parse_table_parts()
            partitions = self._parse_partition_names()
            where = self._parse_where()
            return self.expression(nodes.AdminCompact(this=table, partitions=partitions, where=where))

        def _parse_partition(self) -> exp.Partition | None:
            # Doris also writes `t PARTITION p` and `t PARTITIONS (p, …)` (DELETE, SELECT).
            index = self._index
            if not self._match_texts(("PARTITION", "PARTITIONS", "SUBPARTITION")):
                return None
            sub = self._prev.text.upper() == "SUBPARTITION"
            if self._match(TokenType.L_PAREN, advance=False):
                expressions = self._parse_wrapped_csv(self._parse_disjunction)
            elif self._curr is not None and self._curr.text.upper() != "BY":
                expressions = [exp.column(self._parse_id_var())]
            else:
                self._retreat(index)
                return None
            return self.expression(exp.Partition(subpartition=sub, expressions=expressions))

        def _parse_show_load(self, kind: str = "LOAD") -> exp.Expr:
            # SHOW [STREAM] LOAD [FROM db] [WHERE …] [ORDER BY …] [LIMIT n]
            db = self._parse_id_var() if (self._match(TokenType.FROM) or self._match(TokenType.IN)) else None
            where = self._parse_where()
            order = self._parse_order()
            limit = self._parse_limit()
            return self.expression(nodes.OrderedShow(this=kind, db=db, where=where, order=order, limit=limit))

        def _parse_show_partitions(self) -> exp.Expr:
            # SHOW [TEMPORARY] PARTITIONS FROM [db.]t [WHERE …] [ORDER BY …] [LIMIT n]
            if not (self._match(TokenType.FROM) or self._match(TokenType.IN)):
                self.raise_error("Expected FROM after SHOW PARTITIONS")
            table = self._parse_table_parts()
            where = self._parse_where()
            order = self._parse_order()
            limit = self._parse_limit()
            return self.expression(
                nodes.OrderedShow(
                    this="PARTITIONS",
                    target=table.this,
                    db=table.args.get("db"),
                    where=where,
                    order=order,
                    limit=limit,
                )
            )

        def _parse_show_data(self) -> exp.Expr:
            # SHOW DATA [FROM [db.]t] [ORDER BY …]
            table = self._parse_table_parts() if self._match(TokenType.FROM) else None
            order = self._parse_order()
            target = table.this if table is not None else None
            db = table.args.get("db") if table is not None else None
            return self.expression(nodes.OrderedShow(this="DATA", target=target, db=db, order=order))

        def _parse_show_transaction(self) -> exp.Expr:
            # SHOW TRANSACTION [FROM db] WHERE id = N | label = '…'
            db = self._parse_id_var() if (self._match(TokenType.FROM) or self._match(TokenType.IN)) else None
            return self.expression(exp.Show(this="TRANSACTION", db=db, where=self._parse_where()))

        def _parse_show_tablets(self) -> exp.Expr:
            if not (self._match(TokenType.FROM) or self._match(TokenType.IN)):
                self.raise_error("Expected FROM after SHOW TABLETS")
            table = self._parse_table_parts()
            partitions = self._parse_partition_names()
            return self.expression(nodes.ShowTablets(this=table, partitions=partitions))

        def _parse_projections(self) -> tuple[list[exp.Expr], list[exp.Expr] | None]:
            return self._parse_csv(self._parse_projection_with_text), None

        def _parse_projection_with_text(self) -> exp.Expr | None:
            start = self._curr
            node = _unparenthesized_column(self._parse_expression())
            end = self._prev
            if node is not None and start is not None and end is not None and end.end >= start.start:
                node.meta["sql_text"] = self.sql[start.start : end.end + 1]
            return node

        def _parse_doris_group_concat(self) -> exp.Expr:
            # Doris: GROUP_CONCAT([DISTINCT] x [, sep] [ORDER BY …]); MySQL: … [SEPARATOR sep].
            distinct = self._match(TokenType.DISTINCT)
            args = self._parse_csv(self._parse_lambda)
            order = args[-1] if args and isinstance(args[-1], exp.Order) else None
            if order is not None:
                args[-1] = order.this
            separator = None
            if self._match(TokenType.SEPARATOR):
                separator = self._parse_field()
            elif len(args) == 2:
                separator = args.pop()
            if not args:
                self.raise_error("Expected an expression in GROUP_CONCAT")
            this: exp.Expr = (
                args[0] if len(args) == 1 else self.expression(exp.Concat(expressions=args, safe=True))
            )
            if distinct:
                this = self.expression(exp.Distinct(expressions=[this]))
            if order is not None:
                order.set("this", this)
                this = order
            return self.expression(exp.GroupConcat(this=this, separator=separator))

        def _parse_column_constraint(self) -> exp.Expr | None:
            curr = self._curr
            if (
                curr is not None
                and curr.token_type != TokenType.STRING
                and curr.text.upper() == "KEY"
                and not (self._next and self._next.token_type == TokenType.L_PAREN)
            ):
                self._advance()
                return self.expression(exp.ColumnConstraint(kind=nodes.KeyColumnConstraint()))
            if (
                curr is not None
                and curr.token_type != TokenType.STRING
                and curr.text.upper() in AGGREGATION_TYPES
                and not (self._next and self._next.token_type == TokenType.L_PAREN)
            ):
                self._advance()
                kind = nodes.AggregationColumnConstraint(this=exp.var(curr.text.upper()))
                return self.expression(exp.ColumnConstraint(kind=kind))
            return super()._parse_column_constraint()

        def _parse_distributed_property(self) -> exp.DistributedByProperty:
            kind = "HASH"
            expressions: list[exp.Expr] | None = None
            if self._match_text_seq("BY", "HASH"):
                expressions = self._parse_wrapped_csv(self._parse_id_var)
            elif self._match_text_seq("BY", "RANDOM"):
                kind = "RANDOM"
            else:
                self.raise_error("Expected HASH or RANDOM after DISTRIBUTED BY")
            buckets: exp.Expr | None = None
            if self._match_text_seq("BUCKETS"):
                if self._match_text_seq("AUTO"):
                    buckets = exp.var("AUTO")
                else:
                    buckets = self._parse_number()
                    if buckets is None:
                        self.raise_error("Expected a number or AUTO after BUCKETS")
            return self.expression(
                exp.DistributedByProperty(expressions=expressions, kind=kind, buckets=buckets)
            )

        def _parse_partition_property(self) -> exp.Expr | None | list[exp.Expr]:
            if self._match_text_seq("RANGE"):
                node_cls: type[exp.Expr] = exp.PartitionByRangeProperty
                value_parser = self._parse_partition_range_value
            elif self._match_text_seq("LIST"):
                node_cls = exp.PartitionByListProperty
                value_parser = self._parse_partition_list_value
            else:
                return self._parse_partitioned_by()

            columns = self._parse_wrapped_csv(self._parse_assignment)
            self._match_l_paren()
            if self._match_text_seq("PARTITION", advance=False):
                partitions = self._parse_csv(value_parser)
            elif node_cls is exp.PartitionByRangeProperty and self._match_text_seq("FROM", advance=False):
                partitions = self._parse_csv(self._parse_partitioning_granularity_dynamic)
            else:
                partitions = []
            self._match_r_paren()
            node = node_cls(partition_expressions=columns, create_expressions=partitions)
            # `()` (no partitions yet, e.g. for dynamic partitioning) is valid Doris but fails
            # sqlglot's required-argument check, so only non-empty lists are validated.
            return self.expression(node) if partitions else node

        def _parse_partition_bound(self) -> exp.Expr | None:
            if self._match_text_seq("MAXVALUE"):
                return exp.var("MAXVALUE")
            value = self._parse_bitwise()
            if value is None:
                self.raise_error("Expected a partition bound value")
            return value

        def _parse_partition_range_value(self) -> exp.Expr | None:
            self._match_text_seq("PARTITION")
            self._match_text_seq("IF", "NOT", "EXISTS")
            name = self._parse_id_var()
            if name is None:
                self.raise_error("Expected a partition name")
            if self._match_text_seq("VALUES", "LESS", "THAN"):
                if self._match_text_seq("MAXVALUE"):
                    values = [exp.var("MAXVALUE")]
                else:
                    values = self._parse_wrapped_csv(self._parse_partition_bound)
                return self.expression(nodes.RangePartitionLessThan(this=name, expressions=values))
            if self._match_text_seq("VALUES") and self._match(TokenType.L_BRACKET):
                lower = self._parse_wrapped_csv(self._parse_partition_bound)
                self._match(TokenType.COMMA)
                upper = self._parse_wrapped_csv(self._parse_partition_bound)
                if not self._match(TokenType.R_PAREN):
                    self.raise_error("Expected ')' closing a VALUES [lower, upper) range")
                return self.expression(nodes.RangePartitionFixed(this=name, lower=lower, upper=upper))
            self.raise_error("Expected VALUES LESS THAN (...) or VALUES [(...), (...))")
            return None

        def _parse_partition_list_value(self) -> exp.Expr:
            self._match_text_seq("PARTITION")
            self._match_text_seq("IF", "NOT", "EXISTS")
            name = self._parse_id_var()
            if name is None or not self._match_text_seq("VALUES", "IN"):
                self.raise_error("Expected PARTITION <name> VALUES IN (...)")
            values = self._parse_wrapped_csv(self._parse_bitwise)
            return self.expression(nodes.ListPartition(this=name, expressions=values))

        def _parse_describe(self) -> exp.Describe:
            # EXPLAIN [VERBOSE | GRAPH | … PLAN] <query>: the level words before the query.
            levels: list[str] = []
            i = self._index
            while i < len(self._tokens) and self._tokens[i].text.upper() in EXPLAIN_LEVELS:
                i += 1
            if i > self._index and i < len(self._tokens) and self._tokens[i].token_type in _QUERY_STARTS:
                levels = [tok.text.upper() for tok in self._tokens[self._index : i]]
                self._advance(i - self._index)
            node = super()._parse_describe()
            if levels:
                node.set("style", " ".join(levels))
            if self._match(TokenType.ALL):
                return self.expression(nodes.DescribeAll(**node.args))
            return node

        def _parse_alter(self) -> exp.Expr:
            start = self._prev
            if self._curr is not None and self._curr.text.upper() == "TABLE":
                index = self._index
                self._advance()
                node = self._parse_alter_table_clauses()
                if node is not None:
                    return node
                self._retreat(index)
            if not self._match_text_seq("SYSTEM"):
                return super()._parse_alter()
            if not self._match_texts(("ADD", "DROP", "DROPP", "DECOMMISSION", "MODIFY")):
                return self._parse_as_command(start)
            action = self._prev.text.upper()
            if not self._match_text_seq("BACKEND"):
                return self._parse_as_command(start)
            hosts = self._parse_csv(self._parse_string)
            if not hosts or any(h is None for h in hosts):
                self.raise_error("Expected 'host:port' after BACKEND")
            properties: list[exp.Expr] = []
            if self._match_text_seq("PROPERTIES") or self._match(TokenType.SET):
                properties = self._parse_backend_properties()
            return self.expression(nodes.AlterSystem(this=action, expressions=hosts, properties=properties))

        def _parse_backend_properties(self) -> list[exp.Expr]:
            props: list[exp.Expr] = []
            for item in self._parse_wrapped_properties():
                props.extend(item) if isinstance(item, list) else props.append(item)
            return props

        def _parse_insert_table(self) -> exp.Expr | None:
            target = self._parse_table(schema=True, parse_partition=True)
            if isinstance(target, exp.Table) and self._match_text_seq("WITH", "LABEL"):
                label = self._parse_id_var()
                if label is None:
                    self.raise_error("Expected a label after WITH LABEL")
                target = self._parse_schema(this=target)
                return self.expression(nodes.LabeledInsertTarget(this=target, label=label))
            return target

    class Generator(Doris.Generator):
        TYPE_MAPPING: t.ClassVar[dict] = {
            **Doris.Generator.TYPE_MAPPING,
            exp.DType.INT128: "LARGEINT",
        }

        PROPERTIES_LOCATION: t.ClassVar[dict] = {
            **Doris.Generator.PROPERTIES_LOCATION,
            exp.AggregateKeyProperty: exp.Properties.Location.POST_SCHEMA,
            exp.DuplicateKeyProperty: exp.Properties.Location.POST_SCHEMA,
            exp.DistributedByProperty: exp.Properties.Location.POST_SCHEMA,
        }

        TRANSFORMS: t.ClassVar[dict] = {
            **Doris.Generator.TRANSFORMS,
            nodes.UserIdentity: lambda self, e: self._user_identity_sql(e),
            nodes.AccountStatement: lambda self, e: self._account_statement_sql(e),
            nodes.AggregationColumnConstraint: lambda self, e: self.sql(e, "this"),
            nodes.RangePartitionLessThan: lambda self, e: self._range_less_than_sql(e),
            nodes.RangePartitionFixed: lambda self, e: (
                f"PARTITION {self.sql(e, 'this')} VALUES "
                f"[({self.expressions(e, key='lower', flat=True)}), "
                f"({self.expressions(e, key='upper', flat=True)}))"
            ),
            nodes.ListPartition: lambda self, e: (
                f"PARTITION {self.sql(e, 'this')} VALUES IN ({self.expressions(e, flat=True)})"
            ),
            nodes.DescribeAll: lambda self, e: f"{self.describe_sql(e)} ALL",
            nodes.OrderedShow: lambda self, e: self.show_sql(e),
            nodes.AlterSystem: lambda self, e: self._alter_system_sql(e),
            nodes.LabeledInsertTarget: lambda self, e: self._labeled_target_sql(e),
            nodes.AdminCompact: lambda self, e: (
                f"ADMIN COMPACT TABLE {self.sql(e, 'this')}{self._partition_names_sql(e)}{self.sql(e, 'where')}"
            ),
            nodes.ShowTablets: lambda self, e: (
                f"SHOW TABLETS FROM {self.sql(e, 'this')}{self._partition_names_sql(e)}"
            ),
            nodes.CreateJob: lambda self, e: self._create_job_sql(e),
            nodes.AlterJob: lambda self, e: (
                f"ALTER JOB {self.sql(e, 'this')} PROPERTIES ({', '.join(self.sql(p) for p in _property_pairs(e))})"
            ),
            nodes.KeyColumnConstraint: lambda self, e: "KEY",
            nodes.AlterTableClauses: lambda self, e: (
                f"ALTER TABLE {self.sql(e, 'this')} {self.expressions(e, flat=True)}"
            ),
            nodes.AddColumnsClause: lambda self, e: (
                f"ADD COLUMN ({self.expressions(e, flat=True)}){self._position_sql(e)}"
            ),
            nodes.DropColumnClause: lambda self, e: f"DROP COLUMN {self.sql(e, 'this')}",
            nodes.ModifyColumnClause: lambda self, e: (
                f"MODIFY COLUMN {self.sql(e, 'this')}{self._position_sql(e)}"
            ),
            nodes.RenameColumnClause: lambda self, e: (
                f"RENAME COLUMN {self.sql(e, 'this')} {self.sql(e, 'expression')}"
            ),
            nodes.ModifyCommentClause: lambda self, e: f"MODIFY COMMENT {self.sql(e, 'this')}",
            nodes.IndexDef: lambda self, e: (
                f"INDEX {'IF NOT EXISTS ' if e.args.get('exists') else ''}{self.sql(e, 'this')}"
                f" ({self.expressions(e, flat=True)})"
                + (f" USING {e.args['kind']}" if e.args.get("kind") else "")
                + (
                    f" PROPERTIES ({', '.join(self.sql(p) for p in _property_pairs(e))})"
                    if _property_pairs(e)
                    else ""
                )
                + (f" COMMENT {self.sql(e, 'comment')}" if e.args.get("comment") is not None else "")
            ),
            nodes.AddIndexClause: lambda self, e: f"ADD {self.sql(e, 'this')}",
            nodes.DropIndexClause: lambda self, e: (
                f"DROP INDEX {'IF EXISTS ' if e.args.get('exists') else ''}{self.sql(e, 'this')}"
            ),
            nodes.ReplaceWithTableClause: lambda self, e: (
                f"REPLACE WITH TABLE {self.sql(e, 'this')}"
                + (
                    f" PROPERTIES ({', '.join(self.sql(p) for p in _property_pairs(e))})"
                    if _property_pairs(e)
                    else ""
                )
            ),
            nodes.CreateMaterializedView: lambda self, e: (
                f"CREATE MATERIALIZED VIEW {self.sql(e, 'this')} AS {self.sql(e, 'expression')}"
            ),
            nodes.RefreshMaterializedView: lambda self, e: f"REFRESH MATERIALIZED VIEW {self.sql(e, 'this')}",
            nodes.JobControl: lambda self, e: (
                f"{e.name} JOB{' IF EXISTS' if e.args.get('exists') else ''}{self.sql(e, 'where')}"
            ),
        }

        def _position_sql(self, e: exp.Expr) -> str:
            if e.args.get("first"):
                return " FIRST"
            return f" AFTER {self.sql(e, 'after')}" if e.args.get("after") is not None else ""

        def _create_job_sql(self, e: nodes.CreateJob) -> str:
            props = _property_pairs(e)
            sql = f"CREATE JOB {self.sql(e, 'this')}"
            if props:
                sql += f" PROPERTIES ({', '.join(self.sql(p) for p in props)})"
            sql += " ON STREAMING"
            if e.args.get("comment") is not None:
                sql += f" COMMENT {self.sql(e, 'comment')}"
            return f"{sql} DO {self.sql(e, 'expression')}"

        def _partition_names_sql(self, e: exp.Expr) -> str:
            names = e.args.get("partitions") or []
            return f" PARTITION ({', '.join(self.sql(n) for n in names)})" if names else ""

        def _range_less_than_sql(self, e: nodes.RangePartitionLessThan) -> str:
            values = e.expressions
            if len(values) == 1 and isinstance(values[0], exp.Var) and values[0].name == "MAXVALUE":
                bound = "MAXVALUE"
            else:
                bound = f"({self.expressions(e, flat=True)})"
            return f"PARTITION {self.sql(e, 'this')} VALUES LESS THAN {bound}"

        def _alter_system_sql(self, e: nodes.AlterSystem) -> str:
            hosts = self.expressions(e, flat=True)
            sql = f"ALTER SYSTEM {e.name} BACKEND {hosts}"
            props = _property_pairs(e)
            if props:
                keyword = "SET" if e.name == "MODIFY" else "PROPERTIES"
                sql += f" {keyword} ({', '.join(self.sql(p) for p in props)})"
            return sql

        def _labeled_target_sql(self, e: nodes.LabeledInsertTarget) -> str:
            target = e.this
            if isinstance(target, exp.Schema):
                columns = f" ({self.expressions(target, flat=True)})"
                table = self.sql(target, "this")
            else:
                columns, table = "", self.sql(target)
            return f"{table} WITH LABEL {self.sql(e, 'label')}{columns}"

        def _user_identity_sql(self, e: nodes.UserIdentity) -> str:
            host = e.args.get("host")
            return _quote(e.name) + (f"@{_quote(host)}" if host is not None else "")

        def _account_statement_sql(self, e: nodes.AccountStatement) -> str:
            """Doris SQL of a user/role statement (a clear password prints as '***')."""
            what, a = e.name, e.args
            parts = [what]
            if a.get("exists"):
                parts.append("IF NOT EXISTS" if what.startswith("CREATE") else "IF EXISTS")
            if what in ("GRANT", "REVOKE"):
                if a.get("roles"):
                    parts.append(", ".join(_quote(r) for r in a["roles"]))
                else:
                    parts.append(", ".join(a.get("privileges") or []))
                    target = a.get("target")
                    if a.get("on") == "TABLE":
                        parts.append("ON " + ".".join(target))
                    else:
                        parts.append(f"ON {a.get('on')} {_quote(target)}")
                parts.append("TO" if what == "GRANT" else "FROM")
                parts.append(f"ROLE {_quote(a['role'])}" if a.get("role") else self.sql(e, "user"))
                return " ".join(parts)
            if what == "SHOW GRANTS":
                parts = ["SHOW ALL GRANTS" if a.get("all") else "SHOW GRANTS"]
                if a.get("user") is not None:
                    parts.append(f"FOR {self.sql(e, 'user')}")
                return " ".join(parts)
            if what == "SET PASSWORD":
                if a.get("user") is not None:
                    parts.append(f"FOR {self.sql(e, 'user')}")
                value = "PASSWORD('***')" if a.get("password") is not None else _quote(a.get("hashed") or "")
                return " ".join([*parts, "=", value])
            if what.endswith("ROLE"):
                parts.append(_quote(a["role"]))
            else:
                parts.append(self.sql(e, "user"))
            if a.get("password") is not None:
                parts.append("IDENTIFIED BY '***'")
            elif a.get("hashed") is not None:
                parts.append(f"IDENTIFIED BY PASSWORD {_quote(a['hashed'])}")
            if what == "CREATE USER" and a.get("role"):
                parts.append(f"DEFAULT ROLE {_quote(a['role'])}")
            if a.get("comment") is not None:
                parts.append(f"COMMENT {_quote(a['comment'])}")
            return " ".join(parts)


def parse_one(sql: str) -> exp.Expr:
    """Parse one statement with the Galene dialect (raises sqlglot errors)."""
    import sqlglot

    return sqlglot.parse_one(sql, read=Galene)
