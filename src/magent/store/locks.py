"""One writer per task: an OS file lock in ``locks/``, released by the kernel if the holder dies.

The lock itself is ``flock(2)`` (via filelock), so a process killed with SIGKILL
releases it without cleanup. Beside it a small JSON file names the holder, so a
second run can say who has the task.

Both files exist only while the lock is held: ``release`` removes them first, so
``locks/`` does not keep a file for every task ever run. That is safe with flock:
a process that opened the file just before it went finds, once it has the lock,
that its file has no name any more (filelock drops such a descriptor and opens the
path afresh), so two holders can never each lock a different file. What a killed
process leaves goes at the task's next release, or as soon as a command that reads the
task (``magent tasks list``, ``tasks show``, ``trace``, ``retention sweep``) finds its lock
file held by nobody: ``clear_dead`` takes the lock and removes the files the same way (and the
temp files the killed run's writes left in its task).
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from magent.errors import StoreError, SymlinkError, TaskLockedError
from magent.ids import now
from magent.store.files import (FILE_MODE, atomic_write, dumps, ensure_dir, link_error, loads, read_bytes,
                                remove_temp_files)

LOCK_HINT = "remove it: lock files are made afresh"

if TYPE_CHECKING:
    from filelock import FileLock


class Lock:
    """A non-blocking exclusive lock named ``name`` under ``locks_dir``."""

    def __init__(self, locks_dir: Path, name: str, what: str):
        self.locks_dir = locks_dir
        self.name = name
        self.what = what
        self.path = locks_dir / f"{name}.lock"
        self.holder_path = locks_dir / f"{name}.holder.json"
        self._lock: "FileLock | None" = None

    def acquire(self) -> "Lock":
        """Take the lock now or raise ``TaskLockedError`` naming the holder; never waits."""
        # Imported here: filelock costs ~0.1 s to import, and read commands only probe (is_free).
        from filelock import FileLock, Timeout

        import time

        ensure_dir(self.locks_dir)
        tries, brief = 0, time.monotonic() + 1.0
        while True:
            # Not thread-local: a run may take its lock in one worker thread and release it in
            # another (magent/offloop.py); the lock is the run's, not a thread's.
            lock = FileLock(self.path, timeout=0, mode=FILE_MODE, thread_local=False, is_singleton=False)
            try:
                lock.acquire()
                break
            except Timeout:
                # A holder that released and removed the file in between is no holder: try
                # again. A holder with no note is there for a moment only (a run that has just
                # taken it, or ``clear_dead`` removing a dead run's files): wait for it, briefly.
                tries += 1
                if is_held(self.path):
                    if os.path.lexists(self.holder_path) or time.monotonic() > brief:
                        raise TaskLockedError(f"{self.what} is in use by {self.describe_holder()}") from None
                    time.sleep(0.02)
                elif tries >= 3:
                    raise TaskLockedError(f"{self.what} is in use by {self.describe_holder()}") from None
            except OSError as exc:  # filelock opens with O_NOFOLLOW: a planted link fails here
                if os.path.islink(self.path):
                    raise link_error(self.path, LOCK_HINT) from None
                raise StoreError(f"cannot lock {self.path}: {exc.strerror or exc}") from None
        try:
            atomic_write(self.holder_path, dumps({
                "pid": os.getpid(), "host": socket.gethostname(),
                "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:200],
                "since": now().isoformat(timespec="seconds"),
            }))
        except BaseException as exc:
            lock.release()
            if isinstance(exc, SymlinkError):
                raise link_error(self.holder_path, LOCK_HINT) from None
            raise
        self._lock = lock
        return self

    def release(self) -> None:
        if self._lock is not None:
            # Both files go while the lock is still held (see the module docstring).
            self.holder_path.unlink(missing_ok=True)
            self.path.unlink(missing_ok=True)
            self._lock.release()
            self._lock = None

    @property
    def held(self) -> bool:
        return self._lock is not None

    def describe_holder(self) -> str:
        try:
            info = loads(read_bytes(self.holder_path))
            return (f"pid {info.get('pid')} on {info.get('host')} "
                    f"(`{info.get('command')}`, since {info.get('since')})")
        except (OSError, ValueError, AttributeError, StoreError):
            return "another process"

    def is_free(self) -> bool:
        """True when no live process holds the lock (probed without writing; see ``is_held``)."""
        return not is_held(self.path)

    def __enter__(self) -> "Lock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def is_held(lock_file: str | Path) -> bool:
    """True when a live process holds the lock in ``lock_file``. A shared, non-blocking ``flock``
    on a read-only descriptor: a probe never creates, truncates or chmods the file, and two
    probes at once never see each other as holders."""
    try:
        # O_NONBLOCK: a FIFO planted as the lock file would otherwise block until a writer came.
        fd = os.open(lock_file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False  # no lock file: nobody ever held it (or it cannot be a lock)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True  # a holder has it exclusively
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def clear_dead(locks_dir: Path, name: str, writes_in: Path | None = None) -> bool:
    """Remove the lock files of ``name`` that a killed holder left (kill -9, a reboot): only when
    the lock file is there and no process holds it, and under the lock itself, as ``release``
    does, so a run that takes the lock at that moment waits a little instead of sharing it.
    With ``writes_in`` (the task's directory), the temp files of the holder's interrupted writes
    go first, under the same lock: no writer can be mid-write there, and they go with the sign
    that a writer was killed; so do the process groups of its tool commands (``toolgroups``).
    Returns True when it removed the lock files; any trouble (a read-only home, a link) leaves them."""
    path = locks_dir / f"{name}.lock"
    if not os.path.lexists(path) or os.path.islink(path) or is_held(path):
        return False
    from filelock import FileLock, Timeout

    lock = FileLock(path, timeout=0, mode=FILE_MODE, is_singleton=False)
    try:
        lock.acquire()
    except (Timeout, OSError):
        return False
    try:
        if writes_in is not None:
            from magent.store import toolgroups

            remove_temp_files(writes_in)
            toolgroups.end_left(locks_dir, name)  # the killed holder's tool commands
        (locks_dir / f"{name}.holder.json").unlink(missing_ok=True)
        path.unlink(missing_ok=True)
    except OSError:
        return False
    finally:
        lock.release()
    return True
