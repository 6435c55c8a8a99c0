"""Users and privileges through real clients against one real Galene (FE + BE + engine).

The node is created with `initial_root_password` and a small `edit_log_roll_num` (checkpoints
happen while the tests run); the last test restarts it and checks that passwords, users, roles
and grants came back from the image and journal exactly. Clients: pymysql and
mysql-connector for SQL, httpx for stream load (FE 307 and straight to the BE), 2PC and the
admin routes.
"""

from __future__ import annotations

import base64
import json

import httpx
import mysql.connector
import pymysql
import pytest

from tests.support.node import GaleneProcess

ROOT_PW = "Root-Pw-7f3a"
DB = "privdb"
TABLE = "(k INT NOT NULL, v VARCHAR(16)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2"
SELECT_DENIED = (
    "errCode = 2, detailMessage = Permission denied: user ['{user}'@'%'] does not have privilege for "
    "[priv predicate: OR, Admin_priv,Select_priv] command on [internal].[{db}].[{table}].[k]"
)


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    proc = GaleneProcess(
        tmp_path_factory.mktemp("galene-privileges"),
        conf={
            "initial_root_password": ROOT_PW,
            "edit_log_roll_num": "5",  # a checkpoint every 5 ops: users and grants cross images
            "disable_auto_compaction": "true",
        },
    )
    proc.start()
    yield proc
    proc.stop()


def connect(node, user="root", password=ROOT_PW, database=None) -> pymysql.Connection:
    return pymysql.connect(
        host="127.0.0.1", port=node.query_port, user=user, password=password, database=database,
        autocommit=True, read_timeout=300,
    )  # fmt: skip


def run(node, sql: str, user="root", password=ROOT_PW, database=None) -> list[tuple]:
    with connect(node, user, password, database) as conn, conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def error(node, sql: str, user: str, password: str, database=None) -> tuple[int, str]:
    with connect(node, user, password, database) as conn, conn.cursor() as cur, pytest.raises(
        pymysql.err.MySQLError
    ) as e:
        cur.execute(sql)
    return e.value.args[0], e.value.args[1]


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def stream_load(node, user: str, password: str, body: bytes, *, via_fe: bool, headers=None) -> httpx.Response:
    """curl --location-trusted: FE 307 -> BE (via_fe), or straight to the BE."""
    h = {**basic(user, password), "Expect": "100-continue", "column_separator": ",", **(headers or {})}
    port = node.http_port if via_fe else node.be_http_port
    url = f"http://127.0.0.1:{port}/api/{DB}/t/_stream_load"
    with httpx.Client(timeout=120) as c:
        r = c.put(url, content=b"" if via_fe else body, headers=h)
        if via_fe and r.status_code == 307:
            r = c.put(r.headers["location"], content=body, headers=h)
        return r


def count(node) -> int:
    return run(node, f"SELECT COUNT(*) FROM {DB}.t")[0][0]


@pytest.fixture(scope="module")
def table(node):
    run(node, f"CREATE DATABASE IF NOT EXISTS {DB}")
    run(node, f"CREATE TABLE IF NOT EXISTS {DB}.t {TABLE}")
    run(node, f"INSERT INTO {DB}.t VALUES (1, 'one'), (2, 'two')")
    return "t"


# --- logins ------------------------------------------------------------------------------------
def test_root_has_the_initial_password_and_wrong_passwords_get_1045(node):
    assert run(node, "SELECT CURRENT_USER()") == [("'root'@'%'",)]
    with pytest.raises(pymysql.err.OperationalError) as e:
        connect(node, password="")
    assert e.value.args == (1045, "Access denied for user 'root'@'127.0.0.1' (using password: NO)")
    with pytest.raises(mysql.connector.Error) as e:
        mysql.connector.connect(host="127.0.0.1", port=node.query_port, user="root", password="nope", use_pure=True)
    assert e.value.errno == 1045
    rows = {r[0]: r for r in run(node, "SHOW ALL GRANTS")}
    assert rows["'root'@'%'"][2] == "Yes" and rows["'admin'@'%'"][2] == "No"
    # The clear password is in no log, and a loopback node gives no open-root warning.
    log = node.log_path.read_text(errors="replace")
    assert ROOT_PW not in log and "root has no password" not in log


