"""Operator tools over a running FE: /dump writes a valid image of the live state."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx

from tests.support.client import auth_header


def test_dump_writes_an_image_that_validates_and_holds_the_live_state(galene, db):
    galene.query("CREATE TABLE dumped (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", db)
    r = httpx.get(f"http://127.0.0.1:{galene.http_port}/dump", headers=auth_header(), timeout=60)
    assert r.status_code == 200
    path = r.json()["data"]["dumpFilePath"]
    cli = [sys.executable, "-m", "galene.cli", "meta"]
    valid = subprocess.run([*cli, "validate-image", path], capture_output=True, text=True, check=False)
    assert valid.returncode == 0 and "Load image success" in valid.stdout
    dumped = json.loads(
        subprocess.run([*cli, "dump", path], capture_output=True, text=True, check=True).stdout
    )
    db_names = [d["name"] for d in dumped["state"]["databases"].values()]
    assert db in db_names
    tables = [t["name"] for t in dumped["state"]["tables"].values()]
    assert "dumped" in tables
    assert httpx.get(f"http://127.0.0.1:{galene.http_port}/dump", timeout=10).status_code == 401
