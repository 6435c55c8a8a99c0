"""Backend liveness as the FE sees it: heartbeats, status, and the choice of a BE for a load.

Which backends exist is journaled metadata (`CatalogState.backends`); whether one is alive
right now is runtime state kept here and never journaled. Heartbeats go through the
deadline client, and a BE that misses `max_backend_heartbeat_failure_times` in a row is
marked not alive until a heartbeat succeeds again. A heartbeat answer carries the BE's own
view of its write path (ingest worker, last WAL fsync, event-loop lag), the bytes it received
per table (group-commit affinity, `fe/load_routing.py`) and, while it is decommissioned, its
drain: a decommissioned BE is dropped by itself once it holds no group and no WAL file.
Whether a BE can *write* is the canary's (`fe/canary.py`): loads go only to BEs that are
alive, writable, not decommissioned and not `disable_load`.

Joining: a BE the FE has not heard from yet (it was just added, or this FE just started, as
under `galene start`, whose FE and BE start side by side) is heartbeated every
`JOIN_PROBE_S` instead of every interval, and so is a BE that is down, so one that comes up
is alive within that; the first good heartbeat has the canary probe it at once. A load that
finds no BE to take it while one is still joining (no answer yet, registered less than
`JOIN_WAIT_S` ago) waits for it instead of failing: `galene start` answers SQL as soon as its
FE is up, and a load sent then must not fail because the BE came up a moment later. The node
is ready for loads (`load_ready`: /api/health, the banner) once a BE that may take a load has
passed a canary since it joined; never probed is not a reason to route around it (Doris
routes to an alive BE), only a failed canary is.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from dataclasses import dataclass, field

from galene.catalog.model import Backend
from galene.fe.load_routing import GroupCommitAffinity
from galene.fe.wal_replicas import wal_lease_s
from galene.net.failure import FailureDetector

log = logging.getLogger(__name__)

JOIN_PROBE_S = 0.5  # heartbeat cadence of a BE that is not alive (joining, restarting, down)
JOIN_WAIT_S = 30.0  # how long a load may wait for a BE that has not answered yet


@dataclass
class BackendRuntime:
    alive: bool = False
    http_port: int = 0
    be_port: int = 0
    brpc_port: int = 0
    last_heartbeat: float = 0.0
    last_start_time: float = 0.0
    err_msg: str = ""
    version: str = ""
    cpu_cores: int = 0
    heartbeat_failures: int = 0
    # Why the BE's process exited, as its supervisor reported it; kept in ErrMsg (ahead of
    # later heartbeat failures, which only say the port is closed) until a heartbeat succeeds.
    exit_reason: str = ""
    extra: dict = field(default_factory=dict)
    # The BE's own health (its heartbeat answer): ingest worker, WAL fsync age, loop lag.
    health: dict = field(default_factory=dict)
    drain: dict | None = None
    # The write canary (fe/canary.py). A BE is writable until its canary fails
    # be_canary_failure_times rounds in a row; the first good canary makes it writable again.
    writable: bool = True
    canary_failures: int = 0
    last_canary_time: float = 0.0
    canary_latency_ms: float = 0.0
    canary_error: str = ""
    canary_stages: dict = field(default_factory=dict)
    canary_peers: dict = field(default_factory=dict)
    failing_since: float = 0.0  # time.time() of the first failed heartbeat in a row
    txns_aborted: bool = False  # its PREPARE txns were aborted in this run of failures
    # When this FE first knew of it (its start, or ADD BACKEND): the joining grace counts from it.
    registered_at: float = field(default_factory=time.monotonic)
    next_heartbeat: float = 0.0  # time.monotonic() its next heartbeat is due
    # Its latest canary since it last became alive (or restarted) succeeded: `load_ready`.
    canary_ok: bool = False


class BackendMonitor:
    def __init__(self, fe, *, interval_s: float, failure_threshold: int):
        self.fe = fe
        self.interval_s = interval_s
        self.detector = FailureDetector(threshold=failure_threshold)
        self.runtime: dict[int, BackendRuntime] = {}
        self._rr = itertools.count()
        self._task: asyncio.Task | None = None
        self._wake = asyncio.Event()
        self._joined = asyncio.Event()
        self.affinity = GroupCommitAffinity()
        # The latest write lease (FE wall clock) each BE may hold (fe/wal_replicas.py); kept
        # after a BE is dropped, which may still be running.
        self.lease_until: dict[int, float] = {}
        # A previous FE process may have granted a lease just before it stopped.
        self.inherited_lease_until = time.time() + wal_lease_s(interval_s)

    def status(self, be_id: int) -> BackendRuntime:
        return self.runtime.setdefault(be_id, BackendRuntime())

    async def heartbeat_once(self, be: Backend) -> None:
        rt = self.status(be.id)
        peer = f"{be.host}:{be.heartbeat_port}"
        payload = {
            "cluster_id": self.fe.store.cluster_id,
            "token": self.fe.store.token,
            "fe_host": self.fe.host,
            "fe_http_port": self.fe.http_port,
            "backend_id": be.id,
            "heartbeat_interval_s": self.interval_s,
            "be_host": be.host,
            "decommissioned": be.decommissioned,
            "peers": self.wal_peers(be.id),
        }
        if rt.heartbeat_failures == 0:
            # Granted only after a good heartbeat, and noted before it is sent: a heartbeat
            # whose answer is lost may still have reached the BE.
            until = time.time() + wal_lease_s(self.interval_s)
            self.lease_until[be.id] = max(self.lease_until.get(be.id, 0.0), until)
            payload["wal_lease_until"] = until
        try:
            status, body = await self.fe.rpc.call_json(
                "POST",
                f"http://{peer}/api/_internal/heartbeat",
                json=payload,
                timeout_s=max(1.0, min(self.interval_s, 5.0)),
            )
            if status != 200 or not isinstance(body, dict) or body.get("status") != "OK":
                raise RuntimeError(f"heartbeat refused: HTTP {status} {body}")
        except Exception as e:  # noqa: BLE001 - any failure counts; the detector decides when it is down
            self.detector.record_failure(peer, str(e))
            if not rt.heartbeat_failures:
                rt.failing_since = time.time()
            rt.heartbeat_failures += 1
            rt.err_msg = (f"{rt.exit_reason} (heartbeat: {e})" if rt.exit_reason else str(e))[:500]
            if self.detector.is_down(peer):
                rt.alive = False
            await self._abort_txns_if_down_long(be, rt)
            return
        started = float(body.get("start_time", 0) or 0)
        if rt.last_start_time and started and abs(started - rt.last_start_time) > 0.001:
            # Restarted: the loads it coordinated died with the old process (its group-commit
            # txns are the BE's own to recover: recover_group_txns, with their WAL).
            await asyncio.to_thread(
                self.fe.catalog.txns.abort_backend_txns,
                be.id,
                "coordinate BE restart",
                begun_before=started,
                skip_group_commit=True,
            )
        self.detector.record_success(peer)
        joined = not rt.alive or bool(started and abs(started - rt.last_start_time) > 0.001)
        rt.alive = True
        rt.heartbeat_failures = 0
        rt.txns_aborted = False
        rt.err_msg = ""
        rt.exit_reason = ""
        rt.last_heartbeat = time.time()
        rt.http_port = int(body.get("http_port", 0))
        rt.be_port = int(body.get("be_port", 0))
        rt.brpc_port = int(body.get("brpc_port", 0))
        rt.version = str(body.get("version", ""))
        rt.cpu_cores = int(body.get("cpu_cores", 0) or 0)
        rt.last_start_time = float(body.get("start_time", 0) or 0)
        rt.health = body.get("health") if isinstance(body.get("health"), dict) else {}
        self._note_table_bytes(body.get("table_bytes"))
        rt.drain = body.get("drain") if isinstance(body.get("drain"), dict) else None
        if joined:
            # A BE that came up (first answer, back from down, or restarted): its write path is
            # unproven in this process until a canary passes, which runs now.
            rt.canary_ok = False
            self.fe.canary.probe_now(be.id)
            self._note_joined()
        if be.decommissioned and rt.drain and rt.drain.get("drained"):
            await self._finish_decommission(be)

    async def _abort_txns_if_down_long(self, be: Backend, rt: BackendRuntime) -> None:
        """Doris' abort_txn_after_lost_heartbeat_time_second: a BE whose heartbeats have failed
        that long gets its PREPARE txns aborted ("coordinate BE is down"), so their labels are
        free for a retry elsewhere; if it comes back, its commits of them are refused."""
        limit = float(self.fe.cfg.abort_txn_after_lost_heartbeat_time_second)
        if rt.alive or rt.txns_aborted or not rt.failing_since or time.time() - rt.failing_since < limit:
            return
        rt.txns_aborted = True
        n = await asyncio.to_thread(self.fe.catalog.txns.abort_backend_txns, be.id, "coordinate BE is down")
        if n:
            log.warning("backend %s:%s down for %.0f s: aborted %d txn(s)", be.host, be.heartbeat_port, limit, n)

    def _note_table_bytes(self, reported) -> None:
        if not isinstance(reported, list):
            return
        for item in reported:
            try:
                db, table, nbytes = str(item[0]), str(item[1]), int(item[2])
                table_id = self.fe.catalog.table(db, table).id
            except Exception:  # noqa: BLE001, S112 - a table dropped meanwhile, or a bad report
                continue
            self.affinity.record_bytes(table_id, nbytes)

    async def _finish_decommission(self, be: Backend) -> None:
        """A decommissioned BE that holds nothing any more is dropped (as Doris does once its
        replicas are gone): its group-commit groups are committed and its WAL is empty."""
        dropped = await asyncio.to_thread(self.fe.catalog.drop_backend_by_id, be.id)
        if dropped:
            log.info("backend %s:%s decommissioned and drained: dropped", be.host, be.heartbeat_port)
            self.affinity.forget_backend(be.id)
            self.runtime.pop(be.id, None)

    def process_event(self, host: str, heartbeat_port: int, event: str, reason: str) -> None:
        """A supervisor's news about a BE process it runs: "exited" marks it not alive at once
        (with the reason in ErrMsg) instead of after missed heartbeats; "started" heartbeats it
        now, so it is alive again as soon as it answers."""
        for be in self.fe.state.backends.values():
            if be.host == host and be.heartbeat_port == heartbeat_port:
                if event == "exited":
                    rt = self.status(be.id)
                    rt.alive = False
                    rt.exit_reason = reason[:400]
                    rt.err_msg = reason[:500]
                    self.detector.record_failure(f"{host}:{heartbeat_port}", reason)
                    log.warning("backend %s:%s: %s", host, heartbeat_port, reason)
                elif event == "started":
                    self.poke()

    async def heartbeat_all(self, due_only: bool = False) -> None:
        """Heartbeat every BE (or only those due): an alive one every interval, one that is not
        alive every JOIN_PROBE_S (at most the interval)."""
        now = time.monotonic()
        backends = [
            be
            for be in list(self.fe.state.backends.values())
            if not due_only or self.status(be.id).next_heartbeat <= now
        ]
        if backends:
            await asyncio.gather(*(self.heartbeat_once(be) for be in backends))
        done = time.monotonic()  # as before: the next one an interval after this round ended
        for be in backends:
            rt = self.status(be.id)
            rt.next_heartbeat = done + (self.interval_s if rt.alive else min(self.interval_s, JOIN_PROBE_S))

    def _next_due_in(self) -> float:
        due = [self.status(be.id).next_heartbeat for be in list(self.fe.state.backends.values())]
        return max(0.0, min([time.monotonic() + self.interval_s, *due]) - time.monotonic())

    def poke(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        poked = True  # the first round: every BE
        while True:
            try:
                await self.heartbeat_all(due_only=not poked)
            except Exception:  # keep the loop alive whatever one round did
                log.exception("heartbeat round failed")
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=self._next_due_in())
                poked = True
            except TimeoutError:
                poked = False

    # --- joining BEs and readiness --------------------------------------------------
    def _note_joined(self) -> None:
        """Wake the loads waiting for a joining BE (wait_for_joining)."""
        self._joined.set()
        self._joined = asyncio.Event()

    def joining(self) -> list[Backend]:
        """BEs that may take loads once they answer, have never answered this FE, and were
        registered less than JOIN_WAIT_S ago."""
        now = time.monotonic()
        out = []
        for be in list(self.fe.state.backends.values()):
            rt = self.status(be.id)
            if be.decommissioned or be.disable_load or rt.last_heartbeat:
                continue
            if now - rt.registered_at < JOIN_WAIT_S:
                out.append(be)
        return out

    async def wait_for_joining(self) -> None:
        """Before a load fails for want of a BE: while none may take it and one is joining, wait
        for that one's first answer (at most until its JOIN_WAIT_S is up)."""
        while not self.load_available():
            joining = self.joining()
            if not joining:
                return
            until = max(self.status(be.id).registered_at for be in joining) + JOIN_WAIT_S
            wait_s = max(0.01, min(1.0, until - time.monotonic()))  # re-checked every second at least
            try:  # (a BE dropped or disabled meanwhile)
                await asyncio.wait_for(self._joined.wait(), timeout=wait_s)
            except TimeoutError:
                pass

    def load_ready(self) -> bool:
        """A load sent now would succeed: a BE may take it and its write path has passed a canary
        since it joined (with the canary off: since it answered a heartbeat)."""
        avail = self.load_available()
        if not self.fe.canary.enabled:
            return bool(avail)
        return any(rt.canary_ok for _, rt in avail)

    def start(self) -> None:
        self._task = asyncio.create_task(self.run(), name="fe-heartbeat")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def load_available(self) -> list[tuple[Backend, BackendRuntime]]:
        """BEs that may take a load: alive, writable (canary), not decommissioned, loads enabled."""
        out = []
        for be in sorted(self.fe.state.backends.values(), key=lambda b: b.id):
            rt = self.status(be.id)
            if rt.alive and rt.http_port and rt.writable and not be.decommissioned and not be.disable_load:
                out.append((be, rt))
        return out

    def wal_peers(self, be_id: int) -> list[dict]:
        """The BEs other than `be_id` that may hold WAL replicas (be/wal_replica.py): every
        member not decommissioned and not `disable_load`, with whether it is alive and
        writable now (the owner tries those first). Down members count too: replication_num
        is capped at the cluster's size, not at its health, so two broken peers of three fail
        loads instead of leaving one copy. So do members that have not answered a heartbeat
        yet (their HTTP port unknown: listed at the port the FE heartbeats, which the BE's
        HTTP app answers too); leaving them out made the first heartbeats after a cluster
        start list no peers, and R=3 groups acknowledged loads with one copy."""
        out = []
        for be in sorted(self.fe.state.backends.values(), key=lambda b: b.id):
            rt = self.status(be.id)
            if be.id == be_id or be.decommissioned or be.disable_load:
                continue
            port = rt.http_port or be.heartbeat_port
            out.append({"id": be.id, "addr": f"{be.host}:{port}", "alive": rt.alive, "writable": rt.writable})
        return out

    def group_commit_owner(self, table) -> tuple[Backend, BackendRuntime] | None:
        """The table's group-commit owner among the load-available BEs (fe/load_routing.py)."""
        avail = {be.id: (be, rt) for be, rt in self.load_available()}
        owner = self.affinity.owner(table.id, table.properties, list(avail))
        return avail.get(owner) if owner is not None else None

    def choose_for_load(self) -> tuple[Backend, BackendRuntime] | None:
        avail = self.load_available()
        if not avail:
            return None
        return avail[next(self._rr) % len(avail)]
