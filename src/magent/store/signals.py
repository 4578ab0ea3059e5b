"""A task's control channel: signals another process sends a running task, without its lock.

Each signal is one file, ``signals/NNNNNN.json`` in the task's directory, numbered from 1 in the
order sent. A sender writes it whole and synced (temp file, fsync, link into place, fsync of the
folder: ``files.create_immutable``) before it returns, so a signal is durable the moment it is
sent. Senders take turns on ``signals/.send.lock`` (an ``flock`` of their own, never the run's
lock): a number is only ever given once, and never below one already there, so the run, which
reads the folder and applies what is numbered above the last signal it applied (recorded in its
checkpoints), never skips one. Signal files are not removed while the task lives: they are the
record of what was sent.
"""

from __future__ import annotations

import fcntl
import os
import re
from pathlib import Path
from typing import Any

from magent.errors import StoreError
from magent.ids import now
from magent.store.files import (create_immutable, dumps, ensure_dir, loads, open_nofollow, read_bytes,
                                refuse_link)

SIGNALS_DIR = "signals"
SIGNAL_NAME = re.compile(r"^(\d{6})\.json$")
KINDS = ("message", "pause", "cancel")


def folder(task_path: Path) -> Path:
    return task_path / SIGNALS_DIR


def send(task_path: Path, kind: str, text: str | None = None, *, session: str | None = None) -> int:
    """Write signal ``kind`` (``message`` with ``text``, ``pause``, ``cancel``) for the task in
    ``task_path``; durable when this returns. Returns its number."""
    if kind not in KINDS:
        raise ValueError(f"unknown signal kind {kind!r}")
    where = folder(task_path)
    refuse_link(where)
    ensure_dir(where)
    fd = open_nofollow(where / ".send.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        number = last_number(task_path) + 1
        doc: dict[str, Any] = {"signal": number, "kind": kind, "sent_at": now().isoformat(),
                               "sender_pid": os.getpid()}
        if text is not None:
            doc["text"] = text
        if session is not None:
            doc["session"] = session
        create_immutable(where / f"{number:06d}.json", dumps(doc))
        return number
    finally:
        os.close(fd)  # (closing lets the flock go)


def numbers(task_path: Path) -> list[int]:
    """The numbers of the signals sent to the task, in order."""
    where = folder(task_path)
    if os.path.islink(where):
        return []
    try:
        names = os.listdir(where)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(int(m.group(1)) for name in names if (m := SIGNAL_NAME.match(name)))


def last_number(task_path: Path) -> int:
    found = numbers(task_path)
    return found[-1] if found else 0


def pending(task_path: Path, after: int) -> list[dict[str, Any]]:
    """The signals numbered above ``after``, in order. One that cannot be read (a link, a file
    that is not JSON) is returned as ``{"signal": n, "kind": "unreadable", "error": ...}``: it
    still takes its turn, so the run records it as seen and goes on."""
    out: list[dict[str, Any]] = []
    where = folder(task_path)
    for number in numbers(task_path):
        if number <= after:
            continue
        try:
            doc = loads(read_bytes(where / f"{number:06d}.json"))
            if not isinstance(doc, dict) or doc.get("kind") not in KINDS:
                raise ValueError("not a signal")
        except (OSError, ValueError, StoreError) as exc:
            doc = {"kind": "unreadable", "error": str(exc)}
        doc["signal"] = number
        out.append(doc)
    return out
