"""What a BE knows about its own write path, and the FE's write canary through it.

Owns `BeHealth`:

* a watchdog of the ingest worker (the process that writes every group-commit WAL): it is
  pinged every second, and a request it has not answered for longer than
  `be_canary_timeout_second` means it (or its disk) is stuck; the event loop's lag; the age
  of the last WAL fsync; whether the FE can be reached. `GET /api/health` answers 503 with the
  reason while the write path is known broken, so a load balancer's health check drops this
  BE too; the FE's heartbeat answer carries the same facts (SHOW BACKENDS).
* the canary (`POST /api/_internal/canary`, token-authenticated): a one-row load through the
  BE's real write path, each stage under its own deadline within the canary's budget: header
  parse → FE txn begin (a CANARY txn: never journaled) → parse → routing → WAL record +
  fdatasync in the ingest worker → rowset write + fsync to the storage root → FE commit; with
  `peers` given, the BE→BE forward path to each of them as well. The answer carries per-stage
  timings, or the stage that failed and the peer it waited on (`wal_fsync: no answer from
  ingest worker in 4.7 s`). The canary's files are deleted after the answer: it leaves no data
  and no journal entry.
* the decommission drain: once the FE's heartbeat says this BE is decommissioned, every open
  group-commit group is closed (flushed and committed), spare groups are dropped and new
  group-commit loads run as plain loads; `drain_status()` tells the FE when nothing is left
  (no group, no WAL file, no load in flight), and the FE then drops the BE.
* the bytes received per table since the last heartbeat (the FE's group-commit affinity) and
  the time of the last stream load.
"""

from __future__ import annotations

import asyncio
import logging
import time

from aiohttp import web

from galene.be.stream_load import storage_answer
from galene.be.wal import encode_record, list_wal_files
from galene.catalog.model import Column, Partition, Table
from galene.common.types import ColumnType
from galene.load.options import LoadOptions
from galene.load.parse import parse_body
from galene.load.routing import route_rows
from galene.net import inflight
from galene.net.client import TOKEN_HEADER
from galene.net.deadline import DeadlineExceeded
from galene.net.server import read_json_object
from galene.storage.rowset import delete_rowset_files, write_rowsets

log = logging.getLogger(__name__)

WATCHDOG_PERIOD_S = 1.0
LAG_PERIOD_S = 0.25
# Ids the canary's rows are written under: no database or table ever gets id 0.
CANARY_TABLE = Table(
    id=0,
    db_id=0,
    name="__galene_canary",
    columns=[
        Column(name="id", type=ColumnType(name="BIGINT"), nullable=False, is_key=True),
        Column(name="note", type=ColumnType(name="VARCHAR", length=64)),
    ],
    key_columns=["id"],
    partitions=[Partition(id=0, name="__galene_canary", tablet_ids=[0])],
    distribution_columns=["id"],
    buckets=1,
)
CANARY_OPTIONS = LoadOptions(column_separator=b",")


class StageFailed(Exception):
    def __init__(self, stage: str, message: str):
        super().__init__(f"{stage}: {message}")
        self.stage = stage


