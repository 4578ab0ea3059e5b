"""The task index: what ``magent tasks list`` read from each task.json, kept for next time.

``$MAGENT_HOME/cache/tasks.json`` maps a task id to the identity of its task.json when it
was read (inode, size, modification and change times, from one ``stat``) and what the
listing took from it (the document without its config snapshot, and the models that
snapshot names). A listing stats every task.json — that is cheap — and reads and parses only
those whose identity changed; the rows of the others come from the index and are checked by
the same code as a freshly read file (``listing.row_from_doc``).

The index is a cache and nothing else: it is never the only place anything is kept, it is
not synced to disk, and deleting it (or finding it damaged, from another magent, or a link)
only means the next listing reads every task.json again and writes a new one. task.json is
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


def identity(path: str) -> list[int] | None:
    """What tells one state of a regular file from another, or None (missing, a link, not a file)."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


class TaskIndex:
    """The index of one home, loaded once per listing; ``save`` writes it back if it changed.

    On disk: ``{"version", "shapes": [[key, ...], ...], "tasks": {id: [identity, models, shape,
    [value, ...]]}}``. A document is kept as its values in the order of a shared list of keys
    (its shape: every task.json of one magent has the same), which makes the file half the size
    and three times quicker to parse than ten thousand copies of the same keys.
    """

    def __init__(self, root: Path) -> None:
        self.path = index_file(root)
        self.rows: dict[str, Any] = {}
        self.shapes: list[list[str]] = []
        self._shape_of: dict[tuple[str, ...], int] = {}
        self.changed = False
        try:
            doc = loads(read_bytes(self.path))   # never through a link
        except (OSError, ValueError, StoreError):  # missing, damaged, a link, a FIFO: start afresh
            return
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

    def keep_only(self, task_ids: set[str]) -> None:
        """Forget tasks that are gone (removed by retention, by hand, moved away)."""
        gone = [t for t in self.rows if t not in task_ids]
        for task_id in gone:
            del self.rows[task_id]
        self.changed = self.changed or bool(gone)

    def save(self) -> None:
        """Write the index back when anything changed; a home that cannot take it goes without."""
        if not self.changed:
            return
        if not write_cache(self.path, dumps({"version": VERSION, "shapes": self.shapes, "tasks": self.rows})):
            return   # read-only home, full disk, a planted folder: the listing still worked
        self.changed = False
