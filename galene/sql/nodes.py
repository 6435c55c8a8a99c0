"""Galene's own sqlglot expression nodes: the Doris statements and clauses sqlglot has no node for.

Each is a plain tree node (its `arg_types` say what it holds); `galene.sql.dialect` parses them
and prints them back as Doris SQL, `galene.sql.statements` reads them into typed statements.
Their names are the grammar's (`CreateJob` is the parsed `CREATE JOB`); users import the module
and name them qualified (`nodes.CreateJob`), apart from the statement classes of the same name.
"""

from __future__ import annotations

import typing as t

from sqlglot import exp

# --- column definitions, partitions and indexes (CREATE TABLE, ALTER TABLE) ------------------


class AggregationColumnConstraint(exp.Expression, exp.ColumnConstraintKind):
    """`v BIGINT SUM`: the aggregate type of an AGGREGATE KEY value column (this = Var)."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True}


class KeyColumnConstraint(exp.Expression, exp.ColumnConstraintKind):
    """`c INT KEY` in ALTER TABLE … ADD COLUMN: the column joins the table's keys (Doris)."""

    arg_types: t.ClassVar[dict[str, bool]] = {}


class RangePartitionLessThan(exp.Expression):
    """`PARTITION p VALUES LESS THAN (v, …)`; `MAXVALUE` entries are Var('MAXVALUE')."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "expressions": True}


class RangePartitionFixed(exp.Expression):
    """`PARTITION p VALUES [(lower, …), (upper, …))`: lower/upper are lists of expressions."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "lower": True, "upper": True}


class ListPartition(exp.Expression):
    """`PARTITION p VALUES IN (v, …)`; each entry is a literal or a Tuple (multi-column)."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "expressions": True}


class IndexDef(exp.Expression):
    """`INDEX [IF NOT EXISTS] name (c, …) [USING INVERTED | BITMAP | NGRAM_BF] [PROPERTIES (…)]
    [COMMENT '…']` of CREATE TABLE, ALTER TABLE … ADD INDEX and CREATE INDEX … ON t: this =
    Identifier, expressions = column Identifiers, kind = USING's word, properties = Property list."""

    arg_types: t.ClassVar[dict[str, bool]] = {
        "this": True,
        "expressions": True,
        "kind": False,
        "properties": False,
        "comment": False,
        "exists": False,
    }


# --- ALTER TABLE clauses (also CREATE INDEX / DROP INDEX … ON t) ------------------------------


class AlterTableClauses(exp.Expression):
    """`ALTER TABLE t <clause>[, <clause>…]` for the schema-change clauses sqlglot does not read
    (or reads differently): this = Table, expressions = the clause nodes below."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "expressions": True}


class AddColumnsClause(exp.Expression):
    """`ADD COLUMN def [FIRST | AFTER c]` or `ADD COLUMN (def, …) [FIRST | AFTER c]`."""

    arg_types: t.ClassVar[dict[str, bool]] = {"expressions": True, "first": False, "after": False}


class DropColumnClause(exp.Expression):
    arg_types: t.ClassVar[dict[str, bool]] = {"this": True}


class ModifyColumnClause(exp.Expression):
    """`MODIFY COLUMN def [FIRST | AFTER c]`; a def without a type changes the comment only."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "first": False, "after": False}


class RenameColumnClause(exp.Expression):
    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "expression": True}


class ModifyCommentClause(exp.Expression):
    arg_types: t.ClassVar[dict[str, bool]] = {"this": True}


class AddIndexClause(exp.Expression):
    """`ADD INDEX …` (also what `CREATE INDEX name ON t …` means): this = IndexDef."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True}


class DropIndexClause(exp.Expression):
    """`DROP INDEX [IF EXISTS] name` (also `DROP INDEX name ON t`)."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "exists": False}


