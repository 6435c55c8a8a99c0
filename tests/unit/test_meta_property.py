"""Property: random valid op sequences + checkpoints + restarts never change the state.

A hypothesis state machine builds each op from the current live state (as the FE would),
logs it, checkpoints often (small roll_num and forced checkpoints), and restarts the store
at random points; after every restart the recovered state must equal the live one field
by field.
"""

from __future__ import annotations

import shutil
import tempfile

import msgspec
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from galene.catalog import model, ops
from galene.catalog.model import (
    Backend,
    Column,
    Database,
    JobStatistic,
    JobTask,
    MaterializedView,
    Partition,
    Rowset,
    StreamingJob,
    Table,
    Txn,
    View,
    with_column_ids,
)
from galene.common.types import ColumnType
from galene.fe.auth import native_hash
from galene.meta.store import MetaStore

names = st.sampled_from(["a", "b", "c", "d", "e"])
text = st.text(max_size=6)
times = st.floats(min_value=0, max_value=2e9, allow_nan=False)
file_names = st.sampled_from(["", "p/f1.csv", "p/f2.csv", "p/f3.csv"])
statistics = st.builds(
    JobStatistic,
    scanned_rows=st.integers(0, 10**6),
    load_bytes=st.integers(0, 10**9),
    file_number=st.integers(0, 100),
    file_size=st.integers(0, 10**9),
    filtered_rows=st.integers(0, 100),
)
hosts = st.sampled_from(["%", "10.0.0.%", "localhost", "192.168.1.7"])
privilege_lists = st.lists(st.sampled_from(list(model.PRIVILEGES)), unique=True, min_size=1, max_size=4)
grant_targets = st.sampled_from(["*.*.*", "internal.*.*", "internal.a.*", "internal.a.t", "internal.b.u"])
column_types = st.sampled_from(
    [
        ColumnType(name="INT"),
        ColumnType(name="VARCHAR", length=32),
        ColumnType(name="DECIMAL", precision=10, scale=2),
    ]
)


