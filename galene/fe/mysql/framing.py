"""MySQL packet framing on the endpoint's sockets, every read and write bounded in size and time.

`GaleneStream` reads a payload (a command, or a login packet) joined from its 16 MB-1 packets,
at most `max_payload` bytes — a longer one is read on and dropped piece by piece, never held,
then answered with 1153 — checking each packet's sequence id (1156 when it is wrong); the wait
for a command is bounded by the session's `wait_timeout` (4031), every other read by
`net_read_timeout` (1159), every write by `net_write_timeout`. It writes payloads and result
rows split into as many packets as the protocol requires. The limits a session's variables
may set (`PACKET_LIMIT_RANGE`, `TIMEOUT_RANGE`) are MySQL's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from mysql_mimic.results import ResultColumn as MimicColumn
from mysql_mimic.stream import ConnectionClosed
from mysql_mimic.types import ColumnType as MysqlType
from mysql_mimic.types import uint_len
from mysql_mimic.utils import seq

from galene.fe.mysql.errors import (
    ER_CLIENT_INTERACTION_TIMEOUT,
    ER_NET_PACKET_TOO_LARGE,
    ER_NET_PACKETS_OUT_OF_ORDER,
    ER_NET_READ_INTERRUPTED,
    INACTIVITY_MESSAGE,
    PACKET_TOO_LARGE_MESSAGE,
)
from galene.fe.mysql.result_encoding import MAX_PACKET, frame_packets

_MAX_PACKET = MAX_PACKET
# Login packets (handshake response, auth data) are small: user, scramble, database, plugin
# and connect attributes (MySQL caps those at 64 KB).
_LOGIN_PACKET_LIMIT = 128 * 1024
# An oversized payload is read on and dropped in pieces of this size, so that the client,
# which is still sending it, can read the error afterwards; past _DISCARD_LIMIT dropped bytes
# the connection is closed without waiting for the rest.
_DISCARD_CHUNK = 256 * 1024
_DISCARD_LIMIT = 1 << 30
# Connections the kernel queues before we accept them (Doris' mysql_nio_backlog_num): a burst
# MySQL's ranges for the session variables that bound a connection.
PACKET_LIMIT_RANGE = (1024, 1 << 30)
TIMEOUT_RANGE = (1, 31536000)


def clamp(value: Any, bounds: tuple[int, int], default: int) -> int:
    """A session variable's value held to MySQL's range (`default` when it is no number)."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        return default
    return max(bounds[0], min(bounds[1], number))


class WireError(Exception):
    """A framing failure the server answers with an error packet, then closes the connection."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class PacketTooLarge(WireError):
    def __init__(self) -> None:
        super().__init__(ER_NET_PACKET_TOO_LARGE, PACKET_TOO_LARGE_MESSAGE)


class PacketsOutOfOrder(WireError):
    def __init__(self) -> None:
        super().__init__(ER_NET_PACKETS_OUT_OF_ORDER, "Got packets out of order")


class NetReadTimeout(WireError):
    def __init__(self) -> None:
        super().__init__(ER_NET_READ_INTERRUPTED, "Got timeout reading communication packets")


class IdleTimeout(WireError):
    """No command arrived within the session's wait_timeout."""

    def __init__(self) -> None:
        super().__init__(ER_CLIENT_INTERACTION_TIMEOUT, INACTIVITY_MESSAGE)


class NetWriteTimeout(ConnectionError):
    """The client did not take our bytes within net_write_timeout: the connection is dropped."""


