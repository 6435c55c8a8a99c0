"""Journal operations: every change to FE metadata is one of these typed records.

An op is appended to the journal before it is applied (`galene.catalog.apply.apply_op`),
so replaying image + journal reproduces the state exactly. Ops carry every value they
set (ids, times, versions): applying an op never reads a clock or allocates anything.
`Op` is a msgspec tagged union; `encode_op` / `decode_op` are its wire form. Ops are the
catalog's state changes, so they live with the catalog; `galene.meta` stores and replays them.
"""

from __future__ import annotations

import msgspec

from galene.catalog import model
from galene.catalog.model import (
    Backend,
    Column,
    Database,
    JobStatistic,
    JobTask,
    Rowset,
    StreamingJob,
    Table,
    Txn,
    View,
)


class _Op(msgspec.Struct, tag=True, kw_only=True):
    # next_id after this op's allocations; apply raises state.next_id to at least this.
    next_id: int = 0


class CreateDb(_Op):
    db: Database


class DropDb(_Op):
    db_id: int


class CreateTable(_Op):
    table: Table


class DropTable(_Op):
    db_id: int
    table_id: int


class RenameTable(_Op):
    db_id: int
    table_id: int
    new_name: str


class SetTableProperties(_Op):
    table_id: int
    properties: dict[str, str]


class AlterTable(_Op):
    """ALTER TABLE … ADD/DROP/MODIFY/RENAME COLUMN, MODIFY COMMENT: the table's new definition.

    No file is rewritten. When the storage columns change, `schema_version` is the new version
    and `previous_columns` the storage columns (with ids) files written so far have: apply keeps
    them in `Table.schema_history` so readers map old files to today's columns by id."""

    table_id: int
    columns: list[Column]
    key_columns: list[str]
    partition_columns: list[str]
    distribution_columns: list[str]
    properties: dict[str, str]
    comment: str
    schema_version: int
    previous_columns: list[Column] | None = None  # None: storage unchanged (comments only)
    time: float = 0.0
    indexes: list[model.Index] | None = None  # the table's indexes after the change; None: unchanged


class ReplaceTable(_Op):
    """ALTER TABLE a REPLACE WITH TABLE b [PROPERTIES('swap'='true'|'false')], atomically:
    b takes a's name; with swap a takes b's name, without it a is dropped (its files retired)."""

    db_id: int
    table_id: int  # a
    other_id: int  # b
    swap: bool
    time: float = 0.0


class CreateView(_Op):
    """CREATE [OR REPLACE] VIEW / ALTER VIEW: the view under its name (replacing one)."""

    view: View


class DropView(_Op):
    db_id: int
    name: str


class RenameView(_Op):
    db_id: int
    name: str
    new_name: str


class SetMvRefresh(_Op):
    """A materialized view's refresh began (REFRESHING) or ended (SUCCESS | FAIL)."""

    table_id: int
    refresh_state: str
    time: float
    error: str = ""
    txn_id: int = 0
    base_versions: dict[str, int] | None = None  # on SUCCESS: the base tables it read (str(id) -> version)


class BeginTxn(_Op):
    txn: Txn


class PrecommitTxn(_Op):
    """Two-phase commit: data written, waiting for the client's commit."""

    txn_id: int
    rowsets: list[Rowset]
    time: float
    num_rows: int = 0
    load_bytes: int = 0


class JobProgress(msgspec.Struct, kw_only=True):
    """A streaming job's step, carried by the CommitTxn op of the batch it describes.

    Applied only while the job's `offset_generation` still equals `generation` (an ALTER of
    the offset bumps it), so a batch planned before an ALTER can never move the offset back.
    """

    job_id: int
    generation: int
    prev_offset: str  # the offset the batch started after (checked before logging)
    offset: str  # the batch's last file: the job's new offset
    end_offset: str = ""
    statistic: JobStatistic = msgspec.field(default_factory=JobStatistic)  # this batch's counts
    task: JobTask | None = None


class CommitTxn(_Op):
    """Commit and publish: the rowsets become visible at `version` atomically."""

    txn_id: int
    version: int
    rowsets: list[Rowset]
    time: float
    num_rows: int = 0
    load_bytes: int = 0
    # Group commit: the client labels this merged txn loads. They map to this txn from now
    # on; labels it had reserved but does not load are released.
    sub_labels: list[str] = msgspec.field(default_factory=list)
    # INSERT OVERWRITE / TRUNCATE / copy-on-write DELETE: every rowset these partitions had
    # before this commit is replaced by `rowsets` (atomically, at `version`).
    replace_partitions: list[int] = msgspec.field(default_factory=list)
    # A streaming job's batch: its offset and statistics advance with this commit, atomically.
    job_progress: JobProgress | None = None


class CompactRowsets(_Op):
    """Compaction: `removed` rowsets of one tablet are replaced by `added` (the same rows with
    keys resolved) without a new table version; queries see the same result either way."""

    table_id: int
    removed: list[str]  # rowset ids
    added: list[Rowset]
    time: float


class PurgeRetiredFiles(_Op):
    """Forget retired files replaced before `before` (GC has deleted or may now delete them)."""

    before: float


