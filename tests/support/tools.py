"""External commands the tests drive (haproxy, iptables, ip, tc, ...). Tests never install
anything: the Makefile's `tools` target does (as root); a test whose tool is missing skips,
naming the tool and the target."""

from __future__ import annotations

import os
import shutil

import pytest

# Debian keeps iproute2's, iptables' and haproxy's commands in sbin, which a non-login PATH may lack.
_SBIN = ("/usr/sbin", "/sbin", "/usr/local/sbin")


def find_tool(name: str) -> str | None:
    """The command `name` on PATH or in an sbin directory, or None."""
    found = shutil.which(name)
    if found:
        return found
    return next((p for p in (os.path.join(d, name) for d in _SBIN) if os.access(p, os.X_OK)), None)


def require_tool(name: str, package: str | None = None) -> str:
    """The command `name`; skips the test when it is missing, naming what installs it."""
    found = find_tool(name)
    if found is None:
        pytest.skip(f"`{name}` is not installed (make tools; Debian package {package or name})")
    return found
