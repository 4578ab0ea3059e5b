"""Task state kept beside the checkpoints as append-only JSON Lines files ("journals").

The built-in key-value store (``kv.jsonl``) and the tool pins (``tool_pins.jsonl``) change as
a run goes, so a checkpoint cannot just point at "the file": a fork from checkpoint N must see
them as they were at N. A journal is only ever appended to, one line per change, so the state at
N is a prefix of it: every checkpoint records each journal's length in bytes
(``Checkpoint.journals``), and a fork copies those prefixes. Checkpoints stay small (a number
per journal) and the disk grows with the changes, never with their product.

Each append is fsynced before it returns: a change is durable before the tool call that made it
reports success, and before any checkpoint that counts it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Iterator

from magent.store.files import JsonlWriter, atomic_write, read_jsonl

JOURNALS = ("kv.jsonl", "tool_pins.jsonl")
"""The journals a task directory may hold."""


class Journal:
    """One journal file: read it whole, append a change."""

    def __init__(self, path: Path):
        self.path = path

    def exists(self) -> bool:
        return self.path.exists()

    def changes(self, problems: list[str] | None = None) -> Iterator[dict[str, Any]]:
        """Every change in order (a torn last line, left by a kill mid-append, is skipped)."""
        return read_jsonl(self.path, problems)

    def append(self, change: dict[str, Any]) -> None:
        """Append ``change``, synced when this returns (from any thread)."""
        global _appends
        try:
            with JsonlWriter(self.path) as writer:  # repairs a torn tail first; syncs on close
                writer.append(change)
        finally:
            with _counting:
                _appends += 1


_appends = 0
"""Appends this process has made to any journal (``Positions`` is checked against it)."""
_counting = threading.Lock()
"""Journals are appended to from worker threads too (``tools/kv.py``): no count is lost."""


class Positions:
    """``positions(task_dir)`` for a run, which asks at every checkpoint: the lengths are read
    again only after this process appended to a journal (the run holds the task's lock: no other
    process writes to its journals; a tool that did would bypass them anyway)."""

    def __init__(self, task_dir: Path):
        self.dir = task_dir
        self._seen = -1
        self._lengths: dict[str, int] = {}

    def __call__(self) -> dict[str, int]:
        if self._seen != _appends:
            seen = _appends
            self._lengths = positions(self.dir)
            self._seen = seen
        return dict(self._lengths)


def positions(task_dir: Path) -> dict[str, int]:
    """The length in bytes of every journal of ``task_dir``, 0 for one not written yet (what a
    checkpoint records: a checkpoint without them was written by an older magent)."""
    out: dict[str, int] = {}
    for name in JOURNALS:
        try:
            out[name] = os.lstat(task_dir / name).st_size
        except FileNotFoundError:
            out[name] = 0
    return out


def copy_prefixes(src_dir: Path, dst_dir: Path, lengths: dict[str, int]) -> None:
    """Write into ``dst_dir`` each journal of ``src_dir`` cut to the length ``lengths`` gives."""
    for name, length in lengths.items():
        if name not in JOURNALS or length <= 0:
            continue  # only names magent writes become paths
        try:
            fd = os.open(src_dir / name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            continue
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(length)
        atomic_write(dst_dir / name, data)
