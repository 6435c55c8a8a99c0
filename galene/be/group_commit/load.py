"""One group-commit load (`GroupCommitLoad`), from its table lookup to its reply.

Its steps: wait for the WAL replay of the previous run, look the table up, read the body;
then either the small-load lane (`lane.py`: parsed and written with the loads that arrive
together) or the single-load path (parsed here, rows routed and judged, the client label
claimed and checked, the rows enrolled in the open group and made durable, the label reserved);
a sync_mode load then waits for the merged commit. One deadline, the load's `timeout`, covers
every wait; a load that runs out of it is answered naming the step it was in.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

import msgspec
import pyarrow as pa

from galene.be.group_commit.group import PENDING, Entry, Group, LabelUsed
from galene.be.group_commit.queue import GroupCommitQueue
from galene.be.load_body import read_and_parse, read_body
from galene.be.stream_load import StreamLoadReply, new_label
from galene.catalog.model import Table
from galene.common.errors import GaleneError, LoadError
from galene.load.batch import BATCH_PARSE_MAX_BODY, batch_key
from galene.load.bounds import BodyLimits
from galene.load.headers import LoadHeaders
from galene.load.options import LoadOptions
from galene.load.parse import ParsedBatch, parse_body
from galene.load.routing import route_rows
from galene.load.verdict import TOO_MANY_FILTERED, filter_ratio_exceeded

log = logging.getLogger(__name__)


def group_commit_limits(cfg) -> BodyLimits:
    """The body bounds of a group-commit load: the stream-load ones, with the body capped at
    group_commit_max_load_mb (a chunked body only finds out while it arrives)."""
    limits = BodyLimits.from_config(cfg)
    cap = cfg.group_commit_max_load_mb << 20
    if cap >= limits.max_body_bytes:
        return limits
    return msgspec.structs.replace(limits, max_body_bytes=cap, max_body_key="group_commit_max_load_mb")


@dataclass
class GroupCommitReply(StreamLoadReply):
    """Doris' group-commit reply: `GroupCommit: true` in place of `TwoPhaseCommit`, no
    BeginTxnTimeMs / CommitAndPublishTimeMs; Galene adds `ClientLabel` when one was sent."""

    client_label: str | None = None
    group_commit: bool = True

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        if self.client_label is not None:
            d["ClientLabel"] = self.client_label
        return d


class GroupCommitLoad:
    """One load; `manager` is the BE's `GroupCommitManager`, `mode` sync_mode or async_mode."""

    def __init__(self, manager, request, lh: LoadHeaders, mode: str):
        self.manager = manager
        self.be = manager.be
        self.request = request
        self.lh = lh
        self.mode = mode  # becomes sync_mode when the WAL is over its limit
        self.client_label = lh.client_label
        self.reply = GroupCommitReply(label=self.client_label or "", client_label=self.client_label)
        self.queue: GroupCommitQueue | None = None
        self.group: Group | None = None
        self.claimed = False  # the client label is this load's in its queue's pending labels
        # The wait the load's deadline expires in, for its answer. One deadline scope over
        # every wait, not one per await, on a timer shared by the loads whose deadlines fall
        # in the same 50 ms.
        self.stage = "group commit WAL recovery"

    async def run(self, db: str, table_name: str) -> GroupCommitReply:
        t0 = time.monotonic()
        reply = self.reply
        scope = self.manager.deadlines.scope(self.lh.opts.timeout_s)
        try:
            async with scope:
                loaded_rows = await self._load(db, table_name)
            reply.number_loaded_rows = loaded_rows
            reply.status = "Success"
            reply.message = "OK"
            self.be.metrics.inc(f"galene_be_group_commit_{self.mode}_loads_total")
        except LabelUsed as e:
            reply.status = "Label Already Exists"
            reply.existing_job_status = e.existing_status
            reply.message = e.message
            reply.txn_id = e.txn_id
            reply.label = self.client_label or reply.label
            reply.number_loaded_rows = 0
        except (GaleneError, TimeoutError) as e:
            reply.status = "Fail"
            if isinstance(e, TimeoutError) and scope.expired():
                reply.message = f"[TIMEOUT]group commit load timed out while {self.stage}"
            else:
                reply.message = getattr(e, "message", None) or f"[TIMEOUT]{e}"
            reply.number_loaded_rows = 0
        except Exception as e:  # never let one load take the BE down
            log.exception("group commit load failed")
            reply.status = "Fail"
            reply.message = f"[INTERNAL_ERROR]{type(e).__name__}: {e}"
            reply.number_loaded_rows = 0
        finally:
            self._release_label()
        reply.load_time_ms = int((time.monotonic() - t0) * 1000)
        return reply

    async def _load(self, db: str, table_name: str) -> int:
        """Every step of the load, within its deadline; returns the rows it loaded."""
        manager = self.manager
        if not manager.ready.is_set():
            await manager.ready.wait()
        self.stage = "looking up the table"
        auth = self.lh.auth
        table = await manager.tables.get(db, table_name, auth[0], auth[1])

        self.stage = "reading the body"
        t_read = time.monotonic()
        body = await self._small_body(table)
        key = batch_key(table, self.lh.opts, body) if body is not None else None
        if key is not None:
            # The common case of logging/IoT clients: many small unlabelled CSV loads,
            # parsed, enrolled and written to the WAL a batch at a time (SmallLoadLane).
            assert body is not None
            loaded_rows = await self._through_lane(table, key, body, t_read)
        else:
            loaded_rows = await self._single(table, body, t_read)
        if self.mode == "sync_mode":
            await self._wait_for_commit(on_lane=key is not None)
        return loaded_rows

    # --- the small-load lane ----------------------------------------------------------
    async def _small_body(self, table: Table) -> bytes | None:
        """The body, read, when this load may go through the SmallLoadLane (small, unlabelled,
        into a table whose rows all fit its one partition); else None (the body is unread)."""
        declared = self.request.content_length
        if (
            self.client_label is not None
            or declared is None
            or declared > BATCH_PARSE_MAX_BODY
            or table.partition_type != "UNPARTITIONED"
            or len(table.partitions) != 1
        ):
            return None
        limits = group_commit_limits(self.be.cfg)
        return await read_body(self.request, limits.max_body_bytes, limits.max_body_key)

    async def _through_lane(self, table: Table, key: tuple, body: bytes, t_read: float) -> int:
        reply = self.reply
        self.stage = "joining a group, parsing and writing the WAL"
        outcome = await self.manager.lane.submit(key, table, self.lh.opts, body, self.mode == "async_mode")
        reply.load_bytes = len(body)
        reply.read_data_time_ms = int((outcome.answered_at - t_read) * 1000)
        if outcome.counts is not None:
            reply.number_total_rows = outcome.counts.num_total
            reply.number_filtered_rows = outcome.counts.num_filtered
            reply.number_unselected_rows = outcome.counts.num_unselected
        reply.error_url = outcome.error_url
        if outcome.error is not None:
            raise outcome.error
        assert outcome.group is not None and outcome.counts is not None
        self.group = group = outcome.group
        if not outcome.in_wal:
            self.mode = "sync_mode"  # the WAL was over its limit
        reply.label = group.label
        reply.txn_id = group.txn_id
        reply.write_data_time_ms = 0  # written with the parse, in the worker
        return outcome.counts.num_loaded

    # --- the single-load path -----------------------------------------------------------
    async def _single(self, table: Table, body: bytes | None, t_read: float) -> int:
        manager, reply = self.manager, self.reply
        opts = self.lh.fresh_options()  # parsed here, at this load's clock
        batch, body_len = await self._read_and_parse(table, opts, body)
        reply.load_bytes = body_len
        reply.read_data_time_ms = int((time.monotonic() - t_read) * 1000)

        t_write = time.monotonic()
        kept = await self._route_and_judge(table, batch, body_len, opts)
        # The body's size stands for the rows' size in the group and WAL accounting:
        # Table.nbytes walks every buffer of a slice and cost more than parsing.
        kept_bytes = body_len
        if self.mode == "async_mode" and not manager.wal_has_room(kept_bytes):
            self.mode = "sync_mode"

        self.queue = manager.queue(table)
        if self.client_label is not None:
            await self._claim_label(table)
        entry = Entry(
            data=kept,
            sub_label=self.client_label,
            in_wal=self.mode == "async_mode",
            ready=asyncio.get_running_loop().create_future(),
            nbytes=kept_bytes,
        )
        await self._enroll_and_write(entry, table)
        reply.write_data_time_ms = int((time.monotonic() - t_write) * 1000)
        return kept.num_rows

    async def _read_and_parse(
        self, table: Table, opts: LoadOptions, body: bytes | None
    ) -> tuple[ParsedBatch, int]:
        be = self.be
        limits = group_commit_limits(be.cfg)
        if body is None:
            return await read_and_parse(self.request, limits, table, opts, be.max_error_rows)
        # A body `_small_body` read (at most BATCH_PARSE_MAX_BODY): cheaper to parse here than
        # to hand to a thread.
        return parse_body(body, table, opts, be.max_error_rows, limits), len(body)

    async def _route_and_judge(self, table: Table, batch: ParsedBatch, body_len: int, opts: LoadOptions) -> pa.Table:
        """The rows that fit a partition; the reply's counts and error log; Doris' verdicts on
        the filter ratio and an empty load."""
        be, reply = self.be, self.reply
        if table.partition_type == "UNPARTITIONED" and len(table.partitions) == 1:
            # Every row fits the one partition: tablets are chosen once, at the flush.
            kept, routed_filtered, route_errors = batch.data, 0, []
        else:
            kept, routed_filtered, route_errors = await asyncio.to_thread(
                route_for_group, table, batch, be.max_error_rows
            )
        filtered = batch.num_filtered + routed_filtered
        reply.number_total_rows = batch.num_total
        reply.number_filtered_rows = filtered
        reply.number_unselected_rows = batch.num_unselected
        errors = (list(batch.errors) + route_errors)[: be.max_error_rows]
        if errors:
            reply.error_url = be.error_log.save(self.client_label or new_label(), 0, errors)
        if filter_ratio_exceeded(batch.num_total, filtered, batch.num_unselected, opts.max_filter_ratio):
            raise LoadError(TOO_MANY_FILTERED)
        if batch.num_total == 0 and body_len == 0:
            raise LoadError("[INTERNAL_ERROR]The size of this stream load is 0 (empty body)")
        return kept

    async def _claim_label(self, table: Table) -> None:
        """Answer a label this BE is loading already, else claim it here and ask the FE."""
        queue, label = self.queue, self.client_label
        assert queue is not None and label is not None
        holder = queue.pending_labels.get(label)
        if holder is not None:
            raise LabelUsed(label, 0 if holder is PENDING else holder.txn_id, "RUNNING")
        queue.pending_labels[label] = PENDING
        self.claimed = True
        self.stage = "checking the label"
        await self.manager.check_label(table, label)

    async def _enroll_and_write(self, entry: Entry, table: Table) -> None:
        """Join the open group, make the rows durable (async: the WAL and its copies) and
        reserve the client label; `entry.ready` says whether they are loaded."""
        manager, queue, label, reply = self.manager, self.queue, self.client_label, self.reply
        assert queue is not None
        self.stage = "opening a group"
        try:
            group = await queue.enroll(entry, table)
        except BaseException:
            entry.ready.set_result(False)
            raise
        self.group = group
        reply.label = group.label
        reply.txn_id = group.txn_id
        if label is not None:
            queue.pending_labels[label] = group
            group.labels.add(label)
        durable = False
        self.stage = "writing the WAL"
        try:
            if entry.in_wal:
                await manager.append_wal(group, [entry])
                manager.check_lease(group)
            if label is not None:
                await manager.reserve(group, label)
            durable = True
        finally:
            entry.ready.set_result(durable)
        if entry.in_wal and not group.replicated:  # the flush reads them from the WAL file
            entry.data = entry.data.slice(0, 0)

    # --- sync_mode ----------------------------------------------------------------------
    async def _wait_for_commit(self, on_lane: bool) -> None:
        group = self.group
        assert group is not None and group.done is not None
        self.stage = "the merged commit"
        self.reply.txn_id = await asyncio.shield(group.done)
        if group.taken_over and not on_lane:
            # Off the lane, sync rows are not in the WAL copies the takeover committed.
            raise LoadError(
                f"group commit: group {group.label} was committed from a WAL copy on "
                "another BE while the FE could not reach this one; this load was not loaded"
            )

    def _release_label(self) -> None:
        """A label this load claimed but did not load is free again on this BE (the FE still
        answers for it if its rows may yet commit)."""
        queue, label = self.queue, self.client_label
        if (
            self.claimed
            and queue is not None
            and self.reply.status != "Success"
            and queue.pending_labels.get(label) in (PENDING, self.group)
        ):
            queue.pending_labels.pop(label, None)


def route_for_group(table: Table, batch: ParsedBatch, max_error_rows: int):
    """Rows of one load that fit a partition (in load order per tablet), plus the filtered."""
    routed = route_rows(batch, table, max_error_rows)
    parts = [rows for _, rows in routed.per_tablet.values() if rows.num_rows]
    schema = batch.data.schema
    kept = pa.concat_tables(parts) if len(parts) > 1 else (parts[0] if parts else schema.empty_table())
    return kept, routed.num_filtered, list(routed.errors)
