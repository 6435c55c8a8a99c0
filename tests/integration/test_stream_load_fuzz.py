"""Fuzzing the BE stream-load endpoint with random bodies and headers (hypothesis).

Bodies: raw bytes, broken CSV and JSON, huge fields, NULs, invalid UTF-8, compressed-looking
junk; and hostile shapes: JSON nested up to 200,000 deep (arrays, objects, mixed, inside
lines, after strings), compression bombs of every codec, rows 100,000 fields wide, lines of
megabytes. Headers: every known Stream Load header with random values, unknown names, names
in odd case. For every request the test checks what a user relies on:

* a reply comes back before the load's own timeout (plus a margin for the reply itself):
  HTTP 200 with a JSON `Status`, or a clean 4xx;
* the server stays up (a health request after each example);
* a failed load never makes anything visible, and a successful one adds exactly
  `NumberLoadedRows` rows (checked with count(*) through the MySQL endpoint).

The run is bounded (a fixed number of examples, derandomized so CI is reproducible; set
GALENE_FUZZ_RANDOM=1 to explore new inputs).
"""

from __future__ import annotations

import os
import uuid

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.client import auth_header

pytestmark = pytest.mark.slow

TABLE_DDL = (
    "(k INT NOT NULL, s VARCHAR(32), d DATE, x DOUBLE, m DECIMAL(10, 2)) "
    "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2"
)
COLUMNS = ("k", "s", "d", "x", "m")
# Seconds a reply may take beyond the load's `timeout` (reply writing, FE round trips).
REPLY_MARGIN_S = 20
DEFAULT_FUZZ_TIMEOUT_S = 10
# Load statuses a client can receive (Doris' set).
LOAD_STATUSES = {"Success", "Publish Timeout", "Label Already Exists", "Fail"}

# --- strategies ---------------------------------------------------------------------------

# Header values must survive HTTP: visible latin-1 text, no CR/LF.
header_text = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF, blacklist_characters="\x7f"),
    max_size=40,
).map(str.strip)

field_bytes = st.one_of(
    st.integers(-(2**40), 2**40).map(lambda i: str(i).encode()),
    st.sampled_from([b"", b"\\N", b"NULL", b"null", b"2024-02-30", b"2024-01-01", b"1e309", b"nan", b"-0"]),
    st.binary(max_size=12),  # NULs, invalid UTF-8
    st.text(max_size=12).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.integers(1, 200_000).map(lambda n: b"x" * n),  # huge field
)


@st.composite
def csv_bodies(draw) -> bytes:
    sep = draw(st.sampled_from([b",", b"\t", b"|", b"||", b"\x01"]))
    nl = draw(st.sampled_from([b"\n", b"\r\n", b"\n\n"]))
    rows = draw(st.lists(st.lists(field_bytes, min_size=0, max_size=7), max_size=12))
    body = nl.join(sep.join(r) for r in rows)
    if draw(st.booleans()):
        body += nl
    return body


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=10)),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from([*COLUMNS, "K", "zz", ""]), children, max_size=6),
    ),
    max_leaves=12,
)


@st.composite
def json_bodies(draw) -> bytes:
    import json

    docs = draw(st.lists(json_values, max_size=6))
    if draw(st.booleans()):
        text = json.dumps(docs)
    else:
        text = "\n".join(json.dumps(d) for d in docs)
    raw = text.encode()
    if raw and draw(st.booleans()):  # truncate or corrupt
        cut = draw(st.integers(0, len(raw)))
        raw = raw[:cut] + draw(st.binary(max_size=4))
    return raw


bodies = st.one_of(st.binary(max_size=2048), csv_bodies(), json_bodies())


@st.composite
def deep_json(draw) -> tuple[bytes, dict[str, str]]:
    """JSON nested far past load_json_max_depth: arrays, objects, both, in any framing."""
    depth = draw(st.integers(50, 200_000))
    opener, closer = draw(
        st.sampled_from([(b"[", b"]"), (b'{"k":', b"}"), (b'[{"s":', b"}]"), (b'{"s":"[","k":[', b"]}")])
    )
    inner = draw(st.sampled_from([b"1", b'"x"', b"[]", b"{}", b""]))
    closed = draw(st.booleans())
    doc = opener * depth + inner + (closer * depth if closed else b"")
    prefix = draw(st.sampled_from([b"", b'{"k": 1, "s": "a"}\n', b'{"s": "unterminated\n', b"]]]]\n"]))
    framing = draw(st.sampled_from(["array", "lines", "plain"]))
    if framing == "array":
        return b"[" + doc + b"]", {"format": "json", "strip_outer_array": "true"}
    if framing == "lines":
        return prefix + doc + b"\n", {"format": "json", "read_json_by_line": "true"}
    return doc, {"format": "json"}


def _compress(data: bytes, codec: str) -> bytes:
    import pyarrow as pa

    out = pa.BufferOutputStream()
    with pa.CompressedOutputStream(out, codec) as stream:
        stream.write(data)
    return out.getvalue().to_pybytes()


_CODECS = {"gz": "gzip", "bz2": "bz2", "lz4": "lz4", "zstd": "zstd"}