class GaleneStream:
    """MySQL packet framing with every read and write bounded in size and time.

    It stands in for mysql-mimic's MysqlStream (same methods; that class is compiled and
    cannot be subclassed), whose read trusts the announced length, has no deadlines and
    frames result rows of 16 MB or more with a length that overflows into the sequence id.
    `max_payload`, `read_timeout` and `write_timeout` are set by the connection for the phase
    it is in (login, or the session's variables before each command).
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, timeout: float):
        self.reader = reader
        self.writer = writer
        self.seq = seq(256)
        self._buffer = bytearray()
        self._buffer_size = 1 << 15  # write() flushes once this much is buffered
        self.max_payload = _LOGIN_PACKET_LIMIT
        # Login packets past the bound are not read on: no honest client sends one.
        self.discard_oversized = False
        self.read_timeout = timeout
        self.write_timeout = timeout

    def reset_seq(self) -> None:
        self.seq.reset()

    async def start_tls(self, ssl: Any) -> None:
        # The endpoint does not announce CLIENT_SSL; a client asking anyway is a bad handshake.
        raise ConnectionClosed("TLS is not supported on this port")

    # -- reading --------------------------------------------------------------------------
    async def read(self, idle_timeout: float | None = None) -> bytes:
        """One payload (a command, or a login packet), joined from its packets.

        `idle_timeout` bounds the wait for the first header (IdleTimeout); every other read
        waits at most `read_timeout` (NetReadTimeout). A payload over `max_payload` is
        discarded and raises PacketTooLarge once the client has finished sending it.
        """
        first_wait = self.read_timeout if idle_timeout is None else idle_timeout
        header = await self._read_exactly(4, first_wait, IdleTimeout if idle_timeout is not None else None)
        pieces: list[bytes] = []
        total = 0
        while True:
            word = int.from_bytes(header, "little")
            length, sequence_id = word & _MAX_PACKET, word >> 24
            if sequence_id != next(self.seq):
                raise PacketsOutOfOrder()
            if total + length > self.max_payload:
                if self.discard_oversized:
                    await self._discard(length)
                raise PacketTooLarge()
            if length:
                pieces.append(await self._read_exactly(length, self.read_timeout))
                total += length
            if length < _MAX_PACKET:
                break
            header = await self._read_exactly(4, self.read_timeout)
        if len(pieces) == 1:
            return pieces[0]
        return b"".join(pieces)

    async def _read_exactly(self, n: int, timeout: float, on_timeout: type[WireError] | None = None) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                return await self.reader.readexactly(n)
        except asyncio.IncompleteReadError:
            raise ConnectionClosed() from None
        except TimeoutError:
            raise (on_timeout or NetReadTimeout)() from None

    async def _discard(self, length: int) -> None:
        """Read and drop the rest of an oversized payload: this packet's `length` bytes and
        every continuation packet, holding at most one _DISCARD_CHUNK at a time."""
        dropped = 0
        while True:
            remaining = length
            while remaining:
                if dropped >= _DISCARD_LIMIT:
                    return  # the client keeps sending: close without reading the rest
                piece = min(remaining, _DISCARD_CHUNK)
                await self._read_exactly(piece, self.read_timeout)
                remaining -= piece
                dropped += piece
            if length < _MAX_PACKET:
                return
            word = int.from_bytes(await self._read_exactly(4, self.read_timeout), "little")
            length = word & _MAX_PACKET
            if word >> 24 != next(self.seq):
                return  # not a continuation after all: answer at once

    # -- writing --------------------------------------------------------------------------
    def write_many(self, packets: Sequence[bytes]) -> None:
        for data in packets:
            self._frame(data)

    def write_text_rows(self, rows: Sequence[Sequence[Any]], columns: Sequence[MimicColumn]) -> int:
        """Text result rows framed into the buffer (mysql-mimic's encoder; a row of 16 MB or
        more is split into several packets, as the protocol requires)."""
        buf = self._buffer
        sequence = self.seq
        count = 0
        for row in rows:
            start = len(buf)
            buf.extend(b"\0\0\0\0")
            for column, value in zip(columns, row):
                if value is None:
                    buf.append(0xFB)
                    continue
                if column.use_default_text_encoder:
                    if isinstance(value, bytes):
                        encoded = value
                    else:
                        encoded = (value if isinstance(value, str) else str(value)).encode(column.codec)
                elif column.type == MysqlType.TINY:
                    encoded = str(int(value)).encode(column.codec)
                else:
                    encoded = column.text_encoder(column, value)
                size = len(encoded)
                if size < 251:
                    buf.append(size)
                else:
                    buf.extend(uint_len(size))
                buf.extend(encoded)
            size = len(buf) - start - 4
            if size < _MAX_PACKET:
                sequence_id = sequence.value
                sequence.value = (sequence_id + 1) & 0xFF
                buf[start : start + 4] = (size | sequence_id << 24).to_bytes(4, "little")
            else:
                payload = bytes(buf[start + 4 :])
                del buf[start:]
                self._frame(payload)
            count += 1
        return count

    def write_payloads(self, payloads: pa.Array, lengths: Any) -> None:
        """Binary result rows (result_encoding.binary_payloads) framed into the buffer: the whole
        batch at once, or row by row when one of them needs several packets."""
        framed = frame_packets(payloads, lengths, self.seq.value)
        if framed is None:
            for payload in payloads.to_pylist():
                self._frame(payload)
            return
        self._buffer += memoryview(framed)
        self.seq.value = (self.seq.value + len(payloads)) & 0xFF

    def _frame(self, data: bytes) -> None:
        """Frame one payload into the buffer, split into 16 MB-1 packets when it needs to be."""
        buf = self._buffer
        offset = 0
        while True:
            piece = data[offset : offset + _MAX_PACKET]
            buf.extend((len(piece) | next(self.seq) << 24).to_bytes(4, "little"))
            buf.extend(piece)
            offset += len(piece)
            if len(piece) < _MAX_PACKET:
                return

    async def write(self, data: bytes, drain: bool = True) -> None:
        self._frame(data)
        if drain or len(self._buffer) >= self._buffer_size:
            await self.drain()

    async def drain(self) -> None:
        if self._buffer:
            self.writer.write(self._buffer)
            self._buffer = bytearray()
        try:
            async with asyncio.timeout(self.write_timeout):
                await self.writer.drain()
        except TimeoutError:
            raise NetWriteTimeout(f"no progress writing to the client in {self.write_timeout}s") from None
