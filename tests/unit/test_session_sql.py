"""Session-level SQL of the MySQL endpoint (galene/fe/mysql/session_sql.py, over the variables of
galene/fe/mysql/variables.py): SET of unknown variables, sql_mode as clients send it, SHOW WARNINGS /
ERRORS, SET GLOBAL's privilege check."""

from __future__ import annotations

import pytest

from galene.common.errors import GaleneError
from galene.fe.mysql.session_sql import SessionInfo, SessionSql
from galene.fe.mysql.variables import GlobalVariables, SessionVariables


def _session() -> SessionSql:
    return SessionSql(SessionVariables(GlobalVariables(version="5.7.99", version_comment="Doris")))


INFO = SessionInfo(user="root", host="127.0.0.1", database=None, connection_id=1, is_admin=lambda: True)


def test_set_unknown_variable_is_dorises_error_and_doris_variables_are_kept():
    s = _session()
    with pytest.raises(GaleneError) as e:
        s.handle("SET foo_bar = 1", INFO)
    assert e.value.code == 1193 and e.value.message == "Unknown system variable 'foo_bar'"
    s.handle("SET enable_nereids_planner = true", INFO)
    s.handle("SET query_timeout = 60", INFO)
    shown = dict(s.handle("SHOW VARIABLES", INFO).rows)
    assert shown["enable_nereids_planner"] == "true" and shown["query_timeout"] == "60"


def test_set_sql_mode_as_connector_j_sends_it():
    """MariaDB Connector/J's connect statement: a CONCAT over @@sql_mode; Doris keeps the modes
    as a canonical list (SqlModeHelper) and refuses an unknown one with 1231."""
    s = _session()
    s.handle("set autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES')", INFO)
    assert s.handle("SELECT @@sql_mode, @@autocommit", INFO).rows == [("ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES", 1)]
    s.handle("SET sql_mode = ''", INFO)
    s.handle("SET SESSION sql_mode = CONCAT(@@sql_mode, ',STRICT_TRANS_TABLES')", INFO)
    assert s.handle("SELECT @@sql_mode", INFO).rows == [("STRICT_TRANS_TABLES",)]
    s.handle("SET sql_mode = concat_ws(',', 'pipes_as_concat', @@session.sql_mode, 'ansi_quotes')", INFO)
    assert s.variables.get("sql_mode") == "ANSI_QUOTES,PIPES_AS_CONCAT,STRICT_TRANS_TABLES"
    s.handle("SET @suffix = ',NO_ENGINE_SUBSTITUTION'", INFO)
    s.handle("SET sql_mode = CONCAT('TRADITIONAL', @suffix)", INFO)
    assert s.variables.get("sql_mode") == (
        "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION,NO_ZERO_DATE,NO_ZERO_IN_DATE,STRICT_ALL_TABLES,"
        "STRICT_TRANS_TABLES,TRADITIONAL"
    )
    with pytest.raises(GaleneError) as e:
        s.handle("SET sql_mode = concat(@@sql_mode, ',NO_SUCH_MODE')", INFO)
    assert e.value.code == 1231 and e.value.message == "Variable 'sql_mode' can't be set to the value of 'NO_SUCH_MODE'"
    s.handle("SET @nothing = NULL", INFO)
    s.handle("SET @joined = concat('a', @nothing)", INFO)  # NULL in, NULL out, as MySQL
    assert s.handle("SELECT @joined", INFO).rows == [(None,)]


def test_show_warnings_and_errors_list_the_last_error():
    s = _session()
    assert s.handle("SHOW WARNINGS", INFO).rows == []
    s.diagnostics = [("Error", 1105, "errCode = 2, detailMessage = boom")]
    assert s.handle("SHOW WARNINGS", INFO).rows == [("Error", 1105, "errCode = 2, detailMessage = boom")]
    assert s.handle("SHOW ERRORS", INFO).rows == [("Error", 1105, "errCode = 2, detailMessage = boom")]
    assert [c for c, _ in s.handle("SHOW ERRORS", INFO).columns] == ["Level", "Code", "Message"]


def test_set_global_needs_the_executors_admin_check():
    """Whether a session may SET GLOBAL is the executor's answer: a SessionInfo without that
    check is an error (it used to mean "yes"), and a non-admin is refused with Doris' 1227."""
    with pytest.raises(TypeError):
        SessionInfo(user="bob", host="127.0.0.1", database=None, connection_id=2)  # type: ignore[call-arg]
    s = _session()
    bob = SessionInfo(user="bob", host="127.0.0.1", database=None, connection_id=2, is_admin=lambda: False)
    with pytest.raises(GaleneError) as e:
        s.handle("SET GLOBAL query_timeout = 60", bob)
    assert e.value.code == 1227
    s.handle("SET query_timeout = 60", bob)  # the session's own: no privilege needed
    s.handle("SET GLOBAL query_timeout = 90", INFO)
    assert s.variables.global_variables.values["query_timeout"] == 90
