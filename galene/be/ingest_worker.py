"""The BE's ingest worker: parses small group-commit loads and writes the group-commit WAL,
away from the HTTP server's event loop.

Why: at thousands of ~1 KB loads a second the BE's event loop is busy most of the time.
A closed loop of clients gets `clients / reply latency` loads a second, so what counts is
the latency a load spends between its request and its reply, and every hop through the
busy loop adds to it. The worker takes each small load as soon as the loop has read it,
parses whatever loads have arrived meanwhile in one pyarrow call, writes those bound for
one WAL file as one record with one fdatasync, and answers them; the loads that arrive
meanwhile make up its next round. Only a busy worker lingers (up to 1 ms) to make a round
bigger; a quiet one starts as soon as a load arrives.

Where: by default in a child process (`group_commit_ingest_worker = true`), so its Python
work has a GIL of its own (a worker *thread* of the BE waits for the busy loop to let go of
the GIL several times per batch: measured, that waiting set the latency); or, with
`group_commit_ingest_worker = false`, the same code in a thread of the BE process.

What it owns: every write to group-commit WAL files while the BE runs (creation of spare
files, appends of the single-load path, the lane's loads), so each file has exactly one
writer (`galene.be.wal.WalWriter`, here). The BE holds `RemoteWalWriter`s. Reading WAL
files (the group's flush, recovery) and deleting them stay in the BE. The worker keeps no
rows: the group's flush reads what is durable from the WAL file itself.

Wire: a socketpair; frames of [u32 length][pickle of a list of messages]. BE → worker
messages are (request id, op, args), worker → BE messages are (request id, ok, result).
The BE sends the requests made during one pass of its event loop as one frame.

Lifetime: started by the BE's GroupCommitManager; a process exits when its socket closes (BE
stop) and is killed by the kernel when the BE dies (PR_SET_PDEATHSIG), so a restarted BE never
races a writer left over from its previous run. If the worker dies, the requests in flight
fail (those loads are not acknowledged) and the next request starts a new one.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import pickle
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback
from collections import deque
from pathlib import Path

from galene.common.errors import GaleneError, error_message
from galene.common.process import disable_pyarrow_signal_handlers

log = logging.getLogger(__name__)

_LEN = struct.Struct("<I")
# A request the worker has not answered in this long fails (the disk is stuck, or the worker).
WORKER_CALL_TIMEOUT_S = 120.0
START_TIMEOUT_S = 30.0
# Parse keys (table + options) the worker remembers; the BE redefines keys well within this.
WORKER_KEYS = 256
BE_KEYS = 128


class IngestWorkerError(GaleneError):
    """The ingest worker failed a request, died, or did not answer in time."""


# --- the BE side -----------------------------------------------------------------------
class IngestWorker:
    """The BE's handle on its ingest worker (a child process, or threads of this process)."""

    def __init__(self, in_process: bool = False, name: str = "galene-ingest"):
        self.name = name
        self.in_process = in_process
        self._proc: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task | None = None
        self._pending: dict[int, asyncio.Future] = {}
        # (request id, op, time.monotonic() it was queued), oldest first: the age of the oldest
        # unanswered request says whether the worker (or its disk) is stuck (be/health.py).
        self._sent: deque[tuple[int, str, float]] = deque()
        self.last_answer = 0.0  # time.monotonic() of the worker's last answer
        self.last_fsync = 0.0  # ... of its last WAL write answered (every write is fsynced)
        self._ids = itertools.count(1)
        self._start_lock: asyncio.Lock | None = None
        self._closed = False
        self._outbox: list[tuple] = []  # requests of this loop pass, sent as one frame
        self._flush_handle: asyncio.Handle | None = None
        self._keys: dict[tuple, tuple[int, object]] = {}  # parse key -> (id, table kept alive)
        self._key_ids = itertools.count(1)
        # WAL files by path: the worker reports the bytes it wrote to each (RemoteWalWriter).
        self.files: dict[str, RemoteWalWriter] = {}
        # Called with (group label, rows) for the rows of memory (non-WAL) lane loads.
        self.on_rows = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else os.getpid() if self._thread else None

    def running(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    async def start(self) -> None:
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self.running():
                return
            if self._closed:
                raise IngestWorkerError("[CANCELLED]the BE is stopping")
            ours, theirs = socket.socketpair()
            if self.in_process:
                self._thread = threading.Thread(
                    target=_serve_socket, args=(theirs,), name=f"{self.name}-serve", daemon=True
                )
                self._thread.start()
            else:
                env = dict(os.environ)
                env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
                try:
                    # Started from the event loop's thread: PR_SET_PDEATHSIG fires when the
                    # *thread* that forked exits, and this one lives as long as the BE.
                    self._proc = subprocess.Popen(  # noqa: ASYNC220 - one fork+exec (ms), at start
                        [
                            sys.executable,
                            "-m",
                            "galene.be.ingest_worker",
                            str(theirs.fileno()),
                            str(os.getpid()),
                        ],
                        pass_fds=[theirs.fileno()],
                        env=env,
                        stdin=subprocess.DEVNULL,
                    )
                finally:
                    theirs.close()
            reader, self._writer = await asyncio.open_unix_connection(sock=ours, limit=1 << 26)
            self._keys.clear()  # parse keys are defined per worker
            self._reader_task = asyncio.create_task(self._read_replies(reader), name=f"{self.name}-replies")
        await asyncio.wait_for(self.call("ping"), START_TIMEOUT_S)

    def request(self, op: str, *args) -> asyncio.Future:
        """Queue one request (sent at the end of this loop pass); its future gets the answer
        or an IngestWorkerError. The worker must be running (see `ensure_started`)."""
        fut = asyncio.get_running_loop().create_future()
        if not self.running():
            fut.set_exception(IngestWorkerError("[INTERNAL_ERROR]the ingest worker is not running"))
            return fut
        req_id = next(self._ids)
        self._pending[req_id] = fut
        self._sent.append((req_id, op, time.monotonic()))
        self._outbox.append((req_id, op, args))
        if self._flush_handle is None:
            self._flush_handle = asyncio.get_running_loop().call_soon(self._flush)
        return fut

    def _flush(self) -> None:
        self._flush_handle = None
        out, self._outbox = self._outbox, []
        if not out:
            return
        if not self.running():
            self._fail([r[0] for r in out], "[INTERNAL_ERROR]the ingest worker is gone")
            return
        assert self._writer is not None
        payload = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
        self._writer.write(_LEN.pack(len(payload)) + payload)

    def oldest_pending(self) -> tuple[str, float] | None:
        """(op, seconds waiting) of the oldest request the worker has not answered, or None."""
        sent, pending = self._sent, self._pending
        while sent and sent[0][0] not in pending:
            sent.popleft()
        if not sent:
            return None
        return sent[0][1], time.monotonic() - sent[0][2]

    def _fail(self, req_ids, message: str) -> None:
        for req_id in req_ids:
            fut = self._pending.pop(req_id, None)
            if fut is not None and not fut.done():
                fut.set_exception(IngestWorkerError(message))

    async def ensure_started(self) -> None:
        if not self.running():
            await self.start()

    async def call(self, op: str, *args, timeout_s: float = WORKER_CALL_TIMEOUT_S):
        """Send one request and await its answer (raises IngestWorkerError on failure)."""
        await self.ensure_started()
        fut = self.request(op, *args)
        try:
            async with asyncio.timeout(timeout_s):
                return await fut
        except TimeoutError:
            raise IngestWorkerError(
                f"[TIMEOUT]the ingest worker did not answer {op} in {timeout_s:.0f}s"
            ) from None

    def send(self, op: str, *args) -> None:
        """Fire and forget (e.g. close a file): nothing waits for the answer."""
        if self.running():
            self._outbox.append((0, op, args))
            if self._flush_handle is None:
                self._flush_handle = asyncio.get_running_loop().call_soon(self._flush)

    def parse_key(self, key: tuple, table, opts, max_error_rows: int) -> int:
        """The worker's id for a parse key (defining it there first if needed). The table is
        kept referenced while its key is known: `key` holds id(table)."""
        hit = self._keys.get(key)
        if hit is not None:
            return hit[0]
        if len(self._keys) >= BE_KEYS:
            self._keys.clear()  # later loads define their keys again (the worker keeps more)
        key_id = next(self._key_ids)
        self._keys[key] = (key_id, table)
        self.send("key", key_id, table, opts, max_error_rows)
        return key_id

    async def _read_replies(self, reader: asyncio.StreamReader) -> None:
        reason = "closed its socket"
        try:
            while True:
                head = await reader.readexactly(_LEN.size)
                (n,) = _LEN.unpack(head)
                self.last_answer = time.monotonic()
                for req_id, ok, result in pickle.loads(await reader.readexactly(n)):
                    if not req_id:  # a notice
                        self._notice(result)
                        continue
                    fut = self._pending.pop(req_id, None)
                    if fut is None or fut.done():
                        continue
                    if ok:
                        fut.set_result(result)
                    else:
                        fut.set_exception(IngestWorkerError(result))
        except asyncio.IncompleteReadError:
            pass
        except Exception as e:  # noqa: BLE001 - any failure of the channel ends this worker
            reason = f"failed: {e}"
        finally:
            if self._writer is not None:
                self._writer.close()
            proc = self._proc
            if proc is not None and proc.poll() is not None:
                reason = f"exited with {proc.returncode}"
            if not self._closed:
                log.error("ingest worker %s %s; requests in flight fail", self.pid, reason)
            self._fail(list(self._pending), f"[INTERNAL_ERROR]the ingest worker {reason}")
            if proc is not None and proc.poll() is None and not self._closed:
                proc.kill()  # a worker that broke the protocol is not trusted with the WAL

    def _notice(self, notice: tuple) -> None:
        if notice[0] == "wal_grew":  # (_, path, bytes written to it)
            self.last_fsync = time.monotonic()
            writer = self.files.get(notice[1])
            if writer is not None:
                writer.grew(notice[2])
        elif notice[0] == "rows" and self.on_rows is not None:  # (_, group label, rows)
            self.on_rows(notice[1], notice[2])

    async def stop(self, timeout_s: float = 10.0) -> None:
        """Close the channel; the worker finishes what it was doing and exits."""
        self._closed = True
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush()
        if self._writer is not None:
            self._writer.close()
        proc = self._proc
        if proc is not None:
            try:
                await asyncio.wait_for(asyncio.to_thread(proc.wait), timeout_s)
            except TimeoutError:
                proc.kill()
                await asyncio.to_thread(proc.wait)
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, timeout_s)
        if self._reader_task is not None:
            await asyncio.gather(self._reader_task, return_exceptions=True)


