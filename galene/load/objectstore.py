"""Object storage for the S3 table function and streaming jobs: listing and reading files, every
call under a timer-driven deadline.

Owns `SourceSpec` (what `S3("uri"=…, "format"=…, "s3.endpoint"=…, …)` names: the store, its
credentials and timeouts, the file pattern and the format options, parsed from Doris' property
names and validated with Doris-style errors), `ObjectStore` (a `pyarrow.fs` S3FileSystem or
LocalFileSystem: `list` = the files matching the pattern, sorted by name, with sizes; `read` =
a file's bytes), the deadline runner and the errors that name what failed and why.

Why a worker thread per call: a pyarrow call blocks in C++ and cannot be interrupted. Checking
a clock when it returns is the Databend bug (a timeout checked on poll while the kernel
retransmitted to a dead peer for 940 s). Here the call runs in a daemon worker thread and the
caller waits on a future with a timeout — a timer: at the deadline the caller gets
`ObjectStoreError` naming the endpoint and the stalled operation, and the worker is abandoned
(it ends by itself when pyarrow's own `connect_timeout`/`request_timeout` give up; its thread is
never joined, so it cannot hold a process exit either).
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import threading
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import urlparse

import msgspec
import pyarrow.fs as pafs

from galene.common.errors import AnalysisError, GaleneError

log = logging.getLogger(__name__)

T = TypeVar("T")

FORMATS = ("csv", "csv_with_names", "csv_with_names_and_types", "json", "parquet")
# Reads are cut into chunks of this size, each with its own deadline: a deadline bounds a stall,
# not the size of a file.
READ_CHUNK = 16 << 20
_GLOB_CHARS = frozenset("*?[{")


# --- errors ------------------------------------------------------------------------------------
class ObjectStoreError(GaleneError):
    """An object-store call failed. `cause` is one of: stalled (its deadline passed),
    unreachable, credentials, no_bucket, not_found, io. The first two are transient: the
    endpoint may answer again."""

    def __init__(self, message: str, cause: str = "io"):
        super().__init__(message)
        self.cause = cause

    @property
    def transient(self) -> bool:
        return self.cause in ("stalled", "unreachable")


def classify(exc: BaseException, op: str, target: str, endpoint: str) -> ObjectStoreError:
    """A pyarrow/AWS error as an ObjectStoreError whose text says which cause it is."""
    if isinstance(exc, ObjectStoreError):
        return exc
    text = str(exc).strip().replace("\n", " ")[:500]
    upper = text.upper()
    where = f"{op} {target} at {endpoint}"
    if any(k in upper for k in ("INVALID_ACCESS_KEY_ID", "SIGNATURE_DOES_NOT_MATCH", "ACCESS_DENIED", "ACCESSDENIED")):
        return ObjectStoreError(f"[ACCESS_DENIED]credentials refused by {endpoint} ({op} {target}): {text}", "credentials")
    if "NO_SUCH_BUCKET" in upper or "NOSUCHBUCKET" in upper:
        return ObjectStoreError(f"[NOT_FOUND]bucket of {target} does not exist at {endpoint} ({where})", "no_bucket")
    if any(
        k in upper
        for k in ("NETWORK_CONNECTION", "CURLCODE: 7", "CURLCODE: 28", "COULD NOT CONNECT", "CONNECTION REFUSED",
                  "TIMEOUT WAS REACHED", "COULDN'T CONNECT", "REQUEST_TIMEOUT")
    ):  # fmt: skip
        return ObjectStoreError(f"[NETWORK_ERROR]object store unreachable ({where}): {text}", "unreachable")
    if isinstance(exc, FileNotFoundError) or "NO_SUCH_KEY" in upper or "PATH DOES NOT EXIST" in upper:
        return ObjectStoreError(f"[NOT_FOUND]{target} does not exist ({where})", "not_found")
    return ObjectStoreError(f"[IO_ERROR]{where} failed: {type(exc).__name__}: {text}", "io")


# --- the deadline runner -----------------------------------------------------------------------
class _Workers:
    """Daemon threads for blocking object-store calls. A call past its deadline keeps its thread
    (nothing can interrupt pyarrow) and the next call gets another thread; idle threads are
    reused, so a healthy store costs no thread start per call."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, fn: Callable[[], T]) -> concurrent.futures.Future:
        fut: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1
        self._jobs.put((fut, fn))
        if spawn:
            threading.Thread(target=self._loop, name="galene-objectstore", daemon=True).start()
        return fut

    def _loop(self) -> None:
        while True:
            try:
                fut, fn = self._jobs.get(timeout=60)
            except queue.Empty:
                with self._lock:
                    # Leave only if no submitter counted on this thread meanwhile.
                    if self._idle > 0:
                        self._idle -= 1
                        return
                continue
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn())
                except BaseException as e:  # noqa: BLE001 - handed to the waiting caller
                    fut.set_exception(e)
            with self._lock:
                self._idle += 1


