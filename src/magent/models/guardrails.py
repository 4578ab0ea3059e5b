"""Guardrails as a workflow or agent declares them (seed 000 ``guardrail_config``).

``RailDef`` holds only what every rail has; each rail kind in ``magent.guardrails``
declares its own config (a subclass) and the graph loader validates each rail
with it, so adding a kind never edits this file.
"""

from pydantic import ConfigDict, Field

from magent.models.base import Model


class RailDef(Model):
    """One rail: its kind (``type``) and kind-specific fields, checked by the kind."""

    model_config = ConfigDict(extra="allow")

    type: str
    """Rail kind: ``regex``, ``pii``, ``max_length``, ``json_schema``, ``topic``, ``judge``, ``custom``."""


class Guardrails(Model):
    """Checks on what goes into a model and what comes out of it, run in order."""

    input: list[RailDef] = Field(default_factory=list)
    """Run on the task text and on every tool result before the model sees it; those that check
    tool arguments (``tool_arguments``) also on each tool call's arguments before it runs."""
    output: list[RailDef] = Field(default_factory=list)
    """Run on each final answer of an agent."""
