"""The FE's HTTP API (port 8030): stream-load entry (307 to a BE), load state, health,
metrics, metadata tools, and the internal transaction API the BEs call.

The stream-load entry never reads the body: it answers 307 at once with the credentials in
the Location URL (many clients drop `Authorization` on a cross-port redirect) and closes the
connection, so a client that sent `Expect: 100-continue` never uploads the data twice.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable

import msgspec
from aiohttp import web
from multidict import CIMultiDict

import galene
from galene.catalog.model import Rowset
from galene.common.errors import GaleneError, LoadError
from galene.fe import auth
from galene.fe.compaction_api import internal_routes as compaction_routes
from galene.fe.insert import is_internal_password
from galene.fe.load_routing import LoadRoutingError, host_port_text, redirect_location
from galene.load import two_phase
from galene.load.headers import parse_basic_auth
from galene.meta import tools as meta_tools
from galene.net.client import TOKEN_HEADER
from galene.net.server import read_json_object
from galene.net.tasks_dump import tasks_dump_json, tasks_dump_text
from galene.storage.rowset import delete_rowset_files
from galene.txn.labels import EXISTING_JOB_STATUS, LabelAlreadyExists, SubLabelConflict, txn_of_label

log = logging.getLogger(__name__)

# Bound on the JSON body of an internal call (BE -> FE, supervisor -> FE): Doris' FE caps its
# BE RPCs the same way (`thrift_max_message_size`, 100 MB). A commit lists every file of the
# load (one per tablet and 32 MB block), so a 10 GB load into many tablets is megabytes.
INTERNAL_BODY_MAX_BYTES = 100 << 20

_ACCESS_DENIED = "Access denied for user. Please check your username and password."
# The identity of the loads the FE sends for a SQL INSERT (their statement was checked).
INTERNAL = auth.Identity("\0internal", "\0")


def _table_doc(table) -> dict:
    """A table as the BE needs it: schema, layout, properties; not the data files."""
    # Replace before converting: a table with thousands of rowsets costs milliseconds of
    # event-loop time to convert, several times a second under group commit.
    return msgspec.to_builtins(msgspec.structs.replace(table, rowsets=[]))


def password_hash(password: str) -> str:
    """MySQL native stored form: hex(SHA1(SHA1(password))); empty password stays ''."""
    return auth.native_hash(password)


# The answer of an admin route, a load or a 2PC to a user whose password is right but who lacks
# the privilege: Doris' FE REST text, HTTP 403 (Doris answers 200 with this body on its load
# entry and 401 on its admin routes; 403 tells a client "authenticated, not allowed" apart).
FORBIDDEN_STATUS = 403


def _with_host(request: web.Request):
    """The request's headers, with a Host. HTTP/1.0 makes Host optional and some clients omit it
    (doris-stream-load 2.4 switches http.client to HTTP/1.0, which sends none): the redirect
    then goes by the FE address the client connected to, which is what Host would have named.
    A Host header that is present but empty is the client's word and is judged as Doris does
    ("Invalid header host: ")."""
    if "Host" in request.headers:
        return request.headers
    sockname = request.transport.get_extra_info("sockname") if request.transport is not None else None
    if not sockname:
        return request.headers
    headers = CIMultiDict(request.headers)
    headers["Host"] = host_port_text(sockname[0], sockname[1])
    return headers


async def _no_continue(request: web.Request) -> None:
    """Expect handler of the FE's stream-load entry: answer with the 307, not 100 Continue."""
    return


