"""What compaction shows, in Doris' shapes: SHOW TABLETS rows, and the documents of a BE's
`/api/compaction/show`, `run_status` and `run` (`galene/be/compaction_api.py` relays those to the
FE's internal routes here), with Doris' statuses and texts (compaction_action.cpp, Tablet's
rowset lines, Status::to_json). They read the `CompactionService`'s state and start its manual
compactions."""

from __future__ import annotations

import asyncio
import json
import zlib
from datetime import datetime

from aiohttp import web

from galene.catalog.model import Rowset, Table
from galene.common.errors import AnalysisError
from galene.fe.compaction import (
    INTERNAL_ERROR,
    KINDS,
    NOT_FOUND,
    NOT_IMPLEMENTED_ERROR,
    RUN_WAIT_S,
    CompactionService,
    cumulative_point,
    pretty_bytes,
    tablet_rowsets,
    version_ranges,
)
from galene.storage import layout


def millis_text(ms: int) -> str:
    """Doris' ToStringFromUnixMillis: local time with milliseconds."""
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d}"


def status_json(status: str, msg: str) -> str:
    """Doris' Status::to_json (rapidjson's PrettyWriter: 4-space indent)."""
    return json.dumps({"status": status, "msg": msg}, indent=4)


def rowset_line(start: int, end: int, r: Rowset, *, compacted: bool) -> str:
    """One entry of `rowsets` in /api/compaction/show (Tablet::_get_rowset_info_str)."""
    overlap = "NONOVERLAPPING" if compacted or len(r.files) <= 1 else "OVERLAPPING"
    return f"[{start}-{end}] {len(r.files)} DATA {overlap} {r.id} {pretty_bytes(r.data_size)}"


# --- SHOW TABLETS -----------------------------------------------------------------------------
SHOW_TABLETS_COLUMNS = (
    "TabletId", "ReplicaId", "BackendId", "SchemaHash", "Version", "LstSuccessVersion", "LstFailedVersion",
    "LstFailedTime", "LocalDataSize", "RemoteDataSize", "RowCount", "State", "LstConsistencyCheckTime",
    "CheckVersion", "VersionCount", "QueryHits", "PathHash", "Path", "MetaUrl", "CompactionStatus",
    "CooldownReplicaId", "CooldownMetaId",
)  # fmt: skip


def show_tablets(svc: CompactionService, table: Table, partitions: list[str] | None = None) -> list[tuple]:
    """SHOW TABLETS FROM t [PARTITION …]: a row per tablet in Doris' columns."""
    parts = table.partitions
    if partitions:
        by_name = {p.name.lower(): p for p in table.partitions}
        parts = []
        for name in partitions:
            p = by_name.get(name.lower())
            if p is None:
                raise AnalysisError(f"Unknown partition '{name}' in table '{table.name}'")
            parts.append(p)
    per_tablet = tablet_rowsets(table)
    be_id, be_url = _backend(svc)
    schema_hash = (
        zlib.crc32(f"{table.id}:{','.join(c.name for c in table.columns)}".encode()) & 0x7FFFFFFF
    )
    root = svc.cfg.storage_uri.removeprefix("file://")
    path_hash = zlib.crc32(root.encode()) & 0x7FFFFFFF
    rows = []
    for p in parts:
        for tid in p.tablet_ids:
            rs = per_tablet.get(tid, [])
            version = str(p.visible_version)
            tablet_path = layout.tablet_dir(root, table.db_id, table.id, p.id, tid)
            rows.append(
                (
                    str(tid), str(tid), str(be_id), str(schema_hash), version, version, "-1", "NULL",
                    str(sum(r.data_size for r in rs)), "0", str(sum(r.num_rows for r in rs)), "NORMAL",
                    "NULL", "-1", str(len(rs)), "0", str(path_hash), tablet_path,
                    f"{be_url}/api/meta/header/{tid}", f"{be_url}/api/compaction/show?tablet_id={tid}",
                    "-1", "",
                )
            )  # fmt: skip
    return rows

