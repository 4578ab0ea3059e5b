"""Group commit: a task's writes made durable off the event loop, together, in order.

A run writes as it goes — entries, events and request pieces are appended, a checkpoint is
written to a temp file — and nothing of that waits for the disk. The disk is waited for only
where the run's durability mode says a write must survive a power loss before the run goes on
(``Checkpoints.before_model``, ``before_tool``): then every write not yet synced is fsynced at
once, each file in its own thread (the filesystem folds concurrent fsyncs into one journal
commit), and then the checkpoints written since and the directory. Concurrent sessions of one task
(map items, branches) that reach that point while a commit is running share the next one, and
their event loop keeps running the others while they wait.

What holds:
- the writes are made in the same order as ever (an entry before the checkpoint that points at
  it, a tool call's record before the call), and a checkpoint is linked to its name as soon as
  it is written, so a kill -9 (which loses nothing the process wrote) changes nothing;
- a commit syncs the files appended to, then the checkpoints written since the last one and
  the directory (their names): mode ``sync`` commits before every tool and model call, ``step``
  before every model call (and before a tool that is not idempotent);
- a checkpoint's content and name are synced only once every line appended before it is: its
  commit first syncs each file with lines not known durable, even one a commit under way syncs
  (concurrent fsyncs land in any order, and a power cut can fall between them, so a checkpoint
  synced beside the entries it points at could outlive them);
- after a power loss, a checkpoint written since the last commit may come back damaged: it
  fails its hash, is moved aside, and the run continues from the one before, which a commit
  synced, with the entries a commit synced after it.

A commit is a future settled by its last fsync: no task of its own, and one wake-up of the loop
when the last of its fsyncs is done. That thread then makes the temp file the next checkpoint
will be written to (``write_temp``: creating a file is the costliest call of a step's writes,
and there it costs the run nothing while the run goes on). Each caller of ``durable()`` waits on
a future of its own, which that wake-up settles directly: the caller goes on at the next turn of
the loop. The files appended to and the directory are synced through the descriptors the run
holds (closed only after the commits under way); a checkpoint's descriptor is closed by the
thread of the commit's last fsync. A lone session begins its commit as soon as its step's writes
are done (``begin``), so the fsyncs run while it builds its next request.

In mode ``exit`` nothing is synced until the run stops: checkpoints are linked as soon as they
are written (a kill -9 loses nothing; only a power loss can), and the end of the run syncs
everything the run wrote.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from magent import failpoints
from magent.errors import StoreError
from magent.store.files import create_temp, fill_temp, write_temp

if TYPE_CHECKING:
    from magent.store.files import JsonlWriter

MODES = ("sync", "step", "exit")
"""Durability modes (LangGraph's names): what must be on disk before the run goes on."""
DEFAULT_MODE = "sync"

_FILES_PER_ROUND = 64


def _new_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=8, thread_name_prefix="magent-fsync")


_POOL = _new_pool()
"""Threads that wait for fsyncs, shared by every task of the process (concurrent runs' waits
overlap too)."""


def _pool_after_fork() -> None:
    """A forked child has none of its parent's threads, so it starts a pool of its own."""
    global _POOL
    _POOL = _new_pool()


os.register_at_fork(after_in_child=_pool_after_fork)


