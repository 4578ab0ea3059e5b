"""Numbered, immutable checkpoints with a hash, and recovery that falls back past corrupt ones."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from magent.errors import (
    CheckpointCorruptError, CheckpointNotFoundError, CheckpointSequenceError, StoreError,
)
from magent.models import SCHEMA_VERSION, Checkpoint, CheckpointSummary
from magent.models.base import WRITTEN_ALWAYS
from magent.store.files import create_immutable, fsync_dir, loads, read_bytes
from magent.store.migrations import migrate

if TYPE_CHECKING:
    from magent.store.commit import Committer

_NAME = re.compile(r"^checkpoint_(\d{3,})\.json$")


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_FILE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)

ALWAYS_WRITTEN = WRITTEN_ALWAYS["Checkpoint"]


def to_disk(checkpoint: Checkpoint) -> dict:
    """The checkpoint as its file holds it (without ``sha256``): every field, in the model's
    order, but for optional ones at the default its published schema states; ``state`` without
    ``messages`` (the conversation is ``entries.jsonl``, from ``leaf_entry_id``)."""
    lean = checkpoint.model_dump(mode="json", exclude={"sha256": True, "state": {"messages"}},
                                 exclude_defaults=True)
    doc: dict = {"schema_version": checkpoint.schema_version}
    for name in Checkpoint.model_fields:
        if name == "sha256":
            continue  # (written last, of the rest)
        if name in lean:
            doc[name] = lean[name]
        elif name in ALWAYS_WRITTEN:
            doc[name] = {} if name == "state" else checkpoint.model_dump(mode="json", include={name})[name]
    return doc


def canonical_hash(doc: dict) -> str:
    return hashlib.sha256(_CANONICAL.encode(doc).encode()).hexdigest()


def content_hash(doc: dict, task_id: str, sequence: int | None = None) -> str:
    """A checkpoint file's ``sha256``: of its document without it. Schemas 5 to 17 left the task
    id (and 17 the sequence number) to the directory and the file's name, and hashed them all
    the same, so for those they are put in first: a checkpoint copied into another task's
    directory or renamed fails its hash."""
    extra: dict = {}
    if "task_id" not in doc:
        extra["task_id"] = task_id
    if sequence is not None and "sequence" not in doc:
        extra["sequence"] = sequence
    return canonical_hash({**doc, **extra} if extra else doc)


def encoded(doc: dict) -> bytes:
    """A checkpoint file's JSON, as ``files.dumps`` writes it."""
    return _FILE.encode(doc).encode()


def file_name(sequence: int) -> str:
    return f"checkpoint_{sequence:03d}.json"