class RemoteWalWriter:
    """A group's WAL file, written by the ingest worker: `WalWriter`'s calls, sent there."""

    def __init__(self, worker: IngestWorker, path: Path, on_grow=None, spare: bool = False):
        from galene.be.wal import SPARE_SUFFIX

        self.worker = worker
        self.final_path = path
        self.path = path.with_name(path.name + SPARE_SUFFIX) if spare else path
        self._spare = spare
        self.size = 0  # bytes the worker acknowledged
        self._on_grow = on_grow
        worker.files[str(path)] = self

    def grew(self, nbytes: int) -> None:
        """The worker wrote `nbytes` (the first write renames a spare to its final name)."""
        self.path = self.final_path
        self.size += nbytes
        if self._on_grow is not None and nbytes:
            self._on_grow(nbytes)

    async def create(self) -> None:
        await self.worker.call("prepare", str(self.final_path), self._spare)

    async def append_rows(self, label: str, parts) -> None:
        """Append the rows of loads of group `label` ((client label, rows) each); returns
        once they are fsynced."""
        await self.worker.ensure_started()
        await self.worker.request("append", str(self.final_path), label, parts)

    def delete(self) -> None:
        """Delete the file (either name) here; the worker closes its descriptor of it."""
        from galene.be.wal import SPARE_SUFFIX

        self.worker.send("forget", str(self.final_path))
        self.worker.files.pop(str(self.final_path), None)
        for p in {self.path, self.final_path, self.final_path.with_name(self.final_path.name + SPARE_SUFFIX)}:
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass


