"""What a stream-load body may be: its inflated size, its JSON nesting depth, its line length.

Owns the limits a BE puts on a body before any parser sees it, and the checks that enforce
them without recursion and in memory bounded by a block:

* `inflate` streams a compressed body (gz, bz2, lz4 frame, zstd) block by block through
  pyarrow's codecs, counting the *inflated* bytes against `streaming_load_max_mb`: a 2 MB
  bomb that would inflate to 2 GB stops at the limit, having held one block at a time.
* `check_json_depth` scans JSON bytes for the deepest `[`/`{` nesting outside strings with
  numpy, a chunk at a time. Parsers recurse on nesting (pyarrow's JSON reader overflowed the C
  stack at 100,000 levels and took the process down; msgspec raised RecursionError at 1,000),
  so a document deeper than `load_json_max_depth` is refused before one is called.
* `check_line_length` refuses a line (CSV, or JSON read by line) longer than
  `load_max_line_bytes` with a handful of C-level `bytes.find` calls, however long the body.

`BodyLimits` carries the configured values from the BE to every parse call.
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec
import numpy as np
import pyarrow as pa

from galene.common.errors import LoadError

# Inflated bytes handed on per step: what a decompressing load holds besides its output.
INFLATE_BLOCK_BYTES = 1 << 20
# Bytes of JSON scanned per numpy pass (the pass allocates ~50 bytes per input byte).
_DEPTH_SCAN_CHUNK = 1 << 20


class BodyLimits(msgspec.Struct, frozen=True):
    """The BE's bounds on one stream-load body (config keys of the same names)."""

    max_body_bytes: int = 10240 << 20  # streaming_load_max_mb, counted after decompression
    json_max_bytes: int = 100 << 20  # streaming_load_json_max_mb: JSON read as one document
    json_max_depth: int = 100  # load_json_max_depth
    max_line_bytes: int = 64 << 20  # load_max_line_bytes
    max_body_key: str = "streaming_load_max_mb"  # the config key named when a body is too big

    @classmethod
    def from_config(cls, cfg) -> BodyLimits:
        return cls(
            max_body_bytes=cfg.streaming_load_max_mb << 20,
            json_max_bytes=cfg.streaming_load_json_max_mb << 20,
            json_max_depth=cfg.load_json_max_depth,
            max_line_bytes=cfg.load_max_line_bytes,
        )


DEFAULT_LIMITS = BodyLimits()


def body_too_big(size: str, max_bytes: int, key: str = "streaming_load_max_mb") -> LoadError:
    """Doris' reply for a body over streaming_load_max_mb (or over another key's limit)."""
    return LoadError(
        f"The size of this stream load exceeds the limit, body size: {size}, max size: {max_bytes}. "
        f"Please consider splitting the data or increasing {key}."
    )


def json_too_big(size: int, max_bytes: int) -> LoadError:
    """Doris' reply for a JSON document over streaming_load_json_max_mb."""
    return LoadError(
        f"[EXCEEDED_LIMIT]json body size {size} exceed BE's conf `streaming_load_json_max_mb` "
        f"{max_bytes >> 20}. increase it if you are sure this load is reasonable"
    )


# ---------------------------------------------------------------------------------------
# Decompression
# ---------------------------------------------------------------------------------------


def inflate(
    body: bytes,
    codec: str,
    max_bytes: int,
    block_bytes: int = INFLATE_BLOCK_BYTES,
    key: str = "streaming_load_max_mb",
) -> Iterator[bytes]:
    """The inflated body in blocks of at most `block_bytes`, refusing more than `max_bytes`.

    `codec` is a pyarrow codec name (gzip, bz2, lz4, zstd). A truncated or corrupt stream is a
    DATA_QUALITY_ERROR naming the codec; the limit is checked before a block is handed on, so
    the caller never sees more than `max_bytes` in all."""
    total = 0
    try:
        with pa.CompressedInputStream(pa.BufferReader(body), codec) as stream:
            while True:
                block = stream.read(block_bytes)
                if not block:
                    return
                total += len(block)
                if total > max_bytes:
                    raise body_too_big(f"> {max_bytes} after decompression", max_bytes, key)
                yield block
    except (pa.ArrowException, OSError, ValueError, EOFError) as e:
        raise LoadError(f"[DATA_QUALITY_ERROR]failed to decompress the body as {codec}: {e}") from None


def inflate_all(body: bytes, codec: str, max_bytes: int, key: str = "streaming_load_max_mb") -> bytes:
    """The whole inflated body (for formats parsed as one piece), at most `max_bytes`."""
    return b"".join(inflate(body, codec, max_bytes, key=key))


# ---------------------------------------------------------------------------------------
# JSON nesting depth
# ---------------------------------------------------------------------------------------

_QUOTE, _BACKSLASH, _NEWLINE = ord('"'), ord("\\"), ord("\n")
_INTERESTING = np.zeros(256, np.bool_)
_INTERESTING[[ord(c) for c in '[]{}"\\\n']] = True
_DELTA = np.zeros(256, np.int8)
_DELTA[[ord("["), ord("{")]] = 1
_DELTA[[ord("]"), ord("}")]] = -1


def json_too_deep(max_depth: int) -> LoadError:
    # simdjson's wording (Doris' JSON reader) with the Galene key that sets the bound.
    return LoadError(
        "[DATA_QUALITY_ERROR]Parse json data failed. code: DEPTH_ERROR, error info: The JSON document "
        f"was too deep (too many nested objects and arrays): more than {max_depth} levels "
        "(BE config load_json_max_depth)"
    )