class Committer:
    """The durable writes of one task directory (one per run; only the lock holder writes)."""

    def __init__(self, directory: Path, writers: Callable[[], Iterable["JsonlWriter"]], mode: str = DEFAULT_MODE):
        if mode not in MODES:
            raise ValueError(f"durability {mode!r}: expected one of {', '.join(MODES)}")
        self.dir = directory
        self.mode = mode
        self._writers = writers
        self._covered: dict["JsonlWriter", int] = {}
        """Per file, how many of its lines a commit under way (or done) syncs."""
        self._dir_dirty = False
        self._unsynced: list[tuple[Path, int | None]] = []
        """Checkpoints linked but not yet synced, with the descriptor they were written through
        (kept open for the next commit in modes ``sync`` and ``step``, which comes within the
        step; closed in mode ``exit``, which syncs them by name when the run ends)."""
        self._running: list[_Commit] = []
        self._launched: list[_Commit] = []
        """Commits whose threads are still at work (syncing, or making a temp file ready)."""
        self._waiting: list[_Wait] = []
        """Waits for the commit ``durable()`` begins at the loop's next turn (``_begin_next``)."""
        self._begin_soon = False
        self._dir_fd = -1
        """The directory, open for its syncs while the run lasts (closed by ``close``)."""
        self._spares: deque[tuple[int, Path]] = deque()
        """Empty temp files made ready for the next checkpoints, open for writing."""
        self._spare_lock = threading.Lock()
        self._closed = False

    # what the writers hand over
    def add_checkpoint(self, fd: int, temp: Path, final: Path, on_error: Callable[[], None]) -> None:
        """Take a checkpoint whose content was written to ``temp`` (``fd`` still open): it is
        linked to ``final`` now, and its content and name are synced by the next commit."""
        # Linked at once, so a kill -9 never loses a checkpoint the run went on from; its content
        # is synced by the next commit (a power loss before it can leave the name on damaged
        # content: it fails its hash, is moved aside, and the run continues from the one before).
        failpoints.hit("before_link")
        try:
            os.link(temp, final)  # link(2) never replaces an existing name
        except OSError as exc:
            os.close(fd)
            on_error()
            raise StoreError(f"cannot write {final}: {exc.strerror or exc}") from None
        except BaseException:
            os.close(fd)
            raise
        finally:
            temp.unlink(missing_ok=True)
        self._dir_dirty = True
        if self.mode == "exit":  # synced by name at the end: hold no descriptor that long
            os.close(fd)
            self._unsynced.append((final, None))
        else:
            self._unsynced.append((final, fd))

    def write_temp(self, path: Path, data: bytes) -> tuple[int, Path]:
        """``files.write_temp(path, data)``, into a temp file made ready by a commit's thread
        when there is one."""
        try:
            fd, temp = self._spares.popleft()
        except IndexError:
            return write_temp(path, data)
        fill_temp(fd, temp, data)
        return fd, temp

    def _make_spare(self) -> None:
        """(In a commit's thread) make the next checkpoint's temp file ready, if none is."""
        with self._spare_lock:
            if self._spares or self._closed or self.mode == "exit":
                return
            try:
                self._spares.append(create_temp(self.dir / "checkpoint"))
            except OSError:
                pass  # the checkpoint's own write makes its file and reports the error

    def pending(self) -> bool:
        """True while something written is not yet durable."""
        return bool(self._dir_dirty or self._unsynced or any(w.dirty for w in self._writers()))

    def _uncovered(self) -> bool:
        """True when something written is in no commit yet."""
        return bool(self._dir_dirty or self._unsynced
                    or any(w.dirty and w.appended > self._covered.get(w, 0) for w in self._writers()))

    # making it durable
    def _start(self) -> None:
        """Begin a commit of what is in none yet (its fsyncs run while the caller goes on)."""
        if self._uncovered():
            self._snapshot(everything=False).launch()

    def begin(self) -> "tuple[_Commit, ...] | None":
        """Begin a commit of what is written now, without waiting for it: a lone session calls
        this as soon as its step's writes are done, so the fsyncs run while it builds its next
        request (its ``durable()`` then finds them covered and only waits for the commit).

        Returns the commits that cover everything written so far (for ``through``), or None
        when nothing was begun (mode ``exit``, no running loop, or a wait already asked for the
        next commit: it is shared as usual)."""
        if self.mode == "exit" or self._begin_soon or self._closed:
            return None
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return None
        self._start()
        return tuple(self._running)

    async def through(self, begun: "tuple[_Commit, ...]") -> None:
        """Return once the commits ``begin()`` returned have settled: what was written before
        that call is durable. Unlike ``durable()`` it does not wait for what was written since
        (a tool call's intent, which only a call that cannot be repeated needs on disk first)."""
        loop = asyncio.get_running_loop()
        wait = _Wait(loop.create_future())
        for commit in begun:
            if not commit._settled:
                wait.attach(commit)
            elif commit.error is not None:
                raise commit.error
        if wait.left:
            await wait.future

    async def durable(self) -> None:
        """Return once everything written before the call is durable and its checkpoints linked.

        What is in no commit yet goes into a new one, begun at the loop's next turn (the
        sessions that reach a wait in this turn share it): commits overlap (the filesystem folds
        their fsyncs together), and the caller waits for every commit begun up to its own.
        Each caller waits on a future of its own, settled by the commit's last fsync (a caller
        cancelled stops waiting; the commit goes on).
        """
        loop = asyncio.get_running_loop()
        wait = _Wait(loop.create_future())
        if self._begin_soon or self._uncovered():
            self._waiting.append(wait)
            if not self._begin_soon:
                self._begin_soon = True
                loop.call_soon(self._begin_next)
        else:
            for commit in self._running:
                wait.attach(commit)
            if not wait.left:
                return
        await wait.future

    def _begin_next(self) -> None:
        """Begin the commit ``durable`` asked for; each wait is done when every commit under
        way then is."""
        self._begin_soon = False
        waiting, self._waiting = self._waiting, []
        self._start()
        for wait in waiting:
            for commit in self._running:
                wait.attach(commit)
            if not wait.left and not wait.future.done():
                wait.future.set_result(None)

    def _settle_running(self) -> None:
        """Wait (blocking) for the commits under way and their threads, and note what they
        made durable."""
        for commit in [*self._launched, *self._running]:
            commit.finished.wait()
            commit.settle()

    def flush(self) -> None:
        """``durable()`` for code that cannot await (the end of a run, a reader of checkpoints):
        everything written so far, synced and linked, the directory included (the commits
        under way are waited for first)."""
        self._settle_running()
        while self.pending():  # (mode exit: a bounded number of checkpoints a round)
            commit = self._snapshot(everything=True)
            try:
                for stage in commit.stages():
                    _sync_all(stage)
            except BaseException as exc:
                commit.error = exc
                raise
            finally:
                commit.release()
                commit.settle()

    def _snapshot(self, *, everything: bool) -> "_Commit":
        """What one commit syncs: every file with lines no commit syncs yet, every checkpoint
        not yet synced, the directory if a link was made since its last sync (``everything``,
        or with checkpoints to sync: also the lines commits under way sync, which must be
        durable before the checkpoints are). The writers' descriptors and the directory's are
        synced as they are (they are closed only once the commits under way are done:
        ``close``); a checkpoint's is the commit's own, closed by it."""
        commit = _Commit(self)
        everything = everything or bool(self._unsynced)
        for writer in self._writers():
            if writer.dirty and (everything or writer.appended > self._covered.get(writer, 0)):
                commit.marks.append((writer, writer.appended))
                self._covered[writer] = max(self._covered.get(writer, 0), writer.appended)
                commit.add(writer.fd, str(writer.path), own=False)
                if not writer.named:  # a file this run created: its name is synced with its lines
                    commit.named.append(writer)
                    self._dir_dirty = True
        if self._dir_dirty:
            commit.synced_dir = True
            if self._dir_fd < 0:
                self._dir_fd = os.open(self.dir, os.O_RDONLY)
            commit.add(self._dir_fd, str(self.dir), own=False, then=True)
            self._dir_dirty = False
        # Mode exit syncs a long run's checkpoints at its end: a bounded number per round, so
        # the descriptors held open stay few.
        unsynced, self._unsynced = self._unsynced[:_FILES_PER_ROUND], self._unsynced[_FILES_PER_ROUND:]
        for path, fd in unsynced:
            commit.checkpoints.append(path)
            if fd is None:
                try:
                    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
                except OSError:
                    continue  # moved aside since: nothing left to sync
            commit.add(fd, str(path), then=True)
        return commit

    def close(self) -> None:
        """Let go of the descriptors still held for a sync that will not come (a run that
        stopped on an error before its last commit), once the commits under way are done."""
        self._settle_running()
        with self._spare_lock:
            self._closed = True
            while self._spares:
                fd, temp = self._spares.popleft()
                os.close(fd)
                temp.unlink(missing_ok=True)
        held, self._unsynced = self._unsynced, []
        for _, fd in held:
            if fd is not None:
                os.close(fd)
        if self._dir_fd >= 0:
            os.close(self._dir_fd)
            self._dir_fd = -1


