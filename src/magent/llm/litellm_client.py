"""The litellm adapter: any litellm model string behind the ``LLMClient`` interface.

This is the only module of magent that imports litellm, and it does so on first
use (``_litellm()``), so commands and runs that never call a real model never pay
for the import. What it adds on top of ``litellm.acompletion``:

- streaming, with text deltas handed to ``on_token`` as they arrive and tool-call
  deltas assembled into whole calls;
- ``server.tool`` names mapped to provider-safe function names and back;
- its own retry policy (litellm's and the OpenAI SDK's are switched off, so one
  policy decides): exponential backoff with jitter on rate limits, server errors,
  connection errors and timeouts, honouring ``Retry-After``; then the fallback
  model with the same policy; every failed attempt listed in ``retries``;
- garbage from the model (empty reply, invalid tool JSON, unknown tool) is
  returned, never raised: the engine turns it into observations;
- the ``MAGENT_FORBID_REMOTE_LLM=1`` guard, checked before any network I/O.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import random
import re
import threading
import time
import uuid
import warnings
from email.utils import parsedate_to_datetime
from typing import Any, Awaitable, Callable
from urllib.parse import urlparse

from magent.errors import LLMError
from magent.llm.base import LLMRequest, LLMResponse, LLMToolCall, TokenSink, ToolSpec
from magent.llm.scripted import estimate_tokens, parse_arguments

BASE_DELAY = 1.0
"""First backoff delay in seconds; doubled per retry, with jitter."""
MAX_DELAY = 60.0
"""No wait (backoff or ``Retry-After``) is longer than this."""
FORBID_REMOTE_ENV = "MAGENT_FORBID_REMOTE_LLM"
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}

# Providers that speak the OpenAI tools API (or an equivalent litellm translates):
# a model of theirs that litellm's map does not know is assumed to call tools.
TOOL_PROVIDERS = {
    "openai", "text-completion-openai", "openai_like", "custom_openai", "hosted_vllm", "vllm",
    "lm_studio", "llamafile", "azure", "anthropic", "gemini", "vertex_ai", "mistral", "groq",
    "deepseek", "together_ai", "fireworks_ai", "openrouter", "xai", "cerebras", "bedrock",
}

_import_lock = threading.Lock()


def _litellm() -> Any:
    """Import litellm once, quietly: local cost map, no banners, its loggers silenced."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with _import_lock:
        import litellm

        if not getattr(litellm, "_magent_configured", False):
            litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" or provider banners
            litellm.set_verbose = False
            litellm.telemetry = False
            for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx", "httpcore"):
                logging.getLogger(name).setLevel(logging.CRITICAL)
            # litellm's own deprecation noise and pydantic's remarks on its types are not
            # the user's business (they are filtered narrowly: other warnings still show)
            warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"litellm(\.|$)")
            warnings.filterwarnings("ignore", message=r".*using the `ReadOnly` qualifier",
                                    category=UserWarning)
            litellm._magent_configured = True
    return litellm


# Modules litellm imports lazily during its first completion; ``warm()`` loads them early.
_FIRST_CALL_MODULES = ("openai.resources.chat", "litellm.litellm_core_utils.default_encoding",
                       "litellm.proxy._types", "litellm._service_logger")


def warm() -> None:
    """Import litellm and what its first call would import (best effort)."""
    import importlib

    _litellm()
    for name in _FIRST_CALL_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # a later litellm may have moved it: only a little slower then
            pass


def provider_of(model: str, endpoint: str | None = None) -> str:
    """litellm's provider name for ``model``, or ``""`` when it does not know the model."""
    litellm = _litellm()
    try:
        return str(litellm.get_llm_provider(model=model, api_base=endpoint)[1])
    except Exception:
        return ""


