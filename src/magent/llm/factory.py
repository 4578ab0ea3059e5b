"""Choosing a model client for an agent, and checking its model config before a run.

``preflight`` runs before any model call so that a bad model setup fails at once
with exit code 2 (``ConfigError``), not half-way through a run with exit 1.
Scripted agents never import litellm; real models import it here, on first use.
"""

from __future__ import annotations

import threading
from pathlib import Path

from magent.errors import ConfigError
from magent.llm.base import LLMClient
from magent.llm.scripted import SCRIPTED, ScriptedClient, load_script, resolve_script
from magent.models.agent import FallbackModel, LLMConfig

_shared_lock = threading.Lock()
_shared = None


def make_client(config: LLMConfig, *, agent: str, base_dir: Path,
                cursors: dict[str, int]) -> LLMClient:
    """The client for ``agent``: a ``ScriptedClient`` for ``model: scripted`` (advancing
    ``cursors[agent]``), else the process-wide ``LiteLLMClient``."""
    if config.model == SCRIPTED:
        path = resolve_script(config.script, base_dir, agent)
        return ScriptedClient(path, agent=agent, cursors=cursors, script=load_script(path))
    return shared_litellm_client()


def shared_litellm_client() -> LLMClient:
    global _shared
    with _shared_lock:
        if _shared is None:
            from magent.llm.litellm_client import LiteLLMClient

            _shared = LiteLLMClient()
        return _shared


def preflight(config: LLMConfig, *, agent: str, base_dir: Path) -> None:
    """Fail now, with one line naming the agent, if ``config`` cannot work.

    Checks: a scripted agent's script exists and is well formed; litellm knows the
    model (and the fallback) string; the provider's API key is in the environment,
    unless that model has an ``api_key`` or ``endpoint`` (the fallback's own, or the
    primary's when it shares them: see ``litellm_client.targets``). Raises ``ConfigError``.
    """
    if config.model == SCRIPTED:
        load_script(resolve_script(config.script, base_dir, agent))
        return
    from magent.llm import litellm_client

    litellm = litellm_client.load_litellm()
    fallback = config.fallback_model
    if (fallback.model if isinstance(fallback, FallbackModel) else fallback) == SCRIPTED:
        raise ConfigError(f"agent {agent!r}: the scripted model cannot be a fallback",
                          field="llm_config.fallback_model")
    chosen = litellm_client.targets(config.model, config.endpoint, config.api_key, fallback)
    for target in chosen:
        model = target.model
        if not litellm_client.provider_of(model, target.endpoint):
            raise ConfigError(f"agent {agent!r}: unknown model {model!r} "
                              "(write it as provider/model, e.g. openai/gpt-4o-mini)")
        if target.api_key or target.endpoint:
            continue
        missing = _missing_credentials(litellm, model)
        if len(missing) == 1:
            raise ConfigError(f"agent {agent!r}: model {model!r} needs {missing[0]}, "
                              "which is not set")
        if missing:
            raise ConfigError(f"agent {agent!r}: model {model!r} needs credentials in the "
                              f"environment; not set: {', '.join(missing)}")


def _missing_credentials(litellm, model: str) -> list[str]:  # type: ignore[no-untyped-def]
    """Environment variables holding secrets that litellm says ``model`` needs and lacks.

    Only secrets: a missing ``*_API_BASE`` usually has a working default (ollama on
    localhost), and a missing base URL shows up as a clear error on the first call.
    """
    try:
        missing = litellm.validate_environment(model=model).get("missing_keys") or []
    except Exception:
        return []
    return [k for k in missing if any(w in k for w in ("KEY", "TOKEN", "SECRET", "PASSWORD"))]


def warm_import(stream: bool = True) -> None:
    """Import litellm now (the engine runs this in a thread while MCP servers start).

    Also loads what litellm otherwise imports during the first call (~1 s), so the
    first model turn is not slower than the rest; ``stream=False`` (nobody reads the run's
    text as it comes): only what a call asked for whole needs. A no-op once done.
    """
    from magent.llm.litellm_client import warm

    warm(stream)
