"""A statement's answer on the wire: the OK packet (affected rows, info), the error packet of a
failure, and a result set — its header (column count, Doris' column definitions) and its rows by
the text protocol (COM_QUERY) or the binary one (COM_STMT_EXECUTE), a bounded batch at a time; a
streamed result is read from the engine as it is written to the client.

`ResultWriting` is mixed into `GaleneConnection` (it writes to the connection's stream with the
connection's capabilities and status); the values' encodings are `result_encoding`'s.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator

import pyarrow as pa
from mysql_mimic import packets
from mysql_mimic.errors import MysqlError
from mysql_mimic.results import ResultColumn as MimicColumn
from mysql_mimic.types import Capabilities, ServerStatus, str_len, uint_1, uint_2, uint_len
from mysql_mimic.types import ColumnType as MysqlType

from galene.common.errors import ER_UNKNOWN_ERROR, GaleneError
from galene.fe.mysql.boundary import ResultColumn, StatementResult
from galene.fe.mysql.errors import ER_INVALID_CHARACTER_STRING, error_packet
from galene.fe.mysql.result_encoding import (
    ROW_BATCH,
    binary_payloads,
    mysql_column_spec,
    python_columns,
    text_row_batches,
)
from galene.fe.result_stream import ResultStream

logger = logging.getLogger(__name__)

_ROW_BATCH = ROW_BATCH


class ResultWriting:
    """The answers of `GaleneConnection` (mixed into it: `stream`, `capabilities`,
    `status_flags`, `session` and mysql-mimic's EOF helpers are the connection's)."""

    def _ok_packet(self, affected_rows: int = 0, info: str = "", flags: int = 0) -> bytes:
        parts = [uint_1(0), uint_len(affected_rows), uint_len(0)]
        if Capabilities.CLIENT_PROTOCOL_41 in self.capabilities:
            parts += [uint_2(self.status_flags | flags), uint_2(0)]
        elif Capabilities.CLIENT_TRANSACTIONS in self.capabilities:
            parts.append(uint_2(self.status_flags | flags))
        if Capabilities.CLIENT_SESSION_TRACK in self.capabilities:
            parts.append(str_len(info.encode("utf-8")))
        elif info:
            parts.append(info.encode("utf-8"))
        return b"".join(parts)

    def _error_packet(self, code: int, message: str) -> bytes:
        return error_packet(self.capabilities, code, message)

    def _error_for(self, exc: BaseException) -> bytes:
        code, message = self._error_text(exc)
        # SHOW WARNINGS / SHOW ERRORS after it list the error (until a statement succeeds).
        self.session.statements.diagnostics = [("Error", code, message)]
        return self._error_packet(code, message)

    def _error_text(self, exc: BaseException) -> tuple[int, str]:
        if isinstance(exc, GaleneError):
            return exc.code, exc.mysql_text()
        if isinstance(exc, MysqlError):
            return int(exc.code), str(exc.msg)
        if isinstance(exc, UnicodeDecodeError):
            # MySQL's answer to text that is not in the client's character set.
            bad = bytes(exc.object[exc.start : exc.start + 16])
            shown = "".join(chr(b) if 0x20 <= b < 0x7F else f"\\x{b:02X}" for b in bad)
            return ER_INVALID_CHARACTER_STRING, f"Invalid {self.client_charset.name} character string: '{shown}'"
        logger.exception("statement failed on connection %s", self.connection_id, exc_info=exc)
        return ER_UNKNOWN_ERROR, f"errCode = 2, detailMessage = {exc}"

    def _result_header(self, columns: list[ResultColumn], with_eof: bool) -> list[bytes]:
        header = [packets.make_column_count(capabilities=self.capabilities, column_count=len(columns))]
        header.extend(self._column_definitions(columns))
        if with_eof and not self.deprecate_eof():
            header.append(self.eof())
        return header

    def _column_definitions(self, columns: list[ResultColumn]) -> list[bytes]:
        definitions = []
        for column in columns:
            spec = mysql_column_spec(column.type)
            definitions.append(
                packets.make_column_definition_41(
                    server_charset=self.server_charset,
                    name=column.name,
                    character_set=spec.charset,
                    column_length=spec.length,
                    column_type=spec.mysql_type,
                    flags=spec.flags,
                    decimals=spec.decimals,
                )
            )
        return definitions

    async def _write_result(self, result: StatementResult, binary: bool, more_results: bool = False) -> None:
        more = ServerStatus.SERVER_MORE_RESULTS_EXISTS if more_results else 0
        if result.columns is None:
            await self.stream.write(self._ok_packet(result.affected_rows, result.info, flags=more))
            return
        try:
            self.stream.write_many(self._result_header(result.columns, with_eof=True))
            if binary:
                types = [c.type for c in result.columns]
                async for batch in arrow_batches(result):
                    self.stream.write_payloads(*binary_payloads(batch, types))
                    await self.stream.drain()
            else:
                text_columns = [MimicColumn(c.name, MysqlType.VAR_STRING) for c in result.columns]
                async for rows in text_batches(result):
                    self.stream.write_text_rows(rows, text_columns)
                    await self.stream.drain()
        finally:
            # A streamed result: an error after rows were sent is answered by the command
            # loop's error packet in place of the EOF; its engine job is cancelled here.
            if isinstance(result.rows, ResultStream):
                await result.rows.aclose()
        await self.stream.write(self.ok_or_eof(flags=more), drain=False)
        await self.stream.drain()

    async def _binary_row_packets(self, result: StatementResult) -> AsyncIterator[bytes]:
        """Each row's binary payload, one at a time (a cursor's rows, fetched in parts)."""
        types = [c.type for c in result.columns or []]
        async for batch in arrow_batches(result):
            payloads, _ = binary_payloads(batch, types)
            for payload in payloads.to_pylist():
                yield payload
            await asyncio.sleep(0)



def materialize_rows(rows: list[tuple] | pa.Table | None) -> Iterator[tuple]:
    if rows is None:
        return iter(())
    if isinstance(rows, pa.Table):
        return (row for batch in python_row_batches(StatementResult(columns=[], rows=rows)) for row in batch)
    return iter(rows)


def python_row_batches(result: StatementResult) -> Iterator[list[tuple]]:
    """Rows as Python values, in bounded batches (pyarrow results converted column by column)."""
    rows = result.rows
    if rows is None:
        return
    if isinstance(rows, pa.Table):
        for batch in rows.to_batches(max_chunksize=_ROW_BATCH):
            yield list(zip(*(column.to_pylist() for column in batch.columns)))
        return
    for start in range(0, len(rows), _ROW_BATCH):
        yield list(rows[start : start + _ROW_BATCH])


async def text_batches(result: StatementResult) -> AsyncIterator[list[tuple]]:
    """`result`'s rows as text-protocol values, a bounded batch at a time (a streamed result's
    converted one engine batch at a time)."""
    types = [c.type for c in result.columns or []]
    rows = result.rows
    if not isinstance(rows, ResultStream):
        for batch in text_row_batches(types, rows):
            yield batch
        return
    async for batch in rows.batches():
        for converted in text_row_batches(types, pa.Table.from_batches([batch])):
            yield converted


async def arrow_batches(result: StatementResult) -> AsyncIterator[pa.Table | pa.RecordBatch]:
    """`result`'s rows as Arrow, at most _ROW_BATCH rows at a time (rows built in the FE
    converted to the declared types)."""
    rows = result.rows
    if rows is None:
        return
    if isinstance(rows, ResultStream):
        async for batch in rows.batches():
            for start in range(0, batch.num_rows, _ROW_BATCH):
                yield batch.slice(start, _ROW_BATCH)
        return
    if isinstance(rows, pa.Table):
        for batch in rows.to_batches(max_chunksize=_ROW_BATCH):
            if batch.num_rows:
                yield batch
        return
    types = [c.type for c in result.columns or []]
    for start in range(0, len(rows), _ROW_BATCH):
        yield python_columns(rows[start : start + _ROW_BATCH], types)

