"""Where the FE sends a stream load: Doris 3.1+'s `redirect-policy` and group-commit affinity.

Owns three pure pieces the FE's 307 entry (`galene/fe/http_api.py`) and the SQL INSERT path
use:

* `split_host_port` / `parse_endpoint`: Guava `HostAndPort.fromString` as Doris uses it, and
  Doris' `splitHostAndPort` texts (`Invalid endpoint: <value>`, `Invalid endpoint port: <n>`);
  `ALTER SYSTEM ADD|MODIFY BACKEND` refuse a malformed `tag.public_endpoint` /
  `tag.private_endpoint` with the same texts.
* `select_endpoint`: `LoadAction.selectEndpointByRedirectPolicy`, case for case (the header
  `redirect-policy`, else the FE config `streamload_redirect_policy`; the request's `Host`).
* `GroupCommitAffinity`: `GroupCommitManager`'s rule: a table keeps its owner BE while the
  bytes it received in a sliding window of `group_commit_interval_ms`/1000 + 1 seconds stay below
  `group_commit_data_bytes` and the owner is still eligible (alive, writable, loads enabled, not
  decommissioned); otherwise a random eligible BE becomes the owner. The BEs report the bytes
  they received per table with their heartbeat answers.
"""

from __future__ import annotations

import ipaddress
import random
import re
import time
from collections import deque
from dataclasses import dataclass, field

from galene.catalog.properties import group_commit_data_bytes, group_commit_interval_ms

REDIRECT_POLICY_HEADER = "redirect-policy"
DIRECT, RANDOM_BE, PUBLIC, PRIVATE, PUBLIC_PRIVATE = (
    "direct",
    "random-be",
    "public",
    "private",
    "public-private",
)

GROUP_COMMIT_MODES = ("sync_mode", "async_mode", "off_mode")
# Doris' FE text (LoadAction.streamLoad) for a bad `group_commit` header.
INVALID_GROUP_COMMIT = "Header `group_commit` can only be `sync_mode`, `async_mode` or `off_mode`."


