"""Applying journal ops to `CatalogState`: the only way FE metadata changes.

`apply_op` is pure with respect to I/O: it mutates the state in memory from the op's
values alone. It must be deterministic: replaying the same ops on the same image gives
an equal state. Validation (does the name exist, is the label free) happens before an op
is logged, in the FE service; apply trusts the op but tolerates replays of ops whose
target was already removed (e.g. abort of an expired txn) so that a journal never wedges.
"""

from __future__ import annotations

from functools import singledispatch

from galene.catalog import model, ops
from galene.catalog.model import (
    JOB_TASK_HISTORY,
    CatalogState,
    JobStatistic,
    JobTask,
    SchemaVersion,
    StreamingJob,
)


def apply_op(state: CatalogState, op: ops.Op) -> None:
    _apply(op, state)
    state.next_id = max(state.next_id, op.next_id)


@singledispatch
def _apply(op, state: CatalogState) -> None:  # pragma: no cover - every op type is registered
    raise TypeError(f"no apply for {type(op).__name__}")


@_apply.register
def _(op: ops.CreateDb, state: CatalogState) -> None:
    state.databases[op.db.id] = op.db
    state.db_names[op.db.name] = op.db.id


@_apply.register
def _(op: ops.DropDb, state: CatalogState) -> None:
    db = state.databases.pop(op.db_id, None)
    if db is None:
        return
    state.db_names.pop(db.name, None)
    for table_id in db.tables.values():
        state.tables.pop(table_id, None)
    for txn_id in db.labels.values():
        state.txns.pop(txn_id, None)


@_apply.register
def _(op: ops.CreateTable, state: CatalogState) -> None:
    db = state.databases[op.table.db_id]
    db.tables[op.table.name] = op.table.id
    state.tables[op.table.id] = op.table


@_apply.register
def _(op: ops.DropTable, state: CatalogState) -> None:
    table = state.tables.pop(op.table_id, None)
    db = state.databases.get(op.db_id)
    if table is not None and db is not None and db.tables.get(table.name) == table.id:
        del db.tables[table.name]


@_apply.register
def _(op: ops.RenameTable, state: CatalogState) -> None:
    table = state.tables[op.table_id]
    db = state.databases[op.db_id]
    db.tables.pop(table.name, None)
    table.name = op.new_name
    db.tables[op.new_name] = table.id


@_apply.register
def _(op: ops.SetTableProperties, state: CatalogState) -> None:
    state.tables[op.table_id].properties.update(op.properties)


@_apply.register
def _(op: ops.AlterTable, state: CatalogState) -> None:
    table = state.tables.get(op.table_id)
    if table is None:
        return
    if op.previous_columns is not None:
        table.schema_history.append(SchemaVersion(version=table.schema_version, columns=op.previous_columns))
        table.schema_version = op.schema_version
    table.columns = op.columns
    table.key_columns = op.key_columns
    table.partition_columns = op.partition_columns
    table.distribution_columns = op.distribution_columns
    table.properties = op.properties
    table.comment = op.comment
    if op.indexes is not None:
        table.indexes = op.indexes
    table.update_time = op.time or table.update_time


@_apply.register
def _(op: ops.ReplaceTable, state: CatalogState) -> None:
    db = state.databases.get(op.db_id)
    a = state.tables.get(op.table_id)
    b = state.tables.get(op.other_id)
    if db is None or a is None or b is None:
        return
    a_name, b_name = a.name, b.name
    b.name = a_name
    db.tables[a_name] = b.id
    if op.swap:
        a.name = b_name
        db.tables[b_name] = a.id
    else:
        db.tables.pop(b_name, None)
        del state.tables[a.id]
        for r in a.rowsets:  # a query that bound `a` before keeps reading them for the grace
            _retire(state, r.files, op.time)


@_apply.register
def _(op: ops.CreateView, state: CatalogState) -> None:
    db = state.databases.get(op.view.db_id)
    if db is not None:
        db.views[op.view.name] = op.view


@_apply.register
def _(op: ops.DropView, state: CatalogState) -> None:
    db = state.databases.get(op.db_id)
    if db is not None:
        db.views.pop(op.name, None)


