"""The threads a group commit's fsyncs run in (``store/commit.py``): each fsync of a commit in a
thread of its own, so the loop that asked goes on."""

from __future__ import annotations

import itertools
import os
import threading
from queue import Empty, SimpleQueue
from typing import Callable

_Job = tuple[Callable[..., None], tuple]


class Threads:
    """Threads that wait for fsyncs (``store/commit.py``'s, shared by every task of the process):
    daemon threads that take ``(function, arguments)`` from one queue, started as
    jobs find none idle (up to ``most``), as a ``ThreadPoolExecutor`` starts its own.

    Not a ``ThreadPoolExecutor``: its ``submit`` builds a future (a condition and its lock) that
    each job then settles, and counts idle threads through a semaphore (Python code and locks on
    both sides of each of a step's six fsyncs); a commit reads none of that (its last fsync
    settles it). Here the idle threads are counted by a second queue of tokens (C code). A job
    reports its own errors (``_Commit._sync``, ``run_all``)."""

    def __init__(self, most: int):
        self._most = most
        self._reset()
        # A forked child has none of its parent's threads (and perhaps a queue whose lock a
        # parent's thread held): it starts afresh.
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._jobs: SimpleQueue[_Job] = SimpleQueue()
        self._idle: SimpleQueue[None] = SimpleQueue()
        """A token per thread that finished a job (it waits for the next one)."""
        self._started = 0

    def submit(self, fn: Callable[..., None], *args: object) -> None:
        self._jobs.put((fn, args))
        try:
            self._idle.get_nowait()
        except Empty:
            if self._started < self._most:
                self._started += 1
                threading.Thread(target=self._work, args=(self._jobs, self._idle),
                                 name=f"magent-fsync-{self._started}", daemon=True).start()

    @staticmethod
    def _work(jobs: "SimpleQueue[_Job]", idle: "SimpleQueue[None]") -> None:
        get = jobs.get
        while True:
            fn, args = get()
            try:
                fn(*args)
            except BaseException:  # (a job reports its own errors) the thread must live on
                pass
            idle.put(None)

    def run_all(self, fn: Callable[..., None], calls: list[tuple]) -> None:
        """``fn(*call)`` for every call, side by side; returns once all are done, raising the
        first error one of them had."""
        errors: list[BaseException] = []
        counter = itertools.count(1)
        done = threading.Event()

        def one(*args: object) -> None:
            try:
                fn(*args)
            except BaseException as exc:
                errors.append(exc)
            if next(counter) == len(calls):
                done.set()

        for call in calls:
            self.submit(one, *call)
        if calls:
            done.wait()
        if errors:
            raise errors[0]