class LoadRoutingError(Exception):
    """A load the FE cannot redirect; `message` is Doris' text."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


_WS = re.compile(r"\s+")


def split_host_port(text: str) -> tuple[str, int | None]:
    """Guava's `HostAndPort.fromString`: (host, port or None). Raises ValueError when Guava
    throws IllegalArgumentException (bad brackets, a port that is not a number in 0..65535)."""
    port_text = ""
    if text.startswith("["):
        colon, close = text.find(":"), text.rfind("]")
        if not (colon > -1 and close > colon):
            raise ValueError(f"Invalid bracketed host/port: {text}")
        host = text[1:close]
        if close + 1 != len(text):
            if text[close + 1] != ":":
                raise ValueError(f"Only a colon may follow a close bracket: {text}")
            port_text = text[close + 2 :]
            if not all(c.isdigit() for c in port_text):
                raise ValueError(f"Port must be numeric: {text}")
    else:
        colon = text.find(":")
        if colon >= 0 and text.find(":", colon + 1) == -1:  # exactly one colon: host:port
            host, port_text = text[:colon], text[colon + 1 :]
        else:  # none, or an IPv6 literal without brackets
            host = text
    if not port_text:
        return host, None
    if port_text.startswith("+") or not port_text.isascii():
        raise ValueError(f"Unparseable port number: {text}")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"Unparseable port number: {text}") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"Port number out of range: {text}")
    return host, port


def parse_endpoint(value: str) -> tuple[str, int]:
    """Doris' `LoadAction.splitHostAndPort` of a BE's `tag.public_endpoint`/`private_endpoint`."""
    text = _WS.sub("", value)
    if not text:
        raise LoadRoutingError(f"empty endpoint: {text}")
    try:
        host, port = split_host_port(text)
    except ValueError:
        raise LoadRoutingError(f"Invalid endpoint: {text}") from None
    if port is None:
        raise LoadRoutingError(f"Invalid endpoint: {text}")
    if port <= 0 or port >= 65536:
        raise LoadRoutingError(f"Invalid endpoint port: {port}")
    return host, port


ENDPOINT_TAGS = ("public_endpoint", "private_endpoint")


def check_endpoint_tags(tags: dict[str, str]) -> None:
    """Refuse a malformed endpoint tag at ADD/MODIFY BACKEND time (the loads would fail later)."""
    for key in ENDPOINT_TAGS:
        value = tags.get(key)
        if value:  # Doris ignores an empty endpoint
            parse_endpoint(value)


def _is_ip_literal(host: str) -> bool:
    """commons-validator's InetAddressValidator: an IPv4 or IPv6 literal."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _is_site_local(host: str) -> bool:
    """Java's `InetAddress.isSiteLocalAddress`: 10/8, 172.16/12, 192.168/16 (and IPv6 fec0::/10)."""
    addr = ipaddress.ip_address(host)
    if addr.version == 4:
        return any(addr in ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
    return addr in ipaddress.ip_network("fec0::/10")


def select_endpoint(
    policy: str | None,
    default_policy: str,
    host_header: str | None,
    be_host: str,
    be_http_port: int,
    tags: dict[str, str],
) -> tuple[str, int]:
    """`LoadAction.selectEndpointByRedirectPolicy`: the (host, port) a load for the BE
    (`be_host`:`be_http_port`, with its `tag.*` `tags`) is redirected to. Raises
    LoadRoutingError with Doris' texts."""
    public = parse_endpoint(tags["public_endpoint"]) if tags.get("public_endpoint") else None
    private = parse_endpoint(tags["private_endpoint"]) if tags.get("private_endpoint") else None
    policy = policy if policy else default_policy
    req_host_str = _WS.sub("", host_header or "")
    if not req_host_str:
        raise LoadRoutingError(f"Invalid header host: {req_host_str}")
    try:
        req_host, _ = split_host_port(req_host_str)
    except ValueError:
        raise LoadRoutingError(f"Invalid header host: {req_host_str}") from None
    p = (policy or "").lower()
    if p in (DIRECT, RANDOM_BE):
        return be_host, be_http_port
    if p == PUBLIC:
        if public is not None:
            return public
        raise LoadRoutingError("public endpoint is null, please check be public endpoint config")
    if p == PRIVATE:
        if private is not None:
            return private
        raise LoadRoutingError("private endpoint is null, please check be private endpoint config")
    if p == PUBLIC_PRIVATE:
        if _is_ip_literal(req_host):  # redirect with ip
            if _is_site_local(req_host) and private is not None:
                return private
            if public is not None:
                return public
            raise LoadRoutingError(f"Invalid header host: {req_host}")
        # redirect with a domain name
        if public is not None and "public" in req_host.lower():
            return public
        if private is not None:
            return private
        raise LoadRoutingError(f"Invalid header host: {req_host}")
    # The default (and any other value, as in Doris).
    if _is_ip_literal(req_host) and public is not None and req_host.lower() == public[0].lower():
        return public
    if private is not None:
        # Doris uses the request's own host here on purpose: "private endpoint may be unknown
        # for cloud mode".
        return req_host, private[1]
    return be_host, be_http_port


def host_port_text(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# --- group-commit affinity --------------------------------------------------------------------
@dataclass
class _TableLoad:
    owner: int = 0  # backend id; 0 = none yet
    window: deque = field(default_factory=deque)  # (monotonic time, bytes) reported by BEs
    window_bytes: int = 0


class GroupCommitAffinity:
    """The FE's owner BE per table for group-commit loads (Doris' GroupCommitManager rule)."""

    def __init__(self, rng: random.Random | None = None):
        self.tables: dict[int, _TableLoad] = {}
        self._rng = rng or random.Random()

    def _trim(self, load: _TableLoad, window_s: float, now: float) -> None:
        while load.window and load.window[0][0] < now - window_s:
            load.window_bytes -= load.window.popleft()[1]

    def record_bytes(self, table_id: int, nbytes: int, now: float | None = None) -> None:
        """Bytes a BE received for the table since its last report (heartbeat answer)."""
        if nbytes <= 0:
            return
        load = self.tables.setdefault(table_id, _TableLoad())
        load.window.append((time.monotonic() if now is None else now, nbytes))
        load.window_bytes += nbytes

    def window_bytes(self, table_id: int, properties: dict[str, str], now: float | None = None) -> int:
        load = self.tables.get(table_id)
        if load is None:
            return 0
        window_s = group_commit_interval_ms(properties) / 1000 + 1
        self._trim(load, window_s, time.monotonic() if now is None else now)
        return load.window_bytes

    def owner(
        self, table_id: int, properties: dict[str, str], eligible: list[int], now: float | None = None
    ) -> int | None:
        """The table's owner among `eligible` backend ids (in a stable order), or None if none."""
        if not eligible:
            return None
        load = self.tables.setdefault(table_id, _TableLoad())
        limit = group_commit_data_bytes(properties)
        if load.owner in eligible and self.window_bytes(table_id, properties, now) < limit:
            return load.owner
        load.owner = self._rng.choice(eligible)
        return load.owner

    def owner_unreachable(self, table_id: int, backend_id: int) -> None:
        """A BE could not reach the owner: the next load picks a new one."""
        load = self.tables.get(table_id)
        if load is not None and load.owner == backend_id:
            load.owner = 0

    def forget_backend(self, backend_id: int) -> None:
        for load in self.tables.values():
            if load.owner == backend_id:
                load.owner = 0

    def forget_table(self, table_id: int) -> None:
        self.tables.pop(table_id, None)


# --- the FE's 307 -----------------------------------------------------------------------------
NO_BACKEND = "No available backends to load data. Check SHOW BACKENDS."
FORWARD_SUFFIX = "_stream_load_forward"


def group_commit_wanted(header: str | None, table_properties: dict[str, str]) -> bool:
    """Whether a load is a group-commit load, as the FE sees it (Doris' LoadAction): the header
    `group_commit`, else the table property `group_commit_mode`. A bad header value raises
    Doris' text."""
    if header is not None:
        mode = header.strip().lower()
        if mode not in GROUP_COMMIT_MODES:
            raise LoadRoutingError(INVALID_GROUP_COMMIT)
        return mode != "off_mode"
    mode = str(table_properties.get("group_commit_mode", "off_mode")).strip().lower()
    return mode in GROUP_COMMIT_MODES and mode != "off_mode"


def redirect_location(fe, headers, path: str, query_string: str, table, user: str, password: str) -> str:
    """The `Location` of the FE's 307 for a stream load into `table`: the BE (round-robin over
    the load-available BEs, or the table's group-commit owner), through the endpoint
    `redirect-policy` picks; a group-commit load whose endpoint is not the owner itself (a load
    balancer) goes to `_stream_load_forward?…&forward_to=<owner>` (Doris #55326).
    Raises LoadRoutingError with Doris' texts."""
    from urllib.parse import quote

    group_commit = group_commit_wanted(headers.get("group_commit"), table.properties)
    monitor = fe.backends
    choice = monitor.group_commit_owner(table) if group_commit else monitor.choose_for_load()
    if choice is None:
        raise LoadRoutingError(NO_BACKEND)
    be, rt = choice
    cfg = fe.cfg
    host, port = select_endpoint(
        headers.get(REDIRECT_POLICY_HEADER), cfg.streamload_redirect_policy, headers.get("Host"), be.host, rt.http_port, be.tags
    )  # fmt: skip
    if (
        group_commit
        and cfg.enable_group_commit_streamload_be_forward
        and (host, port) != (be.host, rt.http_port)
    ):
        path = path.replace("/_stream_load", "/" + FORWARD_SUFFIX)
        target = f"forward_to={host_port_text(be.host, rt.http_port)}"
        query_string = f"{query_string}&{target}" if query_string else target
    cred = f"{quote(user, safe='')}:{quote(password, safe='')}@"
    location = f"http://{cred}{host_port_text(host, port)}{path}"
    return f"{location}?{query_string}" if query_string else location


def internal_routes(fe) -> list:
    """FE internal routes of load routing: a BE reports that a table's owner was unreachable."""
    from aiohttp import web

    from galene.net.client import TOKEN_HEADER
    from galene.net.server import read_json_object

    async def owner_unreachable(request: web.Request) -> web.Response:
        if request.headers.get(TOKEN_HEADER, "") != fe.store.token:
            return web.json_response({"status": "ERROR", "message": "invalid token"}, status=403)
        p = await read_json_object(request, 1 << 16)
        try:
            table = fe.catalog.table(str(p.get("db", "")), str(p.get("table", "")))
        except Exception as e:  # noqa: BLE001 - dropped meanwhile
            return web.json_response({"status": "ERROR", "message": str(e)})
        owner = str(p.get("owner", ""))
        for be in fe.state.backends.values():
            if host_port_text(be.host, fe.backends.status(be.id).http_port) == owner:
                fe.backends.affinity.owner_unreachable(table.id, be.id)
        return web.json_response({"status": "OK"})

    return [web.post("/api/_internal/group_commit/owner_unreachable", owner_unreachable)]