class BeHealth:
    def __init__(self, be):
        self.be = be
        cfg = be.cfg
        self.canary_timeout_s = float(cfg.be_canary_timeout_second or 5)
        self.loop_lag_ms = 0.0  # the largest lag of the last few seconds
        self._lags: list[tuple[float, float]] = []
        self.table_bytes: dict[tuple[str, str], int] = {}  # (db, table) -> bytes since the last heartbeat
        self.last_stream_load_time = 0.0
        self.in_flight_loads = 0
        self.draining = False
        self.worker_error = ""
        self.canary_dir = cfg.be_path / "canary"
        self._tasks: list[asyncio.Task] = []
        self._background: set[asyncio.Task] = set()

    # --- lifecycle ------------------------------------------------------------------
    def start(self) -> None:
        self.canary_dir.mkdir(parents=True, exist_ok=True)
        for stale in self.canary_dir.iterdir():  # a canary of the previous run
            try:
                stale.unlink()
            except OSError:
                pass
        self._tasks = [
            asyncio.create_task(self._lag_loop(), name="be-health-loop-lag"),
            asyncio.create_task(self._watchdog(), name="be-health-ingest-watchdog"),
        ]

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, *self._background, return_exceptions=True)

    def routes(self) -> list:
        return [
            web.post("/api/_internal/canary", self.handle_canary),
            web.post("/api/_internal/probe", self.handle_probe),
        ]

    # --- what is measured ---------------------------------------------------------------
    async def _lag_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            start = loop.time()
            await asyncio.sleep(LAG_PERIOD_S)
            lag = max(0.0, loop.time() - start - LAG_PERIOD_S) * 1000
            now = time.monotonic()
            self._lags = [(t, v) for t, v in self._lags if t > now - 5] + [(now, lag)]
            self.loop_lag_ms = max(v for _, v in self._lags)

    async def _watchdog(self) -> None:
        """Ping the ingest worker every second (a stuck worker leaves the ping unanswered)."""
        while True:
            await asyncio.sleep(WATCHDOG_PERIOD_S)
            gc = self.be.group_commit
            if gc is None:
                continue
            worker = gc.worker
            try:
                if not worker.running():
                    await asyncio.wait_for(worker.ensure_started(), self.canary_timeout_s)
                if worker.oldest_pending() is None:
                    fut = worker.request("ping")
                    fut.add_done_callback(_retrieve)
                self.worker_error = ""
            except Exception as e:  # noqa: BLE001 - reported by /api/health and the heartbeat
                self.worker_error = f"ingest worker did not start: {e}"

    def worker_stuck(self) -> str:
        """Why the ingest worker is known stuck, or ''."""
        gc = self.be.group_commit
        if gc is None:
            return ""
        if self.worker_error:
            return self.worker_error
        oldest = gc.worker.oldest_pending()
        if oldest is not None and oldest[1] > self.canary_timeout_s:
            return f"ingest worker (pid {gc.worker.pid}) has not answered a {oldest[0]} request for {oldest[1]:.1f} s"
        return ""

    def fe_unreachable(self) -> str:
        be = self.be
        if not be.backend_id:
            return ""  # not in a cluster yet: nothing to reach
        peer = be.fe_peer()
        detector = be.rpc.detector if be.rpc is not None else None
        if detector is not None and detector.is_down(peer):
            return f"FE {peer} unreachable: {detector.status(peer)['last_error']}"[:300]
        silent = time.time() - be.last_heartbeat if be.last_heartbeat else 0.0
        bound = max(15.0, 3 * float(be.identity.get("heartbeat_interval_s") or 5))
        if be.last_heartbeat and silent > bound:
            return f"no heartbeat from FE {peer} for {silent:.0f} s"
        return ""

    def problems(self) -> list[str]:
        return [p for p in (self.worker_stuck(), self.fe_unreachable()) if p]

    def report(self) -> dict:
        """The BE's own health, for the heartbeat answer (SHOW BACKENDS) and /api/health."""
        gc = self.be.group_commit
        worker = gc.worker if gc is not None else None
        last_fsync = worker.last_fsync if worker is not None else 0.0
        problems = self.problems()
        return {
            "healthy": not problems,
            "problems": problems,
            "ingest_worker_alive": bool(worker is not None and worker.running() and not self.worker_stuck()),
            "ingest_worker_pid": worker.pid if worker is not None else None,
            "wal_fsync_age_s": round(time.monotonic() - last_fsync, 3) if last_fsync else None,
            "loop_lag_ms": round(self.loop_lag_ms, 1),
            "in_flight_loads": self.in_flight_loads,
            "last_stream_load_time": self.last_stream_load_time,
        }

    def take_table_bytes(self) -> list[list]:
        """[db, table, bytes] received since the last call (the heartbeat answer)."""
        out, self.table_bytes = self.table_bytes, {}
        return [[db, table, n] for (db, table), n in out.items()]

    def note_load(self, db: str, table: str, nbytes: int) -> None:
        self.last_stream_load_time = time.time()
        if nbytes > 0:
            key = (db, table)
            self.table_bytes[key] = self.table_bytes.get(key, 0) + nbytes

    async def handle_health(self, request: web.Request) -> web.Response:
        problems = self.problems()
        if problems:
            return web.json_response({"status": "Unhealthy", "msg": "; ".join(problems)}, status=503)
        return web.json_response({"status": "OK", "msg": "To Be Added"})

    # --- decommission -----------------------------------------------------------------
    def set_draining(self, draining: bool) -> None:
        if draining == self.draining:
            return
        self.draining = draining
        gc = self.be.group_commit
        if not draining or gc is None:
            log.info("decommission of this BE cancelled: group commit resumes")
            return
        log.info("this BE is decommissioned: flushing every group-commit group")
        gc.close_groups()

    async def drain_status(self) -> dict:
        gc = self.be.group_commit
        if gc is None:
            return {"drained": False}
        wal_files = len(await asyncio.to_thread(list_wal_files, gc.wal_root))
        # Copies of other BEs' WAL records (replication_num > 1) are kept until their groups
        # commit: a decommissioned BE gets no new ones and is not dropped while it holds any.
        wal_copies = len(await asyncio.to_thread(self.be.wal_replicas.files))
        open_groups = gc.open_groups()
        busy = gc.busy_tasks()
        drained = (
            self.draining
            and gc.ready.is_set()
            and not open_groups
            and not busy
            and not wal_files
            and not wal_copies
            and not self.in_flight_loads
        )
        return {
            "draining": self.draining,
            "drained": drained,
            "open_groups": open_groups,
            "group_commit_tasks": busy,
            "wal_files": wal_files,
            "wal_copies": wal_copies,
            "in_flight_loads": self.in_flight_loads,
        }

    # --- the write canary ---------------------------------------------------------------
    async def handle_canary(self, request: web.Request) -> web.Response:
        t_enter = time.monotonic()
        be = self.be
        stages: dict[str, float] = {}
        if request.headers.get(TOKEN_HEADER, "") != be.token or not be.token:
            return web.json_response({"status": "ERROR", "message": "invalid token"}, status=403)
        payload = await read_json_object(request, 1 << 20)
        budget = float(payload.get("timeout_s") or self.canary_timeout_s)
        deadline = t_enter + max(0.1, budget)
        stages["headers"] = (time.monotonic() - t_enter) * 1000
        peers = [str(p) for p in payload.get("peers") or []]
        hop = asyncio.ensure_future(self._forward_hops(peers, deadline)) if peers else None
        try:
            await self._write_path(stages, deadline)
            error = None
        except StageFailed as e:
            error = e
        peer_status = await hop if hop is not None else {}
        body = {
            "status": "OK" if error is None else "FAIL",
            "stages_ms": {k: round(v, 2) for k, v in stages.items()},
            "peers": peer_status,
            "health": self.report(),
        }
        if error is not None:
            body["stage"] = error.stage
            body["error"] = str(error)
        return web.json_response(body)

    async def _stage(self, stages: dict, name: str, aw, deadline: float, peer: str):
        t0 = time.monotonic()
        left = deadline - t0
        try:
            if left <= 0:
                raise TimeoutError
            async with asyncio.timeout(left):
                result = await aw
        except (TimeoutError, DeadlineExceeded):
            close = getattr(aw, "close", None)
            if close is not None:
                close()
            raise StageFailed(name, f"no answer from {peer} in {max(left, 0):.1f} s") from None
        except StageFailed:
            raise
        except Exception as e:  # noqa: BLE001 - the stage's failure, named
            raise StageFailed(name, f"{peer}: {_text(e)}") from None
        finally:
            stages[name] = (time.monotonic() - t0) * 1000
        return result

    async def _write_path(self, stages: dict, deadline: float) -> None:
        be = self.be
        fe_peer = f"FE {be.fe_peer()}"

        async def fe(path: str, payload: dict) -> dict:
            status, body = await be.fe_call(
                "POST", path, payload, timeout_s=max(0.05, deadline - time.monotonic())
            )
            if status != 200 or not isinstance(body, dict) or body.get("status") != "OK":
                raise RuntimeError(f"HTTP {status} {body}")
            return body

        begun = await self._stage(
            stages,
            "txn_begin",
            fe("/api/_internal/canary/begin", {"backend_id": be.backend_id}),
            deadline,
            fe_peer,
        )
        txn_id = int(begun["txn_id"])
        body = f"{txn_id},canary {be.backend_id}\n".encode()

        async def parse():
            return parse_body(body, CANARY_TABLE, CANARY_OPTIONS)

        batch = await self._stage(stages, "parse", parse(), deadline, "the parser")
        if batch.num_filtered or batch.data.num_rows != 1:
            raise StageFailed("parse", f"the canary row was not parsed: {batch.errors[:1]}")

        async def route():
            return route_rows(batch, CANARY_TABLE)

        routed = await self._stage(stages, "route", route(), deadline, "routing")
        gc = be.group_commit
        stuck = self.worker_stuck()
        if stuck:  # a request older than the canary's timeout is waiting already: no need to wait again
            t0 = time.monotonic()
            stages["wal_fsync"] = 0.0
            oldest = gc.worker.oldest_pending() if gc is not None else None
            waited = oldest[1] if oldest is not None else time.monotonic() - t0
            raise StageFailed("wal_fsync", f"no answer from ingest worker in {waited:.1f} s")
        if gc is not None:
            record = encode_record(f"canary_{txn_id}", None, batch.data)
            path = str(self.canary_dir / "wal")

            async def wal():
                worker = gc.worker
                if not worker.running():
                    await worker.ensure_started()
                await worker.request("canary", path, record)

            await self._stage(stages, "wal_fsync", wal(), deadline, "ingest worker")
        written: list = []
        writing = asyncio.ensure_future(
            asyncio.to_thread(write_rowsets, be.fs, be.root, CANARY_TABLE, routed.per_tablet)
        )
        try:
            with inflight.track(
                "storage", "write", "canary rowset", be.cfg.storage_uri, deadline - time.monotonic()
            ):
                written = await self._stage(
                    stages,
                    "rowset_write",
                    storage_answer(be, writing),
                    deadline,
                    f"storage {be.cfg.storage_uri}",
                )
        except BaseException:
            writing.add_done_callback(lambda f: self._delete_late(f))
            raise
        try:
            await self._stage(
                stages,
                "txn_commit",
                fe("/api/_internal/canary/commit", {"txn_id": txn_id}),
                deadline,
                fe_peer,
            )
        finally:
            self._spawn(asyncio.to_thread(delete_rowset_files, be.fs, be.root, written))

    def _delete_late(self, fut: asyncio.Future) -> None:
        if fut.cancelled() or fut.exception() is not None:
            return
        self._spawn(asyncio.to_thread(delete_rowset_files, self.be.fs, self.be.root, fut.result()))

    def _spawn(self, aw) -> None:
        task = asyncio.ensure_future(aw)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        task.add_done_callback(_retrieve)

    # --- galene doctor: every hop from this BE, each under its own deadline -----------------
    async def handle_probe(self, request: web.Request) -> web.Response:
        """BE→FE (the txn API), BE→each peer BE (forward path), BE→storage (write, fsync, read,
        delete a probe file), BE→ingest worker: {hop: {ok, ms, error, timeout}}."""
        be = self.be
        if request.headers.get(TOKEN_HEADER, "") != be.token or not be.token:
            return web.json_response({"status": "ERROR", "message": "invalid token"}, status=403)
        p = await read_json_object(request, 1 << 20)
        seconds = float(p.get("timeout_s") or self.canary_timeout_s)
        peers = [str(x) for x in p.get("peers") or []]

        async def timed(coro, peer: str) -> dict:
            t0 = time.monotonic()
            try:
                async with asyncio.timeout(seconds):
                    await coro
            except TimeoutError:
                return {"ok": False, "timeout": True, "ms": round((time.monotonic() - t0) * 1000, 1),
                        "error": f"no answer from {peer} in {seconds:.1f} s", "deadline_s": seconds}  # fmt: skip
            except Exception as e:  # noqa: BLE001 - the hop's verdict
                return {"ok": False, "timeout": False, "ms": round((time.monotonic() - t0) * 1000, 1),
                        "error": _text(e), "deadline_s": seconds}  # fmt: skip
            return {"ok": True, "timeout": False, "ms": round((time.monotonic() - t0) * 1000, 1), "error": "",
                    "deadline_s": seconds}  # fmt: skip

        async def fe() -> None:
            txn = None
            for path in ("/api/_internal/canary/begin", "/api/_internal/canary/commit"):
                body = {} if txn is None else {"txn_id": txn}
                status, answer = await be.fe_call("POST", path, body, timeout_s=seconds)
                if status != 200 or not isinstance(answer, dict) or answer.get("status") != "OK":
                    raise RuntimeError(f"HTTP {status} {answer}")
                txn = answer.get("txn_id")

        async def peer(addr: str) -> None:
            status, _ = await be.rpc.call_json(
                "POST", f"http://{addr}/api/_internal/forward_ping", json={}, headers={TOKEN_HEADER: be.token},
                timeout_s=seconds,
            )  # fmt: skip
            if status != 200:
                raise RuntimeError(f"HTTP {status}")

        async def worker() -> None:
            gc = be.group_commit
            if gc is None:
                raise RuntimeError("no group commit manager")
            if not gc.worker.running():
                await gc.worker.ensure_started()
            await gc.worker.request("ping")

        probes = {
            f"fe {be.fe_peer()}": timed(fe(), f"FE {be.fe_peer()}"),
            f"storage {be.cfg.storage_uri}": timed(
                storage_answer(
                    be,
                    asyncio.ensure_future(asyncio.to_thread(_storage_probe, be.fs, be.root, be.backend_id)),
                ),
                f"storage {be.cfg.storage_uri}",
            ),
            "ingest worker": timed(worker(), "ingest worker"),
            **{f"be {addr}": timed(peer(addr), f"BE {addr}") for addr in peers},
        }
        results = await asyncio.gather(*probes.values())
        return web.json_response({"status": "OK", "hops": dict(zip(probes, results, strict=True))})

    async def _forward_hops(self, peers: list[str], deadline: float) -> dict[str, str]:
        """The BE→BE forward path to each peer: its forward endpoint answers a ping."""
        be = self.be

        async def one(peer: str) -> str:
            left = deadline - time.monotonic()
            if left <= 0:
                return "no time left"
            try:
                status, _ = await be.rpc.call_json(
                    "POST", f"http://{peer}/api/_internal/forward_ping", json={}, headers={TOKEN_HEADER: be.token},
                    timeout_s=left,
                )  # fmt: skip
            except DeadlineExceeded:
                return f"no answer in {left:.1f} s"
            except Exception as e:  # noqa: BLE001 - named per peer
                return _text(e)
            return "OK" if status == 200 else f"HTTP {status}"

        results = await asyncio.gather(*(one(p) for p in peers))
        return dict(zip(peers, results, strict=True))


def _storage_probe(fs, root: str, backend_id: int) -> None:
    """Write, fsync, read back and delete a small file under the storage root (a worker thread)."""
    import os
    import uuid

    from pyarrow import fs as pafs

    from galene.common.files import fsync_path

    path = (
        f"{root.rstrip('/')}/_probe/{backend_id}_{uuid.uuid4().hex}" if root else f"_probe/{uuid.uuid4().hex}"
    )
    data = os.urandom(64)
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with fs.open_output_stream(path) as out:
        out.write(data)
    if isinstance(fs, pafs.LocalFileSystem):
        fsync_path(path)
    try:
        with fs.open_input_stream(path) as inp:
            if inp.read() != data:
                raise RuntimeError(f"{path}: read back different bytes")
    finally:
        fs.delete_file(path)


def _text(e: BaseException) -> str:
    text = str(e)
    return text if text else type(e).__name__


def _retrieve(fut: asyncio.Future) -> None:
    if not fut.cancelled():
        fut.exception()
