"""Before a task goes on: which tasks ``resume`` continues and from which checkpoint, and what
a person's decision at a pause does (checked before anything is written, then applied and
checkpointed before the run goes on)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from magent.engine import guard, statekeys
from magent.engine.context import RunContext
from magent.engine.inputs import merge_updates
from magent.engine.runner import Executor, RunOutcome
from magent.errors import TaskStateError, UsageError
from magent.models import HumanFeedback, Message, Task, TaskStatus
from magent.models.progress import CallDecision, CallsProgress
from magent.models.session import MAIN_SESSION
from magent.store.tasks import TaskDir


@dataclass
class Decision:
    """A person's answer given on the command line (seed 002 Human Feedback)."""

    action: str
    message: str | None = None
    state_updates: dict[str, Any] | None = None


def check_resumable(task: Task, decision: Decision | None) -> None:
    """Which tasks ``resume`` continues: all but completed and cancelled ones. A failed task is
    retried from its last checkpoint (what people want after a model outage)."""
    short = task.id[:8]
    if task.status == TaskStatus.completed:
        raise TaskStateError(f"task {short} is completed; nothing to resume (to branch from one of its "
                             f"checkpoints: `magent checkpoints list {short}`, then "
                             f"`magent resume {short} --from-checkpoint N`)")
    if task.status == TaskStatus.cancelled:
        raise TaskStateError(f"task {short} was cancelled; it cannot be resumed")
    if task.status != TaskStatus.awaiting_human and decision is not None:
        raise TaskStateError(f"task {short} is {task.status.value}, not waiting for a person; "
                             f"--{decision.action} has nothing to answer")


def check_pause(task: Task, cp, decision: Decision | None, notes: list[str]) -> None:
    """A paused task takes a decision, unless the checkpoint of its pause was damaged (and moved
    aside): the decision would answer a question nobody can see, so it is refused, and a plain
    resume runs from the checkpoint before it to the same pause again."""
    short = task.id[:8]
    if task.status != TaskStatus.awaiting_human:
        return
    if cp.awaiting_human and decision is None and cp.human_request.kind != "auth":
        raise TaskStateError(f"task {short} is waiting for a person: give --approve, --reject or "
                             "--modify FILE (with --message TEXT)")
    if not cp.awaiting_human and decision is not None:
        why = "; ".join(notes) or "it is missing"
        raise TaskStateError(f"the checkpoint of the pause task {short} was waiting at was damaged ({why}); "
                             f"run `magent resume {short}` to reach the pause again from checkpoint "
                             f"{cp.sequence}, then answer it")


def latest_checkpoint(task_dir: TaskDir, none_ok: bool = False):
    """The checkpoint to go on from (damaged ones moved aside), the notes on them, the entries.
    No valid one raises ``TaskStateError``, or with ``none_ok`` gives None."""
    cp, notes = task_dir.checkpoints.latest(repair=True)
    if cp is None and none_ok:
        return None, notes, {}
    if cp is None:
        raise TaskStateError(f"task {task_dir.id[:8]} has no valid checkpoint to resume from"
                             + (f" ({'; '.join(notes)})" if notes else ""))
    entries = task_dir.entries.index()  # parsed as recovery walks them: the leaves' paths and after
    return cp, notes, entries


def prepare_feedback(cp, decision: Decision | None, set_values: dict[str, Any] | None, task_dir: TaskDir,
                     fork: bool = False):
    """Validate a decision and state updates against the pause; returns (feedback, new state)."""
    feedback = None
    updates: dict[str, Any] = dict(set_values or {})
    if decision is not None and cp.human_request is not None and cp.human_request.kind == "auth" \
            and decision.action == "approve":
        decision = None  # a login pause has nothing to answer: the run checks the login again
    if decision is not None:
        if not cp.awaiting_human or cp.human_request is None:
            raise TaskStateError(f"checkpoint {cp.sequence} of task {task_dir.id[:8]} is not waiting for a "
                                 f"person; --{decision.action} has nothing to answer")
        allowed = cp.human_request.allowed_actions
        if decision.action not in allowed:
            raise UsageError(f"this pause ({cp.human_request.kind}) accepts {', '.join('--' + a for a in allowed)}, "
                             f"not --{decision.action}")
        feedback = HumanFeedback(action=decision.action, message=decision.message,
                                 state_updates=decision.state_updates or {})
        for key, value in _with_output(cp.human_request, decision.state_updates or {}).items():
            if key == "metadata" and isinstance(value, dict) and isinstance(updates.get("metadata"), dict):
                updates["metadata"] = {**value, **updates["metadata"]}
            else:
                updates.setdefault(key, value)
    new_state = merge_updates(cp.state, updates) if updates else None
    return feedback, new_state


