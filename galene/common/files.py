"""Small local-file durability helpers shared by the journal images, the WAL and rowsets."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_path(path: str | Path) -> None:
    """fsync a file or a directory by path. For a directory this makes the names created or
    renamed in it durable (a rename is durable only once the directory entry is synced)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
