"""The FE's metadata service: validates requests, builds journal ops, logs them.

Everything that changes FE metadata goes through `CatalogService`: it checks the request
against the current state under one lock, allocates ids, and hands a fully specified op to
`MetaStore.log` (journal first, then apply). Readers use `state` directly; the lock only
serializes writers so that check-then-log cannot race. Transactions are its `txns`
(`galene.txn.manager.TxnManager`), which write under the same lock through the same log.
"""

from __future__ import annotations

import logging
import threading
import time

import msgspec

from galene.catalog import lookup, model, ops
from galene.catalog.model import (
    Backend,
    CatalogState,
    Database,
    JobTask,
    Rowset,
    StreamingJob,
    Table,
    View,
    with_column_ids,
)
from galene.common.errors import AnalysisError, unknown_table
from galene.meta.store import MetaStore
from galene.txn.manager import TxnManager

log = logging.getLogger(__name__)

INFORMATION_SCHEMA = "information_schema"


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
        # Transactions: the same lock and the same log as every other op (galene/txn/).
        self.txns = TxnManager(
            store,
            self.lock,
            label_keep_max_second=label_keep_max_second,
            default_load_timeout_s=default_load_timeout_s,
            precommit_timeout_s=precommit_timeout_s,
            max_tablet_version_num=max_tablet_version_num,
        )

    @property
    def state(self) -> CatalogState:
        return self.store.state

    # --- lookups --------------------------------------------------------------------
    def db(self, name: str) -> Database:
        return lookup.database(self.state, name)

    def has_db(self, name: str) -> bool:
        return name in self.state.db_names or name.lower() == INFORMATION_SCHEMA

    def table(self, db_name: str, table_name: str) -> Table:
        return lookup.table(self.state, db_name, table_name)

    # --- DDL ------------------------------------------------------------------------
    def create_database(self, name: str, if_not_exists: bool = False, properties: dict | None = None) -> bool:
        if not name or name.lower() == INFORMATION_SCHEMA:
            raise AnalysisError(f"Can't create database '{name}'; database exists")
        with self.lock:
            if name in self.state.db_names:
                if if_not_exists:
                    return False
                raise AnalysisError(f"Can't create database '{name}'; database exists")
            alloc, high = ops.id_allocator(self.state)
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
            alloc, high = ops.id_allocator(self.state)
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
            alloc, high = ops.id_allocator(self.state)
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
                alloc, high = ops.id_allocator(self.state)
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
                self.txns.abort_backend_txns(be.id, "coordinate BE is dropped")

    def drop_backend_by_id(self, backend_id: int) -> bool:
        """The end of a DECOMMISSION: the BE holds nothing any more (False: already gone, or the
        decommission was cancelled meanwhile)."""
        with self.lock:
            be = self.state.backends.get(backend_id)
            if be is None or not be.decommissioned:
                return False
            self.store.log(ops.DropBackend(backend_id=backend_id))
            self.txns.abort_backend_txns(backend_id, "coordinate BE is dropped")
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
            alloc, high = ops.id_allocator(self.state)
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