# --- the worker side ------------------------------------------------------------------
class _Worker:
    """One thread: reads what the BE sent, parses the lane loads among it together (per parse
    key and target), then does the file operations in arrival order, writing everything for
    one WAL file as one record with one fdatasync, and answers. The loads that arrive while
    this runs make up the next round. (A second thread that fsynced while the next round
    parsed measured no faster and cost a third more CPU per load in thread hand-offs.)"""

    def __init__(self, sock: socket.socket) -> None:
        from galene.be.wal import WalWriter

        self._WalWriter = WalWriter
        self.sock = sock
        self.writers: dict[str, WalWriter] = {}
        self.keys: dict[int, tuple] = {}  # key id -> (table, opts, max_error_rows)

    def writer(self, final: str, spare: bool = False):
        from galene.be.wal import SPARE_SUFFIX

        w = self.writers.get(final)
        if w is None:
            path = Path(final)
            # A spare created by an earlier worker that died keeps its spare name until written.
            spare = spare or (not path.exists() and path.with_name(path.name + SPARE_SUFFIX).exists())
            w = self.writers[final] = self._WalWriter(path, spare=spare)
        return w

    def serve(self) -> None:
        buf = bytearray()
        busy = False
        try:
            while True:
                requests, buf, eof = _read_frames(self.sock, buf, linger=busy)
                busy = len(requests) >= LINGER_BUSY_REQUESTS
                replies = self.handle(requests)
                if replies:
                    payload = pickle.dumps(replies, protocol=pickle.HIGHEST_PROTOCOL)
                    self.sock.sendall(_LEN.pack(len(payload)) + payload)
                if eof:
                    return
        finally:
            for w in self.writers.values():
                w.close()

    def handle(self, requests: list[tuple]) -> list[tuple]:
        """Answers (and notices) for the requests read together."""
        replies: list[tuple] = []
        lanes: dict[tuple, list[tuple[int, bytes]]] = {}
        file_ops: list[tuple] = []
        for req_id, op, args in requests:
            try:
                if op == "load":  # (key id, WAL path or "", group label, body[, echo])
                    key_id, wal_path, label, body, *echo = args
                    lanes.setdefault((key_id, wal_path, label, bool(echo and echo[0])), []).append(
                        (req_id, body)
                    )
                elif op == "key":
                    self.keys[args[0]] = args[1:]
                    while len(self.keys) > WORKER_KEYS:
                        del self.keys[next(iter(self.keys))]
                elif op == "ping":
                    replies.append((req_id, True, os.getpid()))
                elif op == "dump":  # the worker's threads, for the BE's /api/_tasks
                    replies.append((req_id, True, _threads_text()))
                elif op == "debug_point":  # (name, seconds to park, or 0 to remove)
                    _set_debug_point(*args)
                    replies.append((req_id, True, None))
                elif op == "canary":
                    if lanes:
                        file_ops.extend(self._parse_lanes(lanes, replies))
                        lanes = {}
                    file_ops.append((req_id, op, *args))
                elif op in ("append", "prepare", "forget"):
                    if lanes:  # what came before this op reaches its file first
                        file_ops.extend(self._parse_lanes(lanes, replies))
                        lanes = {}
                    file_ops.append((req_id, op, *args))
                else:
                    raise ValueError(f"unknown ingest worker op {op!r}")
            except Exception as e:  # noqa: BLE001 - reported to the caller
                if req_id:
                    replies.append((req_id, False, error_message(e)))
        if lanes:
            file_ops.extend(self._parse_lanes(lanes, replies))
        replies.extend(self._run_file_ops(file_ops))
        return replies

    def _parse_lanes(self, lanes: dict[tuple, list[tuple[int, bytes]]], replies: list[tuple]) -> list[tuple]:
        """Parse each lane's loads together. Loads bound for a WAL file become one write
        (returned, answered once durable); memory loads are answered here, their rows sent
        ahead of their answers; with `echo` (a replicated group) the rows of a WAL write are
        sent too, once durable and ahead of the answers, so the BE can copy them to peers."""
        from galene.load.batch import parse_lane_loads

        writes: list[tuple] = []
        for (key_id, wal_path, label, echo), loads in lanes.items():
            key = self.keys.get(key_id)
            if key is None:
                replies.extend((r, False, f"[INTERNAL_ERROR]unknown parse key {key_id}") for r, _ in loads)
                continue
            table, opts, max_error_rows = key
            try:
                answers, rows = parse_lane_loads([b for _, b in loads], table, opts, max_error_rows)
            except Exception as e:  # noqa: BLE001 - every load of the lane learns it
                replies.extend((r, False, error_message(e)) for r, _ in loads)
                continue
            ids = [r for r, _ in loads]
            if wal_path and rows is not None:
                writes.append((0, "write", wal_path, label, rows, ids, answers, echo))
                continue
            if rows is not None:
                replies.append((0, True, ("rows", label, rows)))
            replies.extend((r, True, a) for r, a in zip(ids, answers, strict=True))
        return writes

    def _run_file_ops(self, ops: list[tuple]) -> list[tuple]:
        from galene.be.wal import Rows

        replies: list[tuple] = []
        i = 0
        while i < len(ops):
            req_id, op, final = ops[i][:3]
            if op in ("write", "append"):
                j = i
                while j < len(ops) and ops[j][1] in ("write", "append") and ops[j][2] == final:
                    j += 1
                run = ops[i:j]
                # (label, parts) of every write: a lane's rows are one part (no client label)
                items = [Rows(o[3], [(None, o[4])] if o[1] == "write" else o[4]) for o in run]
                _park("ingest_worker.wal_fsync")
                try:
                    grown = self.writer(final).write(items)
                    error = None
                except Exception as e:  # noqa: BLE001 - every waiter learns the failure
                    grown, error = 0, f"WAL append to {final} failed: {e}"
                if error is None and grown:
                    replies.append((0, True, ("wal_grew", final, grown)))
                for o in run:
                    if o[1] == "write":
                        ids, answers = o[5], o[6]
                        if error is not None:
                            replies.extend((r, False, error) for r in ids)
                        else:
                            if o[7]:  # echo: the durable rows, ahead of their loads' answers
                                replies.append((0, True, ("rows", o[3], o[4])))
                            replies.extend((r, True, a) for r, a in zip(ids, answers, strict=True))
                    elif error is None:
                        replies.append((o[0], True, None))
                    else:
                        replies.append((o[0], False, error))
                i = j
                continue
            try:
                if op == "canary":  # the FE's write canary: one small record, written and fdatasynced
                    _canary_write(final, ops[i][3])
                elif op == "prepare":
                    self.writer(final, ops[i][3]).prepare()
                elif op == "forget":
                    w = self.writers.pop(final, None)
                    if w is not None:
                        w.close()
                if req_id:
                    replies.append((req_id, True, None))
            except Exception as e:  # noqa: BLE001 - reported to the caller
                if req_id:
                    replies.append((req_id, False, error_message(e)))
            i += 1
        return replies


