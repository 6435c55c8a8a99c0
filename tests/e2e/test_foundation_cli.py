"""The foundation acceptance scenario, driven exactly as a new user would: the mariadb CLI
and curl against a standalone Galene, then a restart."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.support.node import GaleneProcess

pytestmark = pytest.mark.slow

MARIADB = shutil.which("mariadb") or shutil.which("mysql")


def cli(g: GaleneProcess, sql: str, database: str | None = None) -> str:
    assert MARIADB, "the mariadb CLI is required (make test installs mariadb-client)"
    cmd = [MARIADB, "-h127.0.0.1", f"-P{g.query_port}", "-uroot", "--batch", "--skip-ssl", "-e", sql]
    if database:
        cmd.insert(4, f"-D{database}")
    res = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
    assert res.returncode == 0, res.stderr
    return res.stdout


def curl_load(g: GaleneProcess, db: str, table: str, path, label: str) -> dict:
    res = subprocess.run(
        [
            "curl", "-sS", "--location-trusted", "-u", "root:", "-H", f"label:{label}",
            "-H", "column_separator:,", "-T", str(path),
            f"http://127.0.0.1:{g.http_port}/api/{db}/{table}/_stream_load",
        ],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_cli_curl_unique_table_survives_restart(tmp_path):
    if not MARIADB:
        pytest.fail("mariadb CLI not installed; run `make tools`")
    g = GaleneProcess(tmp_path / "data").start()
    try:
        cli(g, "CREATE DATABASE demo")
        cli(
            g,
            """CREATE TABLE users (
                 id INT NOT NULL,
                 name VARCHAR(32),
                 score DECIMAL(10, 2),
                 updated DATETIME
               ) UNIQUE KEY(id)
               DISTRIBUTED BY HASH(id) BUCKETS 4
               PROPERTIES ("replication_num" = "1")""",
            "demo",
        )
        files = [
            "1,alice,10.50,2024-01-01 10:00:00\n2,bob,20.00,2024-01-01 11:00:00\n3,carol,30.25,2024-01-02 09:30:00\n",
            "4,dave,40.00,2024-01-03 08:00:00\n5,erin,50.75,2024-01-03 09:00:00\n",
            "2,bob,99.99,2024-02-01 00:00:00\n5,erin,0.01,2024-02-02 00:00:00\n6,frank,60.00,2024-02-03 00:00:00\n",
        ]
        for i, text in enumerate(files, 1):
            p = tmp_path / f"part{i}.csv"
            p.write_text(text)
            reply = curl_load(g, "demo", "users", p, f"users_load_{i}")
            assert reply["Status"] == "Success", reply
            assert reply["NumberLoadedRows"] == text.count("\n")

        expected = (
            "id\tname\tscore\tupdated\n"
            "1\talice\t10.50\t2024-01-01 10:00:00\n"
            "2\tbob\t99.99\t2024-02-01 00:00:00\n"
            "3\tcarol\t30.25\t2024-01-02 09:30:00\n"
            "4\tdave\t40.00\t2024-01-03 08:00:00\n"
            "5\terin\t0.01\t2024-02-02 00:00:00\n"
            "6\tfrank\t60.00\t2024-02-03 00:00:00\n"
        )
        select = "SELECT * FROM users ORDER BY id"
        assert cli(g, select, "demo") == expected
        create_sql = cli(g, "SHOW CREATE TABLE users", "demo")
        assert "\\nUNIQUE KEY(`id`)" in create_sql  # --batch escapes newlines

        g.stop()
        g.start()
        assert cli(g, select, "demo") == expected
        assert cli(g, "SHOW CREATE TABLE users", "demo") == create_sql

        # SHOW CREATE TABLE output re-creates an identical table.
        ddl = g.query("SHOW CREATE TABLE users", "demo")[0][1]
        cli(g, "CREATE DATABASE demo2")
        cli(g, ddl, "demo2")
        again = g.query("SHOW CREATE TABLE users", "demo2")[0][1]
        assert again == ddl
    finally:
        g.stop()
