"""The FE's metadata object graph as typed structs.

Every piece of FE state is a msgspec Struct reachable from `CatalogState`. Structs are
serialized whole by the journal and the image (no per-field opt-in), so a field added
here is persisted automatically. State changes only through `galene.catalog.apply`.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from galene.common.types import ColumnType

KeysType = Literal["DUP_KEYS", "UNIQUE_KEYS", "AGG_KEYS"]
TxnStatus = Literal["PREPARE", "PRECOMMITTED", "COMMITTED", "VISIBLE", "ABORTED"]

# Hidden column of UNIQUE KEY tables: 1 marks a delete (Doris __DORIS_DELETE_SIGN__).
DELETE_SIGN = "__DORIS_DELETE_SIGN__"
# Hidden column of UNIQUE KEY tables created with function_column.sequence_type.
SEQUENCE_COL = "__DORIS_SEQUENCE_COL__"


class Column(msgspec.Struct, kw_only=True):
    name: str
    type: ColumnType
    nullable: bool = True
    is_key: bool = False
    # SUM, MIN, MAX, REPLACE, REPLACE_IF_NOT_NULL for value columns of AGGREGATE tables;
    # None for key columns and for DUPLICATE/UNIQUE tables.
    aggregation: str | None = None
    default: str | None = None  # literal text as written, None = no default
    comment: str = ""
    hidden: bool = False  # e.g. the delete sign; not shown by SELECT * / DESC
    # Stable within the table (Doris' col_unique_id): assigned at CREATE, kept by RENAME and
    # MODIFY, never reused. Rowset files name columns as they were called when written; a
    # reader maps them to today's columns by this id (engine/scan.py). 0 = a table created
    # before column ids (ids 1..n in column order are assigned at its first schema change).
    id: int = 0


class Partition(msgspec.Struct, kw_only=True):
    id: int
    name: str
    # RANGE: bounds as lists of literal strings (one per partition column);
    # lower None = unbounded below (MINVALUE), upper None = MAXVALUE.
    range_lower: list[str] | None = None
    range_upper: list[str] | None = None
    # LIST: each entry is one tuple of literal strings.
    list_values: list[list[str]] = msgspec.field(default_factory=list)
    tablet_ids: list[int] = msgspec.field(default_factory=list)
    visible_version: int = 1


class Rowset(msgspec.Struct, kw_only=True, gc=False):
    """Files one committed load wrote into one tablet, visible from `version` on.

    Not tracked by the cyclic GC (`gc=False`; it never references its holders): a catalog
    keeps one per load and tablet, and every tracked object lengthens full collections.
    """

    id: str  # written by the BE (hex); also the file-name prefix
    tablet_id: int
    partition_id: int
    version: int = 0  # table version; assigned at commit
    txn_id: int = 0
    files: list[str] = msgspec.field(default_factory=list)  # paths relative to the storage root
    num_rows: int = 0
    data_size: int = 0
    # The table's schema version its files were written with (`Table.schema_version` of the
    # Table struct the writer held); `Table.schema_history` has that version's columns.
    schema_version: int = 0


class SchemaVersion(msgspec.Struct, kw_only=True):
    """The storage columns (with ids) a table had at an older schema version."""

    version: int
    columns: list[Column]


class MaterializedView(msgspec.Struct, kw_only=True):
    """What makes a Table an async materialized view (CREATE MATERIALIZED VIEW): its query,
    refresh rule and the state of its last refresh. Each refresh is one INSERT OVERWRITE."""

    query_sql: str  # the query after AS, as written (run in the MV's database)
    build: str = "IMMEDIATE"  # IMMEDIATE | DEFERRED
    method: str = "COMPLETE"  # COMPLETE | AUTO (Galene refreshes completely either way)
    trigger: str = "MANUAL"  # MANUAL | SCHEDULE | COMMIT
    interval: int = 0  # ON SCHEDULE EVERY interval unit
    unit: str = ""  # SECOND | MINUTE | HOUR | DAY | WEEK
    starts: str = ""  # STARTS 'yyyy-MM-dd HH:mm:ss' (session time), "" = from creation
    column_names: list[str] = msgspec.field(default_factory=list)  # `mv (c1, c2)` as written
    definer: str = ""
    state: str = "INIT"  # Doris' MTMVState: INIT | NORMAL | SCHEMA_CHANGE
    refresh_state: str = "INIT"  # Doris' RefreshState: INIT | REFRESHING | SUCCESS | FAIL
    last_refresh_start: float = 0.0
    last_refresh_finish: float = 0.0
    last_refresh_error: str = ""
    last_refresh_txn: int = 0
    refresh_count: int = 0
    # Base tables (str(id) -> visible version) the last successful refresh read (SyncWithBaseTables).
    # String keys: a Table travels to BEs as JSON.
    base_versions: dict[str, int] = msgspec.field(default_factory=dict)


class Index(msgspec.Struct, kw_only=True):
    """A table index as Doris declares it (`INDEX name (c) USING INVERTED|BITMAP|NGRAM_BF`, CREATE
    INDEX, ALTER TABLE ADD INDEX). Metadata only: the engine scans Parquet files and answers
    every query without it; SHOW INDEX, SHOW CREATE TABLE and DROP INDEX see it as in Doris."""

    name: str
    columns: list[str]
    index_type: str = "INVERTED"  # INVERTED | BITMAP | NGRAM_BF
    properties: dict[str, str] = msgspec.field(default_factory=dict)
    comment: str = ""


class Table(msgspec.Struct, kw_only=True):
    id: int
    db_id: int
    name: str
    columns: list[Column]
    keys_type: KeysType = "DUP_KEYS"
    key_columns: list[str] = msgspec.field(default_factory=list)
    partition_type: Literal["UNPARTITIONED", "RANGE", "LIST"] = "UNPARTITIONED"
    partition_columns: list[str] = msgspec.field(default_factory=list)
    partitions: list[Partition] = msgspec.field(default_factory=list)
    distribution_type: Literal["HASH", "RANDOM"] = "HASH"
    distribution_columns: list[str] = msgspec.field(default_factory=list)
    buckets: int = 1
    buckets_auto: bool = False
    properties: dict[str, str] = msgspec.field(default_factory=dict)
    comment: str = ""
    create_time: float = 0.0
    update_time: float = 0.0
    visible_version: int = 1
    rowsets: list[Rowset] = msgspec.field(default_factory=list)
    # Schema change without rewriting files (ALTER TABLE ADD/DROP/MODIFY/RENAME COLUMN): the
    # current version, and the storage columns (with ids) of every older version a rowset may
    # have been written with. See "Views, schema change, materialized views" in ARCHITECTURE.
    schema_version: int = 0
    schema_history: list[SchemaVersion] = msgspec.field(default_factory=list)
    mtmv: MaterializedView | None = None  # set for an async materialized view
    indexes: list[Index] = msgspec.field(default_factory=list)

    def column(self, name: str) -> Column | None:
        lname = name.lower()
        for c in self.columns:
            if c.name.lower() == lname:
                return c
        return None

    def sequence_column(self) -> Column | None:
        """The column whose value orders rows of one key (Doris sequence column), if any.

        `function_column.sequence_col` names an ordinary column; `function_column.sequence_type`
        tables keep the value in the hidden SEQUENCE_COL.
        """
        if self.keys_type != "UNIQUE_KEYS":
            return None
        name = self.properties.get("function_column.sequence_col")
        return self.column(name) if name else self.column(SEQUENCE_COL)

    def visible_columns(self) -> list[Column]:
        return [c for c in self.columns if not c.hidden]

    def partition(self, partition_id: int) -> Partition | None:
        for p in self.partitions:
            if p.id == partition_id:
                return p
        return None


def snapshot(table: Table) -> Table:
    """The table as it is now, for a reader that binds a version now and lists its rowsets
    later: commits replace `rowsets` (and compaction replaces rowsets at versions a reader may
    already have bound), so the reader keeps this copy's list. A shallow copy: rowsets are
    never changed in place."""
    return msgspec.structs.replace(table, rowsets=list(table.rowsets))


def key_columns(table: Table) -> list[str]:
    """The names of `table`'s key columns: `key_columns` as declared, else the columns marked
    `is_key` (the rows of one key are merged by UNIQUE and AGGREGATE tables)."""
    if table.key_columns:
        return list(table.key_columns)
    return [c.name for c in table.columns if c.is_key]


def columns_at(table: Table, schema_version: int) -> list[Column]:
    """The storage columns (hidden ones too, with ids) of files written at `schema_version`."""
    if schema_version == table.schema_version:
        return table.columns
    for old in table.schema_history:
        if old.version == schema_version:
            return old.columns
    # Never logged by the FE: a version is kept as long as the table lives.
    raise KeyError(f"table {table.name} has no schema version {schema_version}")


def with_column_ids(columns: list[Column]) -> list[Column]:
    """`columns` with an id each: unchanged when all have one; else (a table created before
    column ids, or a new table) ids 1..n in column order. Copies; never mutates."""
    if columns and all(c.id for c in columns):
        return columns
    return [msgspec.structs.replace(c, id=i + 1) for i, c in enumerate(columns)]


class View(msgspec.Struct, kw_only=True):
    """A (logical) view: its definition, expanded by the translator wherever it is read.

    `sql` is Doris' inline view definition: the query as written, its table references
    qualified as `internal`.`db`.`t`; names in it resolve in the view's database (`db_id`).
    `columns` are the output columns (names, types) found when the view was defined (DESC,
    information_schema); `column_names` the explicit list `v (c1, c2)`, [] when none.
    """

    id: int
    db_id: int
    name: str
    sql: str
    columns: list[Column] = msgspec.field(default_factory=list)
    column_names: list[str] = msgspec.field(default_factory=list)
    comment: str = ""
    definer: str = ""
    create_time: float = 0.0
    update_time: float = 0.0


class Database(msgspec.Struct, kw_only=True):
    id: int
    name: str
    tables: dict[str, int] = msgspec.field(default_factory=dict)  # name -> table id
    views: dict[str, View] = msgspec.field(default_factory=dict)  # name -> view (shares tables' names)
    labels: dict[str, int] = msgspec.field(default_factory=dict)  # label -> txn id
    properties: dict[str, str] = msgspec.field(default_factory=dict)
    create_time: float = 0.0


class Txn(msgspec.Struct, kw_only=True, gc=False):  # one per load: untracked, as Rowset
    id: int
    db_id: int
    table_id: int
    label: str
    status: TxnStatus = "PREPARE"
    backend_id: int = 0
    timeout_s: int = 600
    begin_time: float = 0.0
    commit_time: float = 0.0
    finish_time: float = 0.0
    reason: str = ""
    version: int = 0  # table version the commit produced
    rowsets: list[Rowset] = msgspec.field(default_factory=list)  # PRECOMMITTED (2PC) rowsets wait here
    num_rows: int = 0
    load_bytes: int = 0
    # Group commit: client labels merged into this transaction. While PREPARE they are
    # reserved (Database.labels maps them here); the commit fixes the final list.
    sub_labels: list[str] = msgspec.field(default_factory=list)
    # What began it (SHOW LOAD lists the engine jobs): STREAM_LOAD, INSERT (INSERT … SELECT,
    # OVERWRITE, CTAS, UPDATE), DELETE; and the statement's user.
    load_type: str = "STREAM_LOAD"
    user: str = ""


class Backend(msgspec.Struct, kw_only=True):
    id: int
    host: str
    heartbeat_port: int
    http_port: int = 0
    be_port: int = 0
    brpc_port: int = 0
    tags: dict[str, str] = msgspec.field(default_factory=dict)
    # DECOMMISSION: no new loads; the FE drops it by itself once its group-commit WAL is flushed.
    decommissioned: bool = False
    add_time: float = 0.0
    # MODIFY BACKEND … SET ('disable_load'='true' | 'disable_query'='true'), as in Doris.
    disable_load: bool = False
    disable_query: bool = False


class Frontend(msgspec.Struct, kw_only=True):
    name: str
    host: str
    edit_log_port: int
    http_port: int
    query_port: int
    role: str = "FOLLOWER"


JobStatus = Literal["PENDING", "RUNNING", "PAUSED", "FINISHED"]
# A streaming job keeps its newest task records (tasks("type"="insert")), at most this many:
# applied by the ops themselves, so the bound is part of the deterministic state.
JOB_TASK_HISTORY = 100


class JobStatistic(msgspec.Struct, kw_only=True, gc=False):
    """Doris' LoadStatistic of a streaming job (or of one task): sums over committed batches."""

    scanned_rows: int = 0
    load_bytes: int = 0
    file_number: int = 0
    file_size: int = 0
    filtered_rows: int = 0


