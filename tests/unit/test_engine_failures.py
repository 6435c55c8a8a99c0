"""Engine failure texts → the one-line Doris message a client gets (galene/engine/failures.py).

The texts are the shapes Spark produces (taken from real failures of a 512 MB driver, see
tests/integration/test_broadcast_oom.py, which runs them for real)."""

from __future__ import annotations

from galene.common.errors import GaleneError
from galene.engine.failures import job_failure, may_pass_without_broadcast, query_failure, short_message

BROADCAST_OOM = (
    "An error occurred while calling o121.toArrowBatchRdd.\n"
    ": org.apache.spark.SparkException: Not enough memory to build and broadcast the table to all worker "
    "nodes. As a workaround, you can either disable broadcast by setting spark.sql.autoBroadcastJoinThreshold "
    "to -1 or increase the spark driver memory by setting spark.driver.memory to a higher value.\n"
    "\tat org.apache.spark.sql.errors.QueryExecutionErrors$.notEnoughMemoryToBuildAndBroadcastTableError"
    "(QueryExecutionErrors.scala:2180)\n"
    "Caused by: java.lang.OutOfMemoryError: Java heap space\n"
    "\tat org.apache.spark.sql.execution.joins.LongToUnsafeRowMap.grow(HashedRelation.scala:834)\n"
)
UNRESOLVED = (
    "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name `k` cannot be "
    "resolved. Did you mean one of the following? [`(k)`]. SQLSTATE: 42703; line 1 pos 69;\n"
    "'Sort ['k ASC NULLS FIRST], true\n+- Distinct\n   +- Project [k#2 AS (k)#6]\n"
)


def test_a_broadcast_out_of_memory_is_retryable_and_reads_as_memory_exceeded():
    e = RuntimeError(BROADCAST_OOM)
    assert may_pass_without_broadcast(e)
    assert short_message(e).startswith(
        "Not enough memory to build and broadcast the table to all worker nodes."
    )
    first = query_failure(e, "Spark", driver_memory="512m").mysql_text()
    assert first == (
        "errCode = 2, detailMessage = [MEM_LIMIT_EXCEEDED]the query ran out of memory in the Spark driver "
        "(spark_driver_memory = 512m): Not enough memory to build and broadcast the table to all worker nodes."
    )
    again = query_failure(e, "Spark", retried=True, driver_memory="512m").message
    assert "also when run again without broadcast joins" in again and "\n" not in again


def test_other_failures_keep_their_first_line_without_plan():
    e = RuntimeError(UNRESOLVED)
    assert not may_pass_without_broadcast(e)
    message = query_failure(e, "Spark").message
    assert message.startswith("[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column") and message.endswith("pos 69;")
    assert "Sort" not in message


def test_a_cause_chain_is_read_and_a_galene_error_passes_through():
    try:
        try:
            raise MemoryError("java.lang.OutOfMemoryError: Java heap space")
        except MemoryError as inner:
            raise RuntimeError("Job aborted due to stage failure") from inner
    except RuntimeError as e:
        assert may_pass_without_broadcast(e)
    dead = GaleneError("[CANCELLED]query engine (Spark) died during the query")
    assert not may_pass_without_broadcast(dead)
    assert query_failure(dead, "Spark") is dead


def test_a_failed_task_is_told_by_its_own_error():
    e = RuntimeError(
        "An error occurred while calling o88.toArrowBatchRdd.\n: org.apache.spark.SparkException: Job aborted due "
        "to stage failure: Task 0 in stage 5.0 failed 1 times, most recent failure: Lost task 0.0 in stage 5.0 "
        "(TID 9) (127.0.0.1 executor driver): org.apache.spark.SparkRuntimeException: [USER_RAISED_EXCEPTION] "
        "'(id < 0)' is not true! SQLSTATE: P0001\n\tat org.apache.spark.sql.errors.QueryExecutionErrors\n"
    )
    assert short_message(e) == "[USER_RAISED_EXCEPTION] '(id < 0)' is not true! SQLSTATE: P0001"


def test_a_long_message_is_cut():
    assert len(short_message(RuntimeError("x" * 5000))) == 500


def test_a_largeint_past_38_digits_on_spark_names_the_limit():
    text = (
        "[NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION]  170141183460469231731687303715884105727 cannot be "
        'represented as Decimal(38, 0). If necessary set "spark.sql.ansi.enabled" to "false" to bypass this '
        "error, and return NULL instead. SQLSTATE: 22003\n\tat org.apache.spark.sql.errors...\n"
    )
    message = query_failure(RuntimeError(text), "Spark").mysql_text()
    assert "cannot be represented as Decimal(38, 0)" in message
    assert "LARGEINT of 39 digits" in message and "Sail" in message
    assert "\tat " not in message


PYTHON_WORKER = (
    "An exception was thrown from the Python worker. Please see the stack trace below.\n"
    "Traceback (most recent call last):\n"
    '  File "/galene/engine/write.py", line 88, in convert\n'
    "    raise ObjectStoreError(msg)\n"
    "galene.load.objectstore.ObjectStoreError: [TIMEOUT]object store call stalled: read s3://b/k\n"
)


def test_a_failed_write_job_names_its_cause_in_one_line():
    """INSERT … SELECT, CTAS, UPDATE, DELETE (fe/pipelines.py): a Python worker's own exception,
    else the engine's exception and its short message, behind Doris' INTERNAL_ERROR."""
    worker = job_failure(RuntimeError(PYTHON_WORKER)).message
    assert worker == (
        "[INTERNAL_ERROR]the engine job failed: ObjectStoreError: [TIMEOUT]object store call stalled: read s3://b/k"
    )
    engine = job_failure(RuntimeError(UNRESOLVED)).message
    assert engine.startswith("[INTERNAL_ERROR]the engine job failed: RuntimeError: [UNRESOLVED_COLUMN")
    assert "\n" not in engine and "Sort" not in engine  # the plan stays in the log
    own = GaleneError("[TIMEOUT]insert timeout")
    assert job_failure(own) is own

