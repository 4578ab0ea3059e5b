"""How nodes call tools: the agent's rails, pauses a call may need, and one call made durable.

A call is bracketed by events: ``tool_call`` (the intent) before it runs and
``tool_result`` after. On recovery a call with an intent and no result may or
may not have happened, which is why only idempotent tools are re-run blindly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from magent import failpoints
from magent.engine import argrails, guard
from magent.engine.context import NodeContext
from magent.engine.control import PauseRun
from magent.engine.observations import add_observation
from magent.models import HumanRequest, ToolCall
from magent.store.events import truncate
from magent.tools.base import CallContext, ToolResult, current_call
from magent.tools.policy import ToolPolicy


def check_before_call(ctx: NodeContext, node: str, call_id: str, name: str, arguments: Any, asker: str) -> None:
    """Raise ``PauseRun`` if this call needs a person first: in order, an input rail asked about
    its arguments; the tool's definition changed since the task pinned it; the run may have made
    it before it died and it is not idempotent; it is marked ``needs_approval``. A decision
    already given for ``call_id`` (after a resume) lets it through."""
    if call_id in ctx.calls.decisions or argrails.refusal(ctx, call_id):
        return  # decided already, or not to be made (``declined`` says why)
    argrails.check_pause(ctx, node, call_id, name, arguments)
    tool = ctx.deps.tools().get(name)
    if tool is None:
        return  # unknown tools are refused by the registry as an observation
    details = {"call_id": call_id, "tool": name, "arguments": arguments}
    change = ctx.deps.pins.check(tool)
    if change is not None:
        raise PauseRun(HumanRequest(kind="tool_changed", node=node, allowed_actions=["approve", "reject"],
                                    question=change.question, output=change.text(),
                                    details={**details, "change": change.to_dict()}))
    if not tool.idempotent and (call_id in ctx.recovery.started_calls or call_id in ctx.calls.unsure):
        raise PauseRun(HumanRequest(
            kind="tool_recovery", node=node, allowed_actions=["approve", "reject"], output=_shown(name, arguments),
            question=(f"The run stopped while {name} was running, and it is not marked idempotent. "
                      "Run it again (approve) or skip it (reject)?"), details=details))
    if tool.needs_approval:
        raise PauseRun(HumanRequest(kind="tool_approval", node=node, allowed_actions=["approve", "reject"],
                                    question=f"{asker} wants to call {name}. Allow it?",
                                    output=_shown(name, arguments), details=details))


def check_logins(ctx: NodeContext, node: str) -> None:
    """Pause (kind ``auth``) when a tool server of the run wants an OAuth login magent does not
    have: the person runs the login command the pause names, then ``magent resume``."""
    for name, provider in sorted(ctx.deps.tools().providers.items()):
        login = getattr(provider, "login_needed", None)
        if login is not None:
            raise PauseRun(HumanRequest(
                kind="auth", node=node, allowed_actions=["approve"],
                question=f"{login}, then `magent resume {ctx.deps.task.id[:8]}`",
                details={"server": name, "command": login.command}))


def _shown(name: str, arguments: Any) -> str:
    """A call as a person is asked about it (made only when one is)."""
    return f"{name}({truncate(str(arguments), 500)})"


def declined(ctx: NodeContext, call_id: str) -> str | None:
    """Why ``call_id`` is not run: an input rail blocked its arguments, or a person declined it."""
    blocked = argrails.refusal(ctx, call_id)
    if blocked is not None:
        return blocked
    decision = ctx.calls.decisions.get(call_id)
    if decision is not None and decision.action == "reject":
        return "a person declined this call" + (f": {decision.message}" if decision.message else "")
    return None


def approval_note(ctx: NodeContext, call_id: str) -> str:
    """What a person said when approving ``call_id``, to put before the call's result."""
    decision = ctx.calls.decisions.get(call_id)
    if decision is not None and decision.action == "run" and decision.message:
        return f"[a person approved this call: {decision.message}]\n"
    return ""


