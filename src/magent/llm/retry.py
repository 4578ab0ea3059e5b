"""The retry policy: how long to wait before the next attempt at a model call.

Exponential backoff with jitter, unless the server said how long (``Retry-After``);
no wait is longer than the policy's ``max_delay``.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

BASE_DELAY = 1.0
"""First backoff delay in seconds; doubled per retry, with jitter."""
MAX_DELAY = 60.0
"""No wait (backoff or ``Retry-After``) is longer than this."""


@dataclass
class RetryPolicy:
    base_delay: float = BASE_DELAY
    max_delay: float = MAX_DELAY

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        backoff = self.base_delay * (2 ** (attempt - 1))
        return min(backoff * random.uniform(0.5, 1.5), self.max_delay)


def retry_after(exc: BaseException) -> float | None:
    """Seconds from a ``Retry-After`` (or ``retry-after-ms``) header the error carries."""
    for headers in (getattr(exc, "litellm_response_headers", None),
                    getattr(getattr(exc, "response", None), "headers", None),
                    getattr(exc, "headers", None)):
        if not headers:
            continue
        try:
            ms = headers.get("retry-after-ms")
            if ms is not None:
                return float(ms) / 1000
            value = headers.get("retry-after") or headers.get("Retry-After")
        except Exception:
            continue
        if value is None:
            continue
        try:
            return float(value)
        except ValueError:
            pass
        try:  # an HTTP date
            return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
        except (TypeError, ValueError):
            continue
    return None
