"""Stream Load on the BE: one HTTP request in, one Doris JSON reply out.

Flow (as in Doris): begin a transaction at the FE under the label (so a reused label is
answered before any data is read), read the body within `streaming_load_max_mb`, parse and
convert it with Arrow (`galene.load.parse`; `be/load_body.py` reads and parses the body, block
by block while it arrives), route rows to tablets, write Parquet rowsets, check
`max_filter_ratio` (`galene.load.verdict`), then ask the FE to commit (`be/fe_txn.py`). Any
failure after begin aborts the transaction and deletes the files written, so nothing partial
ever becomes visible.

When the FE cannot be reached (a deadline passed or the connection failed, e.g. a black hole
between the BE and the FE in the middle of a body), the client gets its error at once, naming
the FE; the abort is retried in the background until the FE answers (or the txn's own timeout
passes), so a retry with the same label loads once the path is back. After a commit whose
outcome is unknown, the files are deleted only once the FE says the txn is aborted.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import msgspec

from galene.be.fe_txn import FeTxnClient
from galene.be.load_body import StreamedLoad, read_and_parse
from galene.catalog.model import Rowset, Table
from galene.common.errors import GaleneError, LoadError
from galene.load.bounds import BodyLimits
from galene.load.headers import read_load_headers
from galene.load.options import LoadOptions
from galene.load.parse import ParsedBatch
from galene.load.routing import route_rows
from galene.load.source import RowError
from galene.load.verdict import TOO_MANY_FILTERED, filter_ratio_exceeded
from galene.net import inflight
from galene.net.client import RpcUnavailable
from galene.net.deadline import DeadlineExceeded
from galene.storage.rowset import delete_rowset_files, write_rowsets

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
