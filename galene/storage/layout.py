"""Where data files live under a storage root.

Layout: `data/<db_id>/<table_id>/<partition_id>/<tablet_id>/<rowset_id>_<n>.parquet`.
Paths here are '/'-joined strings (pyarrow.fs paths, also valid local paths); the catalog
stores them relative to the root so the root can move.
"""

from __future__ import annotations

import posixpath

DATA_DIR = "data"
DATA_SUFFIX = ".parquet"
TMP_SUFFIX = ".tmp"


def _join(root: str, rel: str) -> str:
    return posixpath.join(root, rel) if root else rel


def tablet_rel_dir(db_id: int, table_id: int, partition_id: int, tablet_id: int) -> str:
    return f"{DATA_DIR}/{db_id}/{table_id}/{partition_id}/{tablet_id}"


def tablet_dir(root: str, db_id: int, table_id: int, partition_id: int, tablet_id: int) -> str:
    return _join(root, tablet_rel_dir(db_id, table_id, partition_id, tablet_id))


def rowset_rel_file(
    db_id: int, table_id: int, partition_id: int, tablet_id: int, rowset_id: str, n: int
) -> str:
    return f"{tablet_rel_dir(db_id, table_id, partition_id, tablet_id)}/{rowset_id}_{n}{DATA_SUFFIX}"


def rowset_file(
    root: str, db_id: int, table_id: int, partition_id: int, tablet_id: int, rowset_id: str, n: int
) -> str:
    return _join(root, rowset_rel_file(db_id, table_id, partition_id, tablet_id, rowset_id, n))


def table_rel_dir(db_id: int, table_id: int) -> str:
    return f"{DATA_DIR}/{db_id}/{table_id}"


def absolute(root: str, rel: str) -> str:
    """A root-relative path (as stored in Rowset.files) inside the filesystem."""
    return _join(root, rel)


def relative(root: str, path: str) -> str:
    """The root-relative form of a filesystem path under `root`."""
    if not root:
        return path
    prefix = root.rstrip("/") + "/"
    if not path.startswith(prefix):
        raise ValueError(f"{path} is not under {root}")
    return path[len(prefix) :]
