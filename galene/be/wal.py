"""The BE's write-ahead log for group commit: one file per merged transaction (group).

Owns the on-disk record format, writing with fdatasync (what is gathered for a file meanwhile
shares one record and one fsync), reading back with torn-tail detection, and the layout
`<be dir>/wal/<db_id>/<table_id>/<wal_id>_<group label>`.

A record is
    [magic u32][len u32][crc32 u32][payload: len bytes]
    payload = [header_len u32][header JSON][Arrow IPC stream bytes]
all little-endian; crc32 (zlib) covers the payload. The header says which group the record
belongs to (`label`), its row count and the client label (`sub_label`, may be null).
A file is created with WAL_PREALLOCATE_BYTES of zeros (its size made durable once) and
records are written in place with fdatasync, so an append does not change the file's size
and does not wait for the filesystem journal; zeros after the last record are its clean end.
An async load is acknowledged only after its record and every record before it in the file
are fsynced, so a record that fails its checks at the end of a file (the process died while
writing it) was never acknowledged and is discarded.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import msgspec
import pyarrow as pa
from pyarrow import ipc

from galene.common.files import fsync_path

log = logging.getLogger(__name__)

WAL_MAGIC = 0x47574C31  # "GWL1"
_PREFIX = struct.Struct("<III")  # magic, payload length, crc32 of the payload
_HEADER_LEN = struct.Struct("<I")
MAX_RECORD_BYTES = (1 << 32) - 1
# A WAL file is created with this much zeroed space, and grows by at least this much.
WAL_PREALLOCATE_BYTES = 8 << 20


@dataclass
class WalRecord:
    label: str  # the group (merged transaction) label
    sub_label: str | None  # the client's label, if it sent one
    rows: int
    data: pa.Table


@dataclass
class WalReadResult:
    records: list[WalRecord]
    valid_bytes: int  # offset just past the last good record
    discarded_bytes: int  # bytes of bad records (torn tail, crc mismatch) that were skipped
    torn_tail: bool  # the file ended in an incomplete or corrupt record


_IPC_EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"  # end-of-stream marker of the Arrow IPC format


def encode_record(label: str, sub_label: str | None, data: pa.Table) -> bytes:
    """One record holding one load's rows."""
    return encode_parts(label, [(sub_label, data)])


def encode_parts(label: str, parts: list[tuple[str | None, pa.Table]]) -> bytes:
    """One record holding the rows of several loads of one group (one fsync's worth).

    The header lists each load's client label and row count (`parts`); the rows are one
    Arrow IPC stream. A stream is its schema message, record batch messages and an EOS
    marker; assembling it from serialized messages costs a third of a RecordBatchStreamWriter.
    """
    tables = [t for _, t in parts]
    data = tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="permissive")
    if data.num_rows and len(tables) > 1:
        data = data.combine_chunks()  # one batch message instead of one per load
    header = msgspec.json.encode(
        {"label": label, "rows": data.num_rows, "parts": [[sub, t.num_rows] for sub, t in parts]}
    )
    body = [data.schema.serialize(), *(b.serialize() for b in data.to_batches()), _IPC_EOS]
    payload_len = _HEADER_LEN.size + len(header) + sum(len(b) for b in body)
    if payload_len > MAX_RECORD_BYTES:
        raise ValueError(f"WAL record of {payload_len} bytes exceeds {MAX_RECORD_BYTES}")
    payload = b"".join((_HEADER_LEN.pack(len(header)), header, *body))
    return _PREFIX.pack(WAL_MAGIC, len(payload), zlib.crc32(payload)) + payload


# Rows of several loads share a record up to this many bytes of Arrow data.
MAX_GROUPED_RECORD_BYTES = 256 << 20


@dataclass
class Rows:
    """Rows of loads of one group (client label, rows) each, encoded at write time."""

    label: str
    parts: list[tuple[str | None, pa.Table]]


def _encode_grouped(label: str, rows: list[tuple[str | None, pa.Table]]) -> list[bytes]:
    """Records for the pending rows of one label, each at most ~MAX_GROUPED_RECORD_BYTES."""
    out: list[bytes] = []
    parts: list[tuple[str | None, pa.Table]] = []
    size = 0

    def flush() -> None:
        try:
            out.append(encode_parts(label, parts))
        except pa.ArrowException:  # schemas that do not concatenate (a schema change mid-group)
            out.extend(encode_parts(label, [p]) for p in parts)

    for sub_label, data in rows:
        n = data.get_total_buffer_size()
        if parts and size + n > MAX_GROUPED_RECORD_BYTES:
            flush()
            parts, size = [], 0
        parts.append((sub_label, data))
        size += n
    if parts:
        flush()
    return out


