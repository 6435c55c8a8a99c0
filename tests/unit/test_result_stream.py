"""ResultStream: the bounded hand-over of a query's Arrow batches from the engine reader thread
to the event loop (galene/fe/result_stream.py). The reader here is a plain generator of batches
standing in for the engine's (`stream_query`), run by the real `pump` in a real thread."""

from __future__ import annotations

import asyncio
import threading

import pyarrow as pa
import pytest

from galene.common.errors import GaleneError
from galene.fe.result_stream import ResultStream, pump

BATCHES = 50
MAX = 3


class Reader:
    """A generator of `n` one-row batches after a head, counting what it has produced and
    noting when it was closed (in which thread)."""

    def __init__(self, n: int, fail_at: int | None = None):
        self.n, self.fail_at = n, fail_at
        self.produced = 0
        self.closed = threading.Event()

    def __iter__(self):
        try:
            yield "head"
            for i in range(self.n):
                if i == self.fail_at:
                    raise GaleneError("boom in the engine")
                self.produced += 1
                yield pa.record_batch([pa.array([i])], names=["i"])
        finally:
            self.closed.set()


def _stream(loop, deadline: float = 1e9, cancels: list | None = None) -> ResultStream:
    return ResultStream(
        loop,
        deadline=loop.time() + deadline,
        timeout_error=lambda: GaleneError("timed out"),
        cancel=lambda: cancels.append(1) if cancels is not None else None,
        max_batches=MAX,
    )


def _run(scenario):
    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_batches_in_flight_never_exceed_the_bound_and_all_arrive_in_order():
    async def scenario():
        loop = asyncio.get_running_loop()
        stream, reader = _stream(loop), Reader(BATCHES)
        loop.run_in_executor(None, pump, stream, iter(reader))
        assert await stream.start() == "head"
        got = []
        async for batch in stream.batches():
            got.append(batch.column(0)[0].as_py())
            # The reader is at most MAX batches (queued) plus the one it is handing over ahead.
            assert reader.produced - len(got) <= MAX + 1
            await asyncio.sleep(0.002)  # a slow client: the reader runs ahead as far as it may
        await stream.aclose()
        assert got == list(range(BATCHES))
        assert 1 <= stream.in_flight_peak <= MAX
        assert reader.closed.wait(10)

    _run(scenario)


def test_an_abandoned_stream_cancels_the_job_and_closes_the_reader():
    async def scenario():
        loop = asyncio.get_running_loop()
        cancels: list = []
        stream, reader = _stream(loop, cancels=cancels), Reader(BATCHES)
        loop.run_in_executor(None, pump, stream, iter(reader))
        await stream.start()
        async for _ in stream.batches():
            break
        await stream.aclose()
        assert cancels == [1]
        assert await asyncio.to_thread(reader.closed.wait, 10)  # the reader was not left waiting
        assert reader.produced < BATCHES

    _run(scenario)


def test_an_error_mid_stream_is_raised_after_the_batches_before_it():
    async def scenario():
        loop = asyncio.get_running_loop()
        stream, reader = _stream(loop), Reader(BATCHES, fail_at=7)
        loop.run_in_executor(None, pump, stream, iter(reader))
        await stream.start()
        got = []
        with pytest.raises(GaleneError, match="boom"):
            async for batch in stream.batches():
                got.append(batch.column(0)[0].as_py())
        assert got == list(range(7))
        await stream.aclose()

    _run(scenario)


def test_a_stream_past_its_deadline_raises_the_timeout_and_cancels():
    async def scenario():
        loop = asyncio.get_running_loop()
        cancels: list = []
        stream, reader = _stream(loop, deadline=-1, cancels=cancels), Reader(BATCHES)
        loop.run_in_executor(None, pump, stream, iter(reader))
        with pytest.raises(GaleneError, match="timed out"):
            await stream.start()
        assert cancels == [1]
        assert await asyncio.to_thread(reader.closed.wait, 10)

    _run(scenario)
