"""Process groups a task's tools started, so none outlives a ``kill -9`` of magent.

A tool that runs a command (``shell.run``) starts it in a process group of its own and
notes the group here while it runs: one small file per group beside the task's lock
(``locks/TASK_ID.tools/PGID``, holding the leader's start time), runtime state of the run
holding the lock, like its holder note. A command that ends removes its note (and the
folder once empty, so ``locks/`` does not grow). After a ``kill -9`` the note stays, and
the next magent process that opens the task ends what is left of the group: a read
(``trace``, ``tasks show``, ``tasks list``) clearing the dead run's lock, or a write
(``TaskDir.open_for_writing``: resume, chat) before it goes on. The kernel ends the command
itself at once where it can (``PR_SET_PDEATHSIG``, see ``magent.tools.shell``); what the
command started in turn is reached through its group.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

def folder(locks_dir: Path, task_id: str) -> Path:
    return locks_dir / f"{task_id}.tools"


def start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot), None where it is gone or
    ``/proc`` is missing: with the pid, it names one process even after the pid is reused."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def note(locks_dir: Path, task_id: str, pgid: int) -> Path:
    """Note that group ``pgid`` (led by process ``pgid``) runs for the task; returns the note.
    (One process writes a task's notes: the one holding its lock.)"""
    where = folder(locks_dir, task_id)
    where.mkdir(exist_ok=True)
    path = where / str(pgid)
    path.write_text(start_time(pgid) or "")
    return path


def forget(path: Path) -> None:
    """The command of note ``path`` has ended: remove the note, and its folder once empty."""
    path.unlink(missing_ok=True)
    try:
        path.parent.rmdir()
    except OSError:
        pass  # other commands of the task still run


def end_left(locks_dir: Path, task_id: str) -> list[int]:
    """SIGKILL the groups a killed run left behind; returns their ids. A group whose leader still
    runs is ended only when the leader is the process noted (same start time); one whose leader
    is gone, through its members (a pgid is not reused while its group has members)."""
    where = folder(locks_dir, task_id)
    try:
        names = sorted(os.listdir(where))
    except OSError:
        return []
    ended = []
    for name in names:
        path = where / name
        if name.isdigit():
            pgid = int(name)
            try:
                noted = path.read_text().strip()
            except OSError:
                noted = ""
            now = start_time(pgid)
            if now is None or not noted or now == noted:
                try:
                    os.killpg(pgid, signal.SIGKILL)
                    ended.append(pgid)
                except (ProcessLookupError, PermissionError):
                    pass
        forget(path)
    return ended