def test_create_user_login_and_host_patterns(node):
    run(node, "CREATE USER 'pat'@'10.%' IDENTIFIED BY 'pw1'")
    with pytest.raises(pymysql.err.OperationalError) as e:  # the host pattern does not match 127.0.0.1
        connect(node, "pat", "pw1")
    assert e.value.args[0] == 1045
    run(node, "CREATE USER 'pat'@'127.0.0.1' IDENTIFIED BY 'pw2'")
    assert run(node, "SELECT CURRENT_USER()", "pat", "pw2") == [("'pat'@'127.0.0.1'",)]
    with pytest.raises(pymysql.err.OperationalError):
        connect(node, "pat", "pw1")  # the most specific account is checked, with its password
    assert error(node, "CREATE USER 'pat'@'127.0.0.1'", "root", ROOT_PW) == (
        1105, "errCode = 2, detailMessage = User 'pat'@'127.0.0.1' already exist"
    )
    run(node, "CREATE USER IF NOT EXISTS 'pat'@'127.0.0.1'")
    run(node, "DROP USER 'pat'@'127.0.0.1'")
    with pytest.raises(pymysql.err.OperationalError):
        connect(node, "pat", "pw2")
    assert error(node, "DROP USER 'pat'@'127.0.0.1'", "root", ROOT_PW)[1].endswith(
        "User `pat`@`127.0.0.1` does not exist."
    )
    run(node, "DROP USER IF EXISTS 'pat'@'127.0.0.1'")
    assert error(node, "DROP USER root", "root", ROOT_PW)[1].endswith("Can not drop system user")


def test_set_password_self_and_for_others(node):
    run(node, "CREATE USER sp IDENTIFIED BY 'old'")
    run(node, "SET PASSWORD = PASSWORD('new')", "sp", "old")
    with pytest.raises(pymysql.err.OperationalError):
        connect(node, "sp", "old")
    assert run(node, "SELECT 1", "sp", "new") == [(1,)]
    # Another user's password needs GRANT_PRIV; root's only root may change.
    assert error(node, "SET PASSWORD FOR 'admin' = PASSWORD('x')", "sp", "new") == (
        1227, "errCode = 2, detailMessage = Access denied; you need (at least one of) the (GRANT) privilege(s) for this operation"
    )
    assert error(node, "SET PASSWORD FOR 'root' = PASSWORD('x')", "sp", "new")[1].endswith(
        "Can not set password for root user, except root itself"
    )
    # The hashed form: PASSWORD('abc') = *0D3CED9BEC10A777AEC23CCC353A8C08A633045E
    run(node, "SET PASSWORD FOR 'sp'@'%' = '*0D3CED9BEC10A777AEC23CCC353A8C08A633045E'")
    assert run(node, "SELECT 1", "sp", "abc") == [(1,)]
    assert error(node, "SET PASSWORD FOR sp = '0D3CED'", "root", ROOT_PW) == (
        1372, "errCode = 2, detailMessage = Password hash should be a 41-digit hexadecimal number"
    )
    run(node, "ALTER USER sp IDENTIFIED BY 'altered' COMMENT 'changed'")
    assert run(node, "SELECT 1", "sp", "altered") == [(1,)]
    (row,) = run(node, "SHOW GRANTS FOR sp")
    assert row[:3] == ("'sp'@'%'", "changed", "Yes")


