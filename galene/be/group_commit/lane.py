"""The small-load lane (`SmallLoadLane`): small unlabelled CSV loads into a one-partition
table, parsed and written to the WAL together by the ingest worker (`galene.be.ingest_worker`),
so a load costs little more than its HTTP request.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import pyarrow as pa

from galene.be.group_commit.group import Entry, Group, done_future, retrieve
from galene.be.ingest_worker import IngestWorkerError
from galene.be.stream_load import new_label
from galene.catalog.model import Table
from galene.common.errors import GaleneError, LoadError
from galene.load.options import LoadOptions


@dataclass
class LaneOutcome:
    """What the SmallLoadLane did with one load."""

    answered_at: float  # time.monotonic() when the ingest worker answered
    counts: LaneAnswer | None = None
    error: Exception | None = None  # the load failed (nothing of it is loaded)
    error_url: str | None = None
    group: Group | None = None
    in_wal: bool = False  # False for sync_mode (or async_mode while the WAL is over its limit)


class SmallLoadLane:
    """Small unlabelled CSV loads (the traffic of logging and IoT clients), handled by the
    ingest worker (`galene.be.ingest_worker`).

    A load joins the table's open group and goes to the worker at once (the requests of one
    pass of the event loop travel as one message); the worker parses the loads that reached
    it together, writes those of a WAL file as one record with one fsync, and answers each
    load with its own counts, errors and max_filter_ratio verdict. async_mode loads are
    answered once durable; their rows stay in the WAL file, which the group's flush reads.
    The rows of memory loads (sync_mode, or a full WAL) come back once per parse, ahead of
    their answers, and join the group as an entry. The group's flush waits for every answer.
    """

    def __init__(self, manager):
        self.manager = manager  # the BE's GroupCommitManager
        self._memory_groups: dict[str, Group] = {}  # label -> group awaiting memory rows

    async def submit(
        self, key: tuple, table: Table, opts: LoadOptions, body: bytes, async_mode: bool
    ) -> LaneOutcome:
        manager = self.manager
        worker = manager.worker
        if not worker.running():
            await worker.ensure_started()
        queue = manager.queue(table)
        in_wal = async_mode and manager.wal_has_room(len(body))
        group = await queue.open_group(table)
        # Joined: the group's flush now waits for this load's answer (no await before this).
        group.lane_pending += 1
        try:
            if in_wal:
                if group.wal is None:
                    group.wal = manager.wal_writer(group)
                target = str(group.wal.final_path)
            else:
                target = ""
            if not in_wal or group.replicated:
                self._memory_groups[group.label] = group
            key_id = worker.parse_key(key, table, opts, manager.be.max_error_rows)
            if group.replicated:  # the worker sends the rows back too (to copy them to peers)
                answer = worker.request("load", key_id, target, group.label, body, True)
            else:
                answer = worker.request("load", key_id, target, group.label, body)
        except BaseException:
            group.lane_answered()
            raise
        # The group's count drops when the answer comes, or when this load gives up waiting
        # (then its rows may still become durable: an unanswered load is loaded at most once).
        answer.add_done_callback(group.lane_answered_cb)
        queue.add_bytes(group, len(body))
        try:
            status, total, filtered, unselected, loaded, errors = await answer
        except IngestWorkerError as e:
            return LaneOutcome(answered_at=time.monotonic(), error=e)
        if group.replicated and status is None:
            try:  # its rows (which came ahead of this answer) are in a quorum of WAL copies
                if group.lane_durable is not None:
                    await asyncio.shield(group.lane_durable)
            except (GaleneError, OSError) as e:
                return LaneOutcome(answered_at=time.monotonic(), error=e)
        out = LaneOutcome(
            answered_at=time.monotonic(),
            counts=LaneAnswer(total, filtered, unselected, loaded),
            group=group,
            in_wal=in_wal,
        )
        if errors:
            be = manager.be
            out.error_url = be.error_log.save(new_label(), 0, errors[: be.max_error_rows])
        if status is not None:
            out.error = LoadError(status)
        return out

    def rows_arrived(self, label: str, rows: pa.Table) -> None:
        """The worker's notice: the rows of memory loads of group `label` (one parse's worth),
        sent ahead of those loads' answers; for a replicated group also the rows of loads it
        wrote to the WAL (once fsynced), which go to the peers from here."""
        group = self._memory_groups.get(label)
        if group is None or group.flushing:
            return
        if not group.replicated:
            group.entries.append(
                Entry(data=rows, sub_label=None, in_wal=False, ready=done_future(True), nbytes=0)
            )
            return
        entry = Entry(
            data=rows, sub_label=None, in_wal=True, ready=asyncio.get_running_loop().create_future(), nbytes=0
        )
        group.entries.append(entry)
        task = self.manager.spawn(
            self._make_durable(group, entry, group.lane_durable), "group-commit-wal-copies"
        )
        task.add_done_callback(retrieve)
        group.lane_durable = task

    async def _make_durable(self, group: Group, entry: Entry, before: asyncio.Future | None) -> None:
        """Copy one parse's rows of a replicated group (in its local WAL already) to its peers;
        raises (for the loads waiting on it) if they, or the rows before them, did not reach a
        quorum while this BE held its write lease (be/wal_replica.py)."""
        durable = False
        try:
            await self.manager.copy_to_replicas(group, [entry])
            # Decided once for the entry, so its loads' answers and its commit agree.
            self.manager.check_lease(group)
            durable = True
        finally:
            entry.ready.set_result(durable)
            if before is not None:
                await asyncio.shield(before)

    def forget(self, group: Group) -> None:
        self._memory_groups.pop(group.label, None)


@dataclass
class LaneAnswer:
    """One lane load's counts (its rows travel with the parse's)."""

    num_total: int
    num_filtered: int
    num_unselected: int
    num_loaded: int
