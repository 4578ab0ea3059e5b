"""Checks of an agent's model routing (``llm_config.models`` and ``routing``) that need the
whole config: which model a rule names, and whether its condition parses. Errors name the
file, line and field, with a did-you-mean where one fits."""

from __future__ import annotations

import difflib
from typing import Any

from magent.config.yamlfile import SourceFile
from magent.models.agent import LLMConfig


def model_names(config: LLMConfig) -> list[str]:
    """The model string of each of ``config``'s models, the primary first."""
    return [m if isinstance(m, str) else m.model for m in config.models] or [config.model]


def check_routing(source: SourceFile, config: LLMConfig, at: tuple[Any, ...]) -> None:
    """Raise ``ConfigError`` at the first rule that cannot work."""
    from magent.engine.conditions import ConditionError, check

    names = model_names(config)
    if config.models and names[0] != config.model:
        raise source.error(f"model {config.model!r} and the first of models ({names[0]!r}) differ: "
                           "the primary is the first of models (leave model out)", at + ("models", 0))
    if "scripted" in names and len(names) > 1:
        raise source.error("the scripted model plays one script: it cannot be routed with other models",
                           at + ("models",))
    for i, rule in enumerate(config.routing):
        where = at + ("routing", i)
        if rule.when is not None:
            try:
                check(rule.when)
            except ConditionError as exc:
                raise source.error(str(exc), where + ("when",)) from None
        index_of(source, rule.model, names, where + ("model",))


def index_of(source: SourceFile, model: int | str, names: list[str], where: tuple[Any, ...]) -> int:
    """The index into ``names`` that a rule's ``model`` names."""
    listed = ", ".join(f"{i}: {n}" for i, n in enumerate(names))
    if isinstance(model, int):
        if 0 <= model < len(names):
            return model
        raise source.error(f"no model {model} in models (they are {listed})", where)
    if model in names:
        return names.index(model)
    close = difflib.get_close_matches(model, names, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise source.error(f"model {model!r} is not one of models ({hint}they are {listed})", where)
