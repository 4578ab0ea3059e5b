"""The task indexes: what ``magent tasks list`` read from each task.json, kept for next time.

Each maps a task id to the identity of its task.json when it was read (inode, size,
modification and change times, from one ``stat``) and what the listing took from it. A
listing stats every task.json — that is cheap — and reads and parses only those whose
identity changed. There are two:

- ``cache/task-rows.json`` (``RowIndex``): each task's row alone, the fields the table, the
  filters and the sort use. Every listing reads it; it is about half the size of the other.
- ``cache/tasks.json`` (``TaskIndex``): the documents without their config snapshots, and the
  models those name. Only a listing that wants the documents reads it (``--json``,
  ``--search``, ``TaskRow.doc``) and brings it up to date; its rows are checked by the same
  code as a freshly read file (``listing.row_from_doc``).

An index is a cache and nothing else: it is never the only place anything is kept, it is not
synced to disk, and deleting it (or finding it damaged, from another magent, or a link) only
means the next listing reads the task.json files again and writes a new one. task.json is
replaced by rename, so every change gives it a new inode; a file edited in place changes its
size or its times.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from magent.errors import StoreError
from magent.store.files import dumps, loads, read_bytes, write_cache

VERSION = 2
"""Bumped whenever what a row holds changes: an index of another version is rebuilt."""


def index_file(root: Path) -> Path:
    return root / "cache" / "tasks.json"


def stat_of(path: str) -> os.stat_result | None:
    """The ``stat`` of regular file ``path`` (not followed if a link), or None."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def ident_of(st: os.stat_result) -> list[int]:
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


class _Index:
    """What both indexes do alike: entries by task id, read once, written back if changed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: dict[str, Any] = {}
        self.changed = False

    def _read(self) -> Any:
        """The file's JSON, or None: missing, damaged, a link, a FIFO (start afresh)."""
        try:
            return loads(read_bytes(self.path))   # never through a link
        except (OSError, ValueError, StoreError):
            return None

    def keep_only(self, task_ids: set[str]) -> None:
        """Forget tasks that are gone (removed by retention, by hand, moved away)."""
        gone = [t for t in self.rows if t not in task_ids]
        for task_id in gone:
            del self.rows[task_id]
        self.changed = self.changed or bool(gone)

    def _write(self, doc: dict[str, Any]) -> None:
        """Write ``doc`` when anything changed; a home that cannot take it goes without (a
        read-only home, a full disk, a planted folder: the listing still worked)."""
        if self.changed and write_cache(self.path, dumps(doc)):
            self.changed = False


class TaskIndex(_Index):
    """The document index of one home, loaded once per listing; ``save`` writes it back if it changed.

    On disk: ``{"version", "shapes": [[key, ...], ...], "tasks": {id: [identity, models, shape,
    [value, ...]]}}``. A document is kept as its values in the order of a shared list of keys
    (its shape: every task.json of one magent has the same), which makes the file half the size
    and three times quicker to parse than ten thousand copies of the same keys.
    """

    def __init__(self, root: Path) -> None:
        super().__init__(index_file(root))
        self.shapes: list[list[str]] = []
        self._shape_of: dict[tuple[str, ...], int] = {}
        doc = self._read()
        if (isinstance(doc, dict) and doc.get("version") == VERSION and isinstance(doc.get("tasks"), dict)
                and isinstance(doc.get("shapes"), list)
                and all(isinstance(keys, list) and all(isinstance(k, str) for k in keys) for keys in doc["shapes"])):
            self.rows, self.shapes = doc["tasks"], doc["shapes"]
            self._shape_of = {tuple(keys): n for n, keys in enumerate(self.shapes)}

    def get(self, task_id: str, ident: list[int]) -> tuple[dict[str, Any], list[str]] | None:
        """The stored document and models of ``task_id`` if its task.json is still ``ident``."""
        entry = self.rows.get(task_id)
        if not isinstance(entry, list) or len(entry) != 4 or entry[0] != ident:
            return None
        _, models, shape, values = entry
        if (type(shape) is not int or not 0 <= shape < len(self.shapes) or not isinstance(values, list)
                or len(values) != len(self.shapes[shape]) or not isinstance(models, list)):
            return None
        return dict(zip(self.shapes[shape], values)), models

    def put(self, task_id: str, ident: list[int], doc: dict[str, Any], models: frozenset[str]) -> None:
        keys = tuple(doc)
        shape = self._shape_of.get(keys)
        if shape is None:
            shape = self._shape_of[keys] = len(self.shapes)
            self.shapes.append(list(keys))
        self.rows[task_id] = [ident, sorted(models), shape, list(doc.values())]
        self.changed = True

    def save(self) -> None:
        self._write({"version": VERSION, "shapes": self.shapes, "tasks": self.rows})