@_apply.register
def _(op: ops.RenameView, state: CatalogState) -> None:
    db = state.databases.get(op.db_id)
    view = db.views.pop(op.name, None) if db is not None else None
    if view is not None:
        view.name = op.new_name
        db.views[op.new_name] = view


@_apply.register
def _(op: ops.SetMvRefresh, state: CatalogState) -> None:
    table = state.tables.get(op.table_id)
    mv = table.mtmv if table is not None else None
    if mv is None:
        return
    mv.refresh_state = op.refresh_state
    if op.refresh_state == "REFRESHING":
        mv.last_refresh_start = op.time
        mv.last_refresh_error = ""
        return
    mv.last_refresh_finish = op.time
    mv.last_refresh_error = op.error
    mv.last_refresh_txn = op.txn_id or mv.last_refresh_txn
    if op.refresh_state == "SUCCESS":
        mv.state = "NORMAL"
        mv.refresh_count += 1
        if op.base_versions is not None:
            mv.base_versions = dict(op.base_versions)


@_apply.register
def _(op: ops.BeginTxn, state: CatalogState) -> None:
    state.txns[op.txn.id] = op.txn
    db = state.databases.get(op.txn.db_id)
    if db is not None:
        db.labels[op.txn.label] = op.txn.id


@_apply.register
def _(op: ops.PrecommitTxn, state: CatalogState) -> None:
    txn = state.txns[op.txn_id]
    txn.status = "PRECOMMITTED"
    txn.rowsets = op.rowsets
    txn.commit_time = op.time
    txn.num_rows = op.num_rows
    txn.load_bytes = op.load_bytes


@_apply.register
def _(op: ops.CommitTxn, state: CatalogState) -> None:
    txn = state.txns[op.txn_id]
    txn.status = "VISIBLE"
    txn.version = op.version
    txn.commit_time = txn.commit_time or op.time
    txn.finish_time = op.time
    txn.num_rows = op.num_rows or txn.num_rows
    txn.load_bytes = op.load_bytes or txn.load_bytes
    txn.rowsets = []
    _bind_sub_labels(state, txn, op.sub_labels)
    if op.job_progress is not None:
        _advance_job(state, op.job_progress)
    table = state.tables.get(txn.table_id)
    if table is None:  # dropped while the load ran; its files become orphans for GC
        return
    table.visible_version = op.version
    table.update_time = op.time
    touched = {r.partition_id for r in op.rowsets}
    if op.replace_partitions:
        replaced = set(op.replace_partitions)
        touched |= replaced
        kept = []
        for r in table.rowsets:
            if r.partition_id in replaced and r.version < op.version:
                _retire(state, r.files, op.time)
            else:
                kept.append(r)
        table.rowsets = kept
    for p in table.partitions:
        if p.id in touched:
            p.visible_version = op.version
    table.rowsets.extend(op.rowsets)


def _advance_job(state: CatalogState, p: ops.JobProgress) -> None:
    job = state.jobs.get(p.job_id)
    # A batch planned before an ALTER of the offset never moves it (refused before logging;
    # checked again here so that no journal, however produced, can restore a stale offset).
    if job is None or job.offset_generation != p.generation:
        return
    job.offset = p.offset
    if p.end_offset:
        job.end_offset = p.end_offset
    _add_statistic(job.statistic, p.statistic)
    job.succeed_task_count += 1
    job.error_msg = ""
    job.runtime_msg = ""
    if p.task is not None:
        _record_task(job, p.task)


def _add_statistic(total: JobStatistic, delta: JobStatistic) -> None:
    total.scanned_rows += delta.scanned_rows
    total.load_bytes += delta.load_bytes
    total.file_number += delta.file_number
    total.file_size += delta.file_size
    total.filtered_rows += delta.filtered_rows


def _record_task(job: StreamingJob, task: JobTask) -> None:
    job.tasks.append(task)
    if len(job.tasks) > JOB_TASK_HISTORY:
        del job.tasks[: len(job.tasks) - JOB_TASK_HISTORY]