# --- SELECT ------------------------------------------------------------------------------------
def test_select_needs_select_priv_and_sees_only_what_it_may(node, table):
    run(node, "CREATE USER reader IDENTIFIED BY 'rpw'")
    sql = f"SELECT k, v FROM {DB}.t ORDER BY k"
    assert error(node, sql, "reader", "rpw") == (1105, SELECT_DENIED.format(user="reader", db=DB, table="t"))
    conn = mysql.connector.connect(
        host="127.0.0.1", port=node.query_port, user="reader", password="rpw", use_pure=True
    )
    with pytest.raises(mysql.connector.Error) as e:
        conn.cursor().execute(sql)
    assert (e.value.errno, e.value.msg) == (1105, SELECT_DENIED.format(user="reader", db=DB, table="t"))
    conn.close()
    # Nothing of the database shows, and it cannot be used.
    assert DB not in {r[0] for r in run(node, "SHOW DATABASES", "reader", "rpw")}
    assert "information_schema" in {r[0] for r in run(node, "SHOW DATABASES", "reader", "rpw")}
    assert error(node, f"USE {DB}", "reader", "rpw") == (
        1044, f"errCode = 2, detailMessage = Access denied for user 'reader' to database '{DB}'"
    )
    with pytest.raises(pymysql.err.OperationalError) as e:
        connect(node, "reader", "rpw", database=DB)
    assert e.value.args[0] == 1044
    info_tables = f"SELECT table_name FROM information_schema.tables WHERE table_schema = '{DB}'"
    assert run(node, info_tables, "reader", "rpw") == []

    run(node, f"GRANT SELECT_PRIV ON {DB}.t TO reader")
    assert run(node, sql, "reader", "rpw") == [(1, "one"), (2, "two")]
    assert run(node, "SHOW TABLES", "reader", "rpw", database=DB) == [("t",)]
    assert [r[0] for r in run(node, info_tables, "reader", "rpw")] == ["t"]
    conn = mysql.connector.connect(
        host="127.0.0.1", port=node.query_port, user="reader", password="rpw", database=DB, use_pure=True
    )
    cur = conn.cursor()
    cur.execute("SELECT COUNT(*) FROM t")
    assert cur.fetchall() == [(2,)]
    conn.close()
    (row,) = run(node, "SHOW GRANTS", "reader", "rpw")
    assert row[0] == "'reader'@'%'" and row[7] == f"internal.{DB}.t: Select_priv"

    run(node, f"REVOKE SELECT_PRIV ON {DB}.t FROM reader")
    assert error(node, sql, "reader", "rpw")[0] == 1105
    assert run(node, info_tables, "reader", "rpw") == []


# --- loads -------------------------------------------------------------------------------------
def test_stream_load_needs_load_priv_at_the_fe_and_at_the_be(node, table):
    run(node, "CREATE USER loader IDENTIFIED BY 'lpw'")
    before = count(node)
    r = stream_load(node, "loader", "lpw", b"10,a\n", via_fe=True)
    assert r.status_code == 403
    assert r.json()["msg"] == (
        "Access denied; you need (at least one of) the Admin_priv,Load_priv privilege(s) for this operation"
    )
    r = stream_load(node, "loader", "lpw", b"11,b\n", via_fe=False)
    assert r.status_code == 200 and r.json()["Status"] == "Fail"
    assert "Access denied; you need (at least one of) the (priv predicate: OR, Admin_priv,Load_priv)" in r.json()["Message"]
    r = stream_load(node, "loader", "lpw", b"12,c\n", via_fe=False, headers={"group_commit": "async_mode"})
    assert r.json()["Status"] == "Fail" and "Load_priv" in r.json()["Message"]
    assert stream_load(node, "loader", "wrong", b"", via_fe=True).status_code == 401  # bad password: 401
    assert error(node, f"INSERT INTO {DB}.t VALUES (13, 'd')", "loader", "lpw") == (
        1142, f"errCode = 2, detailMessage = LOAD command denied to user 'loader'@'127.0.0.1' for table '{DB}.t'"
    )
    assert count(node) == before

    run(node, f"GRANT LOAD_PRIV ON {DB}.t TO 'loader'@'%'")
    assert stream_load(node, "loader", "lpw", b"10,a\n", via_fe=True).json()["Status"] == "Success"
    assert stream_load(node, "loader", "lpw", b"11,b\n", via_fe=False).json()["Status"] == "Success"
    run(node, f"INSERT INTO {DB}.t VALUES (13, 'd')", "loader", "lpw")
    assert count(node) == before + 3


