"""The home directory and the task directories in it.

``Store`` owns the home (``tasks/``, ``locks/``, ``config/``...) and finds
tasks; ``TaskDir`` owns one task's files. Every task id that reaches a path is
validated first, so nothing read from the command line, a file or a listing can
point outside the root.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import stat
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from magent import paths
from magent.errors import (
    AmbiguousTaskIdError, InvalidTaskIdError, StoreError, TaskNotFoundError,
)
from magent.ids import is_uuid4, now
from magent.schema import check_readable
from magent.store.events import unpack_all
from magent.store.files import (
    DIR_MODE, LINK_HINT, JsonlWriter, atomic_write, dumps, ensure_dir, fsync_dir, link_error, read_json,
    read_jsonl, remove_temp_files,
)
from magent.store.locks import Lock
from magent.store.taskdirs import DIR_HINT, linked_task_ids, task_ids
from magent.store.requests import RequestLog

# The models (and the checkpoint and entry logs, which build them) are imported where they are
# used: ``magent trace`` opens a task to read its trace.json and lock, and builds none of them.
if TYPE_CHECKING:
    from magent.models import Checkpoint, Event, State, Task
    from magent.store.checkpoints import CheckpointLog
    from magent.store.commit import Committer
    from magent.store.entries import EntryLog

_PREFIX = re.compile(r"^[0-9a-f-]{1,36}$")


def task_json(task: Task) -> bytes:
    """task.json's bytes for ``task``, as written."""
    return dumps(task.model_dump(mode="json"), indent=2)


