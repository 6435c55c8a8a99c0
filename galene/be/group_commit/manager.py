"""Group commit on a BE (`GroupCommitManager`): its queues per table, the WAL directory and
its writer, the FE calls of the flow, and the replay of the previous run's WAL at start.

The parts: `group.py` (a group and its entries), `queue.py` (one table's groups), `spares.py`
(the next group begun ahead), `lane.py` (small loads parsed together by the ingest worker),
`load.py` (one load's steps and reply), `commit.py` (the merged commit), `tables.py` (table
lookups); the package docstring tells the whole flow.
"""

from __future__ import annotations

import asyncio
import logging
import time

import msgspec

from galene.be.group_commit.commit import GroupCommitter
from galene.be.group_commit.group import (
    GROUP_TXN_TIMEOUT_S,
    RETRY_MAX_S,
    RETRY_MIN_S,
    AlreadyCommitted,
    Entry,
    FeRefused,
    Group,
    LabelUsed,
    TableDropped,
    data_bytes,
    interval_s,
    table_mode,
    wal_entries,
)
from galene.be.group_commit.lane import SmallLoadLane
from galene.be.group_commit.load import GroupCommitLoad
from galene.be.group_commit.queue import GroupCommitQueue
from galene.be.group_commit.tables import TableInfoCache
from galene.be.ingest_worker import IngestWorker, RemoteWalWriter
from galene.be.wal import (
    WalFile,
    WalWriter,
    encode_parts,
    list_wal_files,
    wal_dir,
    wal_file_name,
)
from galene.catalog.model import Table
from galene.common.errors import GaleneError, LoadError
from galene.load.headers import LoadHeaders
from galene.net.deadline import SharedDeadlines

log = logging.getLogger(__name__)

# Deadline of the FE calls on the load path (reserve a label, look up a table).
FE_CALL_TIMEOUT_S = 5.0


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
        self.committer = GroupCommitter(self)
        self.deadlines = SharedDeadlines()
        # Lane loads and every WAL write go to the ingest worker (a child process, or a
        # thread of this one; see there).
        self.worker = IngestWorker(in_process=not be.cfg.group_commit_ingest_worker)
        self.worker.on_rows = self.lane.rows_arrived
        self.ready = asyncio.Event()  # set once the WAL of the previous run is replayed
        self._tasks: set[asyncio.Task] = set()
        self._last_wal_id = 0
        self.stopping = False

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
        self.stopping = True
        self.close_groups()
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

    def close_groups(self) -> None:
        """Flush every open group now and abort every spare (stopping, or decommissioned)."""
        for queue in list(self.queues.values()):
            if queue.current is not None:
                queue.close(queue.current)
            queue.spare.expire()

    def open_groups(self) -> int:
        """Tables with an open or a spare group."""
        return sum(1 for q in self.queues.values() if q.current is not None or q.spare.task is not None)

    def busy_tasks(self) -> int:
        """Background tasks still running (flushes, spares, recovery), the worker's start aside."""
        return sum(1 for t in list(self._tasks) if not t.done() and t.get_name() != "ingest-worker-start")

    # --- FE calls -------------------------------------------------------------------
    async def fe(self, path: str, payload: dict, timeout_s: float = FE_CALL_TIMEOUT_S) -> dict:
        """One internal FE call with a deadline; transport failures raise (DeadlineExceeded,
        RpcUnavailable), answers are returned."""
        status, body = await self.be.fe_call("POST", path, payload, timeout_s=timeout_s)
        if status != 200 or not isinstance(body, dict):
            raise FeRefused({"message": f"FE call {path} failed: HTTP {status} {body}"})
        return body

    async def begin(self, group: Group) -> None:
        """Begin the group's merged txn at the FE."""
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
                await self.abort(int(body["txn_id"]), "group commit: stale txn of this group")
            raise FeRefused(body)
        group.txn_id = int(body["txn_id"])
        if not group.first_txn_id:
            group.first_txn_id = group.txn_id
        group.table = msgspec.convert(body["table"], Table)
        group.max_bytes = data_bytes(group.table)

    async def abort(self, txn_id: int, reason: str) -> None:
        try:
            await self.fe("/api/_internal/txn/abort", {"txn_id": txn_id, "reason": reason})
        except (OSError, TimeoutError, GaleneError) as e:  # the FE's txn timeout aborts it later
            log.warning("abort of txn %s failed: %s", txn_id, e)

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
        return await GroupCommitLoad(self, request, lh, mode).run(db, table_name)

    def _small_enough(self, request, lh: LoadHeaders) -> bool:
        """Group commit holds a load's rows until they are in the WAL, so it takes small loads
        only: a body declared over group_commit_max_load_mb, or compressed (a few KB can
        inflate to gigabytes), is loaded as a normal streamed load instead."""
        declared = request.content_length
        if lh.opts.compress_type:
            return False
        return declared is None or declared <= self.be.cfg.group_commit_max_load_mb << 20

    def queue(self, table: Table) -> GroupCommitQueue:
        key = (table.db_id, table.id)
        q = self.queues.get(key)
        if q is None:
            q = self.queues[key] = GroupCommitQueue(self, table.db_id, table.id)
        return q

    # --- WAL files, their copies, client labels ----------------------------------------
    def next_wal_id(self) -> int:
        self._last_wal_id = max(self._last_wal_id + 1, time.time_ns() // 1000)
        return self._last_wal_id

    async def append_wal(self, group: Group, entries: list[Entry]) -> None:
        """Append the entries' rows to the group's WAL; returns once they are fsynced."""
        if group.wal is None:
            group.wal = self.wal_writer(group)
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

    def wal_writer(self, group: Group, spare: bool = False) -> RemoteWalWriter:
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
        entries = await wal_entries(wal.path)  # torn or corrupt tails are left out (logged)
        group = Group(db_id=wal.db_id, table_id=wal.table_id, label=wal.label, table=None, wal=writer)
        try:
            if entries:
                txn_id = await self.committer.commit_group(group, entries)
                log.info("WAL %s: %d record(s) loaded by txn %s", wal.path.name, len(entries), txn_id)
        except TableDropped as e:
            log.warning("WAL %s: %s; its rows are dropped", wal.path.name, e)
        self.delete_wal(group)