ROWS_VERSION = 1
"""Bumped whenever what a row holds changes: a row index of another version is rebuilt."""

ROW_FIELDS = 10
"""The values a row index entry holds after the four of its task.json's identity."""


def rows_file(root: Path) -> Path:
    return root / "cache" / "task-rows.json"


class RowIndex(_Index):
    """The row index of one home (``cache/task-rows.json``), loaded once per listing.

    On disk: ``{"version", "tasks": {id: [inode, size, mtime_ns, ctime_ns, status, workflow,
    description, created_at, calls, cost, unpriced, tokens, [model, ...], [tag, ...]]}}``: a
    flat list per task, the values ``listing.row_from_doc`` checked when it made the row. An
    entry is used only while its task.json has the same identity, and only if its values still
    have their types (``listing.row_from_entry``); anything else reads the file again.
    """

    def __init__(self, root: Path) -> None:
        super().__init__(rows_file(root))
        doc = self._read()
        self.usage: dict[str, Any] = {}
        """By task id: the usage counted from the events.jsonl of a task not settled (running, or
        its run died), and where the count stopped (``eventusage.count``)."""
        self._counted: set[str] = set()
        if isinstance(doc, dict) and doc.get("version") == ROWS_VERSION and isinstance(doc.get("tasks"), dict):
            self.rows = doc["tasks"]
            if isinstance(doc.get("usage"), dict):
                self.usage = doc["usage"]

    def get(self, task_id: str, st: os.stat_result) -> list[Any] | None:
        """The entry of ``task_id`` if its task.json is still the file ``st`` describes."""
        entry = self.rows.get(task_id)
        if (type(entry) is list and len(entry) == 4 + ROW_FIELDS and entry[0] == st.st_ino
                and entry[1] == st.st_size and entry[2] == st.st_mtime_ns and entry[3] == st.st_ctime_ns):
            return entry
        return None

    def entry(self, task_id: str, path: str) -> list[Any] | None:
        """``get`` for the task.json at ``path``, stat'ed here (one call a task, for listings)."""
        st = stat_of(path)
        return None if st is None else self.get(task_id, st)

    def put(self, task_id: str, ident: list[int], values: list[Any]) -> None:
        self.rows[task_id] = ident + values
        self.changed = True

    def usage_of(self, tasks_dir: str, task_id: str) -> dict[str, Any]:
        """The usage in the events of ``task_id``, read from where the last listing stopped."""
        from magent.store.eventusage import count

        known = self.usage.get(task_id)
        usage, now = count(f"{tasks_dir}/{task_id}", known)
        self._counted.add(task_id)
        if now != known:
            if now is None:
                self.usage.pop(task_id, None)
            else:
                self.usage[task_id] = now
            self.changed = True
        return usage

    def save(self) -> None:
        # Counts are kept for the tasks this listing counted: a settled task's task.json has its usage.
        for task_id in [t for t in self.usage if t not in self._counted]:
            del self.usage[task_id]
            self.changed = True
        self._write({"version": ROWS_VERSION, "tasks": self.rows, "usage": self.usage})
