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
"""

from __future__ import annotations

import json
import logging

from aiohttp import web

log = logging.getLogger(__name__)

_PARAMS = ("tablet_id", "table_id", "compact_type", "remote")


def routes(be) -> list:
    async def run(request: web.Request) -> web.Response:
        return await _relay(be, request, "/api/_internal/compaction/run")

    async def show(request: web.Request) -> web.Response:
        return await _relay(be, request, "/api/_internal/compaction/show")

    async def run_status(request: web.Request) -> web.Response:
        return await _relay(be, request, "/api/_internal/compaction/run_status")

    return [
        web.post("/api/compaction/run", run),
        web.get("/api/compaction/show", show),
        web.get("/api/compaction/run_status", run_status),
    ]


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
