"""The litellm adapter: any litellm model string behind the ``LLMClient`` interface.

This is the only module of magent that imports litellm, and it does so on first
use (``load_litellm()``), so commands and runs that never call a real model never pay
for the import. What it adds on top of ``litellm.acompletion``:

- streaming when someone listens (``on_token``: the live view, ``--stream``, the API's
  ``on_token``), with text deltas handed on as they arrive and tool-call deltas assembled
  into whole calls (``stream``); a plain request otherwise (a batch row, a sub-agent, the
  API without ``on_token``): the same reply, without litellm's per-chunk work and the
  rebuilding of the whole response from its chunks, which cost it about twice the CPU;
- ``server.tool`` names mapped to provider-safe function names and back (``openai_format``);
- its own retry policy (``retry``; litellm's and the OpenAI SDK's are switched off, so
  one policy decides): exponential backoff with jitter on rate limits, server errors,
  connection errors and timeouts (as ``failures`` classifies them), honouring
  ``Retry-After``; then the fallback model with the same policy; every failed attempt
  listed in ``retries``;
- garbage from the model (empty reply, invalid tool JSON, unknown tool) is
  returned, never raised: the engine turns it into observations;
- the ``MAGENT_FORBID_REMOTE_LLM=1`` guard, checked before any network I/O.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
import time
import uuid
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable
from urllib.parse import urlparse

from magent.errors import LLMError
from magent.llm.base import Attempt, AttemptSink, LLMRequest, LLMResponse, LLMToolCall, TokenSink
from magent.llm.endpoints import base_url, not_found
from magent.llm.failures import IncompleteReply, cut_mid_stream, describe
from magent.llm.openai_format import ToolNames, safe_name, to_openai_messages, to_openai_tools
from magent.llm.retry import RetryPolicy
from magent.llm.scripted import estimate_tokens, parse_arguments
from magent.llm.stream import (Collected, collect, incomplete, server_counted, server_finish, usage_parts,
                               whole)

if TYPE_CHECKING:
    from magent.models.agent import FallbackModel

__all__ = ["LiteLLMClient", "Target", "check_endpoint_allowed", "cost_of", "provider_of", "safe_name",
           "targets", "warm"]

FORBID_REMOTE_ENV = "MAGENT_FORBID_REMOTE_LLM"
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}

# Providers that speak the OpenAI tools API (or an equivalent litellm translates):
# a model of theirs that litellm's map does not know is assumed to call tools.
TOOL_PROVIDERS = {
    "openai", "text-completion-openai", "openai_like", "custom_openai", "hosted_vllm", "vllm",
    "lm_studio", "llamafile", "azure", "anthropic", "gemini", "vertex_ai", "mistral", "groq",
    "deepseek", "together_ai", "fireworks_ai", "openrouter", "xai", "cerebras", "bedrock",
    "ollama", "ollama_chat",
}

_import_lock = threading.Lock()


def load_litellm() -> Any:
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


# Modules litellm imports lazily during its first completion; ``warm()`` loads them early. Its
# first streamed completion also loads a tokenizer (tiktoken's cl100k, ~38 MB resident) to count
# the chunks; a reply asked for whole never needs it.
_FIRST_CALL_MODULES = ("openai.resources.chat", "litellm.proxy._types", "litellm._service_logger")
_FIRST_STREAM_MODULES = ("litellm.litellm_core_utils.default_encoding",)


def warm(stream: bool = True) -> None:
    """Import litellm and what its first call would import (best effort); ``stream=False``:
    what its first call asked for whole would."""
    import importlib

    load_litellm()
    for name in _FIRST_CALL_MODULES + (_FIRST_STREAM_MODULES if stream else ()):
        try:
            importlib.import_module(name)
        except Exception:  # a later litellm may have moved it: only a little slower then
            pass


# What litellm's model map says of a model does not change while a process runs: each answer
# below is looked up once per model (an unknown model's lookup searches the whole map, and
# three model calls a task would otherwise repeat it dozens of times).

@functools.lru_cache(maxsize=1024)
def provider_of(model: str, endpoint: str | None = None) -> str:
    """litellm's provider name for ``model``, or ``""`` when it does not know the model."""
    litellm = load_litellm()
    try:
        return str(litellm.get_llm_provider(model=model, api_base=endpoint)[1])
    except Exception:
        return ""


@dataclass
class Target:
    """A model to ask and where: one for the primary, one for the fallback."""

    model: str
    endpoint: str | None = None
    api_key: str | None = None