# --- canary, debug points and the thread dump (worker side) ------------------------------
def _canary_write(path: str, record: bytes) -> None:
    """The write canary's WAL stage: `record` written at the start of a file of its own and
    fdatasynced, through the same worker thread and disk as every group-commit WAL write."""
    _park("ingest_worker.wal_fsync")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, record, 0)
        os.fdatasync(fd)
    finally:
        os.close(fd)


# Doris-style debug points inside the worker: name -> time.monotonic() until which a thread
# reaching `_park(name)` waits (the BE sets them with POST /api/debug_point/add/{name}).
_DEBUG_POINTS: dict[str, float] = {}


def _set_debug_point(name: str, seconds: float) -> None:
    if seconds > 0:
        _DEBUG_POINTS[name] = time.monotonic() + seconds
    else:
        _DEBUG_POINTS.pop(name, None)


def _park(name: str) -> None:
    until = _DEBUG_POINTS.get(name)
    while until is not None and time.monotonic() < until:
        time.sleep(min(0.05, until - time.monotonic()))
        until = _DEBUG_POINTS.get(name)


def _threads_text() -> str:
    frames = sys._current_frames()
    out = [f"== ingest worker pid {os.getpid()}: {len(frames)} threads =="]
    for thread in threading.enumerate():
        frame = frames.get(thread.ident) if thread.ident is not None else None
        out.append(f"Thread {thread.name} (ident {thread.ident}):")
        if frame is not None:
            out.extend(line.rstrip("\n") for line in traceback.format_stack(frame))
        out.append("")
    return "\n".join(out) + "\n"


