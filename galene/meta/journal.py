"""The FE journal: an append-only table of encoded ops in SQLite (WAL mode).

Rows are (id, op_type, data = `encode_op` bytes, ts). Ids are assigned by the caller
(`MetaStore`) so they stay contiguous across purges. A second table remembers the highest
id ever purged: after a checkpoint deletes old rows, recovery can tell "these ops are
covered by an image" from "these ops are lost".

Sync policy (`master_sync_policy`): SYNC makes every commit durable (synchronous=FULL);
WRITE_NO_SYNC hands the commit to the OS without fsync (NORMAL: survives a process crash,
not a power loss); NO_SYNC never syncs (OFF).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

SYNC_LEVELS = {"SYNC": "FULL", "WRITE_NO_SYNC": "NORMAL", "NO_SYNC": "OFF"}


class Journal:
    def __init__(self, path: str | Path, sync_policy: str = "SYNC"):
        policy = sync_policy.upper()
        if policy not in SYNC_LEVELS:
            raise ValueError(
                f"unknown master_sync_policy {sync_policy!r}; expected one of {sorted(SYNC_LEVELS)}"
            )
        self.path = Path(path)
        # Autocommit mode: each append is its own transaction; purge uses an explicit one.
        self._conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        self._lock = threading.Lock()
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(f"PRAGMA synchronous={SYNC_LEVELS[policy]}")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS journal (id INTEGER PRIMARY KEY, op_type TEXT NOT NULL, "
            "data BLOB NOT NULL, ts REAL NOT NULL)"
        )
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS journal_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)"
        )

    def append(self, journal_id: int, op_type: str, data: bytes, ts: float) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT INTO journal (id, op_type, data, ts) VALUES (?, ?, ?, ?)",
                (journal_id, op_type, data, ts),
            )

    def delete(self, journal_id: int) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM journal WHERE id = ?", (journal_id,))

    def bounds(self) -> tuple[int, int] | None:
        """(min id, max id) of the rows present, None when empty."""
        with self._lock:
            lo, hi = self._conn.execute("SELECT MIN(id), MAX(id) FROM journal").fetchone()
        return None if lo is None else (lo, hi)

    def purged_upto(self) -> int:
        with self._lock:
            row = self._conn.execute("SELECT value FROM journal_meta WHERE key = 'purged_upto'").fetchone()
        return row[0] if row else 0

    def purge(self, upto_id: int) -> None:
        """Delete rows with id <= upto_id and remember that they were purged, atomically."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute("DELETE FROM journal WHERE id <= ?", (upto_id,))
                self._conn.execute(
                    "INSERT INTO journal_meta (key, value) VALUES ('purged_upto', ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = MAX(value, excluded.value)",
                    (upto_id,),
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def entries(self, after_id: int = 0, limit: int = -1) -> Iterator[tuple[int, str, bytes]]:
        """(id, op_type, data) rows with id > after_id in id order, read in batches."""
        remaining = limit
        while remaining != 0:
            batch = 1000 if remaining < 0 else min(remaining, 1000)
            with self._lock:
                rows = self._conn.execute(
                    "SELECT id, op_type, data FROM journal WHERE id > ? ORDER BY id LIMIT ?",
                    (after_id, batch),
                ).fetchall()
            yield from rows
            if len(rows) < batch:
                return
            after_id = rows[-1][0]
            if remaining > 0:
                remaining -= len(rows)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
