"""The stream-load body bounds (galene/load/bounds.py): bounded inflation for every codec,
the non-recursive JSON depth scan, and the line-length check."""

from __future__ import annotations

import json
import random

import msgspec
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import galene.load.bounds as bb
from galene.common.errors import LoadError
from galene.load.bounds import (
    check_json_depth,
    check_line_length,
    inflate,
    inflate_all,
    json_depth,
    longest_line_over,
)

CODECS = ["gzip", "bz2", "lz4", "zstd"]


def compress(data: bytes, codec: str) -> bytes:
    out = pa.BufferOutputStream()
    with pa.CompressedOutputStream(out, codec) as s:
        s.write(data)
    return out.getvalue().to_pybytes()


@pytest.mark.parametrize("codec", CODECS)
def test_inflate_gives_the_body_back_in_bounded_blocks(codec):
    data = b"".join(b"%d,row %d\n" % (i, i) for i in range(200_000))
    blocks = list(inflate(compress(data, codec), codec, len(data), block_bytes=64 << 10))
    assert b"".join(blocks) == data
    assert max(len(b) for b in blocks) <= 64 << 10


@pytest.mark.parametrize("codec", CODECS)
def test_inflate_stops_at_the_limit_on_inflated_bytes(codec):
    bomb = compress(b"\0" * (64 << 20), codec)
    assert len(bomb) < 1 << 20  # a small body ...
    seen = 0
    with pytest.raises(LoadError, match="exceeds the limit.*after decompression.*streaming_load_max_mb"):
        for block in inflate(bomb, codec, 8 << 20, block_bytes=1 << 20):
            seen += len(block)
    assert seen <= 8 << 20  # ... of which no more than the limit was ever handed on


@pytest.mark.parametrize("codec", CODECS)
def test_truncated_and_corrupt_streams_are_data_quality_errors(codec):
    good = compress(b"".join(b"%d\n" % i for i in range(100_000)), codec)
    with pytest.raises(LoadError, match=r"\[DATA_QUALITY_ERROR\]failed to decompress the body as " + codec):
        inflate_all(good[: len(good) // 2], codec, 1 << 30)
    with pytest.raises(LoadError, match=r"\[DATA_QUALITY_ERROR\]failed to decompress"):
        inflate_all(b"not compressed at all" * 10, codec, 1 << 30)


def _reference_depth(data: bytes) -> int:
    """A byte-at-a-time model of the scan's rules (escapes, newline restarts, no negative depth)."""
    depth = top = 0
    in_string = escaped = False
    for ch in data.decode("latin1"):
        was_escaped, escaped = escaped, ch == "\\" and not escaped
        if ch == '"' and not was_escaped:
            in_string = not in_string
        elif ch == "\n":
            in_string = False
        elif not in_string and ch in "[{":
            depth += 1
            top = max(top, depth)
        elif not in_string and ch in "]}":
            depth = max(0, depth - 1)
    return top


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet='[]{}"\\\nab,:', max_size=80), st.sampled_from([1, 2, 3, 5, 64]))
def test_depth_scan_matches_the_byte_model_at_every_chunk_size(text, chunk):
    data = text.encode()
    saved = bb._DEPTH_SCAN_CHUNK
    bb._DEPTH_SCAN_CHUNK = chunk
    try:
        assert json_depth(data) == _reference_depth(data)
    finally:
        bb._DEPTH_SCAN_CHUNK = saved


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(alphabet='ab"\\[]{}\n\t', max_size=6),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
        max_leaves=30,
    )
)
def test_depth_of_valid_json_is_its_nesting(doc):
    def nesting(v) -> int:  # hypothesis' documents are shallow: recursion is fine in a test
        if isinstance(v, list):
            return 1 + max((nesting(x) for x in v), default=0)
        if isinstance(v, dict):
            return 1 + max((nesting(x) for x in v.values()), default=0)
        return 0

    assert json_depth(json.dumps(doc).encode()) == nesting(doc)


def test_deep_documents_are_refused_before_any_parser():
    for body in (b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 5000 + b"1" + b"}" * 5000):
        with pytest.raises(LoadError, match="DEPTH_ERROR.*load_json_max_depth"):
            check_json_depth(body, 100)
    check_json_depth(b"[" * 100 + b"]" * 100, 100)  # exactly the bound is fine
    # Brackets inside strings, or after a run of stray closers, count as they should.
    check_json_depth(json.dumps({"s": "[" * 5000}).encode(), 100)
    with pytest.raises(LoadError, match="DEPTH_ERROR"):
        check_json_depth(b"]" * 1000 + b"[" * 101, 100)
    # An unterminated string on one line does not hide the next line's nesting.
    with pytest.raises(LoadError, match="DEPTH_ERROR"):
        check_json_depth(b'{"a": "open\n' + b"[" * 200 + b"]" * 200 + b"\n", 100)


def test_depth_scan_handles_a_large_body_in_chunks():
    rows = [{"id": i, "s": 'x\\"[' * (i % 4), "n": [1, [2, {"d": "]]"}]]} for i in range(40_000)]
    body = msgspec.json.encode(rows)
    assert len(body) > bb._DEPTH_SCAN_CHUNK
    assert json_depth(body) == 5


def test_line_length_check():
    rng = random.Random(3)
    lines = [b"x" * rng.randrange(0, 100) for _ in range(5000)]
    body = b"\n".join(lines) + b"\n"
    check_line_length(body, b"\n", 100)
    long_at = sum(len(x) + 1 for x in lines[:1234])
    bad = b"\n".join(lines[:1234]) + b"\n" + b"y" * 150 + b"\n" + b"\n".join(lines[1234:])
    assert longest_line_over(bad, b"\n", 100) == long_at
    with pytest.raises(LoadError, match="line is too long.*load_max_line_bytes"):
        check_line_length(bad, b"\n", 100)
    # Multi-byte delimiters: the delimiter itself is not part of the line.
    assert longest_line_over(b"a" * 10 + b"||" + b"b" * 10, b"||", 10) is None
    assert longest_line_over(b"a" * 11 + b"||" + b"b" * 10, b"||", 10) == 0
    # One line with no delimiter at all.
    assert longest_line_over(b"z" * 1000, b"\n", 999) == 0
