"""A run's durable points: the named methods that alone write checkpoints, and the waits for
the disk between them (docs/how-it-works.md lists them). Every checkpoint is built as a
``Checkpoint`` model, masked, and written in its plain form (``store.checkpoints.to_disk``)."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Callable, Literal

from magent import failpoints
from magent.engine.sessions import Session
from magent.ids import new_id, now
from magent.models import Checkpoint, HumanFeedback, HumanRequest, Message
from magent.models.progress import ProgressOfAKind
from magent.models.session import MAIN_SESSION
from magent.redact import Redactor
from magent.store.journal import Positions as JournalPositions

if TYPE_CHECKING:
    from magent.engine.budget import Meter
    from magent.engine.context import RunDeps, RunState


class Checkpoints:
    """The checkpoints of one run, written at its named durable points."""

    def __init__(self, deps: "RunDeps", state: "RunState", meter: "Meter"):
        self.deps = deps
        self.state = state
        self.meter = meter
        self.journals = JournalPositions(deps.task_dir.path)
        """The lengths of the task's journals, as each checkpoint records them."""
        self._turn_commits: Any = None
        """The commits begun for the main session's last reply (``reply_written``)."""

    # the durable points
    def inputs_taken(self, reason: Literal["run_start", "follow_up", "resume", "signal"],
                     feedback: HumanFeedback | None = None) -> None:
        """What came from outside (the task, a follow-up, a person's ``feedback``, an operator's
        signals) is recorded before the run acts on it."""
        self._write(reason, feedback=feedback)

    def node_started(self) -> None:
        self._write("node_start")

    def session_started(self) -> None:
        """A child session just opened: from here on, a resumed run continues it."""
        self._write("session_start")

    def turn_done(self) -> None:
        """A model turn is finished: its reply and tool results, or what the model is told next."""
        self._write("llm_turn")

    def node_step(self, reason: Literal["fan_out", "branch_end", "join", "map_item", "subtask_end", "plan",
                                        "plan_retry", "plan_revising", "plan_invalid"]) -> None:
        """A composite node (fan-out, map, plan) moved on: a child finished, a stage began."""
        self._write(reason)

    def node_done(self) -> None:
        self._write("node_end")

    def run_ended(self, reason: Literal["finish", "pause", "cancel"], request: HumanRequest | None = None) -> None:
        """The run stops here: finished, paused for a person (``request``) or cancelled."""
        self._write(reason, request=request)

    def interrupted(self) -> None:
        """A signal stopped the run: the last consistent checkpoint again, as ``interrupt``."""
        log = self.deps.task_dir.checkpoints
        last = log.last_number()
        if last is None:
            return
        cp = log.read(last)
        self.deps.task_dir.sync()
        log.write(cp.model_copy(update={
            "sequence": last + 1, "checkpoint_id": new_id(),
            # events_seq stays: what happened after the consistent checkpoint (a call in
            # flight, say) is exactly what recovery must look at.
            "parent_id": cp.checkpoint_id, "reason": "interrupt", "created_at": now(),
            "sha256": None}))

    # waiting for the disk
    async def before_model(self) -> None:
        """Before a paid model call: the writes so far on disk (modes ``sync`` and ``step``;
        ``exit`` syncs only at the end). Concurrent sessions waiting here share one commit."""
        committer = self.deps.task_dir.committer
        if committer is not None and committer.mode != "exit":
            await committer.durable()

    async def before_tool(self, *, idempotent: bool = True) -> None:
        """Before a tool call: the writes so far on disk (mode ``sync``; ``step`` only for a
        tool that is not idempotent)."""
        committer = self.deps.task_dir.committer
        if committer is not None and (committer.mode == "sync" or (committer.mode == "step" and not idempotent)):
            await committer.durable()

    def reply_written(self) -> None:
        """The main session's reply asking for tools is written: begin its commit now, so its
        fsyncs run while the calls get ready (``reply_synced``)."""
        self._begin_commit("tool")

    def _begin_commit(self, before: str) -> None:
        """Begin now, without waiting, the commit the next wait ``before`` will wait for, when
        nothing else could share it (no child session open): its fsyncs then run while the run
        gets on with what comes before that wait. For ``"tool"`` the commits begun are kept for
        ``reply_synced`` (until the next checkpoint)."""
        self._turn_commits = None
        committer = self.deps.task_dir.committer
        if committer is None or committer.mode == "exit" or (before == "tool" and committer.mode != "sync"):
            return
        if len(self.state.sessions) > 1 and self.state.open_children():
            return
        begun = committer.begin()
        if before == "tool":
            self._turn_commits = begun

    def reply_synced(self, session: Session) -> Awaitable[None] | None:
        """In mode ``sync``, when the main session's reply went into a commit of its own
        (``reply_written``): an awaitable done once that commit is, so an idempotent call can
        write its intent and get ready while the reply is synced, and wait only before it
        runs. None otherwise (then ``before_tool`` waits as usual)."""
        committer = self.deps.task_dir.committer
        if not session.is_main or self._turn_commits is None or committer is None:
            return None
        return committer.through(self._turn_commits)

    def _write(self, reason: str, request: HumanRequest | None = None,
               feedback: HumanFeedback | None = None) -> None:
        """Write the next checkpoint. Entries are synced first, so a checkpoint never points at an
        entry that is not on disk. (Events are synced where they matter: before a tool that is
        not idempotent runs, and when the run stops.) With the run's group commit the checkpoint
        is linked into place by the next commit, after the entries it points at are synced."""
        task_dir = self.deps.task_dir
        if task_dir.committer is None:
            task_dir.entries.sync()
        failpoints.hit("before_checkpoint")
        log = task_dir.checkpoints
        seq = log.next_number()
        checkpoint_id = new_id()
        log.write(self._as_model(checkpoint_id, seq, reason, request, feedback))
        self.state.last_checkpoint_id = checkpoint_id
        self.deps.bus.emit("checkpoint", self.state.main.position or "", sequence=seq, reason=reason)
        failpoints.hit("after_checkpoint")
        self._begin_commit("model")

    def _as_model(self, checkpoint_id: str, seq: int, reason: str, request: HumanRequest | None,
                  feedback: HumanFeedback | None) -> Checkpoint:
        """The next checkpoint as a model, masked (a secret the model or a person repeated must not
        reach the file either)."""
        redactor, run, main = self.deps.redactor, self.state, self.state.main
        metadata = redactor.data(main.state.metadata)
        progress = masked_progress(redactor, main.progress)
        state = main.state.model_copy(update={
            "messages": [], "metadata": metadata, "routing_key": redactor.data(main.state.routing_key),
            "next_action": redactor.data(main.state.next_action)})
        if request is not None:
            request = masked(redactor, request)
        if feedback is not None:
            feedback = feedback.model_copy(update={
                "message": redactor.text(feedback.message or "") or None,
                "state_updates": redactor.data(feedback.state_updates)})
        sessions = []
        for child in run.open_children():
            position = child.to_position()
            if position.output:
                position.output = redactor.text(position.output)
            position.progress = masked_progress(redactor, child.progress)
            sessions.append(position)
        return Checkpoint(
            checkpoint_id=checkpoint_id, task_id=self.deps.task.id, sequence=seq, parent_id=run.last_checkpoint_id,
            position=main.position or "", created_at=now(), awaiting_human=request is not None,
            human_request=request, human_feedback=feedback, reason=reason, state=state,
            leaf_entry_id=main.leaf, entry_count=main.entry_count, node_done=main.node_done,
            node_progress=progress, visits=run.visits, turn_index=run.turn_index,
            usage_by_model=run.usage_by_model,
            cursors=main.cursors, events_seq=self.deps.bus.seq, sessions=sessions, spent=self.meter.snapshot(),
            signals_applied=run.signals_applied,
            journals=self.journals())

    def restore(self, cp: Checkpoint, messages: list[Message],
                history: Callable[[str | None], list[Message]] | None = None) -> None:
        """Continue from ``cp`` on fresh copies (the stored checkpoint is never mutated): ``messages``
        is the main session's history; ``history(leaf)`` gives an open child's."""
        run = self.state
        cp = cp.model_copy(deep=True)
        main = run.main
        main.position = cp.position
        main.node_done = cp.node_done
        main.progress = cp.node_progress
        main.leaf = cp.leaf_entry_id
        main.entry_count = cp.entry_count
        main.cursors.clear()
        main.cursors.update(cp.cursors)
        run.visits = cp.visits
        run.turn_index = cp.turn_index
        run.sessions = {MAIN_SESSION: main}
        run.set_main_state(cp.state.model_copy(update={"messages": list(messages)}))
        for position in cp.sessions:
            if history is None:
                raise ValueError("restoring a checkpoint with open sessions needs their history")
            session = Session.from_position(position, run.metadata, history(position.leaf_entry_id))
            run.sessions[session.id] = session
        for session in run.sessions.values():  # a child stops with its parent's group
            if not session.is_main:
                parent = run.sessions.get(session.parent or MAIN_SESSION, main)
                session.stop = parent.stop
        run.usage_by_model = cp.usage_by_model
        run.total_usage = cp.total_usage
        self.meter.restore(cp)
        run.last_checkpoint_id = cp.checkpoint_id
        run.signals_applied = cp.signals_applied


def masked(redactor: Redactor, request: HumanRequest) -> HumanRequest:
    """``request`` as it may be written or shown: secrets in its output and details masked."""
    return request.model_copy(update={"output": redactor.text(request.output or "") or None,
                                      "details": redactor.data(request.details)})


def masked_progress(redactor: Redactor, progress: ProgressOfAKind) -> ProgressOfAKind:
    """A copy of ``progress`` with secrets masked (a copy also keeps the checkpoint apart from the
    session, which goes on changing its progress)."""
    return type(progress).model_validate(redactor.data(progress.model_dump(exclude_defaults=True)))
