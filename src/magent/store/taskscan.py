"""Reading what a sweep needs from thousands of task directories, fast and without trusting them.

``read_record`` takes the retention fields of a task.json (parsing only the part before
the bulky ``config_snapshot`` when it can, never following a symlink) and checks each
one; ``tree_size`` counts bytes by lstat, never following links.
"""

from __future__ import annotations

import errno
import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from magent.errors import StoreError
from magent.ids import is_uuid4, parse_time
from magent.models import TaskStatus


@dataclass(frozen=True)
class TaskRecord:
    """The task.json fields retention needs, read without validating the whole document."""

    id: str
    status: TaskStatus
    tags: tuple[str, ...]
    retention_days: int | None
    since: datetime
    """When the retention clock started: ``completed_at``, else ``updated_at``."""
    since_field: str
    forks: frozenset[int]
    """Checkpoint numbers other tasks were forked from."""
    parent: tuple[str, int] | None
    """(task id, checkpoint) this task was forked from."""


def read_record(task_dir: str | Path, task_id: str) -> TaskRecord:
    """Read the retention fields of ``task_dir/task.json``; ``StoreError`` says what is wrong."""
    where = f"task {task_id}: task.json"
    try:
        # O_NOFOLLOW: a task.json planted as a symlink is reported, never read through.
        fd = os.open(os.path.join(task_dir, "task.json"), os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as fh:
            doc = task_fields(fh.read().decode("utf-8"))
    except FileNotFoundError:
        raise StoreError(f"{where} is missing (a half-written task directory?)") from None
    except (OSError, ValueError) as exc:
        reason = ("is a symlink" if getattr(exc, "errno", None) == errno.ELOOP
                  else f"is unreadable ({exc})")
        raise StoreError(f"{where} {reason}") from None

    def bad(what: str) -> StoreError:
        return StoreError(f"{where}: {what}")

    if not isinstance(doc, dict):
        raise bad("not a JSON object")
    if doc.get("id") != task_id:
        raise bad("its id does not match the directory name")
    try:
        status = TaskStatus(doc.get("status"))
    except ValueError:
        raise bad(f"unknown status {doc.get('status')!r}") from None
    tags = doc.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise bad("tags is not a list of strings")
    days = doc.get("retention_days")
    if days is not None and (type(days) is not int or days < 0):
        raise bad(f"retention_days {days!r} is not a whole number of days >= 0")
    since_field = "completed_at" if doc.get("completed_at") else "updated_at"
    since = parse_time(doc.get(since_field))
    if since is None:
        raise bad(f"{since_field} {doc.get(since_field)!r} is not a timestamp")
    forks = doc.get("forks") or []
    if not isinstance(forks, list) or not all(
            isinstance(f, dict) and type(f.get("checkpoint")) is int for f in forks):
        raise bad("forks is not a list of {task_id, checkpoint}")
    parent_id, parent_cp = doc.get("parent_task_id"), doc.get("parent_checkpoint")
    parent = ((parent_id, parent_cp) if isinstance(parent_id, str) and is_uuid4(parent_id)
              and type(parent_cp) is int else None)
    return TaskRecord(id=task_id, status=status, tags=tuple(tags), retention_days=days, since=since,
                      since_field=since_field, forks=frozenset(f["checkpoint"] for f in forks),
                      parent=parent)


_WANTED = frozenset({"id", "status", "tags", "retention_days", "completed_at", "updated_at",
                     "forks", "parent_task_id", "parent_checkpoint"})
_BULK = '"config_snapshot":'


def task_fields(text: str) -> dict[str, Any]:
    """The task.json document, parsing only the part before ``config_snapshot`` (most of the file,
    written after every field retention needs) when it can. Inside a JSON string a quote is
    escaped, so ``"config_snapshot":`` can only be a key; a head that does not parse, or lacks a
    field, costs a full parse. Raises ``ValueError`` if the document is torn or not JSON."""
    body = text.strip()
    if not body.startswith("{"):
        return json.loads(text)  # not an object at all: the caller says so
    if not body.endswith("}"):
        raise ValueError("the JSON object is not closed (truncated)")
    cut = text.find(_BULK)
    if cut > 0:
        head = text[:cut].rstrip()
        if head.endswith(","):
            try:
                doc = json.loads(head[:-1] + "}")
            except ValueError:
                doc = None
            if isinstance(doc, dict) and _WANTED <= doc.keys():
                return doc
    return json.loads(text)


def tree_size(path: str | Path) -> int:
    """Bytes of the files under ``path`` by lstat: symlinks count as themselves, never followed."""
    if os.path.islink(path) or not os.path.isdir(path):
        return lsize(path)
    total, stack = 0, [os.fspath(path)]
    while stack:
        try:
            it = os.scandir(stack.pop())
        except OSError:
            continue
        with it:
            for e in it:
                try:
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                    else:
                        total += e.stat(follow_symlinks=False).st_size
                except OSError:
                    pass
    return total


def lsize(path: str | Path) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0
