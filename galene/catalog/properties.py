"""Table properties that more than one part reads, each read one way: `replication_num`
(the FE's canary and the BE's WAL replication), `group_commit_interval_ms` and
`group_commit_data_bytes` (the FE's load routing and the BE's groups), with Doris' defaults.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from galene.catalog.model import Table

GROUP_COMMIT_DEFAULT_INTERVAL_MS = 10000
GROUP_COMMIT_DEFAULT_DATA_BYTES = 134217728

_ALLOC = re.compile(r"tag\.location\.[^:]+:\s*(\d+)")


def positive_int_property(props: Mapping[str, str], name: str, default: int) -> int:
    """The property as a positive integer; `default` when it is absent, not an integer or not
    positive."""
    try:
        value = int(str(props.get(name, default)).strip())
    except ValueError:
        return default
    return value if value > 0 else default


def group_commit_interval_ms(props: Mapping[str, str]) -> int:
    return positive_int_property(props, "group_commit_interval_ms", GROUP_COMMIT_DEFAULT_INTERVAL_MS)


def group_commit_data_bytes(props: Mapping[str, str]) -> int:
    return positive_int_property(props, "group_commit_data_bytes", GROUP_COMMIT_DEFAULT_DATA_BYTES)


def replication_num(table: Table | None) -> int:
    """The table's `replication_num` (else the sum of `replication_allocation`), at least 1."""
    if table is None:
        return 1
    props = table.properties
    raw = props.get("replication_num")
    try:
        if raw is not None:
            return max(1, int(str(raw).strip()))
        alloc = props.get("replication_allocation")
        if alloc:
            return max(1, sum(int(n) for n in _ALLOC.findall(str(alloc))))
    except ValueError:
        pass
    return 1
