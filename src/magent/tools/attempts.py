"""Making a tool call again when it timed out or could not run: which calls, how often, the record.

Every attempt lies between the call's intent and its result on disk, so the crash-recovery rule
(an intent without a result is re-run only for an idempotent tool) is untouched. An idempotent or
read-only tool is retried by default (its server's policy, else ``DEFAULT_RETRY``); any other only
when its own config gives it a ``retry``."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from magent.models import Tool
from magent.models.tools import RetryPolicy
from magent.tools.base import ToolResult

DEFAULT_RETRY = RetryPolicy.model_construct(max_attempts=3, backoff=1.0, on=["timeout", "error"])


async def sleep(seconds: float) -> None:
    """The wait between attempts (a module function, so tests can make it instant)."""
    await asyncio.sleep(seconds)


def policy_for(tool: Tool | None, server_policy: RetryPolicy | None) -> RetryPolicy | None:
    """The retry policy of ``tool``'s calls, or None when they are made once."""
    if tool is None:
        return None
    if tool.retry is not None:
        return tool.retry
    if tool.idempotent or tool.read_only:
        return server_policy or DEFAULT_RETRY
    return None


def delay(policy: RetryPolicy, attempt: int) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
    return float(policy.backoff) * 2 ** (attempt - 1)


async def with_retries(call_once: Callable[[], Awaitable[tuple[ToolResult, bool]]],
                       policy: RetryPolicy | None) -> tuple[ToolResult, bool]:
    """``call_once()`` until it succeeds, fails in a way ``policy`` does not retry, or has used
    ``policy.max_attempts`` (a call refused before it ran is not retried). The earlier attempts
    are in the last result's ``attempts`` and ``notes``."""
    result, ran = await call_once()
    if policy is None or not ran:
        return result, ran
    earlier: list[dict[str, Any]] = []
    attempt = 1
    while result.outcome.lower() in policy.on and attempt < policy.max_attempts:
        wait = delay(policy, attempt)
        earlier.append({"attempt": attempt, "outcome": result.outcome, "error": result.error or result.content,
                        "duration_ms": result.duration_ms, "waited_ms": int(wait * 1000)})
        await sleep(wait)
        attempt += 1
        result, ran = await call_once()
        if not ran:
            break
    if earlier:
        notes = [f"attempt {a['attempt']} of {policy.max_attempts}: {a['outcome'].lower()}: {a['error']}; "
                 f"tried again after {a['waited_ms'] / 1000:g}s" for a in earlier]
        result.notes[:0] = notes
        result.attempts = [*earlier, {"attempt": attempt, "outcome": result.outcome,
                                      "duration_ms": result.duration_ms}]
    return result, ran
