"""The groups of one table on a BE (`GroupCommitQueue`): the open group loads join, the spare
begun ahead, and the flushes, one at a time in the order the groups opened.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from galene.be.group_commit.group import Entry, Group, interval_s, new_group_label
from galene.be.group_commit.spares import SpareGroup
from galene.catalog.model import Table

log = logging.getLogger(__name__)


class GroupCommitQueue:
    """The groups of one table on this BE: one open group, flushed one at a time in order.
    `manager` is the BE's `GroupCommitManager` (FE calls, WAL files, the merged commit)."""

    def __init__(self, manager, db_id: int, table_id: int):
        self.manager = manager
        self.db_id = db_id
        self.table_id = table_id
        self.current: Group | None = None
        # The next group, begun ahead (txn + preallocated WAL file) while this one fills, so
        # a group switch does not put an FE round trip, a journal fsync and a WAL file
        # creation on the reply path of the loads that arrive then.
        self.spare = SpareGroup(self)
        self._open_lock = asyncio.Lock()
        self._flush_lock = asyncio.Lock()
        # client label -> its group (or PENDING): a second load with the same label on this
        # BE is answered before it reaches the FE.
        self.pending_labels: dict[str, Any] = {}

    async def open_group(self, table: Table) -> Group:
        """The table's open group (opening one, i.e. beginning its txn, if needed). It is
        still open when this returns: the caller joins it before its next await."""
        while True:
            group = self.current
            if group is None or group.closed:
                async with self._open_lock:
                    if self.current is None or self.current.closed:
                        self.current = await self.next_group(table)
                    group = self.current
            if not group.closed:
                if group.replicated and self.manager.replicated_group_spent(group):
                    self.close(group)  # its loads could not be answered: open a new group
                    continue
                return group

    async def next_group(self, table: Table) -> Group:
        """The table's next open group: its spare when that is usable, else a new one; its
        interval starts now, and the spare for the group after it is prepared meanwhile."""
        manager = self.manager
        group = await self.spare.take(table)
        if group is None:
            group = await self.prepare_group(table, with_wal=False)
        assert group.table is not None
        group.lease_epoch = manager.be.wal_replicas.lease.epoch
        group.timer = asyncio.get_running_loop().call_later(interval_s(group.table), self.close, group)
        if not manager.stopping:
            self.spare.prepare(table, interval_s(group.table))
        return group

    async def prepare_group(self, table: Table, with_wal: bool) -> Group:
        """A new group with its txn begun (and, for a spare, its WAL file created)."""
        manager = self.manager
        group = Group(
            db_id=self.db_id,
            table_id=self.table_id,
            label=new_group_label(),
            table=table,
            wal_id=manager.next_wal_id(),
        )
        group.done = asyncio.get_running_loop().create_future()
        group.replicated = await manager.be.wal_replicas.replicas_for_new_group(table) > 1
        await manager.begin(group)
        group.begun_at = time.monotonic()
        if with_wal:
            group.wal = manager.wal_writer(group, spare=True)
            try:
                await group.wal.create()
            except Exception:
                await self.spare.discard(group)
                raise
        return group

    def add_bytes(self, group: Group, nbytes: int) -> None:
        group.bytes += nbytes
        if group.bytes >= group.max_bytes:
            self.close(group)

    async def enroll(self, entry: Entry, table: Table) -> Group:
        """Add `entry` to the open group."""
        group = await self.open_group(table)
        group.entries.append(entry)
        self.add_bytes(group, entry.nbytes)
        return group

    def close(self, group: Group) -> None:
        """Stop adding to `group` and flush it (after any earlier group of this table)."""
        if group.closed:
            return
        group.closed = True
        if group.timer is not None:
            group.timer.cancel()
        if self.current is group:
            self.current = None
        self.manager.spawn(self.flush(group), f"group-commit-flush-{group.label}")

    async def flush(self, group: Group) -> None:
        manager = self.manager
        async with self._flush_lock:
            # Closed: no load joins any more. Lane answers may still add (memory) entries.
            await group.lanes_done()
            await asyncio.gather(*(e.ready for e in group.entries), return_exceptions=True)
            group.flushing = True
            manager.lane.forget(group)
            entries = [
                e
                for e in group.entries
                if not e.ready.cancelled() and e.ready.exception() is None and e.ready.result()
            ]
            assert group.done is not None
            try:
                rows = await manager.committer.group_rows(group, entries)
                txn_id = await manager.committer.commit_group(group, rows)
            except asyncio.CancelledError:
                group.done.cancel()  # stopping: the WAL stays and is replayed at the next start
                raise
            except Exception as e:  # noqa: BLE001 - a group that can never commit (table dropped)
                log.error("group %s of table %s failed for good: %s", group.label, self.table_id, e)
                group.done.set_exception(e)
                group.done.exception()  # retrieved: sync waiters may be gone
                manager.delete_wal(group)
                self.spare.expire()  # begun for a table that is gone, most likely
            else:
                group.done.set_result(txn_id)
                manager.delete_wal(group)
            finally:
                for label in group.labels:
                    if self.pending_labels.get(label) is group:
                        del self.pending_labels[label]
