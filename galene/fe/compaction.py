"""Compaction in the FE: what to compact, when, and running it.

Galene's tablets live in the storage root and the FE owns what a Doris BE's storage engine
decides; the merges run elsewhere: a small DUPLICATE/UNIQUE run on a BE with pyarrow
(`POST /api/_internal/compaction/merge`), anything else as an engine job
(`galene.engine.compaction`). No data rows pass through the FE.

* Policy (pure functions): a tablet's rowsets in version order; the cumulative run — the
  newest small rowsets above the tablet's newest large one (a rowset is large when it is bigger
  than everything newer than it together, so merged runs are not rewritten for every few new
  loads and a tablet keeps about log2(size) rowsets), at most `cumulative_compaction_max_deltas`
  of them; base/full runs take every rowset.
* `CompactionService`: one compaction at a time (queries keep their CPU); a background loop
  every `compaction_scheduler_interval_ms` compacts the tablets of the table with the most
  rowsets waiting once a tablet has `cumulative_compaction_min_deltas` of them, and at once
  when a load begins on a table with a tablet past half of `max_tablet_version_num` (unless
  `disable_auto_compaction`, in fe.conf/be.conf or as a table property); `ADMIN COMPACT TABLE`
  and the BE's `/api/compaction/*` on demand. The new rowset is committed with
  `CatalogService.compact_rowsets` (one journal op, no new version); the replaced files stay for
  `gc_grace_seconds` (retired files), then GC deletes them. Each tablet's run history is kept
  in memory as a Doris BE keeps it.

What compaction shows — SHOW TABLETS rows and the BE HTTP API's documents in Doris' shapes — is
`galene.fe.compaction_api`'s.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import msgspec

from galene.catalog.model import Rowset, Table
from galene.common.errors import AnalysisError, GaleneError
from galene.net.client import TOKEN_HEADER

log = logging.getLogger(__name__)

KINDS = ("cumulative", "base", "full")
# An engine job that runs longer than this is interrupted (its files are deleted).
JOB_TIMEOUT_S = 6 * 3600
# A BE's merge of a small run (at most compaction_local_max_mb of input): a second or so.
MERGE_TIMEOUT_S = 120.0
# Tablets merged by one background job, at most (one engine job per table and tick).
MAX_TABLETS_PER_JOB = 256
# Rounds woken by a table near max_tablet_version_num come at most this often.
URGENT_GAP_S = 0.2
# Doris waits this long for a manual compaction before answering "triggered" (compaction_action.cpp).
RUN_WAIT_S = 2.0

# Doris' error statuses of the compaction actions (Status::to_json: code name + message).
NOT_FOUND = "NOT_FOUND"
INTERNAL_ERROR = "INTERNAL_ERROR"
NOT_IMPLEMENTED_ERROR = "NOT_IMPLEMENTED_ERROR"
CUMULATIVE_NO_SUITABLE_VERSION = "E-2000"
BE_NO_SUITABLE_VERSION = "E-808"


# ---------------------------------------------------------------------------------------
# Policy
# ---------------------------------------------------------------------------------------


def tablet_rowsets(table: Table) -> dict[int, list[Rowset]]:
    """Each tablet's rowsets (with files), oldest first; tablets without any map to []."""
    out: dict[int, list[Rowset]] = {tid: [] for p in table.partitions for tid in p.tablet_ids}
    for r in list(table.rowsets):
        if r.files:
            out.setdefault(r.tablet_id, []).append(r)
    for rs in out.values():
        rs.sort(key=lambda r: r.version)
    return out


def cumulative_point(rowsets: list[Rowset]) -> int:
    """Index of the first rowset above the newest large one (a rowset bigger than all newer
    rowsets together); the newest rowset itself is never large."""
    newer = 0
    for i in range(len(rowsets) - 1, -1, -1):
        if i < len(rowsets) - 1 and rowsets[i].data_size > newer:
            return i + 1
        newer += rowsets[i].data_size
    return 0


