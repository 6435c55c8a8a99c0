"""Operator tools over FE metadata files: validate/read/write images, dump state, browse the journal.

Pure functions; the CLI and the HTTP API (/dump, SHOW PROC '/bdbje') wire them. They read
files directly, so they work on a stopped FE's meta dir as well as beside a running one.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from galene.catalog.model import CatalogState
from galene.catalog.ops import decode_op
from galene.meta.image import ImageError, read_image, write_image_file
from galene.meta.journal import Journal

__all__ = ["ImageError", "dump_state", "list_journal", "read_image", "validate_image", "write_image_file"]


def validate_image(path: str | Path) -> tuple[bool, str]:
    """Load an image fully; (ok, the Doris-style message, plus the reason when invalid)."""
    try:
        read_image(path)
    except ImageError as e:
        return False, f"Load image failed. Image file {path} is invalid.\n{e.message}"
    return True, f"Load image success. Image file {path} is valid."


def dump_state(state: CatalogState) -> dict:
    """The state as JSON-able builtins (dict keys as strings)."""
    return msgspec.to_builtins(state, str_keys=True)


def list_journal(meta_dir: str | Path, from_id: int = 1, limit: int = 100) -> list[dict]:
    """Journal entries with id >= from_id: [{"id", "op_type", "data"}], data JSON-able."""
    path = Path(meta_dir) / "journal" / "journal.db"
    if not path.exists():
        raise FileNotFoundError(f"no journal at {path}")
    journal = Journal(path)
    try:
        return [
            {"id": journal_id, "op_type": kind, "data": msgspec.to_builtins(decode_op(data), str_keys=True)}
            for journal_id, kind, data in journal.entries(after_id=from_id - 1, limit=limit)
        ]
    finally:
        journal.close()
