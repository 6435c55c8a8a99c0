"""Stream Load on the BE: one HTTP request in, one Doris JSON reply out.

Flow (as in Doris): begin a transaction at the FE under the label (so a reused label is
answered before any data is read), read the body within `streaming_load_max_mb`, parse and
convert it with Arrow (`galene.load.parse`), route rows to tablets, write Parquet rowsets,
check `max_filter_ratio`, then ask the FE to commit. Any failure after begin aborts the
transaction and deletes the files written, so nothing partial ever becomes visible.

When the FE cannot be reached (a deadline passed or the connection failed, e.g. a black hole
between the BE and the FE in the middle of a body), the client gets its error at once, naming
the FE; the abort is retried in the background until the FE answers (or the txn's own timeout
passes), so a retry with the same label loads once the path is back. After a commit whose
outcome is unknown, the files are deleted only once the FE says the txn is aborted.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import msgspec
import pyarrow as pa

from galene.catalog.model import Rowset, Table
from galene.common.errors import GaleneError, LoadError
from galene.load.bounds import BodyLimits, body_too_big, inflate, line_too_long
from galene.load.headers import read_load_headers
from galene.load.options import COMPRESS_CODECS, LoadOptions
from galene.load.parse import ParsedBatch, parse_body
from galene.load.routing import dedup_last_per_key, route_rows
from galene.load.source import RowError
from galene.load.verdict import TOO_MANY_FILTERED, filter_ratio_exceeded
from galene.net import inflight
from galene.net.client import RpcUnavailable
from galene.net.deadline import DeadlineExceeded
from galene.storage.rowset import RowsetBuilder, delete_rowset_files, write_rowsets

log = logging.getLogger(__name__)


@dataclass
class StreamLoadReply:
    """The Doris stream-load JSON reply; `to_json` keeps Doris' key order."""

    txn_id: int = 0
    label: str = ""
    comment: str = ""
    two_phase_commit: bool = False
    status: str = "Success"
    message: str = "OK"
    existing_job_status: str | None = None
    number_total_rows: int = 0
    number_loaded_rows: int = 0
    number_filtered_rows: int = 0
    number_unselected_rows: int = 0
    load_bytes: int = 0
    load_time_ms: int = 0
    begin_txn_time_ms: int = 0
    stream_load_put_time_ms: int = 0
    read_data_time_ms: int = 0
    write_data_time_ms: int = 0
    commit_and_publish_time_ms: int = 0
    error_url: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    group_commit: bool = False

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"TxnId": self.txn_id, "Label": self.label, "Comment": self.comment}
        # Group commit replies carry `GroupCommit: true` instead of TwoPhaseCommit and have no
        # begin/commit timings (the merged transaction is not this request's).
        if self.group_commit:
            d["GroupCommit"] = True
        else:
            d["TwoPhaseCommit"] = "true" if self.two_phase_commit else "false"
        d["Status"] = self.status
        if self.existing_job_status is not None:
            d["ExistingJobStatus"] = self.existing_job_status
        d.update(
            {
                "Message": self.message,
                "NumberTotalRows": self.number_total_rows,
                "NumberLoadedRows": self.number_loaded_rows,
                "NumberFilteredRows": self.number_filtered_rows,
                "NumberUnselectedRows": self.number_unselected_rows,
                "LoadBytes": self.load_bytes,
                "LoadTimeMs": self.load_time_ms,
            }
        )
        if not self.group_commit:
            d["BeginTxnTimeMs"] = self.begin_txn_time_ms
        d["StreamLoadPutTimeMs"] = self.stream_load_put_time_ms
        d["ReadDataTimeMs"] = self.read_data_time_ms
        d["WriteDataTimeMs"] = self.write_data_time_ms
        if not self.group_commit:
            d["CommitAndPublishTimeMs"] = self.commit_and_publish_time_ms
        if self.error_url:
            d["ErrorURL"] = self.error_url
        d.update(self.extra)
        return d

    def to_json(self) -> bytes:
        # Doris' BE appends a newline to the JSON body. msgspec writes the same text as
        # json.dumps(indent=4) (UTF-8 instead of \u escapes) at a tenth of the cost, which
        # counts at thousands of small loads a second.
        d = self.to_dict()
        try:
            return msgspec.json.format(msgspec.json.encode(d), indent=4) + b"\n"
        except UnicodeEncodeError:  # a header that was not UTF-8 (e.g. the label) echoed back
            return (json.dumps(d, indent=4) + "\n").encode()


