"""Group commit on the BE: many small loads of one table merged into one transaction.

Owns the mode choice (header `group_commit`, else table property `group_commit_mode`;
Doris' fallbacks to off_mode), the per-table queues (`GroupCommitQueue`), the merged
commit, WAL recovery at start (`GroupCommitManager`) and the group-commit reply.

A load is parsed and converted like any stream load, rows that fit no partition are
filtered, and the rows left join the table's current *group*: a transaction the BE began
at the FE under a `group_commit_<hex>` label when the group opened. async_mode appends the
rows to the group's WAL file and fsyncs before it answers; sync_mode (and async_mode while
the WAL is over `group_commit_wal_max_disk_limit`) keeps them in memory and answers when
the merged transaction is visible. A group closes after the table's
`group_commit_interval_ms` or once it holds `group_commit_data_bytes`; it is then written
as ONE rowset per tablet and committed once, and its WAL file deleted.

Small unlabelled CSV loads into a one-partition table (the traffic of logging and IoT
clients) take the `SmallLoadLane`: those that arrive together share one parse, one pass of
enrolment and one WAL record + fsync, so a load costs little more than its HTTP request.

Client labels (beyond Doris, which refuses them with group commit): after its rows are
durable, a labelled load reserves its label for the group's transaction at the FE (one
journaled op). A label the FE already knows answers `Label Already Exists` (RUNNING while
its group is pending, FINISHED once visible) and loads nothing. The merged commit binds
the labels atomically and refuses labels another live transaction holds, so even a
record that reached two WALs (a retry after a crash between fsync and reservation) is
loaded once. Reserving after the fsync means a reservation always has durable data behind
it: a crash never leaves a label that blocks retries but loads nothing.

Recovery: a restarted BE asks the FE to abort every PREPARE group transaction it had begun
(under the FE lock, so a commit sent just before the crash either landed or is refused),
learns which WAL groups are VISIBLE (those WALs are deleted), and loads the rest exactly as
a normal group, under the same label; group-commit loads wait until this is done.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pyarrow as pa

from galene.be.batch_parse import BATCH_PARSE_MAX_BODY, batch_key
from galene.be.body_bounds import BodyLimits
from galene.be.ingest_worker import IngestWorker, IngestWorkerError, RemoteWalWriter
from galene.be.load_headers import GROUP_COMMIT_MODES, LoadHeaders
from galene.be.load_options import LoadOptions
from galene.be.parse import ParsedBatch, parse_body
from galene.be.routing import route_rows
from galene.be.stream_load import (
    TOO_MANY_FILTERED,
    StreamLoadReply,
    filter_ratio_exceeded,
    new_label,
    read_and_parse,
    read_body,
    storage_answer,
)
from galene.be.wal import (
    WalFile,
    WalWriter,
    encode_parts,
    list_wal_files,
    wal_dir,
    wal_file_name,
    wal_rows,
)
from galene.be.wal_replica import ReplicaSet
from galene.catalog.model import Rowset, Table
from galene.catalog.properties import (
    GROUP_COMMIT_DEFAULT_DATA_BYTES,
    group_commit_data_bytes,
    group_commit_interval_ms,
)
from galene.common.errors import GaleneError, LoadError
from galene.net import inflight
from galene.net.deadline import SharedDeadlines
from galene.storage.rowset import delete_rowset_files, storage_schema, write_rowsets

log = logging.getLogger(__name__)


def group_commit_limits(cfg) -> BodyLimits:
    """The body bounds of a group-commit load: the stream-load ones, with the body capped at
    group_commit_max_load_mb (a chunked body only finds out while it arrives)."""
    limits = BodyLimits.from_config(cfg)
    cap = cfg.group_commit_max_load_mb << 20
    if cap >= limits.max_body_bytes:
        return limits
    return msgspec.structs.replace(limits, max_body_bytes=cap, max_body_key="group_commit_max_load_mb")


GROUP_LABEL_PREFIX = "group_commit_"
# Table schema/properties are cached this long per (db, table, user): ALTER TABLE SET takes
# effect for groups opened after that.
TABLE_INFO_TTL_S = 1.0
# A merged txn stays PREPARE for the group's interval plus its flush; the FE aborts it if
# the BE vanishes for longer than this past the interval (the WAL replay reloads it).
GROUP_TXN_TIMEOUT_S = 600
RETRY_MIN_S = 0.1
RETRY_MAX_S = 10.0
# Deadline of the FE calls on the load path (reserve a label, look up a table).
FE_CALL_TIMEOUT_S = 5.0


def new_group_label() -> str:
    h = uuid.uuid4().hex
    return f"{GROUP_LABEL_PREFIX}{h[:16]}_{h[16:]}"


def table_mode(table: Table) -> str:
    mode = table.properties.get("group_commit_mode", "off_mode").strip().lower()
    return mode if mode in GROUP_COMMIT_MODES else "off_mode"


def interval_s(table: Table) -> float:
    return group_commit_interval_ms(table.properties) / 1000


def data_bytes(table: Table) -> int:
    return group_commit_data_bytes(table.properties)


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


def _done_future(value: Any) -> asyncio.Future:
    fut = asyncio.get_running_loop().create_future()
    fut.set_result(value)
    return fut


_PENDING = object()  # a label whose load is between its checks and joining a group

# A spare group older than this is not used (its txn would time out at the FE meanwhile).
SPARE_MAX_AGE_S = GROUP_TXN_TIMEOUT_S / 2
# A spare no load has taken this long after its group's interval is aborted and its file
# deleted: a table that went quiet (or was dropped) keeps no open txn or preallocated file.
SPARE_IDLE_S = 30.0


def _spare_fits(group: Group, table: Table) -> bool:
    """Whether a spare group, begun a while ago, may take the table's next loads: young
    enough, and begun against the schema and properties the loads were parsed for."""
    if time.monotonic() - group.begun_at > SPARE_MAX_AGE_S or group.table is None:
        return False
    return group.table.columns == table.columns and group.table.properties == table.properties


def _retrieve(task: asyncio.Task) -> None:
    """Done callback: mark a background task's failure as seen (it is handled elsewhere)."""
    if not task.cancelled():
        task.exception()


