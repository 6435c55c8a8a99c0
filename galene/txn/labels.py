"""Load labels: who holds a label, and the errors a used label gives.

A label names one load in its database (Doris' label): a live (not ABORTED) txn holds it
until the txn is forgotten after `label_keep_max_second`. A group-commit txn (a BE's merged
txn, labelled `group_commit_…`) also binds the client labels of the loads it carries.
"""

from __future__ import annotations

from galene.catalog.model import CatalogState, Database, Txn
from galene.common.errors import GaleneError, LoadError

# Doris' ExistingJobStatus for a label that is already used, by txn status.
EXISTING_JOB_STATUS = {
    "PREPARE": "RUNNING",
    "PRECOMMITTED": "PRECOMMITTED",
    "COMMITTED": "FINISHED",
    "VISIBLE": "FINISHED",
}

# Labels of the merged transactions BEs begin for group commit (Doris' form).
GROUP_COMMIT_LABEL_PREFIX = "group_commit_"


class LabelAlreadyExists(LoadError):
    def __init__(self, label: str, txn: Txn):
        super().__init__(
            f"Label [{label}] has already been used, relate to txn [{txn.id}]", status="Label Already Exists"
        )
        self.txn = txn
        self.existing_status = EXISTING_JOB_STATUS.get(txn.status, "FINISHED")


class SubLabelConflict(GaleneError):
    """Client labels of a merged commit that other live txns already hold: label -> txn id."""

    def __init__(self, conflicts: dict[str, int]):
        super().__init__(f"labels already loaded by other transactions: {conflicts}")
        self.conflicts = conflicts


def txn_of_label(state: CatalogState, db: Database | None, label: str) -> Txn | None:
    """The txn `label` names in `db` (any status), or None."""
    txn_id = db.labels.get(label) if db is not None else None
    return state.txns.get(txn_id) if txn_id is not None else None


def label_owner(state: CatalogState, db: Database, label: str, txn_id: int) -> Txn | None:
    """The live txn other than `txn_id` that holds `label`, if any (aborted ones do not)."""
    owner_id = db.labels.get(label)
    if owner_id is None or owner_id == txn_id:
        return None
    owner = state.txns.get(owner_id)
    return owner if owner is not None and owner.status != "ABORTED" else None
