"""Replicated durability of acknowledged async group-commit rows (`replication_num` > 1).

Rowsets live on the shared storage root, whose durability is the storage's; the one piece of
acknowledged data on a single local disk is the async group-commit WAL. With table property
`replication_num` = R > 1 (capped at the BEs that may take loads), the owner BE of a group
appends each WAL record to its own file and, over the internal path (cluster token, a
deadline per call), to R−1 peer BEs, and answers an async load once ⌊R/2⌋+1 copies of its
record are fsynced (its own counts as one).

Owner side (`ReplicaSet`, one per group: be/wal_replica_set.py): the group's records in
order, and one sender per peer that sends every record the peer does not have yet as one call
carrying its byte offset (the peer appends only at that offset), so every copy is a prefix of
the group's record sequence and the longest copy holds every acknowledged record. A peer whose call fails or
misses `be_wal_replica_timeout_second` is dropped from the group's set and replaced by a BE
not tried yet (which is sent the group's records from the start); it never parks a load.
Once too few peers are left for a quorum, waiting and later loads of the group fail at once
with Doris' text `failed to write enough replicas 1/3 for table <t> due to connection
errors: <peer>: <reason>`. After the group's commit the owner tells its peers to drop their
copies.

Holder side (`ReplicaStore`): copies live under `<be dir>/wal_replica/<owner id>/` as
`<db>_<table>_<owner start ms>_<group label>` in the WAL's record format. Every second a BE
holding copies asks the FE about them (`/api/_internal/group_commit/replicas`): DROP once the
group's txn is visible (or its table is gone); TAKEOVER when the owner is dead (not alive
after failed heartbeats, dropped, or restarted: a new start time) and this holder has the
longest copy; the FE aborts the owner's PREPARE txn and this BE replays the copy and commits
it under the group's label, so the label machinery loads it exactly once even if the owner
comes back and replays its own WAL.

Fencing a cut-off owner (`WalLease`): an owner the FE cannot reach may still be reached by
clients and peers (a partition, or a process paused and resumed). It must not acknowledge a
load whose rows a takeover of its group would miss. So an owner answers loads of a
replicated group only while it holds the FE's write lease: every heartbeat after a good one
carries `wal_lease_until` (FE wall clock + `4 × heartbeat_interval_second`, at least 3 s); a
BE acknowledges only while its clock is before that instant and the lease has not lapsed
since the group opened (a lapse followed by a renewal bumps the lease epoch, and groups of an
older epoch are closed and take no more loads). The FE stops granting at the first failed
heartbeat and lets a holder take a group over only once the last lease it may have granted
has expired (plus `WAL_LEASE_MARGIN_S` for clock skew between the nodes). Every row an owner
acknowledged was in a quorum of copies before its lease ended, so in the longest copy the
takeover commits. A sync_mode load of such a group whose group was committed from a copy is
answered Fail (its rows go to the peers only through the lane, not on the other path).
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from galene.be.group_commit.group import Group, TableDropped, wal_entries
from galene.be.wal_replica_set import ReplicaSet
from galene.catalog.model import Table
from galene.catalog.properties import replication_num
from galene.common.errors import GaleneError, LoadError
from galene.common.files import fsync_path
from galene.net.client import TOKEN_HEADER, RpcClient

log = logging.getLogger(__name__)

SWEEP_INTERVAL_S = 1.0
# What a holder accepts in one call (a record is at most ~256 MiB: wal.MAX_GROUPED_RECORD_BYTES).
MAX_CALL_BYTES = 512 << 20


class WalLease:
    """The FE's write lease for replicated groups, as this BE holds it (see the docstring)."""

    def __init__(self) -> None:
        self.until = 0.0  # wall clock (the FE's grant; clocks are assumed within the margin)
        self.epoch = 0  # bumped by a renewal after a lapse: groups opened before cannot answer
        self._renewed = asyncio.Event()

    def renew(self, until: float) -> None:
        if time.time() >= self.until:
            self.epoch += 1
        self.until = max(self.until, until)
        self._renewed.set()

    def held(self) -> bool:
        return time.time() < self.until

    async def wait_held(self, seconds: float) -> bool:
        """Whether the lease holds, waiting up to `seconds` for a renewal when it does not."""
        deadline = time.monotonic() + seconds
        while not self.held():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._renewed.clear()
            try:
                await asyncio.wait_for(self._renewed.wait(), left)
            except TimeoutError:
                return False
        return True

    def holds(self, epoch: int) -> bool:
        """Whether a group opened at `epoch` may acknowledge a load now."""
        return epoch == self.epoch and time.time() < self.until

    def refusal(self) -> LoadError:
        """The error of a load a replicated group may not acknowledge for want of the lease."""
        return LoadError(f"[CANCELLED]group commit load not acknowledged: {self.why_not()}")

    def why_not(self) -> str:
        if not self.until:
            return "this BE holds no write lease from the FE yet (no heartbeat since it started)"
        ago = time.time() - self.until
        if ago > 0:
            return f"this BE's write lease from the FE expired {ago:.1f} s ago (no heartbeat from the FE)"
        return "this BE's write lease from the FE lapsed while the group was open"