class TableInfoCache:
    """Table structs by (db, table, user, password), for TABLE_INFO_TTL_S (the FE checks auth).

    Concurrent misses of one key share one FE call: when an entry expires under load, the
    many loads in flight would otherwise all ask the FE at once.
    """

    def __init__(self, manager: GroupCommitManager):
        self.manager = manager
        self._entries: dict[tuple, tuple[float, Table]] = {}
        self._inflight: dict[tuple, asyncio.Future] = {}

    async def get(self, db: str, table: str, user: str, password: str) -> Table:
        key = (db, table, user, password)
        hit = self._entries.get(key)
        if hit is not None and hit[0] > time.monotonic():
            return hit[1]
        inflight = self._inflight.get(key)
        if inflight is not None:
            return await asyncio.shield(inflight)
        fut = self._inflight[key] = asyncio.get_running_loop().create_future()
        try:
            found = await self._fetch(db, table, user, password)
        except BaseException as e:
            fut.set_exception(e if isinstance(e, Exception) else LoadError("table lookup cancelled"))
            fut.exception()  # retrieved: there may be no other waiter
            raise
        finally:
            del self._inflight[key]
        fut.set_result(found)
        if len(self._entries) > 4096:
            self._entries.clear()
        self._entries[key] = (time.monotonic() + TABLE_INFO_TTL_S, found)
        return found

    async def _fetch(self, db: str, table: str, user: str, password: str) -> Table:
        body = await self.manager.fe(
            "/api/_internal/table_info", {"db": db, "table": table, "user": user, "password": password}
        )
        if body.get("status") != "OK":
            raise LoadError(
                body.get("message", "table lookup failed"), status=body.get("load_status", "Fail")
            )
        return msgspec.convert(body["table"], Table)


class GroupCommitQueue:
    """The groups of one table on this BE: one open group, flushed one at a time in order."""

    def __init__(self, manager: GroupCommitManager, db_id: int, table_id: int):
        self.manager = manager
        self.db_id = db_id
        self.table_id = table_id
        self.current: Group | None = None
        # The next group, begun ahead (txn + preallocated WAL file) while this one fills, so
        # a group switch does not put an FE round trip, a journal fsync and a WAL file
        # creation on the reply path of the loads that arrive then.
        self.spare: asyncio.Task | None = None
        self.spare_expiry: asyncio.TimerHandle | None = None
        self._open_lock = asyncio.Lock()
        self._flush_lock = asyncio.Lock()
        # client label -> its group (or _PENDING): a second load with the same label on this
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
                        self.current = await self.manager.next_group(self, table)
                    group = self.current
            if not group.closed:
                if group.replicated and self.manager.replicated_group_spent(group):
                    self.close(group)  # its loads could not be answered: open a new group
                    continue
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
        async with self._flush_lock:
            # Closed: no load joins any more. Lane answers may still add (memory) entries.
            await group.lanes_done()
            await asyncio.gather(*(e.ready for e in group.entries), return_exceptions=True)
            group.flushing = True
            self.manager.lane.forget(group)
            entries = [
                e
                for e in group.entries
                if not e.ready.cancelled() and e.ready.exception() is None and e.ready.result()
            ]
            assert group.done is not None
            try:
                rows = await self.manager.group_rows(group, entries)
                txn_id = await self.manager.commit_group(group, rows)
            except asyncio.CancelledError:
                group.done.cancel()  # stopping: the WAL stays and is replayed at the next start
                raise
            except Exception as e:  # noqa: BLE001 - a group that can never commit (table dropped)
                log.error("group %s of table %s failed for good: %s", group.label, self.table_id, e)
                group.done.set_exception(e)
                group.done.exception()  # retrieved: sync waiters may be gone
                self.manager.delete_wal(group)
                self.manager.expire_spare(self)  # begun for a table that is gone, most likely
            else:
                group.done.set_result(txn_id)
                self.manager.delete_wal(group)
            finally:
                for label in group.labels:
                    if self.pending_labels.get(label) is group:
                        del self.pending_labels[label]


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

    def __init__(self, manager: GroupCommitManager):
        self.manager = manager
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
                    group.wal = manager._wal_writer(group)
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
                Entry(data=rows, sub_label=None, in_wal=False, ready=_done_future(True), nbytes=0)
            )
            return
        entry = Entry(
            data=rows, sub_label=None, in_wal=True, ready=asyncio.get_running_loop().create_future(), nbytes=0
        )
        group.entries.append(entry)
        task = self.manager.spawn(
            self._make_durable(group, entry, group.lane_durable), "group-commit-wal-copies"
        )
        task.add_done_callback(_retrieve)
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


