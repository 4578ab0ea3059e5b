"""What went wrong with a model call, in a few words, and whether trying again may help.

litellm maps every provider's errors onto OpenAI-style exception classes, but a few
failures hide behind a misleading one: a refused connection arrives as "HTTP 500:
Connection error", a chunk of broken JSON in a stream as "HTTP 500" too. ``describe``
looks through the chain of causes first and names what really happened. The litellm
module is handed in, so only ``litellm_client`` imports it.
"""

from __future__ import annotations

import ast
import asyncio
import json
import re
import socket
from typing import Any, Iterator

from magent.llm.retry import retry_after


class IncompleteReply(Exception):
    """The endpoint answered HTTP 200 but not with a whole completion (raised by the client
    after draining a stream; retried like any transient failure)."""


def describe(exc: BaseException, timeout: float, litellm: Any, endpoint: str | None = None,
             not_found: str = "", *, streamed: bool = True) -> tuple[str, bool, float | None]:
    """(what happened in a few words, whether to retry, the server's Retry-After if any).
    ``not_found`` is what a 404 from ``endpoint`` means (``endpoints.not_found``); ``streamed``
    whether the reply was asked for as a stream (else it came, or failed to, whole)."""
    overloaded = _overloaded(exc)
    if overloaded:
        return overloaded, True, retry_after(exc)
    if isinstance(exc, IncompleteReply):
        return str(exc), True, None
    if isinstance(exc, asyncio.TimeoutError) or isinstance(exc, litellm.Timeout):
        return f"timed out after {timeout:g} s", True, None
    unreachable = _unreachable(exc, endpoint)
    if unreachable:
        return unreachable, True, None
    broken = next((c for c in causes(exc) if isinstance(c, json.JSONDecodeError)), None)
    if broken is not None:
        if not streamed:
            return (f"the reply is not valid JSON ({broken.msg}: character {broken.pos}): the endpoint "
                    "answered with something other than a completion"), True, None
        return (f"the stream broke: the server sent a chunk that is not valid JSON ({broken.msg}: "
                f"character {broken.pos} of the chunk)"), True, None
    status = getattr(exc, "status_code", None)
    detail = server_said(exc) or clean_message(exc)
    if isinstance(exc, litellm.RateLimitError) or status == 429:
        return f"rate limited (HTTP 429): {detail}", True, retry_after(exc)
    if isinstance(exc, litellm.AuthenticationError) or status == 401:
        return f"authentication failed (HTTP 401): {detail}", False, None
    if isinstance(exc, litellm.PermissionDeniedError) or status == 403:
        return f"permission denied (HTTP 403): {detail}", False, None
    if isinstance(exc, litellm.NotFoundError) or status == 404:
        fix = f"; {not_found}" if not_found else ""
        return f"model or endpoint not found (HTTP 404): {detail}{fix}", False, None
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


def cut_mid_stream(exc: BaseException, got: Any, litellm: Any) -> bool:
    """Whether a failure while a stream was read cut a reply short.

    magent decides this from what it received, not from how a library words the failure:
    some text or a tool call had come and no finish reason, and the failure is neither a
    timeout nor a chunk of broken JSON (those are named for what they are). litellm reports
    such a stream itself in some versions and not in others; either way it reads the same.
    """
    if got.finish is not None or not (got.text or got.calls):
        return False
    if isinstance(exc, asyncio.TimeoutError) or isinstance(exc, litellm.Timeout):
        return False
    return not any(isinstance(c, json.JSONDecodeError) for c in causes(exc))


def causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and everything it was raised from (litellm also keeps ``original_exception``)."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        for nxt in (current.__cause__, current.__context__, getattr(current, "original_exception", None)):
            if isinstance(nxt, BaseException):
                todo.append(nxt)


# Failures to open a connection in the HTTP stacks litellm may use (httpx, aiohttp), known by
# name so that neither is imported here. (The OpenAI SDK's APIConnectionError is not one: it
# also wraps failures after the server was reached.)
_CONNECT_ERRORS = {"ConnectError", "ClientConnectorError"}