@st.composite
def compression_bombs(draw) -> tuple[bytes, dict[str, str]]:
    """A few KB that inflate to up to 256 MB of one repeated unit (concatenated streams)."""
    compress_type = draw(st.sampled_from(sorted(_CODECS)))
    unit = draw(st.sampled_from([b"\0" * 64, b" " * 64, b"[" * 64, b'{"k":' * 8, b"1,a\n", b"x," * 32]))
    repeats = draw(st.integers(1, 16))
    piece = 16 << 20 if compress_type != "bz2" else 1 << 20
    member = _compress(unit * (piece // len(unit)), _CODECS[compress_type])
    if unit == b"1,a\n":
        repeats = 1  # real rows: a bounded number of them
    fmt = draw(st.sampled_from(["csv", "json"]))
    headers = {"compress_type": compress_type, "format": fmt, "column_separator": ","}
    if fmt == "json":
        headers[draw(st.sampled_from(["strip_outer_array", "read_json_by_line"]))] = "true"
    return member * repeats, headers


@st.composite
def oversized_rows(draw) -> tuple[bytes, dict[str, str]]:
    """Rows 100,000 fields wide, fields and lines of megabytes, a `columns` list of thousands."""
    kind = draw(st.sampled_from(["wide", "long_line", "many_columns_header"]))
    if kind == "wide":
        n = draw(st.integers(1000, 100_000))
        return b",".join([b"1"] * n) + b"\n", {"column_separator": ","}
    if kind == "long_line":
        n = draw(st.integers(1 << 20, 8 << 20))
        return b"1," + b"y" * n + b"\n2,b\n", {"column_separator": ","}
    n = draw(st.integers(100, 3000))
    names = ",".join(f"c{i}" for i in range(n))
    return b"1,a\n", {"column_separator": ",", "columns": names}


hostile_inputs = st.one_of(deep_json(), compression_bombs(), oversized_rows())

KNOWN_HEADERS: dict[str, st.SearchStrategy[str]] = {
    "format": st.sampled_from(
        ["csv", "CSV", "json", "csv_with_names", "csv_with_names_and_types", "parquet", "orc", "xml"]
    ),
    "column_separator": st.sampled_from([",", "\\t", "|", "||", "\\x01", "\\x", "\\xZZ", ""]) | header_text,
    "line_delimiter": st.sampled_from(["\\n", "\\r\\n", "\\x0a", "||"]) | header_text,
    "enclose": st.sampled_from(['"', "'", "ab"]) | header_text,
    "escape": st.sampled_from(["\\", "ab"]) | header_text,
    "skip_lines": st.integers(-2, 5).map(str) | header_text,
    "trim_double_quotes": st.sampled_from(["true", "false"]) | header_text,
    "columns": st.sampled_from(["k,s,d,x,m", "k, s", "m,x,d,s,k", "k,tmp,s", "k,s,d,x,m,extra", "k,k"])
    | header_text,
    "where": st.sampled_from(["k > 1", "s = 'a'", "k >", "1 = 1"]) | header_text,
    "max_filter_ratio": st.sampled_from(["0", "0.5", "1", "1.5", "-1", "nan", "abc"]),
    "strict_mode": st.sampled_from(["true", "false", "TRUE", "yes"]),
    "timezone": st.sampled_from(["Asia/Shanghai", "UTC", "+08:00", "Mars/Olympus"]) | header_text,
    "jsonpaths": st.sampled_from(['["$.k","$.s"]', "[", '["$.nope"]']) | header_text,
    "json_root": st.sampled_from(["$.data", "$", "$.["]) | header_text,
    "strip_outer_array": st.sampled_from(["true", "false"]),
    "read_json_by_line": st.sampled_from(["true", "false"]),
    "num_as_string": st.sampled_from(["true", "false"]),
    "fuzzy_parse": st.sampled_from(["true", "false"]),
    "merge_type": st.sampled_from(["APPEND", "DELETE", "MERGE", "UPSERT"]),
    "delete": st.sampled_from(["k = 1", "k >"]),
    "partitions": st.sampled_from(["p1", "t", ""]) | header_text,
    "compress_type": st.sampled_from(["gz", "bz2", "lz4", "zstd", "plain", "rar"]),
    "empty_field_as_null": st.sampled_from(["true", "false"]),
    "two_phase_commit": st.sampled_from(["true", "false", "maybe"]),
    "timeout": st.integers(-1, 20).map(str) | header_text,
    "label": header_text,
    "Expect": st.just("100-continue"),
}
UNKNOWN_NAMES = st.from_regex(r"\A[A-Za-z][A-Za-z0-9_\-]{0,20}\Z", fullmatch=True).filter(
    lambda n: (
        n.lower() not in {k.lower() for k in KNOWN_HEADERS}
        and n.lower()
        not in {"content-length", "transfer-encoding", "host", "connection", "authorization", "group_commit"}
    )
)


def _random_case(draw, name: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
    return "".join(c.upper() if f else c.lower() for c, f in zip(name, flips, strict=True))


@st.composite
def header_sets(draw) -> dict[str, str]:
    names = draw(st.lists(st.sampled_from(sorted(KNOWN_HEADERS)), max_size=6, unique=True))
    headers: dict[str, str] = {}
    for name in names:
        headers[_random_case(draw, name)] = draw(KNOWN_HEADERS[name])
    for name in draw(st.lists(UNKNOWN_NAMES, max_size=3, unique_by=str.lower)):
        headers[name] = draw(header_text)
    return headers


# --- helpers ------------------------------------------------------------------------------


def _load_timeout_s(headers: dict[str, str]) -> int:
    """The timeout the load runs under (what the client may wait for, plus a margin)."""
    for name, value in headers.items():
        if name.lower() == "timeout":
            try:
                seconds = int(value.strip())
            except ValueError:
                return DEFAULT_FUZZ_TIMEOUT_S  # refused at once
            return seconds if seconds > 0 else DEFAULT_FUZZ_TIMEOUT_S
    return DEFAULT_FUZZ_TIMEOUT_S


def _in_pieces(body: bytes, size: int = 1000):
    for i in range(0, len(body), size):
        yield body[i : i + size]


@pytest.fixture(scope="module")
def fuzz_target(galene):
    db = "fuzz_" + uuid.uuid4().hex[:8]
    galene.query(f"CREATE DATABASE {db}")
    galene.query(f"CREATE TABLE t {TABLE_DDL}", db)
    state = {"db": db, "rows": 0}
    yield state
    galene.query(f"DROP DATABASE IF EXISTS {db}")


FUZZ_SETTINGS = settings(
    max_examples=int(os.environ.get("GALENE_FUZZ_EXAMPLES", "60")),
    deadline=None,
    derandomize=os.environ.get("GALENE_FUZZ_RANDOM") != "1",
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


@FUZZ_SETTINGS
@given(body=bodies, headers=header_sets(), chunked=st.booleans())
def test_random_bodies_and_headers_never_break_the_be(galene, fuzz_target, body, headers, chunked):
    _fuzz_one(galene, fuzz_target, body, headers, chunked)


@settings(FUZZ_SETTINGS, max_examples=int(os.environ.get("GALENE_FUZZ_HOSTILE_EXAMPLES", "30")))
@given(hostile=hostile_inputs, headers=header_sets(), chunked=st.booleans())
def test_nested_and_oversized_inputs_never_break_the_be(galene, fuzz_target, hostile, headers, chunked):
    body, shape = hostile
    # The shape's own headers win over random ones that would make it another load entirely.
    merged = {k: v for k, v in headers.items() if k.lower() not in shape}
    merged.update(shape)
    _fuzz_one(galene, fuzz_target, body, merged, chunked)


def _fuzz_one(galene, fuzz_target, body: bytes, headers: dict[str, str], chunked: bool) -> None:
    db = fuzz_target["db"]
    h = {**auth_header(), **headers}
    if not any(k.lower() == "timeout" for k in headers):
        h["timeout"] = str(DEFAULT_FUZZ_TIMEOUT_S)
    if not any(k.lower() == "label" for k in headers):
        h["label"] = "fz_" + uuid.uuid4().hex
    client_deadline = _load_timeout_s(headers) + REPLY_MARGIN_S
    content = _in_pieces(body, 1 << 16 if len(body) > 1 << 20 else 1000) if chunked else body
    url = f"http://127.0.0.1:{galene.be_http_port}/api/{db}/t/_stream_load"

    with httpx.Client(timeout=httpx.Timeout(client_deadline)) as client:
        try:
            # Values go out as raw latin-1 bytes (httpx would refuse non-ASCII text).
            r = client.put(url, headers={k: v.encode("latin-1") for k, v in h.items()}, content=content)
        except httpx.TimeoutException:
            pytest.fail(f"no reply within {client_deadline} s for headers={headers!r} body={body[:200]!r}")

    assert r.status_code == 200 or 400 <= r.status_code < 500, (r.status_code, r.text[:500])
    loaded = 0
    if r.status_code == 200:
        reply = r.json()
        assert reply["Status"] in LOAD_STATUSES, reply
        if reply["Status"] == "Fail":
            assert reply["NumberLoadedRows"] == 0, reply
        if reply["Status"] in ("Success", "Publish Timeout") and reply.get("TwoPhaseCommit") != "true":
            loaded = reply["NumberLoadedRows"]
        if reply.get("TwoPhaseCommit") == "true" and reply["Status"] == "Success":
            # Precommitted: invisible until committed; abort it so it leaves nothing behind.
            abort = httpx.put(
                f"http://127.0.0.1:{galene.be_http_port}/api/{db}/_stream_load_2pc",
                headers={**auth_header(), "txn_id": str(reply["TxnId"]), "txn_operation": "abort"},
            )
            assert abort.json()["status"] == "Success", abort.text

    assert httpx.get(f"http://127.0.0.1:{galene.be_http_port}/api/health", timeout=10).status_code == 200
    fuzz_target["rows"] += loaded
    assert galene.query("SELECT count(*) FROM t", db)[0][0] == fuzz_target["rows"], (
        f"visible rows differ after headers={headers!r} body={body[:200]!r} reply={r.text[:500]}"
    )