def _decode_payload(payload: bytes, split: bool = True) -> list[WalRecord]:
    (header_len,) = _HEADER_LEN.unpack_from(payload, 0)
    start = _HEADER_LEN.size
    header = json.loads(payload[start : start + header_len])
    reader = ipc.open_stream(pa.py_buffer(payload[start + header_len :]))
    data = reader.read_all()
    label = str(header["label"])
    if int(header["rows"]) != data.num_rows:
        raise ValueError(f"WAL record says {header['rows']} rows, holds {data.num_rows}")
    parts = header.get("parts")
    if parts is None:  # a record written before records held several loads
        return [WalRecord(label=label, sub_label=header.get("sub_label"), rows=data.num_rows, data=data)]
    if sum(int(n) for _, n in parts) != data.num_rows:
        raise ValueError("WAL record parts do not add up to its rows")
    if not split and all(sub is None for sub, _ in parts):
        return [WalRecord(label=label, sub_label=None, rows=data.num_rows, data=data)]
    records, offset = [], 0
    for sub_label, n in parts:
        records.append(
            WalRecord(label=label, sub_label=sub_label, rows=int(n), data=data.slice(offset, int(n)))
        )
        offset += int(n)
    return records


def read_wal(path: str | os.PathLike, split: bool = True) -> WalReadResult:
    """Every good record of a WAL file, in order (one per load; with `split` False, a
    record whose loads have no client labels comes back whole).

    A record is good when its magic, length and crc32 check out and its payload decodes.
    Zeros to the end of the file are the unused preallocated space (the clean end). At
    the first bad record: if its length field still points exactly at the next record's
    magic (or at the end of the file), only that record is skipped; otherwise the rest of
    the file is unreadable and is discarded as a torn tail.
    """
    raw = Path(path).read_bytes()
    records: list[WalRecord] = []
    pos = 0
    valid = 0
    discarded = 0
    torn = False
    n = len(raw)
    while pos < n:
        if raw[pos] == 0 and raw.count(0, pos) == n - pos:
            break  # the zeroed, preallocated rest of the file: the clean end
        if n - pos < _PREFIX.size:
            torn = True
            discarded += n - pos
            break
        magic, length, crc = _PREFIX.unpack_from(raw, pos)
        end = pos + _PREFIX.size + length
        if magic != WAL_MAGIC or end > n:
            torn = True
            discarded += n - pos
            break
        payload = raw[pos + _PREFIX.size : end]
        record = None
        if zlib.crc32(payload) == crc:
            try:
                record = _decode_payload(payload, split)
            except (ValueError, KeyError, TypeError, pa.ArrowInvalid, json.JSONDecodeError, struct.error):
                record = None
        if record is None:
            next_ok = end == n or (n - end >= 4 and struct.unpack_from("<I", raw, end)[0] == WAL_MAGIC)
            discarded += end - pos
            if not next_ok:
                torn = True
                discarded += n - end
                break
            log.error("WAL %s: skipping a corrupt record at offset %d (%d bytes)", path, pos, end - pos)
            torn = end == n
            pos = end
            continue
        records.extend(record)
        pos = end
        valid = end
    return WalReadResult(records=records, valid_bytes=valid, discarded_bytes=discarded, torn_tail=torn)


def wal_rows(path: str | os.PathLike) -> list[tuple[str | None, pa.Table]]:
    """(client label, rows) of a WAL file in append order, loads without a client label
    of one record as one table; [] when the file does not exist (nothing was written)."""
    try:
        result = read_wal(path, split=False)
    except FileNotFoundError:
        return []
    if result.discarded_bytes:
        log.warning(
            "WAL %s: %d bytes of unacknowledged (torn or corrupt) records left out",
            path,
            result.discarded_bytes,
        )
    return [(r.sub_label, r.data) for r in result.records]


def wal_dir(root: Path, db_id: int, table_id: int) -> Path:
    return root / str(db_id) / str(table_id)


def wal_file_name(wal_id: int, label: str) -> str:
    return f"{wal_id}_{label}"


# Name suffix of a WAL file created ahead for a group that has taken no loads yet.
SPARE_SUFFIX = ".spare"


@dataclass
class WalFile:
    path: Path
    db_id: int
    table_id: int
    wal_id: int
    label: str


