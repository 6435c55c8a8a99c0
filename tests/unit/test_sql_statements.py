"""Parsing Doris SQL into typed statements: the dialect's grammar and statement routing."""

from __future__ import annotations

import pytest
from sqlglot import exp

from galene.common.errors import GaleneError
from galene.sql.dialect import Galene
from galene.sql.statements.base import Other
from galene.sql.statements.cluster import (
    AlterSystemAddBackend,
    AlterSystemDropBackend,
    AlterSystemModifyBackend,
    ShowBackends,
    ShowFrontends,
    ShowProc,
)
from galene.sql.statements.dml import Insert, Query
from galene.sql.statements.metadata import (
    Describe,
    ShowColumns,
    ShowCreateDatabase,
    ShowCreateTable,
    ShowDatabases,
    ShowTables,
    ShowVariables,
)
from galene.sql.statements.parse import parse_statement
from galene.sql.statements.schema import (
    AlterTableRename,
    AlterTableSetProperties,
    CreateDatabase,
    CreateTable,
    DropDatabase,
    DropTable,
)
from galene.sql.statements.session import Set, Use
from galene.sql.statements.split import split_statements


def test_show_and_describe_forms_classify():
    s = parse_statement("SHOW FULL TABLES FROM db LIKE 'x%'")
    assert isinstance(s, ShowTables) and (s.db, s.full, s.like) == ("db", True, "x%")
    s = parse_statement("show tables")
    assert isinstance(s, ShowTables) and (s.db, s.full, s.like) == (None, False, None)
    s = parse_statement("SHOW FULL COLUMNS FROM t FROM db")
    assert isinstance(s, ShowColumns) and (s.db, s.table, s.full) == ("db", "t", True)
    s = parse_statement("SHOW COLUMNS FROM db.t LIKE 'k%'")
    assert isinstance(s, ShowColumns) and (s.db, s.table, s.full, s.like) == ("db", "t", False, "k%")
    s = parse_statement("DESC db.t")
    assert isinstance(s, Describe) and (s.db, s.table, s.all) == ("db", "t", False)
    s = parse_statement("DESCRIBE t ALL")
    assert isinstance(s, Describe) and (s.db, s.table, s.all) == (None, "t", True)
    s = parse_statement("SHOW CREATE TABLE db.t;")
    assert isinstance(s, ShowCreateTable) and (s.db, s.table) == ("db", "t")
    s = parse_statement("SHOW CREATE TABLE `my tbl`")
    assert isinstance(s, ShowCreateTable) and (s.db, s.table) == (None, "my tbl")
    s = parse_statement("SHOW CREATE DATABASE d1")
    assert isinstance(s, ShowCreateDatabase) and s.name == "d1"
    s = parse_statement("show databases like 'a%'")
    assert isinstance(s, ShowDatabases) and s.like == "a%"
    assert isinstance(parse_statement("SHOW BACKENDS"), ShowBackends)
    assert isinstance(parse_statement("show frontends"), ShowFrontends)
    s = parse_statement("SHOW PROC '/bdbje/12'")
    assert isinstance(s, ShowProc) and s.path == "/bdbje/12"


def test_show_variables():
    s = parse_statement("SHOW GLOBAL VARIABLES LIKE 'sql_mode'")
    assert isinstance(s, ShowVariables) and s.global_ and s.like == "sql_mode"
    s = parse_statement("SHOW VARIABLES WHERE Variable_name = 'autocommit'")
    assert isinstance(s, ShowVariables) and not s.global_ and s.like is None
    assert isinstance(s.where, exp.EQ)


def test_database_statements():
    s = parse_statement("create database if not exists d PROPERTIES ('a'='1', \"b\"=\"2\")")
    assert isinstance(s, CreateDatabase)
    assert (s.name, s.if_not_exists, s.properties) == ("d", True, {"a": "1", "b": "2"})
    s = parse_statement("DROP DATABASE IF EXISTS d FORCE")
    assert isinstance(s, DropDatabase) and (s.name, s.if_exists, s.force) == ("d", True, True)
    s = parse_statement("use `d-1`")
    assert isinstance(s, Use) and s.db == "d-1"


