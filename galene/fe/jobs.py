"""Streaming insert jobs: `CREATE JOB … ON STREAMING DO INSERT INTO t SELECT … FROM S3(…)`.

Owns the job runner of the FE and the job statements' rules. A job's definition, status,
offset, statistics and task history are catalog state (`galene.catalog.model.StreamingJob`,
changed only by journal ops); this module only decides what to do next and logs it.

One loop per active job runs one task at a time. A task:

1. lists the source (`galene.load.objectstore`, deadline on the call) and takes the files
   whose names sort after the job's offset, in name order, up to `s3.max_batch_files` /
   `s3.max_batch_bytes`;
2. runs the job's INSERT over exactly those files as one engine job through the pipelines'
   write path (`galene.fe.pipelines.Pipelines.run`: the engine's tasks read the files through
   the `galene_s3` data source and write the tablets);
3. commits one transaction whose CommitTxn op carries the job's new offset and the batch's
   statistics (`ops.JobProgress`). The catalog refuses it unless the job is still RUNNING at
   the offset and offset generation the batch started from, so a batch is committed at most
   once and a restart — from any image and any journal tail — resumes exactly after the last
   committed batch.

A failed task is recorded (`FailJobTask`) and pauses the job automatically with an ErrorMsg
naming the cause; the loop then resumes it with backoff: for an endpoint that stalled or was
unreachable it probes the endpoint (short deadline) and resumes as soon as it answers; for
other failures (credentials, a malformed file) it retries after a growing delay. A job the
user paused is never resumed automatically. While idle, a job lists again every
`max_interval` seconds; after a task that found files it lists again at once.

Also here: the rows of the `jobs("type"="insert")` and `tasks("type"="insert")` table
functions, and the running tasks' stages for `/api/_tasks`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime

import msgspec
import pyarrow as pa
from sqlglot import exp

from galene.catalog import ops
from galene.catalog.model import JobStatistic, JobTask, StreamingJob
from galene.common.errors import AnalysisError, GaleneError
from galene.fe import insert as ins
from galene.fe.pipelines import Target
from galene.fe.table_functions import TableFunctionViews, s3_calls
from galene.load.objectstore import ObjectStore, ObjectStoreError, parse_source
from galene.net.deadline import with_deadline
from galene.sql.dialect import Galene, parse_one
from galene.sql.statements.dml import Insert
from galene.sql.statements.parse import parse_statement

log = logging.getLogger(__name__)

DEFAULT_MAX_INTERVAL_S = 10
DEFAULT_MAX_BATCH_FILES = 256
DEFAULT_MAX_BATCH_BYTES = 10 << 30
# Auto-resume: delays double from BACKOFF_FIRST_S up to a cap; an unreachable endpoint is
# probed every PROBE_INTERVAL_S (each probe with PROBE_DEADLINE_S) so that healing is seen fast.
BACKOFF_FIRST_S = 1.0
BACKOFF_CAP_TRANSIENT_S = 4.0
BACKOFF_CAP_S = 60.0
PROBE_INTERVAL_S = 1.0
PROBE_DEADLINE_S = 3.0
# A task's engine job and commit, at most (the reads inside have their own deadlines).
TASK_TIMEOUT_S = 3600
JOB_PROPERTIES = ("max_interval", "s3.max_batch_files", "s3.max_batch_bytes", "offset")


# --- statement rules ---------------------------------------------------------------------------
def offset_name(value: str) -> str:
    """An `offset` property: `{"fileName":"p/f.csv"}` (Doris) or a plain file name."""
    text = value.strip()
    if text.startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError:
            raise AnalysisError(f"Invalid offset: {value}") from None
        name = doc.get("fileName") if isinstance(doc, dict) else None
        if not isinstance(name, str):
            raise AnalysisError(f'Invalid offset: {value}; expected {{"fileName":"…"}}')
        return name
    return text


def check_properties(props: dict[str, str]) -> dict[str, str]:
    """Validate job properties; returns them normalized (offset as a plain name)."""
    out: dict[str, str] = {}
    for key, value in props.items():
        k = key.strip().lower()
        if k.startswith("session."):
            out[k] = value
            continue
        if k not in JOB_PROPERTIES:
            raise AnalysisError(f"Invalid properties: {key}; supported: {', '.join(JOB_PROPERTIES)}, session.*")
        if k == "offset":
            out[k] = offset_name(value)
            continue
        try:
            number = int(value)
        except ValueError:
            number = 0
        if number <= 0:
            raise AnalysisError(f"Invalid value of property {key}: {value} (a positive integer)")
        out[k] = str(number)
    return out


def _int_prop(job: StreamingJob, key: str, default: int) -> int:
    try:
        return max(1, int(job.properties.get(key, default)))
    except ValueError:
        return default


def _fmt(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if ts else ""


def statistic_json(s: JobStatistic) -> str:
    return json.dumps(
        {
            "scannedRows": s.scanned_rows,
            "loadBytes": s.load_bytes,
            "fileNumber": s.file_number,
            "fileSize": s.file_size,
            "filteredRows": s.filtered_rows,
        },
        separators=(",", ":"),
    )


def offset_json(name: str) -> str:
    return json.dumps({"fileName": name}, separators=(",", ":")) if name else ""


def masked_sql(sql: str) -> str:
    """A job's INSERT with its secret keys masked (as Doris shows ExecuteSql)."""
    try:
        tree = parse_one(sql)
    except Exception:  # noqa: BLE001 - shown as stored if it cannot be re-read
        return sql
    for eq in tree.find_all(exp.EQ):
        if isinstance(eq.this, exp.Literal) and "secret" in eq.this.name.lower():
            eq.set("expression", exp.Literal.string("*XXX"))
    return tree.sql(dialect=Galene)


