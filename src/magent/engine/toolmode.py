"""How an agent calls its tools: natively (the provider's function calling) or in the ReAct
text format (seed 000), decided once per node from what the agent says and what the model's
client knows, and told as a ``tool_mode`` event (the live view and the trace show it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from magent.engine.context import NodeContext
    from magent.llm.base import ToolSpec
    from magent.models import Agent


def decide(agent: "Agent", client: Any, model: str) -> tuple[bool, str]:
    """(text mode, why) for ``agent`` on ``model``: ``tool_calling: native`` and ``text`` are
    followed as said; ``auto`` asks the client (``tool_support``: litellm's model map and the
    provider, with its reason; a client without it, a test double, answers ``supports_tools``)."""
    if agent.tool_calling != "auto":
        return agent.tool_calling == "text", f"the agent says tool_calling: {agent.tool_calling}"
    support = getattr(client, "tool_support", None)
    if support is not None:
        native, why = support(model)
    else:
        native = client.supports_tools(model)
        why = f"the model client says {model} {'calls' if native else 'does not call'} tools"
    return not native, why


def tell(ctx: NodeContext, agent: "Agent", node: str, specs: list["ToolSpec"]) -> bool:
    """Decide ``agent``'s mode, record it as a ``tool_mode`` event when it has tools (without,
    there is nothing to call: only ``tool_calling: text`` asks for the text format), and return
    whether it is text mode."""
    if not specs:
        return agent.tool_calling == "text"
    model = ctx.models.config(agent.name).model
    text, why = decide(agent, ctx.models.client(agent.name, ctx.session), model)
    ctx.bus.emit("tool_mode", node, agent=agent.name, model=model, mode="text" if text else "native",
                 setting=agent.tool_calling, reason=why, session=ctx.session.tag)
    return text