def new_label() -> str:
    # Doris' generated labels look like UUIDs with underscores.
    return str(uuid.uuid4()).replace("-", "_")


# Aborts of begins that got no answer, still retrying (kept referenced until done).
_UNANSWERED_BEGINS: set[asyncio.Task] = set()
MAX_UNANSWERED_BEGINS = 256


class FeTxnClient:
    """The BE's view of the FE transaction API (all calls go through the deadline client)."""

    def __init__(self, be):
        self.be = be

    async def _call(self, path: str, payload: dict, timeout_s: float | None = None) -> dict:
        try:
            status, body = await self.be.fe_call("POST", path, payload, timeout_s=timeout_s)
        except RpcUnavailable as e:
            e.call = f"POST {path}"  # type: ignore[attr-defined] - named in the load's error
            raise
        if status != 200 or not isinstance(body, dict):
            raise LoadError(f"FE call {path} failed: HTTP {status} {body}")
        return body

    async def begin(
        self, db: str, table: str, label: str, user: str, password: str, timeout_s: int
    ) -> tuple[int, Table]:
        try:
            body = await self._call(
                "/api/_internal/txn/begin",
                {
                    "db": db,
                    "table": table,
                    "label": label,
                    "user": user,
                    "password": password,
                    "timeout_s": timeout_s,
                    "backend_id": self.be.backend_id,
                },
            )
        except (DeadlineExceeded, RpcUnavailable) as e:
            # The FE may have begun the txn and only its answer be lost: unaborted, it would
            # hold the label (a retry: "Label Already Exists") until its timeout, 3 days. Not
            # when the call never connected; and bounded, so an FE outage does not pile up
            # retries (the FE's own coordinator-txn aborts and timeouts cover the rest).
            connected = not isinstance(e.__cause__, aiohttp.ClientConnectorError)
            if connected and len(_UNANSWERED_BEGINS) < MAX_UNANSWERED_BEGINS:
                task = asyncio.ensure_future(self._abort_unanswered_begin(db, label, time.time()))
                _UNANSWERED_BEGINS.add(task)
                task.add_done_callback(_UNANSWERED_BEGINS.discard)
            raise
        if body.get("status") != "OK":
            err = LoadError(
                body.get("message", "begin transaction failed"), status=body.get("load_status", "Fail")
            )
            err.existing_status = body.get("existing_status")  # type: ignore[attr-defined]
            err.txn_id = body.get("txn_id", 0)  # type: ignore[attr-defined]
            raise err
        return int(body["txn_id"]), msgspec.convert(body["table"], Table)

    async def _abort_unanswered_begin(self, db: str, label: str, gave_up: float, for_s: float = 120.0) -> None:
        """Abort the txn a begin without an answer may have left under `label` (a PREPARE txn
        of this BE begun before `gave_up`, wall clock: not a retry's), retrying while the FE
        cannot be reached, for `for_s` at most."""
        until = time.monotonic() + for_s
        reason = "begin transaction got no answer at the BE; the load was not loaded"
        while time.monotonic() < until:
            try:
                body = await self._call(
                    "/api/_internal/txn/abort_label",
                    {
                        "db": db,
                        "label": label,
                        "backend_id": self.be.backend_id,
                        "begun_before": gave_up,
                        "reason": reason,
                    },
                    timeout_s=min(5.0, self.be.cfg.rpc_timeout_ms / 1000),
                )
                log.info("unanswered begin of label %s: txn %s", label, body.get("txn_status"))
                return
            except (DeadlineExceeded, RpcUnavailable, LoadError) as e:
                log.info("abort of unanswered begin of label %s: %s; retrying", label, e)
                await asyncio.sleep(2.0)

    async def commit(
        self, txn_id: int, rowsets: list[Rowset], num_rows: int, load_bytes: int, two_phase: bool
    ) -> None:
        body = await self._call(
            "/api/_internal/txn/commit",
            {
                "txn_id": txn_id,
                "rowsets": msgspec.to_builtins(rowsets),
                "num_rows": num_rows,
                "load_bytes": load_bytes,
                "two_phase": two_phase,
            },
        )
        if body.get("status") != "OK":
            raise LoadError(body.get("message", "commit failed"))

    async def abort(self, txn_id: int, reason: str) -> None:
        try:
            await self._call("/api/_internal/txn/abort", {"txn_id": txn_id, "reason": reason})
        except Exception as e:  # noqa: BLE001 - the FE's txn timeout aborts it later; files are cleaned below / by GC
            log.warning("abort of txn %s failed: %s", txn_id, e)

    async def abort_until_answered(self, txn_id: int, reason: str, until: float) -> bool | None:
        """Abort `txn_id`, retrying while the FE cannot be reached, until `until` (monotonic).

        True once the FE says the txn is aborted, False when it says it committed (so its files
        must stay), None when it never answered (its own txn timeout aborts it)."""
        while True:
            try:
                body = await self._call(
                    "/api/_internal/txn/abort",
                    {"txn_id": txn_id, "reason": reason},
                    timeout_s=min(2.0, self.be.cfg.rpc_timeout_ms / 1000),
                )
                return body.get("status") == "OK"
            except (DeadlineExceeded, RpcUnavailable) as e:
                if time.monotonic() + 0.5 >= until:
                    log.warning("abort of txn %s never answered: %s", txn_id, e)
                    return None
                await asyncio.sleep(0.5)
            except Exception as e:  # noqa: BLE001 - an answer that is not OK: leave it to the FE's timeout
                log.warning("abort of txn %s failed: %s", txn_id, e)
                return False


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
                block, rest = _cut_block(chunks, delim)
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