def source_properties(insert: Insert) -> dict[str, str]:
    """The properties of the job's one S3(…) call."""
    return _source_call(insert)[1]


def _source_call(insert: Insert):
    calls = [c for c in s3_calls(insert.query) if c[0] == "s3"]
    if len(calls) != 1:
        raise AnalysisError("A streaming job's INSERT must read exactly one S3(…) table function")
    return calls[0]


# --- the runner --------------------------------------------------------------------------------
@dataclass
class RunningTask:
    job_id: int
    job_name: str
    task_id: int
    label: str
    offset_from: str
    create_time: float = field(default_factory=time.time)
    stage: str = "LISTING"
    stage_since: float = field(default_factory=time.monotonic)
    offset_to: str = ""

    def enter(self, stage: str) -> None:
        self.stage = stage
        self.stage_since = time.monotonic()


class _Ctx:
    """What the pipeline planner needs of a session: the job's database, user, variables."""

    def __init__(self, database: str, user: str, variables: dict):
        self.database = database
        self.user = user
        self.variables = variables
        self.connection_id = 0


class JobRunner:
    def __init__(self, fe):
        self.fe = fe
        self._loops: dict[int, asyncio.Task] = {}
        self._wakes: dict[int, asyncio.Event] = {}
        self.running: dict[int, RunningTask] = {}
        self._failures: dict[int, int] = {}  # consecutive failed tasks per job
        self._transient: dict[int, bool] = {}  # was the last failure an unreachable endpoint
        self.live_msg: dict[int, str] = {}  # runtime message while paused/waiting (not journaled)
        self._supervisor: asyncio.Task | None = None
        self._last_task_id = 0

    # --- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        self._abort_orphan_txns()
        self._supervisor = asyncio.create_task(self._supervise(), name="fe-streaming-jobs")

    async def stop(self) -> None:
        tasks = [t for t in (self._supervisor, *self._loops.values()) if t is not None]
        for t in tasks:
            t.cancel()
        for t in tasks:
            try:
                await asyncio.wait_for(t, 70)
            except BaseException:  # stopping: whatever they ended with
                log.debug("a streaming job loop ended while stopping", exc_info=True)

    def poke(self, job_id: int | None = None) -> None:
        """Something changed (a statement): reconcile now and wake idle loops."""
        for jid, ev in self._wakes.items():
            if job_id is None or jid == job_id:
                ev.set()
        if self._supervisor is not None:
            self._wakes.setdefault(-1, asyncio.Event()).set()

    def cancel(self, job_id: int) -> None:
        """PAUSE/DROP: stop the job's loop, which cancels its running task (the engine job is
        interrupted and the transaction aborted by the pipeline)."""
        loop = self._loops.pop(job_id, None)
        if loop is not None:
            loop.cancel()

    def _abort_orphan_txns(self) -> None:
        """PREPARE transactions of job tasks that died with a previous FE: their batches will
        be read again from the committed offset."""
        catalog = self.fe.catalog
        for txn in list(catalog.state.txns.values()):
            if txn.status == "PREPARE" and txn.label.startswith("streaming_job_"):
                try:
                    catalog.txns.abort_txn(txn.id, "FE restarted while the streaming task ran")
                except GaleneError:
                    log.warning("abort of orphan streaming txn %s failed", txn.id, exc_info=True)

    async def _supervise(self) -> None:
        wake = self._wakes.setdefault(-1, asyncio.Event())
        while True:
            try:
                self._reconcile()
            except Exception:
                log.exception("streaming job supervision failed")
            wake.clear()
            try:
                await asyncio.wait_for(wake.wait(), 1.0)
            except TimeoutError:
                pass

    def _reconcile(self) -> None:
        jobs = self.fe.state.jobs
        for job_id in list(self._loops):
            job = jobs.get(job_id)
            loop = self._loops[job_id]
            if loop.done():
                del self._loops[job_id]
                if not loop.cancelled() and loop.exception() is not None:
                    log.error("streaming job loop %s died", job_id, exc_info=loop.exception())
            elif job is None or (job.status == "PAUSED" and job.pause_reason == "MANUAL"):
                self.cancel(job_id)
        for job in list(jobs.values()):
            active = job.status in ("PENDING", "RUNNING") or (job.status == "PAUSED" and job.pause_reason == "AUTO")
            if active and job.id not in self._loops:
                self._loops[job.id] = asyncio.create_task(self._job_loop(job.id), name=f"streaming-job-{job.name}")
        for job_id in list(self._wakes):
            if job_id != -1 and job_id not in jobs:
                del self._wakes[job_id]
                self.live_msg.pop(job_id, None)
                self._failures.pop(job_id, None)

    # --- one job ------------------------------------------------------------------------
    async def _job_loop(self, job_id: int) -> None:
        wake = self._wakes.setdefault(job_id, asyncio.Event())
        while True:
            job = self.fe.state.jobs.get(job_id)
            if job is None:
                return
            if job.status == "PENDING":
                await asyncio.to_thread(self.fe.catalog.start_job, job_id)
                continue
            if job.status == "PAUSED":
                if job.pause_reason != "AUTO":
                    return
                await self._auto_resume(job)
                continue
            if job.status != "RUNNING":
                return
            found = await self._run_task(job)
            if found:
                continue  # more files may be waiting: list again at once
            job = self.fe.state.jobs.get(job_id)
            if job is None or job.status != "RUNNING":
                continue
            wake.clear()
            try:
                await asyncio.wait_for(wake.wait(), _int_prop(job, "max_interval", DEFAULT_MAX_INTERVAL_S))
            except TimeoutError:
                pass

    def _new_task_id(self) -> int:
        self._last_task_id = max(self._last_task_id + 1, int(time.time() * 1000))
        return self._last_task_id

    async def _run_task(self, job: StreamingJob) -> bool:
        """One task; True when it committed a batch. Failures pause the job (returns False)."""
        task_id = self._new_task_id()
        run = RunningTask(job.id, job.name, task_id, f"streaming_job_{job.id}_{task_id}", job.offset)
        self.running[job.id] = run
        generation, prev_offset = job.offset_generation, job.offset
        views = None
        try:
            stmt = parse_statement(job.execute_sql)
            if not isinstance(stmt, Insert) or stmt.query is None:
                raise AnalysisError("the job's statement is not an INSERT … SELECT")
            _, props, _ = _source_call(stmt)
            spec = parse_source(props)
            store = ObjectStore(spec)
            listed = await with_deadline(
                asyncio.to_thread(store.list), spec.listing_timeout + 5, f"listing {spec.uri}", peer=spec.endpoint_text
            )
            batch = _take_batch(
                [f for f in listed if f.name > prev_offset],
                _int_prop(job, "s3.max_batch_files", DEFAULT_MAX_BATCH_FILES),
                _int_prop(job, "s3.max_batch_bytes", DEFAULT_MAX_BATCH_BYTES),
            )
            if not batch:
                self.live_msg[job.id] = ""
                return False
            run.offset_to = batch[-1].name
            run.enter("PLANNING")
            db = self.fe.state.databases.get(job.db_id)
            if db is None:
                raise AnalysisError(f"the database of job {job.name} was dropped")
            session = {k[len("session.") :]: v for k, v in job.properties.items() if k.startswith("session.")}
            ctx = _Ctx(db.name, job.definer, session)
            pipelines = self.fe.executor.pipelines
            db_name, table = self.fe.executor.table_of(stmt.db, stmt.table, ctx)
            columns = ins.target_columns(table, stmt.columns)
            strict, ratio, timeout = pipelines._session_rules(ctx)
            views = TableFunctionViews(self.fe)
            await views.prepare(stmt.query, files=batch)
            run.enter("WAITING_ENGINE")
            await self.fe.wait_engine()
            await asyncio.to_thread(views.register)
            with views.resolving():
                spark_sql, table_views = pipelines.plan_query(stmt.query, ctx)
            stat_files = JobStatistic(file_number=len(batch), file_size=sum(f.size for f in batch))
            end_offset = listed[-1].name if listed else ""

            def progress(result) -> ops.JobProgress:
                now = time.time()
                stat = msgspec.structs.replace(
                    stat_files,
                    scanned_rows=result.num_total,
                    filtered_rows=result.num_filtered,
                    load_bytes=sum(r.data_size for r in result.rowsets),
                )
                task = JobTask(
                    task_id=task_id, label=run.label, status="SUCCESS", create_time=run.create_time,
                    start_time=run.create_time, finish_time=now, statistic=stat, offset_from=prev_offset,
                    offset_to=batch[-1].name, user=job.definer,
                )  # fmt: skip
                run.enter("COMMITTING")
                return ops.JobProgress(
                    job_id=job.id, generation=generation, prev_offset=prev_offset, offset=batch[-1].name,
                    end_offset=end_offset, statistic=stat, task=task,
                )  # fmt: skip

            target = Target(
                db_name=db_name,
                table=table,
                columns=columns,
                label=run.label,
                strict=strict,
                max_filter_ratio=ratio,
                timeout_s=min(timeout, TASK_TIMEOUT_S),
                user=job.definer,
                job_progress=progress,
            )
            run.enter("RUNNING_ENGINE_JOB")
            await pipelines.run(target, spark_sql, table_views)
            self._failures.pop(job.id, None)
            self.live_msg[job.id] = ""
            return True
        except asyncio.CancelledError:
            await asyncio.shield(asyncio.to_thread(self._record_cancel, job.id, run))
            raise
        except Exception as e:  # noqa: BLE001 - every failure pauses the job with its cause
            await asyncio.to_thread(self._record_failure, job.id, run, e)
            return False
        finally:
            self.running.pop(job.id, None)
            if views is not None:
                await asyncio.shield(asyncio.to_thread(views.drop))

    def _task_record(self, run: RunningTask, status: str, error: str) -> JobTask:
        return JobTask(
            task_id=run.task_id, label=run.label, status=status, error_msg=error[:2048], create_time=run.create_time,
            start_time=run.create_time, finish_time=time.time(), offset_from=run.offset_from, offset_to=run.offset_to,
        )  # fmt: skip

    def _record_cancel(self, job_id: int, run: RunningTask) -> None:
        job = self.fe.state.jobs.get(job_id)
        if job is None:
            return
        try:
            self.fe.catalog.fail_job_task(job_id, self._task_record(run, "CANCELED", "canceled"), job.error_msg, job.runtime_msg)
        except Exception:
            log.warning("recording the canceled task of job %s failed", job_id, exc_info=True)

    def _record_failure(self, job_id: int, run: RunningTask, e: BaseException) -> None:
        message, runtime, transient = describe_failure(e, run.stage)
        job = self.fe.state.jobs.get(job_id)
        if job is None:
            return
        if job.status != "RUNNING":
            # Paused or altered while the task ran: its refusal is not the job's failure.
            status, message, runtime = "CANCELED", f"canceled: {message}", job.runtime_msg
        else:
            status = "FAILED"
            self._failures[job_id] = self._failures.get(job_id, 0) + 1
            self._transient[job_id] = transient
            log.warning("streaming job %s: task %s failed in %s: %s", job.name, run.task_id, run.stage, message)
        try:
            self.fe.catalog.fail_job_task(job_id, self._task_record(run, status, message), message, runtime)
        except Exception:
            log.exception("recording the failed task of job %s failed", job_id)

    async def _auto_resume(self, job: StreamingJob) -> None:
        """Wait with backoff (probing an unreachable endpoint), then resume the job."""
        failures = max(1, self._failures.get(job.id, 1))
        transient = self._transient.get(job.id, True)
        # An endpoint that may heal is probed soon; a failure that repeats as long as nothing
        # changes (credentials, a malformed file) is retried ever more slowly.
        first, cap = (BACKOFF_FIRST_S, BACKOFF_CAP_TRANSIENT_S) if transient else (5.0, BACKOFF_CAP_S)
        delay = min(first * 2 ** (failures - 1), cap)
        self.live_msg[job.id] = f"{job.runtime_msg}; auto resume in {delay:g}s (attempt {failures})".lstrip("; ")
        await asyncio.sleep(delay)
        if transient:
            try:
                stmt = parse_statement(job.execute_sql)
                store = ObjectStore(parse_source(_source_call(stmt)[1]))
            except Exception:  # noqa: BLE001 - the task itself will report it
                store = None
            while store is not None:
                try:
                    await with_deadline(asyncio.to_thread(store.probe), PROBE_DEADLINE_S + 1, "probe")
                    break
                except (ObjectStoreError, TimeoutError) as e:
                    if isinstance(e, ObjectStoreError) and not e.transient:
                        break  # it answers (with an error the task will report)
                    self.live_msg[job.id] = f"{job.runtime_msg}; endpoint still unreachable, probing every {PROBE_INTERVAL_S:g}s"
                    current = self.fe.state.jobs.get(job.id)
                    if current is None or current.status != "PAUSED" or current.pause_reason != "AUTO":
                        return
                    await asyncio.sleep(PROBE_INTERVAL_S)
        self.live_msg[job.id] = ""
        await asyncio.to_thread(
            self.fe.catalog.auto_resume_job, job.id, f"resumed automatically after: {job.runtime_msg}"[:1024]
        )

    # --- operator views -----------------------------------------------------------------
    def runtime_msg(self, job: StreamingJob) -> str:
        run = self.running.get(job.id)
        if run is not None:
            text = f"task {run.task_id}: {run.stage} for {time.monotonic() - run.stage_since:.1f}s"
            return f"{text}; {job.runtime_msg}" if job.runtime_msg else text
        return self.live_msg.get(job.id) or job.runtime_msg

    def describe_running(self) -> str:
        """/api/_tasks: every running job task's stage and how long it has waited in it."""
        lines = ["", f"=== streaming job tasks: {len(self.running)} running ==="]
        now = time.monotonic()
        for run in sorted(self.running.values(), key=lambda r: r.job_id):
            lines.append(
                f"job {run.job_name} (id {run.job_id}) task {run.task_id} label {run.label}: stage {run.stage}, "
                f"waiting {now - run.stage_since:.1f}s; files after {run.offset_from!r} up to {run.offset_to!r}"
            )
        return "\n".join(lines) + "\n"

    JOBS_COLUMNS = (
        "Id", "Name", "Definer", "ExecuteType", "RecurringStrategy", "Status", "ExecuteSql", "CreateTime",
        "SucceedTaskCount", "FailedTaskCount", "CanceledTaskCount", "Comment", "Properties", "CurrentOffset",
        "EndOffset", "LoadStatistic", "ErrorMsg", "JobRuntimeMsg",
    )  # fmt: skip
    TASKS_COLUMNS = (
        "TaskId", "JobID", "JobName", "Label", "Status", "ErrorMsg", "CreateTime", "StartTime", "FinishTime",
        "LoadStatistic", "User", "RunningOffset",
    )  # fmt: skip

    def jobs_table(self) -> pa.Table:
        rows = []
        for job in sorted(self.fe.state.jobs.values(), key=lambda j: j.id):
            rows.append(
                (
                    str(job.id), job.name, job.definer, "STREAMING", "\\N", job.status, masked_sql(job.execute_sql),
                    _fmt(job.create_time), str(job.succeed_task_count), str(job.failed_task_count),
                    str(job.canceled_task_count), job.comment, json.dumps(job.properties, separators=(",", ":")),
                    offset_json(job.offset), offset_json(job.end_offset), statistic_json(job.statistic),
                    job.error_msg, self.runtime_msg(job),
                )
            )  # fmt: skip
        return _string_table(self.JOBS_COLUMNS, rows)

    def tasks_table(self) -> pa.Table:
        rows = []
        for job in sorted(self.fe.state.jobs.values(), key=lambda j: j.id):
            for t in job.tasks:
                rows.append(
                    (
                        str(t.task_id), str(job.id), job.name, t.label, t.status, t.error_msg, _fmt(t.create_time),
                        _fmt(t.start_time), _fmt(t.finish_time), statistic_json(t.statistic), t.user or job.definer,
                        _running_offset(t.offset_from, t.offset_to),
                    )
                )  # fmt: skip
            run = self.running.get(job.id)
            if run is not None:
                rows.append(
                    (
                        str(run.task_id), str(job.id), job.name, run.label, "RUNNING", "", _fmt(run.create_time),
                        _fmt(run.create_time), "", statistic_json(JobStatistic()), job.definer,
                        _running_offset(run.offset_from, run.offset_to),
                    )
                )  # fmt: skip
        return _string_table(self.TASKS_COLUMNS, rows)


