"""Group commit: a task's writes made durable off the event loop, together, in order.

A run writes as it goes — entries, events and request pieces are appended, a checkpoint is
written to a temp file — and nothing of that waits for the disk. The disk is waited for only
where the run's durability mode says a write must survive a power loss before the run goes on
(``RunContext.durable``): then every write not yet synced is fsynced at once, each file in its
own thread (the filesystem folds concurrent fsyncs into one journal commit), and the checkpoints
written since are synced with them. Concurrent sessions
of one task (map items, branches) that reach that point while a commit is running share the
next one, and their event loop keeps running the others while they wait.

What holds:
- the writes are made in the same order as ever (an entry before the checkpoint that points at
  it, a tool call's record before the call), and a checkpoint is linked to its name as soon as
  it is written, so a kill -9 (which loses nothing the process wrote) changes nothing;
- a commit syncs the files appended to, the checkpoints written since the last one and the
  directory (their names) together: mode ``sync`` commits before every tool and model call,
  ``step`` before every model call (and before a tool that is not idempotent);
- after a power loss, a checkpoint written since the last commit may come back damaged: it
  fails its hash, is moved aside, and the run continues from the one before, which a commit
  synced, with the entries a commit synced after it.

In mode ``exit`` nothing is synced until the run stops: checkpoints are linked as soon as they
are written (a kill -9 loses nothing; only a power loss can), and the end of the run syncs
everything the run wrote.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import deque
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from magent import failpoints
from magent.errors import StoreError

if TYPE_CHECKING:
    from magent.store.files import JsonlWriter

MODES = ("sync", "step", "exit")
"""Durability modes (LangGraph's names): what must be on disk before the run goes on."""
DEFAULT_MODE = "sync"

_FILES_PER_ROUND = 64
_POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="magent-fsync")
"""Threads that wait for fsyncs, shared by every task of the process (concurrent runs' waits
overlap too)."""


@dataclass(eq=False)
class _Pending:
    """A checkpoint written to its temp file, waiting for its content to be on disk."""

    fd: int
    temp: Path
    final: Path
    on_error: Callable[[], None]
    synced: bool = False
    covered: bool = False
    """A commit under way syncs it."""


class Committer:
    """The durable writes of one task directory (one per run; only the lock holder writes)."""

    def __init__(self, directory: Path, writers: Callable[[], Iterable["JsonlWriter"]], mode: str = DEFAULT_MODE):
        if mode not in MODES:
            raise ValueError(f"durability {mode!r}: expected one of {', '.join(MODES)}")
        self.dir = directory
        self.mode = mode
        self._writers = writers
        self._links: deque[_Pending] = deque()
        self._covered: dict["JsonlWriter", int] = {}
        """Per file, how many of its lines a commit under way (or done) syncs."""
        self._dir_dirty = False
        self._unsynced: list[tuple[Path, int | None]] = []
        """Checkpoints linked but not yet synced, with the descriptor they were written through
        (kept open for the next commit in modes ``sync`` and ``step``, which comes within the
        step; closed in mode ``exit``, which syncs them by name when the run ends)."""
        self._running: list[asyncio.Future[None]] = []

    # what the writers hand over
    def add_checkpoint(self, fd: int, temp: Path, final: Path, on_error: Callable[[], None]) -> None:
        """Take a checkpoint whose content was written to ``temp`` (``fd`` still open): it is
        linked to ``final`` once its content is durable (mode ``exit``: now)."""
        # Linked at once, so a kill -9 never loses a checkpoint the run went on from; its content
        # is synced by the next commit (a power loss before it can leave the name on damaged
        # content: it fails its hash, is moved aside, and the run continues from the one before).
        pending = _Pending(fd, temp, final, on_error, synced=True)
        self._links.append(pending)
        self._link_ready()

    def waiting_links(self) -> bool:
        """True while a checkpoint written is not yet linked to its name."""
        return bool(self._links)

    def pending(self) -> bool:
        """True while something written is not yet durable (or a checkpoint not yet linked)."""
        return bool(self._links or self._dir_dirty or self._unsynced
                    or any(w.dirty for w in self._writers()))

    def _uncovered(self) -> bool:
        """True when something written is in no commit yet."""
        return bool(self._dir_dirty or self._unsynced or any(not p.covered for p in self._links)
                    or any(w.dirty and w.appended > self._covered.get(w, 0) for w in self._writers()))

    # making it durable
    async def durable(self) -> None:
        """Return once everything written before the call is durable and its checkpoints linked.

        What is in no commit yet goes into a new one, started at once: commits overlap (the
        filesystem folds their fsyncs together), and the caller waits for every commit started
        up to its own, so checkpoints are linked in order. A link is made durable by the next
        commit (the directory's sync), which ``sync`` mode makes before any tool runs.
        """
        if self._uncovered():
            self._running.append(asyncio.ensure_future(self._run_commit()))
        if self._running:
            await asyncio.shield(asyncio.gather(*self._running))

    async def _run_commit(self) -> None:
        try:
            commit = self._snapshot(everything=False)
            with commit.settling():
                await _fsync_together(commit.fds)
        finally:
            self._running.remove(asyncio.current_task())  # type: ignore[arg-type]

    def flush(self) -> None:
        """``durable()`` for code that cannot await (the end of a run, a reader of checkpoints):
        everything written so far, synced and linked, the directory included (what a commit
        under way also syncs is synced again here: no wait on it)."""
        while self.pending():  # a round's links dirty the directory: the next round syncs it
            commit = self._snapshot(everything=True)
            with commit.settling():
                list(_POOL.map(lambda job: _fsync(*job), commit.fds))

    def _snapshot(self, *, everything: bool) -> "_Commit":
        """What one commit syncs: every file with lines no commit syncs yet, every checkpoint
        not yet synced, the directory if a link was made since its last sync (``everything``:
        also what commits under way sync). Each gets a descriptor of its own (a duplicate), so
        closing the original while a thread syncs it is harmless."""
        commit = _Commit(self)
        for writer in self._writers():
            if writer.dirty and (everything or writer.appended > self._covered.get(writer, 0)):
                commit.marks.append((writer, writer.appended))
                self._covered[writer] = max(self._covered.get(writer, 0), writer.appended)
                commit.add(os.dup(writer.fd), str(writer.path))
        commit.links = [p for p in self._links if not p.synced and (everything or not p.covered)]
        for pending in commit.links:
            pending.covered = True
            commit.add(os.dup(pending.fd), str(pending.final))
        if self._dir_dirty:
            commit.synced_dir = True
            commit.add(os.open(self.dir, os.O_RDONLY), str(self.dir))
            self._dir_dirty = False
        # Mode exit syncs a long run's checkpoints at its end: a bounded number per round, so
        # the descriptors held open stay few.
        unsynced, self._unsynced = self._unsynced[:_FILES_PER_ROUND], self._unsynced[_FILES_PER_ROUND:]
        for path, fd in unsynced:
            if fd is None:
                try:
                    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
                except OSError:
                    continue  # moved aside since: nothing left to sync
            commit.add(fd, str(path))
        return commit

    def _link_ready(self) -> None:
        """Link, in sequence order, the checkpoints whose content is on disk."""
        while self._links and self._links[0].synced:
            pending = self._links.popleft()
            failpoints.hit("before_link")
            try:
                os.link(pending.temp, pending.final)  # link(2) never replaces an existing name
            except OSError as exc:
                os.close(pending.fd)
                pending.on_error()
                raise StoreError(f"cannot write {pending.final}: {exc.strerror or exc}") from None
            except BaseException:
                os.close(pending.fd)
                raise
            finally:
                pending.temp.unlink(missing_ok=True)
            self._dir_dirty = True
            if self.mode == "exit":  # synced by name at the end: hold no descriptor that long
                os.close(pending.fd)
                self._unsynced.append((pending.final, None))
            else:
                self._unsynced.append((pending.final, pending.fd))

    def close(self) -> None:
        """Let go of the descriptors still held for a sync that will not come (a run that
        stopped on an error before its last commit)."""
        held, self._unsynced = self._unsynced, []
        for _, fd in held:
            if fd is not None:
                os.close(fd)