class JobTask(msgspec.Struct, kw_only=True, gc=False):
    """One finished task of a streaming job: one batch of files, one transaction."""

    task_id: int
    label: str = ""
    status: Literal["SUCCESS", "FAILED", "CANCELED"] = "SUCCESS"
    error_msg: str = ""
    create_time: float = 0.0
    start_time: float = 0.0
    finish_time: float = 0.0
    statistic: JobStatistic = msgspec.field(default_factory=JobStatistic)
    offset_from: str = ""  # the job's offset when the task began (files after it)
    offset_to: str = ""  # the last file of the batch
    txn_id: int = 0
    user: str = ""


class StreamingJob(msgspec.Struct, kw_only=True):
    """`CREATE JOB … ON STREAMING DO INSERT INTO … SELECT … FROM S3(…)` and its progress.

    `offset` is the last file (object key, or path for file://) whose rows are committed; new
    files are those whose names sort after it. It moves only in the CommitTxn op that commits
    the batch's rows (`ops.JobProgress`), together with `statistic`, so data, offset and
    statistics can never disagree after a restart from any image and journal tail.
    `offset_generation` is bumped by every ALTER of the offset: a batch planned from an older
    generation is refused at commit and ignored by apply, so it cannot restore a stale offset.
    """

    id: int
    name: str
    db_id: int
    definer: str = ""
    execute_sql: str = ""  # the `INSERT INTO … SELECT …` after DO, as written
    comment: str = ""
    properties: dict[str, str] = msgspec.field(default_factory=dict)
    create_time: float = 0.0
    status: JobStatus = "PENDING"
    offset: str = ""  # "" = from the first file
    offset_generation: int = 0
    end_offset: str = ""  # the newest file the last committed batch's listing saw
    statistic: JobStatistic = msgspec.field(default_factory=JobStatistic)
    succeed_task_count: int = 0
    failed_task_count: int = 0
    canceled_task_count: int = 0
    error_msg: str = ""  # why the last task failed (kept while PAUSED)
    runtime_msg: str = ""  # what the operator should know (why it paused, what it waits for)
    pause_reason: Literal["", "MANUAL", "AUTO"] = ""  # AUTO: a failure; resumed with backoff
    status_time: float = 0.0  # when the status last changed
    tasks: list[JobTask] = msgspec.field(default_factory=list)  # newest last, JOB_TASK_HISTORY at most


