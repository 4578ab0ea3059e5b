"""Where a run meets its guardrails: the task text, tool results and final answers (tool
calls' arguments: ``engine.argrails``).

Rails run before anything of what they check is written: the task text before
the task exists, a tool result before the registry truncates it (and keeps the
full copy in ``artifacts/``) and before its entry, a final answer before its
model call is recorded and before its entry. So a masked value never reaches
a file, and neither does one a sensitive rail blocked.

Every rail's decision is a ``guardrail`` event (never the text itself). A rail's
model calls are ``llm_call`` events carrying ``rail``. What a tripped rail does, by action and
by what it checks: docs/guides/guardrails.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from magent.engine.context import NodeContext
from magent.engine.control import NodeFailed, PauseRun
from magent.engine.observations import add_observation
from magent.engine.railrecords import RecordedRun, Records, emit_check, rail_label
from magent.llm.base import LLMClient, LLMResponse
from magent.models import HumanFeedback, HumanRequest, Message, ToolCall
from magent.models.progress import CallDecision, HeldAnswer, HeldResult, RailDecision

if TYPE_CHECKING:  # the rails' own modules load with the first rail: most runs declare none
    from magent.guardrails.base import Rail, RailInput
    from magent.guardrails.screen import Screening

PAUSE_ACTIONS = ["approve", "reject"]


# The task text (or a follow-up's message): screened before anything of it is written, recorded
# once the run has its context.

@dataclass(eq=False)
class TaskGate:
    """The task text (or a follow-up's message: ``source``) after its input rails, and what they
    did (recorded when the run opens)."""

    text: str
    source: Literal["task", "follow_up"] = "task"
    screening: Screening | None = None
    records: Records = field(default_factory=Records)
    cursors: dict[str, int] = field(default_factory=dict)
    """Where the rails' scripted models got to."""

    @property
    def subject(self) -> str:
        return "the task text" if self.source == "task" else "the follow-up"

    @property
    def blocked(self) -> bool:
        return self.screening is not None and self.screening.outcome == "block"

    @property
    def description(self) -> str:
        """The task's description on disk: a blocked text is not kept."""
        if self.blocked:
            assert self.screening is not None and self.screening.rail is not None
            return f"[withheld: {self.subject} was blocked by {rail_label(self.screening.rail, 'input')}]"
        return self.text

    @property
    def failure(self) -> str:
        assert self.screening is not None and self.screening.rail is not None
        return f"{rail_label(self.screening.rail, 'input')} blocked {self.subject}: {self.screening.message}"

    def request(self, node: str) -> HumanRequest | None:
        """The pause to ask for at ``node`` (the one the text goes to), when a rail said ``pause``."""
        s = self.screening
        if s is None or s.outcome != "pause" or s.rail is None:
            return None
        what = "the task" if self.source == "task" else "the follow-up"
        return HumanRequest(kind="guardrail", node=node, allowed_actions=PAUSE_ACTIONS,
                            question=(f"{rail_label(s.rail, 'input').capitalize()} flagged {self.subject}: {s.reason}. "
                                      f"Run {what} (approve) or stop it (reject)?"),
                            output=s.text, details={"stage": "input", "source": self.source,
                                                    "rail": rail_label(s.rail, "input"), "key": s.rail.key})

    def record(self, ctx: NodeContext) -> None:
        """Write what the rails did as events of the run (and count their model calls)."""
        ctx.session.cursors.update(self.cursors)
        if self.records.items:
            from magent.guardrails.base import RailInput

            self.records.flush(ctx, None, RailInput("input", self.source, task_id=ctx.deps.task.id))


async def screen_task(graph, text: str, options, *, node: str | None = None,
                      source: Literal["task", "follow_up"] = "task",
                      cursors: dict[str, int] | None = None) -> TaskGate:
    """Run the workflow's input rails and those of the agent at ``node`` (the entry point unless
    told) over the task text, or over a follow-up's message (``source="follow_up"``, with the
    ``cursors`` the task's scripted rails got to)."""
    entry = graph.nodes[node or graph.workflow.entry_point]
    rails = graph.rails.input_for(entry.agent_name if entry.kind == "agent" else None)
    gate = TaskGate(text, source=source, cursors=dict(cursors or {}))
    if not rails:
        return gate
    from magent.guardrails.base import RailInput
    from magent.guardrails.screen import screen

    clients: dict[str, LLMClient] = {}

    def client(rail: Rail, config: Any) -> LLMClient:
        if rail.key not in clients:
            factory = options.llm_factory
            if factory is None:
                from magent.llm.factory import make_client as factory
            clients[rail.key] = factory(config, agent=rail.key, base_dir=rail.base_dir, cursors=gate.cursors)
        return clients[rail.key]

    run = RecordedRun(RailInput("input", source, agent=entry.agent_name), client, gate.records.call,
                      gate.records.attempt)
    gate.screening = await screen(text, rails, run, gate.records.check)
    gate.text = gate.screening.text
    gate.records.keep_prompts = not gate.blocked and gate.text == text
    return gate


# Tool results: screened inside the registry's call, before truncation and artifacts.

class ResultScreen:
    """The input rails for one tool call's result. The registry awaits it with the full result."""

    def __init__(self, ctx: NodeContext, node: str, agent: str, call: ToolCall, rails: list[Rail]):
        from magent.guardrails.base import RailInput

        self.ctx, self.node, self.call, self.rails = ctx, node, call, rails
        self.info = RailInput("input", "tool_result", agent=agent, node=node, tool=call.full_name,
                              task_id=ctx.deps.task.id)
        self.screening: Screening | None = None

    async def __call__(self, result: Any) -> None:
        from magent.guardrails.screen import screen

        info = dataclasses.replace(self.info, tool=result.tool or self.call.full_name)
        ctx, calls = self.ctx, Records()
        run = RecordedRun(info, lambda rail, config: ctx.models.client_of(rail.key, config, rail.base_dir), calls.call,
                          calls.attempt)
        self.screening = s = await screen(result.content, self.rails, run,
                                          lambda c: emit_check(self.ctx, self.node, info, c, tool=info.tool,
                                                               call_id=self.call.id))
        kept = s.text if s.outcome in ("pass", "pause") else s.stored
        calls.keep_prompts = kept == result.content and s.outcome != "block"
        calls.flush(ctx, self.node, info)   # the judges' calls, once it is known what they may keep
        if kept != result.content:
            result.content = kept
            if result.error:
                result.error = kept  # an error's text is what the model sees, so it is screened too

    def settle(self, result: Any) -> bool:
        """After the call: False when the result must not become an observation yet (held for a
        person, or blocked: the node fails once the turn's calls are done)."""
        s = self.screening
        if s is None or s.outcome == "pass":
            return True
        ctx, call = self.ctx, self.call
        assert s.rail is not None
        label = rail_label(s.rail, "input")
        if s.outcome == "block":
            message = f"{label} blocked the result of {call.full_name}: {s.message}"
            add_observation(ctx, self.node, call, "ERROR", message)
            ctx.loop.rail_blocks.append(message)
            return False
        ctx.loop.held[call.id] = HeldResult(
            tool=result.tool or call.full_name, outcome=result.outcome, text=ctx.deps.redactor.text(result.content),
            rail=label, key=s.rail.key, reason=s.reason, duration_ms=result.duration_ms, artifact=result.artifact)
        return False


def result_screen(ctx: NodeContext, node: str, agent: str, call: ToolCall) -> ResultScreen | None:
    rails = ctx.deps.graph.rails.input_for(agent)
    return ResultScreen(ctx, node, agent, call, rails) if rails else None


def release_held(ctx: NodeContext, node: str, pending: list[ToolCall]) -> list[ToolCall]:
    """Calls held at a rail's pause that a person has decided on become observations; returns the
    pending calls that were not held (still to check and run). Held calls already ran: never again."""
    held = ctx.loop.held
    rest = []
    for call in pending:
        h = held.get(call.id)
        if h is None:
            rest.append(call)
            continue
        decision = h.decision
        if decision is None:
            continue  # still waiting; ``settle_turn`` asks again
        from magent.tools.base import ToolResult

        note = f": {decision.message}" if decision.message else ""
        if decision.action == "approve":
            outcome = h.outcome
            content = (f"[a person let this result through {h.rail}{note}]\n" if note else "") + h.text
        else:
            outcome = "ERROR"
            content = f"withheld by a person after {h.rail} flagged it{note}"
        add_observation(ctx, node, call, outcome, content,
                        ToolResult(outcome=outcome, content=content, tool=h.tool,
                                   duration_ms=h.duration_ms or 0, artifact=h.artifact))
        del held[call.id]
    return rest


def settle_turn(ctx: NodeContext, node: str) -> None:
    """Once a turn's calls are done: fail for a blocked result, pause for a held one."""
    blocks, ctx.loop.rail_blocks = ctx.loop.rail_blocks, []
    if blocks:
        raise NodeFailed(blocks[0], kind="guardrail")
    for call_id, h in ctx.loop.held.items():
        if h.decision is None:
            raise PauseRun(HumanRequest(
                kind="guardrail", node=node, allowed_actions=PAUSE_ACTIONS, output=h.text,
                question=(f"{h.rail.capitalize()} flagged the result of {h.tool}: {h.reason}. "
                          "Let the agent see it (approve) or withhold it (reject)?"),
                details={"stage": "input", "source": "tool_result", "call_id": call_id, "tool": h.tool,
                         "rail": h.rail, "key": h.key}))


# Final answers: screened before the model call is recorded and before the entry; what the rails
# did is recorded after that call (so the trace shows the answer, then what became of it).

@dataclass(eq=False)
class AnswerCheck:
    screening: Screening
    info: RailInput
    records: Records


async def check_answer(ctx: NodeContext, node: str, agent: str, iteration: int, text: str) -> AnswerCheck | None:
    rails = ctx.deps.graph.rails.output_for(agent)
    if not rails:
        return None
    from magent.guardrails.base import RailInput
    from magent.guardrails.screen import screen

    info = RailInput("output", "answer", agent=agent, node=node, task_id=ctx.deps.task.id)
    records = Records()
    run = RecordedRun(info, lambda rail, config: ctx.models.client_of(rail.key, config, rail.base_dir), records.call,
                      records.attempt)
    screening = await screen(text, rails, run, records.check)
    records.keep_prompts = (screening.text if screening.outcome in ("pass", "pause") else screening.stored) == text
    return AnswerCheck(screening, info, records)


def has_output_rails(ctx: NodeContext, agent: str) -> bool:
    """Answers of this agent may change after they are written, so they are not streamed."""
    return bool(ctx.deps.graph.rails.output_for(agent))


def screened_reply(check: AnswerCheck | None, response: LLMResponse, message: Message,
                   final: str) -> tuple[LLMResponse, Message, str]:
    """The reply as it may be recorded: the screened answer in place of the model's."""
    if check is None:
        return response, message, final
    s = check.screening
    kept = s.text if s.outcome in ("pass", "pause") else s.stored
    if kept == final:
        return response, message, final
    content = response.content.replace(final, kept) if final in response.content else kept
    return (dataclasses.replace(response, content=content), message.model_copy(update={"content": content}), kept)


def record_answer(ctx: NodeContext, node: str, check: AnswerCheck | None, entry_id: str, iteration: int) -> None:
    """Record the rails' decisions on the answer just recorded; when one said ``pause``, keep the
    answer out of the conversation and ask a person."""
    if check is None:
        return
    agent = check.info.agent
    check.records.flush(ctx, node, check.info, iteration, agent=agent)
    s = check.screening
    if s.outcome != "pause":
        return
    assert s.rail is not None
    label = rail_label(s.rail, "output")
    ctx.loop.held_answer = HeldAnswer(entry_id=entry_id, iteration=iteration, rail=label, key=s.rail.key)
    raise PauseRun(HumanRequest(
        kind="guardrail", node=node, allowed_actions=PAUSE_ACTIONS, output=s.text,
        question=(f"{label.capitalize()} flagged the answer of agent '{agent}': {s.reason}. Accept it (approve), "
                  "or send it back to be revised (reject, with --message saying what to change)?"),
        details={"stage": "output", "source": "answer", "agent": agent, "rail": label, "key": s.rail.key}))


def accept_answer(ctx: NodeContext, node: str, check: AnswerCheck | None) -> bool:
    """After the answer's entry: True if it stands; False when a revision was asked for (the turn
    is done: the node goes on with another). Raises ``NodeFailed`` for a block or too many revisions."""
    if check is None or check.screening.outcome == "pass":
        return True
    s = check.screening
    assert s.rail is not None
    label = rail_label(s.rail, "output")
    if s.outcome == "block":
        raise NodeFailed(f"{label} blocked the answer: {s.message}", kind="guardrail")
    revisions = ctx.loop.revisions
    done = revisions.get(s.rail.key, 0)
    if done >= s.rail.config.max_revisions:
        raise NodeFailed(f"{label} still objects after {done} revision{'s' if done != 1 else ''}: {s.message}",
                         kind="guardrail")
    revisions[s.rail.key] = done + 1
    ctx.add_message(Message(role="user", name="guardrail",
                            content=f"Your answer was not accepted by {label}: {s.message}. Reply with a "
                                    "revised answer only."), node=node)
    return False


def resume_answer(ctx: NodeContext, node: str) -> str | None:
    """Going on after a person decided on a held answer: the accepted answer, or None once the
    decision is applied (a rejection asks the model to revise, with the person's message: the
    turn is done)."""
    held = ctx.loop.held_answer
    if held is None:
        return None
    decision = held.decision
    if decision is None:
        raise NodeFailed(f"the answer held by {held.rail} has no decision to go on with", kind="guardrail")
    ctx.loop.held_answer = None
    iteration = held.iteration
    text = held.text or ""
    ctx.add_message(Message(role="assistant", content=text), node=node, turn_id=f"{node}:{iteration}",
                    entry_id=held.entry_id)
    ctx.loop.iteration = iteration + 1
    if decision.action == "approve":
        return text
    ctx.add_message(Message(role="user", name="human", content=f"[a person, reject] {decision.message or ''}"
                            .rstrip() + ("" if decision.message else " Revise your answer.")), node=node)
    return None


# A person's decision at a guardrail pause (from ``magent resume``).

def take_decision(ctx: NodeContext, request: HumanRequest, feedback: HumanFeedback) -> None:
    """Put the decision where the paused step finds it when the run goes on."""
    details = request.details
    decision = RailDecision(action=feedback.action, message=feedback.message)
    source = details.get("source")
    if source == "tool_result":
        held = ctx.loop.held.get(details.get("call_id") or "")
        if held is not None:
            held.decision = decision
    elif source == "answer":
        answer = ctx.loop.held_answer
        if answer is not None:
            answer.decision = decision
            answer.text = request.output or ""
    elif source == "tool_arguments":  # (``argrails``: the call runs as written, or is not made)
        ctx.calls.decisions[details.get("call_id") or ""] = CallDecision(
            action="run" if feedback.action == "approve" else "reject", message=feedback.message)
    elif source in ("task", "follow_up") and feedback.action == "reject":
        note = f": {feedback.message}" if feedback.message else ""
        subject = "the task text" if source == "task" else "the follow-up"
        ctx.progress.task_refused = f"a person rejected {subject} at {details.get('rail')}{note}"

