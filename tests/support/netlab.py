"""The network lab of the fault tests: network namespaces the test creates (root only), and
faults inside them.

`NetLab` makes a bridge namespace and one namespace per node (an FE, each BE, haproxy, a
SeaweedFS server), each joined to the bridge by a veth pair, with an address from 198.18.0.0/15
(the benchmarking range) and no default route: no packet of a node can leave the machine. Each
lab takes one /24 of that range that no interface of the host has yet (labs of tests running
side by side never meet). The test process reaches the nodes through one more veth from its own
namespace (`.1` of the lab's /24) — only the lab's addresses are routed there. Every rule and
queue a fault adds lives inside a node's namespace, never in the host's.

Faults (each removable, so what runs there must heal by itself; none needs `tc netem` or tc
actions, which this kernel lacks):

* `drop(node, peer, port)` / `reject(node, peer, port)`: iptables `DROP` / `REJECT
  --reject-with tcp-reset` of the node's packets to a peer (and port) — established
  connections included; needs the `iptables` command (Debian's, installed by `make tools`);
* `drop_incoming(node, port)`: every packet to the node's `port` is dropped (iptables `INPUT`),
  or without iptables every packet the node sends (`cut`): a black-holed server;
* `blackhole(node, peer)`: a `blackhole` route to the peer in the node's namespace (new
  packets to it are discarded; local senders get an error);
* `cut(node)`: `tc qdisc … pfifo limit 0` on the node's link (drops everything it sends);
* `slow(node, rate)`: `tc qdisc … tbf` (a slow link);
* `reset(node, peer)`: `ss -K` destroys the node's established sockets to the peer.

`loopback_namespace()` is the smallest lab: one namespace with only its loopback, for a test
that runs a client and a server inside it and black-holes its `lo`.
"""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from tests.support.tools import find_tool

SUBNET = "198.18.0.0/15"


def _run(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), capture_output=True, text=True, check=check, timeout=60)


