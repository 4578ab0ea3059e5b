"""One meaning of ``endpoint``: the base URL a provider's docs or a local server shows.

litellm joins a path to ``api_base`` that differs per provider: ``/chat/completions`` for the
OpenAI-compatible ones (whose documented base ends in ``/v1``), ``/v1/messages`` for Anthropic
(whose docs show ``https://api.anthropic.com/v1``), ``/models/MODEL:streamGenerateContent`` for
Gemini (whose base is ``.../v1beta``), ``/api/chat`` for Ollama (whose OpenAI-compatible base is
``.../v1``). ``base_url`` turns the URL a user copied into the one litellm wants, where that can
be worked out for sure; ``not_found`` names the URL that was called and what to change when a server
answers 404 all the same. Imports nothing of litellm.
"""

from __future__ import annotations

from urllib.parse import urlparse

OPENAI_LIKE = {"openai", "text-completion-openai", "openai_like", "custom_openai", "hosted_vllm", "vllm",
               "lm_studio", "llamafile", "azure", "groq", "deepseek", "together_ai", "fireworks_ai",
               "openrouter", "xai", "cerebras", "mistral"}
"""Providers litellm reaches at ``api_base + /chat/completions``."""


def base_url(provider: str, endpoint: str | None) -> str | None:
    """``endpoint`` as litellm wants it for ``provider``: Anthropic's and Ollama's without a
    trailing ``/v1`` (Ollama's also without ``/api``), Gemini's bare host with ``/v1beta``."""
    if not endpoint:
        return endpoint
    url = endpoint.rstrip("/")
    if provider == "anthropic":
        return _without(url, "/v1")
    if provider in ("ollama", "ollama_chat"):
        return _without(_without(url, "/v1"), "/api")
    if provider == "gemini" and urlparse(url).path in ("", "/"):
        return url + "/v1beta"
    return endpoint


def called(provider: str, model: str, endpoint: str) -> str:
    """The URL litellm posts a streamed chat call to, for ``endpoint`` as the user gave it."""
    base = (base_url(provider, endpoint) or "").rstrip("/")
    name = model.split("/", 1)[1] if "/" in model else model
    if provider == "anthropic":
        return f"{base}/v1/messages"
    if provider == "gemini":
        return f"{base}/models/{name}:streamGenerateContent"
    if provider == "ollama_chat":
        return f"{base}/api/chat"
    if provider == "ollama":
        return f"{base}/api/generate"
    return f"{base}/chat/completions"


def not_found(provider: str, model: str, endpoint: str | None) -> str:
    """What a 404 from ``endpoint`` means and what to change, in a few words (``""`` when magent
    called the provider's own default URL: then it is the model that is not found)."""
    if not endpoint:
        return ""
    url = called(provider, model, endpoint)
    if provider == "anthropic":
        fix = "Anthropic's endpoint is the server's root, e.g. https://api.anthropic.com"
    elif provider == "gemini":
        fix = "Gemini's endpoint ends in /v1beta, e.g. https://generativelanguage.googleapis.com/v1beta"
    elif provider in ("ollama", "ollama_chat"):
        fix = ("Ollama's endpoint is the server's root, e.g. http://localhost:11434 (for its /v1 "
               "API use the model string openai/MODEL)")
    elif provider in OPENAI_LIKE and not endpoint.rstrip("/").endswith("/v1"):
        fix = f"an OpenAI-compatible server usually serves it under /v1: try endpoint {endpoint.rstrip('/')}/v1"
    else:
        fix = "check that the server serves this model under that name"
    return f"magent called POST {url}; {fix}"


def _without(url: str, suffix: str) -> str:
    return url[: -len(suffix)] if url.endswith(suffix) else url