async def run_tool_call(ctx: NodeContext, node: str, call: ToolCall, policy: ToolPolicy) -> ToolResult:
    """Run one call the model asked for; its result becomes an entry whatever happens."""
    name = call.full_name
    arguments = call.arguments  # (as the input rails left them: ``argrails.screen_turn``)
    in_flight(ctx, call.id)
    idempotent = policy.is_idempotent(name)
    # The turn that asked for the call on disk before it runs, and, for a tool that is not
    # idempotent, its intent too (the intent is written before the call either way: a kill -9
    # keeps it). An idempotent call waits only for the commit its turn began when its reply was
    # written (``Checkpoints.reply_written``): it writes its intent and gets ready while the reply
    # is synced. Without such a commit it waits before its intent, sharing the next one.
    turn = ctx.checkpoints.reply_synced(ctx.session) if idempotent else None
    if idempotent and turn is None:
        await ctx.checkpoints.before_tool()
    ctx.bus.emit("tool_call", node, call_id=call.id, tool=name,
                 arguments=ctx.deps.redactor.data(arguments) if call.raw_arguments is None
                 else {"_raw": ctx.deps.redactor.text(call.raw_arguments)})
    if not idempotent:
        await ctx.checkpoints.before_tool(idempotent=False)
    failpoints.hit("after_tool_intent")
    if call.raw_arguments is not None:
        result = ToolResult(outcome="ERROR", tool=name,
                            content=f"arguments were not a JSON object: {truncate(call.raw_arguments, 200)!r}",
                            error="invalid JSON arguments")
    elif (down := policy.unavailable(name)) is not None:
        result = down
    else:
        screen = guard.result_screen(ctx, node, policy.agent, call)
        if turn is not None:
            await turn
            turn = None
        context = current_call.set(CallContext(task_id=ctx.deps.task.id, agent=policy.agent, node=node,
                                               call_id=call.id, emit=ctx.bus.emit,
                                               elicitation=elicitation_of(ctx, policy.agent),
                                               record=recorder(ctx, node, policy.agent, call.id),
                                               output=live_output(ctx, node, call.id, name)))
        try:  # (``tools.base.calling``, without a generator per call)
            result = await ctx.deps.tools().call(name, arguments, allowed=policy.names, screen=screen)
        finally:
            current_call.reset(context)
        failpoints.hit("after_tool_call")
        if screen is not None and not screen.settle(result):
            return result  # held for a person, or blocked (``guard.settle_turn`` acts on it)
        note = approval_note(ctx, call.id)
        if note:
            result.content = note + result.content
    if turn is not None:  # a call that did not run: its result still follows its turn to disk
        await turn
    add_observation(ctx, node, call, result.outcome, result.content, result)
    landed(ctx, call.id)
    return result


def elicitation_of(ctx: NodeContext, agent: str | None) -> str | None:
    """The agent's ``elicitation`` setting (None for a workflow's own call)."""
    loaded = ctx.deps.graph.agents.get(agent) if agent else None
    return loaded.agent.elicitation if loaded is not None else None


def recorder(ctx: NodeContext, node: str, agent: str | None, call_id: str) -> Callable[..., None]:
    """``CallContext.record`` for a call: an event beside it in the trace, its fields masked."""
    def record(type_: str, **fields: Any) -> None:
        ctx.bus.emit(type_, node, agent=agent, call_id=call_id, **ctx.deps.redactor.data(fields))
    return record


def live_output(ctx: NodeContext, node: str, call_id: str, tool: str) -> Callable[[str, str], None] | None:
    """What a tool prints as it runs, as live-only ``tool_output`` events (masked like the model's
    streamed text); None when no sink watches live events."""
    if not ctx.deps.bus.wants_live:
        return None

    def output(stream: str, line: str) -> None:
        ctx.bus.emit("tool_output", node, call_id=call_id, tool=tool, stream=stream, line=ctx.deps.redactor.text(line))
    return output


def in_flight(ctx: NodeContext, call_id: str) -> None:
    """Note in the session's progress that ``call_id`` is running. Another session may write a
    checkpoint while it runs; this is how that checkpoint knows the call may have happened (its
    intent event comes before the checkpoint, where recovery does not look)."""
    ctx.calls.running.append(call_id)


def landed(ctx: NodeContext, call_id: str) -> None:
    running = ctx.calls.running
    if call_id in running:
        running.remove(call_id)


def turn_refusals(policy: ToolPolicy, turn_calls: list[ToolCall], pending: list[ToolCall]) -> dict[str, str]:
    """Pending calls beyond ``max_calls_per_turn`` in their response, with the reason."""
    _, refused = policy.split(turn_calls)
    if not refused:
        return {}
    pending_ids = {c.id for c in pending}
    return {c.id: reason for c, reason in refused if c.id in pending_ids}