def _unreachable(exc: BaseException, endpoint: str | None) -> str | None:
    """"could not reach URL (why)" when no HTTP exchange happened, else None."""
    chain = list(causes(exc))
    if any(getattr(c, "status_code", None) not in (None, 500) for c in chain):
        return None  # a real HTTP status came back: the server was reached
    reason = None
    for c in chain:
        if isinstance(c, ConnectionRefusedError):
            reason = "connection refused"
        elif isinstance(c, socket.gaierror):
            reason = "host not found"
    if reason is None and not any(type(c).__name__ in _CONNECT_ERRORS for c in chain):
        return None
    where = endpoint or _url_in(chain) or "the provider's endpoint"
    return f"could not reach {where} ({reason or clean_message(chain[-1])})"


def _url_in(chain: list[BaseException]) -> str | None:
    for c in chain:
        request = getattr(c, "request", None)
        url = getattr(request, "url", None)
        if url:
            return str(url)
    return None


def _overloaded(exc: BaseException) -> str | None:
    """"the provider is overloaded (...): its words" when it said so, else None.

    Anthropic says so with HTTP 529 or, once a stream has begun, with an ``overloaded_error``
    event; litellm reports both as HTTP 500, so the status and the error's type are read from
    the chain of causes and the response body (a body that could not be read leaves the
    provider's message, ``Overloaded``)."""
    chain = list(causes(exc))
    codes = {getattr(c, "status_code", None) for c in chain}
    said = server_said(exc) or clean_message(chain[-1] if isinstance(exc, IncompleteReply) else exc)
    if 529 not in codes and _error_type(exc) != "overloaded_error" and said.lower() != "overloaded":
        return None
    if 529 in codes:
        how = "HTTP 529"
    elif isinstance(exc, IncompleteReply) or any("MidStream" in type(c).__name__ for c in chain):
        how = "in the middle of its reply"
    else:
        how = f"HTTP {getattr(exc, 'status_code', None) or 500}"
    return f"the provider is overloaded ({how}): {said}"


def _error_type(exc: BaseException) -> str | None:
    """``error.type`` in the body of the error response behind ``exc`` (Anthropic's
    ``overloaded_error``, ``not_found_error``...), or None."""
    for text in _response_texts(exc):
        body = _parsed(text)
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and isinstance(error.get("type"), str):
            return error["type"]
    return None


def _response_texts(exc: BaseException) -> Iterator[str]:
    """The bodies of the HTTP responses behind ``exc`` that could be read and are not empty."""
    for c in causes(exc):
        response = getattr(c, "response", None)
        try:
            text = str(response.text).strip() if response is not None else ""
        except Exception:  # a streamed response whose body was never read
            continue
        if text:
            yield text


def server_said(exc: BaseException) -> str | None:
    """The message in the body of the HTTP error response behind ``exc``, or None.

    Read from the response itself (``error.message``, ``message`` or ``error`` in a JSON
    body; else its first line of text), so what a user sees is the provider's words,
    whatever prefixes a litellm version puts around them.
    """
    for text in _response_texts(exc):
        try:
            body = json.loads(text)
        except ValueError:  # plain text is the server's words; an HTML page is not a message
            return None if text.startswith("<") else text.splitlines()[0][:200]
        found = _message_in(body)
        if found:
            return found[:200]
    return None


def _parsed(text: str) -> Any:
    """``text`` as JSON, also when it is the repr of the bytes of a JSON body (``b'{...}'``, as
    litellm words some providers' errors); None when it is neither."""
    if text[:2] in ("b'", 'b"'):
        try:
            text = ast.literal_eval(text).decode("utf-8", "replace")
        except (ValueError, SyntaxError, AttributeError):
            return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _message_in(body: Any) -> str | None:
    if isinstance(body, dict):
        error = body.get("error")
        for value in (error.get("message") if isinstance(error, dict) else error, body.get("message"),
                      body.get("detail")):
            if isinstance(value, str) and value.strip():
                return " ".join(value.split())
    return None


def clean_message(exc: BaseException) -> str:
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
    text = _PROVIDER_PREFIX.sub("", text)  # "AnthropicError - ", "Hosted_vllmException - "
    said = _message_in(_parsed(text))       # a JSON body as litellm quotes it: its message
    return (said or text)[:200] or type(exc).__name__


_PROVIDER_PREFIX = re.compile(r"^[A-Za-z_]\w*(Error|Exception) - ")
