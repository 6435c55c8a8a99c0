"""The FE's metadata service: validates requests, builds journal ops, logs them.

Everything that changes FE metadata goes through `CatalogService`: it checks the request
against the current state under one lock, allocates ids, and hands a fully specified op to
`MetaStore.log` (journal first, then apply). Readers use `state` directly; the lock only
serializes writers so that check-then-log cannot race.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable

import msgspec

from galene.catalog import model, ops
from galene.catalog.model import (
    Backend,
    CatalogState,
    Database,
    JobTask,
    Rowset,
    StreamingJob,
    Table,
    Txn,
    View,
    with_column_ids,
)
from galene.common.errors import AnalysisError, GaleneError, LoadError, unknown_database, unknown_table
from galene.meta.store import MetaStore

log = logging.getLogger(__name__)

INFORMATION_SCHEMA = "information_schema"

# Doris' ExistingJobStatus for a label that is already used, by txn status.
EXISTING_JOB_STATUS = {
    "PREPARE": "RUNNING",
    "PRECOMMITTED": "PRECOMMITTED",
    "COMMITTED": "FINISHED",
    "VISIBLE": "FINISHED",
}


class LabelAlreadyExists(LoadError):
    def __init__(self, label: str, txn: Txn):
        super().__init__(
            f"Label [{label}] has already been used, relate to txn [{txn.id}]", status="Label Already Exists"
        )
        self.txn = txn
        self.existing_status = EXISTING_JOB_STATUS.get(txn.status, "FINISHED")


# Labels of the merged transactions BEs begin for group commit (Doris' form).
GROUP_COMMIT_LABEL_PREFIX = "group_commit_"


class SubLabelConflict(GaleneError):
    """Client labels of a merged commit that other live txns already hold: label -> txn id."""

    def __init__(self, conflicts: dict[str, int]):
        super().__init__(f"labels already loaded by other transactions: {conflicts}")
        self.conflicts = conflicts


def wrong_object(db_name: str, name: str, expected: str, actual: str, drop: bool = True) -> AnalysisError:
    """Doris' ERR_WRONG_OBJECT for a statement naming the wrong kind of object (a DROP names
    the statement that fits)."""
    hint = f" Use 'DROP {actual} {db_name}.{name}'." if drop else ""
    return AnalysisError(f"'{db_name}.{name}' is not {expected}.{hint}")


class CatalogService:
    def __init__(
        self,
        store: MetaStore,
        *,
        label_keep_max_second: int,
        default_load_timeout_s: int = 600,
        precommit_timeout_s: int = 3600,
        max_tablet_version_num: int = 0,
    ):
        self.store = store
        self.lock = threading.RLock()
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

    # --- ids ------------------------------------------------------------------------
    def _allocator(self):
        """Return (alloc, high) where alloc() hands out ids and high() is the op's next_id."""
        counter = [self.state.next_id]

        def alloc() -> int:
            counter[0] += 1
            return counter[0] - 1

        return alloc, lambda: counter[0]

    # --- lookups --------------------------------------------------------------------
    def db(self, name: str) -> Database:
        db_id = self.state.db_names.get(name)
        if db_id is None:
            raise unknown_database(name)
        return self.state.databases[db_id]

    def has_db(self, name: str) -> bool:
        return name in self.state.db_names or name.lower() == INFORMATION_SCHEMA

    def table(self, db_name: str, table_name: str) -> Table:
        db = self.db(db_name)
        table_id = db.tables.get(table_name)
        if table_id is None:
            # Doris table names are case-sensitive, but be forgiving when unambiguous.
            matches = [tid for n, tid in db.tables.items() if n.lower() == table_name.lower()]
            if len(matches) != 1:
                raise unknown_table(table_name, db_name)
            table_id = matches[0]
        return self.state.tables[table_id]

    # --- DDL ------------------------------------------------------------------------
    def create_database(self, name: str, if_not_exists: bool = False, properties: dict | None = None) -> bool:
        if not name or name.lower() == INFORMATION_SCHEMA:
            raise AnalysisError(f"Can't create database '{name}'; database exists")
        with self.lock:
            if name in self.state.db_names:
                if if_not_exists:
                    return False
                raise AnalysisError(f"Can't create database '{name}'; database exists")
            alloc, high = self._allocator()
            db = Database(id=alloc(), name=name, properties=dict(properties or {}), create_time=time.time())
            self.store.log(ops.CreateDb(db=db, next_id=high()))
            return True

    def drop_database(self, name: str, if_exists: bool = False) -> bool:
        with self.lock:
            db_id = self.state.db_names.get(name)
            if db_id is None:
                if if_exists:
                    return False
                raise AnalysisError(f"Can't drop database '{name}'; database doesn't exist")
            self.store.log(ops.DropDb(db_id=db_id))
            return True

    def create_table(self, db_name: str, build_table, if_not_exists: bool = False) -> Table | None:
        """`build_table(db_id, alloc, now)` returns the Table to create (see sql.ddl)."""
        with self.lock:
            db = self.db(db_name)
            alloc, high = self._allocator()
            table = build_table(db.id, alloc, time.time())
            if table.name in db.tables or table.name in db.views:
                if if_not_exists:
                    return None
                raise AnalysisError(f"Table '{table.name}' already exists")
            # Stable column ids (schema change maps old files to today's columns by them).
            table = msgspec.structs.replace(table, columns=with_column_ids(table.columns))
            self.store.log(ops.CreateTable(table=table, next_id=high()))
            return table

    def drop_table(self, db_name: str, table_name: str, if_exists: bool = False, kind: str = "TABLE") -> bool:
        """DROP TABLE (kind TABLE) or DROP MATERIALIZED VIEW (kind MATERIALIZED VIEW)."""
        with self.lock:
            db = self.db(db_name)
            if table_name in db.views:
                raise wrong_object(db_name, table_name, kind, "VIEW")
            if table_name not in db.tables:
                if if_exists:
                    return False
                raise unknown_table(table_name, db_name)
            table = self.state.tables[db.tables[table_name]]
            actual = "MATERIALIZED VIEW" if table.mtmv is not None else "TABLE"
            if actual != kind:
                raise wrong_object(db_name, table_name, kind, actual)
            self.store.log(ops.DropTable(db_id=db.id, table_id=table.id))
            return True

    def rename_table(self, db_name: str, table_name: str, new_name: str) -> None:
        """ALTER TABLE t RENAME t2 / RENAME TABLE t TO t2 (a view too: Doris renames either)."""
        with self.lock:
            db = self.db(db_name)
            if table_name == new_name:
                raise AnalysisError("Same table name")
            if new_name in db.tables or new_name in db.views:
                raise AnalysisError(f"Table '{new_name}' already exists")
            if table_name in db.views:
                self.store.log(ops.RenameView(db_id=db.id, name=table_name, new_name=new_name))
                return
            table = self.table(db_name, table_name)
            self.store.log(ops.RenameTable(db_id=db.id, table_id=table.id, new_name=new_name))

    def replace_table(self, db_name: str, table_name: str, other_name: str, swap: bool) -> None:
        """ALTER TABLE a REPLACE WITH TABLE b: one journal op (atomic for every reader)."""
        with self.lock:
            db = self.db(db_name)
            for name in (table_name, other_name):
                if name in db.views:
                    raise wrong_object(db_name, name, "TABLE", "VIEW", drop=False)
            a = self.table(db_name, table_name)
            b = self.table(db_name, other_name)
            if a.id == b.id:
                raise AnalysisError("Same table name")
            self.store.log(
                ops.ReplaceTable(db_id=db.id, table_id=a.id, other_id=b.id, swap=swap, time=time.time())
            )

    def alter_table(self, db_name: str, table_name: str, change) -> Table:
        """ALTER TABLE … columns / comment: `change(table)` returns the AlterTable op's fields
        (see galene.sql.ddl.alter_table), computed and logged under the lock."""
        with self.lock:
            db = self.db(db_name)
            if table_name in db.views:
                raise wrong_object(db_name, table_name, "TABLE", "VIEW", drop=False)
            table = self.table(db_name, table_name)
            fields = change(table)
            if fields is not None:  # None: nothing to change (IF [NOT] EXISTS found its answer)
                self.store.log(ops.AlterTable(table_id=table.id, time=time.time(), **fields))
            return table

    # --- views ------------------------------------------------------------------------
    def view(self, db_name: str, name: str) -> View | None:
        """The view `name` of the database, or None (a table, or nothing, by that name)."""
        db = self.db(db_name)
        view = db.views.get(name)
        if view is None:  # names are case-sensitive, but be forgiving when unambiguous (as tables)
            matches = [v for n, v in db.views.items() if n.lower() == name.lower()]
            if len(matches) == 1 and not any(n.lower() == name.lower() for n in db.tables):
                view = matches[0]
        return view

    def create_view(
        self, db_name: str, build_view, *, or_replace: bool = False, if_not_exists: bool = False, alter: bool = False
    ) -> View | None:
        """CREATE [OR REPLACE] VIEW / ALTER VIEW. `build_view(view_id, now, existing)` returns the
        View (existing: the view it replaces, or None)."""
        with self.lock:
            db = self.db(db_name)
            alloc, high = self._allocator()
            view = build_view(alloc(), time.time(), None)
            existing = db.views.get(view.name)
            if view.name in db.tables:
                if alter or or_replace:
                    raise wrong_object(db_name, view.name, "VIEW", "TABLE", drop=False)
                if if_not_exists:
                    return None
                raise AnalysisError(f"Table '{view.name}' already exists")
            if existing is None and alter:
                raise unknown_table(view.name, db_name)
            if existing is not None:
                if if_not_exists:
                    return None
                if not (or_replace or alter):
                    raise AnalysisError(f"Table '{view.name}' already exists")
                view = build_view(existing.id, time.time(), existing)
                self.store.log(ops.CreateView(view=view))
                return view
            self.store.log(ops.CreateView(view=view, next_id=high()))
            return view

    def drop_view(self, db_name: str, name: str, if_exists: bool = False) -> bool:
        with self.lock:
            db = self.db(db_name)
            if name not in db.views:
                if name in db.tables:
                    kind = "MATERIALIZED VIEW" if self.state.tables[db.tables[name]].mtmv else "TABLE"
                    raise wrong_object(db_name, name, "VIEW", kind)
                if if_exists:
                    return False
                raise unknown_table(name, db_name)
            self.store.log(ops.DropView(db_id=db.id, name=name))
            return True

    # --- materialized views (galene/fe/mtmv.py refreshes them) ---------------------------
    def set_mv_refresh(
        self, table_id: int, refresh_state: str, *, error: str = "", txn_id: int = 0, base_versions=None
    ) -> bool:
        with self.lock:
            table = self.state.tables.get(table_id)
            if table is None or table.mtmv is None:
                return False
            self.store.log(
                ops.SetMvRefresh(
                    table_id=table_id,
                    refresh_state=refresh_state,
                    time=time.time(),
                    error=error[:4096],
                    txn_id=txn_id,
                    base_versions=dict(base_versions) if base_versions is not None else None,
                )
            )
            return True

    def set_table_properties(self, db_name: str, table_name: str, properties: dict[str, str]) -> None:
        with self.lock:
            table = self.table(db_name, table_name)
            self.store.log(ops.SetTableProperties(table_id=table.id, properties=dict(properties)))

    # --- transactions ---------------------------------------------------------------
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
            db = self.db(db_name)
            table = self.table(db_name, table_name)
            existing_id = db.labels.get(label)
            if existing_id is not None:
                existing = self.state.txns.get(existing_id)
                if existing is not None and existing.status != "ABORTED":
                    raise LabelAlreadyExists(label, existing)
            self._check_version_count(table)
            alloc, high = self._allocator()
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

    def _check_version_count(self, table: Table) -> None:
        limit = self.max_tablet_version_num
        if limit <= 0:
            return
        if len(table.rowsets) > limit // 2 and self.on_many_versions is not None:
            self.on_many_versions(table.id)
        # A tablet cannot have more rowsets than its table: most loads stop at the length check.
        if len(table.rowsets) <= limit:
            return
        if str(table.properties.get("disable_auto_compaction", "")).lower() == "true":
            return  # as Doris: no version limit where compaction is off
        counts = Counter(r.tablet_id for r in table.rowsets)
        tablet, n = counts.most_common(1)[0]
        if n > limit:
            raise LoadError(
                f"[E-235]failed to init rowset builder. version count: {n}, exceed limit: {limit}, "
                f"tablet: {tablet}. Please reduce the frequency of loading data or adjust the "
                "max_tablet_version_num or time_series_max_tablet_version_num in be.conf to a larger value."
            )

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
            self._log_commit(
                txn,
                table,
                rowsets,
                num_rows=num_rows,
                load_bytes=load_bytes,
                replace_partitions=replace_partitions or [],
                job_progress=job_progress,
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

    def _log_commit(
        self,
        txn: Txn,
        table: Table,
        rowsets: list[Rowset],
        *,
        num_rows: int,
        load_bytes: int,
        sub_labels=(),
        replace_partitions: list[int] | None = None,
        job_progress: ops.JobProgress | None = None,
    ) -> None:
        """Log the commit op: the rowsets become visible at the table's next version atomically."""
        version = table.visible_version + 1
        stamped = [
            msgspec.structs.replace(r, version=version, txn_id=txn.id, files=list(r.files)) for r in rowsets
        ]
        self.store.log(
            ops.CommitTxn(
                txn_id=txn.id,
                version=version,
                rowsets=stamped,
                time=time.time(),
                num_rows=num_rows,
                load_bytes=load_bytes,
                sub_labels=list(sub_labels),
                replace_partitions=list(replace_partitions or []),
                job_progress=job_progress,
            )
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
        db = self.db(db_name)
        txn_id = db.labels.get(label)
        return self.state.txns.get(txn_id) if txn_id is not None else None

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
        db = self.db(db_name)
        if txn_id is not None:
            txn = self.state.txns.get(txn_id)
            if txn is None or txn.db_id != db.id:
                raise GaleneError(f"transaction [{txn_id}] not found")
            return txn
        found = db.labels.get(label or "")
        txn = self.state.txns.get(found) if found is not None else None
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

    def _label_owner(self, db: Database, label: str, txn_id: int) -> Txn | None:
        """The live txn other than `txn_id` that holds `label`, if any (aborted ones do not)."""
        owner_id = db.labels.get(label)
        if owner_id is None or owner_id == txn_id:
            return None
        owner = self.state.txns.get(owner_id)
        return owner if owner is not None and owner.status != "ABORTED" else None

    def reserve_group_label(self, txn_id: int, label: str) -> Txn:
        """Bind a client label to a PREPARE merged txn, or raise LabelAlreadyExists."""
        with self.lock:
            txn = self._live_txn(txn_id, ("PREPARE",))
            db = self.state.databases[txn.db_id]
            owner = self._label_owner(db, label, -1)
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
                if (owner := self._label_owner(db, label, txn_id)) is not None
            }
            if conflicts:
                raise SubLabelConflict(conflicts)
            self._log_commit(
                txn, table, rowsets, num_rows=num_rows, load_bytes=load_bytes, sub_labels=sub_labels
            )
            return txn

    def abort_group_label(self, db_id: int, label: str, reason: str) -> None:
        """Abort the PREPARE txn holding a group label (its owner BE died; a holder of a copy
        of its WAL commits the group under the label instead). Visible ones stay."""
        with self.lock:
            db = self.state.databases.get(db_id)
            txn_id = db.labels.get(label) if db is not None else None
            txn = self.state.txns.get(txn_id) if txn_id is not None else None
            if txn is not None and txn.status == "PREPARE":
                self.store.log(ops.AbortTxn(txn_id=txn.id, reason=reason[:1024], time=time.time()))

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
            txn_id = db.labels.get(label) if db is not None else None
            txn = self.state.txns.get(txn_id) if txn_id is not None else None
            if txn is None:
                return "UNKNOWN"
            mine = txn.backend_id == backend_id and (begun_before is None or txn.begin_time <= begun_before)
            if txn.status == "PREPARE" and mine:
                self.store.log(ops.AbortTxn(txn_id=txn.id, reason=reason[:1024], time=time.time()))
                return "ABORTED"
            return txn.status

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
                db = self.state.databases.get(db_id)
                txn_id = db.labels.get(label) if db is not None else None
                txn = self.state.txns.get(txn_id) if txn_id is not None else None
                out[label] = txn.status if txn is not None else "UNKNOWN"
            return out

    # --- users and roles (privilege rules: galene/fe/auth.py) ---------------------------
    def _account(self, name: str, host: str, missing: str) -> model.UserAccount:
        account = self.state.accounts.get(model.account_key(name, host))
        if account is None:
            raise AnalysisError(missing.format(key=model.account_key(name, host), name=name, host=host))
        return account

    def create_user(self, account: model.UserAccount, if_not_exists: bool = False) -> bool:
        """CREATE USER: `account` complete (password hash, DEFAULT ROLE, comment)."""
        with self.lock:
            for role in account.roles:
                if role not in self.state.roles:
                    raise AnalysisError(f"Role: {role} does not exist")
            key = model.account_key(account.name, account.host)
            if key in self.state.accounts:
                if if_not_exists:
                    return False
                raise AnalysisError(f"User {key} already exist")
            account = msgspec.structs.replace(account, create_time=account.create_time or time.time())
            self.store.log(ops.CreateUser(account=account))
            return True

    def drop_user(self, name: str, host: str, if_exists: bool = False) -> bool:
        with self.lock:
            if model.account_key(name, host) not in self.state.accounts:
                if if_exists:
                    return False
                raise AnalysisError(f"User `{name}`@`{host}` does not exist.")
            self.store.log(ops.DropUser(name=name, host=host))
            return True

    def alter_user(
        self, name: str, host: str, *, password_sha1: str | None, comment: str | None, if_exists: bool = False
    ) -> bool:
        with self.lock:
            if model.account_key(name, host) not in self.state.accounts:
                if if_exists:
                    return False
                raise AnalysisError(f"User {model.account_key(name, host)} does not exist")
            self.store.log(ops.AlterUser(name=name, host=host, password_sha1=password_sha1, comment=comment))
            return True

    def set_password(self, name: str, host: str, password_sha1: str) -> None:
        with self.lock:
            self._account(name, host, "user {key} does not exist")
            self.store.log(ops.SetUserPassword(user=name, host=host, password_sha1=password_sha1))

    def create_role(self, name: str, comment: str = "", if_not_exists: bool = False) -> bool:
        with self.lock:
            if name in self.state.roles:
                if if_not_exists:
                    return False
                raise AnalysisError(f"Role {name} already exists")
            self.store.log(ops.CreateRole(role=model.Role(name=name, comment=comment)))
            return True

    def drop_role(self, name: str, if_exists: bool = False) -> bool:
        with self.lock:
            if name not in self.state.roles:
                if if_exists:
                    return False
                raise AnalysisError(f"Role {name} does not exist")
            self.store.log(ops.DropRole(name=name))
            return True

    def alter_role(self, name: str, comment: str) -> None:
        with self.lock:
            if name not in self.state.roles:
                raise AnalysisError(f"Role {name} not exist")
            self.store.log(ops.AlterRole(name=name, comment=comment))

    def _grant_holder(self, user: str | None, role: str | None) -> model.Grants:
        if user is not None:
            account = self.state.accounts.get(user)
            if account is None:
                raise AnalysisError(f"user {user} does not exist")
            return account.grants
        found = self.state.roles.get(role or "")
        if found is None:
            raise AnalysisError(f"Role: {role} does not exist")
        return found.grants

    def _check_grant_target(self, kind: str, target: str, privileges: list[str]) -> None:
        """Doris' checkTablePatternExist: the catalog, database and table must exist (not for
        CREATE_PRIV, which may be granted on what is to be created)."""
        if kind != "TABLE" or "CREATE_PRIV" in privileges:
            return
        ctl, db, tbl = target.split(".", 2)
        if ctl == "*":
            return
        if ctl != "internal":
            raise AnalysisError(f"catalog:{ctl} does not exist")
        if db == "*":
            return
        database = self.state.databases.get(self.state.db_names.get(db, -1))
        if database is None:
            raise AnalysisError(f"database:{db} does not exist")
        if tbl != "*" and tbl not in database.tables and tbl not in getattr(database, "views", {}):
            raise AnalysisError(f"table:{tbl} does not exist")

    def grant_privileges(
        self, user: str | None, role: str | None, kind: str, target: str, privileges: list[str]
    ) -> None:
        """GRANT privileges ON target TO user (an account key) | ROLE role."""
        with self.lock:
            self._check_grant_target(kind, target, privileges)
            self._grant_holder(user, role)
            self.store.log(
                ops.GrantPrivileges(user=user, role=role, kind=kind, target=target, privileges=list(privileges))
            )

    def revoke_privileges(
        self, user: str | None, role: str | None, kind: str, target: str, privileges: list[str]
    ) -> None:
        with self.lock:
            grants = self._grant_holder(user, role)
            entries = {"TABLE": grants.tables, "RESOURCE": grants.resources}.get(kind, grants.workload_groups)
            if target not in entries:
                if user is not None:
                    account = self.state.accounts[user]
                    raise AnalysisError(
                        f"There is no such grant defined for user '{account.name}' on host '{account.host}'", 1141
                    )
                raise AnalysisError(f"There is no such grant defined for role '{role}'", 1141)
            self.store.log(
                ops.RevokePrivileges(user=user, role=role, kind=kind, target=target, privileges=list(privileges))
            )

    def _check_role_grant(self, user: str, roles: list[str]) -> None:
        if user not in self.state.accounts:
            raise AnalysisError(f"user: {user} does not exist")
        for role in roles:
            if role not in self.state.roles:
                raise AnalysisError(f"role:{role} does not exist")

    def grant_roles(self, user: str, roles: list[str]) -> None:
        with self.lock:
            self._check_role_grant(user, roles)
            self.store.log(ops.GrantRoles(user=user, roles=list(roles)))

    def revoke_roles(self, user: str, roles: list[str]) -> None:
        with self.lock:
            self._check_role_grant(user, roles)
            self.store.log(ops.RevokeRoles(user=user, roles=list(roles)))

    # --- backends -------------------------------------------------------------------
    def add_backend(self, host: str, heartbeat_port: int, tags: dict[str, str] | None = None) -> Backend:
        return self.add_backends([(host, heartbeat_port)], tags)[0]

    def add_backends(self, hosts: list[tuple[str, int]], tags: dict[str, str] | None = None) -> list[Backend]:
        """ALTER SYSTEM ADD BACKEND of every host listed (all checked first, as Doris does)."""
        from galene.fe.load_routing import LoadRoutingError, check_endpoint_tags

        try:
            check_endpoint_tags(tags or {})
        except LoadRoutingError as e:
            raise AnalysisError(e.message) from None
        with self.lock:
            seen: set[tuple[str, int]] = set()
            for host, port in hosts:
                if (host, port) in seen or any(
                    be.host == host and be.heartbeat_port == port for be in self.state.backends.values()
                ):
                    raise AnalysisError(f"Same backend already exists[{host}:{port}]")
                seen.add((host, port))
            added = []
            for host, port in hosts:
                alloc, high = self._allocator()
                be = Backend(id=alloc(), host=host, heartbeat_port=port, tags=dict(tags or {}), add_time=time.time())
                self.store.log(ops.AddBackend(backend=be, next_id=high()))
                added.append(be)
            return added

    def find_backend(self, host: str, port: int) -> Backend:
        for be in self.state.backends.values():
            if be.host == host and be.heartbeat_port == port:
                return be
        raise AnalysisError(f"backend does not exists[{host}:{port}]")

    def _find_backends(self, hosts: list[tuple[str, int]], text: str) -> list[Backend]:
        out = []
        for host, port in hosts:
            be = next(
                (b for b in self.state.backends.values() if b.host == host and b.heartbeat_port == port), None
            )
            if be is None:
                raise AnalysisError(text.format(f"{host}:{port}"))
            out.append(be)
        return out

    def drop_backend(self, host: str, heartbeat_port: int) -> None:
        self.drop_backends([(host, heartbeat_port)])

    def drop_backends(self, hosts: list[tuple[str, int]]) -> None:
        """DROP / DROPP BACKEND: at once, every host listed (all checked first)."""
        with self.lock:
            for be in self._find_backends(hosts, "backend does not exists[{}]"):
                self.store.log(ops.DropBackend(backend_id=be.id))
                # It may still be running: whatever it commits later is refused.
                self.abort_backend_txns(be.id, "coordinate BE is dropped")

    def drop_backend_by_id(self, backend_id: int) -> bool:
        """The end of a DECOMMISSION: the BE holds nothing any more (False: already gone, or the
        decommission was cancelled meanwhile)."""
        with self.lock:
            be = self.state.backends.get(backend_id)
            if be is None or not be.decommissioned:
                return False
            self.store.log(ops.DropBackend(backend_id=backend_id))
            self.abort_backend_txns(backend_id, "coordinate BE is dropped")
            return True

    def decommission_backends(self, hosts: list[tuple[str, int]], decommissioned: bool = True) -> list[Backend]:
        """DECOMMISSION BACKEND (True) / CANCEL DECOMMISSION BACKEND (False). Doris: a backend
        not under decommission is skipped by CANCEL."""
        with self.lock:
            found = self._find_backends(hosts, "Backend does not exist[{}]")
            for be in found:
                if be.decommissioned != decommissioned:
                    self.store.log(ops.DecommissionBackend(backend_id=be.id, decommissioned=decommissioned))
            return found

    def modify_backend(
        self,
        host: str,
        heartbeat_port: int,
        tags: dict[str, str],
        disable_load: bool | None = None,
        disable_query: bool | None = None,
    ) -> None:
        from galene.fe.load_routing import LoadRoutingError, check_endpoint_tags

        try:
            check_endpoint_tags(tags)
        except LoadRoutingError as e:
            raise AnalysisError(e.message) from None
        with self.lock:
            be = self.find_backend(host, heartbeat_port)
            self.store.log(
                ops.ModifyBackend(
                    backend_id=be.id, tags=dict(tags), disable_load=disable_load, disable_query=disable_query
                )
            )

    # --- storage --------------------------------------------------------------------
    def referenced_files(self, retired_grace_seconds: float = 0.0, now: float | None = None) -> set[str]:
        """Relative paths of every file a committed or precommitted rowset owns, and of files
        retired (replaced by an overwrite or a compaction) less than the grace period ago."""
        now = time.time() if now is None else now
        with self.lock:
            files: set[str] = set()
            for table in self.state.tables.values():
                for r in table.rowsets:
                    files.update(r.files)
            for txn in self.state.txns.values():
                for r in txn.rowsets:
                    files.update(r.files)
            cutoff = now - retired_grace_seconds
            files.update(f for f, t in self.state.retired_files.items() if t >= cutoff)
            return files

    def purge_retired_files(self, before: float) -> int:
        """Forget retired files replaced before `before`; returns how many."""
        with self.lock:
            n = sum(1 for t in self.state.retired_files.values() if t < before)
            if n:
                self.store.log(ops.PurgeRetiredFiles(before=before))
            return n

    def compact_rowsets(self, table_id: int, removed: list[str], added: list[Rowset]) -> bool:
        """Replace `removed` rowsets of a table by `added` (compaction). False, and nothing
        logged, when any of them is gone meanwhile (an overwrite, a drop, another compaction)."""
        with self.lock:
            table = self.state.tables.get(table_id)
            if table is None:
                return False
            present = {r.id for r in table.rowsets}
            if not set(removed) <= present:
                return False
            self.store.log(ops.CompactRowsets(table_id=table_id, removed=list(removed), added=list(added), time=time.time()))
            return True

    # --- streaming jobs (galene/fe/jobs.py runs them) ------------------------------------------
    def job(self, name: str) -> StreamingJob | None:
        for job in self.state.jobs.values():
            if job.name == name:
                return job
        return None

    def _job(self, name: str) -> StreamingJob:
        job = self.job(name)
        if job is None:
            raise AnalysisError(f"Job [{name}] does not exist")  # Doris' JobManager text
        return job

    def create_job(self, build_job) -> StreamingJob:
        """`build_job(job_id, now)` returns the StreamingJob (validated by the caller)."""
        with self.lock:
            alloc, high = self._allocator()
            job = build_job(alloc(), time.time())
            if self.job(job.name) is not None:
                raise AnalysisError(f"job name exist, jobName:{job.name}")
            self.store.log(ops.CreateJob(job=job, next_id=high()))
            return job

    def drop_job(self, name: str, if_exists: bool = False) -> StreamingJob | None:
        with self.lock:
            job = self.job(name)
            if job is None:
                if if_exists:
                    return None
                raise AnalysisError(f"Job [{name}] does not exist")
            self.store.log(ops.DropJob(job_id=job.id))
            return job

    def pause_job(self, name: str) -> StreamingJob:
        """PAUSE JOB: a manual pause, which nothing resumes but RESUME JOB."""
        with self.lock:
            job = self._job(name)
            if job.status == "FINISHED" or (job.status == "PAUSED" and job.pause_reason == "MANUAL"):
                raise AnalysisError(f"Can't pause job {name}, job status is {job.status}")
            self.store.log(
                ops.SetJobStatus(
                    job_id=job.id,
                    status="PAUSED",
                    pause_reason="MANUAL",
                    runtime_msg="paused by user",
                    time=time.time(),
                )
            )
            return job

    def resume_job(self, name: str) -> StreamingJob:
        with self.lock:
            job = self._job(name)
            if job.status != "PAUSED":
                raise AnalysisError(f"Can't resume job {name}, job status is {job.status}, only PAUSED job can be resumed")
            self.store.log(
                ops.SetJobStatus(job_id=job.id, status="RUNNING", error_msg="", runtime_msg="", time=time.time())
            )
            return job

    def auto_resume_job(self, job_id: int, runtime_msg: str = "") -> bool:
        """Resume a job that a failure paused (never one the user paused). False if it is not."""
        with self.lock:
            job = self.state.jobs.get(job_id)
            if job is None or job.status != "PAUSED" or job.pause_reason != "AUTO":
                return False
            self.store.log(
                ops.SetJobStatus(job_id=job_id, status="RUNNING", runtime_msg=runtime_msg, time=time.time())
            )
            return True

    def start_job(self, job_id: int) -> bool:
        """PENDING -> RUNNING when the runner takes the job up."""
        with self.lock:
            job = self.state.jobs.get(job_id)
            if job is None or job.status != "PENDING":
                return False
            self.store.log(ops.SetJobStatus(job_id=job_id, status="RUNNING", time=time.time()))
            return True

    def alter_job(self, name: str, properties: dict[str, str], offset: str | None) -> StreamingJob:
        with self.lock:
            job = self._job(name)
            if job.status != "PAUSED":
                raise AnalysisError(f"Only PAUSED job can be altered, job {name} is {job.status}")
            self.store.log(ops.AlterJob(job_id=job.id, properties=dict(properties), offset=offset, time=time.time()))
            return job

    def fail_job_task(self, job_id: int, task: JobTask, error_msg: str, runtime_msg: str = "") -> bool:
        with self.lock:
            if job_id not in self.state.jobs:
                return False
            self.store.log(
                ops.FailJobTask(
                    job_id=job_id, task=task, error_msg=error_msg[:4096], runtime_msg=runtime_msg[:1024], time=time.time()
                )
            )
            return True
