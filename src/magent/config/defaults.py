"""Where a run's defaults come from, and the effective settings ``magent config show`` prints.

The model, highest first: ``--model``; the agent's ``llm_config.model``; ``MAGENT_MODEL`` (with
``MAGENT_ENDPOINT``); ``model`` in ``config/defaults.yaml``. The default endpoint goes only with
the default model. A task keeps the defaults it started with, so a resume uses the same model."""

from __future__ import annotations

import contextlib
import os
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from magent import paths

MODEL_ENV = "MAGENT_MODEL"
ENDPOINT_ENV = "MAGENT_ENDPOINT"
defaults_file = paths.defaults_file


@dataclass(frozen=True)
class DefaultModel:
    model: str | None
    endpoint: str | None
    source: str
    """Where they came from: an environment variable, a file, or a task's snapshot."""

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "endpoint": self.endpoint}


_pinned: ContextVar[DefaultModel | None] = ContextVar("magent_pinned_defaults", default=None)


def default_model(root: Path | None = None) -> DefaultModel:
    """The default model in force (see the module's precedence)."""
    pinned = _pinned.get()
    if pinned is not None:
        return pinned
    if os.environ.get(MODEL_ENV):
        return DefaultModel(os.environ[MODEL_ENV], os.environ.get(ENDPOINT_ENV) or None, MODEL_ENV)
    path = defaults_file(root)
    loaded = load_defaults(path)
    if loaded.model:
        return DefaultModel(loaded.model, os.environ.get(ENDPOINT_ENV) or loaded.endpoint, str(path))
    return DefaultModel(None, None, "not set")


def load_defaults(path: Path) -> Any:
    """``config/defaults.yaml`` as ``RunDefaults`` (empty when absent). Raises ``ConfigError``."""
    from magent.config.validate import validate
    from magent.config.yamlfile import load_file
    from magent.models.defaults import RunDefaults

    if not os.path.lexists(path):  # (a link to nowhere is read, and said)
        return RunDefaults()
    source = load_file(path)
    if source.data in (None, {}):
        return RunDefaults()
    return validate(source, RunDefaults)


@contextlib.contextmanager
def pinned(defaults: dict[str, Any] | None) -> Iterator[None]:
    """Load agents with the defaults a task started with (from its snapshot), not today's."""
    if defaults is None:
        yield
        return
    token = _pinned.set(DefaultModel(defaults.get("model"), defaults.get("endpoint"), "the task's snapshot"))
    try:
        yield
    finally:
        _pinned.reset(token)


def with_default_model(data: Any) -> tuple[Any, bool]:
    """An agent's raw fields with the default model filled in when they name none, and whether it was."""
    if not isinstance(data, dict):
        return data, False
    llm = data.get("llm_config")
    if llm is None:  # absent, or a key whose lines are all commented out
        llm = {}
    if not isinstance(llm, dict) or llm.get("model") is not None or llm.get("models"):
        return data, False
    found = default_model()
    if found.model is None:
        return data, False
    filled = {**llm, "model": found.model}
    if found.endpoint and "endpoint" not in llm:
        filled["endpoint"] = found.endpoint
    return {**data, "llm_config": filled}, True
