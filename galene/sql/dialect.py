"""The Galene SQL dialect: sqlglot's Doris dialect extended to the Doris grammar Galene serves.

Owns tokenizing, parsing and re-generating Doris SQL. Off-the-shelf sqlglot (30.x) fails on
aggregate column suffixes, LARGEINT/…V2/V3 type names, `VALUES LESS THAN MAXVALUE`,
`BUCKETS AUTO` (it drops it), `AGGREGATE KEY`, `DESC t ALL`, `SHOW BACKENDS|FRONTENDS|PROC`,
`ALTER SYSTEM … BACKEND`, `INSERT … WITH LABEL`, `ADMIN COMPACT TABLE`, `SHOW TABLETS` and the
streaming-job statements (`CREATE JOB … ON STREAMING DO INSERT …`, `ALTER JOB`, `PAUSE | RESUME |
DROP JOB WHERE …`); the dialect adds them as parser rules building Galene's own nodes
(`galene.sql.nodes`), each with its generator rule so a parsed statement prints back as Doris
SQL. This module holds the dialect class `Galene` with its tokenizer, the expression-level rules
(Doris functions, GROUP_CONCAT, select items' text), SHOW, EXPLAIN, INSERT … WITH LABEL, the
cluster statements and streaming jobs; two statement families have their grammar next to it,
mixed into `Galene.Parser` / `Galene.Generator`: `dialect_schema` (CREATE TABLE's clauses,
ALTER TABLE, indexes, materialized views) and `dialect_accounts` (users and privileges).
Nothing here interprets a statement: classification is `galene.sql.statements`, table
semantics are `galene.sql.ddl`.
"""

from __future__ import annotations

import typing as t

from sqlglot import exp
from sqlglot.dialects.doris import Doris
from sqlglot.tokens import TokenType
from sqlglot.trie import new_trie

from galene.sql import functions_ip, functions_json, functions_nested, functions_state, nodes
from galene.sql.dialect_accounts import ACCOUNT_TRANSFORMS, AccountGenerator, AccountParser
from galene.sql.dialect_schema import SCHEMA_TRANSFORMS, SchemaGenerator, SchemaParser, property_pairs

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


# Doris functions parsed as plain calls, whatever sqlglot's Doris dialect makes of them.
PLAIN_CALLS = functions_nested.NAMES | functions_json.NAMES | functions_ip.NAMES | functions_state.NAMES


def _plain_call(name: str) -> t.Callable[[list[exp.Expr]], exp.Expr]:
    return lambda args: exp.Anonymous(this=name, expressions=args)


def _value_window_function(node: type[exp.Expr], name: str, args: list[exp.Expr]) -> exp.Expr:
    """FIRST_VALUE/LAST_VALUE(expr[, ignore_null]): sqlglot's node for one argument, else the call
    as written (galene.sql.functions turns Doris' ignore_null into Spark's boolean literal)."""
    if len(args) == 1:
        return node(this=args[0])
    return exp.Anonymous(this=name, expressions=args)


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


# Doris types sqlglot has no node for, parsed as user-defined types.
USER_DEFINED_TYPES = ("BITMAP", "QUANTILE_STATE")