class _Commit:
    """One commit: the descriptors it syncs, and what it does once they are synced."""

    def __init__(self, committer: Committer):
        self.committer = committer
        self.fds: list[tuple[int, str]] = []
        """The files appended to, synced first."""
        self.then: list[tuple[int, str]] = []
        """The checkpoints and the directory, synced once the files are."""
        self.owned: list[int] = []
        """The descriptors it closes once synced (the others are the writers' and the directory's)."""
        self.waits: list[_Wait] = []
        self.marks: list[tuple["JsonlWriter", int]] = []
        self.checkpoints: list[Path] = []
        self.named: list["JsonlWriter"] = []
        """Files created by the run whose names the directory's sync in it makes durable."""
        self.synced_dir = False
        self.error: BaseException | None = None
        self.finished = threading.Event()
        """Set by the thread of its last fsync, once every descriptor it owns is closed."""
        self._stages: list[list[tuple[int, str]]] = []
        """The stages ``launch`` has still to begin."""
        self._left = 0
        self._lock = threading.Lock()
        self._settled = False

    def add(self, fd: int, what: str, *, own: bool = True, then: bool = False) -> None:
        (self.then if then else self.fds).append((fd, what))
        if own:
            self.owned.append(fd)

    def stages(self) -> list[list[tuple[int, str]]]:
        """What it syncs, in order: the files, then the checkpoints and the directory."""
        return [stage for stage in (self.fds, self.then) if stage]

    def release(self) -> None:
        for fd in self.owned:
            os.close(fd)

    def launch(self) -> None:
        """Fsync its files at once, one pool thread each; the thread of the last one fsyncs the
        checkpoints and the directory the same way. The last thread to finish closes the
        descriptors and wakes the loop once (rather than once per file: each wake-up is a turn
        of the loop and a pipe write), which settles the commit and its ``future``."""
        self._loop = asyncio.get_running_loop()
        self.committer._running.append(self)
        self.committer._launched.append(self)
        self._stages = self.stages()
        if not self._stages:
            self.finished.set()
            self.committer._launched.remove(self)
            self.settle()
            return
        self._next_stage()

    def _next_stage(self) -> None:
        stage = self._stages.pop(0)
        self._left = len(stage)
        for fd, what in stage:
            _POOL.submit(self._sync, fd, what)

    def _sync(self, fd: int, what: str) -> None:
        """(In a pool thread) one fsync of the commit; the thread of the last one of a stage
        begins the next, or finishes the commit."""
        try:
            _fsync(fd, what)
        except BaseException as exc:  # handed to the waiting task
            self.error = self.error or exc
        with self._lock:
            self._left -= 1
            if self._left:
                return
        if self._stages and self.error is None:  # (a failed one is taken again whole: ``failed``)
            self._next_stage()
            return
        self.release()
        try:
            self._loop.call_soon_threadsafe(self.settle)
        except RuntimeError:  # the loop closed: whoever flushes next settles it
            pass
        if self.error is None:
            self.committer._make_spare()
        self.finished.set()
        self.committer._launched.remove(self)

    def settle(self) -> None:
        """Note what it made durable (or, if an fsync failed, that nothing of it is known to
        be), once; then its waiters go on, with the error if there was one."""
        if self._settled:
            return
        self._settled = True
        if self in self.committer._running:
            self.committer._running.remove(self)
        try:
            self.failed() if self.error is not None else self.done()
        except BaseException as exc:  # (neither should raise; its waiters must hear if one did)
            self.error = self.error or exc
        waits, self.waits = self.waits, []
        for wait in waits:
            wait.settled(self.error)

    def done(self) -> None:
        for writer, count in self.marks:
            writer.synced_up_to(count)
        for writer in self.named:
            writer.named = True

    def failed(self) -> None:
        """Nothing of it is known durable: the next commit takes it all again."""
        committer = self.committer
        for writer, _ in self.marks:
            committer._covered[writer] = writer.synced
        # its checkpoints are synced again by name (its descriptors are closed)
        committer._unsynced[:0] = [(path, None) for path in self.checkpoints]
        if self.synced_dir:
            committer._dir_dirty = True


class _Wait:
    """One caller of ``durable()``: its future is done when every commit it waits for has
    settled (with the first error one of them had). A caller that stops waiting (cancelled)
    leaves the commits alone: the next commit or the run's last flush takes a failed one's
    writes again and reports the error."""

    __slots__ = ("future", "left")

    def __init__(self, future: "asyncio.Future[None]"):
        self.future = future
        self.left = 0

    def attach(self, commit: "_Commit") -> None:
        self.left += 1
        commit.waits.append(self)

    def settled(self, error: BaseException | None) -> None:
        future = self.future
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
            return
        self.left -= 1
        if self.left <= 0:
            future.set_result(None)


def _sync_all(fds: list[tuple[int, str]]) -> None:
    """Fsync every descriptor side by side; once all are done, raise the first error."""
    futures = [_POOL.submit(_fsync, fd, what) for fd, what in fds]
    wait(futures)
    for future in futures:
        if (error := future.exception()) is not None:
            raise error


def _fsync(fd: int, what: str) -> None:
    try:
        os.fsync(fd)
    except OSError as exc:
        raise StoreError(f"cannot make {what} durable: {exc.strerror or exc}") from None
