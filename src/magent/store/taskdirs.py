"""The task directories under the home, found by name: what resolving an id prefix and the
listing both read (nothing of the listing's rows, filters or caches is loaded for it)."""

from __future__ import annotations

import os
from pathlib import Path

from magent.errors import StoreError
from magent.ids import is_uuid4
from magent.store.files import link_error

DIR_HINT = "move the real directory back in its place, or remove the link"


def task_ids(tasks_dir: Path, problems: list[str] | None = None) -> list[str]:
    """Ids of the task directories in ``tasks_dir``: UUID v4 names of real directories only, so no
    name read from the listing leads outside the root; a task's name that is a link goes to ``problems``."""
    found = []
    for e in _task_entries(tasks_dir):
        if e.is_dir(follow_symlinks=False):
            found.append(e.name)
        elif problems is not None and e.is_symlink():
            problems.append(str(link_error(e.path, DIR_HINT)))
    return found


def linked_task_ids(tasks_dir: Path) -> list[str]:
    """Task ids whose directory is a symbolic link: never opened, only named in errors."""
    return [e.name for e in _task_entries(tasks_dir) if e.is_symlink()]


def _task_entries(tasks_dir: Path) -> list[os.DirEntry]:
    try:
        it = os.scandir(tasks_dir)
    except FileNotFoundError:
        return []
    except NotADirectoryError:
        raise StoreError(f"{tasks_dir} is not a directory (is MAGENT_HOME right?)") from None
    except OSError as exc:
        raise StoreError(f"cannot list {tasks_dir}: {exc.strerror}") from None
    with it:
        return [e for e in it if is_uuid4(e.name)]
