"""The interface between the engine and any model: requests, responses, clients."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from magent.models import Message
from magent.models.agent import FallbackModel

TokenSink = Callable[[str], None]
"""Receives assistant text as it streams."""


@dataclass
class Attempt:
    """One try at a model call, reported while the call is under way (see ``AttemptSink``)."""

    model: str
    number: int
    """1-based, counted per model (the fallback starts again at 1)."""
    allowed: int
    """How many attempts this model gets (``max_retries + 1``)."""
    timeout: float
    """Seconds this attempt may take."""
    provider: str = ""
    fallback: bool = False
    """This is the fallback model."""
    error: str | None = None
    """None when the attempt starts; what went wrong, in a few words, when it failed."""
    duration_ms: int = 0
    """How long a failed attempt took."""
    retry_in: float | None = None
    """Seconds until this model is tried again; None when it is not (given up, or not retryable)."""
    cancelled: bool = False
    """The attempt was cut short because the run is being stopped (Ctrl-C, SIGTERM)."""


AttemptSink = Callable[[Attempt], None]
"""Told when each attempt starts and when one fails (a client may report neither: the scripted
model and the test doubles answer at once and never fail an attempt)."""


@dataclass
class ToolSpec:
    """A tool as offered to the model."""

    name: str
    """Full magent name, ``server.tool``. Adapters map it to what a provider accepts."""
    description: str
    parameters: dict[str, Any]
    """JSON Schema of the arguments."""


@dataclass
class LLMRequest:
    model: str
    messages: list[Message]
    """The conversation so far (no system message: that is ``system``)."""
    system: str = ""
    tools: list[ToolSpec] = field(default_factory=list)
    """Tools for native function calling; empty in text mode."""
    temperature: float = 0.7
    max_tokens: int | None = None
    endpoint: str | None = None
    api_key: str | None = None
    timeout: float = 120.0
    max_retries: int = 3
    fallback_model: "str | FallbackModel | None" = None
    """A model string (same endpoint and key as ``model`` when of the same provider), or a
    ``FallbackModel`` with its own endpoint and key."""
    agent: str = ""
    """Name of the calling agent (the scripted provider keys its cursor by script)."""
    conversation_leaf: str | None = None
    """When ``messages`` are the session's conversation: the id of its last entry, so the
    record of the call can point into ``entries.jsonl`` instead of copying them."""
    text_mode: bool = False
    """The ReAct text format: tools are described in ``system`` and results sent as text."""
    compaction: str | None = None
    """When ``messages`` are an agent's view under its context budget: the entry id of the
    compaction the view follows (the record of the call rebuilds the view from it)."""
    purpose: str = "turn"
    """``turn`` (an agent's model turn) or ``summary`` (condensing a conversation for its
    context budget: the scripted model answers it from its script's ``summaries``)."""
    output_schema: dict[str, Any] | None = None
    """The JSON Schema the final answer must fit: sent as the provider's structured output
    (``response_format``) where litellm says the model supports it; checked by the engine always."""
    route: str | None = None
    """The routing rule that chose ``model`` (``llm_config.routing``), when the agent routes."""
    selection: dict[str, Any] | None = None
    """When the agent has ``tool_selection``: why ``tools`` are the ones carried (its record
    goes into the call's ``llm_call`` event; see ``engine.selecting``)."""


@dataclass
class LLMToolCall:
    id: str
    name: str
    """Full ``server.tool`` name as the model asked for it (may be unknown or not allowed)."""
    arguments: dict[str, Any] | None
    """Parsed arguments, or None when the model's text was not a JSON object."""
    raw_arguments: str = ""


@dataclass
class LLMResponse:
    content: str = ""
    tool_calls: list[LLMToolCall] = field(default_factory=list)
    model: str = ""
    """The model that answered (the fallback when it was used)."""
    provider: str = ""
    tokens_in: int = 0
    """Prompt tokens, all of them (those read from or written to a cache included)."""
    tokens_out: int = 0
    """Completion tokens, reasoning included."""
    cache_read: int = 0
    """Of ``tokens_in``, those the provider read from its prompt cache (billed at its cache rate)."""
    cache_write: int = 0
    """Of ``tokens_in``, those the provider wrote to its prompt cache (billed at its write rate)."""
    reasoning: int = 0
    """Of ``tokens_out``, those the model spent reasoning (thinking) before its reply."""
    estimated: bool = False
    """True when the provider sent no usage: ``tokens_in`` and ``tokens_out`` are an estimate (litellm's
    count of the texts, or magent's when litellm gave none)."""
    cost: float | None = 0.0
    """USD as litellm computes it from the whole usage; None when litellm has no price for the model."""
    latency_ms: int = 0
    stop_reason: str | None = None
    """Why the reply ended, in OpenAI's words as litellm maps every provider's: ``stop``,
    ``tool_calls``, ``length`` (cut at the output limit), ``content_filter``; or ``refusal``
    (the model refused: ``refusal`` says what it wrote)."""
    refusal: str | None = None
    """The model's refusal message, when it refused instead of answering."""
    response_model: str | None = None
    """The model the provider's response names (``gpt-4o-mini-2024-07-18`` for ``openai/gpt-4o-mini``),
    when it names one."""
    retries: list[str] = field(default_factory=list)
    """One line per failed attempt that was retried or fallen back from."""
    attempt: int = 1
    """Which attempt of ``model`` gave this response."""
    streamed: bool = True
    """The reply was asked for as a stream; False: whole, when nobody read its text as it came."""

    @property
    def usage_key(self) -> str:
        from magent.models.task import usage_key

        return usage_key(self.model, self.provider)


class LLMClient(Protocol):
    async def complete(self, request: LLMRequest, on_token: TokenSink | None = None, *,
                       on_attempt: AttemptSink | None = None) -> LLMResponse:
        """One model turn. Raises ``magent.errors.LLMError`` when retries and fallback are spent."""
        ...

    def supports_tools(self, model: str) -> bool:
        """Whether ``model`` does native function calling (else the text format is used)."""
        ...


def json_in_reply(text: str) -> dict[str, Any] | None:
    """The JSON object a model wrote somewhere in its reply (from the first ``{`` to the last
    ``}``), or None when there is none that parses."""
    match = re.search(r"\{.*\}", text, re.S)
    if not match:
        return None
    try:
        doc = json.loads(match.group(0))
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None
