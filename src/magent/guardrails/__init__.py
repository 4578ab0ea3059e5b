"""Guardrails (seed 000 input/output rails, seed 004's content filter): input rails check the
task text and each tool result before the model sees it, output rails each final answer. The
workflow's rails run first, then the agent's; each trips with an ``action``. ``rails`` holds the
kinds by name, ``screen`` runs a list over a text; ``magent.engine.guard`` calls them."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from magent.guardrails.base import Rail, RailConfig, RailError, RailInput, Verdict

__all__ = ["Rail", "RailConfig", "RailError", "RailInput", "Verdict"]


def __getattr__(name: str) -> Any:
    """The names above, from ``base`` on first use: a run without rails never imports it."""
    if name in __all__:
        from magent.guardrails import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
