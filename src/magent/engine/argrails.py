"""Input rails on tool calls' arguments, and so on what an agent writes to long-term memory
(``memory.remember``'s ``content`` is an argument like any other).

Each string in a call's arguments (at any depth) meets the agent's input rails that check
arguments (``RailConfig.tool_arguments``: by default those that find sensitive data, ``pii``
and ``regex``). They run when the model's reply is read, before its entry is written, so a
masked value reaches no file and no tool. What a tripped rail does to the call:
docs/guides/guardrails.md.

Every decision is a ``guardrail`` event with ``source: tool_arguments``, the tool, the call id and
the argument's path (never the text). What was decided per call is kept in the session's progress
(``arg_rails``), so a resumed run acts on it without asking the rails again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from magent.engine.context import NodeContext
from magent.engine.control import PauseRun
from magent.engine.railrecords import RecordedRun, Records, emit_check, rail_label
from magent.models import HumanRequest, Message
from magent.models.progress import ArgumentVerdict


@dataclass(eq=False)
class TurnScreening:
    """The rails' decisions on one reply's calls, recorded once the reply's entry is written."""

    checks: list[tuple[Any, Any, dict[str, Any]]] = field(default_factory=list)
    """``(info, Check, where)`` for each rail decision."""
    records: Records = field(default_factory=Records)
    """The judges' model calls, if a rail asked one."""

    def record(self, ctx: NodeContext, node: str) -> None:
        for info, check, where in self.checks:
            emit_check(ctx, node, info, check, **where)
        if self.checks:
            self.records.flush(ctx, node, self.checks[0][0])


async def screen_turn(ctx: NodeContext, node: str, agent: str, message: Message) -> tuple[Message, TurnScreening | None]:
    """``message`` with its tool calls' arguments as the rails leave them, and their decisions."""
    rails = _rails(ctx, agent)
    calls = [c for c in message.tool_calls if c.raw_arguments is None]
    if not rails or not calls:
        return message, None
    turn = TurnScreening()
    replaced = {}
    for call in calls:
        arguments = await _screen_call(ctx, node, agent, rails, turn, call.id, call.full_name, call.arguments)
        if arguments != call.arguments:
            replaced[call.id] = call.model_copy(update={"arguments": arguments})
    if replaced:
        message = message.model_copy(update={"tool_calls": [replaced.get(c.id, c) for c in message.tool_calls]})
    return message, turn


async def screen_node_call(ctx: NodeContext, node: str, call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool node's arguments as the workflow's argument rails leave them (decisions recorded)."""
    rails = _rails(ctx, None)
    if not rails:
        return arguments
    turn = TurnScreening()
    screened = await _screen_call(ctx, node, "", rails, turn, call_id, name, arguments)
    turn.record(ctx, node)
    return screened


def _rails(ctx: NodeContext, agent: str | None) -> list[Any]:
    return [r for r in ctx.deps.graph.rails.input_for(agent) if r.checks_arguments]


async def _screen_call(ctx: NodeContext, node: str, agent: str, rails: list[Any], turn: TurnScreening, call_id: str,
                       name: str, arguments: Any) -> Any:
    """Every string of one call's arguments through ``rails``; a block or pause is kept in progress."""
    from magent.guardrails.base import RailInput
    from magent.guardrails.screen import screen

    info = RailInput("input", "tool_arguments", agent=agent, node=node, tool=name, task_id=ctx.deps.task.id)
    run = RecordedRun(info, lambda rail, config: ctx.models.client_of(rail.key, config, rail.base_dir),
                      turn.records.call, turn.records.attempt)
    verdict: ArgumentVerdict | None = None  # the first block or pause

    async def walk(value: Any, path: str) -> Any:
        nonlocal verdict
        if isinstance(value, dict):
            return {k: await walk(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [await walk(v, f"{path}[{i}]") for i, v in enumerate(value)]
        if not isinstance(value, str) or not value:
            return value
        where = {"tool": name, "call_id": call_id, "argument": path}
        s = await screen(value, rails, run, lambda c: turn.checks.append((info, c, where)))
        if s.outcome in ("block", "pause") and verdict is None:
            assert s.rail is not None
            label = rail_label(s.rail, "input")
            verdict = ArgumentVerdict(
                outcome=s.outcome, rail=label, key=s.rail.key, reason=s.reason, argument=path,
                refusal=f"{label} blocked the arguments of {name} ({path}): {s.message}")
        return s.text if s.outcome in ("pass", "pause") else s.stored

    screened = await walk(arguments, "")
    if verdict is not None:
        ctx.calls.arg_rails[call_id] = verdict
    return screened


def refusal(ctx: NodeContext, call_id: str) -> str | None:
    """What the model is told instead of a result when a rail blocked ``call_id``'s arguments."""
    v = ctx.calls.arg_rails.get(call_id)
    return v.refusal if v is not None and v.outcome == "block" else None


def check_pause(ctx: NodeContext, node: str, call_id: str, name: str, arguments: Any) -> None:
    """Raise ``PauseRun`` when a rail asked a person about this call and no one has answered."""
    v = ctx.calls.arg_rails.get(call_id)
    if v is None or v.outcome != "pause":
        return
    raise PauseRun(HumanRequest(
        kind="guardrail", node=node, allowed_actions=["approve", "reject"],
        output=f"{name}({ctx.deps.redactor.text(str(arguments))[:500]})",
        question=(f"{v.rail.capitalize()} flagged the arguments of {name} ({v.argument}): {v.reason}. "
                  "Make the call (approve) or not (reject)?"),
        details={"stage": "input", "source": "tool_arguments", "call_id": call_id, "tool": name,
                 "rail": v.rail, "key": v.key}))


def done(ctx: NodeContext, call_id: str) -> None:
    """Forget the rails' decision on a call that has its observation."""
    ctx.calls.arg_rails.pop(call_id, None)


async def summarize(ctx: NodeContext, agent: Any, node: str, answer: str) -> None:
    """Store the agent's task summary in long-term memory (``memory.run.summarize``) after the
    memory write filter: the answer meets the agent's argument rails as ``memory.remember``'s
    content would (a mask is stored masked; a block or pause stores no summary)."""
    from magent.memory import run as memory

    if agent.memory is None or not agent.memory.summarize_on_finish:
        return
    rails = [r for r in ctx.deps.graph.rails.input_for(agent.name) if r.checks_arguments]
    if rails:
        from magent.guardrails.base import RailInput
        from magent.guardrails.screen import screen

        info = RailInput("input", "memory", agent=agent.name, node=node, task_id=ctx.deps.task.id)
        records = Records()
        run = RecordedRun(info, lambda rail, config: ctx.models.client_of(rail.key, config, rail.base_dir),
                          records.call, records.attempt)
        s = await screen(answer, rails, run, lambda c: emit_check(ctx, node, info, c))
        records.flush(ctx, node, info)
        if s.outcome != "pass":
            return  # dropped: the guardrail event says which rail and why
        answer = s.text
    memory.summarize(ctx, agent, node, answer)
