"""The BE's view of the FE's transaction API for a load: begin, commit and abort.

Every call goes through the BE's deadline client (`be.fe_call`). A begin whose answer was lost
(a deadline passed after the request went out) may have left a PREPARE transaction holding the
load's label: it is aborted in the background (`abort_label`, bounded in number and in time), so
a retry with the same label is not answered "Label Already Exists". `abort_until_answered`
retries an abort while the FE cannot be reached and says whether the FE aborted or committed.
"""

from __future__ import annotations

import asyncio
import logging
import time

import aiohttp
import msgspec

from galene.catalog.model import Rowset, Table
from galene.common.errors import LoadError
from galene.net.client import RpcUnavailable
from galene.net.deadline import DeadlineExceeded

log = logging.getLogger(__name__)

# Aborts of begins that got no answer, still retrying (kept referenced until done).
_UNANSWERED_BEGINS: set[asyncio.Task] = set()
MAX_UNANSWERED_BEGINS = 256


class FeTxnClient:
    """The BE's view of the FE transaction API (all calls go through the deadline client)."""

    def __init__(self, be):
        self.be = be

    async def _call(self, path: str, payload: dict, timeout_s: float | None = None) -> dict:
        try:
            status, body = await self.be.fe_call("POST", path, payload, timeout_s=timeout_s)
        except RpcUnavailable as e:
            e.call = f"POST {path}"  # type: ignore[attr-defined] - named in the load's error
            raise
        if status != 200 or not isinstance(body, dict):
            raise LoadError(f"FE call {path} failed: HTTP {status} {body}")
        return body

    async def begin(
        self, db: str, table: str, label: str, user: str, password: str, timeout_s: int
    ) -> tuple[int, Table]:
        try:
            body = await self._call(
                "/api/_internal/txn/begin",
                {
                    "db": db,
                    "table": table,
                    "label": label,
                    "user": user,
                    "password": password,
                    "timeout_s": timeout_s,
                    "backend_id": self.be.backend_id,
                },
            )
        except (DeadlineExceeded, RpcUnavailable) as e:
            # The FE may have begun the txn and only its answer be lost: unaborted, it would
            # hold the label (a retry: "Label Already Exists") until its timeout, 3 days. Not
            # when the call never connected; and bounded, so an FE outage does not pile up
            # retries (the FE's own coordinator-txn aborts and timeouts cover the rest).
            connected = not isinstance(e.__cause__, aiohttp.ClientConnectorError)
            if connected and len(_UNANSWERED_BEGINS) < MAX_UNANSWERED_BEGINS:
                task = asyncio.ensure_future(self._abort_unanswered_begin(db, label, time.time()))
                _UNANSWERED_BEGINS.add(task)
                task.add_done_callback(_UNANSWERED_BEGINS.discard)
            raise
        if body.get("status") != "OK":
            err = LoadError(
                body.get("message", "begin transaction failed"), status=body.get("load_status", "Fail")
            )
            err.existing_status = body.get("existing_status")  # type: ignore[attr-defined]
            err.txn_id = body.get("txn_id", 0)  # type: ignore[attr-defined]
            raise err
        return int(body["txn_id"]), msgspec.convert(body["table"], Table)

    async def _abort_unanswered_begin(self, db: str, label: str, gave_up: float, for_s: float = 120.0) -> None:
        """Abort the txn a begin without an answer may have left under `label` (a PREPARE txn
        of this BE begun before `gave_up`, wall clock: not a retry's), retrying while the FE
        cannot be reached, for `for_s` at most."""
        until = time.monotonic() + for_s
        reason = "begin transaction got no answer at the BE; the load was not loaded"
        while time.monotonic() < until:
            try:
                body = await self._call(
                    "/api/_internal/txn/abort_label",
                    {
                        "db": db,
                        "label": label,
                        "backend_id": self.be.backend_id,
                        "begun_before": gave_up,
                        "reason": reason,
                    },
                    timeout_s=min(5.0, self.be.cfg.rpc_timeout_ms / 1000),
                )
                log.info("unanswered begin of label %s: txn %s", label, body.get("txn_status"))
                return
            except (DeadlineExceeded, RpcUnavailable, LoadError) as e:
                log.info("abort of unanswered begin of label %s: %s; retrying", label, e)
                await asyncio.sleep(2.0)

    async def commit(
        self, txn_id: int, rowsets: list[Rowset], num_rows: int, load_bytes: int, two_phase: bool
    ) -> None:
        body = await self._call(
            "/api/_internal/txn/commit",
            {
                "txn_id": txn_id,
                "rowsets": msgspec.to_builtins(rowsets),
                "num_rows": num_rows,
                "load_bytes": load_bytes,
                "two_phase": two_phase,
            },
        )
        if body.get("status") != "OK":
            raise LoadError(body.get("message", "commit failed"))

    async def abort(self, txn_id: int, reason: str) -> None:
        try:
            await self._call("/api/_internal/txn/abort", {"txn_id": txn_id, "reason": reason})
        except Exception as e:  # noqa: BLE001 - the FE's txn timeout aborts it later; files are cleaned below / by GC
            log.warning("abort of txn %s failed: %s", txn_id, e)

    async def abort_until_answered(self, txn_id: int, reason: str, until: float) -> bool | None:
        """Abort `txn_id`, retrying while the FE cannot be reached, until `until` (monotonic).

        True once the FE says the txn is aborted, False when it says it committed (so its files
        must stay), None when it never answered (its own txn timeout aborts it)."""
        while True:
            try:
                body = await self._call(
                    "/api/_internal/txn/abort",
                    {"txn_id": txn_id, "reason": reason},
                    timeout_s=min(2.0, self.be.cfg.rpc_timeout_ms / 1000),
                )
                return body.get("status") == "OK"
            except (DeadlineExceeded, RpcUnavailable) as e:
                if time.monotonic() + 0.5 >= until:
                    log.warning("abort of txn %s never answered: %s", txn_id, e)
                    return None
                await asyncio.sleep(0.5)
            except Exception as e:  # noqa: BLE001 - an answer that is not OK: leave it to the FE's timeout
                log.warning("abort of txn %s failed: %s", txn_id, e)
                return False
