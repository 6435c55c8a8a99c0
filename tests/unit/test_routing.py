"""Routing rows to partitions and tablets, the bucket hash contract, UNIQUE KEY in-load merge."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

from galene.catalog.model import DELETE_SIGN, Column, Partition, Table
from galene.common.types import parse_type
from galene.load.options import LoadOptions
from galene.load.parse import ParsedBatch, parse_body
from galene.load.routing import RANDOM_SLICE_ROWS, dedup_last_per_key, hash_array, hash_columns, route_rows


def col(name, type_text, **kw) -> Column:
    return Column(name=name, type=parse_type(type_text), **kw)


def batch_of(table: Table, body: bytes) -> ParsedBatch:
    return parse_body(body, table, LoadOptions(column_separator=b","))


def range_table() -> Table:
    return Table(
        id=2,
        db_id=1,
        name="events",
        columns=[col("d", "date"), col("k", "int"), col("v", "varchar(10)")],
        key_columns=["d", "k"],
        partition_type="RANGE",
        partition_columns=["d"],
        partitions=[
            Partition(id=10, name="p_old", range_lower=None, range_upper=["2020-01-01"], tablet_ids=[100]),
            Partition(
                id=11,
                name="p2020",
                range_lower=["2020-01-01"],
                range_upper=["2021-01-01"],
                tablet_ids=[110, 111],
            ),
            Partition(
                id=12, name="p2022", range_lower=["2022-01-01"], range_upper=["2023-01-01"], tablet_ids=[120]
            ),
        ],
        distribution_columns=["k"],
        buckets=2,
    )


def tablet_rows(routed, tablet_id):
    return routed.per_tablet[tablet_id][1].to_pylist()


def test_range_partitions_route_rows_and_filter_rows_without_partition():
    table = range_table()
    body = (
        b"2019-05-01,1,a\n2020-06-01,2,b\n2021-06-01,3,gap\n2022-01-01,4,c\n2023-01-01,5,edge\n\\N,6,null\n"
    )
    routed = route_rows(batch_of(table, body), table)
    assert routed.num_filtered_extra == 2  # 2021 falls in the gap; 2023-01-01 is an exclusive upper bound
    assert [e.raw.split()[1] for e in routed.errors_extra] == ["3", "5"]
    assert all(e.reason.startswith("no partition for this tuple") for e in routed.errors_extra)
    by_partition = {}
    for tablet_id, (partition_id, rows) in routed.per_tablet.items():
        by_partition.setdefault(partition_id, []).extend(rows.column("k").to_pylist())
        assert tablet_id in next(p.tablet_ids for p in table.partitions if p.id == partition_id)
    # NULL sorts below every value: it belongs to the partition that starts at MINVALUE.
    assert {p: sorted(ks) for p, ks in by_partition.items()} == {10: [1, 6], 11: [2], 12: [4]}


def test_range_partitions_on_strings_and_multiple_columns():
    table = Table(
        id=2,
        db_id=1,
        name="t",
        columns=[col("region", "varchar(10)"), col("n", "int")],
        partition_type="RANGE",
        partition_columns=["region", "n"],
        partitions=[
            Partition(id=1, name="a", range_lower=None, range_upper=["m", "10"], tablet_ids=[11]),
            Partition(id=2, name="b", range_lower=["m", "10"], range_upper=None, tablet_ids=[21]),
        ],
        distribution_columns=["n"],
    )
    routed = route_rows(batch_of(table, b"a,100\nm,9\nm,10\nz,0\n"), table)
    assert sorted(tablet_rows(routed, 11), key=str) == [{"region": "a", "n": 100}, {"region": "m", "n": 9}]
    assert sorted(tablet_rows(routed, 21), key=str) == [{"region": "m", "n": 10}, {"region": "z", "n": 0}]


def test_list_partitions():
    table = Table(
        id=2,
        db_id=1,
        name="t",
        columns=[col("city", "varchar(10)"), col("n", "int")],
        partition_type="LIST",
        partition_columns=["city"],
        partitions=[
            Partition(id=1, name="north", list_values=[["Oslo"], ["Bergen"]], tablet_ids=[11]),
            Partition(id=2, name="south", list_values=[["Rome"]], tablet_ids=[21]),
        ],
        distribution_columns=["n"],
    )
    routed = route_rows(batch_of(table, b"Oslo,1\nRome,2\nParis,3\nBergen,4\n"), table)
    assert [r["n"] for r in tablet_rows(routed, 11)] == [1, 4]
    assert [r["n"] for r in tablet_rows(routed, 21)] == [2]
    assert routed.num_filtered_extra == 1


def hash_table(buckets=8, dist=("k",), key_type="int") -> Table:
    return Table(
        id=2,
        db_id=1,
        name="t",
        columns=[col("k", key_type), col("s", "varchar(20)"), col("v", "int")],
        partitions=[Partition(id=5, name="t", tablet_ids=list(range(500, 500 + buckets)))],
        distribution_columns=list(dist),
        buckets=buckets,
    )


def tablet_of_each_key(routed, key="k"):
    return {k: tid for tid, (_, rows) in routed.per_tablet.items() for k in rows.column(key).to_pylist()}


def test_hash_routing_is_deterministic_across_loads():
    table = hash_table()
    first = route_rows(batch_of(table, b"".join(b"%d,s%d,1\n" % (i, i) for i in range(200))), table)
    # A later load with other rows around the same keys, in another order.
    body = b"".join(b"%d,x,2\n" % i for i in reversed(range(150, 400)))
    second = route_rows(batch_of(table, body), table)
    a, b = tablet_of_each_key(first), tablet_of_each_key(second)
    assert all(a[k] == b[k] for k in range(150, 200))
    assert len(set(a.values())) == 8  # 200 keys reach every bucket
    assert sum(r.num_rows for _, r in first.per_tablet.values()) == 200


def test_string_hash_is_independent_of_array_layout():
    values = ["", "a", "ab", "é", None, "x" * 300] * 3
    whole = hash_array(pa.array(values))
    sliced = hash_array(pa.array(["pad"] + values)[1:])
    chunked = hash_array(pa.chunked_array([values[:5], values[5:]]))
    large = hash_array(pa.array(values, pa.large_string()))
    assert (whole == sliced).all() and (whole == chunked).all() and (whole == large).all()
    assert len(set(whole[:6].tolist())) == 6


def test_bucket_hash_values_are_pinned():
    # The hash decides which tablet holds a key, so changing it breaks UNIQUE KEY merging of
    # existing tables. These values must never change.
    ints = hash_columns([pa.array([0, 1, -1, 2**40], pa.int64())])
    strings = hash_columns([pa.array(["", "doris", "galene"])])
    both = hash_columns([pa.array([1, 2], pa.int32()), pa.array(["a", "b"])])
    dates = hash_columns([pa.array([dt.date(2024, 1, 31)])])
    assert ints.tolist() == PINNED["ints"]
    assert strings.tolist() == PINNED["strings"]
    assert both.tolist() == PINNED["both"]
    assert dates.tolist() == PINNED["dates"]


PINNED = {
    "ints": [16294208416658607535, 10451216379200822465, 16490336266968443936, 2296115805719413641],
    "strings": [16294208416658607535, 13918124089765288251, 10146423220121540648],
    "both": [8410918003843613874, 2724129306958915046],
    "dates": [7628862969800325512],
}

M64 = 2**64 - 1


def reference_mix(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def reference_string_hash(text: str) -> int:
    data = text.encode()
    poly = sum(b * pow(0x100000001B3, i, 2**64) for i, b in enumerate(data)) & M64
    return reference_mix(poly ^ ((len(data) * 0xD6E8FEB86659FD93) & M64))


def test_bucket_hash_matches_its_written_definition():
    texts = ["", "doris", "galene", "é" * 50]
    assert hash_columns([pa.array(texts)]).tolist() == [reference_string_hash(t) for t in texts]
    ints = [0, 1, -1, 2**40]
    assert hash_columns([pa.array(ints, pa.int64())]).tolist() == [reference_mix(i & M64) for i in ints]


def test_hash_on_string_and_multiple_columns_routes_equal_keys_together():
    table = hash_table(buckets=4, dist=("s", "v"))
    body = b"1,aa,1\n2,bb,1\n3,aa,1\n4,aa,2\n5,bb,1\n"
    routed = route_rows(batch_of(table, body), table)
    tablet = tablet_of_each_key(routed)
    assert tablet[1] == tablet[3]  # ("aa", 1)
    assert tablet[2] == tablet[5]  # ("bb", 1)


def test_random_distribution_spreads_slices_round_robin():
    table = hash_table(buckets=3)
    table.distribution_type = "RANDOM"
    table.distribution_columns = []
    n = 2 * RANDOM_SLICE_ROWS + 10
    data = pa.table(
        {"k": np.arange(n, dtype=np.int32), "s": pa.nulls(n, pa.string()), "v": pa.nulls(n, pa.int32())}
    )
    routed = route_rows(ParsedBatch(data, n, 0), table, random_start=1)
    sizes = {tid: rows.num_rows for tid, (_, rows) in routed.per_tablet.items()}
    assert sizes == {501: RANDOM_SLICE_ROWS, 502: RANDOM_SLICE_ROWS, 500: 10}
    small = route_rows(ParsedBatch(data.slice(0, 5), 5, 0), table)
    assert len(small.per_tablet) == 1


def test_dedup_last_per_key_keeps_the_last_row_in_load_order():
    data = pa.table({"k": [1, 2, 1, 3, 2], "c": ["x", "y", "x", "z", "y"], "v": [10, 20, 30, 40, 50]})
    out = dedup_last_per_key(data, ["k", "c"])
    assert out.to_pylist() == [
        {"k": 1, "c": "x", "v": 30},
        {"k": 3, "c": "z", "v": 40},
        {"k": 2, "c": "y", "v": 50},
    ]
    assert dedup_last_per_key(data.slice(0, 2), ["k"]).num_rows == 2


def test_unique_key_table_merges_within_the_load_including_deletes():
    table = Table(
        id=2,
        db_id=1,
        name="u",
        keys_type="UNIQUE_KEYS",
        key_columns=["k"],
        columns=[
            col("k", "int", is_key=True),
            col("v", "varchar(5)"),
            col(DELETE_SIGN, "tinyint", hidden=True),
        ],
        partitions=[Partition(id=5, name="u", tablet_ids=[50, 51])],
        distribution_columns=["k"],
        buckets=2,
    )
    batch = parse_body(
        b"1,a,0\n2,b,0\n1,c,0\n2,d,1\n",
        table,
        LoadOptions(column_separator=b",", columns=["k", "v", DELETE_SIGN]),
    )
    routed = route_rows(batch, table)
    rows = sorted((r for _, t in routed.per_tablet.values() for r in t.to_pylist()), key=lambda r: r["k"])
    assert rows == [{"k": 1, "v": "c", DELETE_SIGN: 0}, {"k": 2, "v": "d", DELETE_SIGN: 1}]


@pytest.mark.parametrize(
    "key_type", ["bigint", "date", "datetime", "decimal(10,2)", "double", "largeint", "boolean"]
)
def test_hash_supports_key_types(key_type):
    values = {
        "bigint": b"5",
        "date": b"2024-01-01",
        "datetime": b"2024-01-01 10:00:00",
        "decimal(10,2)": b"1.5",
        "double": b"2.5",
        "largeint": b"123456789012345678901234567890",
        "boolean": b"true",
    }[key_type]
    table = hash_table(buckets=4, key_type=key_type)
    body = values + b",a,1\n" + values + b",b,2\n"
    routed = route_rows(batch_of(table, body), table)
    assert len(routed.per_tablet) == 1  # equal keys, one tablet


@pytest.mark.parametrize("buckets", [3, 40])
def test_many_and_few_tablets_split_the_same_way(buckets):
    # Few tablets are split with filters, many with a sort; both keep load order per tablet.
    table = hash_table(buckets=buckets)
    n = 5000
    keys = np.random.default_rng(3).permutation(n).astype(np.int32)
    data = pa.table({"k": keys, "s": pa.nulls(n, pa.string()), "v": np.arange(n, dtype=np.int32)})
    routed = route_rows(ParsedBatch(data, n, 0), table)
    expected_bucket = hash_columns([pa.array(keys)]) % np.uint64(buckets)
    assert sum(rows.num_rows for _, rows in routed.per_tablet.values()) == n
    for tablet_id, (partition_id, rows) in routed.per_tablet.items():
        assert partition_id == 5
        order = rows.column("v").to_numpy()
        assert (np.diff(order) > 0).all()
        assert (expected_bucket[order] == tablet_id - 500).all()


def test_partitions_header_loads_only_the_named_partitions():
    table = range_table()
    body = b"2019-05-01,1,a\n2020-06-01,2,b\n2022-03-01,4,c\n"
    routed = route_rows(batch_of(table, body), table, partitions=["p2020", "P2022"])
    loaded = sorted(r["k"] for _, (_, t) in routed.per_tablet.items() for r in t.to_pylist())
    assert loaded == [2, 4]
    assert routed.num_filtered == 1  # the 2019 row belongs to p_old, which was not named
    assert routed.errors[0].reason.startswith("no partition for this tuple")
    with pytest.raises(Exception, match="Unknown partition 'p1999' in table 'events'"):
        route_rows(batch_of(table, body), table, partitions=["p1999"])


def test_dedup_with_a_sequence_column_keeps_the_highest_sequence_then_the_last_row():
    data = pa.table(
        {
            "k": [1, 1, 1, 2, 2, 3, 3],
            "seq": [5, 9, 7, 1, 1, None, 0],
            "v": ["a", "b", "c", "d", "e", "f", "g"],
        }
    )
    out = dedup_last_per_key(data, ["k"], "seq")
    assert sorted(out.to_pylist(), key=lambda r: r["k"]) == [
        {"k": 1, "seq": 9, "v": "b"},  # highest sequence, though not the last row
        {"k": 2, "seq": 1, "v": "e"},  # a tie: the later row
        {"k": 3, "seq": 0, "v": "g"},  # NULL sorts below every value
    ]
