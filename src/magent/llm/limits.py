"""Model-call rate limits shared by many runs in one process (``magent batch --max-rpm/--max-tpm``).

``limited(ModelLimits(rpm=60, tpm=100_000))`` makes every model client the runs inside the
block create wait for room before each call: at most ``rpm`` calls start in any 60 s, and
a call starts only while the tokens of the calls of the last 60 s are under ``tpm``. A
provider's ``429`` with ``Retry-After`` holds every run's next call for that long, not only
the run that got it. Outside such a block nothing changes (no limit, no wrapper).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterator

WINDOW_SECONDS = 60.0
_clock = time.monotonic
_sleep = asyncio.sleep


@dataclass(eq=False)
class ModelLimits:
    rpm: int | None = None
    tpm: int | None = None
    _calls: deque[float] = field(default_factory=deque)
    _tokens: deque[tuple[float, int]] = field(default_factory=deque)
    _hold_until: float = 0.0
    _lock: asyncio.Lock | None = None
    waited: float = 0.0
    """Seconds calls spent waiting for room, all together (for the batch's summary)."""

    async def acquire(self) -> None:
        """Wait until a call may start, then count it."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # calls start in the order they asked
            while True:
                delay = self._delay(_clock())
                if delay <= 0:
                    break
                self.waited += delay
                await _sleep(delay)
            self._calls.append(_clock())

    def _delay(self, at: float) -> float:
        cutoff = at - WINDOW_SECONDS
        while self._calls and self._calls[0] <= cutoff:
            self._calls.popleft()
        while self._tokens and self._tokens[0][0] <= cutoff:
            self._tokens.popleft()
        waits = [self._hold_until - at]
        if self.rpm is not None and len(self._calls) >= self.rpm:
            waits.append(self._calls[len(self._calls) - self.rpm] + WINDOW_SECONDS - at)
        if self.tpm is not None and self._tokens and sum(n for _, n in self._tokens) >= self.tpm:
            # wait for enough of the oldest calls to leave the window
            total = sum(n for _, n in self._tokens)
            for stamp, n in self._tokens:
                total -= n
                if total < self.tpm:
                    waits.append(stamp + WINDOW_SECONDS - at)
                    break
        return max(waits)

    def used(self, tokens: int) -> None:
        if tokens > 0:
            self._tokens.append((_clock(), tokens))

    def hold(self, seconds: float) -> None:
        """The provider asked every caller to wait (``Retry-After``)."""
        self._hold_until = max(self._hold_until, _clock() + seconds)


_current: contextvars.ContextVar[ModelLimits | None] = contextvars.ContextVar("magent_model_limits",
                                                                             default=None)


@contextlib.contextmanager
def limited(limits: ModelLimits | None) -> Iterator[None]:
    token = _current.set(limits)
    try:
        yield
    finally:
        _current.reset(token)


def throttled(client: Any) -> Any:
    """``client`` behind the limits in force here, or ``client`` itself when there are none."""
    limits = _current.get()
    if limits is None or (limits.rpm is None and limits.tpm is None):
        return client
    return _Throttled(client, limits)


class _Throttled:
    def __init__(self, inner: Any, limits: ModelLimits):
        self._inner = inner
        self._limits = limits

    async def complete(self, request: Any, on_token: Any = None, *, on_attempt: Any = None) -> Any:
        limits = self._limits

        def attempt(info: Any) -> None:
            if info.error and info.retry_in and "429" in info.error:
                limits.hold(info.retry_in)
            if on_attempt is not None:
                on_attempt(info)

        await limits.acquire()
        response = await self._inner.complete(request, on_token, on_attempt=attempt)
        limits.used(int(response.tokens_in or 0) + int(response.tokens_out or 0))
        return response

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