# --- users and privileges (Doris' model; galene/fe/auth.py resolves and enforces them) -------
# Privilege names as Doris spells them in GRANT; the order is Doris' bit order (SHOW GRANTS).
PRIVILEGES = (
    "NODE_PRIV", "ADMIN_PRIV", "GRANT_PRIV", "SELECT_PRIV", "LOAD_PRIV", "ALTER_PRIV",
    "CREATE_PRIV", "DROP_PRIV", "USAGE_PRIV", "SHOW_VIEW_PRIV",
)  # fmt: skip


class Grants(msgspec.Struct, kw_only=True):
    """Privileges held by one user or role. Keys: `ctl.db.tbl` patterns (`*.*.*` global,
    `internal.*.*` a catalog, `internal.db.*` a database, `internal.db.t` a table), resource
    names and workload-group names; values: privilege names in PRIVILEGES order."""

    tables: dict[str, list[str]] = msgspec.field(default_factory=dict)
    resources: dict[str, list[str]] = msgspec.field(default_factory=dict)
    workload_groups: dict[str, list[str]] = msgspec.field(default_factory=dict)


class UserAccount(msgspec.Struct, kw_only=True):
    """A Doris user identity 'name'@'host' (host: a pattern, `%` and `_` wildcards, or literal).

    `password` is MySQL's native stored form, hex SHA1(SHA1(password)) ("" = none): never the
    clear text. `grants` are the privileges granted to the user directly (Doris keeps them in
    the user's default role); `roles` the roles granted to it."""

    name: str
    host: str = "%"
    password: str = ""
    comment: str = ""
    roles: list[str] = msgspec.field(default_factory=list)
    grants: Grants = msgspec.field(default_factory=Grants)
    create_time: float = 0.0