def test_two_phase_commit_needs_load_priv(node, table):
    run(node, "CREATE USER twopc IDENTIFIED BY 'tpw'")
    run(node, f"GRANT LOAD_PRIV ON {DB}.t TO twopc")
    r = stream_load(node, "twopc", "tpw", b"20,x\n", via_fe=False, headers={"two_phase_commit": "true"})
    assert r.json()["Status"] == "Success", r.text
    txn_id = r.json()["TxnId"]
    run(node, f"REVOKE LOAD_PRIV ON {DB}.t FROM twopc")
    h = {**basic("twopc", "tpw"), "txn_id": str(txn_id), "txn_operation": "commit"}
    r = httpx.put(f"http://127.0.0.1:{node.http_port}/api/{DB}/_stream_load_2pc", headers=h, timeout=60)
    assert r.status_code == 403 and "Load_priv" in r.json()["msg"]
    r = httpx.put(f"http://127.0.0.1:{node.be_http_port}/api/{DB}/_stream_load_2pc", headers=h, timeout=60)
    assert r.json()["status"] != "Success" and "Load_priv" in json.dumps(r.json())
    h.update(basic("root", ROOT_PW))
    r = httpx.put(f"http://127.0.0.1:{node.http_port}/api/{DB}/_stream_load_2pc", headers=h, timeout=60)
    assert r.json()["status"] == "Success", r.text


# --- DDL, admin, grants ------------------------------------------------------------------------
DENIED = "errCode = 2, detailMessage = Access denied; you need (at least one of) the ({}) privilege(s) for this operation"


def test_ddl_and_admin_statements_are_refused_without_their_privileges(node, table):
    run(node, "CREATE USER plain IDENTIFIED BY 'ppw'")
    checks = [
        ("CREATE DATABASE plaindb", 1044, "errCode = 2, detailMessage = Access denied for user 'plain' to database 'plaindb'"),
        (f"CREATE TABLE {DB}.t2 {TABLE}", 1105, DENIED.format("CREATE")),
        (f"DROP TABLE {DB}.t", 1142, f"errCode = 2, detailMessage = DROP command denied to user 'plain'@'127.0.0.1' for table '{DB}: t'"),
        (f"ALTER TABLE {DB}.t SET ('group_commit_interval_ms' = '2000')", 1142,
         f"errCode = 2, detailMessage = ALTER TABLE command denied to user 'plain'@'127.0.0.1' for table '{DB}: t'"),
        ("ALTER SYSTEM ADD BACKEND '127.0.0.1:1'", 1227, DENIED.format("NODE")),
        ("SHOW BACKENDS", 1227, DENIED.format("ADMIN/OPERATOR")),
        ("SET GLOBAL query_timeout = 100", 1227, DENIED.format("ADMIN")),
        ("CREATE USER other", 1227, DENIED.format("GRANT")),
        ("CREATE ROLE other", 1227, DENIED.format("GRANT")),
        ("DROP USER sp", 1227, DENIED.format("DROP USER")),
        ("SHOW ALL GRANTS", 1227, DENIED.format("GRANT")),
        ("SHOW ROLES", 1227, DENIED.format("GRANT")),
        (f"GRANT SELECT_PRIV ON {DB}.* TO plain", 1223,
         "errCode = 2, detailMessage = Access denied; you need all  [Grant_priv, Select_priv] privilege(s) for this operation"),
    ]  # fmt: skip
    for sql, code, text in checks:
        assert error(node, sql, "plain", "ppw") == (code, text), sql
    # The privileges make them pass.
    run(node, f"GRANT CREATE_PRIV, DROP_PRIV ON {DB}.* TO plain")
    run(node, f"CREATE TABLE {DB}.t2 {TABLE}", "plain", "ppw")
    run(node, f"DROP TABLE {DB}.t2", "plain", "ppw")
    run(node, "GRANT ADMIN_PRIV ON *.*.* TO plain")
    run(node, "SET GLOBAL query_timeout = 900", "plain", "ppw")
    assert run(node, "SHOW BACKENDS", "plain", "ppw")
    assert error(node, "ALTER SYSTEM ADD BACKEND '127.0.0.1:1'", "plain", "ppw")[0] == 1227  # NODE stays root's
    assert error(node, "GRANT ADMIN_PRIV ON *.* TO plain", "root", ROOT_PW)[1].endswith(
        "ADMIN_PRIV and NODE_PRIV can only be granted/revoke on/from *.*.*"
    )


