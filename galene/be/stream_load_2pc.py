"""The BE's `_stream_load_2pc` handler: a two-phase-commit request validated with the shared 2PC
vocabulary (`galene.load.two_phase`), decided by the FE (it owns transactions), the answer relayed
byte for byte as the FE would give it.
"""

from __future__ import annotations

import logging

from aiohttp import web

from galene.load.headers import parse_basic_auth
from galene.load.two_phase import TwoPhaseError, json_reply, parse_request

log = logging.getLogger(__name__)


async def handle_be_2pc(be, request: web.Request) -> web.Response:
    """BE handler: validate, then let the FE decide (it owns transactions) and relay."""
    try:
        req = parse_request(request.match_info.get("db", ""), request.headers)
        auth = parse_basic_auth(request.headers.get("Authorization"))
        if auth is None and request.url.user is not None:
            auth = (request.url.user, request.url.password or "")
        if auth is None:
            raise TwoPhaseError("INTERNAL_ERROR", "no valid Basic authorization")
        status, body = await be.fe_call(
            "POST",
            "/api/_internal/txn/2pc",
            {**req.to_payload(), "user": auth[0], "password": auth[1]},
        )
        if status != 200 or not isinstance(body, dict) or "status" not in body:
            raise TwoPhaseError(
                "INTERNAL_ERROR", f"FE call /api/_internal/txn/2pc failed: HTTP {status} {body}"
            )
        return json_reply({"status": body["status"], "msg": body.get("msg", "")})
    except TwoPhaseError as e:
        return json_reply(e.reply())
    except (TimeoutError, ConnectionError, OSError) as e:
        return json_reply({"status": "INTERNAL_ERROR", "msg": f"FE unreachable: {e}"})
    except Exception as e:  # a malformed request must get a reply, never a 500
        log.exception("stream load 2pc failed")
        return json_reply({"status": "INTERNAL_ERROR", "msg": f"{type(e).__name__}: {e}"})
