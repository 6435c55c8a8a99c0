"""Metadata durability through real processes: checkpoints, journal purge, restarts, crashes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.node import GaleneProcess

pytestmark = pytest.mark.slow


def _snapshot(g: GaleneProcess) -> dict:
    out = {"dbs": g.query("SHOW DATABASES")}
    for (name,) in out["dbs"]:
        if name.startswith("ck"):
            tables = g.query("SHOW TABLES", name)
            out[name] = {t: g.query(f"SHOW CREATE TABLE {t}", name) for (t,) in tables}
            out[name + ".rows"] = {t: g.query(f"SELECT * FROM {t} ORDER BY 1, 2", name) for (t,) in tables}
    return out


def test_checkpoint_every_10_ops_purges_journal_and_restart_reproduces_state(tmp_path):
    g = GaleneProcess(tmp_path / "data", conf={"edit_log_roll_num": "10"}).start()
    try:
        statements = 0
        for d in range(4):
            g.query(f"CREATE DATABASE ck{d}")
            statements += 1
            for t in range(5):
                g.query(
                    f"CREATE TABLE t{t} (k INT, v VARCHAR(10)) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
                    f"ck{d}",
                )
                statements += 1
                for i in range(4):
                    body = f"{i},v{d}{t}{i}\n{i + 1},w{i}\n".encode()
                    reply = g.stream_load(f"ck{d}", f"t{t}", body, {"column_separator": ","})
                    assert reply["Status"] == "Success", reply
                    statements += 1
        g.query("DROP TABLE t4", "ck3")
        assert statements >= 100
        before = _snapshot(g)
    finally:
        g.stop()

    image_dir = tmp_path / "data" / "fe-meta" / "image"
    images = sorted(int(p.name.split(".")[1]) for p in image_dir.glob("image.[0-9]*"))
    assert images, "no checkpoint image was written"
    assert len(images) <= 2
    newest = images[-1]
    # Journal entries at or below the older kept image are purged; the ones between the two
    # kept images stay so that a corrupt newest image can fall back to the older one.
    listing = subprocess.run(
        [sys.executable, "-m", "galene.cli", "meta", "journal", str(tmp_path / "data" / "fe-meta"), "--limit", "100000"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    import json

    ids = [json.loads(line)["id"] for line in listing.stdout.splitlines() if line.strip()]
    assert ids and all(i > images[0] for i in ids)
    assert len(images) == 2 and newest - images[0] >= 10
    valid = subprocess.run(
        [sys.executable, "-m", "galene.cli", "meta", "validate-image", str(image_dir / f"image.{newest}")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert valid.returncode == 0 and "Load image success" in valid.stdout

    g.start()
    try:
        assert _snapshot(g) == before
    finally:
        g.stop()


def test_sigkill_loses_no_acknowledged_load(tmp_path):
    g = GaleneProcess(tmp_path / "data", conf={"edit_log_roll_num": "7"}).start()
    acked = []
    try:
        g.query("CREATE DATABASE ckk")
        g.query("CREATE TABLE t (k INT, v INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2", "ckk")
        for i in range(12):
            reply = g.stream_load(
                "ckk", "t", f"{i},{i * 10}\n".encode(), {"column_separator": ",", "label": f"l{i}"}
            )
            assert reply["Status"] == "Success"
            acked.append(i)
    finally:
        g.kill()
    g.start()
    try:
        assert sorted(r[0] for r in g.query("SELECT k FROM t", "ckk")) == acked
        # Retrying an acknowledged label after the crash does not load it twice.
        again = g.stream_load("ckk", "t", b"0,0\n", {"column_separator": ",", "label": "l0"})
        assert again["Status"] == "Label Already Exists"
        assert g.query("SELECT count(*) FROM t", "ckk")[0][0] == len(acked)
    finally:
        g.stop()
