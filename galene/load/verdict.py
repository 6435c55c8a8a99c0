"""A load's verdict on its rejected rows: Doris' `max_filter_ratio` rule and its failure text.

A load fails as a whole when the rows it filtered (rejected by conversion or routing) are more
than `max_filter_ratio` of the rows it selected (read, less those `where` unselected). The same
verdict is given wherever a load's rows are judged: a stream load on the BE, small loads parsed
together by the ingest worker, group commit.
"""

from __future__ import annotations

TOO_MANY_FILTERED = "[DATA_QUALITY_ERROR]too many filtered rows"


def filter_ratio_exceeded(total: int, filtered: int, unselected: int, ratio: float) -> bool:
    selected = total - unselected
    return selected > 0 and filtered / selected > ratio