class LiteLLMClient:
    """``LLMClient`` over litellm. One instance may serve every agent of a run.

    ``base_delay``, ``max_delay`` and ``sleep`` exist so tests can make backoff fast
    and observable; leave them alone otherwise.
    """

    def __init__(self, *, base_delay: float | None = None, max_delay: float | None = None,
                 sleep: Callable[[float], Awaitable[Any]] | None = None):
        self.base_delay = BASE_DELAY if base_delay is None else base_delay
        self.max_delay = MAX_DELAY if max_delay is None else max_delay
        self.sleep = sleep or asyncio.sleep

    async def complete(self, request: LLMRequest, on_token: TokenSink | None = None) -> LLMResponse:
        """One model turn, with retries and fallback. Raises ``LLMError`` when all is spent."""
        models = [request.model]
        if request.fallback_model and request.fallback_model != request.model:
            models.append(request.fallback_model)
        for model in models:
            check_endpoint_allowed(model, request.endpoint)
        _litellm()
        failures: list[str] = []
        retries: list[str] = []
        for model in models:
            attempts = request.max_retries + 1
            for attempt in range(1, attempts + 1):
                try:
                    response = await self._attempt(model, request, on_token)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # classified below; nothing escapes unexplained
                    what, retryable, retry_after = describe(exc, request.timeout)
                    if not retryable:
                        note = "not retried" if attempt == 1 else f"after {attempt} attempts"
                        raise LLMError("; then ".join(
                            [*failures, f"model {model!r}: {what} ({note})"])) from None
                    if attempt < attempts:
                        delay = self._delay(attempt, retry_after)
                        retries.append(f"{model} attempt {attempt}: {what}; retrying in {delay:.1f} s")
                        await self.sleep(delay)
                        continue
                    failures.append(f"model {model!r}: {what} "
                                    f"({attempt} attempt{'s' if attempt != 1 else ''})")
                    retries.append(f"{model} attempt {attempt}: {what}; giving up on {model}")
                    break
                response.retries = retries
                return response
        raise LLMError("; then ".join(failures))

    def supports_tools(self, model: str) -> bool:
        """litellm's ``supports_function_calling``; True for unknown models of tool-calling
        (OpenAI-compatible) providers; never raises."""
        try:
            litellm = _litellm()
            try:
                litellm.get_model_info(model)
            except Exception:  # not in litellm's map: decide by provider
                return provider_of(model) in TOOL_PROVIDERS
            return bool(litellm.supports_function_calling(model))
        except Exception:
            return True

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        backoff = self.base_delay * (2 ** (attempt - 1))
        return min(backoff * random.uniform(0.5, 1.5), self.max_delay)

    async def _attempt(self, model: str, request: LLMRequest, on_token: TokenSink | None) -> LLMResponse:
        litellm = _litellm()
        names = ToolNames([t.name for t in request.tools])
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": to_openai_messages(request, names),
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": request.temperature,
            "timeout": request.timeout,
            "drop_params": True,  # e.g. models that refuse a temperature: drop it, do not fail
            "max_retries": 0,  # the OpenAI SDK's own retries: off, the policy is ours
            "num_retries": 0,
        }
        if request.max_tokens:
            kwargs["max_tokens"] = request.max_tokens
        if request.endpoint:
            kwargs["api_base"] = request.endpoint
        if request.api_key:
            kwargs["api_key"] = request.api_key
        elif request.endpoint and _needs_key(model):
            # A local OpenAI-compatible server usually wants no key, but the OpenAI SDK
            # refuses to send a request without one: give it a placeholder.
            kwargs["api_key"] = "sk-no-key-set"
        if request.tools:
            kwargs["tools"] = to_openai_tools(request.tools, names)
        started = time.monotonic()
        # The whole call, stream included, is bounded: a server that stalls mid-stream
        # times out like one that never answers.
        stream = await asyncio.wait_for(litellm.acompletion(**kwargs), timeout=request.timeout)
        remaining = max(request.timeout - (time.monotonic() - started), 0.001)
        collected = await asyncio.wait_for(_collect(stream, on_token), timeout=remaining)
        content, raw_calls, finish, usage = collected
        # A provider that sends no id gets a unique one: ids key results and recovery.
        calls = [LLMToolCall(id=c["id"] or f"call_{uuid.uuid4().hex[:24]}", name=names.full(c["name"]),
                             arguments=parse_arguments(c["arguments"]), raw_arguments=c["arguments"])
                 for i, c in enumerate(raw_calls)]
        if usage is not None:
            tokens_in, tokens_out = usage
        else:  # the provider sent no usage: estimate, so totals are not silently zero
            tokens_in, tokens_out = estimate_tokens(request, content, calls)
        return LLMResponse(
            content=content, tool_calls=calls, model=model,
            provider=provider_of(model, request.endpoint), tokens_in=tokens_in,
            tokens_out=tokens_out, cost=cost_of(model, tokens_in, tokens_out),
            latency_ms=int((time.monotonic() - started) * 1000),
            stop_reason="tool_calls" if calls else finish)


async def _collect(stream: Any, on_token: TokenSink | None
                   ) -> tuple[str, list[dict[str, str]], str | None, tuple[int, int] | None]:
    """Drain a litellm stream: text (streamed to ``on_token``), tool calls, finish, usage."""
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    finish: str | None = None
    usage: tuple[int, int] | None = None
    async for chunk in stream:
        chunk_usage = getattr(chunk, "usage", None)
        if chunk_usage is not None and (chunk_usage.prompt_tokens or chunk_usage.completion_tokens):
            usage = (int(chunk_usage.prompt_tokens or 0), int(chunk_usage.completion_tokens or 0))
        for choice in getattr(chunk, "choices", None) or []:
            if choice.finish_reason:
                finish = str(choice.finish_reason)
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
    return "".join(text), [calls[i] for i in sorted(calls)], finish, usage


def _needs_key(model: str) -> bool:
    """Whether litellm finds no API key in the environment for ``model``'s provider."""
    try:
        missing = _litellm().validate_environment(model=model).get("missing_keys") or []
    except Exception:
        return False
    return any("KEY" in name for name in missing)


def cost_of(model: str, tokens_in: int, tokens_out: int) -> float:
    """USD for a call as litellm's (local) price map has it; 0 when the model is not priced."""
    try:
        prompt, completion = _litellm().cost_per_token(
            model=model, prompt_tokens=tokens_in, completion_tokens=tokens_out)
        return float(prompt) + float(completion)
    except Exception:
        return 0.0


def check_endpoint_allowed(model: str, endpoint: str | None) -> None:
    """With ``MAGENT_FORBID_REMOTE_LLM=1``, refuse any endpoint not on this machine."""
    if os.environ.get(FORBID_REMOTE_ENV, "") in ("", "0", "false", "False"):
        return
    host = (urlparse(endpoint).hostname or "") if endpoint else ""
    if host in LOOPBACK_HOSTS:
        return
    where = f"at {endpoint}" if endpoint else "at its provider's default endpoint"
    raise LLMError(f"refusing to call model {model!r} {where}: {FORBID_REMOTE_ENV}=1 "
                   "allows only endpoints on 127.0.0.1/localhost")


def describe(exc: BaseException, timeout: float) -> tuple[str, bool, float | None]:
    """(what happened in a few words, whether to retry, the server's Retry-After if any)."""
    litellm = _litellm()
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



# -- the OpenAI chat format ---------------------------------------------------------------------

_SAFE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def safe_name(full: str) -> str:
    """A provider-safe function name for ``server.tool``: ``server__tool``, hashed if need be."""
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", full.replace(".", "__", 1))
    if _SAFE_NAME.match(name) and name == full.replace(".", "__", 1):
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