def pick_cumulative(rowsets: list[Rowset], *, min_deltas: int, max_deltas: int) -> list[Rowset]:
    """The cumulative run of a tablet (contiguous, oldest first), or [] below `min_deltas`."""
    candidates = rowsets[cumulative_point(rowsets) :]
    return candidates[: max(2, max_deltas)] if len(candidates) >= max(2, min_deltas) else []


def pick_all(rowsets: list[Rowset]) -> list[Rowset]:
    """A base/full run: every rowset of the tablet, when there is something to merge."""
    return list(rowsets) if len(rowsets) >= 2 else []


def version_ranges(rowsets: list[Rowset]) -> list[tuple[int, int]]:
    """Doris-style [start-end] version ranges of a tablet's rowsets (oldest first): a rowset
    covers the table versions since the previous rowset of the tablet (a compacted one covers
    those of the rowsets it replaced; versions no load wrote into this tablet are empty)."""
    out = []
    prev_end = 1  # version 1 is a new table's empty version
    for r in rowsets:
        start = min(prev_end + 1, r.version)
        out.append((start, r.version))
        prev_end = r.version
    return out


def pretty_bytes(n: int) -> str:
    """Doris' PrettyPrinter for TUnit::BYTES: "0", "574.00 B", "3.11 KB", "2.86 GB"."""
    if n == 0:
        return "0"
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.2f} B"


@dataclass
class Stale:
    """Rowsets a compaction replaced, shown as Doris' stale rowsets while their files remain."""

    path_id: int
    time: float
    lines: list[str]  # "[start-end] segments rowset_id size"
    ranges: list[tuple[int, int]]
    files: list[str]


@dataclass
class TabletHistory:
    """What a Doris tablet keeps in memory about its compactions (ms since the epoch)."""

    failure_ms: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    success_ms: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    stale: list[Stale] = field(default_factory=list)


@dataclass
class Outcome:
    """One compaction request: tablets merged (input rowset count) and tablets skipped."""

    compacted: dict[int, int] = field(default_factory=dict)
    skipped: dict[int, tuple[str, str]] = field(default_factory=dict)  # tablet -> (status, msg)
    error: str | None = None


def _truthy(v: str | None) -> bool:
    return str(v or "").strip().lower() in ("1", "true", "yes", "on")


# ---------------------------------------------------------------------------------------
# The service
# ---------------------------------------------------------------------------------------