@dataclass
class ReplicaFile:
    path: Path
    owner: int
    owner_start: int
    db_id: int
    table_id: int
    label: str


class ReplicaStore:
    """This BE's side of WAL replication: the owner's client and the holder's copies."""

    def __init__(self, be):
        self.be = be
        self.root = be.cfg.be_path / "wal_replica"
        self._rpc: RpcClient | None = None
        self._locks: dict[str, asyncio.Lock] = {}
        self._sizes: dict[str, int] = {}
        self._task: asyncio.Task | None = None
        self._replaying: set[str] = set()
        self._tasks: set[asyncio.Task] = set()
        self.lease = WalLease()

    def spawn(self, coro) -> asyncio.Task:
        """A background task of this store (cancelled at stop)."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return task

    @property
    def rpc(self) -> RpcClient:
        if self._rpc is None:
            self._rpc = self.be.peer_client(limit_per_host=64)
        return self._rpc

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._sweep_loop())

    async def stop(self) -> None:
        tasks = [t for t in (self._task, *self._tasks) if t is not None]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._rpc is not None:
            await self._rpc.close()

    def routes(self) -> list:
        return [
            web.post("/api/_internal/wal_replica/append", self.handle_append),
            web.post("/api/_internal/wal_replica/drop", self.handle_drop),
        ]

    # --- owner side ----------------------------------------------------------------
    def replicas_for(self, table: Table | None) -> int:
        """R for a new group of `table`: replication_num capped at the BEs that may take loads."""
        r = replication_num(table)
        if r <= 1:
            return 1
        return min(r, 1 + len(self.be.peers))

    async def replicas_for_new_group(self, table: Table | None) -> int:
        """`replicas_for`, once this BE knows its peers and holds its write lease: a replicated
        table's new group waits (within its load's deadline) for the FE's first heartbeat since
        this BE started, which lists them (before it the cap would make R = 1 and acknowledge
        loads with one copy), and for the lease, which the FE grants from the heartbeat after a
        good one: right after a start, or a heartbeat gap, the loads wait for it instead of being
        refused. A lease that does not come within two heartbeats refuses the group's loads."""
        if replication_num(table) <= 1:
            return self.replicas_for(table)
        await self.be.peers_known.wait()
        if self.replicas_for(table) > 1 and not await self.lease.wait_held(self.lease_wait_s()):
            raise self.lease.refusal()
        return self.replicas_for(table)  # the peers as the heartbeat that granted it lists them

    def lease_wait_s(self) -> float:
        """How long a new replicated group waits for a lease: two heartbeats and a second."""
        try:
            interval = float(self.be.identity.get("heartbeat_interval_s") or 5)
        except (TypeError, ValueError):
            interval = 5.0
        return 2 * interval + 1

    def new_set(self, group, table: Table) -> ReplicaSet | None:
        r = self.replicas_for(table)
        if r <= 1:
            return None
        peers = list(self.be.peers)
        random.shuffle(peers)
        peers.sort(key=lambda p: not (p.get("alive") and p.get("writable")))  # healthy ones first
        return ReplicaSet(self, group, table.name, r, [str(p["addr"]) for p in peers])

    def release(self, group, replicas: ReplicaSet) -> None:
        """The group is committed: stop sending and tell its peers to drop their copies."""
        addrs = replicas.close()
        for addr in addrs:
            self.spawn(self._tell_drop(addr, group.label))

    async def _tell_drop(self, addr: str, label: str) -> None:
        try:
            await self.rpc.call_json(
                "POST",
                f"http://{addr}/api/_internal/wal_replica/drop",
                json={"owner": self.be.backend_id, "labels": [label]},
                headers={TOKEN_HEADER: self.be.token},
                timeout_s=float(self.be.cfg.be_wal_replica_timeout_second),
            )
        except Exception as e:  # noqa: BLE001 - the holder learns it from the FE instead
            log.info("could not tell %s to drop its WAL copy of %s: %s", addr, label, e)

    # --- holder side ----------------------------------------------------------------
    def _authorized(self, request: web.Request) -> bool:
        token = self.be.token
        return bool(token) and request.headers.get(TOKEN_HEADER, "") == token

    def _path(self, owner: int, owner_start: int, db_id: int, table_id: int, label: str) -> Path:
        if not label.replace("_", "").isalnum():
            raise ValueError(f"bad group label {label!r}")
        return self.root / str(owner) / f"{db_id}_{table_id}_{owner_start}_{label}"

    async def handle_append(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return web.json_response({"status": "ERROR", "message": "invalid token"}, status=403)
        q = request.query
        try:
            path = self._path(
                int(q["owner"]), int(q["owner_start"]), int(q["db_id"]), int(q["table_id"]), q["label"]
            )
            offset = int(q["offset"])
        except (KeyError, ValueError) as e:
            return web.json_response({"status": "ERROR", "message": f"bad request: {e}"}, status=400)
        # Read here, not with request.read(): aiohttp caps that at 1 MiB.
        buf = bytearray()
        async for chunk in request.content.iter_chunked(1 << 20):
            buf += chunk
            if len(buf) > MAX_CALL_BYTES:
                return web.json_response(
                    {"status": "ERROR", "message": "WAL copy call too large"}, status=413
                )
        body = bytes(buf)
        key = str(path)
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            size = self._sizes.get(key)
            if size is None:
                size = path.stat().st_size if path.exists() else 0
            if offset != size and offset != 0:
                return web.json_response(
                    {"status": "ERROR", "message": f"offset {offset} but the copy holds {size} bytes"},
                    status=409,
                )
            await asyncio.to_thread(_write_at, path, offset, body)
            self._sizes[key] = offset + len(body)
        self.be.metrics.inc("galene_be_wal_replica_bytes_total", len(body))
        return web.json_response({"status": "OK", "size": offset + len(body)})

    async def handle_drop(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return web.json_response({"status": "ERROR", "message": "invalid token"}, status=403)
        p = await request.json()
        owner = int(p.get("owner") or 0)
        labels = {str(x) for x in p.get("labels") or []}
        for f in self.files():
            if f.owner == owner and f.label in labels:
                await self._delete(f)
        return web.json_response({"status": "OK"})

    def files(self) -> list[ReplicaFile]:
        out = []
        if not self.root.exists():
            return out
        for owner_dir in self.root.iterdir():
            if not owner_dir.is_dir() or not owner_dir.name.isdigit():
                continue
            for p in owner_dir.iterdir():
                parts = p.name.split("_", 3)
                if len(parts) != 4 or not all(x.isdigit() for x in parts[:3]):
                    continue
                out.append(
                    ReplicaFile(p, int(owner_dir.name), int(parts[2]), int(parts[0]), int(parts[1]), parts[3])
                )
        return out

    async def _delete(self, f: ReplicaFile) -> None:
        key = str(f.path)
        async with self._locks.setdefault(key, asyncio.Lock()):
            try:
                os.unlink(f.path)
            except FileNotFoundError:
                pass
            self._sizes.pop(key, None)
        self._locks.pop(key, None)

    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_INTERVAL_S)
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - try again next round
                log.info("WAL replica sweep: %s", e)

    async def sweep(self) -> None:
        files = await asyncio.to_thread(self.files)
        files = [f for f in files if str(f.path) not in self._replaying]
        if not files or not self.be.backend_id:
            return
        groups = []
        for f in files:
            try:
                size = f.path.stat().st_size
            except FileNotFoundError:
                continue
            groups.append(
                {
                    "owner": f.owner,
                    "owner_start": f.owner_start,
                    "db_id": f.db_id,
                    "table_id": f.table_id,
                    "label": f.label,
                    "bytes": size,
                }
            )
        status, body = await self.be.fe_call(
            "POST",
            "/api/_internal/group_commit/replicas",
            {"backend_id": self.be.backend_id, "groups": groups},
            timeout_s=5.0,
        )
        if status != 200 or not isinstance(body, dict) or body.get("status") != "OK":
            raise GaleneError(f"FE answered HTTP {status} {body}")
        verdicts = body.get("groups") or {}
        for f in files:
            verdict = verdicts.get(f.label)
            if verdict == "DROP":
                await self._delete(f)
            elif verdict == "TAKEOVER":
                self._replaying.add(str(f.path))
                self.spawn(self._take_over(f))

    async def _take_over(self, f: ReplicaFile) -> None:
        """Replay a dead owner's group from this copy and commit it under its label."""
        manager = self.be.group_commit
        try:
            entries = await wal_entries(f.path)
            group = Group(db_id=f.db_id, table_id=f.table_id, label=f.label, table=None)
            if entries:
                t0 = time.monotonic()
                try:
                    txn_id = await manager.committer.commit_group(group, entries)
                except TableDropped as e:
                    log.warning("WAL copy %s: %s; its rows are dropped", f.path.name, e)
                else:
                    log.info(
                        "WAL copy of group %s (owner %s): %d record(s) committed by txn %s in %.1f s",
                        f.label, f.owner, len(entries), txn_id, time.monotonic() - t0,
                    )  # fmt: skip
                    self.be.metrics.inc("galene_be_wal_replica_takeovers_total")
            await self._delete(f)
        finally:
            self._replaying.discard(str(f.path))


def _write_at(path: Path, offset: int, data: bytes) -> None:
    """Write `data` at `offset` (truncating what follows) and fdatasync; a new file's name is
    made durable by an fsync of its directory."""
    new = not path.exists()
    if new:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.ftruncate(fd, offset)
        os.pwrite(fd, data, offset)
        os.fdatasync(fd)
    finally:
        os.close(fd)
    if new:
        fsync_path(path.parent)