class ReserveLabel(_Op):
    """Group commit: a client label is reserved for a PREPARE merged txn (its data is in the
    BE's WAL); a load or retry with that label elsewhere answers Label Already Exists."""

    txn_id: int
    label: str


class AbortTxn(_Op):
    txn_id: int
    reason: str
    time: float


class ExpireTxns(_Op):
    """Forget finished transactions (and free their labels) past label_keep_max_second."""

    txn_ids: list[int]


class AddBackend(_Op):
    backend: Backend


class DropBackend(_Op):
    backend_id: int


class ModifyBackend(_Op):
    backend_id: int
    tags: dict[str, str]
    disable_load: bool | None = None  # None: unchanged
    disable_query: bool | None = None


class DecommissionBackend(_Op):
    """DECOMMISSION (True) or CANCEL DECOMMISSION (False) of a backend."""

    backend_id: int
    decommissioned: bool


class SetClusterId(_Op):
    cluster_id: int


class SetUserPassword(_Op):
    """SET PASSWORD [FOR 'user'@'host'], ALTER USER … IDENTIFIED BY, initial_root_password."""

    user: str
    password_sha1: str  # hex of SHA1(SHA1(password)) as MySQL stores it; "" = empty password
    host: str = "%"


# --- users and roles (galene/fe/auth.py) ------------------------------------------------------
class CreateUser(_Op):
    account: model.UserAccount  # complete: password hash, roles (DEFAULT ROLE), comment


class DropUser(_Op):
    name: str
    host: str


class AlterUser(_Op):
    """ALTER USER … [IDENTIFIED BY …] [COMMENT …]: None leaves a field as it is."""

    name: str
    host: str
    password_sha1: str | None = None
    comment: str | None = None


class CreateRole(_Op):
    role: model.Role


class DropRole(_Op):
    """The role goes, and every user that had it loses it."""

    name: str


class AlterRole(_Op):
    name: str
    comment: str


class GrantPrivileges(_Op):
    """GRANT privs ON <target> TO 'user'@'host' | ROLE 'r'. `kind`: TABLE (`target` a
    `ctl.db.tbl` pattern), RESOURCE or WORKLOAD_GROUP (a name). Privileges add to those held."""

    user: str | None  # account_key, or None for a role
    role: str | None
    kind: str
    target: str
    privileges: list[str]


class RevokePrivileges(_Op):
    """REVOKE privs ON <target> FROM …: removes them; an entry left empty goes."""

    user: str | None
    role: str | None
    kind: str
    target: str
    privileges: list[str]


class GrantRoles(_Op):
    user: str  # account_key
    roles: list[str]


class RevokeRoles(_Op):
    user: str
    roles: list[str]


class CreateJob(_Op):
    job: StreamingJob


class DropJob(_Op):
    job_id: int


class SetJobStatus(_Op):
    """PENDING -> RUNNING, PAUSE (manual), RESUME (manual or automatic after a failure)."""

    job_id: int
    status: str
    pause_reason: str = ""
    error_msg: str | None = None  # None: unchanged
    runtime_msg: str | None = None
    time: float = 0.0


class AlterJob(_Op):
    """ALTER JOB … PROPERTIES (only while PAUSED). A new offset bumps the offset generation."""

    job_id: int
    properties: dict[str, str]
    offset: str | None = None
    time: float = 0.0


class FailJobTask(_Op):
    """A task of a streaming job failed: recorded, and the job pauses (automatic pause, resumed
    with backoff) unless the user paused it meanwhile. The offset does not move."""

    job_id: int
    task: JobTask
    error_msg: str
    runtime_msg: str = ""
    time: float = 0.0


Op = (
    CreateDb
    | DropDb
    | CreateTable
    | DropTable
    | RenameTable
    | SetTableProperties
    | AlterTable
    | ReplaceTable
    | CreateView
    | DropView
    | RenameView
    | SetMvRefresh
    | BeginTxn
    | PrecommitTxn
    | CommitTxn
    | ReserveLabel
    | AbortTxn
    | ExpireTxns
    | AddBackend
    | DropBackend
    | ModifyBackend
    | DecommissionBackend
    | SetClusterId
    | SetUserPassword
    | CreateUser
    | DropUser
    | AlterUser
    | CreateRole
    | DropRole
    | AlterRole
    | GrantPrivileges
    | RevokePrivileges
    | GrantRoles
    | RevokeRoles
    | CompactRowsets
    | PurgeRetiredFiles
    | CreateJob
    | DropJob
    | SetJobStatus
    | AlterJob
    | FailJobTask
)

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Op)


def encode_op(op: Op) -> bytes:
    return _encoder.encode(op)


def decode_op(data: bytes) -> Op:
    return _decoder.decode(data)


def op_type(op: Op) -> str:
    return type(op).__name__


def id_allocator(state: model.CatalogState):
    """Return (alloc, high) for one op: alloc() hands out ids from the state's next id,
    high() is the op's `next_id` (apply raises the state's to it)."""
    counter = [state.next_id]

    def alloc() -> int:
        counter[0] += 1
        return counter[0] - 1

    return alloc, lambda: counter[0]
