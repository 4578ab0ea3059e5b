"""Guardrails: checks on what goes into a model and what comes out (seed 000 input/output rails,
seed 004's content filter).

A workflow or an agent declares ``guardrails: {input: [...], output: [...]}``; the
workflow's rails run first, then the agent's own. Input rails check the task text
when a run starts and every tool result before the model sees it; output rails
check each final answer. Each rail is a kind (``regex``, ``pii``, ``max_length``,
``json_schema``, ``topic``, ``judge``, ``custom``) and an ``action`` for when it
trips: block, mask, revise, pause or warn.

Layout: ``base`` (what a kind is), one module per family of kinds, ``rails``
(the kinds by name and the loader), ``screen`` (running a list of rails over a
text). ``magent.engine.guard`` is where the engine calls them.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from magent.guardrails.base import Rail, RailConfig, RailError, RailInput, Verdict

__all__ = ["Rail", "RailConfig", "RailError", "RailInput", "Verdict"]


def __getattr__(name: str) -> Any:
    """The names above, from ``base`` on first use: a run whose agents declare no rails imports
    this package (``rails`` is in it) but never ``base``, its classes and its dataclasses."""
    if name in __all__:
        from magent.guardrails import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
