"""When an unreachable tool server is tried again: 10 s after the failure, then twice as long
each time, up to 5 minutes; meanwhile its calls answer at once with the cause and the next try."""

from __future__ import annotations

import math
import time

FIRST_RETRY_SECONDS = 10.0
MAX_RETRY_SECONDS = 300.0


def clock() -> float:
    return time.monotonic()


class RetrySchedule:
    """The last failure to reach a server, and when it may be tried again."""

    def __init__(self) -> None:
        self.cause: str | None = None
        """Why the last try failed (None once a try succeeds)."""
        self.failures = 0
        self.due = 0.0
        """``clock()`` time from which the next try may be made."""

    def failed(self, cause: str) -> None:
        self.cause = cause
        self.failures += 1
        self.due = clock() + min(MAX_RETRY_SECONDS, FIRST_RETRY_SECONDS * 2 ** (self.failures - 1))

    def succeeded(self) -> None:
        self.cause, self.failures, self.due = None, 0, 0.0

    def waiting(self) -> bool:
        """A try failed and the next one is not due yet."""
        return self.cause is not None and clock() < self.due

    def note(self) -> str:
        """When the next try is, to follow the cause in a message ('' when nothing failed)."""
        if self.cause is None:
            return ""
        left = self.due - clock()
        if left <= 0:
            return "; it is tried again at the next call"
        return f"; next retry in {math.ceil(left)}s"