def _running_offset(start: str, end: str) -> str:
    return json.dumps({"startFileName": start, "endFileName": end}, separators=(",", ":"))


def _string_table(names: tuple[str, ...], rows: list[tuple]) -> pa.Table:
    cols = list(zip(*rows, strict=True)) if rows else [()] * len(names)
    return pa.table({n: pa.array(list(c), pa.string()) for n, c in zip(names, cols, strict=True)})


def _take_batch(files, max_files: int, max_bytes: int):
    batch, size = [], 0
    for f in files:
        if batch and (len(batch) >= max_files or size + f.size > max_bytes):
            break
        batch.append(f)
        size += f.size
    return batch


def describe_failure(e: BaseException, stage: str) -> tuple[str, str, bool]:
    """(ErrorMsg, JobRuntimeMsg, transient) for a failed task: the runtime message says why the
    job paused in a few words (bucket unreachable, credentials refused, a malformed file…)."""
    message = getattr(e, "message", None) or f"{type(e).__name__}: {e}"
    if isinstance(e, TimeoutError) and not isinstance(e, ObjectStoreError):
        message = f"[TIMEOUT]{e}"
    text = message
    if isinstance(e, ObjectStoreError):
        cause = e.cause
    elif "[TIMEOUT]object store call stalled" in text:
        cause = "stalled"
    elif "[NETWORK_ERROR]object store unreachable" in text:
        cause = "unreachable"
    elif "[ACCESS_DENIED]" in text:
        cause = "credentials"
    elif "[DATA_QUALITY_ERROR]malformed" in text:
        cause = "malformed"
    elif "[NOT_FOUND]bucket" in text:
        cause = "no_bucket"
    elif isinstance(e, TimeoutError) or "[TIMEOUT]" in text:
        cause = "stalled"
    else:
        cause = "other"
    runtime = {
        "stalled": "paused: object store endpoint stalled (a call passed its deadline); resumes when it answers",
        "unreachable": "paused: object store endpoint unreachable; resumes when it answers",
        "credentials": "paused: credentials refused by the object store; fix them and RESUME",
        "malformed": "paused: a malformed source file; fix or ALTER the offset past it, then RESUME",
        "no_bucket": "paused: the bucket does not exist",
    }.get(cause, f"paused: task failed while {stage.lower().replace('_', ' ')}")
    return message, runtime, cause in ("stalled", "unreachable")