_workers = _Workers()


def call_with_deadline(fn: Callable[[], T], seconds: float, op: str, target: str, endpoint: str) -> T:
    """Run the blocking `fn` with a deadline of `seconds` enforced by a timer (the wait on its
    future), whatever `fn` is blocked in. Errors come back classified."""
    fut = _workers.submit(fn)
    try:
        return fut.result(timeout=seconds)
    except concurrent.futures.TimeoutError:
        fut.cancel()
        raise ObjectStoreError(
            f"[TIMEOUT]object store call stalled: {op} {target} at {endpoint} did not finish within its "
            f"deadline of {seconds:g}s (endpoint unreachable or not answering)",
            "stalled",
        ) from None
    except Exception as e:  # noqa: BLE001 - classified: every failure names its cause
        raise classify(e, op, target, endpoint) from None


# --- what a source names -----------------------------------------------------------------------
class SourceSpec(msgspec.Struct, kw_only=True, frozen=True):
    """One S3(...) table function: where the files are and how to read them."""

    uri: str
    format: str = "csv"
    scheme: str = "s3"  # s3 | file
    bucket: str = ""
    pattern: str = ""  # key pattern within the bucket (s3) or absolute path pattern (file)
    endpoint: str = ""  # host:port
    endpoint_scheme: str = "http"
    region: str = "us-east-1"
    access_key: str = ""
    secret_key: str = ""
    session_token: str = ""
    path_style: bool = True
    connect_timeout: float = 5.0
    request_timeout: float = 10.0
    list_timeout: float = 0.0  # 0: connect + request timeout
    # format options (Doris' TVF names)
    column_separator: str = "\t"
    line_delimiter: str = "\n"
    enclose: str = ""
    escape: str = ""
    skip_lines: int = 0
    trim_double_quotes: bool = False
    compress_type: str = ""
    read_json_by_line: bool = True
    strip_outer_array: bool = False
    json_root: str = ""

    @property
    def call_timeout(self) -> float:
        """The deadline of one call (an open, a chunk read)."""
        return self.connect_timeout + self.request_timeout

    @property
    def listing_timeout(self) -> float:
        return self.list_timeout or self.call_timeout

    @property
    def endpoint_text(self) -> str:
        if self.scheme == "file":
            return "local filesystem"
        return f"{self.endpoint_scheme}://{self.endpoint}" if self.endpoint else "the default S3 endpoint"

    def display(self, name: str) -> str:
        """A file as users name it: s3://bucket/key or file:///path."""
        return f"s3://{self.bucket}/{name}" if self.scheme == "s3" else f"file://{name}"

    def fs_path(self, name: str) -> str:
        return f"{self.bucket}/{name}" if self.scheme == "s3" else name


def _prop(props: dict[str, str], *names: str, default: str | None = None) -> str | None:
    lowered = {k.lower(): v for k, v in props.items()}
    for n in names:
        if n.lower() in lowered:
            return lowered[n.lower()]
    return default


def _seconds(value: str | None, name: str, default: float) -> float:
    if value is None or value == "":
        return default
    text = value.strip().lower()
    scale = 1.0
    if text.endswith("ms"):
        text, scale = text[:-2], 0.001
    elif text.endswith("s"):
        text = text[:-1]
    try:
        seconds = float(text) * scale
    except ValueError:
        raise AnalysisError(f"Invalid value of property {name}: {value}") from None
    if seconds <= 0:
        raise AnalysisError(f"Invalid value of property {name}: {value}")
    return seconds


def _bool(value: str | None, default: bool) -> bool:
    if value is None or value == "":
        return default
    return value.strip().lower() in ("true", "1", "yes", "on")