# Under load (the previous round held at least LINGER_BUSY_REQUESTS requests) a round waits
# up to LINGER_S for LINGER_FILL requests before it starts: fewer, larger parses and fsyncs.
# Measured with 64 clients: 4-5% more loads/s and a fifth less worker CPU per load; a quiet
# worker (a load now and then) never waits.
LINGER_S = 0.001
LINGER_BUSY_REQUESTS = 8
LINGER_FILL = 32


def _read_frames(
    sock: socket.socket, buf: bytearray, linger: bool = False
) -> tuple[list[tuple], bytearray, bool]:
    """Block for at least one frame, then take every frame already waiting (with `linger`,
    waiting up to LINGER_S for LINGER_FILL requests)."""
    requests: list[tuple] = []
    eof = False
    while True:
        while len(buf) >= _LEN.size:
            (n,) = _LEN.unpack_from(buf, 0)
            if len(buf) < _LEN.size + n:
                break
            requests.extend(pickle.loads(bytes(buf[_LEN.size : _LEN.size + n])))
            del buf[: _LEN.size + n]
        if eof:
            return requests, buf, True
        wait = LINGER_S if linger and len(requests) < LINGER_FILL else 0
        if requests and not select.select([sock], [], [], wait)[0]:
            return requests, buf, False
        # 64 KB: a bigger buffer is mmap'ed by malloc, and the kernel zeroes its pages on
        # every call (measured: a tenth of the worker's CPU with 1 MB).
        chunk = sock.recv(1 << 16)
        if not chunk:
            eof = True
        buf += chunk


def _serve_socket(sock: socket.socket) -> None:
    """Serve one BE until its socket closes (the worker process's main, or a BE thread)."""
    worker = _Worker(sock)
    try:
        worker.serve()
    except (ConnectionError, BrokenPipeError):
        pass
    finally:
        sock.close()


def _die_with_parent(parent_pid: int) -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the socket's EOF still ends the worker
        pass
    if os.getppid() != parent_pid:  # the BE died before the prctl took effect
        os._exit(0)


def main(argv: list[str]) -> None:
    fd, parent_pid = int(argv[0]), int(argv[1])
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the BE's to handle
    disable_pyarrow_signal_handlers()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s ingest-worker %(levelname)s %(message)s")
    _serve_socket(socket.socket(fileno=fd))


if __name__ == "__main__":
    main(sys.argv[1:])
