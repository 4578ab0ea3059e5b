"""Tool rate limits (seed 004's ``requestRateLimit``): sliding windows of call starts, per tool
and per server. A call reserves a start time that fits every window, or is refused when that is
past ``max_wait_seconds`` (or ``refuse`` and not now). Reserving has no ``await`` between reading
and writing the windows, so concurrent calls can never both take the last slot."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass
from typing import Awaitable, Callable

from magent.models.tools import RateLimit


def monotonic() -> float:
    """The limiter's clock (a module function so tests can replace it)."""
    return time.monotonic()


@dataclass(eq=False)
class Slot:
    """A reserved start: ``wait`` seconds from now (0: go at once)."""

    wait: float
    limits: list[str]
    """Descriptions of the limits that made the call wait (empty when it did not)."""


class RateLimited(Exception):
    """The call may not start within its limit's bound; the message says which limit and when."""


class RateLimiter:
    """The windows of one run's registry, keyed ``tool:server.name`` and ``server:name``."""

    def __init__(self, servers: dict[str, RateLimit] | None = None,
                 clock: Callable[[], float] = monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep):
        self.servers = dict(servers or {})
        """Server name → the limit shared by all its tools."""
        self._starts: dict[str, deque[float]] = {}
        self._clock = clock
        self._sleep = sleep

    def limits_for(self, tool: str, server: str, own: RateLimit | None) -> list[tuple[str, str, RateLimit]]:
        """``(window key, description, limit)`` for each limit a call of ``tool`` is under."""
        out = []
        if own is not None:
            out.append((f"tool:{tool}", f"tool {tool}", own))
        if server in self.servers:
            out.append((f"server:{server}", f"server {server!r}", self.servers[server]))
        return out

    def reserve(self, limits: list[tuple[str, str, RateLimit]]) -> Slot:
        """Book the earliest start that fits every limit, or raise ``RateLimited``."""
        if not limits:
            return Slot(0.0, [])
        now = self._clock()
        start = now
        waiting: list[str] = []
        bound = float("inf")
        for key, label, limit in limits:
            starts = self._starts.setdefault(key, deque())
            while starts and starts[0] <= now - limit.per_seconds:
                starts.popleft()  # out of every future window too
            earliest = starts[-1] if starts else now  # in order: never before a booked start
            if len(starts) >= limit.calls:
                earliest = max(earliest, starts[-limit.calls] + limit.per_seconds)
            if earliest > now:
                waiting.append(f"{label} ({_describe(limit)})")
                bound = min(bound, limit.max_wait_seconds if limit.on_limit == "wait" else 0.0)
            start = max(start, earliest)
        wait = start - now
        if wait > 0:
            if wait > bound:
                raise RateLimited(f"rate limited: {'; '.join(waiting)}; the next call could start in "
                                  f"{_seconds(wait)}" + (f", longer than max_wait_seconds ({bound:g})"
                                                          if bound else ""))
        for key, _, _ in limits:
            self._starts[key].append(start)
        return Slot(wait, waiting)

    async def acquire(self, limits: list[tuple[str, str, RateLimit]]) -> Slot:
        """Reserve a start and wait for it; raises ``RateLimited`` instead of waiting too long."""
        slot = self.reserve(limits)
        if slot.wait > 0:
            await self._sleep(slot.wait)
        return slot


def _describe(limit: RateLimit) -> str:
    return f"{limit.calls} call{'s' if limit.calls != 1 else ''} per {limit.per_seconds:g}s"


def _seconds(value: float) -> str:
    return f"{value:.1f}s" if value < 10 else f"{value:.0f}s"