class TaskDir:
    """The files of one task: ``task.json``, checkpoints, entries, events, trace, artifacts."""

    def __init__(self, store: "Store", task_id: str):
        if not is_uuid4(task_id):
            raise InvalidTaskIdError(f"{task_id!r} is not a task id")
        self.store = store
        self.id = task_id
        self.path = store.tasks_dir / task_id
        self.requests = RequestLog(self.path / "requests.jsonl")
        self._events: JsonlWriter | None = None
        self.committer: "Committer | None" = None
        """Set for a run (``commit_with``): how its writes become durable."""

    @cached_property
    def checkpoints(self) -> "CheckpointLog":
        from magent.store.checkpoints import CheckpointLog

        return CheckpointLog(self.path, self.id)

    @cached_property
    def entries(self) -> "EntryLog":
        from magent.store.entries import EntryLog

        return EntryLog(self.entries_file)

    @property
    def entries_file(self) -> Path:
        return self.path / "entries.jsonl"

    def commit_with(self, mode: str) -> "Committer":
        """Make this task's writes durable by group commit, in durability ``mode``."""
        from magent.store.commit import Committer  # asyncio and threads: only for a run

        self.committer = Committer(self.path, self.writers, mode)
        self.checkpoints.committer = self.committer
        return self.committer

    def writers(self) -> list[JsonlWriter]:
        """The JSON Lines files this task has open for appending."""
        return [w for w in (self.entries.writer, self.requests.writer, self._events) if w is not None]

    # task.json
    @property
    def task_file(self) -> Path:
        return self.path / "task.json"

    def load_task(self) -> Task:
        from pydantic import ValidationError

        from magent.models import Task
        from magent.store.migrations import migrate

        try:
            doc = read_json(self.task_file)
        except FileNotFoundError:
            raise TaskNotFoundError(f"task {self.id}: task.json is missing") from None
        except (ValueError, OSError) as exc:
            raise StoreError(f"task {self.id}: task.json is unreadable ({exc})") from None
        check_readable(self.id, doc)
        try:
            task = Task.model_validate(migrate("task", doc))
        except ValueError as exc:
            if not isinstance(exc, ValidationError):
                raise StoreError(f"task {self.id}: task.json: {exc}") from None
            err = exc.errors()[0]
            raise StoreError(f"task {self.id}: task.json: {'.'.join(map(str, err['loc']))}: "
                             f"{err['msg']}") from None
        if task.id != self.id:
            # A copied or hand-edited directory: trusting either id would misattribute it.
            raise StoreError(f"task {self.id}: task.json names another task ({task.id})")
        return task

    def shown_task(self) -> Task:
        """The task as commands show it: a pending or running one no process holds is interrupted."""
        from magent.models import TaskStatus, Usage
        from magent.store.eventusage import events_usage
        from magent.vocabulary import UNSETTLED

        task = self.load_task()
        if task.status.value not in UNSETTLED:
            return task
        # Its task.json is brought up to date only when the run stops: count from the events,
        # as the trace does.
        usage = Usage.model_validate(events_usage(self.path))
        if not self.lock().is_free():
            return task.model_copy(update={"usage": usage})
        self.clear_dead_lock()
        return task.model_copy(update={"status": TaskStatus.interrupted, "usage": usage})

    def save_task(self, task: Task) -> Task:
        """Write ``task`` as task.json (atomically) with ``updated_at`` set to now; returns it."""
        task = task.model_copy(update={"updated_at": now()})
        atomic_write(self.task_file, task_json(task))
        return task

    def full_state(self, checkpoint: Checkpoint) -> State:
        """The checkpoint's State with ``messages`` rebuilt from the entry tree."""
        from magent.store.entries import to_message

        messages = [to_message(e) for e in self.entries.path_to(checkpoint.leaf_entry_id)]
        return checkpoint.state.model_copy(update={"messages": messages})

    # events
    @property
    def events_file(self) -> Path:
        return self.path / "events.jsonl"

    def append_event(self, event: Event) -> None:
        self.append_event_doc(event.model_dump(mode="json", exclude_none=True))

    def append_event_doc(self, doc: dict[str, Any]) -> None:
        """Append an event already in its JSON form (what ``Event.model_dump(mode="json",
        exclude_none=True)`` gives), so the run's hot path serialises it once."""
        if self._events is None:
            self._events = JsonlWriter(self.events_file)
        self._events.append(doc)

    def append_event_line(self, line: bytes) -> None:
        """Append an event already turned into its line of JSON (without the newline)."""
        if self._events is None:
            self._events = JsonlWriter(self.events_file)
        self._events.append_line(line)

    def sync(self) -> None:
        """Make appended entries, request pieces and events durable (with a run's group commit:
        everything it wrote, checkpoints linked)."""
        if self.committer is not None:
            self.committer.flush()
            return
        self.entries.sync()
        self.requests.sync()
        if self._events is not None:
            self._events.sync()

    def read_events(self, problems: list[str] | None = None) -> list[Event]:
        from pydantic import ValidationError

        from magent.models import Event

        out: list[Event] = []
        for raw in unpack_all(read_jsonl(self.events_file, problems)):
            try:
                out.append(Event.model_validate(raw))
            except ValidationError:
                if problems is not None:
                    problems.append("events.jsonl: an event does not fit the schema, skipped")
        return out

    # trace
    @property
    def trace_file(self) -> Path:
        return self.path / "trace.json"

    @property
    def artifacts_dir(self) -> Path:
        return self.path / "artifacts"

    def lock(self) -> Lock:
        return Lock(self.store.locks_dir, self.id, f"task {self.id}")

    def clear_dead_lock(self) -> bool:
        """Remove the lock files a killed run left, and the temp files of its writes, if no process
        holds the lock (see ``clear_dead``)."""
        from magent.store.locks import clear_dead

        return clear_dead(self.store.locks_dir, self.id, writes_in=self.path)

    def open_for_writing(self) -> Lock:
        """Take the task's lock (or raise ``TaskLockedError``), remove the temp files of writes
        that were killed and end the tool commands a killed run left running: under the lock no
        other writer can be mid-write, and no other run owns those commands."""
        from magent.store import toolgroups

        lock = self.lock().acquire()
        try:
            remove_temp_files(self.path)
            toolgroups.end_left(self.store.locks_dir, self.id)  # a killed run's commands: no process of ours holds them
        except BaseException:
            lock.release()
            raise
        return lock

    def refuse_links(self) -> None:
        """Raise ``SymlinkError`` (``StoreError`` for a FIFO, socket or device) naming the first entry
        of the task directory or its ``artifacts/`` that is not a plain file or directory. Checked
        when a command opens a task, before anything is read; ``O_NOFOLLOW`` opens still guard
        against a link planted while the task is open."""
        for folder in (self.path, self.artifacts_dir):
            try:
                it = os.scandir(folder)
            except (FileNotFoundError, NotADirectoryError):
                continue
            with it:
                for entry in it:
                    if entry.is_symlink():
                        raise link_error(entry.path)
                    if not (entry.is_file(follow_symlinks=False) or entry.is_dir(follow_symlinks=False)):
                        raise StoreError(f"{entry.path} is not a regular file; magent does not read "
                                         f"it ({LINK_HINT})")

    def close(self) -> None:
        if self.committer is not None:
            self.committer.close()
        if "entries" in self.__dict__:   # (made on first use)
            self.entries.close()
        self.requests.close()
        if self._events is not None:
            self._events.close()
            self._events = None


