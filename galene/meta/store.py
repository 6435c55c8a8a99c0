"""FE metadata persistence: journal + images + VERSION/ROLE, recovery and checkpoints.

Layout under `meta_dir`:

    journal/journal.db     SQLite journal (see galene.meta.journal)
    image/image.<id>       image of the state after journal id <id> (newest two kept)
    image/image.ckpt       an image being written; never loaded, removed at start
    image/VERSION          clusterId=<int> / token=<uuid>
    image/ROLE             role=FOLLOWER / name=<node name>

Recovery loads the newest image that validates (a corrupt one is refused with a warning
and the one before it is tried) and replays the journal ids after it, which must be
contiguous. Journal rows are purged only up to the OLDER of the two kept images, so if the
newest image turns out to be corrupt, the previous image plus the journal still hold every
op. Crash safety of a checkpoint, step by step:

  1. write + fsync image.ckpt     crash: torn .ckpt is ignored; journal has every op
  2. rename to image.<id>, fsync  crash: image.<id> is complete or absent; journal intact
  3. load it back and compare     crash: same as 2
  4. purge journal <= older image one SQLite transaction: either done or not
  5. delete images not kept       crash: leftovers are deleted at the next checkpoint
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import threading
import time
import uuid
from pathlib import Path

from galene.catalog.apply import apply_op
from galene.catalog.model import CatalogState
from galene.catalog.ops import Op, decode_op, encode_op, op_type
from galene.common.errors import GaleneError
from galene.common.files import fsync_path
from galene.meta.image import ImageError, read_image, write_image, write_image_file
from galene.meta.journal import SYNC_LEVELS, Journal

log = logging.getLogger(__name__)

_IMAGE_NAME = re.compile(r"image\.(\d+)")
_KEEP_IMAGES = 2


class MetaRecoveryError(GaleneError):
    """The metadata on disk cannot be turned into a complete state."""


class MetaStore:
    def __init__(
        self,
        meta_dir: str | Path,
        *,
        sync_policy: str = "SYNC",
        roll_num: int = 50000,
        node_name: str = "fe_127.0.0.1_9010",
    ):
        if sync_policy.upper() not in SYNC_LEVELS:
            raise ValueError(
                f"unknown master_sync_policy {sync_policy!r}; expected one of {sorted(SYNC_LEVELS)}"
            )
        if roll_num < 1:
            raise ValueError("edit_log_roll_num must be >= 1")
        self.meta_dir = Path(meta_dir)
        self.image_dir = self.meta_dir / "image"
        self.journal_path = self.meta_dir / "journal" / "journal.db"
        self.sync_policy = sync_policy.upper()
        self.roll_num = roll_num
        self.node_name = node_name
        self.role = "FOLLOWER"
        self.state = CatalogState()
        self.cluster_id = 0
        self.token = ""
        self.last_journal_id = 0
        self.last_image_id = 0
        self._journal: Journal | None = None
        # Ids of images known to be valid (loaded at start or validated after writing),
        # oldest first; the journal is purged up to the first one.
        self._valid_images: list[int] = []
        self._lock = threading.Lock()

    # --- lifecycle --------------------------------------------------------------------
    def open(self) -> CatalogState:
        with self._lock:
            if self._journal is not None:
                raise RuntimeError("MetaStore is already open")
            self.image_dir.mkdir(parents=True, exist_ok=True)
            self.journal_path.parent.mkdir(parents=True, exist_ok=True)
            self._load_version()
            self._load_role()
            (self.image_dir / "image.ckpt").unlink(missing_ok=True)  # leftover of an interrupted checkpoint
            journal = Journal(self.journal_path, self.sync_policy)
            try:
                image_id, state = self._load_newest_image()
                self.last_journal_id = self._replay(journal, image_id, state)
            except BaseException:
                journal.close()
                raise
            self._journal = journal
            self.state = state
            self.last_image_id = image_id
            log.info(
                "metadata recovered: image %d + journal up to %d (cluster id %d)",
                image_id,
                self.last_journal_id,
                self.cluster_id,
            )
            return state

    def close(self) -> None:
        with self._lock:
            if self._journal is not None:
                self._journal.close()
                self._journal = None

    # --- writing ----------------------------------------------------------------------
    def log(self, op: Op) -> int:
        """Append `op` to the journal (durable per sync policy), then apply it; its id."""
        with self._lock:
            journal = self._open_journal()
            journal_id = self.last_journal_id + 1
            journal.append(journal_id, op_type(op), encode_op(op), time.time())
            try:
                apply_op(self.state, op)
            except BaseException:
                # The op never took effect; keep the journal equal to the state.
                journal.delete(journal_id)
                raise
            self.last_journal_id = journal_id
            if journal_id - self.last_image_id >= self.roll_num:
                try:
                    self._checkpoint_locked()
                except Exception:
                    # The op is safe in the journal; the next op retries the checkpoint.
                    log.exception("automatic checkpoint at journal id %d failed", journal_id)
            return journal_id

    def checkpoint(self) -> Path:
        with self._lock:
            self._open_journal()
            return self._checkpoint_locked()

    def _checkpoint_locked(self) -> Path:
        journal_id = self.last_journal_id
        final = self._image_path(journal_id)
        if journal_id in self._valid_images and final.exists():
            return final  # nothing logged since that image
        ckpt = self.image_dir / "image.ckpt"
        write_image(self.state, journal_id, ckpt)
        os.replace(ckpt, final)
        fsync_path(self.image_dir)
        try:
            loaded_id, loaded = read_image(final)
            if loaded_id != journal_id or loaded != self.state:
                raise ImageError(f"image {final} does not reproduce the live state")
        except ImageError:
            final.unlink(missing_ok=True)
            raise
        self.last_image_id = journal_id
        self._valid_images = (self._valid_images + [journal_id])[-_KEEP_IMAGES:]
        if len(self._valid_images) == _KEEP_IMAGES:
            self._open_journal().purge(self._valid_images[0])
        for image_id in self._image_ids():
            if image_id not in self._valid_images:
                self._image_path(image_id).unlink(missing_ok=True)
        log.info("checkpoint: wrote %s", final)
        return final

    def snapshot_image(self, path: str | Path) -> Path:
        """Write the live state as a valid image file at `path` (for /dump)."""
        with self._lock:
            return write_image_file(self.state, self.last_journal_id, path)

    # --- recovery ---------------------------------------------------------------------
    def _load_newest_image(self) -> tuple[int, CatalogState]:
        for image_id in sorted(self._image_ids(), reverse=True):
            path = self._image_path(image_id)
            try:
                header_id, state = read_image(path)
                if header_id != image_id:
                    raise ImageError(f"image {path} holds journal id {header_id}, not {image_id}")
            except ImageError as e:
                log.warning("refusing image: %s; trying the previous image", e.message)
                continue
            self._valid_images = [image_id]
            return image_id, state
        self._valid_images = []
        return 0, CatalogState()

    def _replay(self, journal: Journal, image_id: int, state: CatalogState) -> int:
        """Apply journal ids after image_id to state; the last id replayed."""
        purged = journal.purged_upto()
        if purged > image_id:
            raise MetaRecoveryError(
                f"journal entries up to id {purged} were purged and no valid image covers them "
                f"(newest valid image: {image_id or 'none'}); restore a valid image into {self.image_dir}"
            )
        expected = image_id + 1
        for journal_id, kind, data in journal.entries(after_id=image_id):
            if journal_id != expected:
                raise MetaRecoveryError(
                    f"journal ids {expected}..{journal_id - 1} are missing and no valid image covers them "
                    f"(newest valid image: {image_id or 'none'})"
                )
            try:
                apply_op(state, decode_op(data))
            except Exception as e:
                raise MetaRecoveryError(f"replaying journal id {journal_id} ({kind}) failed: {e!r}") from e
            expected += 1
        return expected - 1

    def _load_version(self) -> None:
        path = self.image_dir / "VERSION"
        if not path.exists():
            _write_kv(path, {"clusterId": str(secrets.randbelow(2**31 - 2) + 1), "token": str(uuid.uuid4())})
        kv = _read_kv(path)
        try:
            self.cluster_id = int(kv["clusterId"])
            self.token = kv["token"]
        except (KeyError, ValueError) as e:
            raise MetaRecoveryError(
                f"{path} is malformed (needs clusterId=<int> and token=<text>): {e!r}"
            ) from e

    def _load_role(self) -> None:
        path = self.image_dir / "ROLE"
        if not path.exists():
            _write_kv(path, {"role": "FOLLOWER", "name": self.node_name})
        kv = _read_kv(path)
        try:
            self.role = kv["role"]
            self.node_name = kv["name"]
        except KeyError as e:
            raise MetaRecoveryError(f"{path} is malformed (needs role= and name=): missing {e}") from e

    # --- helpers ----------------------------------------------------------------------
    def _open_journal(self) -> Journal:
        if self._journal is None:
            raise RuntimeError("MetaStore is not open")
        return self._journal

    def _image_ids(self) -> list[int]:
        return [int(m.group(1)) for p in self.image_dir.iterdir() if (m := _IMAGE_NAME.fullmatch(p.name))]

    def _image_path(self, journal_id: int) -> Path:
        return self.image_dir / f"image.{journal_id}"


def _read_kv(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.lstrip().startswith("#"):
            out[key.strip()] = value.strip()
    return out


def _write_kv(path: Path, values: dict[str, str]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write("".join(f"{k}={v}\n" for k, v in values.items()))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_path(path.parent)