def _cut_block(chunks: list[bytes], delim: bytes) -> tuple[bytes | None, bytes]:
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


async def execute_stream_load(be, request, db: str, table_name: str) -> StreamLoadReply:
    """Run one stream load; always returns a reply (errors become Status Fail)."""
    t0 = time.monotonic()
    txn_id = 0
    written: list[Rowset] = []
    try:
        lh = read_load_headers(request)
        # Group commit (header `group_commit` or table property) has its own flow and reply.
        group_commit = getattr(be, "group_commit", None)
        if group_commit is not None:
            gc_reply = await group_commit.maybe_execute(request, db, table_name, lh)
            if gc_reply is not None:
                return gc_reply
    except LoadError as e:  # refused before anything began
        reply = StreamLoadReply(
            status="Fail", message=e.message, label=request.headers.get("label") or new_label()
        )
        reply.load_time_ms = int((time.monotonic() - t0) * 1000)
        return reply
    reply = StreamLoadReply(label=lh.label or new_label(), two_phase_commit=lh.two_phase)
    auth, opts = lh.auth, lh.fresh_options()
    fe = FeTxnClient(be)
    commit_sent = False
    try:
        # One deadline for the whole load (Doris' `timeout`): the FE aborts the txn at the
        # same age, so the BE stops first, aborts and deletes what it wrote.
        deadline = time.monotonic() + opts.timeout_s

        t_begin = time.monotonic()
        # Shielded: a cancel that lands while the FE is beginning the txn must still learn its
        # id, so that the txn is aborted now instead of staying PREPARE until its timeout.
        begin = asyncio.ensure_future(fe.begin(db, table_name, reply.label, auth[0], auth[1], opts.timeout_s))
        try:
            txn_id, table = await asyncio.shield(begin)
        except asyncio.CancelledError:
            begin.add_done_callback(lambda f: _abort_late_begin(be, fe, f))
            raise
        reply.txn_id = txn_id
        reply.begin_txn_time_ms = int((time.monotonic() - t_begin) * 1000)

        t_read = time.monotonic()
        batch, body_len = await within_load_timeout(
            read_and_parse(request, BodyLimits.from_config(be.cfg), table, opts, be.max_error_rows, be=be),
            deadline,
            opts,
        )
        reply.load_bytes = body_len
        reply.read_data_time_ms = int((time.monotonic() - t_read) * 1000)

        t_write = time.monotonic()
        result = await _route_write_within(be, table, batch, opts, deadline)
        written = result["rowsets"]
        reply.write_data_time_ms = int((time.monotonic() - t_write) * 1000)
        reply.number_total_rows = result["total"]
        reply.number_filtered_rows = result["filtered"]
        reply.number_unselected_rows = result["unselected"]
        reply.number_loaded_rows = result["loaded"]
        if result["errors"]:
            reply.error_url = be.error_log.save(reply.label, txn_id, result["errors"])
        if filter_ratio_exceeded(
            result["total"], result["filtered"], result["unselected"], opts.max_filter_ratio
        ):
            reply.number_loaded_rows = 0
            raise LoadError(TOO_MANY_FILTERED)
        if result["total"] == 0 and body_len == 0:
            raise LoadError("[INTERNAL_ERROR]The size of this stream load is 0 (empty body)")

        t_commit = time.monotonic()
        commit_sent = True
        await fe.commit(txn_id, written, result["loaded"], body_len, reply.two_phase_commit)
        reply.commit_and_publish_time_ms = int((time.monotonic() - t_commit) * 1000)
        reply.status = "Success"
        reply.message = "OK"
    except LoadError as e:
        reply.status = getattr(e, "status", "Fail") or "Fail"
        reply.message = e.message
        if reply.status == "Label Already Exists":
            reply.existing_job_status = getattr(e, "existing_status", None) or "FINISHED"
            reply.txn_id = getattr(e, "txn_id", 0) or 0
        else:
            reply.status = "Fail"
        await _undo(be, fe, txn_id, written, reply.message)
        reply.number_loaded_rows = 0
    except (DeadlineExceeded, RpcUnavailable) as e:
        # The FE did not answer: say so now (naming it), abort once it answers again.
        reply.status = "Fail"
        if isinstance(e, DeadlineExceeded):
            reply.message = f"[TIMEOUT]load failed, the FE did not answer: {e}"
        else:
            call = getattr(e, "call", "FE call")
            reply.message = (
                f"[INTERNAL_ERROR]load failed, the FE did not answer: {call} to {e.peer}: {e.reason}"
            )
        if txn_id:
            _background(
                _undo_when_fe_answers(
                    be, fe, txn_id, written, reply.message, deadline, keep_unless_aborted=commit_sent
                )
            )
        reply.number_loaded_rows = 0
    except (GaleneError, TimeoutError) as e:
        reply.status = "Fail"
        reply.message = getattr(e, "message", None) or f"[TIMEOUT]load timed out: {e}"
        await _undo(be, fe, txn_id, written, reply.message)
        reply.number_loaded_rows = 0
    except asyncio.CancelledError:
        # The client went away and aiohttp cancelled the handler: still abort and clean up.
        _background(_undo(be, fe, txn_id, written, "[CANCELLED]the client closed the connection"))
        raise
    except Exception as e:  # never let one load take the BE down (logged with its stack)
        log.exception("stream load %s failed", reply.label)
        reply.status = "Fail"
        reply.message = f"[INTERNAL_ERROR]{type(e).__name__}: {e}"
        await _undo(be, fe, txn_id, written, reply.message)
        reply.number_loaded_rows = 0
    reply.label = reply.label or new_label()  # a load refused before it began still has one
    reply.load_time_ms = int((time.monotonic() - t0) * 1000)
    return reply


