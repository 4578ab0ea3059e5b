"""Assembling a streamed model reply: text handed on as it arrives, tool-call pieces joined.

Works on litellm's stream chunks by their OpenAI shape (``choices[].delta``, ``usage``),
without importing litellm.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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


async def collect(stream: Any, on_token: TokenSink | None) -> Collected:
    """Drain ``stream``: text (streamed to ``on_token``), tool calls, finish reason, usage."""
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    out = Collected()
    async for chunk in stream:
        chunk_usage = getattr(chunk, "usage", None)
        if chunk_usage is not None and (chunk_usage.prompt_tokens or chunk_usage.completion_tokens):
            out.usage = (int(chunk_usage.prompt_tokens or 0), int(chunk_usage.completion_tokens or 0))
        for choice in getattr(chunk, "choices", None) or []:
            if choice.finish_reason:
                out.finish = str(choice.finish_reason)
            delta = choice.delta
            if delta is None:
                continue
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
    out.text = "".join(text)
    out.calls = [calls[i] for i in sorted(calls)]
    return out
