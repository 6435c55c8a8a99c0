"""Users and privileges, pure: host patterns, privilege resolution through grants and roles,
Doris' refusal texts, GRANT rules, SHOW GRANTS rows, and the statement checks (galene/fe/auth.py).

The state is built with the journal ops the FE logs (apply_op), so these also pin the ops'
semantics."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import sqlglot

from galene.catalog import ops
from galene.catalog.apply import apply_op
from galene.catalog.model import CatalogState, Column, Database, Role, Table, UserAccount
from galene.common.errors import GaleneError
from galene.common.types import ColumnType
from galene.fe import auth, grants
from galene.fe import authorize as authz
from galene.sql.dialect import Galene
from galene.sql.statements.parse import parse_statement


@dataclass
class Ctx:
    user: str
    user_host: str = "%"
    client_host: str = "127.0.0.1"
    database: str | None = "db"


def table(table_id: int, name: str, cols=("k", "v")) -> Table:
    return Table(
        id=table_id,
        db_id=1,
        name=name,
        columns=[Column(name=c, type=ColumnType(name="INT")) for c in cols]
        + [Column(name="__DORIS_DELETE_SIGN__", type=ColumnType(name="TINYINT"), hidden=True)],
    )


@pytest.fixture
def state() -> CatalogState:
    s = CatalogState()
    apply_op(s, ops.CreateDb(db=Database(id=1, name="db")))
    apply_op(s, ops.CreateDb(db=Database(id=2, name="other")))
    for t in (table(10, "t"), table(11, "u", ("a", "b", "c"))):
        apply_op(s, ops.CreateTable(table=t))
    for name, host in (("alice", "%"), ("bob", "%"), ("bob", "10.0.0.%"), ("bob", "10.0.0.7"), ("carol", "%")):
        apply_op(s, ops.CreateUser(account=UserAccount(name=name, host=host, password=auth.native_hash(name))))
    return s


def ident(name: str, host: str = "%") -> auth.Identity:
    return auth.Identity(name, host)


def grant(s: CatalogState, who: str, target: str, *privs: str, role: str | None = None, kind: str = "TABLE"):
    apply_op(
        s,
        ops.GrantPrivileges(
            user=None if role else auth.account_key(who, "%"), role=role, kind=kind, target=target,
            privileges=list(privs),
        ),
    )  # fmt: skip


def select(s: CatalogState, who: auth.Identity, sql: str, db: str | None = "db") -> None:
    authz.check_select(s, who, sqlglot.parse_one(sql, read=Galene), db)


# --- identities and passwords --------------------------------------------------------------------
def test_native_hash_is_mysqls_and_empty_stays_empty():
    assert auth.native_hash("") == ""
    # SELECT PASSWORD('123456') in MySQL: *6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9
    assert auth.native_hash("123456") == "6bb4837eb74329105ee4568dda7dc67ed2ca2ad9"
    assert auth.parse_hashed_password("*6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9") == auth.native_hash("123456")
    with pytest.raises(GaleneError) as e:
        auth.parse_hashed_password("6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9")
    assert (e.value.code, e.value.message) == (1372, "Password hash should be a 41-digit hexadecimal number")
    assert auth.initial_root_hash("*6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9") == auth.native_hash("123456")
    assert auth.initial_root_hash("123456") == auth.native_hash("123456")


@pytest.mark.parametrize(
    "pattern, host, matches",
    [
        ("%", "1.2.3.4", True),
        ("10.0.0.%", "10.0.0.9", True),
        ("10.0.0.%", "10.0.1.9", False),
        ("10.0.0._", "10.0.0.9", True),
        ("10.0.0._", "10.0.0.19", False),
        ("10.0.0.7", "10.0.0.7", True),
        ("localhost", "127.0.0.1", True),
        ("a.b", "aXb", False),  # '.' is literal
    ],
)
def test_host_patterns(pattern, host, matches):
    assert auth.host_matches(pattern, host) is matches


def test_login_picks_the_most_specific_account(state):
    assert auth.login_account(state, "bob", "10.0.0.7").host == "10.0.0.7"
    assert auth.login_account(state, "bob", "10.0.0.8").host == "10.0.0.%"
    assert auth.login_account(state, "bob", "192.168.1.1").host == "%"
    assert auth.login_account(state, "nobody", "127.0.0.1") is None
    assert auth.login_account(state, "root", "127.0.0.1").password == ""  # the built-in root


def test_http_account_checks_the_password_of_the_matching_account(state):
    assert auth.http_account(state, "bob", "bob", "10.0.0.7").host == "10.0.0.7"
    assert auth.http_account(state, "bob", "wrong", "10.0.0.7") is None
    # Relayed by a BE (no client address): any account of the name whose password matches.
    assert auth.http_account(state, "alice", "alice", None).host == "%"
    assert auth.http_account(state, "alice@default_cluster", "alice", None) is not None
    assert auth.http_account(state, "alice", "", None) is None


def test_identity_texts():
    assert str(auth.Identity("u", "%")) == "'u'@'%'"
    assert auth.identity_of("'u'@'10.%'") == auth.Identity("u", "10.%")
    assert auth.identity_of("u") == auth.Identity("u", "%")
    assert auth.identity_of(UserAccount(name="x", host="h")) == auth.Identity("x", "h")


# --- privilege resolution ------------------------------------------------------------------------
def test_builtin_root_and_admin(state):
    assert auth.has_global(state, auth.ROOT, auth.OPERATOR) and auth.is_admin(state, auth.ROOT)
    assert auth.is_admin(state, ident("admin")) and not auth.has_global(state, ident("admin"), auth.OPERATOR)
    assert not auth.is_admin(state, ident("alice"))


def test_grants_apply_at_their_level_and_below(state):
    alice = ident("alice")
    assert not auth.has_table(state, alice, "db", "t", auth.SELECT)
    grant(state, "alice", "internal.db.t", "SELECT_PRIV")
    assert auth.has_table(state, alice, "db", "t", auth.SELECT)
    assert not auth.has_table(state, alice, "db", "u", auth.SELECT)
    assert not auth.has_db(state, alice, "db", auth.SELECT)
    assert not auth.has_table(state, alice, "db", "t", auth.LOAD)
    grant(state, "alice", "internal.db.*", "LOAD_PRIV")
    assert auth.has_table(state, alice, "db", "u", auth.LOAD) and auth.has_db(state, alice, "db", auth.LOAD)
    assert not auth.has_table(state, alice, "other", "x", auth.LOAD)
    grant(state, "alice", "internal.*.*", "ALTER_PRIV")
    assert auth.has_table(state, alice, "other", "x", auth.ALTER)
    grant(state, "alice", "*.*.*", "DROP_PRIV")
    assert auth.has_global(state, alice, auth.DROP)


def test_roles_add_their_grants_and_dropping_a_role_takes_them(state):
    apply_op(state, ops.CreateRole(role=Role(name="analyst")))
    grant(state, "", "internal.db.*", "SELECT_PRIV", role="analyst")
    carol = ident("carol")
    assert not auth.has_table(state, carol, "db", "t", auth.SELECT)
    apply_op(state, ops.GrantRoles(user=carol.key, roles=["analyst"]))
    assert auth.has_table(state, carol, "db", "t", auth.SELECT)
    apply_op(state, ops.RevokeRoles(user=carol.key, roles=["analyst"]))
    assert not auth.has_table(state, carol, "db", "t", auth.SELECT)
    apply_op(state, ops.GrantRoles(user=carol.key, roles=["analyst"]))
    apply_op(state, ops.DropRole(name="analyst"))
    assert state.accounts[carol.key].roles == [] and not auth.has_table(state, carol, "db", "t", auth.SELECT)


def test_revoke_removes_privileges_and_empty_entries(state):
    grant(state, "alice", "internal.db.*", "SELECT_PRIV", "LOAD_PRIV")
    key = auth.account_key("alice", "%")
    assert state.accounts[key].grants.tables["internal.db.*"] == ["SELECT_PRIV", "LOAD_PRIV"]
    apply_op(state, ops.RevokePrivileges(user=key, role=None, kind="TABLE", target="internal.db.*", privileges=["SELECT_PRIV"]))
    assert state.accounts[key].grants.tables["internal.db.*"] == ["LOAD_PRIV"]
    apply_op(state, ops.RevokePrivileges(user=key, role=None, kind="TABLE", target="internal.db.*", privileges=["LOAD_PRIV"]))
    assert "internal.db.*" not in state.accounts[key].grants.tables


def test_can_see(state):
    alice = ident("alice")
    assert auth.can_see(state, alice, "information_schema") and auth.can_see(state, alice, "information_schema", "tables")
    assert not auth.can_see(state, alice, "db")
    grant(state, "alice", "internal.db.u", "LOAD_PRIV")
    assert auth.can_see(state, alice, "db")  # through a table of it
    assert auth.can_see(state, alice, "db", "u") and not auth.can_see(state, alice, "db", "t")
    assert auth.can_see(state, "'alice'@'%'", "db", "u")  # an account key works too
    assert auth.can_see(state, auth.ROOT, "other", "anything")


# --- SELECT --------------------------------------------------------------------------------------
def test_select_without_privilege_names_the_first_column_read(state):
    alice = ident("alice")
    with pytest.raises(auth.AccessDenied) as e:
        select(state, alice, "SELECT v, k FROM t")
    assert e.value.code == 1105
    assert e.value.mysql_text() == (
        "errCode = 2, detailMessage = Permission denied: user ['alice'@'%'] does not have privilege for "
        "[priv predicate: OR, Admin_priv,Select_priv] command on [internal].[db].[t].[k]"
    )
    with pytest.raises(auth.AccessDenied) as e:
        select(state, alice, "SELECT * FROM db.u")
    assert e.value.message.endswith("[internal].[db].[u].[a]")
    with pytest.raises(auth.AccessDenied) as e:
        select(state, alice, "SELECT x.c FROM t JOIN u AS x ON 1 = 1", db="db")
    assert e.value.message.endswith("on table t for this operation")  # t first: no column of it is read
    with pytest.raises(auth.AccessDenied) as e:
        select(state, alice, "SELECT COUNT(*) FROM t")
    assert e.value.message == (
        "Access denied; you need (at least one of) the (Admin_priv,Select_priv) privilege(s) on table t for this operation"
    )


def test_select_checks_every_table_but_not_ctes_functions_or_information_schema(state):
    alice = ident("alice")
    grant(state, "alice", "internal.db.t", "SELECT_PRIV")
    select(state, alice, "SELECT k FROM t")
    select(state, alice, "WITH u AS (SELECT k FROM t) SELECT * FROM u")  # u here is the CTE
    select(state, alice, "SELECT * FROM information_schema.tables")
    select(state, alice, "SELECT * FROM S3('uri' = 's3://b/k', 'format' = 'csv')")
    select(state, alice, "SELECT 1")
    with pytest.raises(auth.AccessDenied) as e:
        select(state, alice, "SELECT k FROM t WHERE k IN (SELECT b FROM db.u)")
    assert e.value.message.endswith("[internal].[db].[u].[b]")
    select(state, auth.ROOT, "SELECT * FROM other.anything")


# --- statements ----------------------------------------------------------------------------------
def authorize(state: CatalogState, who: str, sql: str, db: str | None = "db") -> None:
    authz.authorize(state, Ctx(user=who, database=db), parse_statement(sql))


@pytest.mark.parametrize(
    "sql, code, text",
    [
        ("CREATE DATABASE d2", 1044, "Access denied for user 'alice' to database 'd2'"),
        ("DROP DATABASE db", 1044, "Access denied for user 'alice' to database 'db'"),
        ("USE db", 1044, "Access denied for user 'alice' to database 'db'"),
        ("SHOW TABLES FROM db", 1044, "Access denied for user 'alice' to database 'db'"),
        ("CREATE TABLE t2 (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1",
         1105, "Access denied; you need (at least one of) the (CREATE) privilege(s) for this operation"),
        ("DROP TABLE t", 1142, "DROP command denied to user 'alice'@'127.0.0.1' for table 'db: t'"),
        ("ALTER TABLE t SET ('k' = 'v')", 1142,
         "ALTER TABLE command denied to user 'alice'@'127.0.0.1' for table 'db: t'"),
        ("INSERT INTO t VALUES (1, 2)", 1142, "LOAD command denied to user 'alice'@'127.0.0.1' for table 'db.t'"),
        ("DELETE FROM t WHERE k = 1", 1142, "LOAD command denied to user 'alice'@'127.0.0.1' for table 'db.t'"),
        ("TRUNCATE TABLE t", 1142, "LOAD command denied to user 'alice'@'127.0.0.1' for table 'db.t'"),
        ("DESC t", 1142, "DESCRIBE command denied to user 'alice'@'127.0.0.1' for table 'db: t'"),
        ("SHOW CREATE TABLE t", 1142,
         "SHOW CREATE TABLE command denied to user 'alice'@'127.0.0.1' for table 'db: t'"),
        ("ALTER SYSTEM ADD BACKEND '127.0.0.1:9050'", 1227,
         "Access denied; you need (at least one of) the (NODE) privilege(s) for this operation"),
        ("SHOW BACKENDS", 1227,
         "Access denied; you need (at least one of) the (ADMIN/OPERATOR) privilege(s) for this operation"),
        ("ADMIN COMPACT TABLE t PARTITION t WHERE TYPE = 'BASE'", 1227,
         "Access denied; you need (at least one of) the (ADMIN) privilege(s) for this operation"),
        ("SHOW PROC '/bdbje'", 1227,
         "Access denied; you need (at least one of) the (ADMIN) privilege(s) for this operation"),
    ],
)  # fmt: skip
def test_statement_refusals(state, sql, code, text):
    with pytest.raises(auth.AccessDenied) as e:
        authorize(state, "alice", sql)
    assert (e.value.code, e.value.message) == (code, text)
    assert e.value.mysql_text() == f"errCode = 2, detailMessage = {text}"
    authorize(state, "root", sql)  # root may do all of it


def test_statements_pass_with_the_privilege(state):
    grant(state, "alice", "internal.db.*", "SELECT_PRIV", "LOAD_PRIV", "CREATE_PRIV", "DROP_PRIV", "ALTER_PRIV")
    for sql in (
        "USE db", "SHOW TABLES", "CREATE TABLE t2 (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1", "DROP TABLE t",
        "INSERT INTO t SELECT k, v FROM u", "UPDATE t SET v = 1 WHERE k = 2", "DESC t", "TRUNCATE TABLE t",
        "CREATE TABLE t3 AS SELECT * FROM u", "DROP DATABASE db",
    ):  # fmt: skip
        authorize(state, "alice", sql)
    # INSERT … SELECT needs SELECT on what it reads.
    with pytest.raises(auth.AccessDenied):
        authorize(state, "alice", "INSERT INTO t SELECT 1, 2 FROM other.x")


def test_admin_user_is_not_operator(state):
    authorize(state, "admin", "DROP TABLE t")
    with pytest.raises(auth.AccessDenied):
        authorize(state, "admin", "ALTER SYSTEM DROP BACKEND '127.0.0.1:9050'")


# --- GRANT rules ---------------------------------------------------------------------------------
def test_privilege_names_and_patterns():
    assert grants.parse_privileges(["select_priv", "Load_Priv"]) == ["SELECT_PRIV", "LOAD_PRIV"]
    assert grants.parse_privileges(["ALL"]) == ["SELECT_PRIV", "LOAD_PRIV", "ALTER_PRIV", "CREATE_PRIV", "DROP_PRIV"]
    with pytest.raises(GaleneError, match="Unknown privilege type OPERATOR_PRIV"):
        grants.parse_privileges(["OPERATOR_PRIV"])
    assert grants.table_pattern(["db", "*"]) == "internal.db.*"
    assert grants.table_pattern(["*", "*"]) == "internal.*.*"  # Doris: two parts = the internal catalog
    assert grants.table_pattern(["*", "*", "*"]) == "*.*.*"
    assert grants.pattern_level("internal.db.t") == "TABLE"
    with pytest.raises(GaleneError, match=r"Do not support format: internal\.\*\.t"):
        grants.table_pattern(["*", "t"])


def test_grant_rules(state):
    root, alice = auth.ROOT, ident("alice")
    with pytest.raises(GaleneError, match=r"ADMIN_PRIV and NODE_PRIV can only be granted/revoke on/from \*\.\*\.\*"):
        grants.check_grant_rules(state, root, "TABLE", "internal.*.*", ["ADMIN_PRIV"])
    with pytest.raises(GaleneError, match="Can not grant/revoke Usage_priv to/from any other users or roles"):
        grants.check_grant_rules(state, root, "TABLE", "internal.db.*", ["USAGE_PRIV"])
    grants.check_grant_rules(state, root, "TABLE", "*.*.*", ["NODE_PRIV"])
    with pytest.raises(GaleneError, match="Only user with NODE_PRIV can grant/revoke NODE_PRIV to other user"):
        grants.check_grant_rules(state, ident("admin"), "TABLE", "*.*.*", ["NODE_PRIV"])
    with pytest.raises(auth.AccessDenied) as e:
        grants.check_grant_rules(state, alice, "TABLE", "internal.db.*", ["SELECT_PRIV"])
    assert (e.value.code, e.value.message) == (
        1223, "Access denied; you need all  [Grant_priv, Select_priv] privilege(s) for this operation"
    )
    # GRANT_PRIV with the privilege at the level (or above) lets a user pass it on; not LOAD.
    grant(state, "alice", "internal.db.*", "SELECT_PRIV", "GRANT_PRIV")
    grants.check_grant_rules(state, alice, "TABLE", "internal.db.t", ["SELECT_PRIV"])
    with pytest.raises(auth.AccessDenied):
        grants.check_grant_rules(state, alice, "TABLE", "internal.db.*", ["LOAD_PRIV"])


# --- SHOW GRANTS / SHOW ROLES --------------------------------------------------------------------
def test_show_grants_rows(state):
    row = grants.grants_row(state, state.accounts["'root'@'%'"])
    assert dict(zip(grants.GRANTS_COLUMNS, row)) == {
        "UserIdentity": "'root'@'%'", "Comment": "ROOT", "Password": "No", "Roles": "operator",
        "GlobalPrivs": "Node_priv,Admin_priv", "CatalogPrivs": None,
        "DatabasePrivs": "internal.information_schema: Select_priv; internal.mysql: Select_priv",
        "TablePrivs": None, "ColPrivs": None, "ResourcePrivs": "%: Node_priv,Admin_priv",
        "CloudClusterPrivs": None, "CloudStagePrivs": None, "StorageVaultPrivs": None,
        "WorkloadGroupPrivs": "%: Node_priv,Admin_priv; normal: Usage_priv", "ComputeGroupPrivs": None,
    }  # fmt: skip
    grant(state, "alice", "internal.db.t", "SELECT_PRIV", "LOAD_PRIV")
    grant(state, "alice", "internal.*.*", "SHOW_VIEW_PRIV")
    grant(state, "alice", "spark", "USAGE_PRIV", kind="RESOURCE")
    row = dict(zip(grants.GRANTS_COLUMNS, grants.grants_row(state, state.accounts["'alice'@'%'"])))
    assert row["Password"] == "Yes" and row["GlobalPrivs"] is None
    assert row["CatalogPrivs"] == "internal: Show_view_priv"
    assert row["TablePrivs"] == "internal.db.t: Select_priv,Load_priv"
    assert row["ResourcePrivs"] == "spark: Usage_priv"


def test_show_roles_rows(state):
    apply_op(state, ops.CreateRole(role=Role(name="r", comment="readers")))
    grant(state, "", "internal.db.*", "SELECT_PRIV", role="r")
    apply_op(state, ops.GrantRoles(user="'carol'@'%'", roles=["r"]))
    rows = {r[0]: dict(zip(grants.ROLES_COLUMNS, r)) for r in (grants.roles_row(state, x) for x in state.roles.values())}
    assert rows["r"]["Comment"] == "readers" and rows["r"]["Users"] == "'carol'@'%'"
    assert rows["r"]["DatabasePrivs"] == "internal.db: Select_priv"
    assert rows["operator"]["GlobalPrivs"] == "Node_priv,Admin_priv" and rows["operator"]["Users"] == "'root'@'%'"


# --- start-up and logs ---------------------------------------------------------------------------
def test_open_root_warning(state):
    assert auth.open_root_warning(state, "127.0.0.1") is None
    assert "root has no password" in auth.open_root_warning(state, "10.1.2.3")
    apply_op(state, ops.SetUserPassword(user="root", password_sha1=auth.native_hash("x")))
    assert auth.open_root_warning(state, "10.1.2.3") is None


def test_passwords_never_reach_logs():
    assert "s3cret" not in auth.redact_passwords("CREATE USER 'u' IDENTIFIED BY 's3cret'")
    assert "s3cret" not in auth.redact_passwords("set password for u = PASSWORD('s3cret')")
    assert auth.redact_passwords("SELECT 1") == "SELECT 1"
    printed = parse_statement("CREATE USER 'u'@'%' IDENTIFIED BY 's3cret'")
    assert printed.password == "s3cret"  # hashed by the executor, never stored
    assert "s3cret" not in sqlglot.parse_one("ALTER USER u IDENTIFIED BY 's3cret'", read=Galene).sql(dialect=Galene)


def test_user_statements_are_left_to_their_own_rules(state):
    # CREATE ROLE r names no table: the executor's GRANT_PRIV rule answers it, not a CREATE check.
    for sql in ("CREATE ROLE r", "DROP ROLE r", "CREATE USER x", "GRANT SELECT_PRIV ON db.* TO x", "SHOW ROLES"):
        authorize(state, "alice", sql)


def test_initial_root_password_applies_to_a_new_cluster_only(state, caplog):
    class Catalog:
        def __init__(self):
            self.state, self.calls = state, []

        def set_password(self, name, host, hashed):
            self.calls.append((name, host, hashed))
            apply_op(self.state, ops.SetUserPassword(user=name, host=host, password_sha1=hashed))

    catalog = Catalog()
    auth.on_fe_start(catalog, fresh=False, initial_root_password="pw", host="10.0.0.1")
    assert catalog.calls == [] and "root has no password" in caplog.text  # an existing cluster: not applied
    caplog.clear()
    auth.on_fe_start(catalog, fresh=True, initial_root_password="pw", host="10.0.0.1")
    assert catalog.calls == [("root", "%", auth.native_hash("pw"))]
    assert "root has no password" not in caplog.text and "pw" not in caplog.text.replace("password", "")
