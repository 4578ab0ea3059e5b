"""How nodes call tools: the agent's rails, and one call made durable.

A call is bracketed by events: ``tool_call`` (the intent) before it runs and
``tool_result`` after. On recovery a call with an intent and no result may or
may not have happened, which is why only idempotent tools are re-run blindly.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from magent import failpoints
from magent.engine.events import truncate
from magent.llm.base import ToolSpec
from magent.models import Agent, Message, ToolCall
from magent.tools.base import ToolResult
from magent.tools.registry import ToolRegistry


@dataclass
class Toolset:
    """The tools one agent may use, and the rails on them (seed 000 tool rails)."""

    agent: Agent
    registry: ToolRegistry
    names: set[str] = field(default_factory=set)
    specs: list[ToolSpec] = field(default_factory=list)

    @classmethod
    def for_agent(cls, agent: Agent, registry: ToolRegistry) -> "Toolset":
        tools = registry.resolve(agent.tools, agent.deny_tools)
        specs = [ToolSpec(name=t.full_name, description=t.description, parameters=t.input_schema)
                 for t in tools]
        return cls(agent=agent, registry=registry, names={t.full_name for t in tools}, specs=specs)

    def allowed(self, name: str) -> bool:
        return name in self.names

    def needs_approval(self, name: str) -> bool:
        tool = self.registry.get(name)
        return bool(tool and tool.needs_approval)

    def idempotent(self, name: str) -> bool:
        tool = self.registry.get(name)
        return bool(tool and tool.idempotent)

    def refused(self, messages: list[Message], pending: list[ToolCall]) -> dict[str, str]:
        """Calls beyond ``max_calls_per_turn`` in the current response, with the reason."""
        cap = self.agent.max_calls_per_turn
        if cap is None:
            return {}
        turn_calls: list[ToolCall] = []
        for message in reversed(messages):
            if message.role == "assistant" and message.tool_calls:
                turn_calls = message.tool_calls
                break
        over = {c.id for c in turn_calls[cap:]}
        return {c.id: f"refused: this agent may make at most {cap} tool call(s) per turn"
                for c in pending if c.id in over}


def add_observation(ctx, node: str, call: ToolCall, outcome: str, content: str,
                    result: ToolResult | None = None) -> None:
    """Record a tool result the model will see (also for calls that never ran)."""
    text = content if outcome == "SUCCESS" else f"[{outcome}] {content}"
    entry = ctx.add_message(Message(role="tool", content=text, tool_call_id=call.id, name=call.full_name),
                            node=node)
    ctx.bus.emit("tool_result", node, call_id=call.id, tool=(result.tool if result else "") or call.full_name,
                 requested_tool=call.full_name, outcome=outcome,
                 result=truncate(ctx.redactor.text(result.content if result else content)),
                 error=(result.error if result else content) if outcome != "SUCCESS" else None,
                 duration_ms=result.duration_ms if result else 0,
                 artifact=result.artifact if result else None,
                 notes=(result.notes or None) if result else None, entry_id=entry.id)


async def run_tool_call(ctx, node: str, call: ToolCall, tools: Toolset) -> ToolResult:
    """Run one call the model asked for; its result becomes an entry whatever happens."""
    name = call.full_name
    ctx.bus.emit("tool_call", node, call_id=call.id, tool=name,
                 arguments=ctx.redactor.data(call.arguments) if call.raw_arguments is None
                 else {"_raw": ctx.redactor.text(call.raw_arguments)})
    if not tools.idempotent(name):
        ctx.td.sync()  # the intent must survive a power loss before a call that cannot be repeated
    failpoints.hit("after_tool_intent")
    if call.raw_arguments is not None:
        result = ToolResult(outcome="ERROR", tool=name,
                            content=f"arguments were not a JSON object: {truncate(call.raw_arguments, 200)!r}",
                            error="invalid JSON arguments")
    else:
        result = await ctx.registry.call(name, call.arguments, allowed=tools.names)
        failpoints.hit("after_tool_call")
    add_observation(ctx, node, call, result.outcome, result.content, result)
    return result
