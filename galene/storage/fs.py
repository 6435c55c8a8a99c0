"""Filesystems for the storage root: a URI or path in, a pyarrow filesystem and a root path out.

All data-file IO in Galene goes through the `pyarrow.fs.FileSystem` returned here, so the
storage root can be a local directory, S3 (or an S3-compatible store), or anything else
pyarrow can open from a URI.
"""

from __future__ import annotations

import os
from urllib.parse import unquote, urlparse

import pyarrow.fs as pafs


def filesystem_for(uri: str) -> tuple[pafs.FileSystem, str]:
    """(filesystem, root path inside it) for a storage root.

    `file:///abs/path` and plain paths give the local filesystem and an absolute path;
    `s3://bucket/prefix?endpoint_override=host:port&region=...&scheme=http` gives an
    S3FileSystem and `bucket/prefix`; any other scheme pyarrow knows (gs://, hdfs://, ...) is
    opened with `FileSystem.from_uri`. The returned path never ends with `/`.
    """
    if "://" not in uri:
        return pafs.LocalFileSystem(), _clean_local(uri)
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise ValueError(f"file URI with a host is not supported: {uri}")
        return pafs.LocalFileSystem(), _clean_local(unquote(parsed.path))
    fs, path = pafs.FileSystem.from_uri(uri)
    return fs, path.rstrip("/")


def _clean_local(path: str) -> str:
    cleaned = os.path.abspath(os.path.expanduser(path))
    return cleaned.rstrip("/") or "/"
