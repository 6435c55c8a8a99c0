"""HTTP-level fidelity of Stream Load: what real clients put on the wire.

Chunked bodies, HTTP/1.0 clients, `Expect: 100-continue` (the FE answers 307 at once
without `100 Continue`; the BE sends `100 Continue`), header names in any case, a trailing
`/`, the empty-body probe PUT, body framing errors, and missing credentials. Requests go
over raw sockets, httpx and curl to the real FE and BE of the shared instance.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import httpx
import pytest

from tests.support.client import auth_header

DUP = "(k INT NOT NULL, v VARCHAR(16)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3"
AUTH = auth_header()["Authorization"]


@pytest.fixture
def table(galene, db):
    galene.query(f"CREATE TABLE t {DUP}", db)
    return "t"


def _count(galene, db) -> int:
    return galene.query("SELECT count(*) FROM t", db)[0][0]


class RawHttp:
    """One TCP connection speaking HTTP by hand, to send exactly the bytes a client sends."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self) -> bool:
        chunk = self.sock.recv(65536)
        self.buf += chunk
        return bool(chunk)

    def read_head(self) -> tuple[str, dict[str, str]]:
        """The next response's status line and headers (names lower-cased)."""
        while b"\r\n\r\n" not in self.buf:
            if not self._fill():
                raise ConnectionError(f"closed before a full response head: {self.buf!r}")
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return lines[0], headers

    def read_body(self, headers: dict[str, str]) -> bytes:
        if "content-length" in headers:
            n = int(headers["content-length"])
            while len(self.buf) < n:
                if not self._fill():
                    break
            body, self.buf = self.buf[:n], self.buf[n:]
            return body
        while self._fill():  # HTTP/1.0 style: until close
            pass
        body, self.buf = self.buf, b""
        return body

    def exchange(self, request: bytes) -> tuple[str, dict]:
        """Send a whole request; the response's status line and its JSON body."""
        self.send(request)
        status, headers = self.read_head()
        return status, json.loads(self.read_body(headers))

    def closed_by_peer(self) -> bool:
        """True when the server closes the connection (EOF) within the socket timeout."""
        self.sock.settimeout(5)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
                self.buf += chunk
        except (TimeoutError, ConnectionResetError):
            return False

    def close(self) -> None:
        self.sock.close()


def _request(method_line: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    head = method_line + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    return head.encode() + body


def _curl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["curl", "-sS", *args], capture_output=True, text=True, timeout=120, check=False)


# --- chunked transfer encoding ----------------------------------------------------------


def test_chunked_body_from_httpx_generator_to_be(galene, db, table):
    def body():
        for i in range(50):
            yield f"{i},v{i}\n".encode()

    r = httpx.put(
        f"http://127.0.0.1:{galene.be_http_port}/api/{db}/t/_stream_load",
        headers={**auth_header(), "column_separator": ",", "label": "chunked-gen"},
        content=body(),
        timeout=60,
    )
    assert r.request.headers.get("transfer-encoding") == "chunked"
    assert "content-length" not in r.request.headers
    assert r.json()["Status"] == "Success" and r.json()["NumberLoadedRows"] == 50
    assert _count(galene, db) == 50


def test_chunked_upload_with_curl_through_fe(galene, db, table, tmp_path):
    data = tmp_path / "rows.csv"
    data.write_bytes(b"".join(f"{i},c{i}\n".encode() for i in range(1000)))
    out = _curl(
        "--location-trusted", "-u", "root:", "-T", str(data),
        "-H", "Transfer-Encoding: chunked", "-H", "column_separator:,", "-H", "label:curl-chunked",
        f"http://127.0.0.1:{galene.http_port}/api/{db}/t/_stream_load",
    )  # fmt: skip
    reply = json.loads(out.stdout)
    assert reply["Status"] == "Success", out
    assert reply["NumberLoadedRows"] == 1000
    assert _count(galene, db) == 1000


def test_chunked_body_over_raw_socket_with_odd_chunk_sizes(galene, db, table):
    rows = b"".join(f"{i},r{i}\n".encode() for i in range(200))
    chunks = [rows[i : i + 7] for i in range(0, len(rows), 7)]  # chunks cut mid-row
    body = b"".join(f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in chunks) + b"0\r\n\r\n"
    conn = RawHttp(galene.be_http_port)
    try:
        status, reply = conn.exchange(
            _request(
                f"PUT /api/{db}/t/_stream_load HTTP/1.1",
                {
                    "Host": "127.0.0.1",
                    "Authorization": AUTH,
                    "Transfer-Encoding": "chunked",
                    "column_separator": ",",
                },
                body,
            )
        )
    finally:
        conn.close()
    assert status.startswith("HTTP/1.1 200")
    assert reply["Status"] == "Success" and reply["NumberLoadedRows"] == 200