def _backend(svc: CompactionService) -> tuple[int, str]:
    """(id, HTTP base URL) of the BE the rows name (an alive one if any)."""
    backends = sorted(svc.fe.state.backends.values(), key=lambda b: b.id)
    if not backends:
        return -1, ""
    be = next((b for b in backends if svc.fe.backends.status(b.id).alive), backends[0])
    port = svc.fe.backends.status(be.id).http_port or be.http_port or be.heartbeat_port
    return be.id, f"http://{be.host}:{port}"

# --- the BE HTTP API, answered here (galene/be/compaction_api.py relays) ----------------------
def show_json(svc: CompactionService, tablet_id: int) -> str:
    """GET /api/compaction/show?tablet_id=: the tablet's rowsets, cumulative point, history."""
    found = svc.find_tablet(tablet_id)
    if found is None:
        return status_json(NOT_FOUND, f"Tablet not found. tablet_id={tablet_id}")
    table, _ = found
    rs = tablet_rowsets(table).get(tablet_id, [])
    ranges = version_ranges(rs)
    h = svc.history(tablet_id)
    point = cumulative_point(rs)
    doc = {
        "cumulative policy type": "SIZE_BASED",
        "cumulative point": ranges[point][0] if point < len(rs) else (rs[-1].version + 1 if rs else 2),
        "last cumulative failure time": millis_text(h.failure_ms["cumulative"]),
        "last base failure time": millis_text(h.failure_ms["base"]),
        "last full failure time": millis_text(h.failure_ms["full"]),
        "last cumulative success time": millis_text(h.success_ms["cumulative"]),
        "last base success time": millis_text(h.success_ms["base"]),
        "last full success time": millis_text(h.success_ms["full"]),
        "rowsets": [
            rowset_line(a, b, r, compacted=r.txn_id == 0) for (a, b), r in zip(ranges, rs, strict=True)
        ],
        "missing_rowsets": [],
        "stale_rowsets": [line for s in h.stale for line in s.lines],
        "stale version path": [
            {
                "path id": str(s.path_id),
                "last create time": datetime.fromtimestamp(s.time)
                .astimezone()
                .strftime("%Y-%m-%d %H:%M:%S.")
                + f"{int(s.time * 1000) % 1000:03d} "
                + datetime.fromtimestamp(s.time).astimezone().strftime("%z"),
                "path list": f"{s.path_id}-> " + " -> ".join(f"[{a}-{b}]" for a, b in s.ranges),
            }
            for s in h.stale
        ],
    }
    return json.dumps(doc, indent=4)

def run_status_json(svc: CompactionService, tablet_id: int | None) -> str:
    """GET /api/compaction/run_status[?tablet_id=]: what runs (on the BE's one data dir)."""
    if not tablet_id:
        root = svc.cfg.storage_uri.removeprefix("file://")
        doc = {
            "CumulativeCompaction": {
                root: [str(t) for t, k in svc.running().items() if k == "cumulative"]
            },
            "BaseCompaction": {root: [str(t) for t, k in svc.running().items() if k != "cumulative"]},
        }
        return json.dumps(doc, indent=4)
    if svc.find_tablet(tablet_id) is None:
        return status_json(INTERNAL_ERROR, f"fail to get {tablet_id}")
    kind = svc.pending_kind(tablet_id)
    running = bool(kind)
    msg = "compaction task for this tablet is " + ("running" if running else "not running")
    # compaction_action.cpp's template, as Doris fills it in (strings::Substitute).
    return (
        "{\n"
        '            "status" : "Success",\n'
        f'            "run_status" : {"true" if running else "false"},\n'
        f'            "msg" : "{msg}",\n'
        f'            "tablet_id" : {tablet_id},\n'
        f'            "compact_type" : "{kind}"\n'
        "        }"
    )

