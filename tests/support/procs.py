"""Processes the tests started, as the kernel sees them: their children, their peak memory."""

from __future__ import annotations

import subprocess
from pathlib import Path


def peak_rss_bytes(pid: int) -> int:
    """The peak resident set size of a live process (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise LookupError(f"no VmHWM for pid {pid}")


def children_of(pid: int) -> list[int]:
    out = []
    try:
        res = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False)
        for line in res.stdout.split():
            child = int(line)
            out.append(child)
            out.extend(children_of(child))
    except FileNotFoundError:
        pass
    return out


