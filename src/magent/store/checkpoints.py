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
from magent.store.files import create_immutable, dumps, fsync_dir, loads, read_bytes
from magent.store.migrations import migrate

if TYPE_CHECKING:
    from magent.store.commit import Committer

_NAME = re.compile(r"^checkpoint_(\d{3,})\.json$")


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
"""What ``json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` uses,
made once (one checkpoint per model turn is hashed when written and when read)."""


def canonical_hash(doc: dict) -> str:
    return hashlib.sha256(_CANONICAL.encode(doc).encode()).hexdigest()


def content_hash(doc: dict, task_id: str, sequence: int | None = None) -> str:
    """A checkpoint file's ``sha256``: of its document without it, the task id and (given) the
    sequence number included (since schema 5 the id is not stored, since schema 17 the number,
    which the file's name holds; a checkpoint copied into another task's directory or renamed
    must still fail its hash)."""
    extra: dict = {}
    if "task_id" not in doc:
        extra["task_id"] = task_id
    if sequence is not None and "sequence" not in doc:
        extra["sequence"] = sequence
    return canonical_hash({**doc, **extra} if extra else doc)


def to_disk(checkpoint: Checkpoint) -> dict:
    """The checkpoint as its file holds it (without ``sha256``).

    One is written per model turn, so every byte counts a thousand times on a long run: fields at
    their defaults are left out, at any depth (they come back on read); so are ``task_id`` (the
    directory names it) and, since schema 17, ``sequence`` (the file's name has it), both still
    hashed; a journal still empty is not named; and an agent's
    ``spent`` that equals the whole task's (the usual case: one agent) is written ``"task"``.
    Since schema 9 a field is also left out when it is what the checkpoint's other fields tell
    (``from_disk`` puts it back; a value that differs is written, even a default): ``reason``
    when it is ``llm_turn`` (one per model turn), ``state.current_agent`` when it is the
    ``position``, ``turn_index`` when it is ``node_progress.iteration``, and the task's spent
    ``tokens``, ``model_calls`` and ``cost_usd`` when they are the sums of ``usage_by_model``;
    since schema 14, ``node_progress.entered`` and ``started`` when they are true and its
    ``iteration`` is 1 or more (a node past its first turn has been entered and started).
    """
    doc = {"schema_version": checkpoint.schema_version,
           **checkpoint.model_dump(mode="json", exclude={"sha256": True, "task_id": True, "sequence": True,
                                                         "state": {"messages"}}, exclude_defaults=True)}
    if checkpoint.journals is not None:
        doc["journals"] = {name: size for name, size in checkpoint.journals.items() if size}
    spent = doc.get("spent")
    if spent and "task" in spent:
        for key, value in spent.items():
            if key != "task" and value == spent["task"]:
                spent[key] = "task"
    _leave_out_told(doc, checkpoint)
    return doc


_TOLD_FIELDS = ("reason", "state.current_agent", "turn_index", "spent.task.tokens",
                "spent.task.model_calls", "spent.task.cost_usd", "node_progress.entered",
                "node_progress.started")
"""The fields schema 9 leaves out when the checkpoint's other fields tell them (``_told``)."""


def _told(doc: dict) -> dict[str, object]:
    """What a checkpoint's other fields tell of the fields in ``_TOLD_FIELDS``: a model turn's
    reason, the position's agent, the node's iteration as the task's turn count, and usage summed
    over the models as what the task spent."""
    progress = doc.get("node_progress")
    usage = [u for u in (doc.get("usage_by_model") or {}).values() if isinstance(u, dict)]
    cost = 0.0
    for u in usage:
        cost += u.get("cost", 0.0)
    iteration = progress.get("iteration") if isinstance(progress, dict) else None
    turned = True if type(iteration) is int and iteration >= 1 else None  # a node past its first turn
    return {"node_progress.entered": turned, "node_progress.started": turned,
            "reason": "llm_turn", "state.current_agent": doc.get("position"),
            "turn_index": progress.get("iteration", 0) if isinstance(progress, dict) else 0,
            "spent.task.tokens": sum(u.get("input", 0) + u.get("output", 0) for u in usage),
            "spent.task.model_calls": sum(u.get("calls", 0) for u in usage),
            "spent.task.cost_usd": cost}


def _leave_out_told(doc: dict, cp: Checkpoint) -> None:
    """What ``_told`` gives, left out of ``doc`` (the file's form of ``cp``); a value that
    differs is written, even a default. Spelled out field by field: it runs once per model turn,
    and must agree with ``_told`` (tests/test_store_checkpoints.py)."""
    if cp.reason == "llm_turn":
        doc.pop("reason", None)
    else:
        doc["reason"] = cp.reason
    state = doc.get("state")
    if cp.state.current_agent == cp.position:
        if state is not None:
            state.pop("current_agent", None)
            if not state:
                del doc["state"]
    elif state is None:
        doc["state"] = {"current_agent": cp.state.current_agent}
    else:
        state["current_agent"] = cp.state.current_agent
    progress = cp.node_progress
    iteration = progress.get("iteration", 0)
    if cp.turn_index == iteration:
        doc.pop("turn_index", None)
    else:
        doc["turn_index"] = cp.turn_index
    task = cp.spent.get("task")
    spent = doc.get("spent")
    if task is not None and spent is not None and isinstance(spent.get("task"), dict):
        written = spent["task"]
        tokens = calls = 0
        cost = 0.0
        for usage in cp.usage_by_model.values():
            tokens += usage.input + usage.output
            calls += usage.calls
            cost += usage.cost
        for key, value, told in (("tokens", task.tokens, tokens), ("model_calls", task.model_calls, calls),
                                 ("cost_usd", task.cost_usd, cost)):
            if value == told:
                written.pop(key, None)
            else:
                written[key] = value
    if type(iteration) is int and iteration >= 1 and "node_progress" in doc:
        written_progress = doc["node_progress"]
        for key in ("entered", "started"):
            value = progress.get(key)
            if value is True:
                written_progress.pop(key, None)
            else:
                written_progress[key] = value