def test_http_admin_routes_need_admin(node):
    run(node, "CREATE USER web IDENTIFIED BY 'wpw'")
    fe, be = f"http://127.0.0.1:{node.http_port}", f"http://127.0.0.1:{node.be_http_port}"
    routes = [("POST", f"{fe}/api/_gc?grace_seconds=3600"), ("GET", f"{fe}/api/_journal?limit=1"),
              ("GET", f"{fe}/api/_tasks"), ("POST", f"{be}/api/compaction/run?tablet_id=0&compact_type=base"), ("GET", f"{be}/api/_tasks")]  # fmt: skip
    for method, url in routes:
        assert httpx.request(method, url, timeout=60).status_code == 401, url
        r = httpx.request(method, url, headers=basic("web", "wpw"), timeout=60)
        assert r.status_code == 403, url
        assert "Node_priv,Admin_priv" in r.text
        assert httpx.request(method, url, headers=basic("root", ROOT_PW), timeout=120).status_code == 200, url
    assert httpx.get(f"{fe}/dump", headers=basic("web", "wpw"), timeout=60).status_code == 403
    assert httpx.get(f"{fe}/api/health", timeout=60).status_code == 200  # health stays open
    # Compaction's read-only GETs are open, as in Doris by default (SHOW TABLETS hands out the URL).
    assert httpx.get(f"{be}/api/compaction/run_status", timeout=60).status_code == 200


def test_roles_grant_their_privileges(node, table):
    run(node, "CREATE ROLE analyst COMMENT 'reads privdb'")
    run(node, f"GRANT SELECT_PRIV ON {DB}.* TO ROLE 'analyst'")
    run(node, "CREATE USER ana IDENTIFIED BY 'apw' DEFAULT ROLE 'analyst'")
    run(node, "CREATE USER ana2 IDENTIFIED BY 'apw'")
    run(node, "GRANT 'analyst' TO ana2")
    for user in ("ana", "ana2"):
        assert run(node, f"SELECT COUNT(*) > 0 FROM {DB}.t", user, "apw") == [(1,)]
    roles = {r[0]: r for r in run(node, "SHOW ROLES")}
    assert roles["analyst"][1] == "reads privdb" and roles["analyst"][2] == "'ana'@'%','ana2'@'%'"
    assert roles["analyst"][5] == f"internal.{DB}: Select_priv"
    assert {"operator", "admin"} <= set(roles)
    run(node, "REVOKE 'analyst' FROM ana2")
    assert error(node, f"SELECT k FROM {DB}.t", "ana2", "apw")[0] == 1105
    assert error(node, "CREATE ROLE admin", "root", ROOT_PW)[1].endswith("Can not create role: admin")
    run(node, "CREATE ROLE temp")
    run(node, "DROP ROLE temp")
    assert error(node, "DROP ROLE temp", "root", ROOT_PW)[1].endswith("Role temp does not exist")


# --- persistence (last: restarts the node) -------------------------------------------------------
def test_users_passwords_and_grants_survive_checkpoints_and_restart(node, table):
    run(node, "CREATE USER keeper IDENTIFIED BY 'kpw'")
    run(node, f"GRANT SELECT_PRIV, LOAD_PRIV ON {DB}.* TO keeper")
    run(node, "SET PASSWORD = PASSWORD('Root-Pw-2')")  # root changes the initial password
    root_pw = "Root-Pw-2"
    grants = sorted(run(node, "SHOW ALL GRANTS", password=root_pw))
    roles = sorted(run(node, "SHOW ROLES", password=root_pw))
    images = sorted(p.name for p in (node.data_dir / "fe-meta" / "image").glob("image.*") if p.name != "image.ckpt")
    assert images, "edit_log_roll_num=5 should have written images"

    node.stop()
    node.start()
    # initial_root_password is still configured but applies only to a new cluster.
    with pytest.raises(pymysql.err.OperationalError):
        connect(node, password=ROOT_PW)
    assert sorted(run(node, "SHOW ALL GRANTS", password=root_pw)) == grants
    assert sorted(run(node, "SHOW ROLES", password=root_pw)) == roles
    assert run(node, f"SELECT COUNT(*) > 0 FROM {DB}.t", "keeper", "kpw") == [(1,)]
    assert stream_load(node, "keeper", "kpw", b"30,z\n", via_fe=True).json()["Status"] == "Success"
    assert error(node, f"SELECT k FROM {DB}.t", "ana2", "apw")[0] == 1105
    assert ROOT_PW not in node.log_path.read_text(errors="replace")
