"""The merged commit of a closed group (`GroupCommitter`): its rows as one rowset per tablet,
committed once at the FE with the client labels it carries.

Retries with exponential backoff while the FE cannot be reached; a commit whose answer was
lost is resolved by aborting the txn (the FE aborts it, or refuses because it is visible);
labels another txn holds are dropped and the rest committed again. Used for a group's flush,
the replay of a WAL file at start, and the takeover of another BE's group from a WAL copy.
"""

from __future__ import annotations

import asyncio
import logging

import msgspec
import pyarrow as pa

from galene.be.group_commit.group import (
    RETRY_MAX_S,
    RETRY_MIN_S,
    AlreadyCommitted,
    Entry,
    FeRefused,
    Group,
    TableDropped,
    wal_entries,
)
from galene.be.stream_load import storage_answer
from galene.catalog.model import Rowset, Table
from galene.common.errors import GaleneError
from galene.load.parse import ParsedBatch
from galene.load.routing import route_rows
from galene.net import inflight
from galene.storage.rowset import delete_rowset_files, storage_schema, write_rowsets

log = logging.getLogger(__name__)


class GroupCommitter:
    """Writes and commits closed groups; `manager` is the BE's `GroupCommitManager` (its FE
    calls, background tasks and BE)."""

    def __init__(self, manager):
        self.manager = manager

    async def group_rows(self, group: Group, entries: list[Entry]) -> list[Entry]:
        """The rows a closed group commits, as entries: what its WAL file holds (every
        acknowledged async load, in append order), then the entries kept in memory (sync
        loads, in arrival order). WAL rows of a client label whose load failed after its
        append (the label was taken meanwhile) are left out."""
        if group.replicated:
            return list(entries)
        out: list[Entry] = []
        if group.wal is not None:
            labels = {e.sub_label for e in entries if e.in_wal and e.sub_label is not None}
            out = await wal_entries(group.wal.final_path, keep=lambda sub: sub is None or sub in labels)
        out.extend(e for e in entries if not e.in_wal)
        return out

    async def commit_group(self, group: Group, entries: list[Entry]) -> int:
        """Write the group's rows as one rowset per tablet and commit them once.

        Retries with exponential backoff while the FE cannot be reached. A commit whose
        answer was lost is resolved by aborting the txn: the FE either aborts it (nothing
        landed; begin again under the same label) or refuses because it is already visible.
        Labels another txn holds are dropped and the rest committed again.
        """
        manager = self.manager
        be = manager.be
        backoff = RETRY_MIN_S
        seen: set[str] = set()
        live: list[Entry] = []
        for e in entries:  # one entry per client label (first wins)
            if e.sub_label is not None:
                if e.sub_label in seen:
                    continue
                seen.add(e.sub_label)
            live.append(e)
        while True:
            rowsets: list[Rowset] = []
            try:
                if not group.txn_id:
                    await manager.begin(group)
                if not live:
                    await manager.abort(group.txn_id, "group commit: nothing left to load")
                    return group.txn_id
                assert group.table is not None
                rowsets, num_rows = await self._write_group_within(group.table, live)
            except TableDropped:
                raise
            except AlreadyCommitted as e:
                await asyncio.to_thread(delete_rowset_files, be.fs, be.root, rowsets)
                if group.first_txn_id and e.txn_id != group.first_txn_id:
                    group.taken_over = True
                    log.warning("group %s was committed by txn %s from a WAL copy", group.label, e.txn_id)
                group.txn_id = e.txn_id
                return e.txn_id
            except (GaleneError, OSError, TimeoutError) as e:
                log.warning("group %s: %s; retrying in %.1fs", group.label, e, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, RETRY_MAX_S)
                continue
            sub_labels = [e.sub_label for e in live if e.sub_label is not None]
            try:
                body = await manager.fe(
                    "/api/_internal/group_commit/commit",
                    {
                        "txn_id": group.txn_id,
                        "rowsets": msgspec.to_builtins(rowsets),
                        "sub_labels": sub_labels,
                        "num_rows": num_rows,
                        "load_bytes": sum(e.nbytes for e in live),
                    },
                    timeout_s=be.cfg.rpc_timeout_ms / 1000,
                )
            except (OSError, TimeoutError, FeRefused) as e:
                if await self._resolve(group) == "VISIBLE":
                    return group.txn_id
                log.warning("group %s: commit failed (%s); loading again", group.label, e)
                await asyncio.to_thread(delete_rowset_files, be.fs, be.root, rowsets)
                group.txn_id = 0
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, RETRY_MAX_S)
                continue
            if body.get("status") == "OK":
                be.metrics.inc("galene_be_group_commit_txns_total")
                return group.txn_id
            await asyncio.to_thread(delete_rowset_files, be.fs, be.root, rowsets)
            if body.get("status") == "CONFLICT":
                taken = set(body.get("conflicts") or {})
                log.info("group %s: labels already loaded elsewhere, dropped: %s", group.label, sorted(taken))
                live = [e for e in live if e.sub_label not in taken]
                continue
            # e.g. the FE aborted the txn (timeout) or the table was dropped: begin again.
            log.warning("group %s: commit refused: %s", group.label, body.get("message"))
            await manager.abort(group.txn_id, "group commit: commit refused")
            group.txn_id = 0
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, RETRY_MAX_S)

    async def _resolve(self, group: Group) -> str:
        """After a commit with no answer: VISIBLE, or ABORTED once the abort is journaled."""
        backoff = RETRY_MIN_S
        while True:
            try:
                body = await self.manager.fe(
                    "/api/_internal/txn/abort",
                    {"txn_id": group.txn_id, "reason": "group commit: commit lost"},
                )
            except (OSError, TimeoutError, FeRefused) as e:
                log.warning("group %s: FE unreachable while resolving its commit: %s", group.label, e)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, RETRY_MAX_S)
                continue
            if body.get("status") == "OK":
                return "ABORTED"
            if "visible" in str(body.get("message", "")).lower():
                return "VISIBLE"
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, RETRY_MAX_S)

    async def _write_group_within(self, table: Table, entries: list[Entry]) -> tuple[list[Rowset], int]:
        """`_write_group` in a worker thread under `storage_write_timeout_second`: storage that
        does not answer fails this attempt (the commit loop retries) instead of parking the
        group; files a late write still produces are deleted when it finishes."""
        be = self.manager.be
        seconds = float(getattr(be.cfg, "storage_write_timeout_second", 0) or 0) or None
        job = asyncio.ensure_future(asyncio.to_thread(self._write_group, table, entries))
        try:
            with inflight.track(
                "storage", "write", f"group commit rowsets of table {table.id}", be.cfg.storage_uri, seconds
            ):
                return await asyncio.wait_for(storage_answer(be, job), seconds)
        except BaseException:
            job.add_done_callback(self._delete_late_write)
            raise

    def _delete_late_write(self, job: asyncio.Future) -> None:
        if job.cancelled() or job.exception() is not None:
            return
        rowsets, _ = job.result()
        if rowsets:
            be = self.manager.be
            self.manager.spawn(
                asyncio.to_thread(delete_rowset_files, be.fs, be.root, rowsets),
                "group-commit-late-files",
            )

    def _write_group(self, table: Table, entries: list[Entry]) -> tuple[list[Rowset], int]:
        """Concatenate the group's rows in arrival order, route, write one rowset per tablet."""
        schema = storage_schema(table)
        parts = [align(e.data, schema) for e in entries if e.data.num_rows]
        if not parts:
            return [], 0
        data = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        routed = route_rows(ParsedBatch(data=data, num_total=data.num_rows, num_filtered=0), table)
        if routed.num_filtered:
            # Only possible if partitions changed between the load and its commit.
            log.warning(
                "group commit: %d rows of table %s fit no partition any more", routed.num_filtered, table.id
            )
        be = self.manager.be
        rowsets = write_rowsets(be.fs, be.root, table, routed.per_tablet)
        return rowsets, sum(r.num_rows for r in rowsets)


def align(data: pa.Table, schema: pa.Schema) -> pa.Table:
    """Rows written before a schema change, in the current storage schema (by name)."""
    if data.schema.equals(schema):
        return data
    columns = []
    for f in schema:
        if f.name in data.column_names:
            columns.append(data.column(f.name).cast(f.type))
        else:
            columns.append(pa.nulls(data.num_rows, f.type))
    return pa.Table.from_arrays(columns, schema=schema)
