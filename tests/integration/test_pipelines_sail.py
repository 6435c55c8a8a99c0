"""The pipeline tests of test_pipelines.py, on a Galene whose engine is Sail.

Every statement that moves data runs the same engine code (mapInArrow tasks) on Apache Spark
and on Sail; this module runs the whole pipeline suite again against one Sail-backed node (the
`galene` fixture below replaces the shared Spark-backed one for these tests).
"""

from __future__ import annotations

import pytest

from tests.integration.test_pipelines import (  # noqa: F401 - collected here again, on Sail
    src,
    test_a_failing_job_leaves_nothing_visible_and_no_files,
    test_ctas_with_and_without_keys_and_like,
    test_delete_on_aggregate_and_partitions_and_truncate,
    test_engine_and_be_place_every_hash_type_identically,
    test_insert_select_into_each_key_model_with_doris_ok_packet,
    test_killing_the_engine_mid_statement,
    test_labels_partitions_and_insert_rules,
    test_overwrite_table_and_partition_atomically,
    test_query_timeout_cancels_the_engine_job,
    test_show_load_lists_each_statement,
    test_update_and_delete,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def galene(galene_on_sail):
    return galene_on_sail
