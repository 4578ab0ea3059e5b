"""Checkpoints of a run: writing the next one, and continuing from one.

``RunContext.checkpoint`` and ``RunContext.restore`` call these. Every checkpoint is built as a
``Checkpoint`` model and written in its plain form (``store.checkpoints.to_disk``); everything
written is masked first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from magent import failpoints
from magent.engine.sessions import Session
from magent.ids import new_id, now
from magent.models import Checkpoint, HumanFeedback, HumanRequest, Message
from magent.models.progress import ProgressOfAKind
from magent.models.session import MAIN_SESSION
from magent.redact import Redactor

if TYPE_CHECKING:
    from magent.engine.context import RunContext


def write(ctx: "RunContext", reason: str, request: HumanRequest | None = None,
          feedback: HumanFeedback | None = None) -> None:
    """Write the next checkpoint. Entries are synced first, so a checkpoint never points at an
    entry that is not on disk. (Events are synced where they matter: before a tool that is
    not idempotent runs, and when the run stops.) With the run's group commit the checkpoint
    is linked into place by the next commit, after the entries it points at are synced."""
    if ctx.td.committer is None:
        ctx.td.entries.sync()
    failpoints.hit("before_checkpoint")
    log = ctx.td.checkpoints
    seq = log.next_number()
    checkpoint_id = new_id()
    log.write(_as_model(ctx, checkpoint_id, seq, reason, request, feedback))
    ctx.last_checkpoint_id = checkpoint_id
    ctx.bus.emit("checkpoint", ctx.position, sequence=seq, reason=reason)
    failpoints.hit("after_checkpoint")
    ctx.begin_commit("model")


def _as_model(ctx: "RunContext", checkpoint_id: str, seq: int, reason: str, request: HumanRequest | None,
              feedback: HumanFeedback | None) -> Checkpoint:
    """The next checkpoint as a model, masked (a secret the model or a person repeated must not
    reach the file either)."""
    metadata = ctx.redactor.data(ctx.state.metadata)
    progress = masked_progress(ctx.redactor, ctx.progress)
    state = ctx.state.model_copy(update={
        "messages": [], "metadata": metadata, "routing_key": ctx.redactor.data(ctx.state.routing_key),
        "next_action": ctx.redactor.data(ctx.state.next_action)})
    if request is not None:
        request = masked(ctx.redactor, request)
    if feedback is not None:
        feedback = feedback.model_copy(update={
            "message": ctx.redactor.text(feedback.message or "") or None,
            "state_updates": ctx.redactor.data(feedback.state_updates)})
    sessions = []
    for child in ctx.open_children():
        position = child.to_position()
        if position.output:
            position.output = ctx.redactor.text(position.output)
        position.progress = masked_progress(ctx.redactor, child.progress)
        sessions.append(position)
    return Checkpoint(
        checkpoint_id=checkpoint_id, task_id=ctx.task.id, sequence=seq, parent_id=ctx.last_checkpoint_id,
        position=ctx.position, created_at=now(), awaiting_human=request is not None,
        human_request=request, human_feedback=feedback, reason=reason, state=state,
        leaf_entry_id=ctx.leaf, entry_count=ctx.entry_count, node_done=ctx.node_done,
        node_progress=progress, visits=ctx.visits, turn_index=ctx.turn_index,
        usage_by_model=ctx.usage_by_model,
        cursors=ctx.cursors, events_seq=ctx.bus.seq, sessions=sessions, spent=ctx.meter.snapshot(),
        signals_applied=ctx.signals_applied,
        journals=ctx.journals())


def masked(redactor: Redactor, request: HumanRequest) -> HumanRequest:
    """``request`` as it may be written or shown: secrets in its output and details masked."""
    return request.model_copy(update={"output": redactor.text(request.output or "") or None,
                                      "details": redactor.data(request.details)})


def masked_progress(redactor: Redactor, progress: ProgressOfAKind) -> ProgressOfAKind:
    """A copy of ``progress`` with secrets masked (a copy also keeps the checkpoint apart from the
    session, which goes on changing its progress)."""
    return type(progress).model_validate(redactor.data(progress.model_dump()))


def restore(ctx: "RunContext", cp: Checkpoint, messages: list[Message],
            history: Callable[[str | None], list[Message]] | None = None) -> None:
    """Continue from ``cp``: fresh copies of everything, so the stored checkpoint is never mutated.

    ``messages`` is the main session's history; ``history(leaf)`` gives an open child's.
    """
    cp = cp.model_copy(deep=True)
    main = ctx.main
    main.position = cp.position
    main.node_done = cp.node_done
    main.progress = cp.node_progress
    main.leaf = cp.leaf_entry_id
    main.entry_count = cp.entry_count
    main.cursors.clear()
    main.cursors.update(cp.cursors)
    ctx.visits = cp.visits
    ctx.turn_index = cp.turn_index
    ctx.sessions = {MAIN_SESSION: main}
    ctx.state = cp.state.model_copy(update={"messages": list(messages)})
    for position in cp.sessions:
        if history is None:
            raise ValueError("restoring a checkpoint with open sessions needs their history")
        session = Session.from_position(position, ctx.state.metadata, history(position.leaf_entry_id))
        ctx.sessions[session.id] = session
    for session in ctx.sessions.values():  # a child stops with its parent's group
        if not session.is_main:
            parent = ctx.sessions.get(session.parent or MAIN_SESSION, main)
            session.stop = parent.stop
    ctx.usage_by_model = cp.usage_by_model
    ctx.total_usage = cp.total_usage
    ctx.meter.restore(cp)
    ctx.last_checkpoint_id = cp.checkpoint_id
    ctx.signals_applied = cp.signals_applied
