"""Group-commit affinity and BE→BE forwarding behind a real haproxy (Doris #55326), and the
redirect-policy cases end to end.

One `galene fe`, three `galene be`, and Debian's haproxy (round-robin, `option httpchk GET
/api/health`, bound to 127.0.0.1) in front of the BEs; every BE's `tag.public_endpoint` is the
haproxy address. Group-commit loads sent with `redirect-policy: public` are redirected to
haproxy's `_stream_load_forward?forward_to=<owner>`; whichever BE haproxy picks forwards them
to the table's owner, so one BE groups all of the table's loads. Also: the FE keeps the owner;
a BE that is `forward_to` loads a load itself; a second hop is never taken; an owner that
cannot be connected to makes the receiving BE load the data itself; an owner that accepts and
never answers fails the load within the forward deadline with an error naming the hop, and
once the canary finds it unwritable the FE picks a new owner; a bad `group_commit` header is
Doris' text.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter

import httpx
import pytest

from tests.support.client import auth_header, metric_value
from tests.support.cluster import GaleneCluster
from tests.support.haproxy import Haproxy, ensure_haproxy
from tests.support.ports import free_port

pytestmark = pytest.mark.slow

GC = {"column_separator": ",", "group_commit": "async_mode"}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    ensure_haproxy()
    d = tmp_path_factory.mktemp("cluster-forward")
    c = GaleneCluster(
        d,
        n_backends=3,
        fe_conf={"be_canary_interval_second": "1", "be_canary_timeout_second": "2"},
        be_conf={"be_forward_timeout_second": "3", "be_forward_connect_timeout_second": "2"},
    ).start(join=False)
    lb = Haproxy(d / "haproxy", free_port(), [("127.0.0.1", b.be_http_port) for b in c.bes]).start()
    hosts = ", ".join(f"'127.0.0.1:{b.be_http_port}'" for b in c.bes)
    c.fe.query(f"ALTER SYSTEM ADD BACKEND {hosts} PROPERTIES ('tag.public_endpoint' = '127.0.0.1:{lb.port}')")
    c.wait_backends(
        lambda rows: len(rows) == 3 and all(r["Alive"] == "true" and r["Writable"] == "true" for r in rows)
    )
    c.fe.query("CREATE DATABASE IF NOT EXISTS fw")
    c.fe.query(
        "CREATE TABLE IF NOT EXISTS fw.t (id BIGINT, v VARCHAR(16)) DUPLICATE KEY(id) "
        'DISTRIBUTED BY HASH(id) BUCKETS 2 PROPERTIES ("group_commit_interval_ms"="1000")'
    )
    yield c, lb
    lb.stop()
    c.stop()


def _metrics(be) -> str:
    return httpx.get(f"http://127.0.0.1:{be.be_http_port}/metrics", timeout=10).text


def _put(location: str, body: bytes, headers: dict[str, str], timeout: float = 60) -> dict:
    return httpx.put(location, content=body, headers={**auth_header(), **headers}, timeout=timeout).json()


def _count(c: GaleneCluster) -> dict[int, int]:
    return dict(c.fe.query("SELECT id, COUNT(*) FROM fw.t GROUP BY id"))


def _wait_rows(c: GaleneCluster, ids: list[int], timeout: float = 30) -> dict[int, int]:
    deadline = time.monotonic() + timeout
    counts = _count(c)
    while time.monotonic() < deadline and not set(ids) <= set(counts):
        time.sleep(0.3)
        counts = _count(c)
    return counts


def test_redirect_policy_end_to_end(env):
    c, lb = env
    # Doris' text for a bad group_commit header; the policies' choices and errors.
    r = c.redirect("fw", "t", {"group_commit": "maybe"})
    assert r.json()["msg"] == "Header `group_commit` can only be `sync_mode`, `async_mode` or `off_mode`."
    r = c.redirect("fw", "t", {"redirect-policy": "public"})
    assert r.status_code == 307 and f"@127.0.0.1:{lb.port}/api/fw/t/_stream_load" in r.headers["location"]
    r = c.redirect("fw", "t", {"redirect-policy": "private"})
    assert r.json()["msg"] == "private endpoint is null, please check be private endpoint config"
    r = c.redirect("fw", "t", {"redirect-policy": "public-private"}, host="fe.internal:8030")
    assert r.json()["msg"] == "Invalid header host: fe.internal"
    r = c.redirect("fw", "t", {"redirect-policy": "direct"})
    assert r.status_code == 307 and "_forward" not in r.headers["location"]
    r = c.redirect("fw", "t", {}, host="")
    assert r.json()["msg"] == "Invalid header host: "
    # Default policy, Host = the public endpoint's IP: the public endpoint.
    r = c.redirect("fw", "t", {}, host=f"127.0.0.1:{c.fe.http_port}")
    assert f"@127.0.0.1:{lb.port}/" in r.headers["location"]


def test_group_commit_loads_behind_haproxy_are_forwarded_to_one_owner(env):
    c, lb = env
    owners = set()
    ids = list(range(1, 61))
    for i in ids:
        r = c.redirect("fw", "t", {**GC, "redirect-policy": "public"})
        assert r.status_code == 307, r.text
        loc = r.headers["location"]
        assert f"@127.0.0.1:{lb.port}/api/fw/t/_stream_load_forward?forward_to=127.0.0.1:" in loc
        owners.add(loc.rsplit("forward_to=", 1)[1])
        reply = _put(loc, f"{i},lb\n".encode(), {**GC, "redirect-policy": "public"})
        assert reply["Status"] == "Success" and reply.get("GroupCommit") is True, reply
    assert len(owners) == 1, owners  # the table keeps its owner
    owner_port = int(next(iter(owners)).rsplit(":", 1)[1])
    counts = _wait_rows(c, ids)
    assert all(counts.get(i) == 1 for i in ids), counts
    by_port = {b.be_http_port: _metrics(b) for b in c.bes}
    forwarded = {
        p: metric_value(m, "galene_be_stream_load_forward_total", outcome="forwarded") or 0
        for p, m in by_port.items()
    }
    selfish = {
        p: metric_value(m, "galene_be_stream_load_forward_total", outcome="self") or 0
        for p, m in by_port.items()
    }
    # haproxy spread the requests; the non-owners forwarded theirs, the owner loaded its own.
    assert forwarded[owner_port] == 0 and selfish[owner_port] > 0
    assert sum(forwarded.values()) + selfish[owner_port] == len(ids), (forwarded, selfish)
    assert all(forwarded[p] > 0 for p in by_port if p != owner_port), forwarded
    grouped = {
        p: metric_value(m, "galene_be_group_commit_async_mode_loads_total") or 0 for p, m in by_port.items()
    }
    assert grouped[owner_port] == len(ids) and sum(grouped.values()) == len(ids), grouped
    assert metric_value(by_port[owner_port], "galene_rpc_requests_total", outcome="ok") is not None


def test_forward_edges_self_second_hop_and_unreachable_owner(env):
    c, _ = env
    a, b, _ = c.bes
    base = "/api/fw/t/_stream_load_forward"
    # forward_to a BE that is not the owner: that BE loads it (the hop goes to its _stream_load).
    reply = _put(
        f"http://127.0.0.1:{a.be_http_port}{base}?forward_to=127.0.0.1:{b.be_http_port}", b"1001,x\n", GC
    )
    assert reply["Status"] == "Success", reply
    # A request that already took its hop is loaded where it is, whatever forward_to says.
    before = metric_value(_metrics(a), "galene_be_stream_load_forward_total", outcome="second_hop") or 0
    reply = _put(
        f"http://127.0.0.1:{a.be_http_port}{base}?forward_to=127.0.0.1:{b.be_http_port}",
        b"1002,x\n",
        {**GC, "X-Galene-Forwarded-By": "127.0.0.1:1"},
    )
    assert reply["Status"] == "Success", reply
    assert (
        metric_value(_metrics(a), "galene_be_stream_load_forward_total", outcome="second_hop") == before + 1
    )
    # An owner nobody listens on: nothing of the body left, so this BE loads it and tells the FE.
    dead = free_port()
    t0 = time.monotonic()
    reply = _put(f"http://127.0.0.1:{a.be_http_port}{base}?forward_to=127.0.0.1:{dead}", b"1003,x\n", GC)
    assert reply["Status"] == "Success", reply
    assert time.monotonic() - t0 < 5
    assert (
        metric_value(_metrics(a), "galene_be_stream_load_forward_total", outcome="fallback_local") or 0
    ) >= 1
    counts = _wait_rows(c, [1001, 1002, 1003])
    assert [counts.get(i) for i in (1001, 1002, 1003)] == [1, 1, 1], counts


def test_owner_that_accepts_and_never_answers(env):
    """The #64708 signature on the hop: TCP connects, the owner's handler never runs (its
    process is stopped). The forwarding BE fails the load within its deadline naming the hop;
    the canary finds the owner unwritable and the FE picks another owner; SIGCONT heals it."""
    c, _ = env
    r = c.redirect("fw", "t", {**GC, "redirect-policy": "public"})
    owner_port = int(r.headers["location"].rsplit(":", 1)[1])
    owner = next(b for b in c.bes if b.be_http_port == owner_port)
    other = next(b for b in c.bes if b is not owner)
    os.kill(owner.proc.pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        reply = _put(
            f"http://127.0.0.1:{other.be_http_port}/api/fw/t/_stream_load_forward?forward_to=127.0.0.1:{owner_port}",
            b"2001,x\n",
            GC,
        )
        took = time.monotonic() - t0
        assert reply["Status"] == "Fail", reply
        assert reply["Message"].startswith(f"forward to 127.0.0.1:{owner_port} failed after "), reply
        assert took < 2 + 3 + 3, took  # connect + forward deadline + margin
        # Within 2 canary periods the owner is not writable and the FE moves the table.
        c.wait_backends(
            lambda rows: any(x["HttpPort"] == str(owner_port) and x["Writable"] == "false" for x in rows),
            timeout=20,
        )
        ids = list(range(3001, 3021))
        seen = Counter()
        for i in ids:
            r = c.redirect("fw", "t", {**GC, "redirect-policy": "public"})
            target = r.headers["location"].rsplit("forward_to=", 1)[1]
            seen[target] += 1
            reply = _put(r.headers["location"], f"{i},y\n".encode(), GC, timeout=30)
            assert reply["Status"] == "Success", reply  # haproxy's check took the stopped BE out
        assert f"127.0.0.1:{owner_port}" not in seen and len(seen) == 1, seen
    finally:
        os.kill(owner.proc.pid, signal.SIGCONT)
    c.wait_backends(lambda rows: all(x["Writable"] == "true" for x in rows), timeout=15)
    counts = _wait_rows(c, ids)
    assert all(counts.get(i) == 1 for i in ids), counts
    assert counts.get(2001) is None or counts[2001] == 1  # not acknowledged: at most once
