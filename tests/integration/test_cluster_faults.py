"""Faults between real processes in network namespaces (tests/support/netlab.py), each bounded and
healing by itself, no process restarted.

One `galene fe`, three `galene be` and Debian's haproxy (round-robin, `option httpchk GET
/api/health`, every BE's `tag.public_endpoint`), each in a namespace of its own on a test-made
bridge (198.18.0.0/15, no default route), one lab for the module. Canary every 2 s with a 2 s
timeout (the "2 canary periods" bound is 6 s), heartbeats every second, forwarding with a 2 s
connect and a 4 s answer deadline. Per case, as far as the case allows: the caller gets its
answer, or an error naming the hop, within its deadline; the BE concerned leaves routing within
the bound and gets no new loads; every acknowledged load is visible exactly once; `galene
doctor` names the broken hop (both ends) and exits 2 while a black hole lasts, 0 after; once
the fault is removed the BE is writable again within 5 s.

Cases: black hole FE→BE, and FE↔BE in the middle of a 50 MB load's body; black hole BE→BE only (the #64708 shape), before and in the middle of
a forwarded body, and on the WAL-copy hop of a `replication_num` 3 table (the owner from one
replica peer, then from both); a BE's own address black-holed from inside its namespace; established
connections reset and new ones refused; storage writes that do not answer (debug point); an
owner that accepts a forwarded load and never runs it (debug point); a slow link (tbf 64 kbit/s)
under 64 concurrent clients; the FE partitioned from a BE that haproxy still sends loads to;
haproxy still sending loads to a BE that was dropped, and a forward loop attempt.
Skipped with the reason when not root (namespaces) or without iptables / haproxy.
"""

from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.support.client import auth_header, metric_value
from tests.support.cluster import GaleneCluster
from tests.support.haproxy import Haproxy, ensure_haproxy
from tests.support.netlab import NetLab, have_iptables, unavailable_reason
from tests.support.ports import free_port

pytestmark = pytest.mark.slow

INTERVAL_S, TIMEOUT_S = 2, 2
BOUND_S = 2 * INTERVAL_S + TIMEOUT_S
FORWARD_CONNECT_S, FORWARD_S = 2, 4
REPLICA_S = 2  # be_wal_replica_timeout_second: the deadline of one WAL copy call
# nf.r3's group interval: longer than REPLICA_S, so a copy call to a black-holed peer reaches
# its deadline (the peer is dropped from the group's set) before the group commits; a group
# that commits first just cancels that call.
R3_INTERVAL_S = 3
MARGIN_S = 4.0  # a loaded 2-core box
GC = {"column_separator": ",", "group_commit": "async_mode"}
PUBLIC = {**GC, "redirect-policy": "public"}


class Lab:
    def __init__(self, net: NetLab, c: GaleneCluster, lb: Haproxy):
        self.net, self.c, self.lb = net, c, lb

    def name(self, be) -> str:
        return f"be{self.c.bes.index(be)}"

    def addr(self, be) -> str:
        return f"{be.host}:{be.be_http_port}"

    def debug_point(self, be, action: str, name: str = "", **query) -> None:
        path = f"/api/debug_point/{action}" + (f"/{name}" if name else "")
        r = httpx.post(f"http://{self.addr(be)}{path}", params=query, headers=auth_header(), timeout=10)
        assert r.json()["code"] == 0, r.text


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    reason = unavailable_reason()
    if reason:
        pytest.skip(f"network fault tests: {reason}")
    if not have_iptables():
        pytest.skip("network fault tests: iptables is not installed (make tools)")
    ensure_haproxy()
    d = tmp_path_factory.mktemp("cluster-faults")
    net = NetLab().create()
    c = lb = None
    try:
        places = [net.add_node(n) for n in ("fe", "be0", "be1", "be2")]
        lb_ns, lb_addr = net.add_node("lb")
        c = GaleneCluster(
            d,
            n_backends=3,
            fe_conf={
                "be_canary_interval_second": str(INTERVAL_S),
                "be_canary_timeout_second": str(TIMEOUT_S),
            },
            be_conf={
                "be_canary_timeout_second": str(TIMEOUT_S),
                "be_forward_connect_timeout_second": str(FORWARD_CONNECT_S),
                "be_forward_timeout_second": str(FORWARD_S),
                "be_wal_replica_timeout_second": str(REPLICA_S),
                "enable_debug_points": "true",
            },
            placement=places,
        ).start()
        lb = Haproxy(d / "haproxy", free_port(), [(b.host, b.be_http_port) for b in c.bes], netns=lb_ns)
        lb.bind = lb_addr
        lb.start()
        _wait_listening(lb_addr, lb.port)
        for b in c.bes:
            c.fe.query(
                f"ALTER SYSTEM MODIFY BACKEND '{b.host}:{b.be_http_port}' "
                f"SET ('tag.public_endpoint' = '{lb_addr}:{lb.port}')"
            )
        c.fe.query("CREATE DATABASE IF NOT EXISTS nf")
        c.fe.query(
            "CREATE TABLE IF NOT EXISTS nf.t (id BIGINT, v VARCHAR(16)) DUPLICATE KEY(id) "
            'DISTRIBUTED BY HASH(id) BUCKETS 2 PROPERTIES ("group_commit_interval_ms"="1000")'
        )
        c.wait_backends(
            lambda rows: all(r["Writable"] == "true" and r["LastCanaryTime"] != "N/A" for r in rows)
        )
        yield Lab(net, c, lb)
    finally:
        if lb is not None:
            lb.stop()
        if c is not None:
            c.stop()
        net.destroy()


