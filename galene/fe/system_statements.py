"""Statements about the cluster: backends (ALTER SYSTEM ADD / DROP / DECOMMISSION / MODIFY
BACKEND, SHOW BACKENDS with Galene's write canary), SHOW FRONTENDS, SHOW LOAD (the engine jobs
of a database), compaction (ADMIN COMPACT, SHOW TABLETS: `galene.fe.compaction`, `galene.fe.compaction_api`), SHOW PROC, and
the statements Doris accepts as no-ops here (SET of executor forms, BEGIN / COMMIT / ROLLBACK).
`SystemStatements` is a part of `galene.fe.executor.SqlExecutor`."""

from __future__ import annotations

import time

from galene import NODE_VERSION
from galene.common.errors import AnalysisError
from galene.fe import compaction_api
from galene.fe.executor_base import ExecutorBase, cols, fmt_time, json_text
from galene.fe.mysql.boundary import StatementResult
from galene.sql import show


class SystemStatements(ExecutorBase):
    # --- system ---------------------------------------------------------------------
    async def _do_AlterSystemAddBackend(self, s, ctx):
        hosts = [_host_port(h) for h in (s.host_ports or [s.host_port])]
        await self.blocking(self.fe.catalog.add_backends, hosts, _tags(getattr(s, "properties", None)))
        self.fe.backends.poke()
        return StatementResult()

    async def _do_AlterSystemDropBackend(self, s, ctx):
        """DROP / DROPP (at once), DECOMMISSION (drained, then dropped by the FE itself:
        fe/backends.py) and CANCEL DECOMMISSION of every host listed."""
        hosts = [_host_port(h) for h in (s.host_ports or [s.host_port])]
        if s.action == "DECOMMISSION":
            found = await self.blocking(self.fe.catalog.decommission_backends, hosts, True)
            for be in found:
                self.fe.backends.affinity.forget_backend(be.id)
            self.fe.backends.poke()  # the BE learns it from the heartbeat and starts draining
        elif s.action == "CANCEL DECOMMISSION":
            await self.blocking(self.fe.catalog.decommission_backends, hosts, False)
            self.fe.backends.poke()
        else:
            await self.blocking(self.fe.catalog.drop_backends, hosts)
        return StatementResult()

    async def _do_AlterSystemModifyBackend(self, s, ctx):
        props = dict(getattr(s, "properties", None) or {})
        flags: dict[str, bool | None] = {"disable_load": None, "disable_query": None}
        for key in list(props):
            if key.lower() in flags:
                flags[key.lower()] = props.pop(key).strip().lower() == "true"  # Boolean.valueOf, as Doris
        unknown = [k for k in props if not k.startswith("tag.")]
        if unknown:
            raise AnalysisError(f"unknown properties setting for key ({','.join(unknown)})")
        for host_port in s.host_ports or [s.host_port]:
            host, port = _host_port(host_port)
            await self.blocking(
                self.fe.catalog.modify_backend, host, port, _tags(props), flags["disable_load"], flags["disable_query"]
            )
        return StatementResult()

    async def _do_ShowBackends(self, s, ctx):
        return await self.show_backends()

    async def show_backends(self) -> StatementResult:
        """SHOW BACKENDS: Doris' 28 columns, then Galene's write canary: Writable, LastCanaryTime,
        CanaryLatencyMs, CanaryError (fe/canary.py)."""
        names = [
            "BackendId", "Host", "HeartbeatPort", "BePort", "HttpPort", "BrpcPort", "ArrowFlightSqlPort",
            "LastStartTime", "LastHeartbeat", "Alive", "SystemDecommissioned", "TabletNum", "DataUsedCapacity",
            "TrashUsedCapacity", "AvailCapacity", "TotalCapacity", "UsedPct", "MaxDiskUsedPct",
            "RemoteUsedCapacity", "Tag", "ErrMsg", "Version", "Status", "HeartbeatFailureCounter", "CpuCores",
            "Memory", "RunningTasks", "NodeRole", "Writable", "LastCanaryTime", "CanaryLatencyMs", "CanaryError",
        ]  # fmt: skip
        tablets = sum(len(p.tablet_ids) for t in self.fe.state.tables.values() for p in t.partitions)
        rows = []
        backends = sorted(self.fe.state.backends.values(), key=lambda b: b.id)
        for be in backends:
            rt = self.fe.backends.status(be.id)
            tag = {"location": "default", **be.tags}
            health = rt.health or {}
            last_load = float(health.get("last_stream_load_time") or 0)
            status = {
                "lastSuccessReportTabletsTime": "N/A",
                "lastStreamLoadTime": int(last_load * 1000) if last_load else -1,
                "isQueryDisabled": be.disable_query,
                "isLoadDisabled": be.disable_load,
                # Galene: the BE's own view of its write path (its heartbeat answer).
                "ingestWorkerAlive": health.get("ingest_worker_alive"),
                "walFsyncAgeSec": health.get("wal_fsync_age_s"),
                "loopLagMs": health.get("loop_lag_ms"),
            }
            if health.get("problems"):
                status["problems"] = health["problems"]
            if be.decommissioned and rt.drain:
                status["drain"] = rt.drain
            canaried = rt.last_canary_time > 0
            rows.append(
                (
                    str(be.id), be.host, str(be.heartbeat_port), str(rt.be_port), str(rt.http_port),
                    str(rt.brpc_port), "-1", fmt_time(rt.last_start_time), fmt_time(rt.last_heartbeat),
                    "true" if rt.alive else "false", "true" if be.decommissioned else "false",
                    str(tablets // max(1, len(backends))), "0.000", "0.000", "0.000", "0.000", "0.00 %",
                    "0.00 %", "0.000", json_text(tag), rt.err_msg, rt.version, json_text(status),
                    str(rt.heartbeat_failures), str(rt.cpu_cores), "0.000", "0", "mix",
                    "true" if rt.writable else "false", fmt_time(rt.last_canary_time) if canaried else "N/A",
                    f"{rt.canary_latency_ms:.1f}" if canaried else "N/A", rt.canary_error,
                )
            )  # fmt: skip
        return StatementResult(columns=cols(*names), rows=rows)

    async def _do_ShowLoad(self, s, ctx):
        """SHOW LOAD: the engine jobs (INSERT … SELECT, OVERWRITE, CTAS, UPDATE, DELETE) of a
        database whose labels are still kept, in Doris' columns."""
        db_name = self.database_of(s.db, ctx)
        db = self.fe.catalog.db(db_name)
        names = [
            "JobId", "Label", "State", "Progress", "Type", "EtlInfo", "TaskInfo", "ErrorMsg", "CreateTime",
            "EtlStartTime", "EtlFinishTime", "LoadStartTime", "LoadFinishTime", "URL", "JobDetails",
            "TransactionId", "ErrorTablets", "User", "Comment",
        ]  # fmt: skip
        states = {"VISIBLE": "FINISHED", "COMMITTED": "FINISHED", "ABORTED": "CANCELLED"}
        rows = []
        for txn in sorted(self.fe.state.txns.values(), key=lambda t: t.id):
            if txn.db_id != db.id or txn.load_type == "STREAM_LOAD":
                continue
            state = states.get(txn.status, "LOADING")
            done = state != "LOADING"
            details = {
                "Unfinished backends": {}, "ScannedRows": txn.num_rows, "TaskNumber": 1,
                "LoadBytes": txn.load_bytes, "All backends": {}, "FileNumber": 0, "FileSize": 0,
            }  # fmt: skip
            row = {
                "JobId": str(txn.id), "Label": txn.label, "State": state,
                "Progress": "100.00% (1/1)" if done else "0.00% (0/1)", "Type": txn.load_type,
                "EtlInfo": "NULL", "TaskInfo": f"cluster:N/A; timeout(s):{txn.timeout_s}; max_filter_ratio:0.0",
                "ErrorMsg": f"type:LOAD_RUN_FAIL; msg:{txn.reason}" if txn.status == "ABORTED" else "NULL",
                "CreateTime": fmt_time(txn.begin_time), "EtlStartTime": fmt_time(txn.begin_time),
                "EtlFinishTime": fmt_time(txn.begin_time), "LoadStartTime": fmt_time(txn.begin_time),
                "LoadFinishTime": fmt_time(txn.finish_time) if done else "NULL", "URL": "NULL",
                "JobDetails": json_text(details), "TransactionId": str(txn.id), "ErrorTablets": "{}",
                "User": txn.user, "Comment": "",
            }  # fmt: skip
            if show.row_matches(s.where, row):
                rows.append(row)
        if s.order is not None:
            for ordered in reversed(s.order.expressions):
                key = ordered.this.name
                col = next((n for n in names if n.lower() == key.lower()), None)
                if col is None:
                    raise AnalysisError(f"Unknown column '{key}' in SHOW LOAD")
                numeric = col in ("JobId", "TransactionId")
                rows.sort(
                    key=lambda r, c=col, n=numeric: int(r[c]) if n else r[c],
                    reverse=bool(ordered.args.get("desc")),
                )
        if s.limit is not None:
            rows = rows[: s.limit]
        return StatementResult(columns=cols(*names), rows=[tuple(r[n] for n in names) for r in rows])

    async def _do_ShowFrontends(self, s, ctx):
        return await self.show_frontends()

    async def show_frontends(self) -> StatementResult:
        """SHOW FRONTENDS: this FE, the one frontend, in Doris' columns."""
        names = [
            "Name", "Host", "EditLogPort", "HttpPort", "QueryPort", "RpcPort", "ArrowFlightSqlPort", "Role",
            "IsMaster", "ClusterId", "Join", "Alive", "ReplayedJournalId", "LastStartTime", "LastHeartbeat",
            "IsHelper", "ErrMsg", "Version", "CurrentConnected",
        ]  # fmt: skip
        fe = self.fe
        row = (
            fe.store.node_name if hasattr(fe.store, "node_name") else f"fe_{fe.host}_{fe.cfg.edit_log_port}",
            fe.host, str(fe.cfg.edit_log_port), str(fe.http_port), str(fe.query_port), str(fe.cfg.rpc_port),
            "-1", "FOLLOWER", "true", str(fe.store.cluster_id), "true", "true", str(fe.store.last_journal_id),
            fmt_time(fe.start_time), fmt_time(time.time()), "true", "", NODE_VERSION, "Yes",
        )  # fmt: skip
        return StatementResult(columns=cols(*names), rows=[row])

    # --- compaction (galene/fe/compaction.py) ----------------------------------------
    async def _do_AdminCompact(self, s, ctx):
        """Doris' ADMIN COMPACT TABLE: compacts every tablet of one partition; answers OK once
        the compaction is committed (Doris answers once its BE tasks are sent)."""
        _, table = self.table_of(s.db, s.table, ctx)
        # Doris' AdminCompactTableStmt.analyze, in its order and texts.
        if not s.partitions:
            raise AnalysisError("No partition selected for compaction")
        if len(s.partitions) != 1:
            raise AnalysisError("Only support single partition for compaction")
        if not s.where_given:
            raise AnalysisError("Compaction type must be specified in Where clause like: type = 'BASE/CUMULATIVE'")
        if s.compact_type is None:
            raise AnalysisError("Where clause should looks like: type = 'BASE/CUMULATIVE'")
        await self.fe.compaction.admin_compact(table, s.partitions[0], s.compact_type.lower())
        return StatementResult()

    async def _do_ShowTablets(self, s, ctx):
        _, table = self.shown_table(s.db, s.table, ctx)
        rows = compaction_api.show_tablets(self.fe.compaction, table, s.partitions)
        return StatementResult(columns=cols(*compaction_api.SHOW_TABLETS_COLUMNS), rows=rows)

    async def _do_ShowProc(self, s, ctx):
        return await self.fe.show_proc(s.path)

    async def _do_Set(self, s, ctx):
        return StatementResult()

    async def _do_Transaction(self, s, ctx):
        # Doris autocommits every statement; BEGIN/COMMIT/ROLLBACK are accepted as no-ops.
        return StatementResult()


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.strip().strip("'\"").rpartition(":")
    if not sep or not port.isdigit():
        raise AnalysisError(f"Invalid host port format: {text}")
    return host, int(port)


def _tags(props: dict | None) -> dict[str, str]:
    return {k[len("tag.") :]: v for k, v in (props or {}).items() if k.startswith("tag.")}
