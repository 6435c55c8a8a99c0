"""What an engine failure of a query means, and the Doris-style message a client gets for it.

An engine error's text is Spark's: its message, then the analyzed plan (an AnalysisException) or
the Java stack and its causes (a Py4JJavaError). A MySQL client gets one short line of it as the
Doris detail message (`errCode = 2, detailMessage = …`); the whole text goes to the FE log.

`may_pass_without_broadcast` tells the failures that a plan without broadcast joins may not
have: the driver ran out of memory (building a broadcast's hash table, or any OutOfMemoryError
in the driver JVM, which in local mode is also the executor), or a broadcast was refused (too
large, timed out). Spark chooses a broadcast from a size estimate (for a table, its Parquet
files' bytes), which data that compresses well undercounts by orders of magnitude.
"""

from __future__ import annotations

import re

from galene.common.errors import GaleneError

# Substrings of the text (message and causes) of failures a plan without broadcasts may avoid.
_BROADCAST_OR_MEMORY = (
    "OutOfMemoryError",  # java.lang.OutOfMemoryError, SparkOutOfMemoryError
    "Not enough memory to build and broadcast",
    "UNABLE_TO_ACQUIRE_MEMORY",
    "Cannot broadcast the table",  # over 8 GB or 512M rows
    "Could not execute broadcast in",  # spark.sql.broadcastTimeout
)
_MEMORY = ("OutOfMemoryError", "Not enough memory", "UNABLE_TO_ACQUIRE_MEMORY", "Resources exhausted")

MESSAGE_MAX = 500  # characters of the engine's message a client gets


def full_text(e: BaseException) -> str:
    """The failure's whole text: message, plan, Java stack, causes (for the log and for
    classifying). Never raises: a captured JVM exception's str() needs the JVM it came from."""
    parts = []
    seen = set()
    cause: BaseException | None = e
    while cause is not None and id(cause) not in seen and len(parts) < 8:
        seen.add(id(cause))
        try:
            parts.append(str(cause))
        except Exception:  # noqa: BLE001 - the JVM is gone; its description may still be kept
            parts.append(str(getattr(cause, "_desc", None) or type(cause).__name__))
        cause = getattr(cause, "_cause", None) or cause.__cause__
    return "\n".join(parts)


def may_pass_without_broadcast(e: BaseException) -> bool:
    """Whether `e` is a memory or broadcast failure that the same query planned without
    broadcast joins may not meet."""
    if isinstance(e, GaleneError):
        return False
    text = full_text(e)
    return any(marker in text for marker in _BROADCAST_OR_MEMORY)


def short_message(e: BaseException) -> str:
    """The engine's message in one line: no plan, no Java stack, no Java class name."""
    lines = [line.strip() for line in full_text(e).splitlines() if line.strip()]
    if not lines:
        return type(e).__name__
    line = lines[0]
    if line.startswith("An error occurred while calling"):  # py4j: the Java exception follows
        thrown = next((ln for ln in lines[1:] if ln.startswith(":")), None)
        line = thrown.lstrip(": ") if thrown is not None else line
    line = _without_class(line)
    if line.startswith("Job aborted due to stage failure") and "): " in line:
        # "… most recent failure: Lost task 0.0 in stage 5.0 (TID 9) (host executor driver): X: …"
        line = _without_class(line.split("): ", 1)[1])
    if len(line) > MESSAGE_MAX:
        line = line[: MESSAGE_MAX - 1] + "…"
    return line


_PYTHON_WORKER = "exception was thrown from the Python worker"
_CAUSE = re.compile(r"^\s*([\w.$]*(?:Error|Exception))\s*:\s*(\S.*)$")


def python_worker_cause(e: BaseException) -> str | None:
    """`Name: message` of the exception a Python worker raised (Sail, PySpark workers: the
    engine's message is the worker's traceback, whose last `SomeError: message` line is the
    cause), or None for any other failure."""
    lines = [line for line in str(e).strip().splitlines() if line.strip()]
    if not lines or _PYTHON_WORKER not in lines[0]:
        return None
    causes = [m for m in (_CAUSE.match(line) for line in lines) if m]
    if not causes:
        return None
    name, text = causes[-1].group(1), causes[-1].group(2)
    return f"{name.rsplit('.', 1)[-1]}: {text[:MESSAGE_MAX]}"


def job_failure(e: BaseException) -> GaleneError:
    """The Doris error a statement gets when its engine write job failed (INSERT … SELECT, CTAS,
    UPDATE, DELETE, a materialized view's refresh), naming the cause in one line: a Python
    worker's own exception, else the engine's exception and its short message."""
    if isinstance(e, GaleneError):
        return e
    cause = python_worker_cause(e) or f"{type(e).__name__}: {short_message(e)}"
    return GaleneError(f"[INTERNAL_ERROR]the engine job failed: {cause}")


def _without_class(line: str) -> str:
    """`org.apache.spark.SparkException: Not enough memory…` -> `Not enough memory…`."""
    name, sep, rest = line.partition(": ")
    if sep and "." in name and " " not in name and name.endswith(("Exception", "Error")):
        return rest
    return line


def _first_sentence(text: str) -> str:
    # Spark's memory messages go on with advice about its own settings; the first sentence says
    # what happened.
    head, sep, _ = text.partition(". ")
    return head + "." if sep else text


def query_failure(
    e: BaseException, engine: str, *, retried: bool = False, driver_memory: str | None = None
) -> GaleneError:
    """The Doris error a client gets for query failure `e` on `engine` ("Spark", "Sail").
    `retried`: the query had been run again without broadcast joins and failed again;
    `driver_memory`: the heap of a driver JVM the FE launched (named in a memory failure)."""
    if isinstance(e, GaleneError):
        return e
    text = full_text(e)
    if any(marker in text for marker in _MEMORY):
        where = (
            f"the {engine} driver (spark_driver_memory = {driver_memory})"
            if driver_memory
            else f"the query engine ({engine})"
        )
        again = ", also when run again without broadcast joins" if retried else ""
        return GaleneError(
            f"[MEM_LIMIT_EXCEEDED]the query ran out of memory in {where}{again}: {_first_sentence(short_message(e))}"
        )
    message = short_message(e)
    if "NUMERIC_VALUE_OUT_OF_RANGE" in text and "Decimal(38, 0)" in text:
        # The one known way a stored value cannot be read (docs/ARCHITECTURE.md, LARGEINT).
        message += (
            " (a LARGEINT of 39 digits, |v| >= 10^38: Apache Spark reads LARGEINT as DECIMAL(38, 0);"
            " the Sail engine reads its whole range)"
        )
    if retried:
        message += " (the query was run again without broadcast joins)"
    return GaleneError(message)
