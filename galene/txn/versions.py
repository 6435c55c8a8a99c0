"""Versions: a commit publishes its rowsets at the table's next version, in one journal op;
a load's begin is refused where a tablet has too many versions (Doris' max_tablet_version_num).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

import msgspec

from galene.catalog import ops
from galene.catalog.model import Rowset, Table, Txn
from galene.common.errors import LoadError


def commit_op(
    txn: Txn,
    table: Table,
    rowsets: list[Rowset],
    *,
    num_rows: int,
    load_bytes: int,
    sub_labels=(),
    replace_partitions: list[int] | None = None,
    job_progress: ops.JobProgress | None = None,
) -> ops.CommitTxn:
    """The commit op: the rowsets become visible at the table's next version atomically."""
    version = table.visible_version + 1
    stamped = [msgspec.structs.replace(r, version=version, txn_id=txn.id, files=list(r.files)) for r in rowsets]
    return ops.CommitTxn(
        txn_id=txn.id,
        version=version,
        rowsets=stamped,
        time=time.time(),
        num_rows=num_rows,
        load_bytes=load_bytes,
        sub_labels=list(sub_labels),
        replace_partitions=list(replace_partitions or []),
        job_progress=job_progress,
    )


def check_version_count(table: Table, limit: int, on_many_versions: Callable[[int], None] | None) -> None:
    """Raise Doris' E-235 where a tablet of `table` has more than `limit` rowsets (0: no limit);
    tell `on_many_versions` of a table past half the limit, so compaction need not wait."""
    if limit <= 0:
        return
    if len(table.rowsets) > limit // 2 and on_many_versions is not None:
        on_many_versions(table.id)
    # A tablet cannot have more rowsets than its table: most loads stop at the length check.
    if len(table.rowsets) <= limit:
        return
    if str(table.properties.get("disable_auto_compaction", "")).lower() == "true":
        return  # as Doris: no version limit where compaction is off
    counts = Counter(r.tablet_id for r in table.rowsets)
    tablet, n = counts.most_common(1)[0]
    if n > limit:
        raise LoadError(
            f"[E-235]failed to init rowset builder. version count: {n}, exceed limit: {limit}, "
            f"tablet: {tablet}. Please reduce the frequency of loading data or adjust the "
            "max_tablet_version_num or time_series_max_tablet_version_num in be.conf to a larger value."
        )
