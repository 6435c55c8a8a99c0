"""Prepared statements of the binary protocol (COM_STMT_PREPARE, _EXECUTE, _SEND_LONG_DATA,
_FETCH, _RESET, _CLOSE).

A statement's `?` placeholders are found by the sqlglot tokenizer (quotes and comments aware);
each EXECUTE's parameters are decoded from the packet (or from the long data sent before it,
bounded like one packet) and substituted as properly escaped SQL literals, and the statement
runs as text. A PREPARE declares the result columns the EXECUTE will send (clients such as
connectorx read a query's schema there). An EXECUTE that asks for a cursor keeps its rows for
COM_STMT_FETCH.

`PreparedStatements` is mixed into `GaleneConnection` (its stream, session and charsets).
"""

from __future__ import annotations

import io
import math
import struct
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from mysql_mimic import packets
from mysql_mimic.charset import CharacterSet
from mysql_mimic.prepared import PreparedStatement
from mysql_mimic.types import ColumnType as MysqlType
from mysql_mimic.types import (
    ComStmtExecuteFlags,
    ServerStatus,
    read_double,
    read_float,
    read_int_1,
    read_int_2,
    read_int_4,
    read_int_8,
    read_str_len,
    read_uint_1,
    read_uint_2,
    read_uint_4,
    read_uint_8,
    uint_1,
    uint_2,
    uint_4,
)
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from galene.common.errors import GaleneError
from galene.fe.mysql.errors import (
    ER_NET_PACKET_TOO_LARGE,
    ER_STMT_HAS_NO_OPEN_CURSOR,
    ER_UNKNOWN_STMT_HANDLER,
    PACKET_TOO_LARGE_MESSAGE,
    malformed_packet,
)
from galene.fe.result_stream import ResultStream
from galene.sql.limits import check_sql_nesting_depth


