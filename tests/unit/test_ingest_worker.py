"""The BE's ingest worker, driven through its real socket protocol: small loads parsed
together yet answered each with its own counts and max_filter_ratio verdict; WAL loads
answered only once durable, their rows in the WAL file; memory loads' rows sent ahead of
their answers; a worker that dies fails what was in flight and the next request starts a new
one. Both modes run the same code: threads of this process, and a child process."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from galene.be.ingest_worker import IngestWorker, IngestWorkerError, RemoteWalWriter
from galene.be.wal import read_wal, wal_rows
from galene.catalog.model import Column, Partition, Table
from galene.common.types import parse_type
from galene.load.batch import batch_key, parse_lane_loads
from galene.load.options import LoadOptions
from galene.load.verdict import TOO_MANY_FILTERED

LABEL = "group_commit_0123456789abcdef_0123456789abcdef"


def _table() -> Table:
    cols = [
        Column(name="k", type=parse_type("int"), nullable=False),
        Column(name="v", type=parse_type("varchar(8)")),
    ]
    return Table(
        id=20,
        db_id=10,
        name="t",
        columns=cols,
        keys_type="DUP_KEYS",
        key_columns=["k"],
        partitions=[Partition(id=30, name="t", tablet_ids=[40])],
    )


def _body(start: int, n: int) -> bytes:
    return "".join(f"{i},v{i}\n" for i in range(start, start + n)).encode()


def _opts(**headers: str) -> LoadOptions:
    return LoadOptions.from_headers({"column_separator": ",", **headers})


# --- the parse step, alone ----------------------------------------------------------------------


def test_clean_batch_is_one_parse_and_each_load_gets_its_line_count():
    bodies = [_body(0, 3), _body(3, 1), _body(4, 5)]
    answers, rows = parse_lane_loads(bodies, _table(), _opts(), 50)
    assert answers == [(None, 3, 0, 0, 3, None), (None, 1, 0, 0, 1, None), (None, 5, 0, 0, 5, None)]
    assert rows.column("k").to_pylist() == list(range(9))


def test_a_load_with_bad_rows_is_judged_alone_and_the_others_still_load():
    good, bad = _body(0, 4), b"10,ok\nx,bad\n12,ok\n13,longer-than-varchar8\n"
    table = _table()
    # strict mode, default ratio 0: the bad load fails whole, with its own counts and errors
    answers, rows = parse_lane_loads([good, bad, good], table, _opts(strict_mode="true"), 50)
    assert answers[0] == answers[2] == (None, 4, 0, 0, 4, None)
    status, total, filtered, unselected, loaded, errors = answers[1]
    assert (status, total, filtered, unselected, loaded) == (TOO_MANY_FILTERED, 4, 2, 0, 0)
    assert errors and any("x,bad" in e.raw for e in errors)
    assert rows.column("k").to_pylist() == [0, 1, 2, 3, 0, 1, 2, 3]
    # with room for filtered rows it passes and loads what converted
    answers, rows = parse_lane_loads([bad], table, _opts(strict_mode="true", max_filter_ratio="0.5"), 50)
    assert answers[0][:5] == (None, 4, 2, 0, 2)
    assert rows.column("k").to_pylist() == [10, 12]


def test_the_filter_ratio_is_part_of_the_batch_key():
    table = _table()
    body = _body(0, 2)
    assert batch_key(table, _opts(), body) != batch_key(table, _opts(max_filter_ratio="0.5"), body)
    assert batch_key(table, _opts(), body) == batch_key(table, _opts(), _body(5, 3))


# --- the worker, through its socket -------------------------------------------------------------


@pytest.fixture(params=[True, False], ids=["thread", "process"])
def in_process(request):
    return request.param


def test_wal_loads_are_answered_once_durable_and_memory_rows_come_ahead(tmp_path, in_process):
    async def scenario():
        worker = IngestWorker(in_process=in_process)
        await worker.start()
        try:
            table, opts = _table(), _opts()
            path = tmp_path / "wal" / "10" / "20" / f"1_{LABEL}"
            wal = RemoteWalWriter(worker, path, spare=True)
            await wal.create()
            assert wal.path.exists() and not path.exists()  # a spare until its first write
            key_id = worker.parse_key(batch_key(table, opts, b"0,a\n"), table, opts, 50)
            bodies = [_body(i * 10, 3) for i in range(20)]
            answers = await asyncio.gather(
                *(worker.request("load", key_id, str(path), LABEL, b) for b in bodies)
            )
            assert answers == [(None, 3, 0, 0, 3, None)] * 20
            # Durable before answered: the rows are in the file (renamed from its spare name).
            assert path.exists() and not wal.path.with_name(path.name + ".spare").exists()
            assert wal.size == read_wal(path).valid_bytes  # the worker reported what it wrote
            written = sorted(k for _, t in wal_rows(path) for k in t.column("k").to_pylist())
            assert written == sorted(i * 10 + j for i in range(20) for j in range(3))

            seen: list[tuple[str, int]] = []
            worker.on_rows = lambda label, rows: seen.append((label, rows.num_rows))
            memory = await asyncio.gather(
                *(worker.request("load", key_id, "", "group_commit_mem", _body(i, 2)) for i in range(5))
            )
            assert memory == [(None, 2, 0, 0, 2, None)] * 5
            assert sum(n for label, n in seen if label == "group_commit_mem") == 10

            # A parse key the worker does not know fails only the loads that use it.
            with pytest.raises(IngestWorkerError, match="unknown parse key"):
                await worker.request("load", 999_999, "", "group_commit_mem", _body(0, 1))
            wal.delete()
            assert not path.exists()
        finally:
            await worker.stop()

    asyncio.run(scenario())


def test_a_dead_worker_fails_what_was_in_flight_and_is_started_again(tmp_path):
    async def scenario():
        worker = IngestWorker(in_process=False)
        await worker.start()
        try:
            first_pid = worker.pid
            table, opts = _table(), _opts()
            key_id = worker.parse_key(batch_key(table, opts, b"0,a\n"), table, opts, 50)
            assert await worker.request("load", key_id, "", "group_commit_x", _body(0, 1)) == (
                None,
                1,
                0,
                0,
                1,
                None,
            )
            os.kill(first_pid, signal.SIGKILL)
            pending = worker.request("ping")
            with pytest.raises(IngestWorkerError):
                await asyncio.wait_for(pending, 30)
            await worker.ensure_started()
            assert worker.pid != first_pid
            # Parse keys belong to the worker that learned them: the BE defines them again.
            key_id = worker.parse_key(batch_key(table, opts, b"0,a\n"), table, opts, 50)
            assert (await worker.request("load", key_id, "", "group_commit_x", _body(0, 2)))[4] == 2
        finally:
            await worker.stop()

    asyncio.run(scenario())