class _DepthScan:
    """Running state of the depth scan across chunks.

    Depth is the reflected walk of +1 per opener and -1 per closer outside strings (it never
    goes below 0, so a run of stray closers cannot hide the openers after it). String state
    restarts at every newline: a raw newline cannot be inside a JSON string, so every parser
    has failed or restarted there (read_json_by_line parses each line on its own). A quote
    after an odd run of backslashes is escaped. Where the bytes are valid JSON this is exactly
    the depth a parser reaches; where they are not, a parser stops at the first byte where the
    two could disagree, before any deeper level.

    Only the bytes that matter (brackets, quotes, backslashes, newlines) are looked at after one
    dense pass, so the cost follows their number, not the body's size."""

    def __init__(self) -> None:
        self.depth = 0  # depth after the bytes seen so far
        self.in_string = 0  # 1 inside a string at the end of the bytes seen
        self.backslashes = 0  # length of the run of backslashes the bytes seen end with
        self.max_depth = 0

    def feed(self, chunk) -> None:
        a = np.frombuffer(chunk, np.uint8)
        n = len(a)
        pos = np.flatnonzero(_INTERESTING[a])
        if len(pos) == 0:
            self.backslashes = 0 if n else self.backslashes
            return
        k = a[pos]
        m = len(pos)
        is_bs = k == _BACKSLASH
        quote = k == _QUOTE
        if is_bs.any() or self.backslashes:
            # Backslashes right before entry i: entries i-1, i-2, ... that are backslashes at
            # the byte positions just before it (plus the run carried in, if it reaches byte 0).
            cont = np.zeros(m, np.bool_)
            cont[1:] = is_bs[:-1] & (pos[:-1] == pos[1:] - 1)
            entry = np.arange(m, dtype=np.int64)
            last_break = np.maximum.accumulate(np.where(cont, 0, entry))
            first = self.backslashes if pos[0] == 0 else 0
            run_before = entry - last_break + np.where(last_break == 0, first, 0)
            quote &= (run_before & 1) == 0
            trailing = int(run_before[-1]) + 1 if (pos[-1] == n - 1 and is_bs[-1]) else 0
        else:
            trailing = 0
        is_nl = k == _NEWLINE
        cum = np.cumsum(quote, dtype=np.int64)
        if is_nl.any():
            # String parity restarts at each newline: subtract the quote count at the last one.
            base = np.maximum.accumulate(np.where(is_nl, cum, 0))
            seen_nl = np.logical_or.accumulate(is_nl)
            in_string = ((cum - base + np.where(seen_nl, 0, self.in_string)) & 1).astype(np.bool_)
        else:  # one document on one line (the usual whole-body JSON): no restarts to track
            in_string = ((cum + self.in_string) & 1).astype(np.bool_)
        delta = _DELTA[k]
        delta[in_string] = 0
        s = np.cumsum(delta, dtype=np.int64)
        s += self.depth
        if s.min() < 0:
            # Reflected walk (never below 0): d_t = S_t - min(0, min_{u<=t} S_u).
            s -= np.minimum(np.minimum.accumulate(s), 0)
        self.max_depth = max(self.max_depth, int(s.max()))
        self.depth = int(s[-1])
        self.in_string = 0 if is_nl[-1] else int(in_string[-1])
        if pos[-1] != n - 1:
            trailing = 0
        self.backslashes = trailing


def json_depth(body: bytes | memoryview) -> int:
    """The deepest nesting of arrays/objects in JSON bytes (see `_DepthScan`)."""
    scan = _DepthScan()
    view = memoryview(body)
    for start in range(0, len(view), _DEPTH_SCAN_CHUNK):
        scan.feed(view[start : start + _DEPTH_SCAN_CHUNK])
    return scan.max_depth


def check_json_depth(body: bytes, max_depth: int) -> None:
    """Refuse JSON nested deeper than `max_depth`."""
    # Fewer openers than the bound cannot nest past it: most bodies stop at this count.
    if body.count(b"[") + body.count(b"{") <= max_depth:
        return
    if json_depth(body) > max_depth:
        raise json_too_deep(max_depth)


# ---------------------------------------------------------------------------------------
# Line length
# ---------------------------------------------------------------------------------------


def line_too_long(max_bytes: int, offset: int) -> LoadError:
    return LoadError(
        f"[DATA_QUALITY_ERROR]The line is too long: a line of more than {max_bytes} bytes starts at "
        f"byte {offset} of the body (BE config load_max_line_bytes); is line_delimiter right?"
    )


def longest_line_over(body: bytes, delim: bytes, max_bytes: int) -> int | None:
    """The offset of a line longer than `max_bytes` (delimiter excluded), or None.

    Each step looks for the last delimiter inside the next window of `max_bytes` + its own
    length, so a body of N bytes costs about N / max_bytes C-level searches."""
    n = len(body)
    start = 0
    step = len(delim)
    while n - start > max_bytes:
        end = body.rfind(delim, start, start + max_bytes + step)
        if end < 0:
            return start
        start = end + step
    return None


def check_line_length(body: bytes, delim: bytes, max_bytes: int) -> None:
    if len(body) > max_bytes:
        offset = longest_line_over(body, delim, max_bytes)
        if offset is not None:
            raise line_too_long(max_bytes, offset)
