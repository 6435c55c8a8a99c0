"""Stream Load two-phase commit: the `_stream_load_2pc` request and its Doris replies.

`PUT /api/{db}[/{table}]/_stream_load_2pc` with headers `txn_id` or `label` and
`txn_operation: commit|abort` commits or aborts a load that was sent with
`two_phase_commit: true` (left PRECOMMITTED). Both the FE and the BE answer it; the
decision is the FE's (`TxnManager.commit_txn_2pc` / `abort_txn_2pc`), so the BE
forwards the request to the FE's internal API and relays the answer (`galene.be.stream_load_2pc`).

This module owns the header vocabulary, the validation order and the reply texts, shared
by both sides so that FE and BE answer byte for byte alike:
  success  {"status": "Success", "msg": "transaction [N] commit successfully."}
  errors   {"status": "<CODE>", "msg": "..."}   (HTTP 200, as Doris' Status::to_json)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from aiohttp import web

OPERATIONS = ("commit", "abort")

# Doris wraps FE-side failures relayed by the BE in its thrift status text.
FE_ERROR_PREFIX = "TStatus: errCode = 2, detailMessage = "


@dataclass(frozen=True)
class TwoPhaseRequest:
    """A validated 2PC request: which txn (id or label) and what to do."""

    db: str
    operation: str  # commit | abort
    txn_id: int | None
    label: str | None

    def success_message(self) -> str:
        # Doris builds the message from the headers it was given: label first, then id.
        parts = []
        if self.label:
            parts.append(f"label [{self.label}] ")
        if self.txn_id is not None:
            parts.append(f"transaction [{self.txn_id}] ")
        return "".join(parts) + f"{self.operation} successfully."

    def to_payload(self) -> dict:
        return {"db": self.db, "operation": self.operation, "txn_id": self.txn_id, "label": self.label}

    @classmethod
    def from_payload(cls, p: Mapping) -> TwoPhaseRequest:
        txn_id = p.get("txn_id")
        return cls(
            db=str(p["db"]),
            operation=str(p["operation"]),
            txn_id=int(txn_id) if txn_id is not None else None,
            label=p.get("label") or None,
        )


class TwoPhaseError(Exception):
    """A 2PC request refused before or by the FE; `reply()` is the Doris JSON."""

    def __init__(self, status: str, msg: str):
        super().__init__(msg)
        self.status = status
        self.msg = msg

    def reply(self) -> dict:
        return {"status": self.status, "msg": self.msg}


def parse_request(db: str, headers: Mapping[str, str]) -> TwoPhaseRequest:
    """Validate the 2PC headers (names case-insensitive), in Doris' order and words."""
    h = {k.lower(): v for k, v in headers.items()}
    raw_id = h.get("txn_id", "").strip()
    label = h.get("label", "").strip() or None
    if not db:
        raise TwoPhaseError("FAILED", "No database selected.")
    if not raw_id and not label:
        raise TwoPhaseError("FAILED", "No transaction id or label selected.")
    operation = h.get("txn_operation", "").strip().lower()
    if not operation:
        raise TwoPhaseError("FAILED", "No transaction operation('commit' or 'abort') selected.")
    txn_id = None
    if raw_id:
        try:
            txn_id = int(raw_id)
            if txn_id < 0:
                raise ValueError(raw_id)
        except ValueError:
            raise TwoPhaseError(
                "INTERNAL_ERROR", f"convert txn_id [{raw_id}] failed, reason=stoull"
            ) from None
    if operation not in OPERATIONS:
        raise TwoPhaseError("INTERNAL_ERROR", "transaction operation should be 'commit' or 'abort'")
    return TwoPhaseRequest(db=db, operation=operation, txn_id=txn_id, label=label)


def success_reply(req: TwoPhaseRequest) -> dict:
    return {"status": "Success", "msg": req.success_message()}


def fe_error(message: str) -> TwoPhaseError:
    """An error decided by the FE (unknown txn, wrong state), worded as Doris relays it."""
    return TwoPhaseError("ANALYSIS_ERROR", FE_ERROR_PREFIX + message)


def json_reply(body: dict, status: int = 200) -> web.Response:
    # Doris' BE writes the reply with rapidjson's PrettyWriter (4-space indent).
    return web.Response(
        status=status, text=json.dumps(body, indent=4) + "\n", content_type="application/json"
    )
