"""If the FE's Spark JVM dies, the next query starts a new one instead of failing forever."""

from __future__ import annotations

import os
import signal
import subprocess

from tests.support.procs import children_of


def _java_children(pid: int) -> list[int]:
    out = []
    for child in children_of(pid):
        comm = subprocess.run(
            ["ps", "-o", "comm=", "-p", str(child)], capture_output=True, text=True, check=False
        ).stdout
        if "java" in comm:
            out.append(child)
    return out


def test_query_after_spark_jvm_sigkill(galene, db):
    galene.query("CREATE TABLE t (k INT, v INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2", db)
    assert galene.stream_load(db, "t", b"1,10\n2,20\n", {"column_separator": ","})["Status"] == "Success"
    assert galene.query("SELECT sum(v) FROM t", db) == [(30,)]
    jvms = _java_children(galene.proc.pid)
    assert jvms, "no Spark JVM under the FE process"
    for pid in jvms:
        os.kill(pid, signal.SIGKILL)
    # The first query after the crash already succeeds (on a new JVM) and sees the same data.
    assert galene.query("SELECT sum(v) FROM t", db) == [(30,)]
    new_jvms = _java_children(galene.proc.pid)
    assert new_jvms and not set(new_jvms) & set(jvms)
    assert galene.query("SELECT count(*) FROM t", db) == [(2,)]