class CompactionService:
    def __init__(self, fe):
        self.fe = fe
        self.cfg = fe.cfg
        self._lock = asyncio.Lock()
        self._running: dict[int, str] = {}  # tablet id -> kind, while its job runs
        self._queued: dict[int, list[str]] = {}  # tablet id -> kinds of requests waiting or running
        self._history: dict[int, TabletHistory] = {}
        self._idle: dict[int, tuple[int, int]] = {}  # table id -> (version, rowsets) with nothing to do
        self._jobs = itertools.count(1)
        self._paths = itertools.count(1)
        self._task: asyncio.Task | None = None
        self._manual: set[asyncio.Task] = set()
        self._wake = asyncio.Event()  # a table nears max_tablet_version_num (note_many_versions)
        self._urgent_tables: set[int] = set()  # those tables, until the woken round looks at them
        self._event_loop: asyncio.AbstractEventLoop | None = None

    # --- lifecycle ------------------------------------------------------------------
    def start(self) -> None:
        self._event_loop = asyncio.get_running_loop()
        self._task = asyncio.create_task(self._loop(), name="fe-compaction")

    def note_many_versions(self, table_id: int) -> None:
        """A load began on a table with over half of `max_tablet_version_num` rowsets (any
        thread): look for a tablet that needs compacting before the round's interval is up."""
        loop = self._event_loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._note_urgent, table_id)

    def _note_urgent(self, table_id: int) -> None:
        self._urgent_tables.add(table_id)
        self._wake.set()

    async def stop(self) -> None:
        tasks = [t for t in (self._task, *self._manual) if t is not None]
        for t in tasks:
            t.cancel()
        for t in tasks:
            try:
                await asyncio.wait_for(t, timeout=70)
            except BaseException:  # stopping: each task's own error is not the point
                log.debug("compaction task ended", exc_info=True)

    async def _loop(self) -> None:
        """A round every `compaction_scheduler_interval_ms`; between rounds, one as soon as a
        tablet holds half of `max_tablet_version_num` rowsets (Doris' BEs pick tablets by
        score every few ms: a table loaded hundreds of times a second without group commit
        fills the limit in a few seconds, faster than rounds of one interval). Woken rounds
        come at most every URGENT_GAP_S and take only such tablets."""
        interval = max(0.05, self.cfg.compaction_scheduler_interval_ms / 1000)
        next_round = time.monotonic() + interval
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), max(0.0, next_round - time.monotonic()))
                urgent = True
            except TimeoutError:
                urgent = False
            self._wake.clear()
            only, self._urgent_tables = (
                (self._urgent_tables, set()) if urgent else (None, self._urgent_tables)
            )
            if not urgent:
                next_round = time.monotonic() + interval
            if self.cfg.disable_auto_compaction or self._lock.locked():
                continue
            if not self.fe.engine_ready.is_set() or self.fe.engine is None:
                continue
            try:
                pick = self._pick_background(
                    min_tablet_rowsets=self._urgent_rowsets() if urgent else 0, only=only
                )
                if pick is not None:
                    table_id, tablet_ids, state = pick
                    outcome = await self.compact(table_id, tablet_ids, "cumulative", manual=False)
                    if outcome.error:
                        # Not again until the table changes: a job that fails (a damaged file,
                        # an engine error) would otherwise hold the engine every tick.
                        self._idle[table_id] = state
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("background compaction failed")
            if urgent:
                await asyncio.sleep(URGENT_GAP_S)

    def _urgent_rowsets(self) -> int:
        """A tablet with this many rowsets is compacted without waiting for the next round."""
        return (
            max(2, self.fe.catalog.txns.max_tablet_version_num // 2)
            if self.fe.catalog.txns.max_tablet_version_num
            else 0
        )

    def _pick_background(
        self, min_tablet_rowsets: int = 0, only: set[int] | None = None
    ) -> tuple[int, list[int], tuple[int, int]] | None:
        """The table whose tablets have the most rowsets waiting, those tablets, and the
        table's (version, rowset count) when picked; with `min_tablet_rowsets`, only tablets
        holding at least that many rowsets count; with `only`, only those tables are looked at
        (a woken round costs what its tables hold, not the whole catalog)."""
        min_deltas = max(2, self.cfg.cumulative_compaction_min_deltas)
        best: tuple[int, int, list[int], tuple[int, int]] | None = None
        tables = self.fe.state.tables
        candidates = list(tables.values()) if only is None else [tables[t] for t in only if t in tables]
        for table in candidates:
            n = len(table.rowsets)
            if n < max(min_deltas, min_tablet_rowsets) or _truthy(
                table.properties.get("disable_auto_compaction")
            ):
                continue
            if self._idle.get(table.id) == (table.visible_version, n):
                continue  # unchanged since it had nothing to compact
            score, tablets = 0, []
            for tid, rs in tablet_rowsets(table).items():
                if len(rs) < min_tablet_rowsets:
                    continue
                run = pick_cumulative(
                    rs, min_deltas=min_deltas, max_deltas=self.cfg.cumulative_compaction_max_deltas
                )
                if run:
                    score += len(run)
                    tablets.append(tid)
            if not tablets:
                if not min_tablet_rowsets:  # a narrower look proves nothing about the rest
                    self._idle[table.id] = (table.visible_version, n)
                continue
            if best is None or score > best[0]:
                best = (score, table.id, tablets[:MAX_TABLETS_PER_JOB], (table.visible_version, n))
        return None if best is None else best[1:]

    # --- one compaction ---------------------------------------------------------------
    async def compact(
        self, table_id: int, tablet_ids: Iterable[int] | None, kind: str, *, manual: bool
    ) -> Outcome:
        """Compact the named tablets of a table (all of them when None) with one engine job,
        after any compaction already running (one at a time)."""
        if kind not in KINDS:
            raise GaleneError(f"The compaction type '{kind}' is not supported")
        table = self.fe.state.tables.get(table_id)
        if tablet_ids is None and table is not None:
            tablet_ids = [tid for p in table.partitions for tid in p.tablet_ids]
        ids = list(tablet_ids or [])
        # A request waiting for the running compaction already counts as running for
        # /api/compaction/run_status, so a client polling it waits for this one too.
        for tid in ids:
            self._queued.setdefault(tid, []).append(kind)
        try:
            async with self._lock:
                return await self._compact_locked(table_id, ids, kind, manual=manual)
        finally:
            for tid in ids:
                kinds = self._queued.get(tid, [])
                if kind in kinds:
                    kinds.remove(kind)
                if not kinds:
                    self._queued.pop(tid, None)

    async def _compact_locked(
        self, table_id: int, tablet_ids: list[int], kind: str, *, manual: bool
    ) -> Outcome:
        from galene.engine import compaction as ec

        fe = self.fe
        outcome = Outcome()
        table = fe.state.tables.get(table_id)
        if table is None:
            raise GaleneError(f"table [{table_id}] does not exist")
        per_tablet = tablet_rowsets(table)
        partition_of = {tid: p.id for p in table.partitions for tid in p.tablet_ids}
        wanted = list(tablet_ids)
        min_deltas = 2 if manual else max(2, self.cfg.cumulative_compaction_min_deltas)
        jobs: list[ec.TabletCompaction] = []
        for tid in wanted:
            rs = per_tablet.get(tid, [])
            if kind == "cumulative":
                run = pick_cumulative(
                    rs, min_deltas=min_deltas, max_deltas=self.cfg.cumulative_compaction_max_deltas
                )
                if not run:
                    msg = (
                        "candidate_rowsets is empty"
                        if not rs[cumulative_point(rs) :]
                        else "_input_rowsets.size() is 1"
                    )
                    outcome.skipped[tid] = (CUMULATIVE_NO_SUITABLE_VERSION, msg)
                    continue
            else:
                run = pick_all(rs)
                if not run:
                    outcome.skipped[tid] = (BE_NO_SUITABLE_VERSION, "_input_rowsets.size() is 1")
                    continue
            # Deletes go when nothing older can be hidden by them — but never from a table with
            # a sequence column: there a delete also hides rows loaded later with a lower
            # sequence value, so its row must outlive every compaction.
            drop = bool(rs) and run[0].id == rs[0].id and table.sequence_column() is None
            jobs.append(
                ec.TabletCompaction(tid, partition_of.get(tid, run[0].partition_id), run, drop_deletes=drop)
            )
        if not jobs:
            return outcome
        if manual:
            await fe.wait_engine()
        ranges = {
            j.tablet_id: dict(
                zip((r.id for r in per_tablet[j.tablet_id]), version_ranges(per_tablet[j.tablet_id]))
            )
            for j in jobs
        }
        rowset_ids = ec.new_rowset_ids(jobs)
        tag = f"galene-compaction-{next(self._jobs)}"
        fe.running_rowset_ids.update(rowset_ids.values())
        for j in jobs:
            self._running[j.tablet_id] = kind
        t0 = time.monotonic()
        try:
            try:
                added = await self._run_job(ec.compact_tablets, table, jobs, rowset_ids, tag)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - any failure is the outcome's error, reported to the caller
                outcome.error = getattr(e, "message", None) or f"{type(e).__name__}: {e}"
                log.warning("compaction of table %s failed: %s", table.name, outcome.error)
                self._record(jobs, kind, ok=False)
                return outcome
            committed = await asyncio.to_thread(self._commit, table, jobs, added)
            if not committed:
                # The rowsets changed meanwhile (an overwrite, a truncate, a drop): the new
                # files are not referenced.
                await asyncio.to_thread(self._discard, table, rowset_ids)
                outcome.error = "the tablet's rowsets changed during the compaction; not committed"
                self._record(jobs, kind, ok=False)
                return outcome
        finally:
            fe.running_rowset_ids.difference_update(rowset_ids.values())
            for j in jobs:
                self._running.pop(j.tablet_id, None)
        self._record(jobs, kind, ok=True, ranges=ranges)
        self._idle.pop(table.id, None)
        for j in jobs:
            outcome.compacted[j.tablet_id] = len(j.rowsets)
        log.info(
            "%s compaction of %s: %d tablets, %d rowsets -> %d in %.2f s",
            kind, table.name, len(jobs), sum(len(j.rowsets) for j in jobs), len(added), time.monotonic() - t0,
        )  # fmt: skip
        fe.metrics.inc("galene_fe_compactions_total")
        return outcome

    async def _run_job(self, fn, table: Table, jobs, rowset_ids, tag: str):
        from galene.load import local_merge as lm

        fe = self.fe
        if lm.merges_locally(table, jobs, self.cfg.compaction_local_max_mb << 20):
            merged = await self._merge_on_backend(table, jobs, rowset_ids)
            if merged is not None:
                return merged
        parallelism = max(2, 2 * int(self.cfg.spark_shuffle_partitions))
        job = asyncio.ensure_future(
            asyncio.to_thread(
                fn, fe.engine, table, jobs, self.cfg.storage_uri,
                rowset_ids=rowset_ids, parallelism=parallelism, job_tag=tag,
            )
        )  # fmt: skip
        try:
            return await asyncio.wait_for(asyncio.shield(job), timeout=JOB_TIMEOUT_S)
        except (TimeoutError, asyncio.CancelledError):
            # The engine job runs on until interrupted; stop it and wait, so its files are gone.
            await asyncio.to_thread(self._interrupt, tag)
            try:
                await asyncio.wait_for(asyncio.shield(job), timeout=60)
            except BaseException:  # the interrupted job's own error is expected
                log.info("the interrupted compaction job %s ended", tag, exc_info=True)
            raise

    async def _merge_on_backend(self, table: Table, jobs, rowset_ids: dict[int, str]) -> list[Rowset] | None:
        """A small run merged by a BE (`POST /api/_internal/compaction/merge`): the new
        rowsets, or None when no BE is alive or the BE refused it (its merge deletes what it
        wrote before answering; the engine merges the run instead). A BE that does not answer
        fails this compaction (the next round tries again with new rowset ids): a late
        answer's files must not share names with an engine job's."""
        from galene.load import local_merge as lm

        alive = [be for be in self.fe.state.backends.values() if self.fe.backends.status(be.id).alive]
        if not alive:
            return None
        be = random.choice(alive)
        port = self.fe.backends.status(be.id).http_port or be.heartbeat_port
        payload = {
            "table": msgspec.to_builtins(table),
            "jobs": lm.encode_jobs(jobs),
            "rowset_ids": {str(k): v for k, v in rowset_ids.items()},
        }
        status, body = await self.fe.rpc.call_json(
            "POST",
            f"http://{be.host}:{port}/api/_internal/compaction/merge",
            json=payload,
            headers={TOKEN_HEADER: self.fe.store.token},
            timeout_s=MERGE_TIMEOUT_S,
        )
        if status != 200 or not isinstance(body, dict) or body.get("status") != "OK":
            message = body.get("message") if isinstance(body, dict) else body
            log.warning(
                "compaction merge on backend %s:%s refused (HTTP %s): %s", be.host, port, status, message
            )
            return None
        return msgspec.convert(body.get("rowsets") or [], list[Rowset])

    def _interrupt(self, tag: str) -> None:
        from galene.engine import write as w

        try:
            w.interrupt(self.fe.engine.spark(), tag)
        except Exception:
            log.warning("could not interrupt %s", tag, exc_info=True)

    def _discard(self, table: Table, rowset_ids: dict[int, str]) -> None:
        from galene.engine import write as w

        try:
            w.discard_statement_files(self.cfg.storage_uri, table, rowset_ids, keep=set())
        except Exception:
            log.warning("removing the files of an uncommitted compaction failed", exc_info=True)

    def _commit(self, table: Table, jobs, added: list[Rowset]) -> bool:
        catalog = self.fe.catalog
        removed = [r.id for j in jobs for r in j.rowsets]
        return catalog.compact_rowsets(table.id, removed, added)

    def _record(self, jobs, kind: str, *, ok: bool, ranges: dict | None = None) -> None:
        now = time.time()
        for j in jobs:
            h = self._history.setdefault(j.tablet_id, TabletHistory())
            (h.success_ms if ok else h.failure_ms)[kind] = int(now * 1000)
            if ok and ranges is not None:
                spans = [ranges[j.tablet_id].get(r.id, (r.version, r.version)) for r in j.rowsets]
                h.stale.append(
                    Stale(
                        path_id=next(self._paths),
                        time=now,
                        lines=[
                            f"[{a}-{b}] {len(r.files)} {r.id} {pretty_bytes(r.data_size)}"
                            for (a, b), r in zip(spans, j.rowsets, strict=True)
                        ],
                        ranges=spans,
                        files=[f for r in j.rowsets for f in r.files],
                    )
                )

    # --- finding tablets ----------------------------------------------------------------
    def find_tablet(self, tablet_id: int) -> tuple[Table, int] | None:
        """(table, partition id) of a tablet."""
        for table in list(self.fe.state.tables.values()):
            for p in table.partitions:
                if tablet_id in p.tablet_ids:
                    return table, p.id
        return None

    # --- ADMIN COMPACT TABLE --------------------------------------------------------------
    async def admin_compact(self, table: Table, partition: str, kind: str) -> Outcome:
        """Compact every tablet of one partition; answers when the compaction is committed."""
        part = next((p for p in table.partitions if p.name.lower() == partition.lower()), None)
        if part is None:
            raise AnalysisError(f"Unknown partition '{partition}' in table '{table.name}'")
        outcome = await self.compact(table.id, list(part.tablet_ids), kind, manual=True)
        if outcome.error:
            raise GaleneError(
                f"compaction of table {table.name} partition {part.name} failed: {outcome.error}"
            )
        return outcome

    # --- what the documents read (galene/fe/compaction_api.py) ----------------------------
    def history(self, tablet_id: int) -> TabletHistory:
        """The tablet's compaction history, its stale rowsets those whose files remain."""
        h = self._history.get(tablet_id, TabletHistory())
        retired = self.fe.state.retired_files
        h.stale = [s for s in h.stale if s.files and s.files[0] in retired]
        return h

    def running(self) -> dict[int, str]:
        """tablet id -> kind of the compactions running now."""
        return dict(self._running)

    def pending_kind(self, tablet_id: int) -> str:
        """The kind of the tablet's compaction running or waiting to run ("" for none)."""
        return self._running.get(tablet_id) or next(iter(self._queued.get(tablet_id, [])), "")

    def spawn(self, coro) -> asyncio.Task:
        """A manual compaction (/api/compaction/run) run on its own; a failure is logged."""
        task = asyncio.ensure_future(coro)
        self._manual.add(task)

        def done(t: asyncio.Task) -> None:
            self._manual.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.warning("manual compaction failed: %s", t.exception())

        task.add_done_callback(done)
        return task
