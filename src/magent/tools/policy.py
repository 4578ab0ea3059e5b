"""Per-agent tool rails (seed 000): which tools an agent may call, and how many per turn.
Refused calls become ERROR observations with the reason, so the model learns why."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Sequence, TypeVar

from magent.llm.base import ToolSpec
from magent.models import Agent, Tool
from magent.tools.base import ToolResult
from magent.tools.registry import ToolRegistry, matches

C = TypeVar("C")


@dataclass
class ToolPolicy:
    agent: str
    registry: ToolRegistry
    tools: list[Tool] = field(default_factory=list)
    max_calls_per_turn: int | None = None
    patterns: list[str] = field(default_factory=list)
    """The agent's ``tools`` patterns, and its ``deny_tools`` below (for tools not started)."""
    deny: list[str] = field(default_factory=list)

    @classmethod
    def for_agent(cls, agent: Agent, registry: ToolRegistry) -> "ToolPolicy":
        tools = registry.resolve(agent.tools, agent.deny_tools)
        return cls(agent=agent.name, registry=registry, tools=tools,
                   max_calls_per_turn=agent.max_calls_per_turn,
                   patterns=list(agent.tools), deny=list(agent.deny_tools))

    @cached_property
    def names(self) -> set[str]:
        """The allowed ``server.tool`` names (pass as ``allowed=`` to ``ToolRegistry.call``; read,
        never changed). Made once: a policy's tools are resolved when it is made."""
        return {t.full_name for t in self.tools}

    @property
    def specs(self) -> list[ToolSpec]:
        """The tools offered to the model, sorted by name."""
        return [ToolSpec(name=t.full_name, description=t.description, parameters=t.input_schema)
                for t in self.tools]

    def allowed(self, name: str) -> bool:
        return name in self.names

    def unavailable(self, name: str) -> ToolResult | None:
        """The ERROR result of a call to a tool the agent's patterns allow whose server failed to
        start (``ToolRegistry.unavailable``); None for any other tool."""
        down = self.registry.unavailable(name)  # (None for nearly every call: asked first)
        if down is None or not matches(name, self.patterns, self.deny):
            return None
        return down

    def needs_approval(self, name: str) -> bool:
        """A person must approve each call of this tool before it runs (the engine pauses)."""
        tool = self.registry.get(name)
        return bool(tool and tool.needs_approval)

    def is_idempotent(self, name: str) -> bool:
        """Safe to re-run on recovery: the config's ``idempotent``, else the server's
        ``idempotentHint`` (both already folded into the registry's tool), else False."""
        tool = self.registry.get(name)
        return bool(tool is not None and tool.idempotent)

    def split(self, calls: Sequence[C]) -> tuple[list[C], list[tuple[C, str]]]:
        """Calls of one model response → (to run, refused with the reason), in order. Only
        ``max_calls_per_turn`` is enforced here; ``ToolRegistry.call`` refuses unknown tools."""
        cap = self.max_calls_per_turn
        if cap is None or len(calls) <= cap:
            return list(calls), []
        reason = (f"refused: agent {self.agent!r} may make at most {cap} tool call(s) per turn; "
                  f"this response asked for {len(calls)}")
        return list(calls[:cap]), [(c, reason) for c in calls[cap:]]

    @staticmethod
    def refusal(name: str, reason: str) -> ToolResult:
        """The observation for a call that was not run."""
        return ToolResult(outcome="ERROR", content=reason, error=reason, tool=name)

    def describe(self) -> dict[str, Any]:
        """What the trace records about the rails at the start of an agent node."""
        return {"agent": self.agent, "tools": sorted(self.names),
                "max_calls_per_turn": self.max_calls_per_turn,
                "needs_approval": sorted(t.full_name for t in self.tools if t.needs_approval)}