def _parent(doc: dict, path: str, make: bool) -> tuple[dict | None, str]:
    *heads, last = path.split(".")
    for head in heads:
        nxt = doc.get(head)
        if not isinstance(nxt, dict):
            if not make:
                return None, last
            nxt = doc[head] = {}
        doc = nxt
    return doc, last


def _tell(doc: dict) -> None:
    """Put back what ``_leave_out_told`` left out (schema 9 onwards)."""
    told = _told(doc)
    for path in _TOLD_FIELDS:
        if path.startswith("spent.task.") and not isinstance((doc.get("spent") or {}).get("task"), dict):
            continue
        if path.startswith("node_progress.") and (told[path] is None or not isinstance(doc.get("node_progress"), dict)):
            continue
        holder, key = _parent(doc, path, make=True)
        if holder is not None:
            holder.setdefault(key, told[path])


def from_disk(doc: dict, task_id: str, sequence: int | None = None) -> dict:
    """What ``to_disk`` left out or wrote by reference, put back (a migrated document of any
    version; ``sequence``: the number its file's name holds). Raises ``ValueError`` for a
    reference that names nothing."""
    doc.setdefault("task_id", task_id)
    if sequence is not None:
        doc.setdefault("sequence", sequence)
    _tell(doc)
    spent = doc.get("spent")
    if isinstance(spent, dict):
        for key, value in spent.items():
            if isinstance(value, str):
                if not isinstance(spent.get(value), dict):
                    raise ValueError(f"spent.{key}: refers to {value!r}, which is not there")
                spent[key] = spent[value]
    return doc


def file_name(sequence: int) -> str:
    return f"checkpoint_{sequence:03d}.json"


class CheckpointLog:
    """The checkpoints of one task directory."""

    def __init__(self, task_dir: Path, task_id: str):
        self.dir = task_dir
        self.task_id = task_id
        self._last: int | None = None  # cached by the single writer
        self.committer: Committer | None = None
        """The run's group commit: set, a checkpoint is linked into place once it is durable."""

    def _settle(self) -> None:
        """Link the checkpoints still waiting for their commit, so a read sees them."""
        if self.committer is not None and self.committer.waiting_links():
            self.committer.flush()

    def numbers(self) -> list[int]:
        """Sequence numbers of the checkpoint files present (corrupt ones excluded), ascending."""
        self._settle()
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            return []
        return sorted(int(m.group(1)) for n in names if (m := _NAME.match(n)))

    def ever_written(self) -> bool:
        """True once any checkpoint was written, even if it has since been moved aside as corrupt."""
        try:
            return any(n.startswith("checkpoint_") for n in os.listdir(self.dir))
        except FileNotFoundError:
            return False

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
        """Write ``checkpoint`` as a new file. Its sequence must follow the last one.

        Raises ``CheckpointSequenceError`` (a ``ValueError``) for a sequence out of
        order or a file that already exists: a checkpoint is never overwritten.
        """
        if checkpoint.task_id != self.task_id:
            raise StoreError(f"checkpoint of task {checkpoint.task_id} written to task {self.task_id}")
        expected = self.next_number()
        if checkpoint.sequence != expected:
            raise CheckpointSequenceError(
                f"task {self.task_id[:8]}: checkpoint sequence {checkpoint.sequence} out of order "
                f"(next is {expected})")
        doc = to_disk(checkpoint)
        digest = content_hash(doc, self.task_id, checkpoint.sequence)
        doc["sha256"] = digest
        if self.committer is not None:
            path = self.path(checkpoint.sequence)
            fd, temp = self.committer.write_temp(path, dumps(doc))
            self.committer.add_checkpoint(fd, temp, path, on_error=self._forget)
            self._last = checkpoint.sequence
            return checkpoint.model_copy(update={"sha256": digest})
        try:
            create_immutable(self.path(checkpoint.sequence), dumps(doc))
        except FileExistsError:
            # Another writer got there first (the lock should make this impossible).
            self._last = None
            raise CheckpointSequenceError(
                f"task {self.task_id[:8]}: {file_name(checkpoint.sequence)} already exists; "
                "checkpoints are never overwritten") from None
        self._last = checkpoint.sequence
        return checkpoint.model_copy(update={"sha256": digest})

    def _forget(self) -> None:
        self._last = None

    def read(self, sequence: int) -> Checkpoint:
        """Load and verify checkpoint ``sequence``; a fresh object every call."""
        self._settle()
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
        try:
            doc = from_disk(migrate("checkpoint", doc), self.task_id, sequence)
        except ValueError as exc:
            raise CheckpointCorruptError(f"{where}: {exc}") from None
        try:
            cp = Checkpoint.model_validate(doc)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise CheckpointCorruptError(
                f"{where}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
        if cp.sequence != sequence or cp.task_id != self.task_id:
            raise CheckpointCorruptError(f"{where}: belongs to another task or position")
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
        """The newest valid checkpoint, falling back through parents past corrupt ones.

        With ``repair`` the corrupt ones are renamed ``.corrupt`` (recovery);
        without, nothing on disk changes (read-only commands). Returns the
        checkpoint (None if there is none) and notes on what was skipped.
        """
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
