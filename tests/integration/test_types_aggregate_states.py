"""BITMAP_UNION and HLL_UNION on an AGGREGATE KEY table fed a million rows by twenty stream loads.

The loads build the states with Doris' load expressions (`b = to_bitmap(u)`, `h = hll_hash(u)`);
the reads merge them per key in the engine (galene/engine/scan.py: the sorted-distinct union of
the bitmaps' BIGINT lists, DataSketches' HLL union — vectorized engine aggregates, no Python per
row). `bitmap_union_count` must equal the exact distinct count computed here, `hll_union_agg`
must be within HLL's error bound (lg_k 12: relative standard error 1.6 %; the check allows 5 %,
three deviations), before and after a base compaction folds the twenty versions into one.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from tests.support.client import csv_body

pytestmark = pytest.mark.slow

LOADS = 20
ROWS_PER_LOAD = 50_000
KEYS = 10
USERS = 400_000
HLL_BOUND = 0.05


def _rows(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return rng.integers(0, KEYS, ROWS_PER_LOAD), rng.integers(0, USERS, ROWS_PER_LOAD)


def _check(galene, db: str, exact: dict[int, int], total: int) -> None:
    rows = galene.query(
        "SELECT k, bitmap_union_count(b), hll_union_agg(h), bitmap_count(bitmap_union(b)) FROM states GROUP BY k ORDER BY k", db
    )
    assert [int(r[0]) for r in rows] == sorted(exact)
    for k, bitmap_count, hll_count, single in rows:
        want = exact[int(k)]
        assert int(bitmap_count) == want == int(single), (k, bitmap_count, single, want)
        assert abs(int(hll_count) - want) <= HLL_BOUND * want, (k, hll_count, want)
    (overall,) = galene.query("SELECT bitmap_union_count(b), hll_union_agg(h) FROM states", db)
    assert int(overall[0]) == total
    assert abs(int(overall[1]) - total) <= HLL_BOUND * total, (overall, total)


def test_a_million_rows_in_twenty_loads_count_exactly_and_within_the_hll_bound(galene):
    db = "states_" + uuid.uuid4().hex[:6]
    galene.query(f"CREATE DATABASE {db}")
    galene.query(
        "CREATE TABLE states (k INT, b BITMAP BITMAP_UNION, h HLL HLL_UNION) AGGREGATE KEY(k) "
        'DISTRIBUTED BY HASH(k) BUCKETS 2 PROPERTIES ("disable_auto_compaction" = "true")',
        db,
    )
    rng = np.random.default_rng(21)
    seen: dict[int, set] = {k: set() for k in range(KEYS)}
    everyone: set[int] = set()
    for i in range(LOADS):
        keys, users = _rows(rng)
        for k in range(KEYS):
            seen[k].update(users[keys == k].tolist())
        everyone.update(users.tolist())
        reply = galene.stream_load(
            db, "states", csv_body(zip(keys.tolist(), users.tolist(), strict=True)),
            {"column_separator": ",", "columns": "k, u, b = to_bitmap(u), h = hll_hash(u)", "label": f"s{i}"},
        )  # fmt: skip
        assert reply["Status"] == "Success" and reply["NumberLoadedRows"] == ROWS_PER_LOAD, reply
    exact = {k: len(v) for k, v in seen.items()}
    _check(galene, db, exact, len(everyone))
    versions_before = galene.query("SHOW TABLETS FROM states", db)
    galene.query("ADMIN COMPACT TABLE states PARTITION states WHERE TYPE='BASE'", db)
    versions_after = galene.query("SHOW TABLETS FROM states", db)
    before = {r[0]: int(r[14]) for r in versions_before}
    assert all(int(r[14]) < before[r[0]] for r in versions_after), (versions_before, versions_after)
    _check(galene, db, exact, len(everyone))