class Store:
    """The home directory: ``$MAGENT_HOME`` or ``~/.multi-agent``."""

    def __init__(self, root: Path | None = None):
        self.root = root or paths.home()
        self.tasks_dir = paths.tasks_dir(self.root)
        self.locks_dir = paths.locks_dir(self.root)

    def ensure(self) -> "Store":
        """Create the home layout (directories 0700) if missing."""
        if self.root.exists() and not self.root.is_dir():
            raise StoreError(f"MAGENT_HOME {self.root} is not a directory")
        for d in (self.root, self.tasks_dir, self.locks_dir, paths.config_dir(self.root),
                  paths.agents_dir(self.root), paths.workflows_dir(self.root)):
            ensure_dir(d)
        if not os.access(self.root, os.W_OK | os.X_OK):
            raise StoreError(f"MAGENT_HOME {self.root} is not writable")
        return self

    def create_task(self, task: Task, fill: Callable[[Path], None] | None = None) -> TaskDir:
        """Make the task's directory with its first ``task.json``, complete or not at all: built under
        a hidden name (never a task id, so listings skip it) and renamed into place. ``fill(staging)``
        writes more files first (a fork's history and checkpoint 0: a fork never lacks them)."""
        self.ensure()
        task_dir = TaskDir(self, task.id)
        if os.path.lexists(task_dir.path):
            raise StoreError(f"task {task.id} already exists")
        staging = self.tasks_dir / f".new-{task.id}-{secrets.token_hex(4)}"
        try:
            staging.mkdir(mode=DIR_MODE)
            try:
                atomic_write(staging / "task.json", task_json(task))
                if fill is not None:
                    fill(staging)
                os.rename(staging, task_dir.path)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)  # our own staging dir; no symlinks in it
                raise
        except OSError as exc:
            reason = "permission denied" if isinstance(exc, PermissionError) else exc.strerror
            raise StoreError(f"cannot create task {task.id} in {self.tasks_dir}: {reason}") from None
        fsync_dir(self.tasks_dir)
        return task_dir

    def task_ids(self) -> list[str]:
        """Ids of task directories; names that are not UUID v4 are ignored, symlinks too."""
        return task_ids(self.tasks_dir)

    def resolve(self, text: str) -> str:
        """A full task id from an id or unique prefix. Raises on invalid, unknown or ambiguous."""
        text = text.strip().lower()
        if not _PREFIX.fullmatch(text):
            raise InvalidTaskIdError(f"{text!r} is not a task id or id prefix "
                                     "(ids are UUIDs: hex digits and dashes)")
        if is_uuid4(text):
            if self._is_task_dir(text):
                return text
            if os.path.islink(self.tasks_dir / text):  # never followed: say so rather than "no task"
                raise link_error(self.tasks_dir / text, DIR_HINT)
            raise TaskNotFoundError(f"no task {text} in {self.tasks_dir}")
        matches = sorted(i for i in self.task_ids() if i.startswith(text))
        if not matches:
            linked = [m for m in linked_task_ids(self.tasks_dir) if m.startswith(text)]
            if len(linked) == 1:
                raise link_error(self.tasks_dir / linked[0], DIR_HINT)
            raise TaskNotFoundError(f"no task matches {text!r} in {self.tasks_dir}")
        if len(matches) > 1:
            shown = ", ".join(m[:13] for m in matches[:8])
            more = f" and {len(matches) - 8} more" if len(matches) > 8 else ""
            raise AmbiguousTaskIdError(f"{text!r} matches {len(matches)} tasks: {shown}{more}; "
                                       "give more characters")
        return matches[0]

    def _is_task_dir(self, task_id: str) -> bool:
        """A real directory (not a symlink: nothing read through one can leave the root)."""
        try:
            return stat.S_ISDIR(os.lstat(self.tasks_dir / task_id).st_mode)
        except NotADirectoryError:
            raise StoreError(f"{self.tasks_dir} is not a directory (is MAGENT_HOME right?)") from None
        except OSError:
            return False

    def task(self, text: str) -> TaskDir:
        """The task ``text`` names (id or unique prefix), checked for planted links first."""
        task_dir = TaskDir(self, self.resolve(text))
        task_dir.refuse_links()
        return task_dir

    def lock(self, name: str, what: str) -> Lock:
        return Lock(self.locks_dir, name, what)