def _abort_late_begin(be, fe: FeTxnClient, begin: asyncio.Future) -> None:
    """A txn the FE began for a load whose client had already gone: abort it."""
    if begin.cancelled() or begin.exception() is not None:
        return
    txn_id, _ = begin.result()
    _background(_undo(be, fe, txn_id, [], "[CANCELLED]the client closed the connection"))


def _load_timeout(opts: LoadOptions) -> LoadError:
    return LoadError(f"[TIMEOUT]stream load timed out after {opts.timeout_s} s (the `timeout` of this load)")


async def within_load_timeout(aw, deadline: float, opts: LoadOptions):
    """Await `aw` until the load's deadline; past it, a LoadError with Doris' [TIMEOUT] tag."""
    try:
        return await asyncio.wait_for(aw, timeout=max(0.0, deadline - time.monotonic()))
    except TimeoutError:
        raise _load_timeout(opts) from None


async def _route_write_within(
    be, table: Table, batch: ParsedBatch, opts: LoadOptions, deadline: float
) -> dict:
    """`_route_write` in a worker thread, bounded by the load deadline.

    A thread cannot be stopped: when the deadline passes (or the request is cancelled) the
    rowsets it is still writing are deleted as soon as it finishes.
    """
    task = asyncio.ensure_future(asyncio.to_thread(_route_write, be, table, batch, opts))
    try:
        with inflight.track(
            "storage",
            "write",
            f"rowsets of table {table.id}",
            be.cfg.storage_uri,
            max(0.0, deadline - time.monotonic()),
        ):
            return await within_load_timeout(storage_answer(be, task), deadline, opts)
    except BaseException:
        task.add_done_callback(lambda t: _discard_late_rowsets(be, t))
        raise


