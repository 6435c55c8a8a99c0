"""What a stream load's headers say, read once per distinct set of headers.

Owns the request-level reading of a stream load: Basic auth, Doris' body-framing rule,
header text (UTF-8), the parsing options (`LoadOptions.from_headers`), the client label,
`two_phase_commit`, and the group-commit request (`group_commit` header and Doris' fallbacks
to a normal load).

Why a cache: logging and IoT clients send thousands of small loads a second with the same
headers; only Content-Length changes. Reading them costs ~15 µs of Python each time, more
than a fifth of what the BE spends on such a load. Keyed on the raw header bytes (transport
headers left out), it is one dict lookup. Nothing that fails is cached: errors are rare and
carry the request's own text. Options whose expressions read the load's start time (`now()`
in `columns`) are read again for every load.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from galene.common.errors import LoadError
from galene.load.options import LoadOptions

GROUP_COMMIT_MODES = ("async_mode", "sync_mode", "off_mode")
INVALID_GROUP_COMMIT_MODE = "[INVALID_ARGUMENT]group_commit can only be [async_mode, sync_mode, off_mode]"

# Headers that do not change what a load means (left out of the cache key).
_TRANSPORT_HEADERS = frozenset(
    {b"content-length", b"host", b"user-agent", b"accept", b"accept-encoding", b"connection", b"date"}
)
_CACHE_MAX = 4096


def parse_basic_auth(header: str | None) -> tuple[str, str] | None:
    if not header or not header.lower().startswith("basic "):
        return None
    try:
        raw = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):  # binascii.Error is a ValueError
        return None
    user, _, password = raw.partition(":")
    return user, password


def check_body_framing(headers) -> None:
    """Doris' rule: a load body has exactly one of Content-Length or chunked encoding."""
    chunked = "chunked" in headers.get("Transfer-Encoding", "").lower()
    has_length = "Content-Length" in headers
    if not has_length and not chunked:
        raise LoadError(
            "[INTERNAL_ERROR]content_length is empty and transfer-encoding!=chunked, "
            "please set content_length or transfer-encoding=chunked"
        )
    if has_length and chunked:  # aiohttp's parser already refuses this with a 400
        raise LoadError("[INTERNAL_ERROR]please do not set both content_length and transfer-encoding")


def check_header_text(headers) -> None:
    """Header values must be UTF-8 text (aiohttp keeps other bytes as surrogates)."""
    for name, value in headers.items():
        if value.isascii():
            continue
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise LoadError(f"[INVALID_ARGUMENT]the value of header {name} is not valid UTF-8") from None


def requested_group_commit(headers) -> str | None:
    """The `group_commit` header (any case), validated; None when absent."""
    raw = headers.get("group_commit")
    if raw is None or not raw.strip():
        return None
    mode = raw.strip().lower()
    if mode not in GROUP_COMMIT_MODES:
        raise LoadError(INVALID_GROUP_COMMIT_MODE)
    return mode


def falls_back_to_off(headers) -> bool:
    """Doris loads these without group commit: 2PC, explicit partitions, partial updates."""

    def flag(name: str) -> bool:
        return (headers.get(name) or "").strip().lower() == "true"

    return (
        flag("two_phase_commit")
        or bool((headers.get("partitions") or "").strip())
        or bool((headers.get("temporary_partitions") or "").strip())
        or flag("partial_columns")
    )


@dataclass(frozen=True, slots=True)
class LoadHeaders:
    """A stream load's headers, read and checked (`read_load_headers`).

    `opts` is shared by every load sent with the same headers: its `started_at` is not this
    load's. Whatever may evaluate the load's clock (a `DEFAULT CURRENT_TIMESTAMP` column the
    load does not fill) takes `fresh_options()`.
    """

    auth: tuple[str, str]  # (user, password)
    opts: LoadOptions
    label: str  # the `label` header as sent ("" when absent)
    client_label: str | None  # the label, stripped; None when absent or blank
    two_phase: bool
    # The group_commit header, validated lazily (an invalid one fails the load with Doris'
    # text from the group-commit path), and whether Doris would load it without group commit.
    group_commit: str | None
    group_commit_error: str | None
    no_group_commit: bool

    def fresh_options(self) -> LoadOptions:
        """`opts` started now (this load's clock for now() and CURRENT_TIMESTAMP)."""
        return self.opts.started_now()


_cache: dict[tuple, LoadHeaders] = {}


def read_load_headers(request) -> LoadHeaders:
    """The request's LoadHeaders (cached per distinct headers); raises LoadError with Doris'
    text for missing auth, a bad body framing, non-UTF-8 values or bad option values."""
    headers = request.headers
    check_body_framing(headers)
    key = tuple(item for item in request.raw_headers if item[0].lower() not in _TRANSPORT_HEADERS)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    auth = parse_basic_auth(headers.get("Authorization"))
    cacheable = auth is not None
    if auth is None and request.url.user is not None:
        auth = (request.url.user, request.url.password or "")
    if auth is None:
        raise LoadError("no valid Basic authorization")
    check_header_text(headers)
    opts = LoadOptions.from_headers(headers)
    try:
        mode, mode_error = requested_group_commit(headers), None
    except LoadError as e:
        mode, mode_error = None, e.message
    label = headers.get("label") or ""
    found = LoadHeaders(
        auth=auth,
        opts=opts,
        label=label,
        client_label=label.strip() or None,
        two_phase=headers.get("two_phase_commit", "").strip().lower() == "true",
        group_commit=mode,
        group_commit_error=mode_error,
        no_group_commit=falls_back_to_off(headers),
    )
    # A label changes load after load (and such loads do not repeat): not worth keeping.
    if cacheable and not opts.needs_transform and not label:
        if len(_cache) >= _CACHE_MAX:
            _cache.clear()
        _cache[key] = found
    return found
