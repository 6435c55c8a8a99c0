"""The owner's copies of one group's WAL records (`ReplicaSet`, replication_num > 1).

The owner BE of a replicated group (be/wal_replica.py has the whole protocol) keeps the group's
records in order and runs one sender per peer, which sends every record the peer does not have
yet as one call carrying its byte offset (the peer appends only at that offset), so every copy
is a prefix of the group's record sequence and the longest copy holds every acknowledged record.
`append` returns once ⌊R/2⌋ peers fsynced a record (the owner's own copy is the last one). A
peer whose call fails or misses `be_wal_replica_timeout_second` is dropped and replaced by a BE
not tried yet (sent the group's records from the start); too few peers left for a quorum fails
the waiting and later loads of the group at once with Doris' text.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from galene.common.errors import GaleneError, LoadError
from galene.net.client import TOKEN_HEADER
from galene.net.deadline import DeadlineExceeded

log = logging.getLogger(__name__)

# One append call carries records up to about this many bytes (a replacement catching up on a
# large group sends it in several calls); a single record is always sent whole.
CALL_BYTES = 8 << 20


def _reason(e: BaseException) -> str:
    if isinstance(e, DeadlineExceeded):
        return f"no answer within {e.seconds:g} s"
    text = str(e)
    return text if text else type(e).__name__


@dataclass
class _Peer:
    addr: str
    records: int = 0  # records the peer has fsynced
    nbytes: int = 0  # their bytes (the offset of the next call)
    failed: bool = False
    task: asyncio.Task | None = None
    wake: asyncio.Event = field(default_factory=asyncio.Event)


class ReplicaSet:
    """The peers holding copies of one group's WAL records (owner side).

    `store` is the BE's `ReplicaStore` (be/wal_replica.py: its RPC client and background
    tasks); `group` the group-commit group whose records these are (be/group_commit/group.py)."""

    def __init__(self, store, group, table_name: str, r: int, candidates: list[str]):
        self.store = store
        self.group = group
        self.table_name = table_name
        self.r = r
        self.need = r // 2  # peer copies needed besides our own
        self.log: list[bytes] = []
        self.candidates = list(candidates)  # BEs not tried yet, best first
        self.peers: list[_Peer] = []
        self.errors: dict[str, str] = {}
        self.fatal: str | None = None
        self.waiters: list[tuple[int, asyncio.Future]] = []
        self.closed = False
        for _ in range(r - 1):
            self._add_peer()

    def _add_peer(self) -> bool:
        if not self.candidates or self.closed:
            return False
        peer = _Peer(self.candidates.pop(0))
        self.peers.append(peer)
        peer.task = self.store.spawn(self._sender(peer))
        return True

    def live(self) -> list[_Peer]:
        return [p for p in self.peers if not p.failed]

    async def append(self, record: bytes) -> None:
        """Send `record` to the peers; returns once ⌊R/2⌋ of them fsynced it."""
        if self.fatal is not None:
            raise LoadError(self.fatal)
        index = len(self.log)
        self.log.append(record)
        fut = asyncio.get_running_loop().create_future()
        self.waiters.append((index, fut))
        for p in self.live():
            p.wake.set()
        self._settle()
        await fut

    def _settle(self) -> None:
        if not self.waiters:
            return
        live = self.live()
        if len(live) < self.need and self.fatal is None:
            copies = 1 + sum(1 for p in live if p.records >= len(self.log))
            detail = ", ".join(f"{a}: {r}" for a, r in self.errors.items()) or "no peer BE to write to"
            self.fatal = (
                f"failed to write enough replicas {copies}/{self.r} for table {self.table_name} "
                f"due to connection errors: {detail}"
            )
        left = []
        for index, fut in self.waiters:
            if fut.done():
                continue
            if sum(1 for p in live if p.records > index) >= self.need:
                fut.set_result(None)
            elif self.fatal is not None:
                fut.set_exception(LoadError(self.fatal))
                fut.exception()
            else:
                left.append((index, fut))
        self.waiters = left

    async def _sender(self, peer: _Peer) -> None:
        store = self.store
        g = self.group
        timeout_s = float(store.be.cfg.be_wal_replica_timeout_second)
        try:
            while not self.closed:
                if peer.records >= len(self.log):
                    peer.wake.clear()
                    await peer.wake.wait()
                    continue
                upto, size = peer.records, 0
                while upto < len(self.log) and (
                    upto == peer.records or size + len(self.log[upto]) <= CALL_BYTES
                ):
                    size += len(self.log[upto])
                    upto += 1
                body = b"".join(self.log[peer.records : upto])
                params = {
                    "owner": str(store.be.backend_id),
                    "owner_start": str(int(store.be.start_time * 1000)),
                    "db_id": str(g.db_id),
                    "table_id": str(g.table_id),
                    "label": g.label,
                    "offset": str(peer.nbytes),
                }
                try:
                    status, _, payload = await store.rpc.call(
                        "POST",
                        f"http://{peer.addr}/api/_internal/wal_replica/append",
                        data=body,
                        params=params,
                        headers={TOKEN_HEADER: store.be.token},
                        timeout_s=timeout_s,
                    )
                    if status != 200:
                        raise GaleneError(f"HTTP {status} {payload[:200].decode(errors='replace')}")
                except asyncio.CancelledError:
                    raise
                except Exception as e:  # noqa: BLE001 - any failure drops the peer from the set
                    self._drop(peer, _reason(e))
                    return
                peer.records = upto
                peer.nbytes += len(body)
                self._settle()
        except asyncio.CancelledError:
            pass

    def _drop(self, peer: _Peer, reason: str) -> None:
        peer.failed = True
        self.errors[peer.addr] = reason
        log.warning("WAL replica %s of group %s dropped: %s", peer.addr, self.group.label, reason)
        self.store.be.metrics.inc("galene_be_wal_replica_dropped_total")
        self._add_peer()  # a replacement gets the group's records from the start
        self._settle()

    def close(self) -> list[str]:
        """Stop sending; the addresses of the peers that may hold a copy."""
        self.closed = True
        for p in self.peers:
            if p.task is not None:
                p.task.cancel()
        return [p.addr for p in self.peers]