class Role(msgspec.Struct, kw_only=True):
    name: str
    comment: str = ""
    grants: Grants = msgspec.field(default_factory=Grants)
    builtin: bool = False  # operator, admin: cannot be dropped or changed


def account_key(name: str, host: str) -> str:
    """Doris' UserIdentity text, the key of CatalogState.accounts: 'name'@'host'."""
    return f"'{name}'@'{host}'"


def _builtin_accounts() -> dict[str, UserAccount]:
    # Doris' Auth.initUser: root (role operator) and admin (role admin), no password.
    return {
        account_key("root", "%"): UserAccount(name="root", comment="ROOT", roles=["operator"]),
        account_key("admin", "%"): UserAccount(name="admin", comment="ADMIN", roles=["admin"]),
    }


def _builtin_roles() -> dict[str, Role]:
    def everything(privs: list[str]) -> Grants:
        return Grants(
            tables={"*.*.*": list(privs)}, resources={"%": list(privs)}, workload_groups={"%": list(privs)}
        )

    return {
        "operator": Role(name="operator", grants=everything(["NODE_PRIV", "ADMIN_PRIV"]), builtin=True),
        "admin": Role(name="admin", grants=everything(["ADMIN_PRIV"]), builtin=True),
    }


class CatalogState(msgspec.Struct, kw_only=True):
    """All FE metadata. Equality of two states is equality of every field."""

    cluster_id: int = 0
    next_id: int = 10000
    databases: dict[int, Database] = msgspec.field(default_factory=dict)
    db_names: dict[str, int] = msgspec.field(default_factory=dict)
    tables: dict[int, Table] = msgspec.field(default_factory=dict)
    txns: dict[int, Txn] = msgspec.field(default_factory=dict)
    backends: dict[int, Backend] = msgspec.field(default_factory=dict)
    frontends: list[Frontend] = msgspec.field(default_factory=list)
    # Users by account_key ('name'@'host') and roles by name. (Images written before these
    # had a `users` map of name -> hash; decoding ignores it: no password could be set then.)
    accounts: dict[str, UserAccount] = msgspec.field(default_factory=_builtin_accounts)
    roles: dict[str, Role] = msgspec.field(default_factory=_builtin_roles)
    # Files of rowsets that an overwrite, a truncate or a compaction replaced: path -> the
    # time they were replaced. GC keeps them for gc_grace_seconds after that (a query that
    # started before the replacement may still read them), then deletes them.
    retired_files: dict[str, float] = msgspec.field(default_factory=dict)
    # Streaming jobs (`CREATE JOB … ON STREAMING`) by id; names are unique across databases.
    jobs: dict[int, StreamingJob] = msgspec.field(default_factory=dict)