def targets(model: str, endpoint: str | None, api_key: str | None,
            fallback: "str | FallbackModel | None") -> list[Target]:
    """The primary model, then the fallback (if any) with the endpoint and key it uses.

    A fallback given as a mapping uses exactly its own ``endpoint`` and ``api_key``. One
    given as a model string shares the primary's when it has the same provider (another
    model on the same server); a model of another provider gets that provider's defaults,
    so the primary's key is never sent to another provider.
    """
    out = [Target(model, endpoint, api_key)]
    if isinstance(fallback, str):
        if fallback and fallback != model:
            same = provider_of(fallback, endpoint) == provider_of(model, endpoint)
            out.append(Target(fallback, endpoint if same else None, api_key if same else None))
    elif fallback is not None:
        out.append(Target(fallback.model, fallback.endpoint, fallback.api_key))
    return out


class LiteLLMClient:
    """``LLMClient`` over litellm. One instance may serve every agent of a run.

    ``base_delay``, ``max_delay`` and ``sleep`` exist so tests can make backoff fast
    and observable; leave them alone otherwise.
    """

    def __init__(self, *, base_delay: float | None = None, max_delay: float | None = None,
                 sleep: Callable[[float], Awaitable[Any]] | None = None):
        self.policy = RetryPolicy()
        if base_delay is not None:
            self.policy.base_delay = base_delay
        if max_delay is not None:
            self.policy.max_delay = max_delay
        self.sleep = sleep or asyncio.sleep

    async def complete(self, request: LLMRequest, on_token: TokenSink | None = None, *,
                       on_attempt: AttemptSink | None = None) -> LLMResponse:
        """One model turn, with retries and fallback. Raises ``LLMError`` when all is spent.

        ``on_attempt`` hears of every attempt as it starts and of every one that fails."""
        chosen = targets(request.model, request.endpoint, request.api_key, request.fallback_model)
        for target in chosen:
            check_endpoint_allowed(target.model, target.endpoint)
        report = on_attempt or (lambda attempt: None)
        failures: list[str] = []
        retries: list[str] = []
        for target in chosen:
            model, endpoint = target.model, target.endpoint
            provider = provider_of(model, endpoint)
            allowed = request.max_retries + 1
            for number in range(1, allowed + 1):
                attempt = Attempt(model=model, number=number, allowed=allowed, timeout=request.timeout,
                                  provider=provider, fallback=model != request.model)
                report(attempt)
                started = time.monotonic()
                try:
                    response = await self._attempt(target, request, on_token)
                except asyncio.CancelledError:  # the run is being stopped: this attempt ends here
                    attempt.error, attempt.cancelled = "cancelled: the run was stopped", True
                    attempt.duration_ms = int((time.monotonic() - started) * 1000)
                    report(attempt)
                    raise
                except Exception as exc:  # classified below; nothing escapes unexplained
                    what, retryable, retry_after = describe(exc, request.timeout, load_litellm(), endpoint,
                                                            not_found(provider, model, endpoint),
                                                            streamed=on_token is not None)
                    attempt.error, attempt.duration_ms = what, int((time.monotonic() - started) * 1000)
                    if retryable and number < allowed:
                        attempt.retry_in = self.policy.delay(number, retry_after)
                    report(attempt)
                    if not retryable:
                        note = "not retried" if number == 1 else f"after {number} attempts"
                        raise LLMError("; then ".join(
                            [*failures, f"{_named(model, endpoint, what)}: {what} ({note})"])) from None
                    if attempt.retry_in is not None:
                        retries.append(f"{model} attempt {number}: {what}; retrying in {attempt.retry_in:.1f} s")
                        await self.sleep(attempt.retry_in)
                        continue
                    failures.append(f"{_named(model, endpoint, what)}: {what} "
                                    f"({number} attempt{'s' if number != 1 else ''})")
                    retries.append(f"{model} attempt {number}: {what}; giving up on {model}")
                    break
                response.retries, response.attempt = retries, number
                return response
        raise LLMError("; then ".join(failures))

    def supports_tools(self, model: str) -> bool:
        """Whether ``model`` calls tools natively (``tool_support``); never raises."""
        return self.tool_support(model)[0]

    def tool_support(self, model: str) -> tuple[bool, str]:
        """Whether ``model`` calls tools natively, and why magent thinks so: litellm's
        ``supports_function_calling`` for a model its map knows (an ``ollama_chat/`` model as
        the same ``ollama/`` model); for one it does not know, whether its provider takes tools
        (``TOOL_PROVIDERS``). Never raises."""
        return _tool_support(model)

    def context_window(self, model: str) -> int | None:
        """Input tokens ``model`` accepts, as litellm's model map has it (None: unknown)."""
        return _context_window(model)

    def count_tokens(self, model: str, text: str) -> int | None:
        """Tokens of ``text`` with ``model``'s tokenizer (litellm's ``token_counter``: the
        provider's own where litellm has it, else tiktoken's); None if it cannot count."""
        try:
            return int(load_litellm().token_counter(model=model, text=text))
        except Exception:
            return None

    async def _attempt(self, target: "Target", request: LLMRequest, on_token: TokenSink | None) -> LLMResponse:
        litellm = load_litellm()
        model, endpoint = target.model, target.endpoint
        names = ToolNames([t.name for t in request.tools])
        streaming = on_token is not None
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": to_openai_messages(request, names),
            "stream": streaming,
            "temperature": request.temperature,
            "timeout": request.timeout,
            "drop_params": True,  # e.g. models that refuse a temperature: drop it, do not fail
            "max_retries": 0,  # the OpenAI SDK's own retries: off, the policy is ours
            "num_retries": 0,
        }
        if streaming:
            kwargs["stream_options"] = {"include_usage": True}
        if request.max_tokens:
            kwargs["max_tokens"] = request.max_tokens
        if endpoint:
            kwargs["api_base"] = base_url(provider_of(model, endpoint), endpoint)
        if target.api_key:
            kwargs["api_key"] = target.api_key
        elif endpoint and _needs_key(model):
            # A local OpenAI-compatible server usually wants no key, but the OpenAI SDK
            # refuses to send a request without one: give it a placeholder.
            kwargs["api_key"] = "sk-no-key-set"
        if request.tools:
            kwargs["tools"] = to_openai_tools(request.tools, names)
        if request.output_schema is not None and _supports_schema(model):
            kwargs["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "answer", "schema": request.output_schema, "strict": False}}
        started = time.monotonic()
        # The whole call, stream included, is bounded: a server that stalls mid-stream
        # times out like one that never answers.
        reply = await asyncio.wait_for(litellm.acompletion(**kwargs), timeout=request.timeout)
        if streaming:
            remaining = max(request.timeout - (time.monotonic() - started), 0.001)
            got, counted = await _drained(reply, on_token, remaining, endpoint, litellm)
        else:
            got = whole(reply)
            if got.finish is None:  # a body with no choice in it: not an answer
                raise IncompleteReply(incomplete(reply, got, endpoint))
            counted = got.usage is not None
        content, raw_calls, finish, usage = got.text, got.calls, got.finish, got.usage
        # A provider that sends no id gets a unique one: ids key results and recovery.
        calls = [LLMToolCall(id=c["id"] or f"call_{uuid.uuid4().hex[:24]}", name=names.full(c["name"]),
                             arguments=parse_arguments(c["arguments"]), raw_arguments=c["arguments"])
                 for i, c in enumerate(raw_calls)]
        if usage is not None:
            tokens_in, tokens_out = usage
        else:  # no usage came, not even litellm's own count: estimate, so totals are not silently zero
            tokens_in, tokens_out = estimate_tokens(request, content, calls)
        return LLMResponse(
            content=content, tool_calls=calls, model=model,
            provider=provider_of(model, endpoint), tokens_in=tokens_in,
            tokens_out=tokens_out, cost=cost_of(model, tokens_in, tokens_out, got.billed),
            **usage_parts(got.billed), estimated=not counted,
            latency_ms=int((time.monotonic() - started) * 1000),
            stop_reason="tool_calls" if calls else "refusal" if got.refusal else finish,
            refusal=got.refusal or None, response_model=got.model or None, streamed=streaming)


async def _drained(stream: Any, on_token: TokenSink | None, timeout: float, endpoint: str | None,
                   litellm: Any) -> tuple[Collected, bool]:
    """(what the stream held, whether the server itself counted its tokens); a stream cut
    short or one with no completion in it raises ``IncompleteReply``."""
    got = Collected()
    try:
        await asyncio.wait_for(collect(stream, on_token, got), timeout=timeout)
    except Exception as exc:  # a failure after some of the reply came is a cut stream
        if not cut_mid_stream(exc, got, litellm):
            raise
        raise IncompleteReply(incomplete(stream, got, endpoint)) from exc
    if server_finish(stream, got) is None:  # a cut stream, or no stream at all: not an answer
        raise IncompleteReply(incomplete(stream, got, endpoint))
    return got, server_counted(stream, got)


def _named(model: str, endpoint: str | None, what: str) -> str:
    """``model 'm' at URL`` (the endpoint unless ``what`` names it already)."""
    return f"model {model!r}" + (f" at {endpoint}" if endpoint and endpoint not in what else "")


@functools.lru_cache(maxsize=1024)
def _tool_support(model: str) -> tuple[bool, str]:
    try:
        litellm = load_litellm()
        provider = provider_of(model)
        name = model.split("/", 1)[1] if "/" in model else model
        for known in (model, f"ollama/{name}" if provider == "ollama_chat" else None):
            if known is None or not _in_map(known):
                continue
            native = bool(litellm.supports_function_calling(known))
            return native, f"litellm's model map says {known} {'calls' if native else 'does not call'} functions"
        if provider in TOOL_PROVIDERS:
            return True, f"litellm does not know {model}; {provider} servers take tools"
        return False, (f"litellm does not know {model} and {provider or 'its provider'} is not known to "
                       "take tools (tool_calling: native sends them anyway)")
    except Exception as exc:  # magent's best guess: most servers today take tools
        return True, f"litellm could not say ({type(exc).__name__}); tools sent natively"


@functools.lru_cache(maxsize=1024)
def _context_window(model: str) -> int | None:
    try:
        info = load_litellm().get_model_info(model)
    except Exception:
        return None
    window = info.get("max_input_tokens") or info.get("max_tokens")
    return int(window) if window else None


@functools.lru_cache(maxsize=1024)
def _in_map(model: str) -> bool:
    """Whether litellm's model map knows ``model``."""
    try:
        load_litellm().get_model_info(model)
    except Exception:
        return False
    return True


def _needs_key(model: str) -> bool:
    """Whether litellm finds no API key in the environment for ``model``'s provider."""
    try:
        missing = load_litellm().validate_environment(model=model).get("missing_keys") or []
    except Exception:
        return False
    return any("KEY" in name for name in missing)


def cost_of(model: str, tokens_in: int, tokens_out: int, usage: Any = None) -> float | None:
    """USD for a call as litellm's (local) price map has it; None when the model is not priced.

    Given the provider's whole ``usage`` (litellm's ``Usage``), litellm prices cache reads, cache
    writes and reasoning at their own rates; the counts alone would price every prompt token
    at the full input rate."""
    if not _priced(model):
        return None
    try:
        if usage is not None:
            prompt, completion = load_litellm().cost_per_token(model=model, usage_object=usage)
        else:
            prompt, completion = load_litellm().cost_per_token(
                model=model, prompt_tokens=tokens_in, completion_tokens=tokens_out)
        return float(prompt) + float(completion)
    except Exception:
        return None


@functools.lru_cache(maxsize=1024)
def _priced(model: str) -> bool:
    """Whether litellm's price map has ``model`` (asked once: an unpriced model's every call
    would otherwise search the whole map again to say the same)."""
    try:
        load_litellm().cost_per_token(model=model, prompt_tokens=1, completion_tokens=1)
    except Exception:
        return False
    return True


def check_endpoint_allowed(model: str, endpoint: str | None) -> None:
    """With ``MAGENT_FORBID_REMOTE_LLM=1``, refuse any endpoint not on this machine; with
    ``=all``, refuse every model call that would go through litellm (``magent.testing``)."""
    mode = os.environ.get(FORBID_REMOTE_ENV, "")
    if mode in ("", "0", "false", "False"):
        return
    if mode == "all":
        raise LLMError(f"refusing to call model {model!r}: {FORBID_REMOTE_ENV}=all forbids real "
                       "model calls (use the scripted model or a magent.testing double)")
    host = (urlparse(endpoint).hostname or "") if endpoint else ""
    if host in LOOPBACK_HOSTS:
        return
    where = f"at {endpoint}" if endpoint else "at its provider's default endpoint"
    raise LLMError(f"refusing to call model {model!r} {where}: {FORBID_REMOTE_ENV}=1 "
                   "allows only endpoints on 127.0.0.1/localhost")


@functools.lru_cache(maxsize=1024)
def _supports_schema(model: str) -> bool:
    """litellm's ``supports_response_schema`` (native structured output); False when unknown."""
    try:
        return bool(load_litellm().supports_response_schema(model=model))
    except Exception:
        return False