class CheckpointLog:
    """The checkpoints of one task directory."""

    def __init__(self, task_dir: Path, task_id: str):
        self.dir = task_dir
        self.task_id = task_id
        self._last: int | None = None  # cached by the single writer
        self.committer: Committer | None = None
        """The run's group commit: set, a checkpoint written is handed to it (linked at once,
        its content synced by the next commit)."""

    def numbers(self) -> list[int]:
        """Sequence numbers of the checkpoint files present (corrupt ones excluded), ascending."""
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            return []
        return sorted(int(m.group(1)) for n in names if (m := _NAME.fullmatch(n)))

    def path(self, sequence: int) -> Path:
        return self.dir / file_name(sequence)

    def last_number(self) -> int | None:
        if self._last is None:
            nums = self.numbers()
            self._last = nums[-1] if nums else None
        return self._last

    def next_number(self) -> int:
        last = self.last_number()
        return 0 if last is None else last + 1

    def write(self, checkpoint: Checkpoint) -> Checkpoint:
        """Write ``checkpoint`` as a new file; ``CheckpointSequenceError`` for a sequence that does
        not follow the last one or a file that exists: a checkpoint is never overwritten."""
        if checkpoint.task_id != self.task_id:
            raise StoreError(f"checkpoint of task {checkpoint.task_id} written to task {self.task_id}")
        digest = self.write_doc(to_disk(checkpoint), checkpoint.sequence)
        return checkpoint.model_copy(update={"sha256": digest})

    def write_doc(self, doc: dict, sequence: int) -> str:
        """Write checkpoint ``sequence`` from its file form (``to_disk``'s) as a new file, and
        return its ``sha256``. Raises as ``write`` does for a sequence out of order."""
        expected = self.next_number()
        if sequence != expected:
            raise CheckpointSequenceError(
                f"task {self.task_id[:8]}: checkpoint sequence {sequence} out of order (next is {expected})")
        digest = content_hash(doc, self.task_id, sequence)
        data = encoded({**doc, "sha256": digest})
        if self.committer is not None:
            path = self.path(sequence)
            fd, temp = self.committer.write_temp(path, data)
            self.committer.add_checkpoint(fd, temp, path, on_error=self._forget)
            self._last = sequence
            return digest
        try:
            create_immutable(self.path(sequence), data)
        except FileExistsError:
            # Another writer got there first (the lock should make this impossible).
            self._last = None
            raise CheckpointSequenceError(
                f"task {self.task_id[:8]}: {file_name(sequence)} already exists; "
                "checkpoints are never overwritten") from None
        self._last = sequence
        return digest

    def _forget(self) -> None:
        self._last = None

    def read(self, sequence: int) -> Checkpoint:
        """Load and verify checkpoint ``sequence``; a fresh object every call."""
        path = self.path(sequence)
        where = f"task {self.task_id[:8]} {path.name}"
        try:
            raw = read_bytes(path)
        except FileNotFoundError:
            raise CheckpointNotFoundError(f"{where}: no such checkpoint") from None
        except IsADirectoryError:
            raise CheckpointCorruptError(f"{where}: is a directory, not a checkpoint") from None
        except OSError as exc:
            raise StoreError(f"{where}: cannot read: {exc.strerror}") from None
        try:
            doc = loads(raw)
        except ValueError:
            raise CheckpointCorruptError(f"{where}: not valid JSON (truncated or edited?)") from None
        if not isinstance(doc, dict):
            raise CheckpointCorruptError(f"{where}: not a JSON object")
        stored = doc.pop("sha256", None)
        if stored != content_hash(doc, self.task_id, sequence):
            raise CheckpointCorruptError(f"{where}: content does not match its sha256 (edited or damaged)")
        version = doc.get("schema_version")
        if type(version) is not int or version < 1:
            raise CheckpointCorruptError(f"{where}: schema_version {version!r} is not a version")
        if version > SCHEMA_VERSION:
            raise CheckpointCorruptError(f"{where}: written by a newer magent (schema {version})")
        doc.setdefault("task_id", self.task_id)  # schemas 5-17 left them to the directory and name
        doc.setdefault("sequence", sequence)
        try:
            doc = migrate("checkpoint", doc)
        except ValueError as exc:
            raise CheckpointCorruptError(f"{where}: {exc}") from None
        try:
            cp = Checkpoint.model_validate(doc)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise CheckpointCorruptError(
                f"{where}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
        if cp.task_id != self.task_id:
            raise CheckpointCorruptError(f"{where}: belongs to another task ({cp.task_id[:8]})")
        if cp.sequence != sequence:
            raise CheckpointCorruptError(f"{where}: holds checkpoint {cp.sequence} (renamed or copied?)")
        return cp.model_copy(update={"sha256": stored})

    def quarantine(self, sequence: int) -> Path:
        """Move a corrupt checkpoint aside (``.corrupt``), never deleting it."""
        src = self.path(sequence)
        dst = src.with_name(src.name + ".corrupt")
        n = 1
        while os.path.lexists(dst):
            dst = src.with_name(f"{src.name}.corrupt.{n}")
            n += 1
        os.replace(src, dst)
        fsync_dir(self.dir)
        self._last = None
        return dst

    def latest(self, *, repair: bool) -> tuple[Checkpoint | None, list[str]]:
        """The newest valid checkpoint (None if there is none), falling back past corrupt ones, and
        notes on what was skipped. With ``repair`` the corrupt ones are renamed ``.corrupt``
        (recovery); without, nothing on disk changes (read-only commands)."""
        notes: list[str] = []
        # Checkpoints of a task form a chain by sequence (each one's parent is the one
        # before it), so falling back to the previous readable file is falling back to
        # the parent: a corrupt file's own parent_id cannot be trusted anyway.
        for seq in reversed(self.numbers()):
            try:
                cp = self.read(seq)
            except CheckpointNotFoundError:
                continue  # removed since the listing (retention trimming old ones)
            except CheckpointCorruptError as exc:
                notes.append(str(exc))
                if repair:
                    moved = self.quarantine(seq)
                    notes.append(f"moved aside as {moved.name}")
                continue
            return cp, notes
        return None, notes

    def summaries(self) -> list[CheckpointSummary]:
        out: list[CheckpointSummary] = []
        for seq in self.numbers():
            try:
                cp = self.read(seq)
            except CheckpointNotFoundError:
                continue
            except CheckpointCorruptError:
                out.append(CheckpointSummary(sequence=seq, checkpoint_id="?", created_at=_mtime(self.path(seq)),
                                             position="?", reason="corrupt", awaiting_human=False,
                                             entry_count=0, corrupt=True))
                continue
            out.append(CheckpointSummary(
                sequence=cp.sequence, checkpoint_id=cp.checkpoint_id, created_at=cp.created_at,
                position=cp.position, reason=cp.reason, awaiting_human=cp.awaiting_human,
                entry_count=cp.entry_count))
        return out


def _mtime(path: Path):
    from datetime import datetime, timezone
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
    except OSError:
        return datetime.fromtimestamp(0, timezone.utc)