class MetaStoreMachine(RuleBasedStateMachine):
    @initialize(roll_num=st.integers(3, 7), policy=st.sampled_from(["SYNC", "WRITE_NO_SYNC", "NO_SYNC"]))
    def start(self, roll_num, policy):
        self.dir = tempfile.mkdtemp(prefix="galene-meta-prop-")
        self.kw = {"roll_num": roll_num, "sync_policy": policy}
        self.store = MetaStore(self.dir, **self.kw)
        self.store.open()

    @property
    def state(self):
        return self.store.state

    def alloc(self) -> int:
        """The first free id; each op carries next_id past what it used, as the FE does."""
        return self.state.next_id

    # --- databases and tables -----------------------------------------------------------
    @rule(name=names, t=times)
    def create_db(self, name, t):
        if name in self.state.db_names:
            return
        db_id = self.alloc()
        self.store.log(ops.CreateDb(db=Database(id=db_id, name=name, create_time=t), next_id=db_id + 1))

    @precondition(lambda self: self.state.databases)
    @rule(data=st.data())
    def drop_db(self, data):
        db_id = data.draw(st.sampled_from(sorted(self.state.databases)))
        self.store.log(ops.DropDb(db_id=db_id))

    @precondition(lambda self: self.state.databases)
    @rule(
        data=st.data(),
        name=names,
        n_parts=st.integers(1, 3),
        buckets=st.integers(1, 2),
        ctype=column_types,
        comment=text,
    )
    def create_table(self, data, name, n_parts, buckets, ctype, comment):
        db = self.state.databases[data.draw(st.sampled_from(sorted(self.state.databases)))]
        if name in db.tables:
            return
        next_id = self.alloc()
        table_id, next_id = next_id, next_id + 1
        partitions = []
        for i in range(n_parts):
            tablets = list(range(next_id + 1, next_id + 1 + buckets))
            partitions.append(
                Partition(
                    id=next_id,
                    name=f"p{i}",
                    range_lower=None if i == 0 else [str(i * 10)],
                    range_upper=None if i == n_parts - 1 else [str((i + 1) * 10)],
                    tablet_ids=tablets,
                )
            )
            next_id += 1 + buckets
        # Some tables are materialized views (their refresh state changes by SetMvRefresh).
        mtmv = MaterializedView(query_sql="SELECT 1", trigger="SCHEDULE", interval=2, unit="MINUTE") if data.draw(
            st.booleans()
        ) else None
        table = Table(
            id=table_id,
            db_id=db.id,
            name=name,
            columns=[
                Column(name="k", type=ColumnType(name="INT"), is_key=True, nullable=False, id=1),
                Column(name="v", type=ctype, comment=comment, id=2),
            ],
            mtmv=mtmv,
            key_columns=["k"],
            partition_type="RANGE",
            partition_columns=["k"],
            partitions=partitions,
            distribution_columns=["k"],
            buckets=buckets,
        )
        self.store.log(ops.CreateTable(table=table, next_id=next_id))

    def pick_table(self, data) -> Table:
        return self.state.tables[data.draw(st.sampled_from(sorted(self.state.tables)))]

    @precondition(lambda self: self.state.tables)
    @rule(data=st.data())
    def drop_table(self, data):
        table = self.pick_table(data)
        self.store.log(ops.DropTable(db_id=table.db_id, table_id=table.id))

    @precondition(lambda self: self.state.tables)
    @rule(data=st.data(), new_name=names)
    def rename_table(self, data, new_name):
        table = self.pick_table(data)
        if new_name in self.state.databases[table.db_id].tables:
            return
        self.store.log(ops.RenameTable(db_id=table.db_id, table_id=table.id, new_name=new_name))

    # --- schema objects: schema change, REPLACE WITH TABLE, views, MV refreshes ----------------
    @precondition(lambda self: self.state.tables)
    @rule(
        data=st.data(), new_col=names, ctype=column_types, comment=text, storage=st.booleans(), t=times,
        index=st.booleans(),
    )  # fmt: skip
    def alter_table(self, data, new_col, ctype, comment, storage, t, index):
        """ADD COLUMN (storage: a new schema version, the old columns to the history) or a
        comment-only change (same version); `index`: an ADD INDEX on the first column with it."""
        table = self.pick_table(data)
        columns = with_column_ids(table.columns)
        previous = None
        version = table.schema_version
        if storage and table.column(new_col) is None:
            next_id = max(c.id for c in columns) + 1
            columns = [*columns, Column(name=new_col, type=ctype, default="0", id=next_id)]
            previous = with_column_ids(table.columns)
            version += 1
        self.store.log(
            ops.AlterTable(
                table_id=table.id,
                columns=columns,
                key_columns=list(table.key_columns),
                partition_columns=list(table.partition_columns),
                distribution_columns=list(table.distribution_columns),
                properties=dict(table.properties),
                comment=comment,
                schema_version=version,
                previous_columns=previous,
                time=t,
                indexes=[
                    *table.indexes,
                    model.Index(name=f"idx_{len(table.indexes)}", columns=[columns[0].name], comment=comment),
                ]
                if index
                else None,
            )
        )

    @precondition(lambda self: len(self.state.tables) >= 2)
    @rule(data=st.data(), swap=st.booleans(), t=times)
    def replace_table(self, data, swap, t):
        a = self.pick_table(data)
        b = self.pick_table(data)
        if a.id == b.id or a.db_id != b.db_id:
            return
        self.store.log(ops.ReplaceTable(db_id=a.db_id, table_id=a.id, other_id=b.id, swap=swap, time=t))

    @precondition(lambda self: self.state.databases)
    @rule(data=st.data(), name=st.sampled_from(["v1", "v2", "v3"]), sql=text, comment=text, t=times)
    def create_view(self, data, name, sql, comment, t):
        db = self.state.databases[data.draw(st.sampled_from(sorted(self.state.databases)))]
        existing = db.views.get(name)
        view_id = existing.id if existing else self.alloc()
        view = View(
            id=view_id, db_id=db.id, name=name, sql=f"SELECT * FROM `internal`.`{db.name}`.`t` -- {sql}",
            columns=[Column(name="k", type=ColumnType(name="INT"))], column_names=["k"] if comment else [],
            comment=comment, definer="root", create_time=t, update_time=t,
        )  # fmt: skip
        self.store.log(ops.CreateView(view=view, next_id=0 if existing else view_id + 1))

    def views(self) -> list[tuple[int, str]]:
        return sorted((db.id, name) for db in self.state.databases.values() for name in db.views)

    @precondition(lambda self: self.views())
    @rule(data=st.data(), new_name=st.sampled_from(["v1", "v2", "v4"]), drop=st.booleans())
    def drop_or_rename_view(self, data, new_name, drop):
        db_id, name = data.draw(st.sampled_from(self.views()))
        if drop:
            self.store.log(ops.DropView(db_id=db_id, name=name))
        elif new_name not in self.state.databases[db_id].views:
            self.store.log(ops.RenameView(db_id=db_id, name=name, new_name=new_name))

    @precondition(lambda self: any(t.mtmv for t in self.state.tables.values()))
    @rule(
        data=st.data(),
        refresh_state=st.sampled_from(["REFRESHING", "SUCCESS", "FAIL"]),
        error=text,
        t=times,
    )
    def set_mv_refresh(self, data, refresh_state, error, t):
        table_id = data.draw(st.sampled_from(sorted(tid for tid, t_ in self.state.tables.items() if t_.mtmv)))
        versions = {str(tid): self.state.tables[tid].visible_version for tid in sorted(self.state.tables)[:2]}
        self.store.log(
            ops.SetMvRefresh(
                table_id=table_id,
                refresh_state=refresh_state,
                time=t,
                error=error if refresh_state == "FAIL" else "",
                txn_id=table_id if refresh_state == "SUCCESS" else 0,
                base_versions=versions if refresh_state == "SUCCESS" else None,
            )
        )

    @precondition(lambda self: self.state.tables)
    @rule(data=st.data(), props=st.dictionaries(names, text, max_size=3))
    def set_table_properties(self, data, props):
        self.store.log(ops.SetTableProperties(table_id=self.pick_table(data).id, properties=props))

    # --- transactions -------------------------------------------------------------------
    @precondition(lambda self: self.state.tables)
    @rule(data=st.data(), label=names, t=times, timeout=st.integers(1, 1000))
    def begin_txn(self, data, label, t, timeout):
        table = self.pick_table(data)
        if label in self.state.databases[table.db_id].labels:
            return
        txn_id = self.alloc()
        txn = Txn(
            id=txn_id, db_id=table.db_id, table_id=table.id, label=label, begin_time=t, timeout_s=timeout
        )
        self.store.log(ops.BeginTxn(txn=txn, next_id=txn_id + 1))

    def txns_in(self, *statuses) -> list[int]:
        return sorted(t.id for t in self.state.txns.values() if t.status in statuses)

    def label_is_free(self, db_id: int, label: str) -> bool:
        owner = self.state.databases[db_id].labels.get(label)
        return (
            owner is None or self.state.txns.get(owner) is None or self.state.txns[owner].status == "ABORTED"
        )

    @precondition(lambda self: self.txns_in("PREPARE"))
    @rule(data=st.data(), label=st.sampled_from(["c1", "c2", "c3", "a"]))
    def reserve_label(self, data, label):
        """Group commit: a client label reserved for a PREPARE merged txn."""
        txn = self.state.txns[data.draw(st.sampled_from(self.txns_in("PREPARE")))]
        if txn.db_id not in self.state.databases or not self.label_is_free(txn.db_id, label):
            return
        self.store.log(ops.ReserveLabel(txn_id=txn.id, label=label))

    @precondition(lambda self: self.txns_in("PREPARE"))
    @rule(data=st.data(), t=times, rows=st.integers(0, 10**9))
    def commit_txn(self, data, t, rows):
        txn = self.state.txns[data.draw(st.sampled_from(self.txns_in("PREPARE")))]
        # Group commit: the final client labels are some of the reserved ones plus free ones.
        sub_labels = []
        if txn.db_id in self.state.databases:
            candidates = sorted(set(txn.sub_labels) | {"c4", "c5"})
            sub_labels = [
                label
                for label in data.draw(st.lists(st.sampled_from(candidates), unique=True, max_size=3))
                if label in txn.sub_labels or self.label_is_free(txn.db_id, label)
            ]
        table = self.state.tables.get(txn.table_id)  # may have been dropped while "loading"
        version = (table.visible_version if table else 1) + 1
        rowsets = []
        for p in table.partitions if table else []:
            for tablet_id in p.tablet_ids:
                rowset_id = f"{txn.id:x}{tablet_id:x}"
                rowsets.append(
                    Rowset(
                        id=rowset_id,
                        tablet_id=tablet_id,
                        partition_id=p.id,
                        version=version,
                        txn_id=txn.id,
                        files=[f"data/{table.id}/{rowset_id}.parquet"],
                        num_rows=rows,
                        data_size=rows * 8,
                        schema_version=table.schema_version,
                    )
                )
        # A streaming job's batch: offset and statistics ride on the commit; sometimes with a
        # stale generation (a batch planned before an ALTER), which apply must ignore.
        progress = None
        if self.state.jobs and data.draw(st.booleans()):
            job = self.state.jobs[data.draw(st.sampled_from(sorted(self.state.jobs)))]
            stale = data.draw(st.booleans())
            progress = ops.JobProgress(
                job_id=job.id,
                generation=job.offset_generation - 1 if stale else job.offset_generation,
                prev_offset=job.offset,
                offset=data.draw(file_names),
                end_offset=data.draw(file_names),
                statistic=data.draw(statistics),
                task=JobTask(task_id=txn.id, label=txn.label, txn_id=txn.id, statistic=data.draw(statistics)),
            )
        self.store.log(
            ops.CommitTxn(
                txn_id=txn.id,
                version=version,
                rowsets=rowsets,
                time=t,
                num_rows=rows,
                load_bytes=rows * 8,
                sub_labels=sub_labels,
                job_progress=progress,
            )
        )

    @precondition(lambda self: self.txns_in("PREPARE"))
    @rule(data=st.data(), reason=text, t=times)
    def abort_txn(self, data, reason, t):
        txn_id = data.draw(st.sampled_from(self.txns_in("PREPARE")))
        self.store.log(ops.AbortTxn(txn_id=txn_id, reason=reason, time=t))

    @precondition(lambda self: self.txns_in("VISIBLE", "ABORTED"))
    @rule(data=st.data())
    def expire_txns(self, data):
        done = self.txns_in("VISIBLE", "ABORTED")
        chosen = data.draw(st.lists(st.sampled_from(done), min_size=1, unique=True))
        self.store.log(ops.ExpireTxns(txn_ids=chosen))

    # --- streaming jobs -----------------------------------------------------------------
    @precondition(lambda self: self.state.databases)
    @rule(data=st.data(), name=names, t=times, props=st.dictionaries(names, text, max_size=2))
    def create_job(self, data, name, t, props):
        if any(j.name == name for j in self.state.jobs.values()):
            return
        job_id = self.alloc()
        db_id = data.draw(st.sampled_from(sorted(self.state.databases)))
        job = StreamingJob(
            id=job_id, name=name, db_id=db_id, execute_sql="INSERT INTO t SELECT * FROM S3()",
            properties=props, create_time=t, offset=data.draw(file_names),
        )  # fmt: skip
        self.store.log(ops.CreateJob(job=job, next_id=job_id + 1))

    def pick_job(self, data) -> StreamingJob:
        return self.state.jobs[data.draw(st.sampled_from(sorted(self.state.jobs)))]

    @precondition(lambda self: self.state.jobs)
    @rule(data=st.data())
    def drop_job(self, data):
        self.store.log(ops.DropJob(job_id=self.pick_job(data).id))

    @precondition(lambda self: self.state.jobs)
    @rule(
        data=st.data(),
        status=st.sampled_from(["RUNNING", "PAUSED", "FINISHED"]),
        reason=st.sampled_from(["", "MANUAL", "AUTO"]),
        msg=st.none() | text,
        t=times,
    )
    def set_job_status(self, data, status, reason, msg, t):
        job = self.pick_job(data)
        self.store.log(
            ops.SetJobStatus(job_id=job.id, status=status, pause_reason=reason, error_msg=msg, runtime_msg=msg, time=t)
        )

    @precondition(lambda self: self.state.jobs)
    @rule(data=st.data(), props=st.dictionaries(names, text, max_size=2), t=times)
    def alter_job(self, data, props, t):
        job = self.pick_job(data)
        offset = data.draw(st.none() | file_names)
        self.store.log(ops.AlterJob(job_id=job.id, properties=props, offset=offset, time=t))

    @precondition(lambda self: self.state.jobs)
    @rule(data=st.data(), msg=text, t=times, status=st.sampled_from(["FAILED", "CANCELED"]))
    def fail_job_task(self, data, msg, t, status):
        job = self.pick_job(data)
        task = JobTask(task_id=self.alloc(), status=status, error_msg=msg, offset_from=job.offset, create_time=t)
        self.store.log(ops.FailJobTask(job_id=job.id, task=task, error_msg=msg, runtime_msg=msg, time=t))

    # --- backends -----------------------------------------------------------------------
    @rule(port=st.integers(9000, 9100), tags=st.dictionaries(names, text, max_size=2), t=times)
    def add_backend(self, port, tags, t):
        be_id = self.alloc()
        backend = Backend(
            id=be_id, host="127.0.0.1", heartbeat_port=port, http_port=port + 1, tags=tags, add_time=t
        )
        self.store.log(ops.AddBackend(backend=backend, next_id=be_id + 1))

    @precondition(lambda self: self.state.backends)
    @rule(data=st.data(), tags=st.dictionaries(names, text, min_size=1, max_size=2))
    def modify_backend(self, data, tags):
        be_id = data.draw(st.sampled_from(sorted(self.state.backends)))
        self.store.log(ops.ModifyBackend(backend_id=be_id, tags=tags))

    # --- users and roles ----------------------------------------------------------------
    @rule(name=names, host=hosts, password=text, comment=text, t=times, data=st.data())
    def create_user(self, name, host, password, comment, t, data):
        key = model.account_key(name, host)
        if key in self.state.accounts:
            return
        roles = data.draw(st.lists(st.sampled_from(sorted(self.state.roles)), unique=True, max_size=2))
        account = model.UserAccount(
            name=name, host=host, password=native_hash(password), comment=comment, roles=roles, create_time=t
        )
        self.store.log(ops.CreateUser(account=account))

    def pick_account(self, data, builtin: bool = True) -> model.UserAccount:
        keys = sorted(k for k in self.state.accounts if builtin or k not in ("'root'@'%'", "'admin'@'%'"))
        return self.state.accounts[data.draw(st.sampled_from(keys))]

    @precondition(lambda self: len(self.state.accounts) > 2)
    @rule(data=st.data())
    def drop_user(self, data):
        account = self.pick_account(data, builtin=False)
        self.store.log(ops.DropUser(name=account.name, host=account.host))

    @rule(data=st.data(), password=st.none() | text, comment=st.none() | text)
    def alter_user(self, data, password, comment):
        account = self.pick_account(data)
        hashed = native_hash(password) if password is not None else None
        self.store.log(ops.AlterUser(name=account.name, host=account.host, password_sha1=hashed, comment=comment))

    @rule(data=st.data(), password=text)
    def set_password(self, data, password):
        account = self.pick_account(data)
        self.store.log(ops.SetUserPassword(user=account.name, host=account.host, password_sha1=native_hash(password)))

    @rule(name=names, comment=text)
    def create_role(self, name, comment):
        if name not in self.state.roles:
            self.store.log(ops.CreateRole(role=model.Role(name=name, comment=comment)))

    def user_roles(self) -> list[str]:
        return sorted(r for r, role in self.state.roles.items() if not role.builtin)

    @precondition(lambda self: self.user_roles())
    @rule(data=st.data())
    def drop_role(self, data):
        self.store.log(ops.DropRole(name=data.draw(st.sampled_from(self.user_roles()))))

    @precondition(lambda self: self.user_roles())
    @rule(data=st.data(), comment=text)
    def alter_role(self, data, comment):
        self.store.log(ops.AlterRole(name=data.draw(st.sampled_from(self.user_roles())), comment=comment))

    def pick_grantee(self, data) -> tuple[str | None, str | None]:
        if self.user_roles() and data.draw(st.booleans()):
            return None, data.draw(st.sampled_from(self.user_roles()))
        account = self.pick_account(data)
        return model.account_key(account.name, account.host), None

    @rule(data=st.data(), kind=st.sampled_from(["TABLE", "RESOURCE", "WORKLOAD_GROUP"]), privs=privilege_lists)
    def grant_privileges(self, data, kind, privs):
        user, role = self.pick_grantee(data)
        target = data.draw(grant_targets if kind == "TABLE" else names)
        self.store.log(ops.GrantPrivileges(user=user, role=role, kind=kind, target=target, privileges=privs))

    @rule(data=st.data(), privs=privilege_lists)
    def revoke_privileges(self, data, privs):
        user, role = self.pick_grantee(data)
        grants = self.state.accounts[user].grants if user is not None else self.state.roles[role].grants
        held = [("TABLE", k) for k in grants.tables] + [("RESOURCE", k) for k in grants.resources]
        held += [("WORKLOAD_GROUP", k) for k in grants.workload_groups]
        if not held:
            return
        kind, target = data.draw(st.sampled_from(sorted(held)))
        self.store.log(ops.RevokePrivileges(user=user, role=role, kind=kind, target=target, privileges=privs))

    @rule(data=st.data(), revoke=st.booleans())
    def grant_roles(self, data, revoke):
        account = self.pick_account(data)
        roles = data.draw(st.lists(st.sampled_from(sorted(self.state.roles)), unique=True, min_size=1, max_size=2))
        op = ops.RevokeRoles if revoke else ops.GrantRoles
        self.store.log(op(user=model.account_key(account.name, account.host), roles=roles))

    # --- persistence --------------------------------------------------------------------
    @rule()
    def checkpoint(self):
        path = self.store.checkpoint()
        assert path.name == f"image.{self.store.last_journal_id}"

    @rule()
    def reopen(self):
        live = self.store
        live.close()
        self.store = MetaStore(self.dir, **self.kw)
        recovered = self.store.open()
        assert msgspec.msgpack.encode(recovered) == msgspec.msgpack.encode(live.state)
        assert recovered == live.state
        assert self.store.last_journal_id == live.last_journal_id

    def teardown(self):
        try:
            if hasattr(self, "store"):
                self.reopen()
                self.store.close()
        finally:
            if hasattr(self, "dir"):
                shutil.rmtree(self.dir, ignore_errors=True)


MetaStoreMachine.TestCase.settings = settings(
    max_examples=80, stateful_step_count=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_meta_store_roundtrip = MetaStoreMachine.TestCase