# --- HTTP/1.0 -----------------------------------------------------------------------------


def test_http10_client_gets_307_from_fe_and_loads_on_be(galene, db, table):
    body = b"1,a\n2,b\n"
    headers = {"Host": "127.0.0.1", "Authorization": AUTH, "column_separator": ",", "label": "h10"}

    fe = RawHttp(galene.http_port)
    try:
        fe.send(_request(f"PUT /api/{db}/t/_stream_load HTTP/1.0", {**headers, "Content-Length": "0"}))
        status, resp = fe.read_head()
    finally:
        fe.close()
    assert status.split()[1] == "307", status
    location = resp["location"]
    assert location.startswith(f"http://root:@127.0.0.1:{galene.be_http_port}/api/{db}/t/_stream_load")

    be = RawHttp(galene.be_http_port)
    try:
        be.send(
            _request(
                f"PUT /api/{db}/t/_stream_load HTTP/1.0", {**headers, "Content-Length": str(len(body))}, body
            )
        )
        status, resp = be.read_head()
        reply = json.loads(be.read_body(resp))
    finally:
        be.close()
    assert status.startswith("HTTP/1.0 200"), status
    assert reply["Status"] == "Success" and reply["NumberLoadedRows"] == 2
    assert _count(galene, db) == 2


def test_http10_request_without_host_header_is_redirected(galene, db, table):
    """HTTP/1.0 makes Host optional: the FE redirects by the address the client reached (what a
    Host header would name) instead of refusing with "Invalid header host"."""
    fe = RawHttp(galene.http_port)
    try:
        fe.send(_request(f"PUT /api/{db}/t/_stream_load HTTP/1.0", {"Authorization": AUTH, "Content-Length": "0"}))
        status, resp = fe.read_head()
    finally:
        fe.close()
    assert status.split()[1] == "307", status
    assert resp["location"].startswith(f"http://root:@127.0.0.1:{galene.be_http_port}/api/{db}/t/_stream_load")


# The PyPI client doris-stream-load 2.4, unchanged: it switches http.client to HTTP/1.0 for the
# whole process when imported (so it runs in a child), then PUTs through requests, which sends no
# Host header on HTTP/1.0.
_DORIS_STREAM_LOAD = """
import json, sys
from doris_stream_load import stream_load
port, db = int(sys.argv[1]), sys.argv[2]
print(json.dumps(stream_load("127.0.0.1", "root", "", port, db, "t", ",").sendData(["1,a", "2,b", "3,\u00e9t\u00e9"])))
"""