async def run_json(svc: CompactionService, tablet_param: str, table_param: str, kind: str, remote: str) -> str:
    """POST /api/compaction/run: start the compaction, wait up to 2 s for its outcome."""
    ids, err = check_ids(tablet_param, table_param)
    if err:
        return status_json(INTERNAL_ERROR, err)
    tablet_id, table_id = ids
    if kind not in KINDS:
        return status_json(NOT_IMPLEMENTED_ERROR, f"The compaction type '{kind}' is not supported")
    if remote not in ("", "false", "true"):
        return status_json(NOT_IMPLEMENTED_ERROR, f"The remote = '{remote}' is not supported")
    if tablet_id == 0:
        # A table: full compaction of all its tablets (submitted; not waited for).
        if table_id not in svc.fe.state.tables:
            return status_json(NOT_FOUND, f"Table not found. table_id={table_id}")
        svc.spawn(svc.compact(table_id, None, "full", manual=True))
    else:
        if remote == "true":
            return status_json(NOT_IMPLEMENTED_ERROR, "tablet should do compaction locally")
        found = svc.find_tablet(tablet_id)
        if found is None:
            return status_json(NOT_FOUND, f"Tablet not found. tablet_id={tablet_id}")
        task = svc.spawn(svc.compact(found[0].id, [tablet_id], kind, manual=True))
        try:
            outcome = await asyncio.wait_for(asyncio.shield(task), timeout=RUN_WAIT_S)
        except TimeoutError:
            outcome = None  # still running: "triggered", as Doris answers after 2 s
        if outcome is not None:
            if outcome.error:
                return status_json(INTERNAL_ERROR, outcome.error)
            if tablet_id in outcome.skipped:
                return status_json(*outcome.skipped[tablet_id])
    return (
        '{"status": "Success", "msg": "compaction task is successfully triggered. Table id: '
        f'{table_id}. Tablet id: {tablet_id}"}}'
    )

# --- internal API handlers (token-checked by FeHttpApi.internal) -----------------------------
async def http_run(svc: CompactionService, p: dict) -> dict:
    body = await run_json(svc, 
        str(p.get("tablet_id", "")), str(p.get("table_id", "")), str(p.get("compact_type", "")),
        str(p.get("remote", "")),
    )  # fmt: skip
    return {"status": "OK", "body": body}

async def http_show(svc: CompactionService, p: dict) -> dict:
    (tablet_id, _), err = check_ids(str(p.get("tablet_id", "")), "")
    if err or not tablet_id:
        return {
            "status": "OK",
            "body": status_json(INTERNAL_ERROR, err or "check param failed: missing tablet_id"),
        }
    return {"status": "OK", "body": show_json(svc, tablet_id)}

async def http_run_status(svc: CompactionService, p: dict) -> dict:
    text = str(p.get("tablet_id", ""))
    if text and not text.isdigit():
        return {"status": "OK", "body": status_json(INTERNAL_ERROR, "convert tablet_id failed, stoull")}
    return {"status": "OK", "body": run_status_json(svc, int(text) if text else None)}


def check_ids(tablet: str, table: str) -> tuple[tuple[int, int], str | None]:
    """compaction_action.cpp's _check_param: exactly one of tablet_id and table_id."""
    if not tablet and not table:
        return (0, 0), "tablet id and table id can not be empty at the same time!"
    if tablet and table:
        return (0, 0), "tablet id and table id can not be set at the same time!"
    name, text = ("tablet_id", tablet) if tablet else ("table_id", table)
    if not text.isdigit():
        return (0, 0), f"convert {name} failed, stoull"
    return ((int(text), 0) if tablet else (0, int(text))), None


def internal_routes(api) -> list:
    """The FE's internal compaction routes (the BE relays its /api/compaction/* here)."""
    svc = api.fe.compaction

    async def run(request: web.Request) -> web.Response:
        return await api.internal(request, lambda p: http_run(svc, p))

    async def show(request: web.Request) -> web.Response:
        return await api.internal(request, lambda p: http_show(svc, p))

    async def run_status(request: web.Request) -> web.Response:
        return await api.internal(request, lambda p: http_run_status(svc, p))

    return [
        web.post("/api/_internal/compaction/run", run),
        web.post("/api/_internal/compaction/show", show),
        web.post("/api/_internal/compaction/run_status", run_status),
    ]
