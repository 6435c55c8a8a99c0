"""The rows of the SHOW statements Doris answers from information_schema's data, in its columns:
SHOW TABLE STATUS (a projection of `tables`), SHOW INDEX, SHOW PARTITIONS, SHOW DATA, SHOW STREAM
LOAD, SHOW TRANSACTION, SHOW [FULL] PROCESSLIST (rows: `tables.processlist_rows`)."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from galene.catalog.model import CatalogState, Table, Txn
from galene.common.errors import AnalysisError
from galene.sql.information_schema.context import (
    BIGINT,
    DATETIME,
    V64,
    Filters,
    MetaContext,
    is_view,
    relations,
    table_stats,
    time_text,
    varchar,
)
from galene.sql.information_schema.tables import (
    SCHEMA_TABLES,
    distribution,
    partition_key,
    partition_range,
    tables_rows,
)
from galene.sql.like import like_match
from galene.sql.show import row_matches

TABLE_STATUS_COLUMNS = [
    ("Name", V64), ("Engine", varchar(10)), ("Version", BIGINT), ("Row_format", V64), ("Rows", BIGINT),
    ("Avg_row_length", BIGINT), ("Data_length", BIGINT), ("Max_data_length", BIGINT), ("Index_length", BIGINT),
    ("Data_free", BIGINT), ("Auto_increment", BIGINT), ("Create_time", DATETIME), ("Update_time", DATETIME),
    ("Check_time", DATETIME), ("Collation", V64), ("Checksum", BIGINT), ("Create_options", V64),
    ("Comment", V64),
]  # fmt: skip
# SHOW TABLE STATUS column -> information_schema.tables column (Doris' ShowTableStatusCommand)
_TABLE_STATUS_SOURCE = [
    "TABLE_NAME", "ENGINE", "VERSION", "ROW_FORMAT", "TABLE_ROWS", "AVG_ROW_LENGTH", "DATA_LENGTH",
    "MAX_DATA_LENGTH", "INDEX_LENGTH", "DATA_FREE", "AUTO_INCREMENT", "CREATE_TIME", "UPDATE_TIME",
    "CHECK_TIME", "TABLE_COLLATION", "CHECKSUM", "CREATE_OPTIONS", "TABLE_COMMENT",
]  # fmt: skip


def table_status(ctx: MetaContext, db: str, like: str | None, where: exp.Expr | None) -> list[tuple]:
    """SHOW TABLE STATUS [FROM db] [LIKE '…' | WHERE …]: information_schema.tables of one
    database under the SHOW names (the WHERE may use either)."""
    source = SCHEMA_TABLES["tables"].column_names
    index = [source.index(c) for c in _TABLE_STATUS_SOURCE]
    out = []
    for r in tables_rows(ctx, Filters(db=db)):
        if like is not None and not like_match(r[2], like):
            continue
        status = tuple(r[i] for i in index)
        if where is not None:
            row = dict(zip(source, r))
            row.update(zip([n for n, _ in TABLE_STATUS_COLUMNS], status))
            if not row_matches(where, row):
                continue
        out.append(status)
    return out


INDEX_COLUMNS = [
    "Table", "Non_unique", "Key_name", "Seq_in_index", "Column_name", "Collation", "Cardinality", "Sub_part",
    "Packed", "Null", "Index_type", "Comment", "Properties",
]  # fmt: skip


PARTITIONS_COLUMNS = [
    "PartitionId", "PartitionName", "VisibleVersion", "VisibleVersionTime", "State", "PartitionKey", "Range",
    "DistributionKey", "Buckets", "ReplicationNum", "StorageMedium", "CooldownTime", "RemoteStoragePolicy",
    "LastConsistencyCheckTime", "DataSize", "IsInMemory", "ReplicaAllocation", "IsMutable", "SyncWithBaseTables",
    "UnsyncTables", "CommittedVersion", "RowCount",
]  # fmt: skip


def byte_text(n: int) -> str:
    """Doris' DebugUtil.printByteWithUnit: `0.000 `, `1.500 KB`, `3.000 GB`."""
    for unit, size in (("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3f} {unit}"
    return f"{float(n):.3f} "


def partition_rows(table: Table, where: exp.Expr | None = None) -> list[dict[str, Any]]:
    """SHOW PARTITIONS FROM t rows (Doris' ShowPartitionsCommand columns) as dicts."""
    out = []
    for p in table.partitions:
        rows, size = table_stats(table, p.id)
        row = {
            "PartitionId": str(p.id), "PartitionName": p.name, "VisibleVersion": str(p.visible_version),
            "VisibleVersionTime": time_text(table.update_time or table.create_time), "State": "NORMAL",
            "PartitionKey": partition_key(table), "Range": partition_range(table, p),
            "DistributionKey": distribution(table), "Buckets": str(len(p.tablet_ids)), "ReplicationNum": "1",
            "StorageMedium": "HDD", "CooldownTime": "9999-12-31 23:59:59", "RemoteStoragePolicy": "",
            "LastConsistencyCheckTime": "NULL", "DataSize": byte_text(size), "IsInMemory": "false",
            "ReplicaAllocation": "tag.location.default: 1", "IsMutable": "true", "SyncWithBaseTables": "true",
            "UnsyncTables": "NULL", "CommittedVersion": str(p.visible_version), "RowCount": str(rows),
        }  # fmt: skip
        if row_matches(where, row):
            out.append(row)
    return out


DATA_DB_COLUMNS = ["TableName", "Size", "ReplicaCount", "RemoteSize", "BinlogSize"]
DATA_TABLE_COLUMNS = [
    "TableName",
    "IndexName",
    "Size",
    "ReplicaCount",
    "RowCount",
    "RemoteSize",
    "BinlogSize",
]
_DB_DATA_QUOTA = (1 << 63) - 1
_DB_REPLICA_QUOTA = 1073741824


def data_rows(ctx: MetaContext, db: str, table: Table | None, order: exp.Expr | None = None) -> list[tuple]:
    """SHOW DATA (a database: a row per table, then Total / Quota / Left; ORDER BY sorts the
    tables by their raw values) and SHOW DATA FROM db.t (a row per index: Galene tables have
    their base index only, then Total)."""
    if table is not None:
        rows, size = table_stats(table)
        replicas = sum(len(p.tablet_ids) for p in table.partitions)
        return [
            (table.name, table.name, byte_text(size), str(replicas), str(rows), byte_text(0), byte_text(0)),
            ("", "Total", byte_text(size), str(replicas), "", byte_text(0), byte_text(0)),
        ]
    raw = []
    for _, t in relations(ctx, Filters(db=db)):
        if is_view(t):
            continue
        raw.append((t.name, table_stats(t)[1], sum(len(p.tablet_ids) for p in t.partitions), 0, 0))
    for ordered in reversed(order.expressions if order is not None else []):
        key = ordered.this.name.lower()
        names = [n.lower() for n in DATA_DB_COLUMNS]
        if key not in names:
            raise AnalysisError(f"Title name[{ordered.this.name}] does not exist")
        index = names.index(key)
        raw.sort(key=lambda r, i=index: r[i], reverse=bool(ordered.args.get("desc")))
    out = [(n, byte_text(size), str(replicas), byte_text(0), byte_text(0)) for n, size, replicas, _, _ in raw]
    total_size = sum(r[1] for r in raw)
    total_replicas = sum(r[2] for r in raw)
    out.append(("Total", byte_text(total_size), str(total_replicas), byte_text(0), byte_text(0)))
    out.append(("Quota", byte_text(_DB_DATA_QUOTA), str(_DB_REPLICA_QUOTA), "", ""))
    left_size, left_replicas = max(0, _DB_DATA_QUOTA - total_size), max(0, _DB_REPLICA_QUOTA - total_replicas)
    out.append(("Left", byte_text(left_size), str(left_replicas), "", ""))
    return out


DATA_ALL_DB_COLUMNS = [
    "DbId",
    "DbName",
    "Size",
    "RemoteSize",
    "BinlogSize",
    "RecycleSize",
    "RecycleRemoteSize",
]


def all_db_data_rows(ctx: MetaContext) -> list[tuple]:
    """SHOW DATA without a current database: a row per database (Doris' getAllDbStats)."""
    state = ctx.state
    out = []
    for name in sorted(state.db_names):
        if not ctx.can_see(name):
            continue
        size = sum(table_stats(t)[1] for _, t in relations(ctx, Filters(db=name)) if not is_view(t))
        out.append((str(state.db_names[name]), name, str(size), "0", "0", "0", "0"))
    return out


STREAM_LOAD_COLUMNS = [
    "Label", "Db", "Table", "ClientIp", "Status", "Message", "Url", "TotalRows", "LoadedRows", "FilteredRows",
    "UnselectedRows", "LoadBytes", "StartTime", "FinishTime", "User", "Comment",
]  # fmt: skip


def _table_name(state: CatalogState, table_id: int) -> str:
    table = state.tables.get(table_id)
    return table.name if table is not None else ""


_INSERT_LABEL_PREFIX = "insert_"  # galene.fe.insert.new_insert_label


def stream_load_rows(ctx: MetaContext, db: str) -> list[dict[str, Any]]:
    """SHOW STREAM LOAD: the finished stream loads of a database whose labels are kept."""
    state = ctx.state
    db_id = state.db_names.get(db)
    out = []
    for txn in sorted(state.txns.values(), key=lambda t: t.id):
        if txn.db_id != db_id or txn.load_type != "STREAM_LOAD":
            continue
        if txn.status not in ("VISIBLE", "COMMITTED", "ABORTED"):
            continue
        if txn.label.startswith(_INSERT_LABEL_PREFIX):  # INSERT … VALUES rides on a stream load
            continue
        table = _table_name(state, txn.table_id)
        if not ctx.can_see(db, table or None):
            continue
        ok = txn.status != "ABORTED"
        out.append(
            {
                "Label": txn.label, "Db": db, "Table": table, "ClientIp": "", "Status": "SUCCESS" if ok else "FAIL",
                "Message": "OK" if ok else txn.reason, "Url": "N/A", "TotalRows": str(txn.num_rows),
                "LoadedRows": str(txn.num_rows if ok else 0), "FilteredRows": "0", "UnselectedRows": "0",
                "LoadBytes": str(txn.load_bytes), "StartTime": time_text(txn.begin_time),
                "FinishTime": time_text(txn.finish_time), "User": txn.user or "", "Comment": "",
            }
        )  # fmt: skip
    return out


TRANSACTION_COLUMNS = [
    "TransactionId", "Label", "Coordinator", "TransactionStatus", "LoadJobSourceType", "PrepareTime",
    "PreCommitTime", "CommitTime", "PublishTime", "FinishTime", "Reason", "ErrorReplicasCount", "ListenerId",
    "TimeoutMs", "ErrMsg",
]  # fmt: skip
# Doris' TransactionState.LoadJobSourceType of each Galene load type.
_SOURCE_TYPES = {
    "STREAM_LOAD": "BACKEND_STREAMING",
    "INSERT": "INSERT_STREAMING",
    "DELETE": "INSERT_STREAMING",
}


def transaction_row(ctx: MetaContext, txn: Txn) -> tuple:
    backend = ctx.state.backends.get(txn.backend_id)
    stream = txn.load_type == "STREAM_LOAD"
    coordinator = f"BE: {backend.host}" if stream and backend is not None else f"FE: {ctx.fe_host}"
    precommit = txn.commit_time if txn.status == "PRECOMMITTED" else 0
    committed = txn.status in ("COMMITTED", "VISIBLE")
    return (
        str(txn.id), txn.label, coordinator, txn.status, _SOURCE_TYPES.get(txn.load_type, "INSERT_STREAMING"),
        time_text(txn.begin_time), time_text(precommit), time_text(txn.commit_time if committed else 0),
        time_text(txn.finish_time if txn.status == "VISIBLE" else 0),
        time_text(txn.finish_time if txn.status in ("VISIBLE", "ABORTED") else 0), txn.reason, "0", "-1",
        str(txn.timeout_s * 1000), "",
    )  # fmt: skip


def find_transaction(ctx: MetaContext, db: str, where: exp.Expr | None) -> Txn:
    """The txn of SHOW TRANSACTION [FROM db] WHERE id = N | label = 'x' (Doris accepts just these)."""
    cond = where.this if isinstance(where, exp.Where) else where
    if not (
        isinstance(cond, exp.EQ)
        and isinstance(cond.this, exp.Column)
        and cond.this.name.lower() in ("id", "label")
        and isinstance(cond.expression, exp.Literal)
    ):
        raise AnalysisError("Where clause should looks like: id = 123 or label = 'label'")
    state = ctx.state
    db_id = state.db_names.get(db)
    if cond.this.name.lower() == "id":
        if cond.expression.is_string or not cond.expression.name.isdigit():
            raise AnalysisError("Where clause should looks like: id = 123 or label = 'label'")
        txn_id = int(cond.expression.name)
        txn = state.txns.get(txn_id)
        if txn is None or txn.db_id != db_id:
            raise AnalysisError(f"transaction with id {txn_id} does not exist")
        return txn
    label = cond.expression.name
    db_obj = state.databases.get(db_id) if db_id is not None else None
    txn_id = db_obj.labels.get(label) if db_obj is not None else None
    txn = state.txns.get(txn_id) if txn_id is not None else None
    if txn is None:
        matches = [t for t in state.txns.values() if t.db_id == db_id and t.label == label]
        txn = max(matches, key=lambda t: t.id) if matches else None
    if txn is None:
        raise AnalysisError(f"transaction with label {label} does not exist")
    return txn


PROCESSLIST_COLUMNS = [(c, t) for c, t in SCHEMA_TABLES["processlist"].columns]