async def storage_answer(be, writing: asyncio.Future):
    """The answer of a storage write running in a thread (not cancelled with the waiter). The
    debug point `stream_load.storage_write` holds the answer back: storage that does not
    answer, for loads, group-commit flushes and canaries alike."""
    await be.debug_points.park("stream_load.storage_write")
    return await asyncio.shield(writing)


def _discard_late_rowsets(be, task: asyncio.Future) -> None:
    if task.cancelled() or task.exception() is not None:
        return  # write_rowsets removes its own files when it fails
    rowsets = task.result()["rowsets"]
    if rowsets:
        _background(asyncio.to_thread(delete_rowset_files, be.fs, be.root, rowsets))


_BACKGROUND: set[asyncio.Future] = set()  # strong references until done (asyncio keeps weak ones)


def _background(aw) -> None:
    fut = asyncio.ensure_future(aw)
    _BACKGROUND.add(fut)
    fut.add_done_callback(_BACKGROUND.discard)


async def _undo(be, fe: FeTxnClient, txn_id: int, written: list[Rowset], reason: str) -> None:
    if txn_id:
        await fe.abort(txn_id, reason)
    if written:
        await asyncio.to_thread(delete_rowset_files, be.fs, be.root, written)


async def _undo_when_fe_answers(
    be,
    fe: FeTxnClient,
    txn_id: int,
    written: list[Rowset],
    reason: str,
    until: float,
    keep_unless_aborted: bool,
) -> None:
    """`_undo` for a load whose FE call failed in transit: the abort is retried until the FE
    answers. After a commit that may have reached the FE, files are deleted only once the FE
    says the txn is aborted (never under a txn it committed)."""
    aborted = await fe.abort_until_answered(txn_id, reason, until)
    if written and (aborted or not keep_unless_aborted):
        await asyncio.to_thread(delete_rowset_files, be.fs, be.root, written)


def _route_write(be, table: Table, batch: ParsedBatch | StreamedLoad, opts: LoadOptions) -> dict:
    """CPU part of a load after parsing (runs in a worker thread): route rows, write rowsets."""
    if isinstance(batch, StreamedLoad):
        return _finish_streamed(be, batch, opts)
    routed = route_rows(batch, table, partitions=opts.partitions)
    errors: list[RowError] = list(batch.errors) + list(routed.errors)
    filtered = batch.num_filtered + routed.num_filtered
    total = batch.num_total
    unselected = batch.num_unselected
    rowsets: list[Rowset] = []
    if not filter_ratio_exceeded(total, filtered, unselected, opts.max_filter_ratio):
        # One rowset per touched tablet, written in parallel; write_rowsets removes its own
        # files if any tablet fails.
        rowsets = write_rowsets(be.fs, be.root, table, routed.per_tablet)
    loaded = sum(r.num_rows for r in rowsets)
    return {
        "rowsets": rowsets,
        "total": total,
        "filtered": filtered,
        "unselected": unselected,
        "loaded": loaded,
        "errors": errors[: be.max_error_rows],
    }


def _finish_streamed(be, load: StreamedLoad, opts: LoadOptions) -> dict:
    """A streamed load's rows are already in files: keep them, or delete them if too many were filtered."""
    if filter_ratio_exceeded(load.num_total, load.num_filtered, load.num_unselected, opts.max_filter_ratio):
        load.builder.discard()
        rowsets: list[Rowset] = []
    else:
        try:
            rowsets = load.builder.finish()
        except BaseException:
            load.builder.discard()
            raise
    return {
        "rowsets": rowsets,
        "total": load.num_total,
        "filtered": load.num_filtered,
        "unselected": load.num_unselected,
        "loaded": sum(r.num_rows for r in rowsets),
        "errors": load.errors[: be.max_error_rows],
    }
