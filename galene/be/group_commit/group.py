"""A group: one merged group-commit transaction in the making, and the rows of its loads.

Owns `Group` and `Entry` (one load's rows inside a group), the table properties that shape a
group (mode, interval, data bytes), the group label, the errors of the group-commit flow, and
`wal_entries`: the rows of a WAL file (a group's own, or a copy of another BE's group) as the
entries a commit loads.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from galene.be.ingest_worker import RemoteWalWriter
from galene.be.wal import WalWriter, wal_rows
from galene.be.wal_replica_set import ReplicaSet
from galene.catalog.model import Table
from galene.catalog.properties import (
    GROUP_COMMIT_DEFAULT_DATA_BYTES,
    group_commit_data_bytes,
    group_commit_interval_ms,
)
from galene.common.errors import GaleneError, LoadError
from galene.load.headers import GROUP_COMMIT_MODES
from galene.txn.labels import GROUP_COMMIT_LABEL_PREFIX

# A merged txn stays PREPARE for the group's interval plus its flush; the FE aborts it if
# the BE vanishes for longer than this past the interval (the WAL replay reloads it).
GROUP_TXN_TIMEOUT_S = 600
RETRY_MIN_S = 0.1
RETRY_MAX_S = 10.0

PENDING = object()  # a label whose load is between its checks and joining a group


def new_group_label() -> str:
    h = uuid.uuid4().hex
    return f"{GROUP_COMMIT_LABEL_PREFIX}{h[:16]}_{h[16:]}"


def table_mode(table: Table) -> str:
    mode = table.properties.get("group_commit_mode", "off_mode").strip().lower()
    return mode if mode in GROUP_COMMIT_MODES else "off_mode"


def interval_s(table: Table) -> float:
    return group_commit_interval_ms(table.properties) / 1000


def data_bytes(table: Table) -> int:
    return group_commit_data_bytes(table.properties)


class LabelUsed(LoadError):
    """A client label that is already loaded or being loaded (answered, nothing loaded)."""

    def __init__(self, label: str, txn_id: int, existing_status: str):
        what = "is being loaded" if existing_status == "RUNNING" else "was already loaded"
        super().__init__(
            f"Label [{label}] has already been used, relate to txn [{txn_id}]; "
            f"it {what} by group commit txn [{txn_id}]",
            status="Label Already Exists",
        )
        self.txn_id = txn_id
        self.existing_status = existing_status


class TableDropped(GaleneError):
    """The group's table is gone: its rows can never be committed."""


class AlreadyCommitted(GaleneError):
    """The group's label already belongs to a visible txn: its rows are loaded."""

    def __init__(self, txn_id: int):
        super().__init__(f"group already committed by txn [{txn_id}]")
        self.txn_id = txn_id


class FeRefused(GaleneError):
    """The FE answered an internal call with an error (as opposed to not answering)."""

    def __init__(self, body: dict):
        super().__init__(str(body.get("message", body)))
        self.body = body


@dataclass
class Entry:
    """One load's rows inside a group."""

    data: pa.Table
    sub_label: str | None
    in_wal: bool
    ready: asyncio.Future  # True once durable (and its label reserved); False = not loaded
    nbytes: int = -1  # data.nbytes, computed once: it walks every buffer and is asked often

    def __post_init__(self) -> None:
        if self.nbytes < 0:
            self.nbytes = self.data.nbytes


@dataclass
class Group:
    """One merged transaction in the making."""

    db_id: int
    table_id: int
    label: str
    table: Table | None
    txn_id: int = 0
    entries: list[Entry] = field(default_factory=list)
    bytes: int = 0
    closed: bool = False
    wal: WalWriter | RemoteWalWriter | None = None
    labels: set[str] = field(default_factory=set)
    done: asyncio.Future | None = None  # result: the committed txn id
    timer: asyncio.TimerHandle | None = None
    wal_id: int = 0  # orders the group's WAL file among the table's (replay order)
    begun_at: float = 0.0  # time.monotonic() of its txn begin
    lane_pending: int = 0  # SmallLoadLane loads sent to the ingest worker, not yet answered
    lane_drained: asyncio.Future | None = None  # set when lane_pending drops to 0 (flush waits)
    flushing: bool = False  # its flush took the entries: later lane rows are not loaded
    max_bytes: int = GROUP_COMMIT_DEFAULT_DATA_BYTES  # group_commit_data_bytes of its table
    # replication_num > 1 (be/wal_replica.py): each WAL record also goes to peer BEs, and
    # the flush commits from memory the rows of the loads whose records reached a quorum (a
    # load that missed it may be in the local WAL but is not loaded). Lane loads of such a
    # group come back from the worker as rows (as sync_mode's do); each parse's rows are made
    # durable as one record here, and `lane_durable` is the latest of those writes (each one
    # waits for the one before, so a load answered after it is durable).
    replicated: bool = False
    replicas: ReplicaSet | None = None
    lane_durable: asyncio.Future | None = None
    # The FE's write lease (be/wal_replica.py WalLease) when the group opened: it answers
    # loads only while that lease holds. taken_over: its label was committed by a holder of a
    # copy of its WAL (the FE thought this BE dead), not by this BE.
    lease_epoch: int = 0
    first_txn_id: int = 0
    taken_over: bool = False

    def lane_answered_cb(self, _answer: asyncio.Future) -> None:
        self.lane_answered()

    def lane_answered(self) -> None:
        self.lane_pending -= 1
        if not self.lane_pending and self.lane_drained is not None and not self.lane_drained.done():
            self.lane_drained.set_result(None)

    async def lanes_done(self) -> None:
        """Wait until every lane load of this (closed) group has its answer."""
        if self.lane_pending:
            self.lane_drained = asyncio.get_running_loop().create_future()
            await self.lane_drained


def done_future(value: Any) -> asyncio.Future:
    fut = asyncio.get_running_loop().create_future()
    fut.set_result(value)
    return fut


def retrieve(task: asyncio.Task) -> None:
    """Done callback: mark a background task's failure as seen (it is handled elsewhere)."""
    if not task.cancelled():
        task.exception()


async def wal_entries(path, keep=None) -> list[Entry]:
    """The rows of a WAL file as ready entries (in a worker thread), loads of one record
    without client labels as one entry; `keep(client label)` filters them."""
    parts = await asyncio.to_thread(wal_rows, path)
    return [
        Entry(data=data, sub_label=sub, in_wal=True, ready=done_future(True))
        for sub, data in parts
        if keep is None or keep(sub)
    ]