def _with_output(request, updates: dict[str, Any]) -> dict[str, Any]:
    """A person's State updates with ``output`` (the paused node's output, replaced) turned
    into the State value that holds it."""
    if "output" not in updates:
        return updates
    updates = dict(updates)
    output = updates.pop("output")
    if request.kind not in ("human_node", "approval"):
        raise UsageError(f"this pause ({request.kind}) has no output to replace; leave out 'output'")
    if not isinstance(output, str) or not output.strip():
        raise UsageError("output: the replacement must be text, not empty")
    metadata = updates.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    updates["metadata"] = {**metadata, "last_output": output}
    return updates


async def go_on(ctx: RunContext, cp, feedback: HumanFeedback | None, new_state) -> RunOutcome:
    """Apply what the person decided (if anything) and run on from there."""
    if feedback is not None or new_state is not None:
        _apply(ctx, cp, feedback, new_state)
    refused = ctx.node().progress.task_refused  # a person rejected the task text at a rail's pause
    if refused:
        return Executor(ctx).fail(refused, "guardrail")
    return await Executor(ctx).run()


def _apply(ctx: RunContext, cp, feedback: HumanFeedback | None, new_state) -> None:
    """Apply a person's decision and/or state updates, then checkpoint before going on."""
    if new_state is not None:
        statekeys.report_unread(ctx.node(), cp.state, new_state)
        added = new_state.messages[len(cp.state.messages):]
        ctx.state.set_main_state(new_state.model_copy(update={"messages": ctx.state.main.messages}))
        for message in added:
            ctx.add_message(message, node=None)
    if feedback is not None:
        request = cp.human_request
        target = ctx.state.sessions.get(request.session or MAIN_SESSION, ctx.state.main)
        ctx.state.feedback = feedback
        ctx.state.metadata["human"] = {"action": feedback.action, "message": feedback.message,
                                       "node": request.node, "kind": request.kind}
        if request.session:
            ctx.state.metadata["human"]["session"] = request.session
        if request.kind not in ("human_node", "approval"):
            # A decision about one tool call is not a verdict on the node: it does not route.
            ctx.state.metadata["human"]["routed"] = True
        if request.kind in ("human_node", "approval"):
            target.state.routing_key = feedback.action
        if request.kind in ("tool_approval", "tool_recovery", "tool_changed"):
            call_id = request.details.get("call_id")
            target.progress_of(CallsProgress).decisions[call_id] = CallDecision(
                action="run" if feedback.action == "approve" else "reject", message=feedback.message)
            ctx.state.feedback = None
            tool = ctx.deps.tools().get(request.details.get("tool") or "")
            if request.kind == "tool_changed" and feedback.action == "approve" and tool is not None:
                ctx.deps.pins.accept(tool)  # the new definition is the one this task uses from now on
        if request.kind == "guardrail":
            guard.take_decision(ctx.node(target), request, feedback)
            ctx.state.feedback = None
        if "output" in feedback.state_updates and request.kind in ("human_node", "approval"):
            ctx.add_message(Message(role="user", name="human", content="[a person replaced the output with]\n"
                                    + str(feedback.state_updates["output"])), node=request.node, session=target)
        if request.kind == "operator":
            ctx.state.feedback = None  # an operator's pause: approving it only lets the run go on
        if feedback.message and request.kind in ("human_node", "approval", "operator"):
            # (For a decision about a tool call the message goes into that call's observation:
            # nothing may come between a model's tool calls and their results.)
            ctx.add_message(Message(role="user", name="human",
                                    content=f"[a person, {feedback.action}] {feedback.message}"),
                            node=request.node, session=target)
        ctx.node(target).bus.emit("human_decision", request.node, action=feedback.action, kind=request.kind,
                                  message=ctx.deps.redactor.text(feedback.message or "") or None,
                                  state_updates=ctx.deps.redactor.data(feedback.state_updates) or None)
    ctx.checkpoints.inputs_taken("resume", feedback=feedback)
