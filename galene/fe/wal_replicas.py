"""The FE's side of replicated group-commit WAL (`be/wal_replica.py`): which copy replays.

BEs holding copies of other BEs' WAL records report them every second (owner, owner start
time, group label, bytes). For each, the FE answers:

* DROP: the group's txn is visible (or committed), or its table is gone;
* KEEP: the owner is alive and has not restarted since it wrote the group (it commits the
  group itself), or another holder was chosen, or the owner died only just now;
* TAKEOVER: the owner is dead (a known member whose heartbeats failed and which is not
  alive, dropped, or alive with another start time: restarted, its data maybe gone) and —
  unless its process is known gone (restarted, or its supervisor saw it exit) — the last
  write lease the FE may have granted it has expired (`wal_lease_s` + `WAL_LEASE_MARGIN_S`:
  an owner cut off from the FE but not from clients and peers answers no load after that; see
  be/wal_replica.py), the
  group's first report came `SETTLE_S` ago (every holder has reported by then) and this
  holder's copy is the longest reported (every copy is a prefix of the group's records, so
  the longest holds every acknowledged one; ties go to the lowest backend id). The owner's
  PREPARE txn under the label is aborted under the catalog lock before the answer, and the
  holder commits the copy under the same label: if the owner (or an earlier holder) commits
  it too, the label lets only one of them become visible.

State here is runtime only (never journaled): after an FE restart holders report again and
a choice is made afresh.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from galene.txn.labels import txn_of_label

SETTLE_S = 3.0
REPORT_TTL_S = 10.0
# Allowed clock difference between the FE and a BE (the lease is an FE wall-clock instant).
WAL_LEASE_MARGIN_S = 2.0


def wal_lease_s(heartbeat_interval_s: float) -> float:
    """How long one heartbeat's write lease lasts: three heartbeats may be missed or late
    (a heartbeat after a failed one grants none) before a busy owner stops answering."""
    return max(3.0, 4 * float(heartbeat_interval_s))


@dataclass
class _Group:
    first_seen: float
    reports: dict[int, tuple[int, float]] = field(default_factory=dict)  # holder -> (bytes, when)
    granted: int = 0


class ReplicaArbiter:
    def __init__(self, fe):
        self.fe = fe
        self.groups: dict[tuple[int, str], _Group] = {}

    def owner_dead(self, owner_id: int, owner_start_ms: int) -> bool:
        monitor = self.fe.backends
        granted = max(monitor.lease_until.get(owner_id, 0.0), monitor.inherited_lease_until)
        lease_over = time.time() >= granted + WAL_LEASE_MARGIN_S
        be = self.fe.state.backends.get(owner_id)
        if be is None:  # dropped: maybe still running, so only once its lease is over
            return lease_over
        rt = monitor.status(owner_id)
        if rt.alive:
            started = int(rt.last_start_time * 1000)
            return bool(started) and abs(started - owner_start_ms) > 1  # restarted: gone
        if rt.exit_reason:  # its supervisor saw the process exit
            return True
        return rt.heartbeat_failures > 0 and lease_over

    def verdicts(self, holder: int, groups: list[dict]) -> tuple[dict[str, str], list[tuple[int, str]]]:
        """The verdict per label, and the (db_id, label) whose owner's txn the caller must
        abort (`TxnManager.abort_group_label`) before it answers TAKEOVER."""
        now = time.monotonic()
        out: dict[str, str] = {}
        aborts: list[tuple[int, str]] = []
        state = self.fe.state
        for g in groups:
            db_id, label = int(g["db_id"]), str(g["label"])
            key = (db_id, label)
            db = state.databases.get(db_id)
            table = state.tables.get(int(g["table_id"]))
            txn = txn_of_label(state, db, label)
            if db is None or table is None or (txn is not None and txn.status in ("VISIBLE", "COMMITTED")):
                out[label] = "DROP"
                self.groups.pop(key, None)
                continue
            if not self.owner_dead(int(g["owner"]), int(g["owner_start"])):
                out[label] = "KEEP"
                self.groups.pop(key, None)
                continue
            rec = self.groups.get(key)
            if rec is None:
                rec = self.groups[key] = _Group(first_seen=now)
            rec.reports[holder] = (int(g.get("bytes") or 0), now)
            rec.reports = {h: r for h, r in rec.reports.items() if now - r[1] < REPORT_TTL_S}
            if rec.granted and rec.granted in rec.reports and self._holder_ok(rec.granted):
                out[label] = "TAKEOVER" if rec.granted == holder else "KEEP"
                continue
            if now - rec.first_seen < SETTLE_S:
                out[label] = "KEEP"
                continue
            best = min(rec.reports, key=lambda h: (-rec.reports[h][0], h))
            if best != holder:
                out[label] = "KEEP"
                continue
            rec.granted = holder
            aborts.append((db_id, label))
            out[label] = "TAKEOVER"
        if len(self.groups) > 100_000:
            self.groups.clear()
        return out, aborts

    def _holder_ok(self, holder: int) -> bool:
        return self.fe.backends.status(holder).alive