def test_table_statements():
    s = parse_statement("CREATE TABLE IF NOT EXISTS db.t (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
    assert isinstance(s, CreateTable)
    assert (s.db, s.name, s.if_not_exists, s.like, s.query) == ("db", "t", True, None, None)
    s = parse_statement("CREATE TABLE t2 LIKE db.t")
    assert isinstance(s, CreateTable) and s.like == ("db", "t")
    s = parse_statement(
        "CREATE TABLE t3 UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2 "
        "PROPERTIES('replication_num'='1') AS SELECT 1 AS k, 'x' AS v"
    )
    assert isinstance(s, CreateTable) and isinstance(s.query, exp.Select)
    s = parse_statement("DROP TABLE IF EXISTS db.t FORCE")
    assert isinstance(s, DropTable) and (s.db, s.name, s.if_exists, s.force) == ("db", "t", True, True)
    s = parse_statement('ALTER TABLE db.t SET ("group_commit_interval_ms" = "2000")')
    assert isinstance(s, AlterTableSetProperties)
    assert (s.db, s.table, s.properties) == ("db", "t", {"group_commit_interval_ms": "2000"})
    s = parse_statement("alter table t rename t_new")
    assert isinstance(s, AlterTableRename) and (s.db, s.table, s.new_name) == (None, "t", "t_new")


def test_alter_system_backends():
    s = parse_statement(
        "ALTER SYSTEM ADD BACKEND '10.0.0.1:9050' "
        "PROPERTIES('tag.public_endpoint'='1.2.3.4:80', \"tag.private_endpoint\"=\"10.0.0.1:8040\")"
    )
    assert isinstance(s, AlterSystemAddBackend)
    assert s.host_port == "10.0.0.1:9050"
    assert s.properties == {"tag.public_endpoint": "1.2.3.4:80", "tag.private_endpoint": "10.0.0.1:8040"}
    s = parse_statement('ALTER SYSTEM DROPP BACKEND "h1:9050", "h2:9050"')
    assert isinstance(s, AlterSystemDropBackend)
    assert (s.host_port, s.host_ports, s.action) == ("h1:9050", ["h1:9050", "h2:9050"], "DROPP")
    s = parse_statement("ALTER SYSTEM MODIFY BACKEND 'h1:9050' SET ('tag.public_endpoint' = 'x:1')")
    assert isinstance(s, AlterSystemModifyBackend)
    assert (s.host_port, s.properties) == ("h1:9050", {"tag.public_endpoint": "x:1"})
    # Other ALTER SYSTEM forms are not served.
    assert isinstance(parse_statement("ALTER SYSTEM ADD FOLLOWER 'h:9010'"), Other)


def test_insert_forms():
    s = parse_statement("INSERT INTO db.t WITH LABEL my_label (a, b) VALUES (1, 'x'), (2, NULL)")
    assert isinstance(s, Insert)
    assert (s.db, s.table, s.columns, s.label, s.query) == ("db", "t", ["a", "b"], "my_label", None)
    assert [[e.sql() for e in row] for row in s.values] == [["1", "'x'"], ["2", "NULL"]]
    s = parse_statement("insert into t select * from s")
    assert isinstance(s, Insert) and s.columns is None and s.label is None
    assert isinstance(s.query, exp.Select) and s.values is None
    s = parse_statement("INSERT OVERWRITE TABLE t PARTITION (p1, p2) SELECT 1")
    assert isinstance(s, Insert) and s.overwrite and s.partitions == ["p1", "p2"]


def test_queries_set_and_transactions():
    for sql in (
        "SELECT 1",
        "select a from t union all select b from u",
        "WITH x AS (SELECT 1 AS a) SELECT a FROM x",
        "(SELECT 1)",
        "select @@version_comment limit 1",
    ):
        s = parse_statement(sql)
        assert isinstance(s, Query), sql
        assert isinstance(s.expr, exp.Query)
    for sql in (
        "SET NAMES utf8mb4",
        "SET AUTOCOMMIT = 1",
        "SET @@session.autocommit = OFF",
        "SET NAMES utf8mb4 COLLATE utf8mb4_general_ci",
    ):
        s = parse_statement(sql)
        assert isinstance(s, Set) and isinstance(s.expr, exp.Set), sql
    assert parse_statement("ROLLBACK").kind == "ROLLBACK"
    assert parse_statement("commit").kind == "COMMIT"
    assert parse_statement("BEGIN").kind == "BEGIN"


def test_unclassified_statements_are_other_with_their_text():
    for sql in (
        "SHOW TRIGGERS",
        "KILL 12",
        "ALTER TABLE t ADD ROLLUP r (k)",
    ):
        s = parse_statement(sql + ";")
        assert isinstance(s, Other), sql
        assert s.sql == sql


def test_syntax_errors_are_mysql_like():
    with pytest.raises(GaleneError) as info:
        parse_statement("select * frm t")
    assert info.value.code == 1105
    assert info.value.message.startswith("Syntax error in line 1:\nselect * frm t\n")
    assert info.value.message.splitlines()[3] == "Encountered: t"
    with pytest.raises(GaleneError) as info:
        parse_statement("SELECT 1,\n  FROM WHERE")
    assert info.value.message.startswith("Syntax error in line 2:")
    with pytest.raises(GaleneError):
        parse_statement("select 'unterminated")
    with pytest.raises(GaleneError) as info:
        parse_statement("CREATE TABLE t (k INT, v FOOBAR) DISTRIBUTED BY HASH(k)")
    assert "FOOBAR" in info.value.message
    with pytest.raises(GaleneError) as info:
        parse_statement("select 1; select 2")
    with pytest.raises(GaleneError) as info:
        parse_statement("  ;  ")
    assert info.value.code == 1065


def test_split_statements_respects_strings_and_comments():
    text = "select ';' ; -- a comment; still comment\nselect 2;; insert into t values (\"a;b\");"
    assert split_statements(text) == ["select ';'", "select 2", 'insert into t values ("a;b")']
    assert split_statements("") == []


def test_dialect_round_trips_doris_create_table():
    sql = (
        "CREATE TABLE db.t (k LARGEINT NOT NULL, d DATEV2, v BIGINT SUM NULL DEFAULT '0' COMMENT 'c') "
        "AGGREGATE KEY(k, d) PARTITION BY RANGE(d) (PARTITION p1 VALUES LESS THAN ('2020-01-01'), "
        "PARTITION p2 VALUES [('2020-01-01'), ('2021-01-01')), PARTITION p3 VALUES LESS THAN MAXVALUE) "
        "DISTRIBUTED BY HASH(k) BUCKETS AUTO PROPERTIES ('replication_num'='1')"
    )
    import sqlglot

    once = sqlglot.parse_one(sql, read=Galene).sql(dialect=Galene)
    assert "BIGINT SUM NULL" in once and "BUCKETS AUTO" in once and "LESS THAN MAXVALUE" in once
    assert "LARGEINT" in once and "AGGREGATE KEY" in once
    assert sqlglot.parse_one(once, read=Galene).sql(dialect=Galene) == once