def parse_source(props: dict[str, str]) -> SourceSpec:
    """The S3 table function's properties (Doris names; `s3.` prefixes optional) as a spec."""
    uri = _prop(props, "uri")
    if not uri:
        raise AnalysisError("Properties 'uri' is required")
    fmt = (_prop(props, "format") or "").lower()
    if not fmt:
        raise AnalysisError("Properties 'format' is required")
    if fmt not in FORMATS:
        raise AnalysisError(f"format:{fmt} is not supported.")
    parsed = urlparse(uri)
    kw: dict = {}
    if parsed.scheme in ("s3", "s3a", "s3n", "oss", "cos", "obs"):
        if not parsed.netloc or len(parsed.netloc) < 3:
            raise AnalysisError(f"Invalid uri: {uri}: the bucket name is missing or too short")
        kw.update(scheme="s3", bucket=parsed.netloc, pattern=parsed.path.lstrip("/"))
        endpoint = _prop(props, "s3.endpoint", "endpoint", "AWS_ENDPOINT") or ""
        if "://" in endpoint:
            ep = urlparse(endpoint)
            kw.update(endpoint=ep.netloc, endpoint_scheme=ep.scheme or "http")
        else:
            kw.update(endpoint=endpoint.strip("/"), endpoint_scheme="http")
        kw.update(
            region=_prop(props, "s3.region", "region", "AWS_REGION", default="us-east-1"),
            access_key=_prop(props, "s3.access_key", "access_key", "AWS_ACCESS_KEY", default=""),
            secret_key=_prop(props, "s3.secret_key", "secret_key", "AWS_SECRET_KEY", default=""),
            session_token=_prop(props, "s3.session_token", "session_token", "AWS_TOKEN", default=""),
            # Path-style by default: S3-compatible stores behind an endpoint (SeaweedFS, MinIO) need it.
            path_style=_bool(_prop(props, "use_path_style", "s3.use_path_style"), True),
        )
        if not kw["pattern"]:
            raise AnalysisError(f"Invalid uri: {uri}: no object path")
    elif parsed.scheme == "file":
        if not parsed.path.startswith("/"):
            raise AnalysisError(f"Invalid uri: {uri}: file:// needs an absolute path")
        kw.update(scheme="file", pattern=parsed.path)
    else:
        raise AnalysisError(f"Invalid uri: {uri}: only s3:// and file:// are supported")
    kw.update(
        connect_timeout=_seconds(_prop(props, "s3.connect_timeout", "s3.connection.timeout"), "s3.connect_timeout", 5.0),
        request_timeout=_seconds(_prop(props, "s3.request_timeout"), "s3.request_timeout", 10.0),
        list_timeout=_seconds(_prop(props, "s3.list_timeout"), "s3.list_timeout", 0.0) if _prop(props, "s3.list_timeout") else 0.0,
    )
    sep = _prop(props, "column_separator")
    delim = _prop(props, "line_delimiter")
    if sep is not None or delim is not None:
        from galene.load.options import decode_separator

        try:
            if sep is not None:
                kw["column_separator"] = decode_separator(sep).decode()
            if delim is not None:
                kw["line_delimiter"] = decode_separator(delim, "line delimiter").decode()
        except GaleneError as e:
            raise AnalysisError(e.message) from None
    for name in ("enclose", "escape"):
        value = _prop(props, name)
        if value:
            if len(value) != 1:
                raise AnalysisError(f"{name} must be a single character: {value}")
            kw[name] = value
    skip = _prop(props, "skip_lines")
    if skip:
        try:
            kw["skip_lines"] = int(skip)
        except ValueError:
            raise AnalysisError(f"Invalid value of property skip_lines: {skip}") from None
    compress = (_prop(props, "compress_type", "compress") or "").lower()
    if compress and compress not in ("plain", "gz", "gzip", "bz2", "zstd", "lz4", "lz4frame"):
        raise AnalysisError(f"compress_type:{compress} is not supported.")
    kw.update(
        format=fmt,
        uri=uri,
        compress_type="" if compress == "plain" else compress,
        trim_double_quotes=_bool(_prop(props, "trim_double_quotes"), False),
        read_json_by_line=_bool(_prop(props, "read_json_by_line"), True),
        strip_outer_array=_bool(_prop(props, "strip_outer_array"), False),
        json_root=_prop(props, "json_root", default="") or "",
    )
    return SourceSpec(**kw)


# --- glob patterns -----------------------------------------------------------------------------
def literal_prefix_dir(pattern: str) -> str:
    """The directory part of `pattern` before its first glob character ('' for none)."""
    cut = next((i for i, ch in enumerate(pattern) if ch in _GLOB_CHARS), len(pattern))
    return pattern[:cut].rpartition("/")[0]


def has_glob(pattern: str) -> bool:
    return any(ch in _GLOB_CHARS for ch in pattern)


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """Doris' file globs: `*` and `?` within one path segment, `[a-c]`/`[!a]`, `{a,b}`."""
    import re

    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        elif ch == "{":
            end = pattern.find("}", i + 1)
            if end < 0:
                out.append(re.escape(ch))
            else:
                out.append("(?:" + "|".join(re.escape(a) for a in pattern[i + 1 : end].split(",")) + ")")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    regex = re.compile("".join(out) + r"\Z")
    return lambda name: regex.match(name) is not None


# --- the store ---------------------------------------------------------------------------------
class FileEntry(msgspec.Struct, frozen=True, array_like=True):
    name: str  # key within the bucket (s3) or absolute path (file): what offsets compare
    size: int


