"""The table structs group-commit loads use, cached briefly per (db, table, user, password).

The FE answers `/api/_internal/table_info` after checking the user's load privilege, so the
cache is keyed by the credentials too; ALTER TABLE SET takes effect for groups opened after
an entry expires.
"""

from __future__ import annotations

import asyncio
import time

import msgspec

from galene.catalog.model import Table
from galene.common.errors import LoadError

# Table schema/properties are cached this long per (db, table, user): ALTER TABLE SET takes
# effect for groups opened after that.
TABLE_INFO_TTL_S = 1.0


class TableInfoCache:
    """Table structs by (db, table, user, password), for TABLE_INFO_TTL_S (the FE checks auth).

    Concurrent misses of one key share one FE call: when an entry expires under load, the
    many loads in flight would otherwise all ask the FE at once. `manager` is the BE's
    `GroupCommitManager` (its FE calls).
    """

    def __init__(self, manager):
        self.manager = manager
        self._entries: dict[tuple, tuple[float, Table]] = {}
        self._inflight: dict[tuple, asyncio.Future] = {}

    async def get(self, db: str, table: str, user: str, password: str) -> Table:
        key = (db, table, user, password)
        hit = self._entries.get(key)
        if hit is not None and hit[0] > time.monotonic():
            return hit[1]
        inflight = self._inflight.get(key)
        if inflight is not None:
            return await asyncio.shield(inflight)
        fut = self._inflight[key] = asyncio.get_running_loop().create_future()
        try:
            found = await self._fetch(db, table, user, password)
        except BaseException as e:
            fut.set_exception(e if isinstance(e, Exception) else LoadError("table lookup cancelled"))
            fut.exception()  # retrieved: there may be no other waiter
            raise
        finally:
            del self._inflight[key]
        fut.set_result(found)
        if len(self._entries) > 4096:
            self._entries.clear()
        self._entries[key] = (time.monotonic() + TABLE_INFO_TTL_S, found)
        return found

    async def _fetch(self, db: str, table: str, user: str, password: str) -> Table:
        body = await self.manager.fe(
            "/api/_internal/table_info", {"db": db, "table": table, "user": user, "password": password}
        )
        if body.get("status") != "OK":
            raise LoadError(
                body.get("message", "table lookup failed"), status=body.get("load_status", "Fail")
            )
        return msgspec.convert(body["table"], Table)
