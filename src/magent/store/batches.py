"""Batch records on disk: ``$MAGENT_HOME/batches/{batch_id}/``.

- ``batch.json``: what the batch is (target, the inputs file and its hash, the options);
  written once with ``atomic_write``, and again (atomically) when the options of a resume
  change it.
- ``rows.jsonl``: the row → task map, one line ``{"row": N, "task_id": ...}`` appended as
  each row's task comes into existence, fsynced before the row runs further. Whoever runs
  the row appends it (the batch process, or a Ray worker on another machine), each append
  under an exclusive ``flock`` on the file so lines from several writers never interleave.
- ``run.lock``: held by the process driving the batch, so two drivers never run one batch.

A row's status is never stored here: it is its task's status (``task.json``), so a row
answered with an ordinary ``magent resume`` is seen at once by ``magent batch show``.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from magent import paths
from magent.errors import BatchNotFoundError as BatchNotFoundError
from magent.errors import InvalidTaskIdError, StoreError
from magent.ids import is_uuid4
from magent.store.files import (DIR_MODE, atomic_write, dumps, ensure_dir, fsync_dir, open_nofollow,
                                read_json, read_jsonl, refuse_link)
from magent.store.locks import Lock

BATCH_TAG = "batch:"
"""Every task of a batch carries the tag ``batch:{batch_id}`` (``magent tasks list --tag``)."""


def batches_dir(root: Path | None = None) -> Path:
    return (root or paths.home()) / "batches"


def tag_of(batch_id: str) -> str:
    return f"{BATCH_TAG}{batch_id}"


@dataclass
class BatchDir:
    """One batch's directory."""

    path: Path

    @property
    def id(self) -> str:
        return self.path.name

    @property
    def record_file(self) -> Path:
        return self.path / "batch.json"

    @property
    def rows_file(self) -> Path:
        return self.path / "rows.jsonl"

    def lock(self) -> Lock:
        """The driver's lock (``TaskLockedError`` naming the holder when another process runs it)."""
        return Lock(self.path, "run", f"batch {self.id[:8]}")

    def read(self) -> dict[str, Any]:
        try:
            doc = read_json(self.record_file)
        except FileNotFoundError:
            raise BatchNotFoundError(f"batch {self.id[:8]} has no batch.json (it was not fully created)") from None
        except ValueError as exc:
            raise StoreError(f"{self.record_file} is damaged: {exc}") from None
        if not isinstance(doc, dict):
            raise StoreError(f"{self.record_file} is damaged: not a JSON object")
        return doc

    def write(self, doc: dict[str, Any]) -> None:
        atomic_write(self.record_file, dumps(doc, indent=2))

    def note_start(self, row: int, task_id: str) -> None:
        """Append ``row → task_id`` durably (fsynced) before the row's run goes any further. The
        append that creates the file syncs the batch's directory too: until then a power loss
        may forget the file's name, and with it which rows ran."""
        line = dumps({"row": row, "task_id": task_id}) + b"\n"
        creating = not self.rows_file.exists()
        try:
            fd = open_nofollow(self.rows_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        except OSError as exc:
            raise StoreError(f"cannot append to {self.rows_file}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)  # (closing releases the flock)
        if creating:
            fsync_dir(self.rows_file.parent)

    def row_tasks(self) -> dict[int, str]:
        """Row number → task id, as appended (a torn last line from a kill is ignored)."""
        out: dict[int, str] = {}
        for item in read_jsonl(self.rows_file):
            row, task_id = item.get("row"), item.get("task_id")
            if isinstance(row, int) and isinstance(task_id, str) and is_uuid4(task_id):
                out.setdefault(row, task_id)  # the first task of a row is its task
        return out


def create(batch_id: str, doc: dict[str, Any], files: dict[str, bytes] | None = None) -> BatchDir:
    """A new batch directory with its ``batch.json`` and ``files`` (written before the directory
    gets its name, so a listed batch always has them)."""
    root = ensure_dir(batches_dir())
    final = root / batch_id
    staging = root / f".new-{batch_id}"
    staging.mkdir(mode=DIR_MODE)
    for name, data in (files or {}).items():
        atomic_write(staging / name, data)
    BatchDir(staging).write(doc)
    os.rename(staging, final)
    fsync_dir(root)
    return BatchDir(final)


def all_batches() -> Iterator[BatchDir]:
    root = batches_dir()
    try:
        names = sorted(os.listdir(root))
    except FileNotFoundError:
        return
    for name in names:
        path = root / name
        if is_uuid4(name) and not path.is_symlink() and path.is_dir():
            yield BatchDir(path)


def find(text: str) -> BatchDir:
    """The batch ``text`` names: its id or a unique prefix of it."""
    text = text.strip().lower()
    if not text or len(text) > 36 or any(c not in "0123456789abcdef-" for c in text):
        raise InvalidTaskIdError(f"{text!r} is not a batch id or id prefix")
    matches = [b for b in all_batches() if b.id.startswith(text)]
    if not matches:
        raise BatchNotFoundError(f"no batch matches {text!r} (see `magent batch list`)")
    if len(matches) > 1:
        raise BatchNotFoundError(f"{text!r} matches {len(matches)} batches; give more of the id")
    refuse_link(matches[0].record_file)
    return matches[0]


def full_tag(tag: str) -> str:
    """``batch:PREFIX`` as ``batch:ID`` when PREFIX begins exactly one batch's id (every batch
    command takes a prefix, so a listing by tag does too); any other tag as given. A prefix of
    several batches is a ``BatchNotFoundError`` that says so."""
    kind, _, text = tag.partition(":")
    text = text.strip().lower()
    if kind != "batch" or not text or len(text) >= 36 or any(c not in "0123456789abcdef-" for c in text):
        return tag
    matches = [b.id for b in all_batches() if b.id.startswith(text)]
    if len(matches) > 1:
        raise BatchNotFoundError(f"--tag {tag}: {text!r} begins {len(matches)} batch ids; give more of it")
    return f"batch:{matches[0]}" if matches else tag


def prune() -> list[str]:
    """Remove the records of batches none of whose tasks exist any more (after a retention
    sweep removed them), unless a process is driving the batch. Returns the removed ids."""
    from magent.store.locks import is_held

    try:
        existing = set(os.listdir(paths.tasks_dir()))
    except FileNotFoundError:
        existing = set()
    removed = []
    for batch in all_batches():
        tasks = set(batch.row_tasks().values())
        if not tasks or tasks & existing or is_held(batch.path / "run.lock"):
            continue
        trash = batch.path.with_name(f".trash-{batch.id}")
        try:
            os.rename(batch.path, trash)
        except OSError:
            continue
        shutil.rmtree(trash, ignore_errors=True)
        removed.append(batch.id)
    return removed
