"""Group commit on the BE: many small loads of one table merged into one transaction.

Modules: `manager.py` (`GroupCommitManager`: the mode choice — header `group_commit`, else
table property `group_commit_mode`, Doris' fallbacks to off_mode —, the WAL, the FE calls,
recovery at start), `load.py` (one load's steps and the group-commit reply), `group.py` (a
group and its entries), `queue.py` (`GroupCommitQueue`, one table's groups), `spares.py`
(the next group begun ahead), `lane.py` (`SmallLoadLane`), `commit.py` (the merged commit),
`tables.py` (table lookups through the FE).

A load is parsed and converted like any stream load, rows that fit no partition are
filtered, and the rows left join the table's current *group*: a transaction the BE began
at the FE under a `group_commit_<hex>` label when the group opened. async_mode appends the
rows to the group's WAL file and fsyncs before it answers; sync_mode (and async_mode while
the WAL is over `group_commit_wal_max_disk_limit`) keeps them in memory and answers when
the merged transaction is visible. A group closes after the table's
`group_commit_interval_ms` or once it holds `group_commit_data_bytes`; it is then written
as ONE rowset per tablet and committed once, and its WAL file deleted.

Small unlabelled CSV loads into a one-partition table (the traffic of logging and IoT
clients) take the `SmallLoadLane`: those that arrive together share one parse, one pass of
enrolment and one WAL record + fsync, so a load costs little more than its HTTP request.

Client labels (beyond Doris, which refuses them with group commit): after its rows are
durable, a labelled load reserves its label for the group's transaction at the FE (one
journaled op). A label the FE already knows answers `Label Already Exists` (RUNNING while
its group is pending, FINISHED once visible) and loads nothing. The merged commit binds
the labels atomically and refuses labels another live transaction holds, so even a
record that reached two WALs (a retry after a crash between fsync and reservation) is
loaded once. Reserving after the fsync means a reservation always has durable data behind
it: a crash never leaves a label that blocks retries but loads nothing.

Recovery: a restarted BE asks the FE to abort every PREPARE group transaction it had begun
(under the FE lock, so a commit sent just before the crash either landed or is refused),
learns which WAL groups are VISIBLE (those WALs are deleted), and loads the rest exactly as
a normal group, under the same label; group-commit loads wait until this is done.
"""
