"""Spare groups: a table's next group, begun ahead while its current one fills.

A spare has its FE txn begun and its WAL file created, preallocated and its directory entry
fsynced (named `….spare` until its first append), so a group switch puts no FE round trip,
journal fsync or file creation on the reply path of the loads that arrive then. A spare is
used only while young enough and begun against the columns and properties the loads were
parsed for; else, and when no load takes it within the interval + SPARE_IDLE_S, it is
aborted and its file deleted.
"""

from __future__ import annotations

import asyncio
import logging
import time

from galene.be.group_commit.group import GROUP_TXN_TIMEOUT_S, Group, retrieve
from galene.catalog.model import Table

log = logging.getLogger(__name__)

# A spare group older than this is not used (its txn would time out at the FE meanwhile).
SPARE_MAX_AGE_S = GROUP_TXN_TIMEOUT_S / 2
# A spare no load has taken this long after its group's interval is aborted and its file
# deleted: a table that went quiet (or was dropped) keeps no open txn or preallocated file.
SPARE_IDLE_S = 30.0


def spare_fits(group: Group, table: Table) -> bool:
    """Whether a spare group, begun a while ago, may take the table's next loads: young
    enough, and begun against the schema and properties the loads were parsed for."""
    if time.monotonic() - group.begun_at > SPARE_MAX_AGE_S or group.table is None:
        return False
    return group.table.columns == table.columns and group.table.properties == table.properties


class SpareGroup:
    """The spare of one table's queue (`queue`: its `GroupCommitQueue`, which begins groups)."""

    def __init__(self, queue):
        self.queue = queue
        self.task: asyncio.Task | None = None  # begins the spare (its result: the Group)
        self.expiry: asyncio.TimerHandle | None = None

    async def take(self, table: Table) -> Group | None:
        """The spare, when there is one that may take the table's loads (an unusable one is
        discarded); the queue has none afterwards."""
        spare, self.task = self.task, None
        if self.expiry is not None:
            self.expiry.cancel()
            self.expiry = None
        if spare is None:
            return None
        group = None
        try:
            group = await spare  # normally done long ago
        except Exception as e:  # noqa: BLE001 - begin afresh (which reports errors)
            log.info("group commit: spare group of table %s unusable: %s", self.queue.table_id, e)
        if group is not None and not spare_fits(group, table):
            self.queue.manager.spawn(self.discard(group), "group-commit-spare-discard")
            group = None
        return group

    def prepare(self, table: Table, interval: float) -> None:
        """Begin the spare for the group after the one just opened (whose interval is
        `interval` seconds); it expires if no load takes it within that + SPARE_IDLE_S."""
        manager = self.queue.manager
        self.task = manager.spawn(self.queue.prepare_group(table, with_wal=True), "group-commit-spare")
        self.task.add_done_callback(retrieve)
        self.expiry = asyncio.get_running_loop().call_later(interval + SPARE_IDLE_S, self.expire)

    def expire(self) -> None:
        """Abort the table's spare group (timer: no load came; or the table is gone)."""
        if self.expiry is not None:
            self.expiry.cancel()
        spare, self.task, self.expiry = self.task, None, None
        if spare is not None:
            self.queue.manager.spawn(self._discard_when_ready(spare), "group-commit-spare-discard")

    async def _discard_when_ready(self, spare: asyncio.Task) -> None:
        try:
            group = await spare
        except Exception:  # noqa: BLE001 - nothing was begun, or it was cleaned up already
            return
        await self.discard(group)

    async def discard(self, group: Group) -> None:
        """Abort a spare group's txn and delete its (empty) WAL file."""
        await self.queue.manager.abort(group.txn_id, "group commit: unused spare group")
        if group.wal is not None:
            group.wal.delete()
