"""Streaming-job statements: CREATE JOB … ON STREAMING DO INSERT …, PAUSE | RESUME | DROP JOB
and ALTER JOB, and how each is read."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from galene.common.errors import GaleneError
from galene.sql import nodes
from galene.sql.statements.base import Statement
from galene.sql.statements.dml import Insert, classify_insert
from galene.sql.statements.reading import property_dict


@dataclass
class CreateJob(Statement):
    """CREATE JOB name [PROPERTIES (…)] ON STREAMING [COMMENT '…'] DO INSERT INTO … SELECT …"""

    name: str
    insert: Insert
    properties: dict[str, str] = field(default_factory=dict)
    comment: str = ""
    do_sql: str = ""


@dataclass
class JobControl(Statement):
    """PAUSE | RESUME | DROP JOB [IF EXISTS] WHERE jobname = '…'"""

    action: str  # PAUSE, RESUME or DROP
    name: str
    if_exists: bool = False


@dataclass
class AlterJob(Statement):
    """ALTER JOB name PROPERTIES (…)"""

    name: str
    properties: dict[str, str] = field(default_factory=dict)


# --- reading them -----------------------------------------------------------------------------


def classify_create_job(node: nodes.CreateJob, sql: str) -> Statement:
    insert = classify_insert(node.expression, node.meta.get("do_sql") or "")
    if not isinstance(insert, Insert) or insert.query is None or insert.overwrite:
        raise GaleneError("A streaming job's DO must be an INSERT INTO … SELECT … FROM S3(…) statement")
    comment = node.args.get("comment")
    return CreateJob(
        name=node.this.name,
        insert=insert,
        properties=property_dict(node.args.get("properties")),
        comment=comment.name if comment is not None else "",
        do_sql=node.meta.get("do_sql") or "",
        sql=sql,
    )


def classify_job_control(node: nodes.JobControl, sql: str) -> Statement:
    where = node.args.get("where")
    cond = where.this if isinstance(where, exp.Where) else None
    # Doris accepts exactly `jobname = '<name>'` here.
    if not (
        isinstance(cond, exp.EQ)
        and isinstance(cond.this, exp.Column)
        and cond.this.name.lower() == "jobname"
        and isinstance(cond.expression, exp.Literal)
        and cond.expression.is_string
    ):
        raise GaleneError("Where clause should looks like: jobName = 'xxx'")
    return JobControl(
        action=node.name.upper(), name=cond.expression.name, if_exists=bool(node.args.get("exists")), sql=sql
    )


def classify_alter_job(node: nodes.AlterJob, sql: str) -> Statement:
    return AlterJob(name=node.this.name, properties=property_dict(node.args.get("properties")), sql=sql)