class GroupCommitManager:
    """All group-commit state of one BE: queues per table, the WAL directory, recovery."""

    def __init__(self, be):
        self.be = be
        self.wal_root = be.cfg.be_path / "wal"
        self.wal_limit = int(be.cfg.group_commit_wal_max_disk_limit)
        self.wal_bytes = 0
        self.queues: dict[tuple[int, int], GroupCommitQueue] = {}
        self.tables = TableInfoCache(self)
        self.lane = SmallLoadLane(self)
        self.deadlines = SharedDeadlines()
        # Lane loads and every WAL write go to the ingest worker (a child process, or a
        # thread of this one; see there).
        self.worker = IngestWorker(in_process=not be.cfg.group_commit_ingest_worker)
        self.worker.on_rows = self.lane.rows_arrived
        self.ready = asyncio.Event()  # set once the WAL of the previous run is replayed
        self._tasks: set[asyncio.Task] = set()
        self._last_wal_id = 0
        self._stopping = False

    # --- lifecycle ------------------------------------------------------------------
    def start(self) -> None:
        self.spawn(self.recover(), "group-commit-recovery")
        self.spawn(self._start_worker(), "ingest-worker-start")

    async def _start_worker(self) -> None:
        try:
            await self.worker.start()
        except Exception as e:  # noqa: BLE001 - the first load that needs it tries again
            log.error("ingest worker did not start: %s", e)

    async def stop(self, flush_timeout_s: float = 10.0) -> None:
        """Flush open groups (bounded), then cancel what is left; WAL files stay for replay."""
        self._stopping = True
        for queue in list(self.queues.values()):
            if queue.current is not None:
                queue.close(queue.current)
            self.expire_spare(queue)
        pending = [t for t in self._tasks if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=flush_timeout_s)
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.worker.stop()

    def spawn(self, coro, name: str) -> asyncio.Task:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # --- FE calls -------------------------------------------------------------------
    async def fe(self, path: str, payload: dict, timeout_s: float = FE_CALL_TIMEOUT_S) -> dict:
        """One internal FE call with a deadline; transport failures raise (DeadlineExceeded,
        RpcUnavailable), answers are returned."""
        status, body = await self.be.fe_call("POST", path, payload, timeout_s=timeout_s)
        if status != 200 or not isinstance(body, dict):
            raise FeRefused({"message": f"FE call {path} failed: HTTP {status} {body}"})
        return body

    async def _begin(self, group: Group) -> None:
        body = await self.fe(
            "/api/_internal/group_commit/begin",
            {
                "db_id": group.db_id,
                "table_id": group.table_id,
                "label": group.label,
                "backend_id": self.be.backend_id,
                "timeout_s": GROUP_TXN_TIMEOUT_S + int(interval_s(group.table) if group.table else 0),
            },
        )
        if body.get("status") != "OK":
            if "does not exist" in str(body.get("message", "")):
                raise TableDropped(body.get("message", "table dropped"))
            if body.get("load_status") == "Label Already Exists" and body.get("txn_id"):
                # A begin whose answer was lost left a txn under the group's label.
                if body.get("existing_status") == "FINISHED":
                    raise AlreadyCommitted(int(body["txn_id"]))
                await self._abort(int(body["txn_id"]), "group commit: stale txn of this group")
            raise FeRefused(body)
        group.txn_id = int(body["txn_id"])
        if not group.first_txn_id:
            group.first_txn_id = group.txn_id
        group.table = msgspec.convert(body["table"], Table)
        group.max_bytes = data_bytes(group.table)

    # --- the load path ----------------------------------------------------------------
    async def maybe_execute(self, request, db: str, table_name: str, lh: LoadHeaders):
        """The group-commit reply for this load, or None when it runs without group commit."""
        if lh.group_commit_error is not None:  # an invalid value fails the load (Doris' text)
            raise LoadError(lh.group_commit_error)
        mode = lh.group_commit
        if mode == "off_mode" or lh.no_group_commit or not self._small_enough(request, lh):
            return None
        health = getattr(self.be, "health", None)
        if health is not None and health.draining:
            return None  # decommissioned: nothing new joins a group; loads run as plain loads
        auth = lh.auth
        if mode is None:
            try:
                table = await self.tables.get(db, table_name, auth[0], auth[1])
            except Exception:  # noqa: BLE001 - the normal path reports bad tables and auth
                return None
            mode = table_mode(table)
            if mode == "off_mode":
                return None
        return await self.execute(request, db, table_name, mode, lh)

    def _small_enough(self, request, lh: LoadHeaders) -> bool:
        """Group commit holds a load's rows until they are in the WAL, so it takes small loads
        only: a body declared over group_commit_max_load_mb, or compressed (a few KB can
        inflate to gigabytes), is loaded as a normal streamed load instead."""
        declared = request.content_length
        if lh.opts.compress_type:
            return False
        return declared is None or declared <= self.be.cfg.group_commit_max_load_mb << 20

    async def execute(
        self, request, db: str, table_name: str, mode: str, lh: LoadHeaders
    ) -> GroupCommitReply:
        t0 = time.monotonic()
        be = self.be
        auth, opts, client_label = lh.auth, lh.opts, lh.client_label
        reply = GroupCommitReply(label=client_label or "", client_label=client_label)
        queue: GroupCommitQueue | None = None
        group: Group | None = None
        claimed = False
        # One deadline (the load's `timeout`) over every wait of the load; `stage` names the
        # wait it expired in. One scope, not one per await, on a timer shared by the loads
        # whose deadlines fall in the same 50 ms.
        stage = "group commit WAL recovery"
        scope = self.deadlines.scope(opts.timeout_s)
        try:
            async with scope:
                if not self.ready.is_set():
                    await self.ready.wait()
                stage = "looking up the table"
                table = await self.tables.get(db, table_name, auth[0], auth[1])

                stage = "reading the body"
                t_read = time.monotonic()
                body = await self._small_body(request, table, client_label)
                key = batch_key(table, opts, body) if body is not None else None
                if key is not None:
                    # The common case of logging/IoT clients: many small unlabelled CSV loads,
                    # parsed, enrolled and written to the WAL a batch at a time (SmallLoadLane).
                    assert body is not None
                    stage = "joining a group, parsing and writing the WAL"
                    outcome = await self.lane.submit(key, table, opts, body, mode == "async_mode")
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
                    group = outcome.group
                    loaded_rows = outcome.counts.num_loaded
                    if not outcome.in_wal:
                        mode = "sync_mode"  # the WAL was over its limit
                    reply.label = group.label
                    reply.txn_id = group.txn_id
                    reply.write_data_time_ms = 0  # written with the parse, in the worker
                else:
                    opts = lh.fresh_options()  # parsed here, at this load's clock
                    batch, body_len = await self._read_and_parse(request, table, opts, body)
                    reply.load_bytes = body_len
                    reply.read_data_time_ms = int((time.monotonic() - t_read) * 1000)

                    t_write = time.monotonic()
                    if table.partition_type == "UNPARTITIONED" and len(table.partitions) == 1:
                        # Every row fits the one partition: tablets are chosen once, at the flush.
                        kept, routed_filtered, route_errors = batch.data, 0, []
                    else:
                        kept, routed_filtered, route_errors = await asyncio.to_thread(
                            _route_for_group, table, batch, be.max_error_rows
                        )
                    loaded_rows = kept.num_rows
                    filtered = batch.num_filtered + routed_filtered
                    reply.number_total_rows = batch.num_total
                    reply.number_filtered_rows = filtered
                    reply.number_unselected_rows = batch.num_unselected
                    errors = (list(batch.errors) + route_errors)[: be.max_error_rows]
                    if errors:
                        reply.error_url = be.error_log.save(client_label or new_label(), 0, errors)
                    if filter_ratio_exceeded(
                        batch.num_total, filtered, batch.num_unselected, opts.max_filter_ratio
                    ):
                        raise LoadError(TOO_MANY_FILTERED)
                    if batch.num_total == 0 and body_len == 0:
                        raise LoadError("[INTERNAL_ERROR]The size of this stream load is 0 (empty body)")

                    # The body's size stands for the rows' size in the group and WAL accounting:
                    # Table.nbytes walks every buffer of a slice and cost more than parsing.
                    kept_bytes = body_len
                    if mode == "async_mode" and not self.wal_has_room(kept_bytes):
                        mode = "sync_mode"

                    queue = self.queue(table)
                    if client_label is not None:
                        holder = queue.pending_labels.get(client_label)
                        if holder is not None:
                            raise LabelUsed(
                                client_label, 0 if holder is _PENDING else holder.txn_id, "RUNNING"
                            )
                        queue.pending_labels[client_label] = _PENDING
                        claimed = True
                        stage = "checking the label"
                        await self.check_label(table, client_label)

                    entry = Entry(
                        data=kept,
                        sub_label=client_label,
                        in_wal=mode == "async_mode",
                        ready=asyncio.get_running_loop().create_future(),
                        nbytes=kept_bytes,
                    )
                    stage = "opening a group"
                    try:
                        group = await queue.enroll(entry, table)
                    except BaseException:
                        entry.ready.set_result(False)
                        raise
                    reply.label = group.label
                    reply.txn_id = group.txn_id
                    if client_label is not None:
                        queue.pending_labels[client_label] = group
                        group.labels.add(client_label)
                    durable = False
                    stage = "writing the WAL"
                    try:
                        if entry.in_wal:
                            await self.append_wal(group, [entry])
                            self.check_lease(group)
                        if client_label is not None:
                            await self.reserve(group, client_label)
                        durable = True
                    finally:
                        entry.ready.set_result(durable)
                    if entry.in_wal and not group.replicated:  # the flush reads them from the WAL file
                        entry.data = entry.data.slice(0, 0)
                    reply.write_data_time_ms = int((time.monotonic() - t_write) * 1000)

                if mode == "sync_mode":
                    assert group.done is not None
                    stage = "the merged commit"
                    reply.txn_id = await asyncio.shield(group.done)
                    if group.taken_over and key is None:
                        # Off the lane, sync rows are not in the WAL copies the takeover committed.
                        raise LoadError(
                            f"group commit: group {group.label} was committed from a WAL copy on "
                            "another BE while the FE could not reach this one; this load was not loaded"
                        )
            reply.number_loaded_rows = loaded_rows
            reply.status = "Success"
            reply.message = "OK"
            be.metrics.inc(f"galene_be_group_commit_{mode}_loads_total")
        except LabelUsed as e:
            reply.status = "Label Already Exists"
            reply.existing_job_status = e.existing_status
            reply.message = e.message
            reply.txn_id = e.txn_id
            reply.label = client_label or reply.label
            reply.number_loaded_rows = 0
        except (GaleneError, TimeoutError) as e:
            reply.status = "Fail"
            if isinstance(e, TimeoutError) and scope.expired():
                reply.message = f"[TIMEOUT]group commit load timed out while {stage}"
            else:
                reply.message = getattr(e, "message", None) or f"[TIMEOUT]{e}"
            reply.number_loaded_rows = 0
        except Exception as e:  # never let one load take the BE down
            log.exception("group commit load failed")
            reply.status = "Fail"
            reply.message = f"[INTERNAL_ERROR]{type(e).__name__}: {e}"
            reply.number_loaded_rows = 0
        finally:
            # A label this load claimed but did not load is free again on this BE (the FE
            # still answers for it if its rows may yet commit).
            if (
                claimed
                and queue is not None
                and reply.status != "Success"
                and queue.pending_labels.get(client_label) in (_PENDING, group)
            ):
                queue.pending_labels.pop(client_label, None)
        reply.load_time_ms = int((time.monotonic() - t0) * 1000)
        return reply

    async def _small_body(self, request, table: Table, client_label: str | None) -> bytes | None:
        """The body, read, when this load may go through the SmallLoadLane (small, unlabelled,
        into a table whose rows all fit its one partition); else None (the body is unread)."""
        declared = request.content_length
        if (
            client_label is not None
            or declared is None
            or declared > BATCH_PARSE_MAX_BODY
            or table.partition_type != "UNPARTITIONED"
            or len(table.partitions) != 1
        ):
            return None
        limits = group_commit_limits(self.be.cfg)
        return await read_body(request, limits.max_body_bytes, limits.max_body_key)

    async def _read_and_parse(
        self, request, table: Table, opts: LoadOptions, body: bytes | None
    ) -> tuple[ParsedBatch, int]:
        be = self.be
        limits = group_commit_limits(be.cfg)
        if body is None:
            return await read_and_parse(request, limits, table, opts, be.max_error_rows)
        # A body `_small_body` read (at most BATCH_PARSE_MAX_BODY): cheaper to parse here than
        # to hand to a thread.
        return parse_body(body, table, opts, be.max_error_rows, limits), len(body)

    def queue(self, table: Table) -> GroupCommitQueue:
        key = (table.db_id, table.id)
        q = self.queues.get(key)
        if q is None:
            q = self.queues[key] = GroupCommitQueue(self, table.db_id, table.id)
        return q

    async def next_group(self, queue: GroupCommitQueue, table: Table) -> Group:
        """The table's next open group: its spare when that is usable, else a new one; its
        interval starts now, and the spare for the group after it is prepared meanwhile."""
        spare, queue.spare = queue.spare, None
        if queue.spare_expiry is not None:
            queue.spare_expiry.cancel()
            queue.spare_expiry = None
        group = None
        if spare is not None:
            try:
                group = await spare  # normally done long ago
            except Exception as e:  # noqa: BLE001 - begin afresh below (which reports errors)
                log.info("group commit: spare group of table %s unusable: %s", queue.table_id, e)
            if group is not None and not _spare_fits(group, table):
                self.spawn(self._discard_spare(group), "group-commit-spare-discard")
                group = None
        if group is None:
            group = await self._prepare_group(queue, table, with_wal=False)
        assert group.table is not None
        group.lease_epoch = self.be.wal_replicas.lease.epoch
        group.timer = asyncio.get_running_loop().call_later(interval_s(group.table), queue.close, group)
        if not self._stopping:
            queue.spare = self.spawn(self._prepare_group(queue, table, with_wal=True), "group-commit-spare")
            queue.spare.add_done_callback(_retrieve)
            queue.spare_expiry = asyncio.get_running_loop().call_later(
                interval_s(group.table) + SPARE_IDLE_S, self.expire_spare, queue
            )
        return group

    def expire_spare(self, queue: GroupCommitQueue) -> None:
        """Abort the table's spare group (timer: no load came; or the table is gone)."""
        if queue.spare_expiry is not None:
            queue.spare_expiry.cancel()
        spare, queue.spare, queue.spare_expiry = queue.spare, None, None
        if spare is not None:
            self.spawn(self._discard_when_ready(spare), "group-commit-spare-discard")

    async def _prepare_group(self, queue: GroupCommitQueue, table: Table, with_wal: bool) -> Group:
        """A new group with its txn begun (and, for a spare, its WAL file created)."""
        group = Group(
            db_id=queue.db_id,
            table_id=queue.table_id,
            label=new_group_label(),
            table=table,
            wal_id=self._next_wal_id(),
        )
        group.done = asyncio.get_running_loop().create_future()
        group.replicated = await self.be.wal_replicas.replicas_for_new_group(table) > 1
        await self._begin(group)
        group.begun_at = time.monotonic()
        if with_wal:
            group.wal = self._wal_writer(group, spare=True)
            try:
                await group.wal.create()
            except Exception:
                await self._discard_spare(group)
                raise
        return group

    async def _discard_when_ready(self, spare: asyncio.Task) -> None:
        try:
            group = await spare
        except Exception:  # noqa: BLE001 - nothing was begun, or it was cleaned up already
            return
        await self._discard_spare(group)

    async def _discard_spare(self, group: Group) -> None:
        """Abort a spare group's txn and delete its (empty) WAL file."""
        await self._abort(group.txn_id, "group commit: unused spare group")
        if group.wal is not None:
            group.wal.delete()

    def _next_wal_id(self) -> int:
        self._last_wal_id = max(self._last_wal_id + 1, time.time_ns() // 1000)
        return self._last_wal_id

    async def append_wal(self, group: Group, entries: list[Entry]) -> None:
        """Append the entries' rows to the group's WAL; returns once they are fsynced."""
        if group.wal is None:
            group.wal = self._wal_writer(group)
        parts = [(e.sub_label, e.data) for e in entries]
        if not group.replicated:
            await group.wal.append_rows(group.label, parts)
            return
        if group.replicas is None and not group.closed:
            group.replicas = self.be.wal_replicas.new_set(group, group.table)
        if group.replicas is None:
            await group.wal.append_rows(group.label, parts)
            return
        record = encode_parts(group.label, parts)
        results = await asyncio.gather(
            group.wal.append_rows(group.label, parts), group.replicas.append(record), return_exceptions=True
        )
        for r in results:
            if isinstance(r, BaseException):
                raise r

    async def copy_to_replicas(self, group: Group, entries: list[Entry]) -> None:
        """Send the entries' rows (in the group's local WAL already) to the group's peers as one
        record; returns once a quorum of copies is fsynced (at once without peers)."""
        if group.replicas is None and not group.closed:
            group.replicas = self.be.wal_replicas.new_set(group, group.table)
        if group.replicas is not None:
            await group.replicas.append(encode_parts(group.label, [(e.sub_label, e.data) for e in entries]))

    def check_lease(self, group: Group) -> None:
        """Raise unless a replicated group may acknowledge a load now (be/wal_replica.py)."""
        lease = self.be.wal_replicas.lease
        if group.replicated and group.replicas is not None and not lease.holds(group.lease_epoch):
            raise lease.refusal()

    def replicated_group_spent(self, group: Group) -> bool:
        """A replicated group that can answer no more loads: its peers fell below a quorum, or
        the write lease lapsed since it opened (a new group gets a new set and epoch)."""
        if group.replicas is not None and group.replicas.fatal is not None:
            return True
        return group.lease_epoch != self.be.wal_replicas.lease.epoch

    def _wal_writer(self, group: Group, spare: bool = False) -> RemoteWalWriter:
        path = wal_dir(self.wal_root, group.db_id, group.table_id) / wal_file_name(group.wal_id, group.label)
        return RemoteWalWriter(self.worker, path, on_grow=self._wal_grew, spare=spare)

    def _wal_grew(self, nbytes: int) -> None:
        self.wal_bytes += nbytes

    def wal_has_room(self, nbytes: int) -> bool:
        """Whether an async load of `nbytes` fits under group_commit_wal_max_disk_limit.
        Doris: short of WAL space, group commit answers after the commit instead (sync_mode)."""
        if self.wal_bytes + nbytes <= self.wal_limit:
            return True
        log.warning("group commit WAL over its limit (%d bytes): sync_mode", self.wal_limit)
        return False

    async def check_label(self, table: Table, label: str) -> None:
        """Answer a retry of a known label before writing its rows anywhere (read-only)."""
        body = await self.fe(
            "/api/_internal/group_commit/label_status", {"db_id": table.db_id, "label": label}
        )
        if body.get("status") == "OK" and body.get("used"):
            raise LabelUsed(label, int(body.get("txn_id") or 0), body.get("existing_status") or "FINISHED")

    async def reserve(self, group: Group, label: str) -> None:
        body = await self.fe(
            "/api/_internal/group_commit/reserve_label", {"txn_id": group.txn_id, "label": label}
        )
        if body.get("status") == "OK":
            return
        if body.get("load_status") == "Label Already Exists":
            raise LabelUsed(label, int(body.get("txn_id") or 0), body.get("existing_status") or "FINISHED")
        raise LoadError(body.get("message", "label reservation failed"))

    def delete_wal(self, group: Group) -> None:
        if group.replicas is not None:  # committed (or never will be): peers drop their copies
            self.be.wal_replicas.release(group, group.replicas)
            group.replicas = None
        if group.wal is not None:
            self.wal_bytes = max(0, self.wal_bytes - group.wal.size)
            group.wal.delete()

    # --- the merged commit ------------------------------------------------------------
    async def group_rows(self, group: Group, entries: list[Entry]) -> list[Entry]:
        """The rows a closed group commits, as entries: what its WAL file holds (every
        acknowledged async load, in append order), then the entries kept in memory (sync
        loads, in arrival order). WAL rows of a client label whose load failed after its
        append (the label was taken meanwhile) are left out."""
        if group.replicated:
            return list(entries)
        out: list[Entry] = []
        if group.wal is not None:
            labels = {e.sub_label for e in entries if e.in_wal and e.sub_label is not None}
            out = await _wal_entries(group.wal.final_path, keep=lambda sub: sub is None or sub in labels)
        out.extend(e for e in entries if not e.in_wal)
        return out

    async def commit_group(self, group: Group, entries: list[Entry]) -> int:
        """Write the group's rows as one rowset per tablet and commit them once.

        Retries with exponential backoff while the FE cannot be reached. A commit whose
        answer was lost is resolved by aborting the txn: the FE either aborts it (nothing
        landed; begin again under the same label) or refuses because it is already visible.
        Labels another txn holds are dropped and the rest committed again.
        """
        backoff = RETRY_MIN_S
        seen: set[str] = set()
        live: list[Entry] = []
        for e in entries:  # one entry per client label (first wins)
            if e.sub_label is not None:
                if e.sub_label in seen:
                    continue
                seen.add(e.sub_label)
            live.append(e)
        while True:
            rowsets: list[Rowset] = []
            try:
                if not group.txn_id:
                    await self._begin(group)
                if not live:
                    await self._abort(group.txn_id, "group commit: nothing left to load")
                    return group.txn_id
                assert group.table is not None
                rowsets, num_rows = await self._write_group_within(group.table, live)
            except TableDropped:
                raise
            except AlreadyCommitted as e:
                await asyncio.to_thread(delete_rowset_files, self.be.fs, self.be.root, rowsets)
                if group.first_txn_id and e.txn_id != group.first_txn_id:
                    group.taken_over = True
                    log.warning("group %s was committed by txn %s from a WAL copy", group.label, e.txn_id)
                group.txn_id = e.txn_id
                return e.txn_id
            except (GaleneError, OSError, TimeoutError) as e:
                log.warning("group %s: %s; retrying in %.1fs", group.label, e, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, RETRY_MAX_S)
                continue
            sub_labels = [e.sub_label for e in live if e.sub_label is not None]
            try:
                body = await self.fe(
                    "/api/_internal/group_commit/commit",
                    {
                        "txn_id": group.txn_id,
                        "rowsets": msgspec.to_builtins(rowsets),
                        "sub_labels": sub_labels,
                        "num_rows": num_rows,
                        "load_bytes": sum(e.nbytes for e in live),
                    },
                    timeout_s=self.be.cfg.rpc_timeout_ms / 1000,
                )
            except (OSError, TimeoutError, FeRefused) as e:
                if await self._resolve(group) == "VISIBLE":
                    return group.txn_id
                log.warning("group %s: commit failed (%s); loading again", group.label, e)
                await asyncio.to_thread(delete_rowset_files, self.be.fs, self.be.root, rowsets)
                group.txn_id = 0
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, RETRY_MAX_S)
                continue
            if body.get("status") == "OK":
                self.be.metrics.inc("galene_be_group_commit_txns_total")
                return group.txn_id
            await asyncio.to_thread(delete_rowset_files, self.be.fs, self.be.root, rowsets)
            if body.get("status") == "CONFLICT":
                taken = set(body.get("conflicts") or {})
                log.info("group %s: labels already loaded elsewhere, dropped: %s", group.label, sorted(taken))
                live = [e for e in live if e.sub_label not in taken]
                continue
            # e.g. the FE aborted the txn (timeout) or the table was dropped: begin again.
            log.warning("group %s: commit refused: %s", group.label, body.get("message"))
            await self._abort(group.txn_id, "group commit: commit refused")
            group.txn_id = 0
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, RETRY_MAX_S)

    async def _abort(self, txn_id: int, reason: str) -> None:
        try:
            await self.fe("/api/_internal/txn/abort", {"txn_id": txn_id, "reason": reason})
        except (OSError, TimeoutError, GaleneError) as e:  # the FE's txn timeout aborts it later
            log.warning("abort of txn %s failed: %s", txn_id, e)

    async def _resolve(self, group: Group) -> str:
        """After a commit with no answer: VISIBLE, or ABORTED once the abort is journaled."""
        backoff = RETRY_MIN_S
        while True:
            try:
                body = await self.fe(
                    "/api/_internal/txn/abort",
                    {"txn_id": group.txn_id, "reason": "group commit: commit lost"},
                )
            except (OSError, TimeoutError, FeRefused) as e:
                log.warning("group %s: FE unreachable while resolving its commit: %s", group.label, e)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, RETRY_MAX_S)
                continue
            if body.get("status") == "OK":
                return "ABORTED"
            if "visible" in str(body.get("message", "")).lower():
                return "VISIBLE"
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, RETRY_MAX_S)

    async def _write_group_within(self, table: Table, entries: list[Entry]) -> tuple[list[Rowset], int]:
        """`_write_group` in a worker thread under `storage_write_timeout_second`: storage that
        does not answer fails this attempt (the commit loop retries) instead of parking the
        group; files a late write still produces are deleted when it finishes."""
        be = self.be
        seconds = float(getattr(be.cfg, "storage_write_timeout_second", 0) or 0) or None
        job = asyncio.ensure_future(asyncio.to_thread(self._write_group, table, entries))
        try:
            with inflight.track(
                "storage", "write", f"group commit rowsets of table {table.id}", be.cfg.storage_uri, seconds
            ):
                return await asyncio.wait_for(storage_answer(be, job), seconds)
        except BaseException:
            job.add_done_callback(self._delete_late_write)
            raise

    def _delete_late_write(self, job: asyncio.Future) -> None:
        if job.cancelled() or job.exception() is not None:
            return
        rowsets, _ = job.result()
        if rowsets:
            self.spawn(
                asyncio.to_thread(delete_rowset_files, self.be.fs, self.be.root, rowsets),
                "group-commit-late-files",
            )

    def _write_group(self, table: Table, entries: list[Entry]) -> tuple[list[Rowset], int]:
        """Concatenate the group's rows in arrival order, route, write one rowset per tablet."""
        schema = storage_schema(table)
        parts = [_align(e.data, schema) for e in entries if e.data.num_rows]
        if not parts:
            return [], 0
        data = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        routed = route_rows(ParsedBatch(data=data, num_total=data.num_rows, num_filtered=0), table)
        if routed.num_filtered:
            # Only possible if partitions changed between the load and its commit.
            log.warning(
                "group commit: %d rows of table %s fit no partition any more", routed.num_filtered, table.id
            )
        rowsets = write_rowsets(self.be.fs, self.be.root, table, routed.per_tablet)
        return rowsets, sum(r.num_rows for r in rowsets)

    # --- recovery -------------------------------------------------------------------
    async def recover(self) -> None:
        """Replay the WAL left by the previous run; group-commit loads wait for this."""
        files = await asyncio.to_thread(list_wal_files, self.wal_root)
        self.wal_bytes = sum(f.path.stat().st_size for f in files)
        backoff = RETRY_MIN_S
        statuses: dict[str, str] = {}
        while True:
            if not self.be.backend_id:
                if not files:
                    break  # a BE that never joined a cluster has no group txns anywhere
                await asyncio.sleep(0.5)  # the first heartbeat tells us who we are
                continue
            try:
                body = await self.fe(
                    "/api/_internal/group_commit/recover",
                    {
                        "backend_id": self.be.backend_id,
                        "groups": [{"db_id": f.db_id, "label": f.label} for f in files],
                    },
                )
                if body.get("status") != "OK":
                    raise FeRefused(body)
                statuses = body.get("groups") or {}
                break
            except (OSError, TimeoutError, GaleneError) as e:
                log.warning("group commit recovery: FE not reachable (%s); retrying in %.1fs", e, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, RETRY_MAX_S)
        for f in files:
            await self._replay(f, statuses.get(f.label, "UNKNOWN"))
        if files:
            log.info("group commit recovery: %d WAL file(s) replayed", len(files))
        self.ready.set()

    async def _replay(self, wal: WalFile, status: str) -> None:
        size = wal.path.stat().st_size if wal.path.exists() else 0
        writer = WalWriter(wal.path)
        writer.size = size
        if status in ("VISIBLE", "COMMITTED"):
            log.info("WAL %s: group already committed; deleting", wal.path.name)
            self.wal_bytes = max(0, self.wal_bytes - size)
            writer.delete()
            return
        entries = await _wal_entries(wal.path)  # torn or corrupt tails are left out (logged)
        group = Group(db_id=wal.db_id, table_id=wal.table_id, label=wal.label, table=None, wal=writer)
        try:
            if entries:
                txn_id = await self.commit_group(group, entries)
                log.info("WAL %s: %d record(s) loaded by txn %s", wal.path.name, len(entries), txn_id)
        except TableDropped as e:
            log.warning("WAL %s: %s; its rows are dropped", wal.path.name, e)
        self.delete_wal(group)


