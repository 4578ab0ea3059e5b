"""Reading a model reply: a stream's text handed on as it arrives and its tool-call pieces
joined (``collect``), or a whole reply read at once (``whole``).

Works on litellm's chunks and responses by their OpenAI shape (``choices[].delta`` or
``choices[].message``, ``usage``), without importing litellm.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict, cast

from magent.llm.base import TokenSink


@dataclass
class Collected:
    """What a drained stream held."""

    text: str = ""
    calls: list[dict[str, str]] = field(default_factory=list)
    """Tool calls in order, each ``{"id", "name", "arguments"}`` (arguments as raw JSON text)."""
    finish: str | None = None
    usage: tuple[int, int] | None = None
    """(prompt tokens, completion tokens) when the provider reported them."""
    billed: Any = None
    """The usage object the counts came from (litellm's ``Usage``), for its details and price."""
    refusal: str = ""
    """The model's refusal message (OpenAI's ``refusal``), when it refused instead of answering."""
    model: str = ""
    """The model the provider's response names (``gpt-4o-mini-2024-07-18``), when it names one."""


async def collect(stream: Any, on_token: TokenSink | None, out: Collected) -> Collected:
    """Drain ``stream`` into ``out``: text (streamed to ``on_token``), tool calls, finish
    reason, usage. What arrived before a failure stays in ``out`` (text and calls as far as
    they came), so the caller can tell a stream cut mid-way from one that never started."""
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    watched = _watch_refusals(stream, out)
    try:
        await _drain(stream, on_token, out, text, calls, refusals=not watched)
    finally:
        out.text = "".join(text)
        out.calls = [calls[i] for i in sorted(calls)]
    return out


async def _drain(stream: Any, on_token: TokenSink | None, out: Collected, text: list[str],
                 calls: dict[int, dict[str, str]], refusals: bool) -> None:
    async for chunk in stream:
        # litellm gives every chunk the requested model's name; the response's own is kept apart
        hidden = getattr(chunk, "_hidden_params", None)
        if isinstance(hidden, dict) and hidden.get("provider_response_model"):
            out.model = str(hidden["provider_response_model"])
        chunk_usage = getattr(chunk, "usage", None)
        if chunk_usage is not None and (chunk_usage.prompt_tokens or chunk_usage.completion_tokens):
            out.usage = (int(chunk_usage.prompt_tokens or 0), int(chunk_usage.completion_tokens or 0))
            out.billed = chunk_usage
        for choice in getattr(chunk, "choices", None) or []:
            if choice.finish_reason:
                out.finish = str(choice.finish_reason)
            delta = choice.delta
            if delta is None:
                continue
            if refusals and isinstance(getattr(delta, "refusal", None), str):
                out.refusal += delta.refusal
            if delta.content:
                text.append(delta.content)
                if on_token is not None:
                    on_token(delta.content)
            for part in delta.tool_calls or []:
                index = part.index if part.index is not None else len(calls)
                call = calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
                if part.id and not call["id"]:
                    call["id"] = part.id
                fn = part.function
                if fn is not None:
                    if fn.name and not call["name"]:
                        call["name"] = fn.name
                    if fn.arguments:
                        call["arguments"] += fn.arguments


def whole(response: Any) -> Collected:
    """What a reply that came whole (not streamed) holds, as ``collect`` would have gathered it.

    litellm gives a reply without usage zero counts: that is no usage (``usage`` stays None).
    The model the provider named is litellm's ``provider_response_model``, as in a stream."""
    out = Collected()
    hidden = getattr(response, "_hidden_params", None)
    if isinstance(hidden, dict) and hidden.get("provider_response_model"):
        out.model = str(hidden["provider_response_model"])
    usage = getattr(response, "usage", None)
    if _counts(usage):
        out.usage = (int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0))
        out.billed = usage
    for choice in (getattr(response, "choices", None) or [])[:1]:
        out.finish = str(choice.finish_reason) if choice.finish_reason else None
        message = choice.message
        out.text = message.content or ""
        refusal = getattr(message, "refusal", None)
        out.refusal = refusal if isinstance(refusal, str) else ""
        out.calls = [{"id": call.id or "", "name": call.function.name or "",
                      "arguments": call.function.arguments or ""} for call in message.tool_calls or []]
    return out