def list_wal_files(root: Path) -> list[WalFile]:
    """Every WAL file under `root`, oldest (smallest wal_id) first; stray names are ignored."""
    found: list[WalFile] = []
    if not root.exists():
        return found
    for db_dir in root.iterdir():
        if not db_dir.is_dir() or not db_dir.name.isdigit():
            continue
        for table_dir in db_dir.iterdir():
            if not table_dir.is_dir() or not table_dir.name.isdigit():
                continue
            for f in table_dir.iterdir():
                wal_id, sep, label = f.name.removesuffix(SPARE_SUFFIX).partition("_")
                if not sep or not wal_id.isdigit() or not label or f.name.endswith(".tmp"):
                    continue
                found.append(WalFile(f, int(db_dir.name), int(table_dir.name), int(wal_id), label))
    found.sort(key=lambda w: w.wal_id)
    return found


class WalWriter:
    """Writes one WAL file (the ingest worker's: `galene.be.ingest_worker`, one writer per file).

    `write(items)` encodes the rows of every `Rows` item of one group as ONE record (raw
    encoded records pass through), writes them in place after the last record and
    fdatasyncs: what the worker gathered for the file meanwhile shares one fsync and one
    Arrow IPC encoding. A failed write is zeroed again and the next one starts at the same
    offset, so a later record never follows garbage; if even that fails the writer refuses
    further writes.
    """

    def __init__(self, path: Path, spare: bool = False):
        # A spare (a file created ahead for a group that has no loads yet) carries
        # SPARE_SUFFIX until its first write renames it; recovery reads both names alike,
        # so the rename needs no directory fsync.
        self.final_path = path
        self.path = path.with_name(path.name + SPARE_SUFFIX) if spare else path
        self.size = 0
        self._fd: int | None = None
        self._broken: BaseException | None = None
        self._allocated = 0  # bytes of the file (records + zeroed preallocated space)

    def _open(self) -> None:
        if self._fd is None:
            created = not self.path.exists()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            if created:
                self._allocated = 0
                self._preallocate(WAL_PREALLOCATE_BYTES)
                fsync_path(self.path.parent)  # the file's name must survive a crash too
            else:  # appending to a file of an earlier run: after its last good record
                self._allocated = os.fstat(self._fd).st_size
                self.size = read_wal(self.path).valid_bytes

    def prepare(self) -> None:
        """Create (and preallocate) the file now, ahead of the first write: the file
        creation's fsyncs then stay off the reply path."""
        self._open()

    def _preallocate(self, nbytes: int) -> None:
        """Reserve space (zeros) past the records, and make the new size durable once: the
        fdatasync of each append then writes data blocks only, with no file-size change
        for the filesystem journal to commit (and no wait behind other files' metadata)."""
        assert self._fd is not None
        os.posix_fallocate(self._fd, self._allocated, nbytes)
        os.fsync(self._fd)
        self._allocated += nbytes

    def write(self, items: list[Rows | bytes]) -> int:
        """Encode, write and fdatasync `items`; returns the bytes written."""
        if self._broken is not None:
            raise OSError(f"WAL {self.path} is unusable after a failed write: {self._broken}")
        chunks: list[bytes] = []
        label = ""
        parts: list[tuple[str | None, pa.Table]] = []  # consecutive row appends: one record
        for item in [*items, None]:
            if isinstance(item, Rows):  # a writer's file belongs to one group: one label
                label = item.label
                parts.extend(item.parts)
                continue
            if parts:
                chunks.extend(_encode_grouped(label, parts))
                parts = []
            if item is not None:
                chunks.append(item)
        self._open()
        assert self._fd is not None
        if self.path != self.final_path:
            os.rename(self.path, self.final_path)
            self.path = self.final_path
        start = self.size
        data = b"".join(chunks)
        try:
            if start + len(data) > self._allocated:
                self._preallocate(max(WAL_PREALLOCATE_BYTES, start + len(data) - self._allocated))
            view = memoryview(data)
            offset = start
            while view:
                written = os.pwrite(self._fd, view, offset)
                view = view[written:]
                offset += written
            os.fdatasync(self._fd)
            self.size = start + len(data)
            return len(data)
        except BaseException:
            try:  # zero what may have been written: the reader stops cleanly at zeros
                os.pwrite(self._fd, bytes(len(data)), start)
                os.fdatasync(self._fd)
            except OSError as undo_error:
                self._broken = undo_error
            raise

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def delete(self) -> None:
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
