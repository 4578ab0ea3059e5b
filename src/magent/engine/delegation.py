"""Agents as tools: an agent with ``sub_agents: [researcher]`` can call ``agents.researcher``.

A call opens a child session whose history starts with the call's ``task`` alone
(the sub-agent never sees its caller's conversation), runs the sub-agent's own
ReAct loop there — its tools, limits and model — and returns its final answer as
the call's result. A sub-agent that fails is the caller's observation, not a crash.
Sub-agents nest up to the workflow's ``max_delegation_depth`` (default 3).

Durability: the child session is checkpointed as soon as it opens, and the call
is keyed by its id, so a resumed run continues the same child where it stood
instead of starting it again; a call whose result is already in the caller's
history is never made again.
"""

from __future__ import annotations

from magent.engine.context import NodeContext
from magent.models.session import MAIN_SESSION

import time

from magent.engine.children import AgentLoop, run_agent_session
from magent.engine.observations import add_observation
from magent.llm.base import ToolSpec
from magent.models import Agent, ToolCall
from magent.tools.base import ToolResult

SERVER = "agents"
"""The tool namespace of sub-agents: ``agents.NAME``."""

TASK_SCHEMA = {
    "type": "object",
    "properties": {"task": {"type": "string", "description": (
        "Everything the agent needs to do the work: the question, the context, the form of the "
        "answer. It does not see this conversation.")}},
    "required": ["task"],
}


def delegation_specs(ctx: NodeContext, agent: Agent) -> list[ToolSpec]:
    """The ``agents.NAME`` tools ``agent`` is offered, one per sub-agent."""
    specs = []
    for name in agent.sub_agents:
        sub = ctx.deps.graph.agent(name)
        specs.append(ToolSpec(
            name=f"{SERVER}.{name}", parameters=TASK_SCHEMA,
            description=(f"Delegate a task to the {name} agent ({sub.role}). It works in a "
                         "conversation of its own, with its own tools, and returns its final answer.")))
    return specs


def chain(ctx: NodeContext) -> str:
    """Who delegated to whom down to ``ctx``'s session: ``editor → researcher → fact_checker``."""
    names = []
    session = ctx.session
    while not session.is_main:
        names.append(session.agent or session.kind)
        session = ctx.run.state.sessions[session.parent or MAIN_SESSION]
    names.append(ctx.run.state.main.state.current_agent or "main")
    return " → ".join(reversed(names))


async def delegate(ctx: NodeContext, node: str, call: ToolCall, caller: Agent, loop: AgentLoop) -> None:
    """Make one ``agents.NAME`` call, running the sub-agent's ``loop``; its outcome becomes the
    call's observation."""
    name = call.tool
    started = time.perf_counter()
    ctx.bus.emit("tool_call", node, call_id=call.id, tool=call.full_name,
                 arguments=ctx.deps.redactor.data(call.arguments) if call.raw_arguments is None
                 else {"_raw": ctx.deps.redactor.text(call.raw_arguments)})
    task = call.arguments.get("task") if call.raw_arguments is None else None
    if not isinstance(task, str) or not task.strip():
        add_observation(ctx, node, call, "ERROR", f"{call.full_name} needs a 'task' argument: the "
                        "instruction for the agent, as text")
        return
    key = f"call:{call.id}"
    child = ctx.run.child(ctx.session, key)
    if child is None:
        limit = ctx.deps.graph.workflow.max_delegation_depth
        if ctx.session.depth + 1 > limit:
            add_observation(ctx, node, call, "ERROR",
                            f"cannot call {call.full_name}: sub-agents nest at most {limit} deep "
                            f"({chain(ctx)} is already {ctx.session.depth} deep; "
                            "max_delegation_depth in the workflow)")
            return
        child = ctx.run.open_session(ctx.session, kind="agent", key=key, node=node, agent=name,
                                     task=task, speaker=caller.name)
        ctx.checkpoints.session_started()  # from here on, a resumed run continues this child
    outcome = await run_agent_session(ctx.run, child, node, loop)
    duration = int((time.perf_counter() - started) * 1000)
    if outcome.ok:
        result = ToolResult(outcome="SUCCESS", content=outcome.text, tool=call.full_name,
                            duration_ms=duration, notes=[f"session {child.id}"])
    else:
        text = f"agent {name!r} failed: {outcome.text}"
        result = ToolResult(outcome="FAILURE", content=text, error=text, tool=call.full_name,
                            duration_ms=duration, notes=[f"session {child.id}"])
    add_observation(ctx, node, call, result.outcome, result.content, result)
