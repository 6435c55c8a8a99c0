"""The FE's transaction manager: begin, precommit, commit (publish), abort, expiry, 2PC,
group-commit txns and the aborts a BE's death or restart calls for.

It writes as the rest of the FE's metadata does (`galene.fe.catalog_service`): under the
catalog's one writer lock (passed in, shared with every other op), it validates against the
current state, builds a fully specified op and hands it to `MetaStore.log` (journal first,
then apply). It holds no state of its own: transactions live in `CatalogState.txns`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from galene.catalog import lookup, ops
from galene.catalog.model import CatalogState, Rowset, Table, Txn
from galene.common.errors import GaleneError
from galene.meta.store import MetaStore
from galene.txn.labels import (
    GROUP_COMMIT_LABEL_PREFIX,
    LabelAlreadyExists,
    SubLabelConflict,
    label_owner,
    txn_of_label,
)
from galene.txn.versions import check_version_count, commit_op


class TxnManager:
    def __init__(
        self,
        store: MetaStore,
        lock: threading.RLock,
        *,
        label_keep_max_second: int,
        default_load_timeout_s: int = 600,
        precommit_timeout_s: int = 3600,
        max_tablet_version_num: int = 0,
    ):
        self.store = store
        # The catalog's writer lock: check-then-log of a txn cannot race any other op.
        self.lock = lock
        self.label_keep_max_second = label_keep_max_second
        self.default_load_timeout_s = default_load_timeout_s
        # Doris' stream_load_default_precommit_timeout_second: a PRECOMMITTED (2PC) txn
        # that nobody commits or aborts within this long after its precommit is aborted.
        self.precommit_timeout_s = precommit_timeout_s
        # Doris' max_tablet_version_num (0: no limit): a load into a table with a tablet of more
        # rowsets fails at its begin, as a Doris BE fails it when opening the tablet writer.
        self.max_tablet_version_num = max_tablet_version_num
        # Told (from any thread) the id of a table with over half that many rowsets at a load's
        # begin, so compaction need not wait for its next round (fe/compaction.py).
        self.on_many_versions: Callable[[int], None] | None = None

    @property
    def state(self) -> CatalogState:
        return self.store.state

    # --- begin, commit, abort -----------------------------------------------------------
    def begin_txn(
        self,
        db_name: str,
        table_name: str,
        label: str,
        *,
        timeout_s: int | None = None,
        backend_id: int = 0,
        load_type: str = "STREAM_LOAD",
        user: str = "",
    ) -> tuple[Txn, Table]:
        with self.lock:
            db = lookup.database(self.state, db_name)
            table = lookup.table(self.state, db_name, table_name)
            existing = label_owner(self.state, db, label, -1)
            if existing is not None:
                raise LabelAlreadyExists(label, existing)
            check_version_count(table, self.max_tablet_version_num, self.on_many_versions)
            alloc, high = ops.id_allocator(self.state)
            txn = Txn(
                id=alloc(),
                db_id=db.id,
                table_id=table.id,
                label=label,
                status="PREPARE",
                backend_id=backend_id,
                timeout_s=int(timeout_s or self.default_load_timeout_s),
                begin_time=time.time(),
                load_type=load_type,
                user=user,
            )
            self.store.log(ops.BeginTxn(txn=txn, next_id=high()))
            return txn, table

    def _live_txn(self, txn_id: int, allowed: tuple[str, ...]) -> Txn:
        txn = self.state.txns.get(txn_id)
        if txn is None:
            raise GaleneError(f"transaction [{txn_id}] not found")
        if txn.status not in allowed:
            if txn.status == "ABORTED":
                raise GaleneError(f"transaction [{txn_id}] is already aborted. abort reason: {txn.reason}")
            raise GaleneError(f"transaction [{txn_id}] is already {txn.status.lower()}")
        return txn

    def commit_txn(
        self,
        txn_id: int,
        rowsets: list[Rowset],
        *,
        num_rows: int = 0,
        load_bytes: int = 0,
        replace_partitions: list[int] | None = None,
        job_progress: ops.JobProgress | None = None,
    ) -> Txn:
        """Commit and publish. `replace_partitions` (INSERT OVERWRITE, TRUNCATE, a rewriting
        DELETE): every rowset those partitions had is replaced by `rowsets` in the same op.
        `job_progress` (a streaming job's batch): the job's offset and statistics advance in
        the same op, and only if the job is still where the batch started (else nothing is
        committed: the caller aborts and the batch is read again from the job's offset)."""
        with self.lock:
            txn = self._live_txn(txn_id, ("PREPARE", "PRECOMMITTED"))
            table = self.state.tables.get(txn.table_id)
            if table is None:
                raise GaleneError(f"table of transaction [{txn_id}] was dropped")
            if job_progress is not None:
                self._check_job_progress(job_progress)
            rowsets = rowsets if txn.status == "PREPARE" else txn.rowsets
            self.store.log(
                commit_op(
                    txn,
                    table,
                    rowsets,
                    num_rows=num_rows,
                    load_bytes=load_bytes,
                    replace_partitions=replace_partitions or [],
                    job_progress=job_progress,
                )
            )
            return txn

    def _check_job_progress(self, p: ops.JobProgress) -> None:
        job = self.state.jobs.get(p.job_id)
        if job is None:
            raise GaleneError(f"streaming job [{p.job_id}] was dropped while its task ran")
        if job.status != "RUNNING":
            raise GaleneError(f"streaming job [{job.name}] is {job.status} now; its task's batch is not committed")
        if job.offset_generation != p.generation or job.offset != p.prev_offset:
            raise GaleneError(
                f"streaming job [{job.name}] offset moved while its task ran (now {job.offset!r}, "
                f"the task started after {p.prev_offset!r}); its batch is not committed"
            )

    def precommit_txn(
        self, txn_id: int, rowsets: list[Rowset], *, num_rows: int = 0, load_bytes: int = 0
    ) -> Txn:
        with self.lock:
            txn = self._live_txn(txn_id, ("PREPARE",))
            self.store.log(
                ops.PrecommitTxn(
                    txn_id=txn_id,
                    rowsets=list(rowsets),
                    time=time.time(),
                    num_rows=num_rows,
                    load_bytes=load_bytes,
                )
            )
            return txn

    def abort_txn(self, txn_id: int, reason: str) -> Txn | None:
        with self.lock:
            txn = self.state.txns.get(txn_id)
            if txn is None or txn.status in ("ABORTED",):
                return txn
            if txn.status in ("COMMITTED", "VISIBLE"):
                raise GaleneError(f"transaction [{txn_id}] is already visible, could not abort")
            self.store.log(ops.AbortTxn(txn_id=txn_id, reason=reason[:1024], time=time.time()))
            return txn

    def txn_by_label(self, db_name: str, label: str) -> Txn | None:
        return txn_of_label(self.state, lookup.database(self.state, db_name), label)

    # --- expiry -------------------------------------------------------------------------
    def expire_txns(self, now: float | None = None) -> list[int]:
        """Abort transactions past their timeout; forget finished ones past label retention."""
        now = now or time.time()
        aborted: list[int] = []
        with self.lock:
            for txn in list(self.state.txns.values()):
                if txn.status == "PREPARE" and now - txn.begin_time > txn.timeout_s:
                    self.store.log(ops.AbortTxn(txn_id=txn.id, reason="timeout by txn manager", time=now))
                    aborted.append(txn.id)
            expired = [
                t.id
                for t in self.state.txns.values()
                if t.status in ("VISIBLE", "ABORTED")
                and t.finish_time
                and now - t.finish_time > self.label_keep_max_second
            ]
            if expired:
                self.store.log(ops.ExpireTxns(txn_ids=expired))
        return aborted

    def abort_stale_precommitted(self, now: float | None = None) -> list[Rowset]:
        """Abort PRECOMMITTED txns past the precommit timeout; returns the rowsets they held.

        Doris times out a PREPARE txn by its load timeout and a PRECOMMITTED one by
        `stream_load_default_precommit_timeout_second` counted from the precommit. The
        caller deletes the returned files (the abort is journaled first, so a crash in
        between leaves only unreferenced files for GC).
        """
        now = now or time.time()
        freed: list[Rowset] = []
        with self.lock:
            for txn in list(self.state.txns.values()):
                if txn.status == "PRECOMMITTED" and now - txn.commit_time > self.precommit_timeout_s:
                    freed.extend(txn.rowsets)
                    self.store.log(ops.AbortTxn(txn_id=txn.id, reason="timeout by txn manager", time=now))
        return freed

    # --- two-phase commit (`_stream_load_2pc`) -----------------------------------------
    def txn_for_2pc(self, db_name: str, txn_id: int | None, label: str | None) -> Txn:
        """The txn a 2PC request names, by id (preferred, as Doris) or by label."""
        db = lookup.database(self.state, db_name)
        if txn_id is not None:
            txn = self.state.txns.get(txn_id)
            if txn is None or txn.db_id != db.id:
                raise GaleneError(f"transaction [{txn_id}] not found")
            return txn
        txn = txn_of_label(self.state, db, label or "")
        if txn is None:
            raise GaleneError(f"running transaction not found, label={label}")
        return txn

    def commit_txn_2pc(self, db_name: str, txn_id: int | None = None, label: str | None = None) -> Txn:
        """Make a PRECOMMITTED txn visible (Doris texts for every other state)."""
        with self.lock:
            txn = self.txn_for_2pc(db_name, txn_id, label)
            if txn.status == "ABORTED":
                raise GaleneError(f"transaction [{txn.id}] is already aborted, abort reason: {txn.reason}")
            if txn.status in ("COMMITTED", "VISIBLE"):
                raise GaleneError(
                    f"transaction [{txn.id}] is already {txn.status.lower()}, not pre-committed."
                )
            if txn.status != "PRECOMMITTED":
                raise GaleneError(f"transaction [{txn.id}] is {txn.status.lower()}, not pre-committed.")
            return self.commit_txn(txn.id, [], num_rows=txn.num_rows, load_bytes=txn.load_bytes)

    def abort_txn_2pc(
        self, db_name: str, txn_id: int | None = None, label: str | None = None
    ) -> tuple[Txn, list[Rowset]]:
        """Abort a PREPARE or PRECOMMITTED txn by user request; returns the rowsets it held.

        A PREPARE txn's files are still the BE's: its commit then fails and it deletes them.
        """
        with self.lock:
            txn = self.txn_for_2pc(db_name, txn_id, label)
            if txn.status == "ABORTED":
                raise GaleneError(f"transaction [{txn.id}] is already aborted, abort reason: {txn.reason}")
            if txn.status in ("COMMITTED", "VISIBLE"):
                raise GaleneError(f"transaction [{txn.id}] is already {txn.status}, could not abort.")
            freed = list(txn.rowsets)
            self.store.log(ops.AbortTxn(txn_id=txn.id, reason="User Abort", time=time.time()))
            return txn, freed

    # --- group commit -----------------------------------------------------------------
    def begin_group_txn(
        self, db_id: int, table_id: int, label: str, *, timeout_s: int, backend_id: int
    ) -> tuple[Txn, Table]:
        """Begin a BE's merged group-commit txn; the table is named by id (WAL replay)."""
        db = self.state.databases.get(db_id)
        table = self.state.tables.get(table_id)
        if db is None or table is None or table.db_id != db_id:
            raise GaleneError(f"table [{table_id}] of database [{db_id}] does not exist")
        return self.begin_txn(db.name, table.name, label, timeout_s=timeout_s, backend_id=backend_id)

    def reserve_group_label(self, txn_id: int, label: str) -> Txn:
        """Bind a client label to a PREPARE merged txn, or raise LabelAlreadyExists."""
        with self.lock:
            txn = self._live_txn(txn_id, ("PREPARE",))
            db = self.state.databases[txn.db_id]
            owner = label_owner(self.state, db, label, -1)
            if owner is not None:
                raise LabelAlreadyExists(label, owner)
            self.store.log(ops.ReserveLabel(txn_id=txn_id, label=label))
            return txn

    def commit_group_txn(
        self, txn_id: int, rowsets: list[Rowset], sub_labels: list[str], *, num_rows: int, load_bytes: int
    ) -> Txn:
        """Commit a merged txn and bind its client labels atomically.

        A client label that another live txn holds (a retry that another BE or an earlier
        group already loaded) fails the commit with SubLabelConflict: the BE drops those rows
        and commits again, so a label is never loaded twice.
        """
        with self.lock:
            txn = self._live_txn(txn_id, ("PREPARE",))
            db = self.state.databases.get(txn.db_id)
            table = self.state.tables.get(txn.table_id)
            if db is None or table is None:
                raise GaleneError(f"table of transaction [{txn_id}] was dropped")
            conflicts = {
                label: owner.id
                for label in sub_labels
                if (owner := label_owner(self.state, db, label, txn_id)) is not None
            }
            if conflicts:
                raise SubLabelConflict(conflicts)
            self.store.log(
                commit_op(txn, table, rowsets, num_rows=num_rows, load_bytes=load_bytes, sub_labels=sub_labels)
            )
            return txn

    def abort_group_label(self, db_id: int, label: str, reason: str) -> None:
        """Abort the PREPARE txn holding a group label (its owner BE died; a holder of a copy
        of its WAL commits the group under the label instead). Visible ones stay."""
        with self.lock:
            txn = txn_of_label(self.state, self.state.databases.get(db_id), label)
            if txn is not None and txn.status == "PREPARE":
                self.store.log(ops.AbortTxn(txn_id=txn.id, reason=reason[:1024], time=time.time()))

    def recover_group_txns(self, backend_id: int, groups: list[tuple[int, str]]) -> dict[str, str]:
        """A restarted BE's first call: abort every PREPARE group-commit txn it began (their
        in-memory parts died with it, their WAL parts are replayed), then report the status
        of each (db_id, group label) it has a WAL for: VISIBLE, ABORTED or UNKNOWN.

        Under the lock, so a commit the dead BE sent just before dying either landed
        (VISIBLE) or is refused afterwards: the replay never loads a group twice.
        """
        with self.lock:
            now = time.time()
            for txn in list(self.state.txns.values()):
                if (
                    txn.backend_id == backend_id
                    and txn.status == "PREPARE"
                    and txn.label.startswith(GROUP_COMMIT_LABEL_PREFIX)
                ):
                    self.store.log(ops.AbortTxn(txn_id=txn.id, reason="group commit BE restarted", time=now))
            out: dict[str, str] = {}
            for db_id, label in groups:
                txn = txn_of_label(self.state, self.state.databases.get(db_id), label)
                out[label] = txn.status if txn is not None else "UNKNOWN"
            return out

    # --- a coordinating BE's death or restart -------------------------------------------
    def abort_backend_txns(
        self,
        backend_id: int,
        reason: str,
        *,
        begun_before: float | None = None,
        skip_group_commit: bool = False,
        limit: int = 1000,
    ) -> int:
        """Doris' abortTxnWhenCoordinateBeDown / …Restart: abort the PREPARE txns `backend_id`
        coordinates (begun before `begun_before`, when given), so their labels are free again
        instead of held until their timeout. PRECOMMITTED (2PC) txns wait for their commit or
        abort. Returns how many were aborted."""
        with self.lock:
            now = time.time()
            n = 0
            for txn in list(self.state.txns.values()):
                if txn.backend_id != backend_id or txn.status != "PREPARE":
                    continue
                if skip_group_commit and txn.label.startswith(GROUP_COMMIT_LABEL_PREFIX):
                    continue
                if begun_before is not None and txn.begin_time >= begun_before:
                    continue
                self.store.log(ops.AbortTxn(txn_id=txn.id, reason=reason, time=now))
                n += 1
                if n >= limit:
                    break
            return n

    def abort_label_of_backend(
        self, db_name: str, label: str, backend_id: int, begun_before: float | None, reason: str
    ) -> str:
        """A BE whose begin of `label` got no answer aborts the txn it may have begun (else a
        retry with the label is refused until the txn's timeout, 3 days by default). Only a
        PREPARE txn this BE began before `begun_before` (the BE gave up then; a retry's txn is
        later) is aborted; the answer is the label's txn status (or UNKNOWN)."""
        with self.lock:
            db_id = self.state.db_names.get(db_name)
            db = self.state.databases.get(db_id) if db_id is not None else None
            txn = txn_of_label(self.state, db, label)
            if txn is None:
                return "UNKNOWN"
            mine = txn.backend_id == backend_id and (begun_before is None or txn.begin_time <= begun_before)
            if txn.status == "PREPARE" and mine:
                self.store.log(ops.AbortTxn(txn_id=txn.id, reason=reason[:1024], time=time.time()))
                return "ABORTED"
            return txn.status
