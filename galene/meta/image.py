"""The FE metadata image file: one whole `CatalogState` as of one journal id.

Layout (all integers big-endian):

    header  MAGIC (9 bytes b"GALENEIMG") | format version u32 | journal id u64
    body    msgspec msgpack of CatalogState
    footer  body length u64 | sha256(header + body) (32 bytes)

`read_image` refuses anything that is not exactly this (wrong magic or version, a length
that does not match the file size, a bad checksum, an undecodable body) with `ImageError`,
so a torn or corrupt image is never loaded silently.
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

import msgspec

from galene.catalog.model import CatalogState
from galene.common.errors import GaleneError
from galene.common.files import fsync_path

MAGIC = b"GALENEIMG"
FORMAT_VERSION = 1
_HEADER = struct.Struct(f">{len(MAGIC)}sIQ")
_FOOTER = struct.Struct(">Q32s")

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(CatalogState)


class ImageError(GaleneError):
    """An image file that cannot be loaded; the message says why."""


def encode_image(state: CatalogState, journal_id: int) -> bytes:
    header = _HEADER.pack(MAGIC, FORMAT_VERSION, journal_id)
    body = _encoder.encode(state)
    digest = hashlib.sha256(header + body).digest()
    return header + body + _FOOTER.pack(len(body), digest)


def decode_image(data: bytes, name: str = "<image>") -> tuple[int, CatalogState]:
    """(journal id, state) from the bytes of an image file; ImageError if invalid."""
    if len(data) < _HEADER.size + _FOOTER.size:
        raise ImageError(f"image {name} is truncated: {len(data)} bytes")
    magic, version, journal_id = _HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise ImageError(f"image {name} has a bad magic {magic!r}")
    if version != FORMAT_VERSION:
        raise ImageError(f"image {name} has unsupported format version {version}")
    body_len, digest = _FOOTER.unpack_from(data, len(data) - _FOOTER.size)
    if _HEADER.size + body_len + _FOOTER.size != len(data):
        raise ImageError(
            f"image {name} is torn: footer says body is {body_len} bytes, "
            f"file holds {len(data) - _HEADER.size - _FOOTER.size}"
        )
    covered = data[: _HEADER.size + body_len]
    if hashlib.sha256(covered).digest() != digest:
        raise ImageError(f"image {name} has a bad checksum")
    try:
        state = _decoder.decode(covered[_HEADER.size :])
    except msgspec.DecodeError as e:
        raise ImageError(f"image {name} body cannot be decoded: {e}") from e
    return journal_id, state


def read_image(path: str | Path) -> tuple[int, CatalogState]:
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ImageError(f"image {path} cannot be read: {e}") from e
    return decode_image(data, str(path))


def write_image(state: CatalogState, journal_id: int, path: str | Path) -> None:
    """Write and fsync an image at `path` (not atomic; callers rename into place)."""
    data = encode_image(state, journal_id)
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def write_image_file(state: CatalogState, journal_id: int, path: str | Path) -> Path:
    """Write a valid image anywhere, atomically (temp file + rename); its path."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    write_image(state, journal_id, tmp)
    os.replace(tmp, path)
    fsync_path(path.parent)
    return path