class ReplaceWithTableClause(exp.Expression):
    """`REPLACE WITH TABLE b [PROPERTIES ('swap' = 'true' | 'false')]`."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "properties": False}


# --- materialized views -----------------------------------------------------------------------


class CreateMaterializedView(exp.Expression):
    """`CREATE MATERIALIZED VIEW [IF NOT EXISTS] mv [(cols)] [BUILD …] [REFRESH …] [[DUPLICATE] KEY(…)]
    [COMMENT '…'] [DISTRIBUTED BY …] [PROPERTIES (…)] AS <query>` (Doris' async MV).

    this = Table, columns = ColumnDefs (names, optional comments), build/method/trigger/unit =
    upper-case strings, interval = int, starts = str, properties = Property nodes (keys, comment,
    distribution, PROPERTIES pairs), expression = the query; meta["query_sql"] its text."""

    arg_types: t.ClassVar[dict[str, bool]] = {
        "this": True,
        "columns": False,
        "exists": False,
        "build": False,
        "method": False,
        "trigger": False,
        "interval": False,
        "unit": False,
        "starts": False,
        "properties": False,
        "expression": True,
    }


class RefreshMaterializedView(exp.Expression):
    """`REFRESH MATERIALIZED VIEW mv [COMPLETE | AUTO]`."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "method": False}


# --- loads, DESC and SHOW ---------------------------------------------------------------------


class LabeledInsertTarget(exp.Expression):
    """The target of `INSERT INTO t [PARTITION (…)] WITH LABEL l [(cols)]`.

    this = Table or Schema (table with its column list), label = Identifier.
    """

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "label": True}


class DescribeAll(exp.Describe):
    """`DESC t ALL` (Doris: every index of the table). Same args as Describe."""


class OrderedShow(exp.Show):
    """A Doris SHOW with ORDER BY (SHOW [STREAM] LOAD, PARTITIONS, DATA): Show's args and `order`."""

    arg_types: t.ClassVar[dict[str, bool]] = {**exp.Show.arg_types, "order": False}


# --- the cluster: backends, compaction, tablets -----------------------------------------------


class AlterSystem(exp.Expression):
    """`ALTER SYSTEM <action> BACKEND 'host:port'[, …] [PROPERTIES (…)] | SET (…)`.

    this = action (ADD, DROP, DROPP, DECOMMISSION, MODIFY), expressions = host:port
    strings, properties = list of Property.
    """

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "expressions": True, "properties": False}


class AdminCompact(exp.Expression):
    """`ADMIN COMPACT TABLE t PARTITION p WHERE TYPE = 'BASE'|'CUMULATIVE'`.

    this = Table, partitions = Identifiers (as written, checked by the executor), where = Where.
    """

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "partitions": False, "where": False}


class ShowTablets(exp.Expression):
    """`SHOW TABLETS FROM [db.]t [PARTITION (p, …)]`: this = Table, partitions = Identifiers."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "partitions": False}


# --- streaming jobs ---------------------------------------------------------------------------


class CreateJob(exp.Expression):
    """`CREATE JOB name [PROPERTIES (…)] ON STREAMING [COMMENT '…'] DO <INSERT …>`.

    this = Identifier, properties = list of Property, comment = Literal, expression = Insert;
    meta["do_sql"] is the statement after DO as written (kept as the job's ExecuteSql).
    """

    arg_types: t.ClassVar[dict[str, bool]] = {
        "this": True,
        "properties": False,
        "comment": False,
        "expression": True,
    }


class JobControl(exp.Expression):
    """`PAUSE | RESUME | DROP JOB [IF EXISTS] WHERE jobname = '…'`: this = the action."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "where": False, "exists": False}


class AlterJob(exp.Expression):
    """`ALTER JOB name PROPERTIES (…)`: this = Identifier, properties = list of Property."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "properties": True}


# --- users and privileges (CREATE/ALTER/DROP USER, roles, GRANT/REVOKE, SET PASSWORD, SHOW GRANTS) ---


class UserIdentity(exp.Expression):
    """`'name'@'host'`, `name@'host'` or `'name'` (host `%`): this = name, host = pattern."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "host": False}


class AccountStatement(exp.Expression):
    """One user/role statement; `this` says which (CREATE USER, ALTER USER, DROP USER,
    SET PASSWORD, CREATE ROLE, ALTER ROLE, DROP ROLE, GRANT, REVOKE, SHOW GRANTS, SHOW ROLES).

    user = UserIdentity; role = the role name (TO/FROM ROLE, DEFAULT ROLE, CREATE/DROP ROLE);
    exists = IF [NOT] EXISTS; password = the clear password (IDENTIFIED BY 'pw', PASSWORD('pw'))
    or hashed = the stored form as written (IDENTIFIED BY PASSWORD '*…', = '*…'); comment;
    privileges = names as written; on = RESOURCE | WORKLOAD GROUP | TABLE, target = the pattern's
    parts (TABLE) or the name; roles = GRANT 'r', … TO (role grants); all = SHOW ALL GRANTS."""

    arg_types: t.ClassVar[dict[str, bool]] = {
        "this": True, "user": False, "role": False, "exists": False, "password": False, "hashed": False,
        "comment": False, "privileges": False, "on": False, "target": False, "roles": False, "all": False,
    }  # fmt: skip
