"""Statement routing: one SQL text in, one typed statement out.

Owns `parse_statement` (parse with the Galene dialect, then `classify` the sqlglot tree into
the typed statement of its family: `dml`, `schema`, `metadata`, `session`, `cluster`,
`account`, `jobs`) and the MySQL-like syntax error text. The executor dispatches on the
statement class; `base.Other` is what Galene does not serve.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from galene.common.errors import ER_UNKNOWN_ERROR, GaleneError
from galene.sql import nodes
from galene.sql.dialect import Galene
from galene.sql.statements import account, cluster, dml, jobs, metadata, schema, session
from galene.sql.statements.base import Other, Statement
from galene.sql.statements.split import split_statements


def _syntax_error(sql: str, error: ParseError) -> GaleneError:
    info = error.errors[0] if error.errors else {}
    line = info.get("line") or 1
    col = info.get("col") or 0
    highlight = info.get("highlight") or ""
    description = info.get("description") or str(error)
    lines = sql.splitlines() or [""]
    text = lines[min(line, len(lines)) - 1]
    caret_at = max(col - len(highlight), 0)
    parts = [f"Syntax error in line {line}:", text, " " * caret_at + "^"]
    if highlight:
        parts.append(f"Encountered: {highlight}")
    parts.append(description)
    return GaleneError("\n".join(parts), ER_UNKNOWN_ERROR)


def classify(node: exp.Expr, sql: str) -> Statement:
    """Map a parsed Galene-dialect tree to its statement class."""
    if isinstance(node, nodes.AccountStatement):
        return account.classify_account(node, sql)
    if isinstance(node, nodes.CreateJob):
        return jobs.classify_create_job(node, sql)
    if isinstance(node, nodes.AlterTableClauses):
        return schema.classify_alter_table_clauses(node, sql)
    if isinstance(node, nodes.CreateMaterializedView):
        return schema.classify_create_mtmv(node, sql)
    if isinstance(node, nodes.RefreshMaterializedView):
        return schema.classify_refresh_mtmv(node, sql)
    if isinstance(node, exp.Command) and (node.name or "").upper() == "RENAME":
        return schema.classify_rename_command(node, sql)
    if isinstance(node, nodes.JobControl):
        return jobs.classify_job_control(node, sql)
    if isinstance(node, nodes.AlterJob):
        return jobs.classify_alter_job(node, sql)
    if isinstance(node, exp.Query):
        return dml.Query(expr=node, sql=sql)
    if isinstance(node, exp.Show):
        return metadata.classify_show(node, sql)
    if isinstance(node, nodes.ShowTablets):
        return cluster.classify_show_tablets(node, sql)
    if isinstance(node, nodes.AdminCompact):
        return cluster.classify_admin_compact(node, sql)
    if isinstance(node, exp.Describe) and isinstance(node.this, exp.Query):
        return dml.classify_explain(node, sql)
    if isinstance(node, exp.Describe):
        return metadata.classify_describe(node, sql)
    if isinstance(node, exp.Create):
        return schema.classify_create(node, sql)
    if isinstance(node, exp.Drop):
        return schema.classify_drop(node, sql)
    if isinstance(node, exp.Use):
        if node.this is not None and not node.args.get("kind"):
            return session.Use(db=node.this.name, sql=sql)
        return Other(sql=sql)
    if isinstance(node, exp.Insert):
        return dml.classify_insert(node, sql)
    if isinstance(node, exp.Set):
        return session.Set(expr=node, sql=sql)
    if isinstance(node, exp.Update):
        return dml.classify_update(node, sql)
    if isinstance(node, exp.Delete):
        return dml.classify_delete(node, sql)
    if isinstance(node, exp.TruncateTable):
        return dml.classify_truncate(node, sql)
    if isinstance(node, nodes.AlterSystem):
        return cluster.classify_alter_system(node, sql)
    if isinstance(node, exp.Alter):
        return schema.classify_alter(node, sql)
    if isinstance(node, exp.Transaction):
        return session.Transaction(kind="BEGIN", sql=sql)
    if isinstance(node, exp.Commit):
        return session.Transaction(kind="COMMIT", sql=sql)
    if isinstance(node, exp.Rollback):
        return session.Transaction(kind="ROLLBACK", sql=sql)
    return Other(sql=sql)


def parse_statement(sql: str) -> Statement:
    """Parse exactly one statement (a trailing ';' is allowed) into its typed form."""
    parts = split_statements(sql)
    if not parts:
        raise GaleneError("Query was empty", 1065)
    if len(parts) > 1:
        raise GaleneError("Only one statement is supported per call; got several separated by ';'")
    text = parts[0]
    cancel = cluster.cancel_decommission(text)
    if cancel is not None:
        return cancel
    try:
        node = sqlglot.parse_one(text, read=Galene)
    except ParseError as e:
        raise _syntax_error(text, e) from None
    except TokenError as e:
        raise GaleneError(f"Syntax error in line 1:\n{text}\n{e}", ER_UNKNOWN_ERROR) from None
    return classify(node, text)
