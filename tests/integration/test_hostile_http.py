"""Hostile HTTP against the real FE (8030) and BE (8040): oversized request heads, lying body
framing, garbage request lines, oversized JSON bodies on the FE's internal routes.

Hostile requests go over raw sockets. After every probe: the node answered with a clear error or
closed the connection, the FE and BE processes are the same live processes, a normal 3-row load
still succeeds, the table holds exactly the rows of the loads that succeeded, and the log has no
ERROR line or traceback (WARNING is fine). Peak RSS across the head probes stays within a bound
derived from the head limits. One node serves the whole module.
"""

from __future__ import annotations

import json
import re
import socket
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.support.client import auth_header
from tests.support.node import GaleneProcess
from tests.support.procs import peak_rss_bytes

AUTH = auth_header()["Authorization"]
DB = "hostile_http"
DUP = "(k INT NOT NULL, v VARCHAR(16)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3"
MAX_HEADERS = 128  # http_max_headers (default)
MAX_HEADER_BYTES = 65536  # http_max_header_bytes (default)
MAX_HEAD_BYTES = 1 << 20  # the whole head (galene.net.server.HTTP_MAX_HEAD_BYTES)
# Head probes may not grow either process's peak RSS by more than this: a head is parsed as it
# streams and refused past MAX_HEAD_BYTES (about twice that held once parsed, per connection).
RSS_HEADROOM = 64 << 20
# Connections that send a maximal head (MAX_HEADERS x MAX_HEADER_BYTES, 8 MB) at the same time:
# without the bound on the whole head each would hold 16 MB.
CONCURRENT_HEADS = 10
_ERROR_LINE = re.compile(r" (ERROR|CRITICAL) |Traceback \(most recent call last\)")


# --- raw HTTP -------------------------------------------------------------------------------


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self):
        return json.loads(self.body)


@dataclass
class Outcome:
    """What came back on one connection: final responses (100 Continue skipped), and whether the
    server closed it (EOF or reset) while we were reading."""

    replies: list[Reply] = field(default_factory=list)
    continues: int = 0  # 100 Continue interim replies
    closed: bool = False
    rest: bytes = b""


def _parse(buf: bytes, out: Outcome) -> bytes:
    """Moves the complete replies at the head of `buf` to `out`; returns the rest."""
    while b"\r\n\r\n" in buf:
        head, _, tail = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        n = int(headers.get("content-length", "0"))
        if len(tail) < n:
            break
        status = int(lines[0].split()[1])
        buf = tail[n:]
        if status == 100:
            out.continues += 1
        else:
            out.replies.append(Reply(status, headers, tail[:n]))
    return buf


class Conn:
    """One TCP connection speaking HTTP by hand."""

    def __init__(self, port: int, timeout: float = 60):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        self.out = Outcome()

    def send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            self.out.closed = True

    def read(self, replies: int | None = None, *, interim: bool = False) -> Outcome:
        """Read until the server closes, or until `replies` final replies (or, with `interim`,
        a 100 Continue) have arrived."""
        while not self.out.closed:
            if interim and self.out.continues:
                return self.out
            if replies is not None and len(self.out.replies) >= replies:
                break
            try:
                chunk = self.sock.recv(1 << 16)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                self.out.closed = True
            self.buf = _parse(self.buf + chunk, self.out)
        self.out.rest = self.buf
        return self.out

    def half_close(self) -> None:
        self.sock.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.sock.close()