async def _wal_entries(path, keep=None) -> list[Entry]:
    """The rows of a WAL file as ready entries (in a worker thread), loads of one record
    without client labels as one entry; `keep(client label)` filters them."""
    parts = await asyncio.to_thread(wal_rows, path)
    return [
        Entry(data=data, sub_label=sub, in_wal=True, ready=_done_future(True))
        for sub, data in parts
        if keep is None or keep(sub)
    ]


def _route_for_group(table: Table, batch: ParsedBatch, max_error_rows: int):
    """Rows of one load that fit a partition (in load order per tablet), plus the filtered."""
    routed = route_rows(batch, table, max_error_rows)
    parts = [rows for _, rows in routed.per_tablet.values() if rows.num_rows]
    schema = batch.data.schema
    kept = pa.concat_tables(parts) if len(parts) > 1 else (parts[0] if parts else schema.empty_table())
    return kept, routed.num_filtered, list(routed.errors)


def _align(data: pa.Table, schema: pa.Schema) -> pa.Table:
    """Rows written before a schema change, in the current storage schema (by name)."""
    if data.schema.equals(schema):
        return data
    columns = []
    for f in schema:
        if f.name in data.column_names:
            columns.append(data.column(f.name).cast(f.type))
        else:
            columns.append(pa.nulls(data.num_rows, f.type))
    return pa.Table.from_arrays(columns, schema=schema)
