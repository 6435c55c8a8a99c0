"""The streaming tests of test_query_stream.py, on a Galene whose engine is Sail (Spark
Connect: the result arrives as `to_table_as_iterator`'s batches)."""

from __future__ import annotations

import pytest

from tests.integration.test_query_stream import (  # noqa: F401 - collected here again, on Sail
    big,
    test_a_large_result_arrives_whole_and_in_order,
    test_a_slow_reader_stalls_the_stream_and_loses_nothing,
    test_an_error_after_rows_were_sent_reaches_the_client,
    test_kill_query_ends_a_result_being_streamed,
    test_query_timeout_ends_a_result_read_too_slowly,
    test_the_binary_protocol_streams_a_prepared_statement,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def galene(galene_on_sail):
    return galene_on_sail
