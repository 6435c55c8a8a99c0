"""A query result flowing from an engine reader thread to the event loop, a few batches at a time.

The engine's rows are read by one worker thread (`pump`), which hands each Arrow batch to the
event loop through a queue of at most `max_batches` batches: when the client reads slowly the
queue fills and the reader thread waits for a free slot, so a slow client stalls the engine
reader instead of growing the FE's memory. `in_flight_peak` counts the batches handed over
and not yet taken, so a test can see the bound hold.

The consumer (the MySQL endpoint) takes the batches with `batches()` and must `aclose()` the
stream when done: closing a stream that has not ended (an error while writing, KILL QUERY,
the client gone, `query_timeout`) cancels the engine's job and lets the reader thread end,
which drops its temp views and job tag.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator

import pyarrow as pa

log = logging.getLogger(__name__)

RESULT_QUEUE_BATCHES = 4  # batches between the engine reader and the client writer, at most


class ResultStream:
    """The batches of one query result; the head (`columns`) is read by `start()`."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        deadline: float,
        timeout_error: Callable[[], Exception],
        cancel: Callable[[], None],
        max_batches: int = RESULT_QUEUE_BATCHES,
    ):
        self._loop = loop
        self._queue: asyncio.Queue = asyncio.Queue()  # at most max_batches items: see _slots
        self._slots = threading.Semaphore(max_batches)
        self._max_batches = max_batches
        self._closed = threading.Event()  # the consumer is gone: the reader stops
        self._lock = threading.Lock()
        self._in_flight = 0
        self.in_flight_peak = 0
        self.deadline = deadline  # loop time past which the query has timed out
        self._timeout_error = timeout_error
        self._cancel = cancel  # blocking: cancels the engine's job
        self._ended = False
        self.head = None  # the first item: the engine's ResultHead

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    # --- the reader thread ------------------------------------------------------------------
    def put(self, item) -> bool:
        """Hand one item over, waiting for a free slot; False once the consumer is gone."""
        self._slots.acquire()
        if self._closed.is_set():
            return False
        with self._lock:
            self._in_flight += 1
            self.in_flight_peak = max(self.in_flight_peak, self._in_flight)
        return self._post(("item", item))

    def finish(self, error: BaseException | None) -> None:
        """The end of the stream (error: how it failed). Needs no slot."""
        self._post(("end", error))

    def _post(self, entry) -> bool:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, entry)
            return True
        except RuntimeError:  # the event loop is closed: the FE is stopping
            self._closed.set()
            return False

    # --- the event loop ---------------------------------------------------------------------
    async def _next(self):
        """The next item, None at the end; raises the engine's error, or the timeout's."""
        if self._ended:
            return None
        try:
            # Not wait_for: on Python 3.11 it can swallow a cancel (KILL QUERY) that comes as
            # the item does.
            if self._loop.time() >= self.deadline:  # a queued item is taken without waiting
                raise TimeoutError
            async with asyncio.timeout_at(self.deadline):
                kind, value = await self._queue.get()
        except TimeoutError:
            await self.aclose()
            raise self._timeout_error() from None
        if kind == "end":
            self._ended = True
            if value is not None:
                raise value
            return None
        with self._lock:
            self._in_flight -= 1
        self._slots.release()
        return value

    async def start(self):
        """Wait for the head (the engine has read the first batch or the end); returns it."""
        try:
            self.head = await self._next()
        except BaseException:
            await self.aclose()
            raise
        if self.head is None:
            raise RuntimeError("the engine reader ended without a result head")
        return self.head

    async def batches(self) -> AsyncIterator[pa.RecordBatch]:
        while (batch := await self._next()) is not None:
            yield batch

    async def read_all(self) -> pa.Table:
        """The whole result as one table: for a small internal result, or a cursor's."""
        try:
            batches = [batch async for batch in self.batches()]
        finally:
            await self.aclose()
        return pa.Table.from_batches(batches, schema=self.head.schema)

    async def aclose(self) -> None:
        """Release the stream; before its end, cancel the engine's job and stop the reader."""
        if self._closed.is_set():
            return
        self._closed.set()
        for _ in range(self._max_batches):  # wakes a reader waiting for a slot
            self._slots.release()
        while not self._queue.empty():  # the batches nobody will write
            self._queue.get_nowait()
        if not self._ended:
            await asyncio.to_thread(self._cancel)


def pump(stream: ResultStream, items: Iterator) -> None:
    """Run in the reader thread: hand `items` (the engine's generator) to `stream` until it
    ends or the consumer is gone; the generator is closed here, in its own thread."""
    error: BaseException | None = None
    if stream.closed:  # closed while waiting for a reader thread: the query never starts
        items = iter(())
    try:
        for item in items:
            if not stream.put(item):
                break
    except BaseException as e:  # noqa: BLE001 - every failure is the stream's error
        error = e
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            try:
                close()
            except Exception:
                log.debug("closing a result reader failed", exc_info=True)
    stream.finish(error)
