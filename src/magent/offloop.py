"""A run's blocking file work in a worker thread, so the event loop's thread goes on.

Taking the task's lock (its note is written atomically), creating the task directory and
closing a run (its files synced, trace.json written) each wait on several fsyncs, and so does
a change to the built-in key-value store (``tools/kv.py``). Done on the loop's thread they stall
every other task of the process; ``off_loop`` runs them in the default executor instead, one
after the other as before, so the order of what reaches the disk (and where a crash can fall)
is unchanged.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, TypeVar

T = TypeVar("T")


async def off_loop(fn: Callable[..., T], /, *args: Any) -> T:
    """``fn(*args)`` in a worker thread, and its result. A cancellation of the caller waits for
    ``fn`` to finish (what it writes is whole before the run goes on), then goes on itself."""
    job = asyncio.ensure_future(asyncio.to_thread(fn, *args))
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(job)
            break
        except asyncio.CancelledError:
            if job.cancelled():
                raise
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return result
