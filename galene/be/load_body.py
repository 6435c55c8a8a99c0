"""A stream load's body: read within `streaming_load_max_mb`, and parsed — block by block while
it arrives when it can be cut at line ends.

Owns reading the request body (Content-Length or chunked, refused past its limit: the declared
size first, then the bytes as they come) and the read/parse pipeline: plain CSV and JSON by
line are cut at line ends into blocks (PIPELINE_BLOCK_BYTES or PIPELINE_BLOCK_LINES) parsed in
worker threads while the next block arrives, at most STREAM_MAX_BLOCKS_IN_FLIGHT at a time (the
socket waits: memory stays bounded); a compressed body is inflated a block at a time; a tiny body
is parsed on the event loop. A DUPLICATE KEY table's blocks are also routed and written as they
come (`StreamedLoad`); UNIQUE and AGGREGATE tables keep their parsed blocks (deduplicated per
block) until the end, where the load's rows are merged.
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass

import pyarrow as pa

from galene.catalog.model import Table
from galene.load.bounds import BodyLimits, body_too_big, inflate, line_too_long
from galene.load.options import COMPRESS_CODECS, LoadOptions
from galene.load.parse import ParsedBatch, parse_body
from galene.load.routing import dedup_last_per_key, route_rows
from galene.load.source import RowError
from galene.storage.rowset import RowsetBuilder


def _check_declared_size(request, max_bytes: int, key: str = "streaming_load_max_mb") -> None:
    declared = request.content_length
    if declared is not None and declared > max_bytes:
        raise body_too_big(str(declared), max_bytes, key)


async def read_body(request, max_bytes: int, key: str = "streaming_load_max_mb") -> bytes:
    """Read the whole request body (Content-Length or chunked), refusing more than max_bytes
    (`key` names the config key that sets it)."""
    _check_declared_size(request, max_bytes, key)
    content = request.content
    if content.is_eof():
        # The whole (small) body came with the headers: take it without the async iterator,
        # a cost thousands of small loads a second pay.
        body = content.read_nowait(-1)
        if len(body) > max_bytes:
            raise body_too_big(str(len(body)), max_bytes, key)
        return body
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.content.iter_chunked(1 << 20):
        total += len(chunk)
        if total > max_bytes:
            raise body_too_big(f"> {max_bytes}", max_bytes, key)
        chunks.append(chunk)
    return b"".join(chunks)


# Plain CSV bodies are cut at line boundaries into blocks of this size and each block is
# parsed while the next one is still arriving, so reading the socket and parsing overlap.
PIPELINE_BLOCK_BYTES = 32 << 20
# ... or at this many lines, whichever comes first: parsing and routing a block costs memory
# per row besides its text (measured: ~120 MB per 1M CSV rows, ~150 MB per 1M JSON lines, so
# 32 MB of 4-byte CSV rows, 8M of them, peaked at ~500 MB).
PIPELINE_BLOCK_LINES = {"csv": 1 << 20, "json": 1 << 18}
# Bodies declared (Content-Length) at most this big are parsed inline, without a thread hop.
INLINE_PARSE_MAX_BYTES = 16 << 10


def split_delimiter(opts: LoadOptions) -> bytes | None:
    """The delimiter a body of this load can be cut at into blocks parsed on their own, or None.

    Plain CSV (no header line, no enclosed fields) and JSON read by line qualify, compressed or
    not; other bodies are parsed whole."""
    if (
        opts.format == "csv"
        and not opts.skip_lines
        and not opts.enclose
        and not getattr(opts, "trim_double_quotes", False)
    ):
        return opts.line_delimiter
    if opts.format == "json" and opts.json_by_line and not opts.strip_outer_array:
        return b"\n"
    return None


async def _plain_chunks(request, max_bytes: int, key: str):
    """The body as it arrives, refusing more than max_bytes."""
    _check_declared_size(request, max_bytes, key)
    total = 0
    async for chunk in request.content.iter_chunked(1 << 20):
        total += len(chunk)
        if total > max_bytes:
            raise body_too_big(f"> {max_bytes}", max_bytes, key)
        yield chunk


async def _inflated_blocks(compressed: bytes, max_bytes: int, codec: str, key: str):
    """A compressed body inflated a block at a time in a worker thread: memory holds the
    compressed bytes and one block, and max_bytes counts the inflated bytes."""
    blocks = inflate(compressed, codec, max_bytes, key=key)
    while (block := await asyncio.to_thread(next, blocks, None)) is not None:
        yield block


async def read_and_parse(
    request, limits: BodyLimits, table: Table, opts: LoadOptions, max_error_rows: int, be=None
) -> tuple[ParsedBatch | StreamedLoad, int]:
    """Read the body (within `limits`) and parse it; returns the parsed batch and the body's
    size as received.

    Bodies that can be cut at line ends (`split_delimiter`) are parsed block by block while
    they arrive (or while they inflate). With `be` given, a DUPLICATE KEY table's blocks are
    also routed and written as they come (`StreamedLoad`): memory stays bounded by a few
    blocks and writing overlaps reading. UNIQUE and AGG tables merge rows within a load, so
    they keep their parsed blocks until the end.
    """
    max_bytes, key = limits.max_body_bytes, limits.max_body_key
    declared = request.content_length
    delim = split_delimiter(opts)
    tiny = declared is not None and declared <= INLINE_PARSE_MAX_BYTES and not opts.compress_type
    if tiny:
        # A tiny body (the many small loads of logging/IoT clients) is parsed on the event
        # loop: handing it to a worker thread costs more than parsing it.
        body = await read_body(request, max_bytes, key)
        return parse_body(body, table, opts, max_error_rows, limits), len(body)
    if delim is None:
        body = await read_body(request, max_bytes, key)
        return await asyncio.to_thread(parse_body, body, table, opts, max_error_rows, limits), len(body)
    received: int | None = None  # None: count the plain bytes as they go by
    if opts.compress_type:
        # However small, a compressed body goes block by block: 16 KB can inflate to gigabytes.
        compressed = await read_body(request, max_bytes, key)
        received = len(compressed)
        source = _inflated_blocks(compressed, max_bytes, COMPRESS_CODECS[opts.compress_type], key)
        del compressed
        block_opts = copy.copy(opts)  # the blocks are plain bytes
        block_opts.compress_type = None
    else:
        source = _plain_chunks(request, max_bytes, key)
        block_opts = opts
    builder = (
        RowsetBuilder(be.fs, be.root, table) if be is not None and table.keys_type == "DUP_KEYS" else None
    )
    pending: list[asyncio.Future] = []
    results: list = []  # ParsedBatch per block, or _BlockResult per block when streaming
    chunks: list[bytes] = []  # joined once per block: appending to one growing buffer is quadratic
    buffered = 0
    consumed = 0  # bytes of the (inflated) body handed to blocks so far

    async def submit(block: bytes) -> None:
        if builder is None:
            job = asyncio.to_thread(_parse_kept_block, block, table, block_opts, max_error_rows, limits)
        else:
            job = asyncio.to_thread(
                _parse_route_write, block, table, block_opts, max_error_rows, builder, limits
            )
        pending.append(asyncio.ensure_future(job))
        # Backpressure: with this many blocks in flight, stop reading the socket until the
        # oldest is done (bounds memory; the CPU is busy anyway).
        if len(pending) >= STREAM_MAX_BLOCKS_IN_FLIGHT:
            results.append(await pending.pop(0))

    lines = 0  # line delimiters in the buffered chunks
    max_lines = PIPELINE_BLOCK_LINES[opts.format]
    try:
        async for chunk in source:
            chunks.append(chunk)
            buffered += len(chunk)
            lines += chunk.count(delim)
            if buffered >= PIPELINE_BLOCK_BYTES or lines >= max_lines:
                block, rest = cut_block(chunks, delim)
                if block is None:  # one enormous line so far: keep accumulating, up to the limit
                    if buffered > limits.max_line_bytes:
                        raise line_too_long(limits.max_line_bytes, consumed)
                    continue
                chunks, buffered, lines = ([rest], len(rest), 0) if rest else ([], 0, 0)
                consumed += len(block)
                await submit(block)
        if chunks:
            await submit(b"".join(chunks))
        while pending:
            results.append(await pending.pop(0))
    except BaseException:
        for f in pending:
            f.cancel()
        if builder is not None:
            # Blocks still being written in worker threads delete their own files.
            await asyncio.to_thread(builder.discard)
        raise
    body_len = consumed + buffered if received is None else received
    if builder is not None:
        return StreamedLoad.combine(results, builder, max_error_rows), body_len
    if not results:
        return await asyncio.to_thread(parse_body, b"", table, opts, max_error_rows, limits), 0
    return _concat_batches(results, max_error_rows), body_len


def _parse_kept_block(
    block: bytes, table: Table, opts: LoadOptions, max_error_rows: int, limits: BodyLimits
) -> ParsedBatch:
    """Worker thread: parse one block of a load whose rows are kept until its end. A UNIQUE
    KEY table's block keeps only its last row per key (the rule route_rows applies to the
    whole load, so applying it per block first changes nothing): a body that repeats a few
    keys, such as a decompression bomb, holds a few rows, not its inflated size."""
    batch = parse_body(block, table, opts, max_error_rows, limits)
    if table.keys_type == "UNIQUE_KEYS" and table.key_columns and batch.data.num_rows:
        seq = table.sequence_column()
        batch.data = dedup_last_per_key(batch.data, table.key_columns, seq.name if seq is not None else None)
    return batch


def cut_block(chunks: list[bytes], delim: bytes) -> tuple[bytes | None, bytes]:
    """The received chunks as one block ending at their last line delimiter, and the rest.

    The delimiter is looked for in the last chunk first, so the block is assembled with one
    copy (joining the whole and slicing it again copied each 32 MB block twice). Returns
    (None, b"") when there is no delimiter at all yet; `chunks` is then left as one piece."""
    last = chunks[-1]
    pos = last.rfind(delim)
    if pos >= 0:
        pos += len(delim)
        block = b"".join([*chunks[:-1], last[:pos]]) if len(chunks) > 1 else last[:pos]
        return block, last[pos:]
    data = b"".join(chunks)  # the delimiter is further back, or spans two chunks
    cut = data.rfind(delim)
    if cut < 0:
        chunks[:] = [data]
        return None, b""
    cut += len(delim)
    return data[:cut], data[cut:]


# A streamed load keeps at most this many blocks between the socket and the files.
STREAM_MAX_BLOCKS_IN_FLIGHT = 2


@dataclass
class _BlockResult:
    """What one streamed block left behind once its rows were written."""

    num_total: int
    num_filtered: int  # rejected by parsing or by routing (no partition)
    num_unselected: int
    parse_errors: list[RowError]
    route_errors: list[RowError]


def _parse_route_write(
    block: bytes,
    table: Table,
    opts: LoadOptions,
    max_error_rows: int,
    builder: RowsetBuilder,
    limits: BodyLimits,
) -> _BlockResult:
    """Worker thread: parse one block, route it, write its rows as one more segment per tablet."""
    batch = parse_body(block, table, opts, max_error_rows, limits)
    del block
    routed = route_rows(batch, table, partitions=opts.partitions)
    builder.add(routed.per_tablet)
    return _BlockResult(
        num_total=batch.num_total,
        num_filtered=batch.num_filtered + routed.num_filtered,
        num_unselected=batch.num_unselected,
        parse_errors=batch.errors,
        route_errors=routed.errors,
    )


@dataclass
class StreamedLoad:
    """A body already parsed, routed and written (uncommitted) while it arrived."""

    builder: RowsetBuilder
    num_total: int
    num_filtered: int
    num_unselected: int
    errors: list[RowError]

    @classmethod
    def combine(cls, blocks: list[_BlockResult], builder: RowsetBuilder, max_error_rows: int) -> StreamedLoad:
        # Parse errors first, then routing errors, as the whole-load path reports them.
        errors = [e for b in blocks for e in b.parse_errors][:max_error_rows]
        errors += [e for b in blocks for e in b.route_errors]
        return cls(
            builder=builder,
            num_total=sum(b.num_total for b in blocks),
            num_filtered=sum(b.num_filtered for b in blocks),
            num_unselected=sum(b.num_unselected for b in blocks),
            errors=errors[:max_error_rows],
        )


def _concat_batches(batches: list[ParsedBatch], max_error_rows: int) -> ParsedBatch:
    if len(batches) == 1:
        return batches[0]
    errors: list[RowError] = []
    for b in batches:
        errors.extend(b.errors[: max(0, max_error_rows - len(errors))])
    return ParsedBatch(
        data=pa.concat_tables([b.data for b in batches]),
        num_total=sum(b.num_total for b in batches),
        num_filtered=sum(b.num_filtered for b in batches),
        num_unselected=sum(b.num_unselected for b in batches),
        errors=errors,
    )
