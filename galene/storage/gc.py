"""Garbage collection of data files no committed rowset references.

Orphans come from loads that wrote files and then failed or were aborted, from BEs that
died mid-write (`*.tmp`), and from compaction leaving obsolete rowsets behind. A file is
deleted only when the catalog does not reference it AND it is older than a grace period,
so files of loads still in flight (written, not yet committed) are never touched.
"""

from __future__ import annotations

import os
import time

import pyarrow.fs as pafs

from galene.storage import layout


def collect_garbage(
    fs: pafs.FileSystem,
    root: str,
    referenced: set[str],
    grace_seconds: float,
    now: float | None = None,
    running_rowset_ids: set[str] | None = None,
) -> list[str]:
    """Delete unreferenced data files under `<root>/data` older than the grace period.

    `referenced` holds root-relative paths (as in Rowset.files). Only `*.parquet` and `*.tmp`
    files are candidates. Files of `running_rowset_ids` (statements whose engine job is still
    writing, however long it runs) are never candidates. Directories left empty (and themselves older than the grace period,
    so a writer that just created one is not raced) are removed too on local filesystems
    (object stores have no real directories). Returns the deleted files' relative paths.
    """
    now = time.time() if now is None else now
    cutoff_ns = int((now - grace_seconds) * 1e9)
    data_root = layout.absolute(root, layout.DATA_DIR)
    selector = pafs.FileSelector(data_root, recursive=True, allow_not_found=True)
    infos = fs.get_file_info(selector)
    deleted: list[str] = []
    dirs: list[pafs.FileInfo] = []
    remaining_in: dict[str, int] = {}
    for info in infos:
        if info.type == pafs.FileType.Directory:
            dirs.append(info)
            continue
        if info.type != pafs.FileType.File:
            continue
        parent = info.path.rsplit("/", 1)[0]
        rel = layout.relative(root, info.path)
        is_data = rel.endswith((layout.DATA_SUFFIX, layout.TMP_SUFFIX))
        old = info.mtime_ns is not None and info.mtime_ns < cutoff_ns
        running = running_rowset_ids and rel.rsplit("/", 1)[-1].split("_", 1)[0] in running_rowset_ids
        if is_data and rel not in referenced and old and not running:
            try:
                fs.delete_file(info.path)
            except FileNotFoundError:
                pass
            deleted.append(rel)
        else:
            remaining_in[parent] = remaining_in.get(parent, 0) + 1
    if not isinstance(fs, pafs.LocalFileSystem):
        return deleted
    # Deepest directories first, so a parent sees its emptied children as gone.
    for info in sorted(dirs, key=lambda i: i.path.count("/"), reverse=True):
        parent = info.path.rsplit("/", 1)[0]
        old = info.mtime_ns is not None and info.mtime_ns < cutoff_ns
        if remaining_in.get(info.path, 0) or not old:
            remaining_in[parent] = remaining_in.get(parent, 0) + 1
            continue
        try:
            os.rmdir(info.path)  # refuses a directory a writer has put a file in meanwhile
        except OSError:
            remaining_in[parent] = remaining_in.get(parent, 0) + 1
    return deleted
