"""The BE's compaction HTTP API, as Doris' BE serves it (be/src/http/action/compaction_action.cpp).

* `POST /api/compaction/run?tablet_id=N&compact_type=base|cumulative|full` (or `table_id=N`
  for a full compaction of every tablet of a table)
* `GET /api/compaction/show?tablet_id=N`
* `GET /api/compaction/run_status[?tablet_id=N]`

In Galene the tablets are compacted by the FE's engine, so each handler hands its query
parameters to the FE's internal API (token-authenticated, with the BE's usual RPC deadline)
and answers with the JSON document the FE built in Doris' shape. Like Doris' BE (whose HTTP
authentication is off by default), `show` and `run_status` ask for no password; `run`
changes data layout, so it takes an ADMIN/NODE account (the BE's admin guard).

`POST /api/_internal/compaction/merge` (cluster token only) is the FE's: it has this BE merge
a small compaction run with pyarrow (`load/local_merge.py`) — the data rows are read and
written here, on the data path, and only the new rowsets' descriptions go back to the FE,
which commits them. Bounded by the FE's `compaction_local_max_mb`, and by this BE's own
`compaction_local_max_mb` (a run above it is refused: the FE then uses its engine).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

import msgspec
from aiohttp import web

from galene.catalog.model import Table
from galene.net.client import TOKEN_HEADER

log = logging.getLogger(__name__)

_PARAMS = ("tablet_id", "table_id", "compact_type", "remote")


def routes(be) -> list:
    async def run(request: web.Request) -> web.Response:
        return await _relay(be, request, "/api/_internal/compaction/run")

    async def show(request: web.Request) -> web.Response:
        return await _relay(be, request, "/api/_internal/compaction/show")

    async def run_status(request: web.Request) -> web.Response:
        return await _relay(be, request, "/api/_internal/compaction/run_status")

    async def merge(request: web.Request) -> web.Response:
        return await _merge(be, request)

    return [
        web.post("/api/_internal/compaction/merge", merge),
        web.post("/api/compaction/run", run),
        web.get("/api/compaction/show", show),
        web.get("/api/compaction/run_status", run_status),
    ]


# A merge request carries rowset descriptions, not rows: a few KB per rowset.
MERGE_REQUEST_MAX_BYTES = 64 << 20


async def _merge(be, request: web.Request) -> web.Response:
    from galene.load import local_merge as lm

    token = request.headers.get(TOKEN_HEADER, "")
    if not be.token or token != be.token:
        return web.json_response({"status": "ERROR", "message": "invalid token"}, status=403)
    buf = bytearray()  # read here, not with request.read(): aiohttp caps that at 1 MiB
    async for chunk in request.content.iter_chunked(1 << 20):
        buf += chunk
        if len(buf) > MERGE_REQUEST_MAX_BYTES:
            return web.json_response({"status": "ERROR", "message": "merge request too large"}, status=413)
    try:
        p = msgspec.json.decode(bytes(buf))
        table = msgspec.convert(p["table"], Table)
        jobs = lm.decode_jobs(p["jobs"])
        rowset_ids = {int(k): str(v) for k, v in dict(p["rowset_ids"]).items()}
    except (KeyError, TypeError, ValueError, msgspec.DecodeError, msgspec.ValidationError) as e:
        return web.json_response({"status": "ERROR", "message": f"bad merge request: {e}"}, status=400)
    limit = int(be.cfg.compaction_local_max_mb) << 20
    if not lm.merges_locally(table, jobs, limit):
        return web.json_response(
            {"status": "ERROR", "message": f"run over this BE's compaction_local_max_mb ({limit >> 20})"}
        )
    t0 = time.monotonic()
    try:
        rowsets = await asyncio.to_thread(lm.compact_small_run, table, jobs, be.cfg.storage_uri, rowset_ids)
    except Exception as e:  # noqa: BLE001 - the FE records the compaction as failed; files are gone
        log.warning("compaction merge of table %s failed: %s", table.name, e)
        return web.json_response({"status": "ERROR", "message": f"{type(e).__name__}: {e}"})
    be.metrics.inc("galene_be_compaction_merges_total")
    log.info(
        "merged %d rowsets of table %s into %d in %.3f s",
        sum(len(j.rowsets) for j in jobs), table.name, len(rowsets), time.monotonic() - t0,
    )  # fmt: skip
    return web.json_response({"status": "OK", "rowsets": msgspec.to_builtins(rowsets)})


async def _relay(be, request: web.Request, path: str) -> web.Response:
    payload = {k: request.query[k] for k in _PARAMS if k in request.query}
    try:
        status, body = await be.fe_call("POST", path, payload)
    except Exception as e:  # noqa: BLE001 - any failure to reach the FE is answered in Doris' shape
        log.warning("compaction request to the FE failed: %s", e)
        return _doris_error(f"failed to reach the FE: {type(e).__name__}: {e}")
    if status != 200 or not isinstance(body, dict) or body.get("status") != "OK":
        message = body.get("message") if isinstance(body, dict) else body
        return _doris_error(f"the FE refused the request ({status}): {message}")
    # Doris answers 200 with the JSON document, errors included (Status::to_json).
    return web.Response(text=str(body.get("body", "")), content_type="application/json")


def _doris_error(msg: str) -> web.Response:
    return web.Response(
        text=json.dumps({"status": "INTERNAL_ERROR", "msg": msg}, indent=4), content_type="application/json"
    )