class _Commit:
    """One commit: the descriptors it syncs, and what it does once they are synced."""

    def __init__(self, committer: Committer):
        self.committer = committer
        self.fds: list[tuple[int, str]] = []
        self.marks: list[tuple["JsonlWriter", int]] = []
        self.links: list[_Pending] = []
        self.synced_dir = False

    def add(self, fd: int, what: str) -> None:
        self.fds.append((fd, what))

    def release(self) -> None:
        for fd, _ in self.fds:
            os.close(fd)

    @contextmanager
    def settling(self) -> Iterator[None]:
        """Around the syncs of this commit: its descriptors are closed whatever happens, then it
        is ``done`` or, if the syncs raised, ``failed`` (and the error goes on)."""
        try:
            try:
                yield
            finally:
                self.release()
        except BaseException:
            self.failed()
            raise
        self.done()

    def done(self) -> None:
        for writer, count in self.marks:
            writer.synced_up_to(count)
        for pending in self.links:
            pending.synced = True
        self.committer._link_ready()

    def failed(self) -> None:
        """Nothing of it is known durable: the next commit takes it all again."""
        committer = self.committer
        for writer, _ in self.marks:
            committer._covered[writer] = writer.synced
        for pending in self.links:
            pending.covered = False
        if self.synced_dir:
            committer._dir_dirty = True


def _fsync_together(fds: list[tuple[int, str]]) -> "asyncio.Future[None]":
    """Fsync ``fds`` at once, one pool thread each; the returned future is done when all are
    (with the first error, if any). The loop is woken once, by the last to finish, rather than
    once per file through a future of its own (each wake-up is a turn of the loop and a pipe
    write: most of what a step's commits cost the process besides the fsyncs themselves)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    if not fds:
        done.set_result(None)
        return done
    left = [len(fds)]
    errors: list[BaseException] = []
    lock = threading.Lock()

    def settle() -> None:
        if not done.done():
            done.set_exception(errors[0]) if errors else done.set_result(None)

    def job(fd: int, what: str) -> None:
        try:
            _fsync(fd, what)
        except BaseException as exc:  # handed to the waiting task
            errors.append(exc)
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            try:
                loop.call_soon_threadsafe(settle)
            except RuntimeError:  # the loop closed while the disk was being waited for
                pass

    for fd, what in fds:
        _POOL.submit(job, fd, what)
    return done


def _fsync(fd: int, what: str) -> None:
    try:
        os.fsync(fd)
    except OSError as exc:
        raise StoreError(f"cannot make {what} durable: {exc.strerror or exc}") from None