class PreparedStatements:
    """The COM_STMT_* commands of `GaleneConnection` (mixed into it)."""

    def _init_prepared_statements(self) -> None:
        self._placeholders: dict[int, list[tuple[int, int]]] = {}
        self._param_types: dict[int, list[tuple[int, bool]]] = {}
        self._long_data_overflow: set[int] = set()  # statements whose long data passed the bound

    async def handle_stmt_prepare(self, data: bytes) -> None:
        sql = self.client_charset.decode(data)
        check_sql_nesting_depth(sql, self.server.max_sql_nesting_depth)
        placeholders = placeholder_spans(sql)
        stmt = PreparedStatement(stmt_id=next(self.prepared_stmt_seq), sql=sql, num_params=len(placeholders))
        # The result columns a query will have (Doris declares them too): clients that read a
        # query's schema from its preparation (connectorx) need them.
        columns = await self.session.describe(substitute_parameters(sql, placeholders, [None] * len(placeholders)))
        self.prepared_stmts[stmt.stmt_id] = stmt
        self._placeholders[stmt.stmt_id] = placeholders
        ok = b"".join(
            [uint_1(0), uint_4(stmt.stmt_id), uint_2(len(columns)), uint_2(stmt.num_params), uint_1(0), uint_2(0)]
        )
        response = [ok]
        if stmt.num_params:
            response.extend(
                packets.make_column_definition_41(server_charset=self.server_charset, name="?")
                for _ in range(stmt.num_params)
            )
            if not self.deprecate_eof():
                response.append(self.eof())
        if columns:
            response.extend(self._column_definitions(columns))
            if not self.deprecate_eof():
                response.append(self.eof())
        self.stream.write_many(response)
        await self.stream.drain()

    async def handle_stmt_execute(self, data: bytes) -> None:
        with malformed_packet():
            reader = io.BytesIO(data)
            stmt = self.get_stmt(read_uint_4(reader))
            flags = ComStmtExecuteFlags(read_uint_1(reader))
            use_cursor = bool(
                flags
                & (
                    ComStmtExecuteFlags.CURSOR_TYPE_READ_ONLY
                    | ComStmtExecuteFlags.CURSOR_TYPE_FOR_UPDATE
                    | ComStmtExecuteFlags.CURSOR_TYPE_SCROLLABLE
                )
            )
            read_uint_4(reader)  # iteration count, always 1
            if stmt.stmt_id in self._long_data_overflow:
                self._long_data_overflow.discard(stmt.stmt_id)
                stmt.param_buffers = None
                raise GaleneError(PACKET_TOO_LARGE_MESSAGE, ER_NET_PACKET_TOO_LARGE)
            params = self._read_stmt_params(reader, stmt)
            stmt.param_buffers = None
            sql = substitute_parameters(stmt.sql, self._placeholders.get(stmt.stmt_id, []), params)
        result = await self.session.run(sql)
        self._refresh_status()
        if use_cursor and result.columns is not None:
            if isinstance(result.rows, ResultStream):  # a cursor outlives the statement: held whole, as before
                result.rows = await result.rows.read_all()
            self.stream.write_many(self._result_header(result.columns, with_eof=False))
            stmt.cursor = self._binary_row_packets(result)
            await self.stream.write(self.ok_or_eof(flags=ServerStatus.SERVER_STATUS_CURSOR_EXISTS))
            return
        await self._write_result(result, binary=True)

    async def handle_stmt_close(self, data: bytes) -> None:
        with malformed_packet():
            stmt_id = struct.unpack_from("<I", data)[0]
        self.prepared_stmts.pop(stmt_id, None)
        self._placeholders.pop(stmt_id, None)
        self._param_types.pop(stmt_id, None)
        self._long_data_overflow.discard(stmt_id)

    async def handle_stmt_send_long_data(self, data: bytes) -> None:
        # COM_STMT_SEND_LONG_DATA has no answer: problems are reported by the EXECUTE.
        try:
            request = packets.parse_com_stmt_send_long_data(data)
        except (struct.error, ValueError):
            return
        stmt = self.prepared_stmts.get(request.stmt_id)
        if stmt is None or stmt.stmt_id in self._long_data_overflow:
            return
        buffers = stmt.param_buffers if stmt.param_buffers is not None else {}
        held = sum(len(b) for b in buffers.values())
        # All long data of one execution together is bounded like one packet.
        if held + len(request.data) > self.stream.max_payload:
            stmt.param_buffers = None
            self._long_data_overflow.add(stmt.stmt_id)
            return
        stmt.param_buffers = buffers
        buffers.setdefault(request.param_id, bytearray()).extend(request.data)

    async def handle_stmt_fetch(self, data: bytes) -> None:
        with malformed_packet():
            request = packets.parse_handle_stmt_fetch(data)
        stmt = self.get_stmt(request.stmt_id)
        if stmt.cursor is None:
            raise GaleneError(
                f"The statement ({request.stmt_id}) has no open cursor.", ER_STMT_HAS_NO_OPEN_CURSOR
            )
        count = 0
        if request.num_rows > 0:
            # Stop right after the last requested row: pulling one more would lose it.
            async for packet in stmt.cursor:
                await self.stream.write(packet, drain=False)
                count += 1
                if count >= request.num_rows:
                    break
        status = ServerStatus.SERVER_STATUS_CURSOR_EXISTS
        if count < request.num_rows:
            stmt.cursor = None
            status = ServerStatus.SERVER_STATUS_LAST_ROW_SENT
        await self.stream.write(self.ok_or_eof(flags=status))

    async def handle_stmt_reset(self, data: bytes) -> None:
        with malformed_packet():
            request = packets.parse_com_stmt_reset(data)
        stmt = self.get_stmt(request.stmt_id)
        stmt.param_buffers = None
        stmt.cursor = None
        self._long_data_overflow.discard(stmt.stmt_id)
        await self.stream.write(self._ok_packet())

    def get_stmt(self, stmt_id: int) -> PreparedStatement:
        stmt = self.prepared_stmts.get(stmt_id)
        if stmt is None:
            raise GaleneError(
                f"Unknown prepared statement handler ({stmt_id}) given to EXECUTE", ER_UNKNOWN_STMT_HANDLER
            )
        return stmt

    def _read_stmt_params(self, reader: io.BytesIO, stmt: PreparedStatement) -> list[Any]:
        count = stmt.num_params
        if not count:
            return []
        null_bitmap = reader.read((count + 7) // 8)
        if read_uint_1(reader):  # new-params-bound flag: types follow
            types = []
            for _ in range(count):
                type_code = read_uint_1(reader)
                types.append((type_code, bool(read_uint_1(reader) & 0x80)))
            self._param_types[stmt.stmt_id] = types
        else:
            types = self._param_types.get(stmt.stmt_id, [])
            if len(types) != count:
                raise GaleneError("Prepared statement executed without parameter types")
        values: list[Any] = []
        for i, (type_code, unsigned) in enumerate(types):
            if null_bitmap[i // 8] & (1 << (i % 8)):
                values.append(None)
            elif stmt.param_buffers and i in stmt.param_buffers:
                values.append(_long_data_value(bytes(stmt.param_buffers[i]), type_code, self.client_charset))
            else:
                values.append(_read_param_value(reader, type_code, unsigned, self.client_charset))
        return values


_MYSQL = MySQL()

_STRING_PARAM_TYPES = {
    MysqlType.VARCHAR,
    MysqlType.VAR_STRING,
    MysqlType.STRING,
    MysqlType.ENUM,
    MysqlType.SET,
    MysqlType.JSON,
    MysqlType.BIT,
}
_BLOB_PARAM_TYPES = {MysqlType.TINY_BLOB, MysqlType.MEDIUM_BLOB, MysqlType.LONG_BLOB, MysqlType.BLOB}
_DECIMAL_PARAM_TYPES = {MysqlType.DECIMAL, MysqlType.NEWDECIMAL}


def placeholder_spans(sql: str) -> list[tuple[int, int]]:
    """(start, end) of each `?` placeholder, found by the sqlglot tokenizer (quotes/comments aware)."""
    try:
        tokens = _MYSQL.tokenize(sql)
    except SqlglotError as exc:
        raise GaleneError(f"Syntax error in prepared statement: {exc}") from None
    return [(t.start, t.end + 1) for t in tokens if t.token_type == TokenType.PLACEHOLDER]


def substitute_parameters(sql: str, spans: list[tuple[int, int]], params: list[Any]) -> str:
    if len(spans) != len(params):
        raise GaleneError(f"Prepared statement expects {len(spans)} parameters, got {len(params)}")
    pieces = []
    previous = 0
    for (start, end), value in zip(spans, params):
        pieces.append(sql[previous:start])
        pieces.append(sql_literal(value))
        previous = end
    pieces.append(sql[previous:])
    return "".join(pieces)


def quote_string(value: str) -> str:
    """A MySQL/Doris single-quoted string literal that reads back as exactly `value`."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''").replace("\0", "\\0") + "'"


def sql_literal(value: Any) -> str:
    """A prepared-statement parameter as an SQL literal."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise GaleneError(f"Unsupported parameter value: {value}")
        return repr(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, str):
        return quote_string(value)
    if isinstance(value, (bytes, bytearray)):
        try:
            return quote_string(bytes(value).decode("utf-8"))
        except UnicodeDecodeError:
            return "X'" + bytes(value).hex() + "'"
    if isinstance(value, datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return quote_string(text + (f".{value.microsecond:06d}" if value.microsecond else ""))
    if isinstance(value, date):
        return quote_string(value.isoformat())
    if isinstance(value, timedelta):
        return quote_string(_format_time(value))
    return quote_string(str(value))


def _format_time(value: timedelta) -> str:
    sign = "-" if value < timedelta(0) else ""
    value = abs(value)
    hours, rest = divmod(value.days * 86400 + value.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{sign}{hours:02d}:{minutes:02d}:{seconds:02d}"
    return text + (f".{value.microseconds:06d}" if value.microseconds else "")


def _read_param_value(reader: io.BytesIO, type_code: int, unsigned: bool, charset: CharacterSet) -> Any:
    if type_code in _STRING_PARAM_TYPES:
        return charset.decode(read_str_len(reader))
    if type_code in _BLOB_PARAM_TYPES:
        return read_str_len(reader)
    if type_code in _DECIMAL_PARAM_TYPES:
        return Decimal(read_str_len(reader).decode("ascii"))
    if type_code == MysqlType.TINY:
        return read_uint_1(reader) if unsigned else read_int_1(reader)
    if type_code in (MysqlType.SHORT, MysqlType.YEAR):
        return read_uint_2(reader) if unsigned else read_int_2(reader)
    if type_code in (MysqlType.LONG, MysqlType.INT24):
        return read_uint_4(reader) if unsigned else read_int_4(reader)
    if type_code == MysqlType.LONGLONG:
        return read_uint_8(reader) if unsigned else read_int_8(reader)
    if type_code == MysqlType.FLOAT:
        return read_float(reader)
    if type_code == MysqlType.DOUBLE:
        return read_double(reader)
    if type_code == MysqlType.NULL:
        return None
    if type_code in (MysqlType.DATE, MysqlType.DATETIME, MysqlType.TIMESTAMP):
        return _read_binary_datetime(reader, as_date=type_code == MysqlType.DATE)
    if type_code == MysqlType.TIME:
        return _read_binary_time(reader)
    raise GaleneError(f"Unsupported parameter type: {type_code}")


def _long_data_value(data: bytes, type_code: int, charset: CharacterSet) -> Any:
    if type_code in _BLOB_PARAM_TYPES:
        return data
    if type_code in _DECIMAL_PARAM_TYPES:
        return Decimal(data.decode("ascii"))
    return charset.decode(data)


def _read_binary_datetime(reader: io.BytesIO, as_date: bool) -> date | datetime | str:
    length = read_uint_1(reader)
    if length == 0:
        return "0000-00-00" if as_date else "0000-00-00 00:00:00"
    year, month, day = read_uint_2(reader), read_uint_1(reader), read_uint_1(reader)
    hour = minute = second = micro = 0
    if length >= 7:
        hour, minute, second = read_uint_1(reader), read_uint_1(reader), read_uint_1(reader)
    if length >= 11:
        micro = read_uint_4(reader)
    if as_date:
        return date(year, month, day)
    return datetime(year, month, day, hour, minute, second, micro)


def _read_binary_time(reader: io.BytesIO) -> timedelta:
    length = read_uint_1(reader)
    if length == 0:
        return timedelta(0)
    negative = read_uint_1(reader)
    days = read_uint_4(reader)
    hour, minute, second = read_uint_1(reader), read_uint_1(reader), read_uint_1(reader)
    micro = read_uint_4(reader) if length >= 12 else 0
    value = timedelta(days=days, hours=hour, minutes=minute, seconds=second, microseconds=micro)
    return -value if negative else value
