"""MySQL errors as the endpoint sends them: the error numbers it answers with (Doris' own are in
`galene.common.errors`), their SQLSTATEs, the error packet, and the decoding failures of a
command packet (MySQL's 1835, after which the session lives on)."""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator

from mysql_mimic.types import Capabilities, uint_1, uint_2

from galene.common.errors import ER_ACCESS_DENIED, ER_BAD_DB, GaleneError

ER_HANDSHAKE = 1043
ER_UNKNOWN_COMMAND = 1047
ER_NO_SUCH_THREAD = 1094
ER_NET_PACKET_TOO_LARGE = 1153
ER_NET_PACKETS_OUT_OF_ORDER = 1156
ER_NET_READ_INTERRUPTED = 1159
ER_TOO_MANY_USER_CONNECTIONS = 1203
ER_UNKNOWN_STMT_HANDLER = 1243
ER_STMT_HAS_NO_OPEN_CURSOR = 1421
ER_INVALID_CHARACTER_STRING = 1300
ER_QUERY_INTERRUPTED = 1317
ER_MALFORMED_PACKET = 1835
ER_CLIENT_INTERACTION_TIMEOUT = 4031

SQLSTATES = {
    ER_ACCESS_DENIED: b"28000",
    ER_BAD_DB: b"42000",
    1046: b"3D000",
    ER_HANDSHAKE: b"08S01",
    ER_UNKNOWN_COMMAND: b"08S01",
    ER_NET_PACKET_TOO_LARGE: b"08S01",
    ER_NET_PACKETS_OUT_OF_ORDER: b"08S01",
    ER_NET_READ_INTERRUPTED: b"08S01",
    ER_TOO_MANY_USER_CONNECTIONS: b"42000",
    1051: b"42S02",  # ERR_BAD_TABLE_ERROR: JDBC's SQLSyntaxErrorException "table not found"
    1054: b"42S22",
    1146: b"42S02",
    1064: b"42000",
    1065: b"42000",
    1231: b"42000",
    1232: b"42000",
    ER_QUERY_INTERRUPTED: b"70100",
    1044: b"42000",  # privileges (galene/fe/auth.py): database, table, specific, all, hash length
    1142: b"42000",
    1223: b"42000",
    1227: b"42000",
    1372: b"42000",
}

INACTIVITY_MESSAGE = (
    "The client was disconnected by the server because of inactivity. "
    "See wait_timeout and interactive_timeout for configuring this behavior."
)
PACKET_TOO_LARGE_MESSAGE = "Got a packet bigger than 'max_allowed_packet' bytes"


def error_packet(capabilities: Capabilities, code: int, message: str) -> bytes:
    """An ERR packet: the SQLSTATE marker goes to clients of protocol 4.1 (and to a client that
    has not said yet which it speaks)."""
    parts = [uint_1(0xFF), uint_2(code)]
    if Capabilities.CLIENT_PROTOCOL_41 in capabilities or not capabilities:
        parts.append(b"#" + SQLSTATES.get(code, b"HY000"))
    parts.append(message.encode("utf-8"))
    return b"".join(parts)


# Exceptions that decoding a short or inconsistent command packet raises.
_DECODE_ERRORS = (struct.error, IndexError, KeyError, ValueError, ArithmeticError, AssertionError, EOFError)


@contextlib.contextmanager
def malformed_packet() -> Iterator[None]:
    """Decoding failures inside become MySQL's 1835 "Malformed communication packet." (the
    session lives on); text in the wrong character set stays a 1300."""
    try:
        yield
    except UnicodeDecodeError:
        raise
    except _DECODE_ERRORS:
        raise GaleneError("Malformed communication packet.", ER_MALFORMED_PACKET) from None