class UsageParts(TypedDict, total=False):
    """The parts of a reply's tokens billed at their own rates (``LLMResponse``'s fields)."""

    cache_read: int
    cache_write: int
    reasoning: int


def usage_parts(usage: Any) -> UsageParts:
    """The cache-read, cache-write and reasoning tokens of a usage object in litellm's (OpenAI's)
    shape, the ones it has: litellm maps Anthropic's ``cache_read_input_tokens`` and Gemini's
    ``cachedContentTokenCount`` onto ``prompt_tokens_details.cached_tokens``, Anthropic's
    ``cache_creation_input_tokens`` onto the attribute of that name, and OpenAI's and Gemini's
    reasoning (``thoughtsTokenCount``) onto ``completion_tokens_details.reasoning_tokens``."""
    if usage is None:
        return {}
    prompt = getattr(usage, "prompt_tokens_details", None)
    completion = getattr(usage, "completion_tokens_details", None)
    parts = {"cache_read": getattr(prompt, "cached_tokens", None) or getattr(usage, "cache_read_input_tokens", None),
             "cache_write": getattr(usage, "cache_creation_input_tokens", None),
             "reasoning": getattr(completion, "reasoning_tokens", None)}
    return cast(UsageParts, {k: int(v) for k, v in parts.items() if isinstance(v, (int, float)) and v > 0})


def _watch_refusals(stream: Any, out: Collected) -> bool:
    """Read refusals from the provider's own chunks, under litellm's stream.

    OpenAI sends a refusal as ``delta.refusal`` pieces with no content; litellm (1.110) drops a
    chunk whose delta holds nothing else, so the refusal would look like an empty reply. The
    provider's stream (``completion_stream``, OpenAI SDK chunks) is wrapped to note each piece
    as it passes; chunks go on unchanged. A stream without one is left alone.
    """
    raw = getattr(stream, "completion_stream", None)
    if raw is None or not hasattr(raw, "__aiter__"):
        return

    async def watched() -> Any:
        try:
            async for chunk in raw:
                for choice in getattr(chunk, "choices", None) or []:
                    piece = getattr(getattr(choice, "delta", None), "refusal", None)
                    if isinstance(piece, str):
                        out.refusal += piece
                yield chunk
        finally:
            close = getattr(raw, "aclose", None) or getattr(raw, "close", None)
            if close is not None:
                closing = close()
                if hasattr(closing, "__await__"):
                    await closing

    stream.completion_stream = watched()
    return True


def server_finish(stream: Any, got: Collected) -> str | None:
    """The finish reason the server itself sent, or None.

    litellm closes every stream with a finish chunk of its own ("stop" when the server sent
    none, say when the connection simply closed), so its record of what it received is
    asked first; ``got.finish`` only when a litellm version keeps no such record.
    """
    if hasattr(stream, "received_finish_reason"):
        return stream.received_finish_reason or getattr(stream, "intermittent_finish_reason", None)
    return got.finish


def server_counted(stream: Any, got: Collected) -> bool:
    """Whether the server itself reported the reply's usage.

    Asked for usage (``stream_options.include_usage``), litellm ends every stream with a usage
    chunk of its own: the server's counts when it sent some, else its own count of the texts
    (Ollama's ``/v1``, a local server). Its record of the chunks it received is asked which;
    ``got.usage`` only when a litellm version keeps no such record.
    """
    chunks = getattr(stream, "chunks", None)
    if isinstance(chunks, list):
        return any(_counts(getattr(chunk, "usage", None)) for chunk in chunks)
    return got.usage is not None


def _counts(usage: Any) -> bool:
    return usage is not None and bool(getattr(usage, "prompt_tokens", 0) or getattr(usage, "completion_tokens", 0))


def incomplete(stream: Any, got: Collected, endpoint: str | None) -> str:
    """Why a stream without a finish reason is not an answer, in a few words."""
    if got.text or got.calls:
        return (f"the stream was cut off: it ended without a finish reason after "
                f"{len(got.text):,} characters")
    where = endpoint or "the endpoint"
    headers = (getattr(stream, "_hidden_params", None) or {}).get("additional_headers") or {}
    kind = str(headers.get("llm_provider-content-type") or "").split(",")[0].strip()
    if kind and "event-stream" not in kind:
        return f"{where} answered HTTP 200 with a body that is not a completion (Content-Type: {kind})"
    return f"{where} answered HTTP 200 but sent no completion (the stream ended empty)"
