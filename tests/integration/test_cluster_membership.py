"""Cluster membership with real processes: one `galene fe` and three `galene be` on loopback.

ALTER SYSTEM ADD BACKEND of several hosts in one statement, Doris' texts for duplicates and
unknown hosts, malformed endpoint tags refused at ADD/MODIFY, MODIFY … SET ('disable_load')
taking a BE out of load routing, SHOW PROC '/backends', and DECOMMISSION that drains a BE
holding unflushed async group-commit WAL (no acknowledged row lost) before the FE drops it by
itself, and CANCEL DECOMMISSION while a drain waits. The BEs find their FE through
`--conf fe_http_port=P` (the README's `galene be` line).
"""

from __future__ import annotations

import json
import socket
import time

import pymysql
import pytest

from tests.support.client import auth_header
from tests.support.cluster import GaleneCluster

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = GaleneCluster(tmp_path_factory.mktemp("cluster-membership"), n_backends=3).start(join=False)
    yield c
    c.stop()


def _error(cluster: GaleneCluster, sql: str) -> str:
    with pytest.raises(pymysql.MySQLError) as info:
        cluster.fe.query(sql)
    return str(info.value.args[1])


def test_add_drop_modify_and_show_proc(cluster):
    c = cluster
    hosts = [f"127.0.0.1:{b.be_http_port}" for b in c.bes]
    # Three hosts in one statement: three backends.
    c.fe.query("ALTER SYSTEM ADD BACKEND " + ", ".join(f"'{h}'" for h in hosts))
    rows = c.wait_backends(lambda rows: len(rows) == 3 and all(r["Alive"] == "true" for r in rows))
    assert sorted(r["HttpPort"] for r in rows) == sorted(str(b.be_http_port) for b in c.bes)
    assert list(rows[0])[-4:] == ["Writable", "LastCanaryTime", "CanaryLatencyMs", "CanaryError"]
    # Doris' texts.
    assert _error(c, f"ALTER SYSTEM ADD BACKEND '{hosts[0]}'") == (
        f"errCode = 2, detailMessage = Same backend already exists[{hosts[0]}]"
    )
    assert _error(c, "ALTER SYSTEM DROP BACKEND '127.0.0.1:1'") == (
        "errCode = 2, detailMessage = backend does not exists[127.0.0.1:1]"
    )
    assert _error(c, "ALTER SYSTEM DROPP BACKEND '127.0.0.1:1', '127.0.0.1:2'").endswith(
        "backend does not exists[127.0.0.1:1]"
    )
    assert _error(c, "CANCEL DECOMMISSION BACKEND '127.0.0.1:1'").endswith(
        "Backend does not exist[127.0.0.1:1]"
    )
    # Malformed endpoint tags are refused when set (the loads would fail later).
    assert _error(
        c, "ALTER SYSTEM ADD BACKEND '127.0.0.1:3' PROPERTIES ('tag.public_endpoint'='nohost')"
    ).endswith("Invalid endpoint: nohost")
    assert _error(
        c, f"ALTER SYSTEM MODIFY BACKEND '{hosts[0]}' SET ('tag.private_endpoint'='10.0.0.1:0')"
    ).endswith("Invalid endpoint port: 0")
    assert "unknown properties" in _error(c, f"ALTER SYSTEM MODIFY BACKEND '{hosts[0]}' SET ('bogus'='1')")
    # SHOW PROC '/backends' returns the same rows.
    with c.fe.mysql() as conn, conn.cursor() as cur:
        cur.execute("SHOW PROC '/backends'")
        names = [d[0] for d in cur.description]
        proc = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    assert [r["BackendId"] for r in proc] == [r["BackendId"] for r in c.backends()]
    assert names == list(c.backends()[0])


def test_disable_load_takes_a_backend_out_of_routing(cluster):
    c = cluster
    c.wait_backends(lambda rows: len(rows) == 3 and all(r["Writable"] == "true" for r in rows))
    c.fe.query("CREATE DATABASE IF NOT EXISTS m")
    c.fe.query(
        "CREATE TABLE IF NOT EXISTS m.plain (id BIGINT) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1"
    )
    off = c.bes[0]
    c.fe.query(f"ALTER SYSTEM MODIFY BACKEND '127.0.0.1:{off.be_http_port}' SET ('disable_load'='true')")
    status = json.loads(c.backend(off)["Status"])
    assert status["isLoadDisabled"] is True and status["isQueryDisabled"] is False
    ports = set()
    for _ in range(12):
        r = c.redirect("m", "plain")
        assert r.status_code == 307, r.text
        ports.add(int(r.headers["location"].rsplit(":", 1)[1].split("/")[0]))
    assert str(off.be_http_port) not in {str(p) for p in ports} and len(ports) == 2
    c.fe.query(f"ALTER SYSTEM MODIFY BACKEND '127.0.0.1:{off.be_http_port}' SET ('disable_load'='false')")
    assert json.loads(c.backend(off)["Status"])["isLoadDisabled"] is False