def _wait_listening(host: str, port: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


class Loads:
    """Loads through the FE's 307; remembers what was acknowledged."""

    def __init__(self, c: GaleneCluster, start: int):
        self.c = c
        self.next = start
        self.acked: list[int] = []
        self._lock = threading.Lock()

    def take(self) -> int:
        with self._lock:
            i, self.next = self.next, self.next + 1
            return i

    def ack(self, i: int) -> None:
        with self._lock:
            self.acked.append(i)

    def one(self, headers: dict[str, str] | None = None, timeout: float = 30) -> tuple[dict, str]:
        """(the reply, the host:port the FE sent the load to)."""
        i = self.take()
        h = {"column_separator": ",", **(headers or {})}
        r = self.c.redirect("nf", "t", h)
        if r.status_code != 307:
            return r.json(), ""
        target = r.headers["location"].split("@", 1)[1].split("/", 1)[0]
        reply = httpx.put(
            r.headers["location"],
            content=f"{i},x\n".encode(),
            headers={**auth_header(), **h},
            timeout=timeout,
        ).json()
        if reply.get("Status") == "Success":
            self.ack(i)
        return reply, target

    def direct(self, url: str, i: int, headers: dict[str, str], timeout: float = 30, **kw) -> dict:
        reply = httpx.put(
            url, content=f"{i},x\n".encode(), headers={**auth_header(), **headers}, timeout=timeout, **kw
        ).json()
        if reply.get("Status") == "Success":
            self.ack(i)
        return reply

    def check_exactly_once(self, timeout: float = 30) -> dict[int, int]:
        deadline = time.monotonic() + timeout
        while True:
            counts = dict(self.c.fe.query("SELECT id, COUNT(*) FROM nf.t GROUP BY id"))
            if set(self.acked) <= set(counts) or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        missing = {i: counts.get(i) for i in self.acked if counts.get(i) != 1}
        assert not missing, missing
        return counts


def _out_of_routing(c: GaleneCluster, be, timeout: float) -> tuple[float, dict]:
    """Seconds until SHOW BACKENDS says `be` is not writable or not alive, and its row."""
    t0 = time.monotonic()
    rows = c.wait_backends(
        lambda rows: any(
            r["HttpPort"] == str(be.be_http_port) and (r["Writable"] == "false" or r["Alive"] == "false")
            for r in rows
        ),
        timeout=timeout,
        poll=0.1,
    )
    return time.monotonic() - t0, next(r for r in rows if r["HttpPort"] == str(be.be_http_port))


def _heal_and_wait(lab: Lab) -> float:
    lab.net.heal()
    t0 = time.monotonic()
    lab.c.wait_backends(
        lambda rows: all(r["Writable"] == "true" and r["Alive"] == "true" for r in rows), timeout=30, poll=0.1
    )
    return time.monotonic() - t0


def _owner(lab: Lab, table: str = "t"):
    """The table's group-commit owner BE (the FE's choice, through a direct 307)."""
    r = lab.c.redirect("nf", table, {**GC, "redirect-policy": "direct"})
    at = r.headers["location"].split("@", 1)[1].split("/", 1)[0]
    return next(b for b in lab.c.bes if lab.addr(b) == at)


def test_black_hole_fe_to_be(lab):
    """FE→BE packets dropped (established connections too): the BE leaves routing within the
    bound, loads go to the others, the doctor names the hop; it comes back by itself."""
    c, net = lab.c, lab.net
    loads = Loads(c, 1)
    victim = c.bes[0]
    for _ in range(6):
        assert loads.one()[0]["Status"] == "Success"
    net.drop("fe", "be0")
    seen, row = _out_of_routing(c, victim, BOUND_S + MARGIN_S + 10)
    print(f"FE->BE black hole: out of routing after {seen:.1f} s ({row['CanaryError'] or row['ErrMsg']})")
    assert seen <= BOUND_S + MARGIN_S
    assert victim.host in (row["CanaryError"] + row["ErrMsg"]), row
    for _ in range(10):
        reply, target = loads.one(GC)
        assert reply["Status"] == "Success", reply
        assert not target.startswith(f"{victim.host}:"), target
    status, out = c.doctor()
    print(out)
    assert status == 2, out
    assert f"STUCK fe {c.fe.host}:{c.fe.http_port} -> be {lab.addr(victim)}" in out, out
    healed = _heal_and_wait(lab)
    print(f"FE->BE black hole removed: writable after {healed:.1f} s")
    assert healed <= 5 + MARGIN_S
    status, out = c.doctor()
    assert status == 0, out
    loads.check_exactly_once()


def test_black_hole_fe_be_mid_body_of_a_50mb_load(lab):
    """A 50 MB plain load redirected by the FE to a BE; a third into its body, FE<->BE is
    black-holed both ways. The client gets its error within the FE call's deadline once the
    body is in, naming the FE (the BE's commit call); nothing of the load is visible; the BE
    leaves routing within the bound; healed, it is writable again within 5 s and a retry with
    the same label loads exactly once (the BE's abort of the first txn lands after healing)."""
    c, net = lab.c, lab.net
    ident, chunks, chunk = 10_000, 50, b"10000,mid_body_50mb\n" * 52_428  # ~1 MB each
    rows = chunks * chunk.count(b"\n")
    label = f"fe_be_mid_body_{time.time_ns()}"
    h = {"column_separator": ",", "label": label}
    r = c.redirect("nf", "t", h)
    assert r.status_code == 307, r.text
    url = r.headers["location"]
    at = url.split("@", 1)[1].split("/", 1)[0]
    victim = next(b for b in c.bes if lab.addr(b) == at)
    marks: dict[str, float] = {}
    routing: dict[str, object] = {}

    def watch_routing():
        try:
            routing["seen"], routing["row"] = _out_of_routing(c, victim, BOUND_S + MARGIN_S + 10)
        except TimeoutError as e:
            routing["error"] = e

    watcher = threading.Thread(target=watch_routing)

    def body():
        for n in range(chunks):
            if n == chunks // 3:
                net.drop("fe", lab.name(victim))
                net.drop(lab.name(victim), "fe")
                marks["fault"] = time.monotonic()
                watcher.start()
            yield chunk
            time.sleep(0.08)
        marks["body_end"] = time.monotonic()

    reply = httpx.put(url, content=body(), headers={**auth_header(), **h}, timeout=120).json()
    answered = time.monotonic()
    after_body = answered - marks["body_end"]
    print(
        f"FE<->BE black hole mid-body: answered {answered - marks['fault']:.1f} s after the fault, "
        f"{after_body:.1f} s after the body (write {reply.get('WriteDataTimeMs')} ms): {reply.get('Message')}"
    )
    assert reply["Status"] == "Fail", reply
    assert f"{c.fe.host}:{c.fe.http_port}" in reply["Message"], reply
    assert "/api/_internal/txn/commit" in reply["Message"], reply
    rpc_s = 10  # rpc_timeout_ms: the deadline of the BE's commit call to the FE
    assert after_body <= reply["WriteDataTimeMs"] / 1000 + rpc_s + MARGIN_S, reply
    watcher.join()
    assert "error" not in routing, routing
    row = routing["row"]
    print(f"out of routing {routing['seen']:.1f} s after the fault ({row['CanaryError'] or row['ErrMsg']})")
    assert routing["seen"] <= BOUND_S + MARGIN_S, routing
    healed = _heal_and_wait(lab)
    print(f"FE<->BE black hole removed: writable after {healed:.1f} s")
    assert healed <= 5 + MARGIN_S

    def state() -> str:
        return httpx.get(
            f"http://{c.fe.host}:{c.fe.http_port}/api/nf/get_load_state",
            params={"label": label},
            headers=auth_header(),
            timeout=10,
        ).json()["data"]

    t0 = time.monotonic()
    while state() == "PREPARE" and time.monotonic() - t0 < 10:
        time.sleep(0.2)  # the BE retries the abort until the FE answers again
    print(f"first attempt's txn {state()} {time.monotonic() - t0:.1f} s after healing")
    assert state() == "ABORTED"
    count = f"SELECT COUNT(*) FROM nf.t WHERE id = {ident}"
    assert int(c.fe.query(count)[0][0]) == 0
    reply = httpx.put(
        c.redirect("nf", "t", h).headers["location"],
        content=chunk * chunks,
        headers={**auth_header(), **h},
        timeout=120,
    ).json()
    assert reply["Status"] == "Success", reply
    assert reply["NumberLoadedRows"] == rows, reply
    assert int(c.fe.query(count)[0][0]) == rows


def test_black_hole_be_to_be_forward(lab):
    """The #64708 shape: one BE cannot reach the owner BE, heartbeats untouched. A forwarded load
    whose body had not left is loaded by the receiving BE itself within the connect deadline and
    the FE is told; the canary names the hop; the doctor says stuck naming both BEs. A black
    hole in the middle of a forwarded body fails that load within the forward deadline naming
    the hop, and a retry with the same label loads it exactly once."""
    c, net = lab.c, lab.net
    loads = Loads(c, 1000)
    reply, _ = loads.one(GC)
    assert reply["Status"] == "Success", reply
    owner = _owner(lab)
    sender = next(b for b in c.bes if b is not owner)
    forward = f"http://{lab.addr(sender)}/api/nf/t/_stream_load_forward?forward_to={lab.addr(owner)}"
    net.drop(lab.name(sender), owner.host)
    t0 = time.monotonic()
    reply = loads.direct(forward, 1999, GC)
    took = time.monotonic() - t0
    assert reply["Status"] == "Success", reply  # loaded by the sender itself
    assert took < FORWARD_CONNECT_S + MARGIN_S, took
    rows = c.wait_backends(
        lambda rows: any(
            r["HttpPort"] == str(sender.be_http_port) and owner.host in r["CanaryError"] for r in rows
        ),
        timeout=BOUND_S + MARGIN_S,
    )
    assert "forward_hop" in next(r for r in rows if r["HttpPort"] == str(sender.be_http_port))["CanaryError"]
    for _ in range(8):
        reply, _ = loads.one(GC, timeout=20)
        assert reply["Status"] == "Success", reply
    status, out = c.doctor()
    print(out)
    assert status == 2, out
    # The sender's packets to the owner are dropped, its answers to the owner's connects too:
    # the hop is broken both ways, and the doctor names it, one way or the other.
    pair = {f"be {lab.addr(sender)}", f"be {lab.addr(owner)}"}
    last = [ln for ln in out.splitlines() if ln.startswith("STUCK ")][-1]
    assert (
        last.endswith("forward path 2.0s (deadline 2s)")
        and set(last[6:].split(" forward path")[0].split(" -> ")) == pair
    ), out
    net.heal()

    # Mid-body: the body streams slowly through the sender; the black hole starts after the
    # owner has the head and some of the body.
    def slow_body():
        for _ in range(40):
            yield b"1998,mid\n" * 7000
            time.sleep(0.05)

    def cut_later():
        time.sleep(0.8)
        net.drop(lab.name(sender), owner.host)

    label = f"mid_body_{time.time_ns()}"
    cutter = threading.Thread(target=cut_later)
    cutter.start()
    t0 = time.monotonic()
    reply = httpx.put(
        forward, content=slow_body(), headers={**auth_header(), **GC, "label": label}, timeout=60
    ).json()
    took = time.monotonic() - t0
    cutter.join()
    print(f"mid-body black hole: {took:.1f} s: {reply.get('Message')}")
    assert reply["Status"] == "Fail", reply
    assert reply["Message"].startswith(f"forward to {lab.addr(owner)} failed after "), reply
    assert took < FORWARD_CONNECT_S + FORWARD_S + MARGIN_S, took
    healed = _heal_and_wait(lab)
    assert healed <= 5 + MARGIN_S
    status, out = c.doctor()
    assert status == 0, out
    # The retry with the same label loads once (the first attempt never completed a body).
    body = b"1998,retry\n"
    deadline = time.monotonic() + 30
    while True:
        reply = httpx.put(
            forward, content=body, headers={**auth_header(), **GC, "label": label}, timeout=30
        ).json()
        if reply["Status"] == "Success" or time.monotonic() > deadline:
            break
        time.sleep(0.5)  # the owner may still hold the first attempt's label for a moment
    assert reply["Status"] == "Success", reply
    loads.acked.append(1998)
    loads.check_exactly_once()


class ReplicatedLoads:
    """Async group-commit loads of 3 rows each (unique ids) into nf.r3 (`replication_num` 3);
    every other one labelled (the labelled path and the SmallLoadLane copy rows differently).
    Remembers acknowledged and failed ids, and each load's time to its answer."""

    TIMEOUT_S = 10  # the loads' own `timeout`

    def __init__(self, lab: Lab, start: int):
        self.lab = lab
        self.next = start
        self.acked: set[int] = set()
        self.failed: set[int] = set()
        self._lock = threading.Lock()

    def _ids(self) -> list[int]:
        with self._lock:
            first, self.next = self.next, self.next + 3
        return list(range(first, first + 3))

    def one(self, url: str | None = None) -> tuple[dict, float]:
        """One load to `url` (a BE's _stream_load), else through the FE's 307: (reply, seconds)."""
        ids = self._ids()
        h = {**GC, "timeout": str(self.TIMEOUT_S)}
        if ids[0] % 2:
            h["label"] = f"r3_{ids[0]}_{time.time_ns()}"
        t0 = time.monotonic()
        if url is None:
            r = self.lab.c.redirect("nf", "r3", {**h, "redirect-policy": "direct"})
            assert r.status_code == 307, r.text
            url = r.headers["location"]
        reply = httpx.put(
            url,
            content="".join(f"{i},r3\n" for i in ids).encode(),
            headers={**auth_header(), **h},
            timeout=self.TIMEOUT_S + 30,
        ).json()
        took = time.monotonic() - t0
        with self._lock:
            (self.acked if reply.get("Status") == "Success" else self.failed).update(ids)
        return reply, took

    def many(self, url: str, n: int, rounds: int = 3) -> list[tuple[dict, float]]:
        """`rounds` rounds of `n` concurrent loads, half a second apart."""
        out = []
        with ThreadPoolExecutor(n) as pool:
            for _ in range(rounds):
                out += list(pool.map(lambda _: self.one(url), range(n)))
                time.sleep(0.5)
        return out

    def check_exactly_once(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while True:
            counts = dict(self.lab.c.fe.query("SELECT id, COUNT(*) FROM nf.r3 GROUP BY id"))
            if self.acked <= set(counts) or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        time.sleep(R3_INTERVAL_S + 0.5)  # a group more: nothing of a failed load turns up later either
        counts = dict(self.lab.c.fe.query("SELECT id, COUNT(*) FROM nf.r3 GROUP BY id"))
        missing = {i: counts.get(i) for i in self.acked if counts.get(i) != 1}
        assert not missing, missing
        unacked = sorted(i for i in self.failed if i in counts)
        assert not unacked, unacked


def _wal_copies(be) -> list[Path]:
    """The WAL copies of other BEs' groups this BE holds (be/wal_replica.py)."""
    return [p for p in (be.data_dir / "be" / "wal_replica").glob("*/*") if p.is_file()]


def _metric(lab: Lab, be, name: str) -> float:
    text = httpx.get(f"http://{lab.addr(be)}/metrics", timeout=10).text
    return metric_value(text, name) or 0.0


def test_black_hole_be_to_be_wal_replication(lab):
    """The #64708 shape on the WAL-copy hop (`replication_num` 3 on the lab's 3 BEs): async
    loads go to the owner BE while its BE→BE path to one replica peer is black-holed both ways
    (FE↔BE heartbeats untouched). The peer is dropped from each group's set after
    `be_wal_replica_timeout_second` and the loads keep succeeding with 2 of 3 copies, none
    waiting on a kernel retransmission timeout; the canary names the hop on both ends, both
    stay writable (a quorum is still there). Then the owner is black-holed from BOTH peers:
    its loads fail within the replica deadline with Doris' `failed to write enough replicas
    1/3 … due to connection errors:` naming the peers, unacknowledged, nothing of them ever
    visible; the owner is `Writable=false` within 2 canary periods (cut off from every peer)
    and loads through the FE succeed on another owner. Healed, the owner's loads are copied
    to both peers again with no process restarted; every acknowledged row is there once."""
    c, net = lab.c, lab.net
    c.fe.query(
        "CREATE TABLE IF NOT EXISTS nf.r3 (id BIGINT, v VARCHAR(16)) DUPLICATE KEY(id) "
        'DISTRIBUTED BY HASH(id) BUCKETS 2 PROPERTIES ("replication_num" = "3", '
        f'"group_commit_interval_ms" = "{R3_INTERVAL_S * 1000}")'
    )
    loads = ReplicatedLoads(lab, 20_000)
    pids = [b.proc.pid for b in (c.fe, *c.bes)]
    owner = _owner(lab, "r3")
    cut, kept = (b for b in c.bes if b is not owner)
    url = f"http://{lab.addr(owner)}/api/nf/r3/_stream_load"
    deadline_s = REPLICA_S + MARGIN_S  # the longest a copy hop can hold a load
    assert deadline_s < loads.TIMEOUT_S  # so a load's own timeout never hides a parked copy
    for reply, _ in loads.many(url, 4, rounds=1):
        assert reply["Status"] == "Success", reply

    # One replica peer black-holed: 2 of 3 copies.
    dropped = _metric(lab, owner, "galene_be_wal_replica_dropped_total")
    copied = _metric(lab, kept, "galene_be_wal_replica_bytes_total")
    net.drop(lab.name(owner), cut.host)
    net.drop(lab.name(cut), owner.host)
    answers = loads.many(url, 6)
    took = [t for _, t in answers]
    print(f"one WAL peer black-holed: {len(answers)} loads, slowest {max(took):.1f} s")
    for reply, t in answers:
        assert reply["Status"] == "Success", reply
        assert t < deadline_s, (t, reply)
    # A group's copy call to the peer ends at its deadline and the peer leaves the group's set
    # (a group that commits first just cancels the call: loads keep coming meanwhile, so some
    # group lives past the deadline on a loaded box too).
    t0 = time.monotonic()
    while _metric(lab, owner, "galene_be_wal_replica_dropped_total") <= dropped:
        assert time.monotonic() - t0 < deadline_s + R3_INTERVAL_S, "the black-holed peer was never dropped"
        reply, t = loads.one(url)
        assert reply["Status"] == "Success", reply
        assert t < deadline_s, (t, reply)
        time.sleep(0.2)
    assert _metric(lab, kept, "galene_be_wal_replica_bytes_total") > copied
    rows = c.wait_backends(
        lambda rows: (
            any(r["HttpPort"] == str(owner.be_http_port) and lab.addr(cut) in r["CanaryError"] for r in rows)
            and any(
                r["HttpPort"] == str(cut.be_http_port) and lab.addr(owner) in r["CanaryError"] for r in rows
            )
        ),
        timeout=BOUND_S + MARGIN_S,
    )
    print("canary:", {r["HttpPort"]: (r["Writable"], r["CanaryError"]) for r in rows})
    assert all(r["Writable"] == "true" for r in rows), rows  # a quorum is still reachable
    status, out = c.doctor()  # names the black-holed hop, both ends, while it lasts
    assert status == 2, out
    stuck = [ln for ln in out.splitlines() if ln.startswith("STUCK ")]
    assert stuck, out
    assert set(stuck[-1][6:].split(" forward path")[0].split(" -> ")) == {
        f"be {lab.addr(owner)}",
        f"be {lab.addr(cut)}",
    }, out

    # The owner black-holed from both peers: no quorum.
    net.drop(lab.name(owner), kept.host)
    net.drop(lab.name(kept), owner.host)
    t_fault = time.monotonic()
    answers = loads.many(url, 4, rounds=2)
    took = [t for _, t in answers]
    print(
        f"both WAL peers black-holed: {len(answers)} loads, slowest {max(took):.1f} s: {answers[0][0]['Message']}"
    )
    prefix = "failed to write enough replicas 1/3 for table r3 due to connection errors: "
    for reply, t in answers:
        assert reply["Status"] == "Fail", reply
        assert reply["Message"].startswith(prefix), reply
        assert all(f"{lab.addr(b)}: " in reply["Message"] for b in (cut, kept)), reply
        assert t < deadline_s, (t, reply)
    _, row = _out_of_routing(c, owner, BOUND_S + MARGIN_S + 10)
    seen = time.monotonic() - t_fault
    print(f"owner cut off from its peers: out of routing {seen:.1f} s after the fault ({row['CanaryError']})")
    assert seen <= BOUND_S + MARGIN_S
    assert row["Alive"] == "true" and any(lab.addr(b) in row["CanaryError"] for b in (cut, kept)), row
    for b in (cut, kept):
        assert c.backend(b)["Writable"] == "true"
    for _ in range(4):  # through the FE: another owner, whose one reachable peer makes a quorum
        reply, t = loads.one()
        assert reply["Status"] == "Success", reply
        assert t < deadline_s, t

    # Healed: the owner is writable again and its loads reach both peers, nothing restarted.
    healed = _heal_and_wait(lab)
    print(f"WAL peers reachable again: writable after {healed:.1f} s")
    assert healed <= 5 + MARGIN_S
    copied = {b.be_http_port: _metric(lab, b, "galene_be_wal_replica_bytes_total") for b in (cut, kept)}
    for reply, t in loads.many(url, 4, rounds=2):
        assert reply["Status"] == "Success", reply
        assert t < deadline_s, t
    for b in (cut, kept):
        assert _metric(lab, b, "galene_be_wal_replica_bytes_total") > copied[b.be_http_port], lab.name(b)
    loads.check_exactly_once()
    status, out = c.doctor()
    assert status == 0, out
    # The copies the owner could not tell to go (the black hole ate its drop notices) are
    # dropped by their holders once the FE says their groups are visible.
    t0 = time.monotonic()
    while any(_wal_copies(b) for b in c.bes):
        assert time.monotonic() - t0 < 15, {lab.name(b): _wal_copies(b) for b in c.bes}
        time.sleep(0.5)
    assert [b.proc.pid for b in (c.fe, *c.bes)] == pids  # nothing restarted


def test_black_hole_of_a_bes_own_address(lab):
    """The incident's loopback case: a BE's packets to its own address are dropped. No Galene
    path goes from a BE to itself (a load forwarded to the BE that receives it is loaded there),
    so nothing parks: loads into and through it succeed and it stays writable."""
    c, net = lab.c, lab.net
    loads = Loads(c, 3000)
    victim = c.bes[1]
    net.drop("be1", victim.host)
    try:
        url = f"http://{lab.addr(victim)}/api/nf/t/_stream_load_forward?forward_to={lab.addr(victim)}"
        t0 = time.monotonic()
        assert loads.direct(url, 2999, GC)["Status"] == "Success"
        assert time.monotonic() - t0 < MARGIN_S
        for _ in range(6):
            reply, _ = loads.one(PUBLIC)
            assert reply["Status"] == "Success", reply
        time.sleep(INTERVAL_S + TIMEOUT_S)  # a canary round with the fault in place
        assert c.backend(victim)["Writable"] == "true"
        status, out = c.doctor()
        assert status == 0, out
    finally:
        net.heal()
    loads.check_exactly_once()


def test_reset_and_refused_connections(lab):
    """Established FE→BE connections destroyed (ss -K) mid-traffic, then new connects refused
    with resets: calls fail fast naming the BE, pooled connections are not reused, the BE leaves
    routing while refused (the doctor: degraded, naming the hop) and comes back after."""
    c, net = lab.c, lab.net
    loads = Loads(c, 4000)
    victim = c.bes[2]
    for _ in range(4):
        assert loads.one()[0]["Status"] == "Success"
    net.reset("fe", "be2")
    for _ in range(6):  # the FE's pooled connections to be2 are gone: nothing hangs
        reply, _ = loads.one(timeout=20)
        assert reply["Status"] == "Success", reply
    net.reject("fe", "be2")
    seen, row = _out_of_routing(c, victim, BOUND_S + MARGIN_S + 10)
    print(f"refused connects: out of routing after {seen:.1f} s ({row['CanaryError'] or row['ErrMsg']})")
    assert seen <= BOUND_S + MARGIN_S
    for _ in range(6):
        reply, target = loads.one()
        assert reply["Status"] == "Success", reply
        assert not target.startswith(f"{victim.host}:")
    status, out = c.doctor()
    assert status in (1, 2), out  # refused: answers, not silence (degraded), unless a probe also timed out
    assert f"FAIL  fe {c.fe.host}:{c.fe.http_port} -> be {lab.addr(victim)} (GET /api/health)" in out, out
    healed = _heal_and_wait(lab)
    assert healed <= 5 + MARGIN_S
    loads.check_exactly_once()


def test_storage_writes_that_do_not_answer(lab):
    """Rowset writes of one BE never answer (debug point): its canary fails at the rowset stage
    naming the storage, it leaves routing, a load sent to it directly fails within its own
    timeout, unacknowledged; the doctor names BE -> storage; removing the point heals it."""
    c = lab.c
    loads = Loads(c, 5000)
    victim = c.bes[1]
    lab.debug_point(victim, "add", "stream_load.storage_write", timeout=120)
    try:
        seen, row = _out_of_routing(c, victim, BOUND_S + MARGIN_S + 10)
        print(f"storage parked: out of routing after {seen:.1f} s ({row['CanaryError']})")
        assert seen <= BOUND_S + MARGIN_S
        assert row["CanaryError"].startswith("rowset_write: no answer from storage "), row
        assert row["Alive"] == "true"
        t0 = time.monotonic()
        reply = loads.direct(
            f"http://{lab.addr(victim)}/api/nf/t/_stream_load",
            4999,
            {"column_separator": ",", "timeout": "3"},
        )
        assert reply["Status"] == "Fail" and "TIMEOUT" in reply["Message"], reply
        assert time.monotonic() - t0 < 3 + MARGIN_S
        for _ in range(6):
            for h in (GC, {"column_separator": ","}):
                reply, target = loads.one(h)
                assert reply["Status"] == "Success", reply
                assert not target.startswith(f"{victim.host}:"), target
        status, out = c.doctor()
        print(out)
        assert status == 2, out
        assert f"STUCK be {lab.addr(victim)} -> storage " in out, out
    finally:
        lab.debug_point(victim, "remove", "stream_load.storage_write")
    healed = _heal_and_wait(lab)
    print(f"storage answers again: writable after {healed:.1f} s")
    assert healed <= 5 + MARGIN_S
    loads.check_exactly_once()


def test_owner_that_accepts_a_forward_and_never_runs_it(lab):
    """The #64708 signature on the hop, as a debug point: the owner's kernel accepts the
    forwarded load, its handler never runs. The receiving BE fails the load within the forward
    deadline naming the hop; the retry with the same label loads exactly once."""
    c = lab.c
    loads = Loads(c, 6000)
    owner = _owner(lab)
    sender = next(b for b in c.bes if b is not owner)
    forward = f"http://{lab.addr(sender)}/api/nf/t/_stream_load_forward?forward_to={lab.addr(owner)}"
    label = f"parked_{time.time_ns()}"
    lab.debug_point(
        owner, "add", "stream_load.forwarded", timeout=FORWARD_CONNECT_S + FORWARD_S + 2, execute=1
    )
    t0 = time.monotonic()
    reply = loads.direct(forward, 5999, {**GC, "label": label})
    took = time.monotonic() - t0
    assert reply["Status"] == "Fail", reply
    assert reply["Message"].startswith(f"forward to {lab.addr(owner)} failed after "), reply
    assert took < FORWARD_CONNECT_S + FORWARD_S + MARGIN_S, took
    deadline = time.monotonic() + 30
    while True:  # the parked attempt may still finish on the owner: the label keeps it once
        reply = loads.direct(forward, 5999, {**GC, "label": label})
        if reply["Status"] == "Success" or reply.get("ExistingJobStatus") == "FINISHED":
            break
        assert time.monotonic() < deadline, reply
        time.sleep(0.5)
    if 5999 not in loads.acked:
        loads.acked.append(5999)
    loads.check_exactly_once()


def test_slow_link_under_64_clients(lab):
    """A BE's link at 64 kbit/s (tbf) while 64 clients load through the FE: every client gets
    its answer within its deadline, every acknowledged load is visible once, and the BE is
    writable again once the link is back."""
    c, net = lab.c, lab.net
    loads = Loads(c, 7000)
    net.slow("be0", "64kbit")
    try:
        with ThreadPoolExecutor(64) as pool:
            t0 = time.monotonic()
            replies = list(pool.map(lambda _: loads.one(timeout=60)[0], range(64)))
            took = time.monotonic() - t0
    finally:
        net.heal()
    print(
        f"64 clients over a 64 kbit/s BE link: {took:.1f} s, {sum(r.get('Status') == 'Success' for r in replies)} ok"
    )
    assert all(r.get("Status") in ("Success", "Fail") for r in replies), replies
    assert sum(r.get("Status") == "Success" for r in replies) >= 32, replies
    assert _heal_and_wait(lab) <= 5 + MARGIN_S
    loads.check_exactly_once()


def test_fe_partitioned_from_a_be_that_haproxy_still_sends_loads_to(lab):
    """FE and one BE cannot reach each other; haproxy (which the FE redirects public loads to)
    can. The BE leaves the FE's routing within the bound; public loads through haproxy all get
    an answer within their deadline and, once the bound has passed, all succeed; the doctor
    names the FE -> BE hop."""
    c, net = lab.c, lab.net
    loads = Loads(c, 8000)
    victim = c.bes[2]
    for _ in range(4):
        assert loads.one(PUBLIC)[0]["Status"] == "Success"
    net.drop("fe", "be2")
    net.drop("be2", "fe")
    t0 = time.monotonic()
    while time.monotonic() - t0 < BOUND_S + MARGIN_S:
        t1 = time.monotonic()
        reply, _ = loads.one(PUBLIC, timeout=30)
        assert reply.get("Status") in ("Success", "Fail"), reply
        assert time.monotonic() - t1 < 20
    _, row = _out_of_routing(c, victim, 10)
    assert row["Writable"] == "false" or row["Alive"] == "false", row
    for _ in range(10):
        reply, _ = loads.one(PUBLIC, timeout=30)
        assert reply["Status"] == "Success", reply
    status, out = c.doctor()
    print(out)
    assert status == 2, out
    assert f"STUCK fe {c.fe.host}:{c.fe.http_port} -> be {lab.addr(victim)}" in out, out
    healed = _heal_and_wait(lab)
    assert healed <= 5 + MARGIN_S
    loads.check_exactly_once()


def test_haproxy_to_a_dropped_be_and_a_forward_loop(lab):
    """Last (it changes membership): a BE dropped from the cluster that haproxy still sends
    loads to forwards them to the owner, so public loads keep succeeding; a forward that already
    took its hop is never sent on (no loop)."""
    c = lab.c
    loads = Loads(c, 9000)
    gone = c.bes[2]
    c.fe.query(f"ALTER SYSTEM DROP BACKEND '{lab.addr(gone)}'")
    c.wait_backends(lambda rows: len(rows) == 2)
    for _ in range(9):  # round-robin: a third of them reach the dropped BE
        reply, _ = loads.one(PUBLIC, timeout=30)
        assert reply["Status"] == "Success", reply
    owner = _owner(lab)
    other = next(b for b in c.bes[:2] if b is not owner)
    # A loop attempt: a request that already took its hop, naming another BE: loaded here.
    url = f"http://{lab.addr(other)}/api/nf/t/_stream_load_forward?forward_to={lab.addr(owner)}"
    reply = loads.direct(url, 8999, {**GC, "X-Galene-Forwarded-By": lab.addr(owner)})
    assert reply["Status"] == "Success", reply
    loads.check_exactly_once()