_fs_cache: dict[tuple, pafs.FileSystem] = {}
_fs_lock = threading.Lock()


def _filesystem(spec: SourceSpec) -> pafs.FileSystem:
    if spec.scheme == "file":
        return pafs.LocalFileSystem()
    key = (
        spec.endpoint, spec.endpoint_scheme, spec.region, spec.access_key, spec.secret_key,
        spec.session_token, spec.path_style, spec.connect_timeout, spec.request_timeout,
    )  # fmt: skip
    with _fs_lock:
        fs = _fs_cache.get(key)
        if fs is None:
            kw: dict = {
                "region": spec.region,
                "connect_timeout": spec.connect_timeout,
                "request_timeout": spec.request_timeout,
                "force_virtual_addressing": not spec.path_style,
                # The deadline decides when to give up; the SDK's own retries stay short.
                "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=2),
            }
            if spec.access_key or spec.secret_key:
                kw.update(access_key=spec.access_key, secret_key=spec.secret_key)
                if spec.session_token:
                    kw["session_token"] = spec.session_token
            else:
                kw["anonymous"] = True
            if spec.endpoint:
                kw.update(endpoint_override=spec.endpoint, scheme=spec.endpoint_scheme)
            fs = pafs.S3FileSystem(**kw)
            _fs_cache[key] = fs
        return fs


class ObjectStore:
    """The files of one SourceSpec; every call has a deadline (see the module docstring)."""

    def __init__(self, spec: SourceSpec):
        self.spec = spec
        self.fs = _filesystem(spec)

    def _call(self, fn: Callable[[], T], seconds: float, op: str, target: str) -> T:
        return call_with_deadline(fn, seconds, op, target, self.spec.endpoint_text)

    def list(self) -> list[FileEntry]:
        """Every file matching the pattern, sorted by name."""
        spec = self.spec
        pattern = spec.pattern
        target = spec.display(pattern)
        if not has_glob(pattern):
            info = self._call(lambda: self.fs.get_file_info(spec.fs_path(pattern)), spec.listing_timeout, "list", target)
            return [FileEntry(pattern, info.size or 0)] if info.type == pafs.FileType.File else []
        base = literal_prefix_dir(pattern)
        selector = pafs.FileSelector(spec.fs_path(base) if base else spec.fs_path(""), recursive=True, allow_not_found=True)
        if spec.scheme == "s3" and not base:
            selector = pafs.FileSelector(spec.bucket, recursive=True, allow_not_found=True)
        infos = self._call(lambda: self.fs.get_file_info(selector), spec.listing_timeout, "list", target)
        match = glob_matcher(pattern)
        cut = len(spec.bucket) + 1 if spec.scheme == "s3" else 0
        out = [
            FileEntry(info.path[cut:], info.size or 0)
            for info in infos
            if info.type == pafs.FileType.File and match(info.path[cut:])
        ]
        out.sort(key=lambda e: e.name)
        return out

    def read_prefix(self, name: str, nbytes: int) -> bytes:
        """At most the first `nbytes` of a file (schema inference)."""
        spec = self.spec
        target = spec.display(name)
        path = spec.fs_path(name)
        stream = self._call(lambda: self.fs.open_input_stream(path), spec.call_timeout, "open", target)
        data = self._call(lambda: stream.read(nbytes), spec.call_timeout, "read", target)
        stream.close()
        return data

    def probe(self) -> None:
        """One cheap listing call: raises if the endpoint does not answer (auto-resume checks)."""
        spec = self.spec
        base = literal_prefix_dir(spec.pattern) if has_glob(spec.pattern) else spec.pattern.rpartition("/")[0]
        path = spec.fs_path(base) if base else (spec.bucket if spec.scheme == "s3" else "/")
        self._call(lambda: self.fs.get_file_info(path), spec.call_timeout, "probe", spec.display(base))

    def read(self, name: str) -> bytes:
        """A whole file, opened and read chunk by chunk, each step under its own deadline."""
        spec = self.spec
        target = spec.display(name)
        path = spec.fs_path(name)
        stream = self._call(lambda: self.fs.open_input_stream(path), spec.call_timeout, "open", target)
        parts = []
        while True:
            # A stalled read leaves the stream to its abandoned worker (closing it here could
            # block as well, or race the read); it is closed when that worker lets go of it.
            chunk = self._call(lambda: stream.read(READ_CHUNK), spec.call_timeout, "read", target)
            if not chunk:
                break
            parts.append(chunk)
            if len(chunk) < READ_CHUNK:
                break
        stream.close()
        return parts[0] if len(parts) == 1 else b"".join(parts)