def _load_direct(be, db: str, table: str, body: bytes, headers: dict[str, str]) -> dict:
    import httpx

    r = httpx.put(
        f"http://127.0.0.1:{be.be_http_port}/api/{db}/{table}/_stream_load",
        content=body,
        headers={**auth_header(), **headers},
        timeout=60,
    )
    r.raise_for_status()
    return r.json()


def _wal_files(be) -> list:
    root = be.data_dir / "be" / "wal"
    return (
        [p for p in root.glob("*/*/*") if p.is_file() and not p.name.endswith(".spare")]
        if root.exists()
        else []
    )


def test_decommission_drains_async_wal_then_drops_and_cancel_undoes_it(cluster):
    c = cluster
    c.wait_backends(lambda rows: len(rows) == 3 and all(r["Alive"] == "true" for r in rows))
    c.fe.query("CREATE DATABASE IF NOT EXISTS m")
    # A long interval: acknowledged async rows stay in the BE's WAL until something flushes them.
    c.fe.query(
        "CREATE TABLE IF NOT EXISTS m.gc (id BIGINT, v VARCHAR(16)) DUPLICATE KEY(id) "
        'DISTRIBUTED BY HASH(id) BUCKETS 2 PROPERTIES ("group_commit_interval_ms"="600000")'
    )
    leaving, staying = c.bes[2], c.bes[1]
    acked = 0
    for i in range(20):
        reply = _load_direct(
            leaving,
            "m",
            "gc",
            f"{i},a\n{i + 1000},b\n".encode(),
            {"column_separator": ",", "group_commit": "async_mode"},
        )
        assert reply["Status"] == "Success", reply
        acked += 2
    assert _wal_files(leaving), "the acknowledged rows should still be in the WAL"
    assert c.fe.query("SELECT COUNT(*) FROM m.gc")[0][0] == 0

    # CANCEL DECOMMISSION while a drain waits: a load still streaming its body holds the drain.
    hold = socket.create_connection(("127.0.0.1", staying.be_http_port))
    head = (
        "PUT /api/m/gc/_stream_load HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        f"Authorization: {auth_header()['Authorization']}\r\ncolumn_separator: ,\r\ngroup_commit: off_mode\r\n\r\n"
    )
    hold.sendall(head.encode() + b"6\r\n77,zz\n\r\n")
    time.sleep(0.5)
    staying_host = f"127.0.0.1:{staying.be_http_port}"
    c.fe.query(f"ALTER SYSTEM DECOMMISSION BACKEND '{staying_host}'")
    row = c.backend(staying)
    assert row["SystemDecommissioned"] == "true"
    # While decommissioned, no load is routed there.
    for _ in range(6):
        r = c.redirect("m", "plain")
        assert f":{staying.be_http_port}/" not in r.headers["location"]
    time.sleep(3)  # a few heartbeats: the load in flight keeps it
    row = c.backend(staying)
    assert row is not None and json.loads(row["Status"])["drain"]["in_flight_loads"] == 1, row
    c.fe.query(f"CANCEL DECOMMISSION BACKEND '{staying_host}'")
    assert c.backend(staying)["SystemDecommissioned"] == "false"
    hold.sendall(b"0\r\n\r\n")
    answer = hold.recv(65536)
    hold.close()
    assert b'"Success"' in answer, answer
    acked += 1

    # DECOMMISSION of the BE holding unflushed WAL: it commits its groups, then is dropped.
    t0 = time.monotonic()
    c.fe.query(f"ALTER SYSTEM DECOMMISSION BACKEND '127.0.0.1:{leaving.be_http_port}'")
    c.wait_backends(lambda rows: all(r["HttpPort"] != str(leaving.be_http_port) for r in rows), timeout=60)
    print(f"decommission drained and dropped in {time.monotonic() - t0:.1f} s")
    assert not _wal_files(leaving)
    assert c.fe.query("SELECT COUNT(*) FROM m.gc")[0][0] == acked
    assert c.backend(staying) is not None  # the cancelled one stays
    # Loads keep working on the BEs left.
    reply = c.load("m", "gc", b"5000,z\n", {"column_separator": ",", "group_commit": "off_mode"})
    assert reply["Status"] == "Success", reply
    assert c.fe.query("SELECT COUNT(*) FROM m.gc")[0][0] == acked + 1