class Galene(Doris):
    """Doris SQL as Galene accepts it."""

    # BITMAP, QUANTILE_STATE (and any other name) parse as user-defined types; the DDL's type
    # reading (galene.sql.ddl.columns) accepts Doris' and names the others unsupported.
    SUPPORTS_USER_DEFINED_TYPES = True

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
            "IPV4": TokenType.IPV4,
            "IPV6": TokenType.IPV6,
            "HLL": TokenType.HLLSKETCH,
        }

    class Parser(AccountParser, SchemaParser, Doris.Parser):
        FUNCTIONS: t.ClassVar[dict] = {
            **Doris.Parser.FUNCTIONS,
            **{name: _build_unit_delta(node, unit) for name, (node, unit) in _UNIT_ADD_FUNCTIONS.items()},
            # sqlglot rewrites TO_DAYS into a DATEDIFF from year 0, which no engine date holds.
            "TO_DAYS": lambda args: exp.Anonymous(this="TO_DAYS", expressions=args),
            # Doris' FIRST_VALUE/LAST_VALUE(expr, ignore_null): sqlglot's nodes take one argument.
            "FIRST_VALUE": lambda args: _value_window_function(exp.FirstValue, "FIRST_VALUE", args),
            "LAST_VALUE": lambda args: _value_window_function(exp.LastValue, "LAST_VALUE", args),
            # The functions of the nested, JSON, IP and aggregate-state types keep Doris' arguments
            # (galene/sql/functions_*.py rewrite them; sqlglot's nodes check other counts).
            **{name: _plain_call(name) for name in PLAIN_CALLS},
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

        def _parse_types(
            self,
            check_func: bool = False,
            schema: bool = False,
            allow_identifiers: bool = True,
            with_collation: bool = False,
        ) -> exp.Expr | None:
            # User-defined types are on for Doris' BITMAP and QUANTILE_STATE only: any other
            # name is no type (a syntax error in a column definition, as before).
            index = self._index
            parsed = super()._parse_types(check_func, schema, allow_identifiers, with_collation)
            if (
                isinstance(parsed, exp.DataType)
                and parsed.this == exp.DType.USERDEFINED
                and str(parsed.args.get("kind") or "").upper() not in USER_DEFINED_TYPES
            ):
                self._retreat(index)
                return None
            return parsed

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
            # Indexes and async materialized views (schema objects).
            schema = self._parse_schema_statement()
            if schema is not None:
                return schema
            return super()._parse_statement()

        def _parse_create_job(self) -> exp.Expr:
            name = self._parse_id_var()
            if name is None:
                self.raise_error("Expected a job name after CREATE JOB")
            properties = self._parse_property_list() if self._match_text_seq("PROPERTIES") else []
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
            return self.expression(nodes.AlterJob(this=name, properties=self._parse_property_list()))

        def _parse_job_control(self, action: str) -> exp.Expr:
            exists = action == "DROP" and self._match_text_seq("IF", "EXISTS")
            where = self._parse_where()
            if where is None:
                self.raise_error(f"Expected WHERE jobname = '…' after {action} JOB")
            return self.expression(nodes.JobControl(this=action, where=where, exists=exists))

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

        # Each top-level select item remembers the text it was written as: MySQL labels an
        # unaliased result column with exactly that text (`COUNT(*)`, `k + 1`).
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
                properties = self._parse_property_list()
            return self.expression(nodes.AlterSystem(this=action, expressions=hosts, properties=properties))

        def _parse_insert_table(self) -> exp.Expr | None:
            target = self._parse_table(schema=True, parse_partition=True)
            if isinstance(target, exp.Table) and self._match_text_seq("WITH", "LABEL"):
                label = self._parse_id_var()
                if label is None:
                    self.raise_error("Expected a label after WITH LABEL")
                target = self._parse_schema(this=target)
                return self.expression(nodes.LabeledInsertTarget(this=target, label=label))
            return target

    class Generator(AccountGenerator, SchemaGenerator, Doris.Generator):
        TYPE_MAPPING: t.ClassVar[dict] = {
            **Doris.Generator.TYPE_MAPPING,
            exp.DType.INT128: "LARGEINT",
            exp.DType.HLLSKETCH: "HLL",
        }

        PROPERTIES_LOCATION: t.ClassVar[dict] = {
            **Doris.Generator.PROPERTIES_LOCATION,
            exp.AggregateKeyProperty: exp.Properties.Location.POST_SCHEMA,
            exp.DuplicateKeyProperty: exp.Properties.Location.POST_SCHEMA,
            exp.DistributedByProperty: exp.Properties.Location.POST_SCHEMA,
        }

        TRANSFORMS: t.ClassVar[dict] = {
            **Doris.Generator.TRANSFORMS,
            **ACCOUNT_TRANSFORMS,
            **SCHEMA_TRANSFORMS,
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
                f"ALTER JOB {self.sql(e, 'this')} PROPERTIES ({', '.join(self.sql(p) for p in property_pairs(e))})"
            ),
            nodes.JobControl: lambda self, e: (
                f"{e.name} JOB{' IF EXISTS' if e.args.get('exists') else ''}{self.sql(e, 'where')}"
            ),
        }

        def _create_job_sql(self, e: nodes.CreateJob) -> str:
            props = property_pairs(e)
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

        def _alter_system_sql(self, e: nodes.AlterSystem) -> str:
            hosts = self.expressions(e, flat=True)
            sql = f"ALTER SYSTEM {e.name} BACKEND {hosts}"
            props = property_pairs(e)
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


def parse_one(sql: str) -> exp.Expr:
    """Parse one statement with the Galene dialect (raises sqlglot errors)."""
    import sqlglot

    return sqlglot.parse_one(sql, read=Galene)