def _retire(state: CatalogState, files: list[str], when: float) -> None:
    for f in files:
        state.retired_files[f] = when


@_apply.register
def _(op: ops.CompactRowsets, state: CatalogState) -> None:
    table = state.tables.get(op.table_id)
    if table is None:
        return
    removed = set(op.removed)
    if not removed:
        return
    kept = [r for r in table.rowsets if r.id not in removed]
    if len(kept) + len(removed) != len(table.rowsets):  # validated before logging; never half-apply
        return
    for r in table.rowsets:
        if r.id in removed:
            _retire(state, r.files, op.time)
    kept.extend(op.added)
    kept.sort(key=lambda r: r.version)
    table.rowsets = kept


@_apply.register
def _(op: ops.PurgeRetiredFiles, state: CatalogState) -> None:
    state.retired_files = {f: t for f, t in state.retired_files.items() if t >= op.before}


def _bind_sub_labels(state: CatalogState, txn, final: list[str]) -> None:
    """Group commit: `final` client labels now belong to `txn`; its other reservations go."""
    db = state.databases.get(txn.db_id)
    if db is None or not (final or txn.sub_labels):
        return
    keep = set(final)
    for label in txn.sub_labels:
        if label not in keep and db.labels.get(label) == txn.id:
            del db.labels[label]
    for label in final:
        db.labels[label] = txn.id
    txn.sub_labels = list(final)


@_apply.register
def _(op: ops.ReserveLabel, state: CatalogState) -> None:
    txn = state.txns.get(op.txn_id)
    if txn is None:
        return
    txn.sub_labels.append(op.label)
    db = state.databases.get(txn.db_id)
    if db is not None:
        db.labels[op.label] = txn.id


@_apply.register
def _(op: ops.AbortTxn, state: CatalogState) -> None:
    txn = state.txns.get(op.txn_id)
    if txn is None:
        return
    _bind_sub_labels(state, txn, [])  # reserved client labels are free again
    txn.status = "ABORTED"
    txn.reason = op.reason
    txn.finish_time = op.time
    txn.rowsets = []


@_apply.register
def _(op: ops.ExpireTxns, state: CatalogState) -> None:
    for txn_id in op.txn_ids:
        txn = state.txns.pop(txn_id, None)
        if txn is None:
            continue
        db = state.databases.get(txn.db_id)
        if db is None:
            continue
        for label in (txn.label, *txn.sub_labels):
            if db.labels.get(label) == txn_id:
                del db.labels[label]


@_apply.register
def _(op: ops.AddBackend, state: CatalogState) -> None:
    state.backends[op.backend.id] = op.backend


@_apply.register
def _(op: ops.DropBackend, state: CatalogState) -> None:
    state.backends.pop(op.backend_id, None)


@_apply.register
def _(op: ops.ModifyBackend, state: CatalogState) -> None:
    be = state.backends[op.backend_id]
    be.tags.update(op.tags)
    if op.disable_load is not None:
        be.disable_load = op.disable_load
    if op.disable_query is not None:
        be.disable_query = op.disable_query


@_apply.register
def _(op: ops.DecommissionBackend, state: CatalogState) -> None:
    be = state.backends.get(op.backend_id)
    if be is not None:
        be.decommissioned = op.decommissioned


@_apply.register
def _(op: ops.SetClusterId, state: CatalogState) -> None:
    state.cluster_id = op.cluster_id


@_apply.register
def _(op: ops.SetUserPassword, state: CatalogState) -> None:
    account = state.accounts.get(model.account_key(op.user, op.host))
    if account is not None:
        account.password = op.password_sha1


# --- users and roles ------------------------------------------------------------------------
@_apply.register
def _(op: ops.CreateUser, state: CatalogState) -> None:
    state.accounts[model.account_key(op.account.name, op.account.host)] = op.account


@_apply.register
def _(op: ops.DropUser, state: CatalogState) -> None:
    state.accounts.pop(model.account_key(op.name, op.host), None)


