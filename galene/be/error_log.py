"""Rejected-row logs of stream loads, served at `/api/_load_error_log?file=…` (the ErrorURL).

Each failed or partially filtered load writes one small text file: one line per rejected
row with the reason and the raw row text, at most `max_rows` rows and `max_bytes` bytes,
so a bad 1 GB load cannot fill the disk with its own error log.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from galene.load.source import RowError

_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


class ErrorLogStore:
    def __init__(self, directory: Path, public_host: str, http_port: int, max_bytes: int = 1 << 20):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.public_host = public_host
        self.http_port = http_port
        self.max_bytes = max_bytes

    def save(self, label: str, txn_id: int, errors: list[RowError]) -> str:
        name = f"error_log_{_SAFE.sub('_', label)[:100]}_{txn_id}"
        lines: list[str] = []
        size = 0
        for e in errors:
            raw = e.raw if len(e.raw) <= 4096 else e.raw[:4096] + "…"
            line = f"Reason: {e.reason}. src line [{raw}]; \n"
            size += len(line)
            if size > self.max_bytes:
                lines.append("(more rejected rows omitted)\n")
                break
            lines.append(line)
        tmp = self.dir / (name + ".tmp")
        tmp.write_text("".join(lines), encoding="utf-8")
        os.replace(tmp, self.dir / name)
        return f"http://{self.public_host}:{self.http_port}/api/_load_error_log?file={name}"

    def read(self, name: str) -> str | None:
        if not name or _SAFE.search(name) or name.startswith("."):
            return None
        path = self.dir / name
        if not path.is_file():
            return None
        return path.read_text(encoding="utf-8")
