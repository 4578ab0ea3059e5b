"""What went wrong with a model call, in a few words, and whether trying again may help.

litellm maps every provider's errors onto OpenAI-style exception classes; ``describe``
reads those (the module is handed in, so only ``litellm_client`` imports litellm).
"""

from __future__ import annotations

import asyncio
from typing import Any

from magent.llm.retry import retry_after


def describe(exc: BaseException, timeout: float, litellm: Any) -> tuple[str, bool, float | None]:
    """(what happened in a few words, whether to retry, the server's Retry-After if any)."""
    status = getattr(exc, "status_code", None)
    detail = _clean(exc)
    if isinstance(exc, asyncio.TimeoutError) or isinstance(exc, litellm.Timeout):
        return f"timed out after {timeout:g} s", True, None
    if isinstance(exc, litellm.RateLimitError) or status == 429:
        return f"rate limited (HTTP 429): {detail}", True, retry_after(exc)
    if isinstance(exc, litellm.AuthenticationError) or status == 401:
        return f"authentication failed (HTTP 401): {detail}", False, None
    if isinstance(exc, litellm.PermissionDeniedError) or status == 403:
        return f"permission denied (HTTP 403): {detail}", False, None
    if isinstance(exc, litellm.NotFoundError) or status == 404:
        return f"model or endpoint not found (HTTP 404): {detail}", False, None
    if isinstance(exc, litellm.BadRequestError) or status in (400, 413, 422):
        return f"request rejected (HTTP {status or 400}): {detail}", False, None
    if isinstance(exc, litellm.APIConnectionError):
        return f"connection failed: {detail}", True, None
    if isinstance(status, int) and (status >= 500 or status in (408, 409)):
        return f"server error (HTTP {status}): {detail}", True, retry_after(exc)
    if isinstance(exc, (litellm.InternalServerError, litellm.ServiceUnavailableError,
                        litellm.APIError, ConnectionError, OSError)):
        return f"server or connection error: {detail}", True, None
    return f"unexpected error ({type(exc).__name__}): {detail}", False, None


def _clean(exc: BaseException) -> str:
    """litellm's message without its class-name prefixes, on one short line."""
    text = str(getattr(exc, "message", None) or exc) or type(exc).__name__
    text = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    for prefix in ("litellm.", ):
        if text.startswith(prefix):
            text = text[len(prefix):]
    while True:
        head, sep, rest = text.partition(": ")
        if sep and head.replace(".", "").isidentifier() and head.endswith(("Error", "Exception")):
            text = rest
            continue
        break
    for noise in ("OpenAIException - ", "Exception - "):
        text = text.replace(noise, "")
    return text[:200] or type(exc).__name__