def _doris_stream_load(port: int, db: str) -> dict:
    pytest.importorskip("doris_stream_load", reason="doris-stream-load (PyPI doris_stream_load 2.4) not installed")
    proc = subprocess.run(
        [sys.executable, "-c", _DORIS_STREAM_LOAD, str(port), db],
        check=False, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_doris_stream_load_client_on_the_be(galene, db, table):
    """Its documented use: `doris_host` is a BE."""
    reply = _doris_stream_load(galene.be_http_port, db)
    assert reply["Status"] == "Success" and reply["NumberLoadedRows"] == 3, reply
    assert sorted(galene.query("SELECT k, v FROM t", db)) == [(1, "a"), (2, "b"), (3, "\u00e9t\u00e9")]


def test_doris_stream_load_client_through_the_fe(galene, db, table):
    """Pointed at the FE it is redirected (it was refused: "Invalid header host: "). requests then
    drops Authorization on the redirect to another port and ignores the credentials of the
    Location URL, so the BE refuses the load, as Doris' BE would: nothing is loaded."""
    reply = _doris_stream_load(galene.http_port, db)
    assert (reply["Status"], reply["Message"]) == ("Fail", "no valid Basic authorization"), reply
    assert _count(galene, db) == 0


# --- Expect: 100-continue -----------------------------------------------------------------


def test_fe_answers_expect_100_continue_with_307_and_closes(galene, db, table):
    conn = RawHttp(galene.http_port)
    try:
        conn.send(
            _request(
                f"PUT /api/{db}/t/_stream_load HTTP/1.1",
                {"Host": "127.0.0.1", "Authorization": AUTH, "Expect": "100-continue", "Content-Length": "8"},
            )
        )  # the body is withheld, as a client waiting for 100 Continue does
        status, headers = conn.read_head()
        assert status.split()[1] == "307", status  # not "100 Continue"
        assert headers["location"].startswith(f"http://root:@127.0.0.1:{galene.be_http_port}/")
        conn.read_body(headers)
        # A client that sends the body anyway: the FE drops it and closes the connection,
        # so the body is never read as a next request.
        conn.send(b"1,a\n2,b\n")
        assert conn.closed_by_peer()
        assert conn.buf == b""
    finally:
        conn.close()


def test_be_sends_100_continue_then_loads(galene, db, table):
    body = b"1,a\n2,b\n3,c\n"
    conn = RawHttp(galene.be_http_port)
    try:
        conn.send(
            _request(
                f"PUT /api/{db}/t/_stream_load HTTP/1.1",
                {
                    "Host": "127.0.0.1",
                    "Authorization": AUTH,
                    "Expect": "100-continue",
                    "Content-Length": str(len(body)),
                    "column_separator": ",",
                },
            )
        )
        status, _ = conn.read_head()
        assert status == "HTTP/1.1 100 Continue"
        status, reply = conn.exchange(body)
    finally:
        conn.close()
    assert status.startswith("HTTP/1.1 200")
    assert reply["Status"] == "Success" and reply["NumberLoadedRows"] == 3


def test_curl_with_expect_through_fe_like_the_doris_docs(galene, db, table, tmp_path):
    data = tmp_path / "rows.csv"
    data.write_bytes(b"1,a\n2,b\n")
    out = _curl(
        "--location-trusted", "-u", "root:", "-H", "Expect:100-continue", "-H", "column_separator:,",
        "-T", str(data), f"http://127.0.0.1:{galene.http_port}/api/{db}/t/_stream_load",
    )  # fmt: skip
    assert json.loads(out.stdout)["Status"] == "Success", out
    assert _count(galene, db) == 2


def test_load_without_expect_header_is_accepted(galene, db, table):
    """Doris' FE wants `Expect`; Galene accepts clients that do not send it."""
    with httpx.Client() as c:
        r = c.put(
            f"http://127.0.0.1:{galene.http_port}/api/{db}/t/_stream_load",
            headers={**auth_header(), "column_separator": ","},
            content=b"",
        )
        assert "expect" not in r.request.headers
        assert r.status_code == 307
        r = c.put(r.headers["location"], headers={**auth_header(), "column_separator": ","}, content=b"5,e\n")
    assert r.json()["Status"] == "Success"


# --- header case, trailing slash, probe ---------------------------------------------------


def test_header_names_in_any_case(galene, db, table, tmp_path):
    data = tmp_path / "rows.json"
    data.write_bytes(b'{"k": 1, "v": "a"}\n{"k": 2, "v": "b"}\n')
    out = _curl(
        "--location-trusted", "-u", "root:", "-H", "Label:MixedCase", "-H", "FORMAT:json",
        "-T", str(data), f"http://127.0.0.1:{galene.http_port}/api/{db}/t/_stream_load",
    )  # fmt: skip
    reply = json.loads(out.stdout)
    assert reply["Status"] == "Success" and reply["Label"] == "MixedCase", out

    r = httpx.put(
        f"http://127.0.0.1:{galene.be_http_port}/api/{db}/t/_stream_load",
        headers={**auth_header(), "Column_Separator": "|", "LABEL": "upper", "Max_Filter_Ratio": "0"},
        content=b"3|c\n4|d\n",
    )
    assert r.json()["Status"] == "Success" and r.json()["Label"] == "upper"
    assert _count(galene, db) == 4


@pytest.mark.parametrize("side", ["fe", "be"])
def test_trailing_slash_in_path(galene, db, table, side):
    port = galene.http_port if side == "fe" else galene.be_http_port
    h = {**auth_header(), "column_separator": ",", "label": f"slash-{side}"}
    with httpx.Client(timeout=60) as c:
        r = c.put(
            f"http://127.0.0.1:{port}/api/{db}/t/_stream_load/",
            headers=h,
            content=b"" if side == "fe" else b"7,g\n",
        )
        if side == "fe":
            assert r.status_code == 307
            assert r.headers["location"].endswith(f"/api/{db}/t/_stream_load/")
            r = c.put(r.headers["location"], headers=h, content=b"7,g\n")
    assert r.json()["Status"] == "Success"
    assert _count(galene, db) == 1


def test_empty_body_probe_put_gets_307_with_location(galene, db, table):
    for framing in ({"Content-Length": "0"}, {}):  # some clients probe without a length at all
        conn = RawHttp(galene.http_port)
        try:
            conn.send(
                _request(
                    f"PUT /api/{db}/t/_stream_load HTTP/1.1",
                    {"Host": "127.0.0.1", "Authorization": AUTH, **framing},
                )
            )
            status, headers = conn.read_head()
        finally:
            conn.close()
        assert status.split()[1] == "307", (framing, status)
        assert headers["location"] == f"http://root:@127.0.0.1:{galene.be_http_port}/api/{db}/t/_stream_load"


# --- body framing ---------------------------------------------------------------------------


def test_body_without_length_or_chunked_fails_with_doris_message(galene, db, table):
    conn = RawHttp(galene.be_http_port)
    try:
        status, reply = conn.exchange(
            _request(
                f"PUT /api/{db}/t/_stream_load HTTP/1.1",
                {"Host": "127.0.0.1", "Authorization": AUTH, "label": "no-framing", "Connection": "close"},
            )
        )
    finally:
        conn.close()
    assert status.startswith("HTTP/1.1 200")
    assert reply["Status"] == "Fail"
    assert reply["Message"] == (
        "[INTERNAL_ERROR]content_length is empty and transfer-encoding!=chunked, "
        "please set content_length or transfer-encoding=chunked"
    )
    # Refused before any transaction began: the label was never used.
    state = httpx.get(
        f"http://127.0.0.1:{galene.http_port}/api/{db}/get_load_state",
        params={"label": "no-framing"},
        headers=auth_header(),
    ).json()
    assert state["data"] == "UNKNOWN"


def test_both_content_length_and_chunked_is_refused_cleanly(galene, db, table, tmp_path):
    """As in Doris' regression suite (curl with both headers): Doris' JSON failure, nothing
    loaded, and the ambiguous framing is not trusted (the connection is closed)."""
    data = tmp_path / "rows.csv"
    data.write_bytes(b"1,a\n")
    out = _curl(
        "-u", "root:", "-H", "Content-Length:0", "-H", "Transfer-Encoding:chunked", "-H", "column_separator:,",
        "-w", "\n%{http_code}", "-T", str(data),
        f"http://127.0.0.1:{galene.be_http_port}/api/{db}/t/_stream_load",
    )  # fmt: skip
    body, _, code = out.stdout.rpartition("\n")
    assert code == "200", out
    reply = json.loads(body)
    assert reply["Status"] == "Fail"
    assert "[INTERNAL_ERROR]please do not set both content_length and transfer-encoding" in reply["Message"]
    assert _count(galene, db) == 0
    # The server is fine afterwards.
    assert httpx.get(f"http://127.0.0.1:{galene.be_http_port}/api/health").status_code == 200


# --- credentials ----------------------------------------------------------------------------


def test_missing_basic_auth(galene, db, table):
    r = httpx.put(f"http://127.0.0.1:{galene.http_port}/api/{db}/t/_stream_load", content=b"")
    assert r.status_code == 401
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["status"] == "FAILED" and "Access denied" in r.json()["msg"]

    # The BE answers like Doris' BE: a load reply with Status Fail.
    r = httpx.put(f"http://127.0.0.1:{galene.be_http_port}/api/{db}/t/_stream_load", content=b"1,a\n")
    assert r.status_code == 200
    assert r.json()["Status"] == "Fail" and r.json()["Message"] == "no valid Basic authorization"
    assert _count(galene, db) == 0


def test_wrong_password_reaching_the_be_fails_the_load(galene, db, table):
    r = httpx.put(
        f"http://127.0.0.1:{galene.be_http_port}/api/{db}/t/_stream_load",
        headers={**auth_header("root", "wrong"), "column_separator": ","},
        content=b"1,a\n",
    )
    assert r.json()["Status"] == "Fail" and "Access denied" in r.json()["Message"]
    assert _count(galene, db) == 0


def test_keepalive_connection_serves_several_loads(galene, db, table):
    """Clients that pool connections send load after load on one socket to the BE."""
    with httpx.Client(timeout=60) as c:
        for i in range(5):
            r = c.put(
                f"http://127.0.0.1:{galene.be_http_port}/api/{db}/t/_stream_load",
                headers={**auth_header(), "column_separator": ",", "label": f"ka-{i}"},
                content=f"{i},k\n".encode(),
            )
            assert r.json()["Status"] == "Success"
    assert _count(galene, db) == 5