def unavailable_reason(tools: tuple[str, ...] = ("ip", "tc", "ss")) -> str | None:
    """Why this process cannot build a lab (not root, a tool missing), or None."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add); not root here"
    for tool in tools:
        if find_tool(tool) is None:
            return f"`{tool}` is not installed"
    return None


def iptables() -> str | None:
    """The `iptables` command (Debian's, installed by `make tools`), or None."""
    return find_tool("iptables")


def have_iptables() -> bool:
    return iptables() is not None


def _host_nets() -> set[str]:
    """The /24s (as "a.b.c") the host's interfaces have addresses in."""
    done = _run("ip", "-4", "-o", "addr", "show", check=False)
    return {f.split("/")[0].rsplit(".", 1)[0] for line in done.stdout.splitlines() for f in line.split()[3:4]}


class NetLab:
    __test__ = False

    def __init__(self):
        self.tag = f"{os.getpid() % 1000}{random.randrange(100):02d}"
        self.bridge_ns = f"gbr{self.tag}"
        self.nodes: dict[str, tuple[str, str]] = {}  # name -> (namespace, address)
        self._host_if = f"gh{self.tag}"
        self._faults: list[list[str]] = []  # commands that undo the faults in place
        self._n = 1
        self.net = ""  # this lab's /24 of 198.18.0.0/15, as "198.x.y": chosen by create()

    def create(self) -> NetLab:
        reason = unavailable_reason()
        if reason:
            pytest.skip(f"network fault tests: {reason}")
        taken = _host_nets()
        self.net = next(
            n for n in (f"198.{18 + random.randrange(2)}.{random.randrange(256)}" for _ in range(1000)) if n not in taken
        )
        try:
            _run("ip", "netns", "add", self.bridge_ns)
            b = ["ip", "netns", "exec", self.bridge_ns]
            _run(*b, "ip", "link", "add", "br0", "type", "bridge")
            _run(*b, "ip", "link", "set", "br0", "up")
            _run(*b, "ip", "link", "set", "lo", "up")
            # The test process's own door into the lab.
            peer = f"gb{self.tag}c"
            _run("ip", "link", "add", self._host_if, "type", "veth", "peer", "name", peer)
            _run("ip", "link", "set", peer, "netns", self.bridge_ns)
            _run(*b, "ip", "link", "set", peer, "master", "br0")
            _run(*b, "ip", "link", "set", peer, "up")
            _run("ip", "addr", "add", f"{self.net}.1/24", "dev", self._host_if)
            _run("ip", "link", "set", self._host_if, "up")
        except subprocess.CalledProcessError as e:
            self.destroy()
            pytest.skip(f"network fault tests: cannot build the lab: {e.stderr.strip()}")
        return self

    def add_node(self, name: str) -> tuple[str, str]:
        """A namespace of its own for `name`, on the bridge; returns (namespace, address)."""
        self._n += 1
        ns = f"g{self.tag}{name}"[:15]
        addr = f"{self.net}.{self._n}"
        out, into = f"gv{self.tag}{self._n}b", f"gv{self.tag}{self._n}n"
        b = ["ip", "netns", "exec", self.bridge_ns]
        n = ["ip", "netns", "exec", ns]
        _run("ip", "netns", "add", ns)
        _run("ip", "link", "add", out, "type", "veth", "peer", "name", into)
        _run("ip", "link", "set", out, "netns", self.bridge_ns)
        _run("ip", "link", "set", into, "netns", ns)
        _run(*b, "ip", "link", "set", out, "master", "br0")
        _run(*b, "ip", "link", "set", out, "up")
        _run(*n, "ip", "link", "set", into, "name", "eth0")
        _run(*n, "ip", "addr", "add", f"{addr}/24", "dev", "eth0")
        _run(*n, "ip", "link", "set", "eth0", "up")
        _run(*n, "ip", "link", "set", "lo", "up")
        self.nodes[name] = (ns, addr)
        return ns, addr

    def ns(self, name: str) -> str:
        return self.nodes[name][0]

    def addr(self, name: str) -> str:
        return self.nodes[name][1]

    def _in(self, name: str, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        return _run("ip", "netns", "exec", self.ns(name), *cmd, check=check)

    # --- faults -----------------------------------------------------------------------------
    def drop(self, node: str, peer: str, port: int | None = None, reject: bool = False) -> None:
        """iptables: the node's packets to `peer` (an address or a node name) are dropped (or
        refused with a TCP reset)."""
        cmd = iptables()
        if cmd is None:
            pytest.skip("iptables is not installed (make tools)")
        dst = self.nodes[peer][1] if peer in self.nodes else peer
        rule = ["OUTPUT", "-d", dst, "-p", "tcp"]
        if port is not None:
            rule += ["--dport", str(port)]
        rule += ["-j", "REJECT", "--reject-with", "tcp-reset"] if reject else ["-j", "DROP"]
        self._in(node, cmd, "-I", *rule)
        self._faults.append(["ip", "netns", "exec", self.ns(node), cmd, "-D", *rule])

    def reject(self, node: str, peer: str, port: int | None = None) -> None:
        self.drop(node, peer, port, reject=True)

    def drop_incoming(self, node: str, port: int) -> str:
        """Black-hole the node's server on `port`: iptables drops every packet to it, or (no
        iptables) the node's link drops every packet it sends. Returns how ("iptables" | "qdisc")."""
        cmd = iptables()
        if cmd is None:
            self.cut(node)
            return "qdisc"
        rule = ["INPUT", "-p", "tcp", "--dport", str(port), "-j", "DROP"]
        self._in(node, cmd, "-I", *rule)
        self._faults.append(["ip", "netns", "exec", self.ns(node), cmd, "-D", *rule])
        return "iptables"

    def blackhole(self, node: str, peer: str) -> None:
        dst = self.nodes[peer][1] if peer in self.nodes else peer
        self._in(node, "ip", "route", "add", "blackhole", f"{dst}/32")
        self._faults.append(
            ["ip", "netns", "exec", self.ns(node), "ip", "route", "del", "blackhole", f"{dst}/32"]
        )

    def cut(self, node: str) -> None:
        """Drop everything the node sends (a pfifo queue of length 0 on its link)."""
        self._in(node, "tc", "qdisc", "add", "dev", "eth0", "root", "pfifo", "limit", "0")
        self._faults.append(
            ["ip", "netns", "exec", self.ns(node), "tc", "qdisc", "del", "dev", "eth0", "root"]
        )

    def slow(self, node: str, rate: str = "64kbit") -> None:
        self._in(
            node, "tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", rate, "burst", "16kbit", "latency", "400ms"
        )  # fmt: skip
        self._faults.append(
            ["ip", "netns", "exec", self.ns(node), "tc", "qdisc", "del", "dev", "eth0", "root"]
        )

    def reset(self, node: str, peer: str) -> int:
        """Destroy the node's established TCP sockets to `peer` (ss -K); returns how many."""
        dst = self.nodes[peer][1] if peer in self.nodes else peer
        done = self._in(node, "ss", "-K", "-t", "state", "established", "dst", dst, check=False)
        return max(0, len([ln for ln in done.stdout.splitlines() if ln.strip()]) - 1)

    def heal(self) -> None:
        """Undo every fault still in place (newest first)."""
        while self._faults:
            _run(*self._faults.pop(), check=False)

    def destroy(self) -> None:
        self.heal()
        for ns, _ in self.nodes.values():
            _run("ip", "netns", "del", ns, check=False)
        with contextlib.suppress(Exception):
            _run("ip", "link", "del", self._host_if, check=False)
        _run("ip", "netns", "del", self.bridge_ns, check=False)
        self.nodes.clear()


def loopback_unavailable_reason() -> str | None:
    """Why `loopback_namespace()` cannot be made here (it is tried once), or None."""
    reason = unavailable_reason(("ip", "tc"))
    if reason:
        return reason
    probe = f"galene-probe-{uuid.uuid4().hex[:8]}"
    made = _run("ip", "netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()}"
    _run("ip", "netns", "del", probe, check=False)
    return None


@contextlib.contextmanager
def loopback_namespace() -> Iterator[str]:
    """A namespace with only its loopback up; its name. Deleted on exit."""
    name = f"galene-bh-{uuid.uuid4().hex[:8]}"
    _run("ip", "netns", "add", name)
    try:
        _run("ip", "netns", "exec", name, "ip", "link", "set", "lo", "up")
        yield name
    finally:
        _run("ip", "netns", "del", name, check=False)

