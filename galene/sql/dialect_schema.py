"""The Galene dialect's grammar of table definitions and schema changes: CREATE TABLE's Doris
clauses (aggregate and KEY column suffixes, INDEX definitions, RANGE/LIST partitions with
`VALUES LESS THAN MAXVALUE` and `[lower, upper)`, DISTRIBUTED BY … BUCKETS AUTO), ALTER TABLE's
schema-change clauses (and CREATE / DROP INDEX … ON t, which are those), and asynchronous
materialized views (CREATE / REFRESH MATERIALIZED VIEW), each printed back as Doris SQL.

Parser and generator mixins of `galene.sql.dialect.Galene` (they run on its Parser and
Generator); what a definition means is `galene.sql.ddl`.
"""

from __future__ import annotations

import typing as t

from sqlglot import exp
from sqlglot.tokens import TokenType

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


def property_pairs(node: exp.Expr) -> list[exp.Property]:
    """The `PROPERTIES (…)` pairs a Galene node holds (its `properties` argument)."""
    return list(node.args.get("properties") or [])


class SchemaParser:
    """Parser rules of table definitions, schema changes and materialized views (mixed into
    `Galene.Parser`)."""

    def _parse_schema_statement(self) -> exp.Expr | None:
        """CREATE / DROP INDEX … ON t, CREATE / REFRESH MATERIALIZED VIEW; None (nothing consumed)
        for any other statement."""
        if self._curr is None or self._next is None:
            return None
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
        return None

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
                props.extend(self._parse_property_list())
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
        properties = self._parse_property_list() if self._match_text_seq("PROPERTIES") else []
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
            return self.expression(nodes.AddColumnsClause(expressions=[cdef], **self._column_position(cdef)))
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
            props = self._parse_property_list() if self._match_text_seq("PROPERTIES") else []
            return self.expression(nodes.ReplaceWithTableClause(this=other, properties=props))
        return None

    def _parse_property_list(self) -> list[exp.Expr]:
        """`(k = v, …)` after PROPERTIES as a flat list of Property nodes (also the dialect's
        streaming jobs and ALTER SYSTEM use it)."""
        props: list[exp.Expr] = []
        for item in self._parse_wrapped_properties():
            props.extend(item) if isinstance(item, list) else props.append(item)
        return props

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
        return self.expression(exp.DistributedByProperty(expressions=expressions, kind=kind, buckets=buckets))

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


SCHEMA_TRANSFORMS: dict = {
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
    nodes.KeyColumnConstraint: lambda self, e: "KEY",
    nodes.AlterTableClauses: lambda self, e: (
        f"ALTER TABLE {self.sql(e, 'this')} {self.expressions(e, flat=True)}"
    ),
    nodes.AddColumnsClause: lambda self, e: (
        f"ADD COLUMN ({self.expressions(e, flat=True)}){self._position_sql(e)}"
    ),
    nodes.DropColumnClause: lambda self, e: f"DROP COLUMN {self.sql(e, 'this')}",
    nodes.ModifyColumnClause: lambda self, e: f"MODIFY COLUMN {self.sql(e, 'this')}{self._position_sql(e)}",
    nodes.RenameColumnClause: lambda self, e: (
        f"RENAME COLUMN {self.sql(e, 'this')} {self.sql(e, 'expression')}"
    ),
    nodes.ModifyCommentClause: lambda self, e: f"MODIFY COMMENT {self.sql(e, 'this')}",
    nodes.IndexDef: lambda self, e: (
        f"INDEX {'IF NOT EXISTS ' if e.args.get('exists') else ''}{self.sql(e, 'this')}"
        f" ({self.expressions(e, flat=True)})"
        + (f" USING {e.args['kind']}" if e.args.get("kind") else "")
        + (f" PROPERTIES ({', '.join(self.sql(p) for p in property_pairs(e))})" if property_pairs(e) else "")
        + (f" COMMENT {self.sql(e, 'comment')}" if e.args.get("comment") is not None else "")
    ),
    nodes.AddIndexClause: lambda self, e: f"ADD {self.sql(e, 'this')}",
    nodes.DropIndexClause: lambda self, e: (
        f"DROP INDEX {'IF EXISTS ' if e.args.get('exists') else ''}{self.sql(e, 'this')}"
    ),
    nodes.ReplaceWithTableClause: lambda self, e: (
        f"REPLACE WITH TABLE {self.sql(e, 'this')}"
        + (f" PROPERTIES ({', '.join(self.sql(p) for p in property_pairs(e))})" if property_pairs(e) else "")
    ),
    nodes.CreateMaterializedView: lambda self, e: (
        f"CREATE MATERIALIZED VIEW {self.sql(e, 'this')} AS {self.sql(e, 'expression')}"
    ),
    nodes.RefreshMaterializedView: lambda self, e: f"REFRESH MATERIALIZED VIEW {self.sql(e, 'this')}",
}


class SchemaGenerator:
    """Generator rules of table definitions and schema changes (mixed into `Galene.Generator`)."""

    def _position_sql(self, e: exp.Expr) -> str:
        if e.args.get("first"):
            return " FIRST"
        return f" AFTER {self.sql(e, 'after')}" if e.args.get("after") is not None else ""

    def _range_less_than_sql(self, e: nodes.RangePartitionLessThan) -> str:
        values = e.expressions
        if len(values) == 1 and isinstance(values[0], exp.Var) and values[0].name == "MAXVALUE":
            bound = "MAXVALUE"
        else:
            bound = f"({self.expressions(e, flat=True)})"
        return f"PARTITION {self.sql(e, 'this')} VALUES LESS THAN {bound}"