def _head(method_line: str, headers: dict[str, str]) -> bytes:
    return (method_line + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode()


def _load_head(label: str | None = None, *, expect: bool = False, **headers: str) -> dict[str, str]:
    h = {"Host": "127.0.0.1", "Authorization": AUTH, "column_separator": ","}
    if label:
        h["label"] = label
    if expect:
        h["Expect"] = "100-continue"
    h.update({k.replace("_", "-") if k[0].isupper() else k: v for k, v in headers.items()})
    return h


def _send(port: int, data: bytes, replies: int | None = None) -> Outcome:
    conn = Conn(port)
    try:
        conn.send(data)
        return conn.read(replies)
    finally:
        conn.close()


# --- the node and what must hold after every probe -------------------------------------------


@dataclass
class Node:
    proc: GaleneProcess
    fe_pid: int
    be_pid: int
    expected_rows: int = 0
    log_offset: int = 0

    def port(self, side: str) -> int:
        return self.proc.http_port if side == "fe" else self.proc.be_http_port

    def count(self) -> int:
        return self.proc.query("SELECT COUNT(*) FROM t", DB)[0][0]

    def load_state(self, label: str) -> str:
        r = httpx.get(
            f"http://127.0.0.1:{self.proc.http_port}/api/{DB}/get_load_state",
            params={"label": label},
            headers=auth_header(),
            timeout=60,
        )
        return r.json()["data"]

    def assert_not_loaded(self, label: str) -> None:
        """The probe's label never became visible: never begun, or aborted (the abort of a load
        whose client vanished may run just after the probe returns, so wait for it)."""
        deadline = time.monotonic() + 120
        while (state := self.load_state(label)) in ("PREPARE", "COMMITTED") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert state in ("UNKNOWN", "ABORTED"), (label, state)

    def check(self, *, loaded: int = 0) -> None:
        """Same live FE and BE, a normal 3-row load succeeds, the table holds the rows of the
        successful loads (`loaded` of them from the probe itself), and no ERROR in the log."""
        self.expected_rows += loaded
        assert self.proc.proc is not None and self.proc.proc.poll() is None
        assert self.proc.role_pid("fe") == self.fe_pid
        assert self.proc.role_pid("be") == self.be_pid
        for pid in (self.fe_pid, self.be_pid):
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            assert state not in ("Z", "X"), (pid, state)
        base = 1000 + self.expected_rows
        body = "".join(f"{base + i},ok\n" for i in range(3)).encode()
        reply = self.proc.stream_load(DB, "t", body, {"column_separator": ",", "label": _label("ok")})
        assert reply["Status"] == "Success" and reply["NumberLoadedRows"] == 3, reply
        self.expected_rows += 3
        assert self.count() == self.expected_rows
        self.assert_clean_log()

    def assert_clean_log(self) -> None:
        text = self.proc.log_path.read_bytes()[self.log_offset :].decode(errors="replace")
        self.log_offset += len(text.encode(errors="replace"))
        bad = [line for line in text.splitlines() if _ERROR_LINE.search(line)]
        assert not bad, "\n".join(bad[:20])


def _label(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    proc = GaleneProcess(tmp_path_factory.mktemp("hostile-http"))
    proc.start()
    try:
        proc.query(f"CREATE DATABASE {DB}")
        proc.query(f"CREATE TABLE t {DUP}", DB)
        n = Node(proc, fe_pid=proc.role_pid("fe"), be_pid=proc.role_pid("be"))
        n.log_offset = proc.log_path.stat().st_size
        n.check()
        yield n
    finally:
        proc.stop()


@pytest.fixture(autouse=True)
def each_probe_on_its_own(node):
    """Each test starts from the table's real count and the log's current end (one test's
    failure is not blamed on the next), and ends with no ERROR in the log."""
    node.expected_rows = node.count()
    node.log_offset = node.proc.log_path.stat().st_size
    yield
    node.assert_clean_log()


# --- request heads --------------------------------------------------------------------------

_TOO_MANY = "".join(f"X-H{i}: v\r\n" for i in range(10_000))
_COUNT = f"more than {MAX_HEADERS} headers"
_SIZE = f"longer than {MAX_HEADER_BYTES} bytes"
_HEAD = f"the request head is longer than {MAX_HEAD_BYTES} bytes"
_MAX_HEAD = "".join(f"X-H{i}: {'m' * (MAX_HEADER_BYTES - 16)}\r\n" for i in range(MAX_HEADERS - 2))
_LOAD = f"/api/{DB}/t/_stream_load"
# name -> (request, the limit its refusal names)
_HEAD_PROBES = {
    "10k headers": (f"PUT {_LOAD} HTTP/1.1\r\nHost: x\r\n{_TOO_MANY}\r\n", _COUNT),
    "1 MB header": (f"PUT {_LOAD} HTTP/1.1\r\nHost: x\r\nX-Big: {'a' * (1 << 20)}\r\n\r\n", _SIZE),
    "1 MB request line": (f"PUT {_LOAD}?{'a' * (1 << 20)} HTTP/1.1\r\nHost: x\r\n\r\n", _SIZE),
    "1 MB header name": (f"PUT {_LOAD} HTTP/1.1\r\nHost: x\r\n{'N' * (1 << 20)}: v\r\n\r\n", _SIZE),
    "16 MB header": (f"PUT {_LOAD} HTTP/1.1\r\nHost: x\r\nX-Big: {'a' * (16 << 20)}\r\n\r\n", _SIZE),
    "8 MB of legal headers": (f"PUT {_LOAD} HTTP/1.1\r\nHost: x\r\n{_MAX_HEAD}\r\n", _HEAD),
    "10k trailers": (
        f"PUT {_LOAD} HTTP/1.1\r\nHost: x\r\nAuthorization: {AUTH}\r\nTransfer-Encoding: chunked\r\n\r\n"
        + f"4\r\n1,a\n\r\n0\r\n{_TOO_MANY}\r\n",
        _COUNT,
    ),
}


def test_request_heads_over_the_bounds_get_431_and_memory_stays_bounded(node):
    rss_before = {side: peak_rss_bytes(getattr(node, f"{side}_pid")) for side in ("fe", "be")}
    for side in ("be", "fe"):
        for name, (request, limit) in _HEAD_PROBES.items():
            out = _send(node.port(side), request.encode())
            assert out.closed, (side, name)
            assert len(out.replies) == 1, (side, name, out)
            reply = out.replies[0]
            if name == "10k trailers" and reply.status != 431:
                # The server read the head and the chunk before the trailers: the FE had
                # answered its 307, the BE's load fails on its body (Doris' way, 200).
                assert (side, reply.status) in (("fe", 307), ("be", 200)), reply
                if side == "be":
                    doc = reply.json()
                    assert doc["Message"].startswith("[INVALID_ARGUMENT]malformed request body"), doc
                    assert limit in doc["Message"], doc
                node.check()
                continue
            assert reply.status == 431, (side, name, reply)
            if side == "be":  # Doris' stream-load reply shape
                doc = reply.json()
                assert doc["Status"] == "Fail", doc
                assert doc["Message"].startswith("[INVALID_ARGUMENT]Request Header Fields Too Large"), doc
                text = doc["Message"]
            else:
                text = reply.body.decode()
            assert limit in text, (side, name, text)
            node.check()

        # Maximal heads on several connections at once, none finished: each is refused once
        # its head passes MAX_HEAD_BYTES instead of being held whole.
        conns = [Conn(node.port(side)) for _ in range(CONCURRENT_HEADS)]
        try:
            for conn in conns:
                conn.send(f"PUT {_LOAD} HTTP/1.1\r\nHost: x\r\n{_MAX_HEAD}".encode())
            for conn in conns:
                out = conn.read()
                assert out.closed and [r.status for r in out.replies] == [431], out
        finally:
            for conn in conns:
                conn.close()
        node.check()
    for side in ("fe", "be"):
        after = peak_rss_bytes(getattr(node, f"{side}_pid"))
        assert after < rss_before[side] + RSS_HEADROOM, (side, rss_before[side] >> 20, after >> 20)


def test_heads_within_the_bounds_are_served(node):
    """128 headers, one of them 60 KB, 900 KB in all: a big but legal head still loads."""
    headers = _load_head(_label("bighead"), Connection="close", Content_Length="4", X_Big="b" * 60_000)
    headers.update({f"X-Pad-{i}": "p" * 7_000 for i in range(MAX_HEADERS - len(headers))})
    out = _send(node.port("be"), _head(f"PUT {_LOAD} HTTP/1.1", headers) + b"7,a\n")
    assert [r.status for r in out.replies] == [200], out
    assert out.replies[0].json()["Status"] == "Success", out.replies[0].json()
    node.check(loaded=1)


def test_a_stalled_head_does_not_block_other_clients(node):
    for side in ("fe", "be"):
        conn = Conn(node.port(side))
        try:
            conn.send(f"PUT /api/{DB}/t/_stream_load HTTP/1.1\r\nHost: x\r\nX-Half: ".encode())
            node.check()  # served while the half head waits
        finally:
            conn.close()
        node.check()


# --- lying Content-Length ---------------------------------------------------------------------


def test_content_length_larger_then_stall_is_cut_at_the_load_timeout(node):
    label = _label("stall")
    conn = Conn(node.port("be"))
    try:
        conn.send(_head(f"PUT {_LOAD} HTTP/1.1", _load_head(label, timeout="3", Content_Length="1000")))
        conn.send(b"1,a\n2,b\n")  # 8 of the 1000 bytes, then nothing
        out = conn.read(replies=1)
    finally:
        conn.close()
    doc = out.replies[0].json()
    assert doc["Status"] == "Fail" and doc["Message"].startswith("[TIMEOUT]"), doc
    assert "3 s" in doc["Message"], doc
    node.assert_not_loaded(label)
    node.check()

    # The FE's entry never reads the body: the 307 comes at once, the stalled body is its problem.
    conn = Conn(node.port("fe"))
    try:
        conn.send(_head(f"PUT {_LOAD} HTTP/1.1", _load_head(label, timeout="3", Content_Length="1000")))
        conn.send(b"1,a\n")
        out = conn.read(replies=1)
    finally:
        conn.close()
    assert out.replies[0].status == 307
    node.check()


@pytest.mark.parametrize("how", ["half-close", "close"])
@pytest.mark.parametrize("framing", ["content-length", "chunked without the last chunk"])
def test_body_cut_short_by_the_client_aborts_cleanly(node, how, framing):
    label = _label("short")
    if framing == "content-length":
        headers, body = _load_head(label, expect=True, Content_Length="1000"), b"1,a\n2,b\n"
    else:
        headers, body = _load_head(label, expect=True, Transfer_Encoding="chunked"), b"8\r\n1,a\n2,b\n\r\n"
    conn = Conn(node.port("be"))
    try:
        conn.send(_head(f"PUT {_LOAD} HTTP/1.1", headers))
        conn.read(interim=True)  # 100 Continue: the load is reading the body
        conn.send(body)
        if how == "half-close":
            conn.half_close()
            out = conn.read()
            assert out.closed
            # Either nothing, or a failure reply: never a success.
            assert all(r.json()["Status"] != "Success" for r in out.replies), out
    finally:
        conn.close()
    node.assert_not_loaded(label)
    node.check()


@pytest.mark.parametrize("side", ["be", "fe"])
@pytest.mark.parametrize("split", [False, True], ids=["one-send", "garbage-later"])
def test_content_length_smaller_than_the_body(node, side, split):
    """The bytes after the declared body are the next "request" on the keep-alive connection:
    a clean 400 and a close, and only a load that answered Success is in the table."""
    head = _head(f"PUT {_LOAD} HTTP/1.1", _load_head(_label("smaller"), Content_Length="4"))
    extra = b"2,b\n3,c\nGARBAGE \x00\x01 here\r\n\r\n"
    conn = Conn(node.port(side))
    try:
        if split:
            conn.send(head + b"1,a\n")
            conn.read(replies=1)
            conn.send(extra)
        else:
            conn.send(head + b"1,a\n" + extra)
        out = conn.read()
    finally:
        conn.close()
    assert out.closed
    statuses = [r.status for r in out.replies]
    assert statuses[-1] in (400, 307), out  # the FE's 307 closes before the garbage is parsed
    assert 400 in statuses or side == "fe", out
    loaded = sum(r.json()["NumberLoadedRows"] for r in out.replies if r.status == 200 and side == "be")
    if split and side == "be":
        assert loaded == 1, out
    node.check(loaded=loaded)


# --- bad chunked encoding ---------------------------------------------------------------------

_BAD_CHUNKS = {
    "invalid chunk size": b"zz\r\n1,a\n\r\n0\r\n\r\n",
    "chunk extension garbage": b'4;\x01\x02="\r\n1,a\n\r\n0\r\n\r\n',
    "negative chunk size": b"-4\r\n1,a\n\r\n0\r\n\r\n",
    "chunk longer than its size": b"2\r\n1,a\n\r\n0\r\n\r\n",
}


@pytest.mark.parametrize("case", list(_BAD_CHUNKS))
def test_bad_chunked_encoding_in_one_send(node, case):
    for side in ("be", "fe"):
        label = _label("chunk")
        head = _head(f"PUT {_LOAD} HTTP/1.1", _load_head(label, Transfer_Encoding="chunked"))
        out = _send(node.port(side), head + _BAD_CHUNKS[case])
        assert out.closed
        if side == "be":
            # 400 when the head and the bad chunk were parsed together; the load's own failure
            # (200, Doris' way) when the load had begun reading the body.
            assert len(out.replies) == 1 and out.replies[0].status in (200, 400), out
            doc = out.replies[0].json()
            assert doc["Status"] == "Fail" and doc["Message"].startswith("[INVALID_ARGUMENT]"), doc
        else:
            assert [r.status for r in out.replies] in ([400], [307]), out
        node.assert_not_loaded(label)
        node.check()


@pytest.mark.parametrize("case", list(_BAD_CHUNKS))
def test_bad_chunk_in_the_middle_of_a_body_fails_the_load_at_once(node, case):
    """The head and a good chunk arrive first, the load starts reading, then a bad chunk: the
    load answers a Doris failure right away (not at its timeout), and the connection closes."""
    label = _label("midchunk")
    conn = Conn(node.port("be"))
    try:
        # timeout 300: a load that waited for its deadline would outlast the socket's 60 s.
        conn.send(_head(f"PUT {_LOAD} HTTP/1.1",
                        _load_head(label, expect=True, timeout="300", Transfer_Encoding="chunked")))  # fmt: skip
        conn.read(interim=True)
        conn.send(b"4\r\n1,a\n\r\n")
        conn.send(_BAD_CHUNKS[case])
        out = conn.read()
    finally:
        conn.close()
    assert out.closed and len(out.replies) == 1, out
    doc = out.replies[0].json()
    assert doc["Status"] == "Fail", doc
    assert doc["Message"].startswith("[INVALID_ARGUMENT]malformed request body"), doc
    node.assert_not_loaded(label)
    node.check()

    # Through the FE: the 307 comes first; the bad body that follows only closes the connection.
    conn = Conn(node.port("fe"))
    try:
        conn.send(_head(f"PUT {_LOAD} HTTP/1.1", _load_head(label, Transfer_Encoding="chunked")))
        out = conn.read(replies=1)
        conn.send(b"4\r\n1,a\n\r\n" + _BAD_CHUNKS[case])
        out = conn.read()
    finally:
        conn.close()
    assert out.closed and [r.status for r in out.replies] == [307], out
    node.check()


# --- contradictory or invalid framing headers, garbage request lines ------------------------------


def test_content_length_and_transfer_encoding_together(node):
    head = _load_head(_label("both"), Content_Length="4", Transfer_Encoding="chunked")
    data = _head(f"PUT {_LOAD} HTTP/1.1", head) + b"4\r\n1,a\n\r\n0\r\n\r\n"
    out = _send(node.port("be"), data)
    assert out.closed and [r.status for r in out.replies] == [200], out
    doc = out.replies[0].json()
    assert doc["Status"] == "Fail"
    assert doc["Message"] == "[INTERNAL_ERROR]please do not set both content_length and transfer-encoding"
    node.check()
    out = _send(node.port("fe"), data)
    assert out.closed and [r.status for r in out.replies] == [400], out
    assert b"Content-Length" in out.replies[0].body
    node.check()


@pytest.mark.parametrize("value", ["abc", "-5", "4, 5", "99999999999999999999999", "0x10", ""])
def test_invalid_content_length(node, value):
    for side in ("be", "fe"):
        label = _label("badcl")
        head = _head(f"PUT {_LOAD} HTTP/1.1", _load_head(label, Content_Length=value))
        out = _send(node.port(side), head + b"1,a\n")
        assert out.closed and [r.status for r in out.replies] == [400], (side, value, out)
        text = out.replies[0].json()["Message"] if side == "be" else out.replies[0].body.decode()
        assert "Bad Request" in text, text
        node.assert_not_loaded(label)
        node.check()


_GARBAGE = {
    "HTTP/0.9 GET": b"GET /api/health\r\n\r\n",
    "HTTP/0.9 PUT load": f"PUT /api/{DB}/t/_stream_load\r\n\r\n".encode(),
    "binary": bytes(range(256)) * 4 + b"\r\n\r\n",
    "TLS hello": bytes.fromhex("16030100a5010000a10303") + b"\x00" * 200,
    "no version": b"PUT /x HTTP/\r\n\r\n",
    "bare newlines": b"\n\n\n\n",
}


@pytest.mark.parametrize("case", list(_GARBAGE))
def test_garbage_request_lines(node, case):
    for side in ("be", "fe"):
        conn = Conn(node.port(side), timeout=30)
        try:
            conn.send(_GARBAGE[case])
            conn.half_close()
            out = conn.read()
        finally:
            conn.close()
        # A clear answer or a clean close: never a hang (the socket timeout would raise).
        assert out.closed, (side, case, out)
        for r in out.replies:
            assert r.status < 500, (side, case, r)
        node.check()


# --- JSON bodies on the FE's routes -------------------------------------------------------------


def test_internal_routes_bound_json_bodies(node):
    fe = node.port("fe")
    token = json.loads((node.proc.data_dir / "be" / "cluster.json").read_text())["token"]
    internal = "/api/_internal/table_info"
    rss_before = peak_rss_bytes(node.fe_pid)

    # Without the token nothing is read: 403 at once, whatever the body claims.
    head = {"Host": "x", "Content-Type": "application/json", "Content-Length": str(200 << 20)}
    out = _send(fe, _head(f"POST {internal} HTTP/1.1", head), replies=1)
    assert out.replies[0].status == 403, out

    # With the token, a declared size over the bound is refused before any byte is read.
    head["X-Galene-Token"] = token
    for path in (internal, "/api/_internal/txn/2pc", "/api/_internal/txn/commit"):
        out = _send(fe, _head(f"POST {path} HTTP/1.1", head), replies=1)
        assert out.replies[0].status == 413, (path, out)
        doc = out.replies[0].json()
        assert doc["status"] == "ERROR" and "Request Entity Too Large" in doc["message"], doc
        node.check()

    # A chunked body is cut as soon as it passes the bound.
    with httpx.Client(timeout=120) as c:

        def big():
            chunk = b" " * (1 << 20)
            for _ in range(101):
                yield chunk

        r = c.post(f"http://127.0.0.1:{fe}{internal}", content=big(), headers={"X-Galene-Token": token})
        assert r.status_code == 413 and r.json()["status"] == "ERROR", r.text
        node.check()

        # Under the bound, a big JSON document is read (a commit of a large load lists many
        # files): the answer is the route's own.
        doc = {"db": "no_such_db", "table": "t", "user": "root", "password": "", "pad": "x" * (2 << 20)}
        r = c.post(f"http://127.0.0.1:{fe}{internal}", json=doc, headers={"X-Galene-Token": token})
        assert r.status_code == 200 and r.json()["status"] == "ERROR", r.text
        assert "no_such_db" in r.json()["message"], r.text

        # Not JSON, or not an object: 400 in the same JSON shape.
        for body in (b"{not json", b"[1, 2]", b""):
            r = c.post(f"http://127.0.0.1:{fe}{internal}", content=body, headers={"X-Galene-Token": token})
            assert r.status_code == 400 and r.json()["status"] == "ERROR", (body, r.text)
        node.check()

    # The BE's heartbeat route reads JSON too.
    r = httpx.post(
        f"http://127.0.0.1:{node.port('be')}/api/_internal/heartbeat", content=b"{oops", timeout=60
    )
    assert r.status_code == 400 and r.json()["status"] == "ERROR", r.text
    node.check()
    assert peak_rss_bytes(node.fe_pid) < rss_before + (100 << 20) + RSS_HEADROOM


def test_public_fe_routes_never_read_an_oversized_body(node):
    """The FE's public routes do not read bodies: a 64 MB body on them is answered and dropped,
    and the FE's memory does not grow with it."""
    fe = node.port("fe")
    rss_before = peak_rss_bytes(node.fe_pid)
    size = 64 << 20
    for method_line, want in (
        (f"GET /api/{DB}/get_load_state?label=x HTTP/1.1", 200),
        (f"PUT /api/{DB}/t/_stream_load HTTP/1.1", 307),
        (f"PUT /api/{DB}/t/_stream_load_2pc HTTP/1.1", 200),
        ("POST /api/_gc HTTP/1.1", 401),
    ):
        headers = {"Host": "x", "Content-Length": str(size), "Connection": "close"}
        if want != 401:
            headers["Authorization"] = AUTH
        conn = Conn(fe)
        try:
            conn.send(_head(method_line, headers))
            out = conn.read(replies=1)
            assert out.replies and out.replies[0].status == want, (method_line, out)
            block = b"z" * (1 << 20)
            for _ in range(size >> 20):  # the rest of the body: dropped, or the FE has closed
                conn.send(block)
                if conn.out.closed:
                    break
        finally:
            conn.close()
        node.check()
    assert peak_rss_bytes(node.fe_pid) < rss_before + RSS_HEADROOM
