"""magent's conversation and tools in the OpenAI chat format, which litellm takes for every provider.

Tool names: magent's ``server.tool`` is not a valid function name for most providers, so
each is flattened to ``server__tool`` (hashed when it would still be invalid or clash) and
mapped back when the model calls it.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from magent.llm.base import LLMRequest, ToolSpec

_SAFE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def safe_name(full: str) -> str:
    """A provider-safe function name for ``server.tool``: ``server__tool``, hashed if need be."""
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", full.replace(".", "__", 1))
    if _SAFE_NAME.fullmatch(name) and name == full.replace(".", "__", 1):
        return name
    digest = hashlib.sha1(full.encode()).hexdigest()[:8]
    return f"{name[:55]}_{digest}"


class ToolNames:
    """The two-way map between magent's ``server.tool`` names and the names a provider sees."""

    def __init__(self, full_names: list[str]):
        self._to_safe: dict[str, str] = {}
        self._to_full: dict[str, str] = {}
        for full in full_names:
            self.safe(full)

    def safe(self, full: str) -> str:
        if full not in self._to_safe:
            name = safe_name(full)
            if name in self._to_full:  # two names that flatten alike: tell them apart
                name = f"{name[:55]}_{hashlib.sha1(full.encode()).hexdigest()[:8]}"
            self._to_safe[full], self._to_full[name] = name, full
        return self._to_safe[full]

    def full(self, name: str) -> str:
        """The magent name of what the model called; a name never offered is un-flattened."""
        if name in self._to_full:
            return self._to_full[name]
        return name.replace("__", ".", 1) if "__" in name else name


def to_openai_tools(tools: list[ToolSpec], names: ToolNames) -> list[dict[str, Any]]:
    return [{"type": "function",
             "function": {"name": names.safe(t.name), "description": t.description,
                          "parameters": t.parameters or {"type": "object", "properties": {}}}}
            for t in tools]


def to_openai_messages(request: LLMRequest, names: ToolNames) -> list[dict[str, Any]]:
    """``request.system`` then the conversation, as OpenAI chat messages."""
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    for m in request.messages:
        if m.role == "assistant" and m.tool_calls:
            out.append({"role": "assistant", "content": m.content or None, "tool_calls": [
                {"id": c.id, "type": "function",
                 "function": {"name": names.safe(c.full_name), "arguments": json.dumps(c.arguments)}}
                for c in m.tool_calls]})
        elif m.role == "tool" and m.tool_call_id:
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        elif m.role == "tool":  # a result with no call id (text mode): the model reads it as input
            out.append({"role": "user", "content": f"Observation from {m.name or 'a tool'}: {m.content}"})
        else:
            out.append({"role": m.role, "content": m.content})
    return out
