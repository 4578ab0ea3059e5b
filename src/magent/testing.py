"""Testing your agents: model doubles and a switch that forbids real model calls (see
docs/guides/testing.md).

The doubles (like pydantic-ai's ``TestModel``/``FunctionModel``) implement ``LLMClient`` and never
touch the network. A reply may be an ``LLMResponse`` (copied, ``latency_ms`` too), a string (the
content), or a scripted model's dict ``{content, tool_calls: [{name, arguments}], usage}``.
``client_factory(model)`` has ``make_client``'s signature, to inject a double into the engine."""

from __future__ import annotations

import contextlib
import copy
import inspect
import os
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Iterator, Union

from magent.errors import LLMError
from magent.llm.base import AttemptSink, LLMClient, LLMRequest, LLMResponse, TokenSink
from magent.llm.scripted import estimate_tokens, stream_words, tool_call
from magent.models.agent import LLMConfig

Reply = Union[LLMResponse, str, "dict[str, Any]"]
"""What a double may answer: a response, its content alone, or a script-like dict."""


class _Double:
    """Shared behaviour: records requests, builds and streams the response."""

    name = "test"

    def __init__(self, *, tools: bool = True):
        self.requests: list[LLMRequest] = []
        """Every request received, in order (deep copies: later changes do not leak in)."""
        self._tools = tools

    def supports_tools(self, model: str) -> bool:
        return self._tools

    async def _respond(self, request: LLMRequest, reply: Reply, on_token: TokenSink | None,
                       started: float) -> LLMResponse:
        response = to_response(reply, request, number=len(self.requests), prefix=self.name)
        if on_token is not None and response.content:
            await stream_words(response.content, on_token)
        if not isinstance(reply, LLMResponse):
            # Only a response the double builds gets a measured latency: one the test gave is
            # played exactly as given, so comparing it never depends on the machine's speed.
            response.latency_ms = int((time.monotonic() - started) * 1000)
        return response


class QueueModel(_Double):
    """Plays ``responses`` in order, one per call; running out raises ``LLMError``."""

    name = "queue"

    def __init__(self, responses: Iterable[Reply], *, tools: bool = True):
        super().__init__(tools=tools)
        self.responses = list(responses)

    @property
    def remaining(self) -> int:
        return len(self.responses) - len(self.requests)

    async def complete(self, request: LLMRequest, on_token: TokenSink | None = None, *,
                       on_attempt: AttemptSink | None = None) -> LLMResponse:
        started = time.monotonic()
        number = len(self.requests) + 1
        if number > len(self.responses):
            raise LLMError(f"QueueModel has no response #{number}: it was given "
                           f"{len(self.responses)}")
        self.requests.append(copy.deepcopy(request))
        return await self._respond(request, self.responses[number - 1], on_token, started)


class FunctionModel(_Double):
    """Asks ``fn(request)`` (sync or async) for each reply."""

    name = "function"

    def __init__(self, fn: Callable[[LLMRequest], Union[Reply, Awaitable[Reply]]], *,
                 tools: bool = True):
        super().__init__(tools=tools)
        self.fn = fn

    async def complete(self, request: LLMRequest, on_token: TokenSink | None = None, *,
                       on_attempt: AttemptSink | None = None) -> LLMResponse:
        started = time.monotonic()
        self.requests.append(copy.deepcopy(request))
        reply = self.fn(request)
        if inspect.isawaitable(reply):
            reply = await reply
        return await self._respond(request, reply, on_token, started)


def to_response(reply: Reply, request: LLMRequest, *, number: int = 1,
                prefix: str = "test") -> LLMResponse:
    """Turn a double's reply into an ``LLMResponse``; tool-call ids are ``call_<prefix>_<n>_<i>``."""
    if isinstance(reply, LLMResponse):
        response = copy.deepcopy(reply)
        response.model = response.model or request.model
        response.provider = response.provider or prefix
        return response
    if isinstance(reply, str):
        reply = {"content": reply}
    if not isinstance(reply, dict):
        raise TypeError(f"a test model reply must be an LLMResponse, str or dict, not "
                        f"{type(reply).__name__}")
    unknown = set(reply) - {"content", "tool_calls", "usage", "stop_reason"}
    if unknown:
        raise TypeError(f"unknown reply field(s): {', '.join(sorted(unknown))}")
    content = reply.get("content") or ""
    calls = [tool_call(f"call_{prefix}_{number}_{i + 1}", c["name"], c.get("arguments", {}))
             for i, c in enumerate(reply.get("tool_calls") or [])]
    usage = reply.get("usage")
    if usage:
        tokens_in, tokens_out = int(usage.get("input", 0)), int(usage.get("output", 0))
    else:
        tokens_in, tokens_out = estimate_tokens(request, content, calls)
    return LLMResponse(content=content, tool_calls=calls, model=request.model, provider=prefix,
                       tokens_in=tokens_in, tokens_out=tokens_out,
                       stop_reason=reply.get("stop_reason") or ("tool_calls" if calls else "stop"))


ClientFactory = Callable[..., LLMClient]


def client_factory(client: LLMClient) -> ClientFactory:
    """A factory with ``make_client``'s signature that always returns ``client``."""

    def make_client(config: LLMConfig, *, agent: str, base_dir: Path,
                    cursors: dict[str, int]) -> LLMClient:
        return client

    return make_client


FORBID_ENV = "MAGENT_FORBID_REMOTE_LLM"
"""``1``: model calls may only reach endpoints on 127.0.0.1/localhost; ``all``: none at all."""


@contextlib.contextmanager
def forbid_model_requests(*, allow_local: bool = False) -> Iterator[None]:
    """Inside the block (or decorated test), a model call that would leave magent's doubles and
    scripted model fails the run at once instead of reaching a provider (``allow_local``: not one
    to 127.0.0.1). It sets ``MAGENT_FORBID_REMOTE_LLM``, so subprocesses are held to it too; set it
    yourself to cover a whole CI job."""
    previous = os.environ.get(FORBID_ENV)
    os.environ[FORBID_ENV] = "1" if allow_local else "all"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(FORBID_ENV, None)
        else:
            os.environ[FORBID_ENV] = previous


__all__ = ["FORBID_ENV", "FunctionModel", "QueueModel", "Reply", "client_factory",
           "forbid_model_requests", "to_response"]