@_apply.register
def _(op: ops.AlterUser, state: CatalogState) -> None:
    account = state.accounts.get(model.account_key(op.name, op.host))
    if account is None:
        return
    if op.password_sha1 is not None:
        account.password = op.password_sha1
    if op.comment is not None:
        account.comment = op.comment


@_apply.register
def _(op: ops.CreateRole, state: CatalogState) -> None:
    state.roles[op.role.name] = op.role


@_apply.register
def _(op: ops.DropRole, state: CatalogState) -> None:
    state.roles.pop(op.name, None)
    for account in state.accounts.values():
        if op.name in account.roles:
            account.roles = [r for r in account.roles if r != op.name]


@_apply.register
def _(op: ops.AlterRole, state: CatalogState) -> None:
    role = state.roles.get(op.name)
    if role is not None:
        role.comment = op.comment


def _grants_of(state: CatalogState, user: str | None, role: str | None) -> model.Grants | None:
    holder = state.accounts.get(user) if user is not None else state.roles.get(role or "")
    return holder.grants if holder is not None else None


def _grant_map(grants: model.Grants, kind: str) -> dict[str, list[str]]:
    return {"TABLE": grants.tables, "RESOURCE": grants.resources}.get(kind, grants.workload_groups)


@_apply.register
def _(op: ops.GrantPrivileges, state: CatalogState) -> None:
    grants = _grants_of(state, op.user, op.role)
    if grants is None:
        return
    entries = _grant_map(grants, op.kind)
    held = set(entries.get(op.target, ())) | set(op.privileges)
    entries[op.target] = [p for p in model.PRIVILEGES if p in held]


@_apply.register
def _(op: ops.RevokePrivileges, state: CatalogState) -> None:
    grants = _grants_of(state, op.user, op.role)
    if grants is None:
        return
    entries = _grant_map(grants, op.kind)
    left = [p for p in entries.get(op.target, ()) if p not in op.privileges]
    if left:
        entries[op.target] = left
    else:
        entries.pop(op.target, None)


@_apply.register
def _(op: ops.GrantRoles, state: CatalogState) -> None:
    account = state.accounts.get(op.user)
    if account is not None:
        account.roles = account.roles + [r for r in op.roles if r not in account.roles]


@_apply.register
def _(op: ops.RevokeRoles, state: CatalogState) -> None:
    account = state.accounts.get(op.user)
    if account is not None:
        account.roles = [r for r in account.roles if r not in op.roles]


# --- streaming jobs ----------------------------------------------------------------------------
@_apply.register
def _(op: ops.CreateJob, state: CatalogState) -> None:
    state.jobs[op.job.id] = op.job


@_apply.register
def _(op: ops.DropJob, state: CatalogState) -> None:
    state.jobs.pop(op.job_id, None)


@_apply.register
def _(op: ops.SetJobStatus, state: CatalogState) -> None:
    job = state.jobs.get(op.job_id)
    if job is None:
        return
    job.status = op.status  # type: ignore[assignment]
    job.pause_reason = op.pause_reason  # type: ignore[assignment]
    job.status_time = op.time
    if op.error_msg is not None:
        job.error_msg = op.error_msg
    if op.runtime_msg is not None:
        job.runtime_msg = op.runtime_msg


@_apply.register
def _(op: ops.AlterJob, state: CatalogState) -> None:
    job = state.jobs.get(op.job_id)
    if job is None:
        return
    job.properties.update(op.properties)
    if op.offset is not None:
        job.offset = op.offset
        job.offset_generation += 1


@_apply.register
def _(op: ops.FailJobTask, state: CatalogState) -> None:
    job = state.jobs.get(op.job_id)
    if job is None:
        return
    if op.task.status == "CANCELED":
        job.canceled_task_count += 1
    else:
        job.failed_task_count += 1
    _record_task(job, op.task)
    job.error_msg = op.error_msg
    job.runtime_msg = op.runtime_msg
    if job.status in ("RUNNING", "PENDING"):
        # A failure pauses the job automatically (resumed with backoff); a manual pause that
        # came first stays manual.
        job.status = "PAUSED"
        job.pause_reason = "AUTO"
        job.status_time = op.time