class FeHttpApi:
    def __init__(self, fe):
        self.fe = fe

    async def tasks_dump(self, request: web.Request) -> web.Response:
        """GET /api/_tasks: the asyncio tasks and threads, then each running streaming-job task's
        stage and how long it has waited in it."""
        if request.query.get("format") == "json":  # calls in flight, tasks with ages, threads
            return web.json_response({**tasks_dump_json(), "jobs": self.fe.jobs.describe_running()})
        text = tasks_dump_text() + self.fe.jobs.describe_running()
        return web.Response(text=text, content_type="text/plain")

    def routes(self) -> list:
        sl = self.stream_load_entry
        return [
            web.put("/api/{db}/{table}/_stream_load", sl, expect_handler=_no_continue),
            web.put("/api/{db}/{table}/_stream_load/", sl, expect_handler=_no_continue),
            web.get("/api/{db}/get_load_state", self.get_load_state),
            web.get("/api/{db}/get_load_state/", self.get_load_state),
            *(
                web.put(path, self.stream_load_2pc)
                for path in (
                    "/api/{db}/{table}/_stream_load_2pc",
                    "/api/{db}/{table}/_stream_load_2pc/",
                    "/api/{db}/_stream_load_2pc",
                    "/api/{db}/_stream_load_2pc/",
                )
            ),
            web.get("/api/health", self.health),
            web.get("/api/bootstrap", self.health),
            web.get("/api/fe_version_info", self.admin_only(self.fe_version_info)),
            web.get("/metrics", self.metrics),
            web.get("/api/_tasks", self.admin_only(self.tasks_dump)),
            web.get("/dump", self.admin_only(self.dump)),
            web.get("/api/_journal", self.admin_only(self.journal)),
            web.post("/api/_gc", self.admin_only(self.gc)),
            web.post("/api/_internal/txn/begin", self.txn_begin),
            web.post("/api/_internal/txn/commit", self.txn_commit),
            web.post("/api/_internal/txn/abort", self.txn_abort),
            web.post("/api/_internal/txn/abort_label", self.txn_abort_label),
            web.post("/api/_internal/table_info", self.table_info),
            web.post("/api/_internal/group_commit/begin", self.group_commit_begin),
            web.post("/api/_internal/group_commit/reserve_label", self.group_commit_reserve_label),
            web.post("/api/_internal/group_commit/label_status", self.group_commit_label_status),
            web.post("/api/_internal/group_commit/commit", self.group_commit_commit),
            web.post("/api/_internal/group_commit/recover", self.group_commit_recover),
            web.post("/api/_internal/group_commit/replicas", self.group_commit_replicas),
            web.post("/api/_internal/txn/2pc", self.txn_2pc),
            web.post("/api/_internal/backend_event", self.backend_event),
            web.post("/api/_internal/auth/check", self.auth_check),
            web.post("/api/_internal/auth/status", self.auth_status),
            *compaction_routes(self),
        ]

    # --- auth: who a request or an internal call acts for, and what it may do ---------------
    def identify(self, user: str, password: str, host: str | None = None) -> auth.Identity | None:
        """The identity Basic auth `user:password` acts as (`host`: the client, when the request
        reached this FE from it; None when a BE relays it), or None. The FE's own loads for a SQL
        INSERT act as the statement's user, whose privileges the SQL layer checked: INTERNAL."""
        name = user.split("@")[0]
        if is_internal_password(self.fe.store.token, user, password):
            if any(a.name == name for a in self.fe.state.accounts.values()):
                return INTERNAL  # a load the FE itself sends for a SQL INSERT (galene/fe/insert.py)
            return None
        account = auth.http_account(self.fe.state, name, password, host)
        return auth.Identity(account.name, account.host) if account is not None else None

    def _may_load(self, ident: auth.Identity, db: str, table: str | None) -> bool:
        return ident is INTERNAL or auth.check_load(self.fe.state, ident, db, table)

    def _forbidden(self, pred: auth.Predicate) -> web.Response:
        message = auth.http_denied(pred)
        resp = web.json_response(
            {"Status": "Fail", "Message": message, "status": "FAILED", "msg": message},
            status=FORBIDDEN_STATUS,
        )
        resp.force_close()
        return resp

    def _request_identity(self, request: web.Request) -> tuple[tuple[str, str], auth.Identity] | None:
        """The request's Basic auth (user, password) and the identity it acts as, or None when
        it has none or its credentials are wrong (the caller answers 401)."""
        pair = parse_basic_auth(request.headers.get("Authorization"))
        if pair is None:
            return None
        ident = self.identify(*pair, request.remote)
        return (pair, ident) if ident is not None else None

    def _payload_identity(self, p: dict) -> auth.Identity | None:
        """The identity an internal call (a BE relaying a user's request) acts as: the user and
        password in its payload (no client host: the BE relays it)."""
        return self.identify(str(p.get("user", "")), str(p.get("password", "")))

    def _load_caller(self, p: dict) -> auth.Identity:
        """The identity of an internal call that loads into the payload's db.table: it must hold
        LOAD_PRIV there (Doris' texts, as LoadError the BE passes on)."""
        ident = self._payload_identity(p)
        if ident is None:
            raise LoadError(_ACCESS_DENIED)
        if not self._may_load(ident, str(p["db"]), str(p["table"])):
            raise LoadError(auth.load_denied_text())
        return ident

    def admin_refusal(self, request: web.Request) -> web.Response | None:
        """None when the request's user has ADMIN_PRIV or NODE_PRIV; else the refusal."""
        found = self._request_identity(request)
        if found is None or found[1] is INTERNAL:
            return self._unauthorized()
        if not auth.admin_or_node(self.fe.state, found[1]):
            return self._forbidden(auth.ADMIN_OR_NODE)
        return None

    def admin_only(
        self, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        """`handler` behind the admin routes' check (`admin_refusal`): 401 / 403 before it runs."""

        @functools.wraps(handler)
        async def guarded(request: web.Request) -> web.StreamResponse:
            refusal = self.admin_refusal(request)
            return refusal if refusal is not None else await handler(request)

        return guarded

    async def auth_check(self, request: web.Request) -> web.Response:
        """Internal (BE -> FE): may these credentials use an admin route? (the BE's compaction
        API and task dump ask; the BE keeps no users)."""

        async def fn(p: dict) -> dict:
            ident = self._payload_identity(p)
            if ident is None or ident is INTERNAL:
                return {"status": "ERROR", "http_status": 401, "message": _ACCESS_DENIED}
            if not auth.admin_or_node(self.fe.state, ident):
                return {
                    "status": "ERROR",
                    "http_status": FORBIDDEN_STATUS,
                    "message": auth.http_denied(auth.ADMIN_OR_NODE),
                }
            return {"status": "OK"}

        return await self.internal(request, fn)

    async def auth_status(self, request: web.Request) -> web.Response:
        """Internal (supervisor -> FE): whether root has a password (the banner's warning)."""

        async def fn(p: dict) -> dict:
            root = self.fe.state.accounts.get(auth.ROOT.key)
            return {"status": "OK", "root_has_password": bool(root is not None and root.password)}

        return await self.internal(request, fn)

    def _unauthorized(self) -> web.Response:
        return web.json_response(
            {"status": "FAILED", "msg": _ACCESS_DENIED},
            status=401,
            headers={"WWW-Authenticate": 'Basic realm="galene"'},
        )

    def _check_token(self, request: web.Request) -> bool:
        return request.headers.get(TOKEN_HEADER, "") == self.fe.store.token

    # --- stream load entry ----------------------------------------------------------
    async def stream_load_entry(self, request: web.Request) -> web.StreamResponse:
        found = self._request_identity(request)
        if found is None:
            return self._unauthorized()
        pair, ident = found
        db, table = request.match_info["db"], request.match_info["table"]
        try:
            self.fe.catalog.table(db, table)
        except GaleneError as e:
            return self._fail_json(e.message)
        if not self._may_load(ident, db, table):
            return self._forbidden(auth.LOAD)
        # A BE still joining (the node just started) is waited for, not a reason to fail.
        await self.fe.backends.wait_for_joining()
        try:  # the BE and its endpoint: redirect-policy, group-commit owner, forwarding
            location = redirect_location(
                self.fe,
                _with_host(request),
                request.path,
                request.query_string,
                self.fe.catalog.table(db, table),
                *pair,
            )
        except LoadRoutingError as e:
            return self._fail_json(e.message)
        resp = web.Response(status=307, headers={"Location": location})
        # The body (if the client sent it) is not read: the connection cannot be reused.
        resp.force_close()
        return resp

    def _fail_json(self, message: str) -> web.Response:
        resp = web.json_response({"Status": "Fail", "Message": message, "status": "FAILED", "msg": message})
        resp.force_close()
        return resp

    async def get_load_state(self, request: web.Request) -> web.Response:
        if self._request_identity(request) is None:
            return self._unauthorized()
        label = request.query.get("label", "")
        try:
            txn = self.fe.catalog.txns.txn_by_label(request.match_info["db"], label)
        except GaleneError as e:
            return web.json_response({"status": "FAILED", "msg": e.message, "data": None})
        state = "UNKNOWN" if txn is None else txn.status
        return web.json_response({"msg": "success", "code": 0, "data": state, "count": 0})

    # --- two-phase commit -------------------------------------------------------------
    async def stream_load_2pc(self, request: web.Request) -> web.Response:
        """`_stream_load_2pc` on the FE: answered here (Doris redirects it to a BE, which
        asks the FE; answering directly gives the same reply without the extra hop)."""
        found = self._request_identity(request)
        if found is None:  # Doris checks the password first
            return self._unauthorized()
        try:
            req = two_phase.parse_request(request.match_info.get("db", ""), request.headers)
        except two_phase.TwoPhaseError as e:
            return two_phase.json_reply(e.reply())
        _, ident = found
        if not self._may_load_2pc(ident, req):
            message = auth.http_denied(auth.LOAD)
            return two_phase.json_reply(two_phase.fe_error(message).reply(), status=FORBIDDEN_STATUS)
        return two_phase.json_reply(await self.run_2pc(req))

    def _may_load_2pc(self, ident: auth.Identity, req: two_phase.TwoPhaseRequest) -> bool:
        """LOAD_PRIV on the table of the txn the request names (the database's, if none)."""
        try:
            txn = self.fe.catalog.txns.txn_for_2pc(req.db, req.txn_id, req.label)
        except GaleneError:
            return self._may_load(ident, req.db, None)  # run_2pc answers the missing txn
        table = self.fe.state.tables.get(txn.table_id)
        return self._may_load(ident, req.db, table.name if table is not None else None)

    async def run_2pc(self, req: two_phase.TwoPhaseRequest) -> dict:
        """Commit or abort the named txn; an aborted PRECOMMITTED txn's files are deleted."""
        catalog = self.fe.catalog
        try:
            if req.operation == "commit":
                await asyncio.to_thread(catalog.txns.commit_txn_2pc, req.db, req.txn_id, req.label)
            else:
                _, freed = await asyncio.to_thread(catalog.txns.abort_txn_2pc, req.db, req.txn_id, req.label)
                if freed:
                    await asyncio.to_thread(delete_rowset_files, self.fe.fs, self.fe.root, freed)
        except GaleneError as e:
            return two_phase.fe_error(e.message).reply()
        return two_phase.success_reply(req)

    async def txn_2pc(self, request: web.Request) -> web.Response:
        """Internal: a BE relays a `_stream_load_2pc` request it received."""
        if not self._check_token(request):
            return web.json_response({"status": "ERROR", "message": "invalid token"}, status=403)
        p = await read_json_object(request, INTERNAL_BODY_MAX_BYTES)
        ident = self._payload_identity(p)
        if ident is None:
            return web.json_response(two_phase.fe_error(_ACCESS_DENIED).reply())
        req = two_phase.TwoPhaseRequest.from_payload(p)
        if not self._may_load_2pc(ident, req):
            return web.json_response(two_phase.fe_error(auth.load_denied_text()).reply())
        return web.json_response(await self.run_2pc(req))

    # --- operations -----------------------------------------------------------------
    async def health(self, request: web.Request) -> web.Response:
        st = self.fe.state
        return web.json_response(
            {
                "msg": "success",
                "code": 0,
                "data": {
                    "total_backend_num": len(st.backends),
                    "online_backend_num": len(self.fe.backends.load_available()),
                    # Galene's: a load sent now would succeed (a BE passed its write canary);
                    # `galene start`'s banner and the test harness wait for it.
                    "load_ready": self.fe.backends.load_ready(),
                    "query_engine_ready": self.fe.engine_ready.is_set(),
                    "query_engine_error": (
                        None if self.fe.engine_error is None else str(self.fe.engine_error)[:500]
                    ),
                },
                "count": 0,
            }
        )

    async def fe_version_info(self, request: web.Request) -> web.Response:
        """GET /api/fe_version_info (ADMIN): Doris' fields, each in its Doris shape; Galene's own
        version is in the free-text ones (dorisBuildInfo, dorisBuildHash)."""
        major, minor, patch = (int(p) for p in galene.DORIS_RELEASE.split("."))
        info = {
            "dorisBuildVersionPrefix": "doris",
            "dorisBuildVersionMajor": major,
            "dorisBuildVersionMinor": minor,
            "dorisBuildVersionPatch": patch,
            "dorisBuildVersionRcVersion": "",
            "dorisBuildVersion": galene.DORIS_BUILD_VERSION,
            "dorisBuildHash": f"galene-{galene.__version__}@{galene.DORIS_BUILD_SHORT_HASH}",
            "dorisBuildShortHash": galene.DORIS_BUILD_SHORT_HASH,
            "dorisBuildTime": "",
            "dorisBuildInfo": galene.BUILD_INFO,
            "dorisJavaCompileVersion": "",
        }
        return web.json_response({"msg": "success", "code": 0, "data": {"feVersionInfo": info}, "count": 0})

    async def metrics(self, request: web.Request) -> web.Response:
        m = self.fe.metrics
        m.set("galene_fe_journal_id", self.fe.store.last_journal_id)
        m.set("galene_fe_image_journal_id", self.fe.store.last_image_id)
        m.set("galene_fe_databases", len(self.fe.state.databases))
        m.set("galene_fe_tables", len(self.fe.state.tables))
        m.set("galene_fe_backends_alive", len(self.fe.backends.load_available()))
        return web.Response(text=m.render(), content_type="text/plain")

    async def dump(self, request: web.Request) -> web.Response:
        path = self.fe.cfg.meta_path / "dump" / f"image.{self.fe.store.last_journal_id}"
        path.parent.mkdir(parents=True, exist_ok=True)
        # The store writes under its own lock, in a worker thread: the event loop never blocks on it.
        await asyncio.to_thread(self.fe.store.snapshot_image, path)
        return web.json_response(
            {"msg": "success", "code": 0, "data": {"dumpFilePath": str(path)}, "count": 0}
        )

    async def journal(self, request: web.Request) -> web.Response:
        start = int(request.query.get("from", "1"))
        limit = min(int(request.query.get("limit", "100")), 1000)
        rows = await asyncio.to_thread(meta_tools.list_journal, self.fe.cfg.meta_path, start, limit)
        return web.Response(text=json.dumps(rows, default=str), content_type="application/json")

    async def gc(self, request: web.Request) -> web.Response:
        grace = request.query.get("grace_seconds")
        deleted = await self.fe.run_gc(float(grace) if grace is not None else None)
        return web.json_response({"msg": "success", "code": 0, "data": {"deleted": deleted}, "count": 0})

    async def backend_event(self, request: web.Request) -> web.Response:
        """The supervisor of `galene start` reports that its BE process died or is back."""

        async def fn(p: dict) -> dict:
            self.fe.backends.process_event(
                str(p.get("host", "")), int(p.get("heartbeat_port", 0)), str(p.get("event", "")),
                str(p.get("reason", "")),
            )  # fmt: skip
            return {"status": "OK"}

        return await self.internal(request, fn)

    # --- internal txn API (BE -> FE) ------------------------------------------------
    async def internal(self, request: web.Request, fn) -> web.Response:
        """An internal call (BE -> FE, supervisor -> FE): the cluster token checked, the JSON
        payload bounded, `fn(payload)`'s dict answered (a GaleneError as its status and message)."""
        if not self._check_token(request):
            return web.json_response({"status": "ERROR", "message": "invalid token"}, status=403)
        payload = await read_json_object(request, INTERNAL_BODY_MAX_BYTES)
        try:
            return web.json_response(await fn(payload))
        except LabelAlreadyExists as e:
            return web.json_response(
                {
                    "status": "ERROR",
                    "load_status": "Label Already Exists",
                    "message": e.message,
                    "existing_status": e.existing_status,
                    "txn_id": e.txn.id,
                }
            )
        except GaleneError as e:
            return web.json_response(
                {"status": "ERROR", "load_status": getattr(e, "status", "Fail"), "message": e.message}
            )

    async def txn_begin(self, request: web.Request) -> web.Response:
        async def fn(p: dict) -> dict:
            self._load_caller(p)
            txn, table = await asyncio.to_thread(
                self.fe.catalog.txns.begin_txn,
                p["db"],
                p["table"],
                p["label"],
                timeout_s=int(p.get("timeout_s") or 0) or None,
                backend_id=int(p.get("backend_id") or 0),
            )
            # A begin whose answer does not come back in time (tests: the BE then aborts it).
            await self.fe.debug_points.park("txn.begin.answer")
            return {"status": "OK", "txn_id": txn.id, "label": txn.label, "table": _table_doc(table)}

        return await self.internal(request, fn)

    async def txn_commit(self, request: web.Request) -> web.Response:
        async def fn(p: dict) -> dict:
            rowsets = msgspec.convert(p.get("rowsets", []), list[Rowset])
            commit = self.fe.catalog.txns.precommit_txn if p.get("two_phase") else self.fe.catalog.txns.commit_txn
            t0 = time.monotonic()
            await asyncio.to_thread(
                commit,
                int(p["txn_id"]),
                rowsets,
                num_rows=int(p.get("num_rows", 0)),
                load_bytes=int(p.get("load_bytes", 0)),
            )
            self.fe.metrics.observe_ms("galene_fe_txn_commit", (time.monotonic() - t0) * 1000)
            return {"status": "OK"}

        return await self.internal(request, fn)

    # --- internal group-commit API (BE -> FE) -------------------------------------------
    async def table_info(self, request: web.Request) -> web.Response:
        """Schema, layout and properties of a table for a BE that loads without its own txn."""

        async def fn(p: dict) -> dict:
            self._load_caller(p)
            table = self.fe.catalog.table(p["db"], p["table"])
            return {"status": "OK", "table": _table_doc(table)}

        return await self.internal(request, fn)

    async def group_commit_begin(self, request: web.Request) -> web.Response:
        async def fn(p: dict) -> dict:
            txn, table = await asyncio.to_thread(
                self.fe.catalog.txns.begin_group_txn,
                int(p["db_id"]),
                int(p["table_id"]),
                str(p["label"]),
                timeout_s=int(p.get("timeout_s") or 0) or self.fe.catalog.txns.default_load_timeout_s,
                backend_id=int(p.get("backend_id") or 0),
            )
            return {"status": "OK", "txn_id": txn.id, "label": txn.label, "table": _table_doc(table)}

        return await self.internal(request, fn)

    async def group_commit_reserve_label(self, request: web.Request) -> web.Response:
        async def fn(p: dict) -> dict:
            await asyncio.to_thread(self.fe.catalog.txns.reserve_group_label, int(p["txn_id"]), str(p["label"]))
            return {"status": "OK"}

        return await self.internal(request, fn)

    async def group_commit_label_status(self, request: web.Request) -> web.Response:
        """Read-only: does a live txn hold this label? (a retry is answered before its rows
        are written anywhere; the reservation after the WAL write stays authoritative)"""

        async def fn(p: dict) -> dict:
            db = self.fe.state.databases.get(int(p["db_id"]))
            txn = txn_of_label(self.fe.state, db, str(p["label"]))
            if txn is None or txn.status == "ABORTED":
                return {"status": "OK", "used": False}
            return {
                "status": "OK",
                "used": True,
                "txn_id": txn.id,
                "existing_status": EXISTING_JOB_STATUS.get(txn.status, "FINISHED"),
            }

        return await self.internal(request, fn)

    async def group_commit_commit(self, request: web.Request) -> web.Response:
        async def fn(p: dict) -> dict:
            rowsets = msgspec.convert(p.get("rowsets", []), list[Rowset])
            t0 = time.monotonic()
            try:
                await asyncio.to_thread(
                    self.fe.catalog.txns.commit_group_txn,
                    int(p["txn_id"]),
                    rowsets,
                    [str(label) for label in p.get("sub_labels", [])],
                    num_rows=int(p.get("num_rows", 0)),
                    load_bytes=int(p.get("load_bytes", 0)),
                )
            except SubLabelConflict as e:
                return {"status": "CONFLICT", "message": e.message, "conflicts": e.conflicts}
            self.fe.metrics.observe_ms("galene_fe_txn_commit", (time.monotonic() - t0) * 1000)
            return {"status": "OK"}

        return await self.internal(request, fn)

    async def group_commit_recover(self, request: web.Request) -> web.Response:
        async def fn(p: dict) -> dict:
            groups = [(int(g["db_id"]), str(g["label"])) for g in p.get("groups", [])]
            statuses = await asyncio.to_thread(
                self.fe.catalog.txns.recover_group_txns, int(p["backend_id"]), groups
            )
            return {"status": "OK", "groups": statuses}

        return await self.internal(request, fn)

    async def group_commit_replicas(self, request: web.Request) -> web.Response:
        """A BE's WAL copies of other BEs' groups: DROP, KEEP or TAKEOVER each (fe/wal_replicas.py)."""

        async def fn(p: dict) -> dict:
            arbiter = self.fe.wal_replicas
            verdicts, aborts = arbiter.verdicts(int(p["backend_id"]), list(p.get("groups") or []))
            for db_id, label in aborts:
                await asyncio.to_thread(
                    self.fe.catalog.txns.abort_group_label,
                    db_id,
                    label,
                    "group commit owner died: replayed from a WAL copy",
                )
            return {"status": "OK", "groups": verdicts}

        return await self.internal(request, fn)

    async def txn_abort_label(self, request: web.Request) -> web.Response:
        """A BE's begin of a label got no answer: abort the PREPARE txn it may have begun."""

        async def fn(p: dict) -> dict:
            status = await asyncio.to_thread(
                self.fe.catalog.txns.abort_label_of_backend,
                str(p["db"]),
                str(p["label"]),
                int(p.get("backend_id") or 0),
                float(p.get("begun_before") or 0) or None,
                str(p.get("reason", "")),
            )
            return {"status": "OK", "txn_status": status}

        return await self.internal(request, fn)

    async def txn_abort(self, request: web.Request) -> web.Response:
        async def fn(p: dict) -> dict:
            await asyncio.to_thread(self.fe.catalog.txns.abort_txn, int(p["txn_id"]), str(p.get("reason", "")))
            return {"status": "OK"}

        return await self.internal(request, fn)
