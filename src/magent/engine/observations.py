"""Observations: a tool result the model will see, recorded as its entry and a ``tool_result``
event — for calls that ran (``engine.tooluse``), sub-agent calls (``engine.delegation``) and
calls that never ran (refused, blocked or withheld by a rail: ``engine.guard``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from magent.engine import argrails
from magent.models import Message, ToolCall
from magent.store.events import truncate
from magent.tools.base import ToolResult

if TYPE_CHECKING:
    from magent.engine.context import NodeContext


def add_observation(ctx: NodeContext, node: str, call: ToolCall, outcome: str, content: str,
                    result: ToolResult | None = None) -> None:
    """Record a tool result the model will see (also for calls that never ran)."""
    name = call.full_name
    text = content if outcome == "SUCCESS" else f"[{outcome}] {content}"
    entry_id = ctx.add_message(Message(role="tool", content=text, tool_call_id=call.id, name=name), node=node)
    # The event's fields in their order, those without a value left out rather than given as None
    # (the written event leaves them out either way; one per step, each one validated and dumped).
    redactor = ctx.deps.redactor
    fields: dict[str, Any] = {"call_id": call.id, "tool": (result.tool if result else "") or name}
    if result is not None and result.tool != name:
        fields["requested_tool"] = name
    fields["outcome"] = outcome
    fields["result"] = truncate(redactor.text(result.content if result else content))
    if outcome != "SUCCESS" and (error := redactor.text((result.error if result else content) or "")):
        fields["error"] = error
    if result is not None:
        if result.duration_ms is not None:
            fields["duration_ms"] = result.duration_ms
        if result.artifact is not None:
            fields["artifact"] = result.artifact
        if notes := redactor.data(result.notes):
            fields["notes"] = notes
        if result.attempts:
            fields["attempts"] = redactor.data(result.attempts)
    ctx.bus.emit("tool_result", node, **fields, entry_id=entry_id)
    argrails.done(ctx, call.id)  # (its rails' decision is spent once it has an observation)
