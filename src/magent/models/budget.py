"""Usage budgets (issue 12): limits on what a task may spend, and what it has spent."""

from typing import Literal

from pydantic import Field

from magent.models.base import Model

LIMITS = ("max_tokens", "max_cost_usd", "max_model_calls", "max_tool_calls")
"""The limits a budget may set, in the order they are checked."""


class Budget(Model):
    """Limits on an agent's or a task's usage; reaching one pauses the task (or fails it)."""

    max_tokens: int | None = Field(default=None, gt=0)
    """Tokens in and out of every model call, together."""
    max_cost_usd: float | None = Field(default=None, gt=0)
    """Cost in US dollars, as litellm prices the calls (a model it has no price for counts 0)."""
    max_model_calls: int | None = Field(default=None, gt=0)
    """Model calls that were answered."""
    max_tool_calls: int | None = Field(default=None, gt=0)
    """Tool calls made (sub-agent calls not included: their own calls are)."""
    on_exceeded: Literal["pause", "fail"] = "pause"
    """What reaching a limit does: pause for a person (who may raise it), or fail the task."""

    def limits(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in LIMITS if getattr(self, name) is not None}


class Spent(Model):
    """What a task (or one agent in it) has used so far, as budgets count it."""

    tokens: int = 0
    cost_usd: float = 0.0
    model_calls: int = 0
    tool_calls: int = 0

    def of(self, limit: str) -> float:
        """The figure ``limit`` (``max_tokens``...) is compared with."""
        return {"max_tokens": self.tokens, "max_cost_usd": self.cost_usd,
                "max_model_calls": self.model_calls, "max_tool_calls": self.tool_calls}[limit]
