"""Rewriting a task written by an older schema in the current, plain form (``magent migrate``).

magent reads old files through the named migrations and never rewrites them on its own; this
is the one place that does, when asked, so that ``jq`` and other tools read them without
magent. What each file becomes is what reading it gives, written by the current writer:

- task.json: the task as loaded, written as ``save_task`` writes it (its ``updated_at`` kept:
  migrating is not a change of the task);
- each checkpoint: read (its hash verified) and migrated, written by ``checkpoints.to_disk``
  with a new ``sha256`` under the same name; one that fails its hash is left as it is;
- entries.jsonl and events.jsonl: each line as read (what older lines left out put back),
  written whole, in order; a line that cannot be read is kept byte for byte;
- trace.json, last: the stored trace migrated, or, when readers would not use it (stale or
  unreadable), rebuilt from the events as a run's end would.

A document is current when its ``schema_version`` is this magent's; a line when it reads back
as it is written. Each file is replaced atomically, one after another, under the task's lock,
so a kill leaves every file old or new (both read), and running again finishes the job. The
two logs keep their modification time: trace.json is shown only when it is not older than
events.jsonl, and that comparison must say after a rewrite (or a kill half way) what it said
before. (Rebuilding a trace is the trace builder's, above the store: ``trace.migrating``
plans trace.json and ``api.migrating`` puts the two together.)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from magent import failpoints
from magent.errors import CheckpointCorruptError, CheckpointNotFoundError, StoreError
from magent.schema import SCHEMA_VERSION
from magent.store.events import Unpacker
from magent.store.files import atomic_write, dumps, loads, read_bytes

if TYPE_CHECKING:
    from magent.store.tasks import TaskDir


@dataclass
class Rewrite:
    """One file's new content."""

    path: Path
    data: bytes
    what: str
    """How it is told: ``task.json``, ``checkpoint_003.json``, ``events.jsonl (12 lines)``."""
    mtime_ns: int | None = None
    """The modification time it keeps (the logs'; see the module docstring)."""


@dataclass
class Plan:
    """What migrating one task rewrites, in order, and what it leaves as it is and why."""

    rewrites: list[Rewrite] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    """Lines and checkpoints that cannot be read, left byte for byte (``file:line: why``)."""
    checkpoints: int = 0
    lines: dict[str, int] = field(default_factory=dict)
    """Lines rewritten, by file name."""

    @property
    def current(self) -> bool:
        return not self.rewrites


def plan(task_dir: "TaskDir") -> Plan:
    """What migrating the task in ``task_dir`` would write, but for trace.json (``trace.migrating``
    plans it last); reads only. Raises ``StoreError`` when task.json cannot be read (nothing
    can be said of a task without it)."""
    out = Plan()
    _plan_task(task_dir, out)
    _plan_checkpoints(task_dir, out)
    _plan_lines(task_dir.entries_file, _entry_fixer(), out)
    _plan_lines(task_dir.events_file, _event_fixer(), out)
    return out


def apply(task_dir: "TaskDir", todo: Plan) -> None:
    """Write ``todo``'s files in order, each atomically; the caller holds the task's lock.
    The failpoint ``migrate_between_files`` is after each file."""
    for rewrite in todo.rewrites:
        atomic_write(rewrite.path, rewrite.data, mtime_ns=rewrite.mtime_ns)
        failpoints.hit("migrate_between_files")


def version_of(data: bytes) -> Any:
    """The ``schema_version`` of JSON document ``data`` (None when it has none, or is not JSON)."""
    try:
        doc = loads(data)
    except ValueError:
        return None
    return doc.get("schema_version") if isinstance(doc, dict) else None


def _plan_task(task_dir: "TaskDir", out: Plan) -> None:
    from magent.store.tasks import task_json

    try:
        data = read_bytes(task_dir.task_file)
    except OSError as exc:
        raise StoreError(f"task {task_dir.id}: task.json is unreadable ({exc})") from None
    if version_of(data) != SCHEMA_VERSION:
        out.rewrites.append(Rewrite(task_dir.task_file, task_json(task_dir.load_task()), "task.json"))


def _plan_checkpoints(task_dir: "TaskDir", out: Plan) -> None:
    from magent.store.checkpoints import content_hash, encoded, to_disk

    log = task_dir.checkpoints
    for sequence in log.numbers():
        path = log.path(sequence)
        try:
            if version_of(read_bytes(path)) == SCHEMA_VERSION:
                continue
            checkpoint = log.read(sequence)
        except CheckpointNotFoundError:
            continue    # removed since the listing (a retention trim)
        except (CheckpointCorruptError, OSError) as exc:
            out.kept.append(f"{path.name}: {exc}; left as it is")
            continue
        doc = to_disk(checkpoint)
        data = encoded({**doc, "sha256": content_hash(doc, task_dir.id, sequence)})
        out.rewrites.append(Rewrite(path, data, path.name))
        out.checkpoints += 1


Fixer = Callable[[dict[str, Any]], "bytes | None"]
"""A log's readable line (its JSON object) as the current writer writes it, or None when it
does not fit its schema (kept as it is)."""


def _plan_lines(path: Path, fix: Fixer, out: Plan) -> None:
    """Plan the rewrite of JSON Lines file ``path`` (if it exists) line by line."""
    try:
        data = read_bytes(path)
        mtime_ns = os.stat(path, follow_symlinks=False).st_mtime_ns
    except FileNotFoundError:
        return
    pieces = data.split(b"\n")
    lines, torn = pieces[:-1], pieces[-1]
    written, changed = [], 0
    for number, line in enumerate(lines, 1):
        new = _fixed(line, fix)
        if new is None:
            out.kept.append(f"{path.name}:{number}: cannot be read; kept as it is")
            new = line
        elif new != line:
            changed += 1
        written.append(new)
    if torn:
        out.kept.append(f"{path.name}: a torn last line (a crash mid-write); kept as it is")
    if changed:
        out.lines[path.name] = changed
        out.rewrites.append(Rewrite(path, b"".join(line + b"\n" for line in written) + torn,
                                    f"{path.name} ({changed} line{'s' if changed != 1 else ''})", mtime_ns))


def _fixed(line: bytes, fix: Fixer) -> bytes | None:
    if not line.strip():
        return line
    try:
        doc = loads(line)
    except ValueError:
        return None
    return fix(doc) if isinstance(doc, dict) else None


def _entry_fixer() -> Fixer:
    """Entries as ``EntryLog.load`` reads them (a tool result's call put back from its parent's
    line, as read), written by ``entry_line``."""
    from pydantic import ValidationError

    from magent.models import Entry
    from magent.store.entries import entry_line, restore

    raws: dict[str, dict[str, Any]] = {}

    def fix(raw: dict[str, Any]) -> bytes | None:
        parent = raw.get("parent_id")
        raw = restore(raw, raws.get(parent) if isinstance(parent, str) else None)
        if isinstance(raw.get("id"), str):
            raws[raw["id"]] = raw
        try:
            return entry_line(Entry.model_validate(raw))
        except ValidationError:
            return None

    return fix


_FIRST = ("seq", "ts", "type")
"""The keys an event's line starts with, as emitted."""


def _event_fixer() -> Fixer:
    """Events as their readers read them (``unpack_all`` over the readable lines), written
    whole in the order they are emitted."""
    unpack = Unpacker()

    def fix(doc: dict[str, Any]) -> bytes:
        doc = unpack(doc)   # type: ignore[assignment]
        return dumps({key: doc[key] for key in _FIRST if key in doc} | doc)

    return fix
