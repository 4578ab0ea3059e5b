"""Follow-ups: a person's new message to a task that has stopped, and the run that answers it.

``follow_up`` adds a user message to the main session of a completed, failed or paused task
and runs the workflow on from the node that answers it (``answering_node``): the agent node
named by the workflow's ``on_message``, else the last agent node that answered in the main
conversation. From there the run walks the graph as any run does (edges, reviews, gates),
so a follow-up is one more exchange of the same task: its checkpoints follow the old ones,
its entries continue the conversation tree, and its events follow in the same trace.

The message meets the input rails of the workflow and of the answering agent first, as a task
text does: masked, flagged, held for a person (the exchange pauses) or blocked (the exchange
fails, and the message is not kept).

A follow-up is written like the start of a run: the message as an entry, then a checkpoint
(reason ``follow_up``) positioned at the answering node; a kill after it leaves a task that
``magent resume`` (or ``magent chat ID``) continues like any other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Callable

from magent.engine import decisions, guard, wiring
from magent.engine.context import RunOptions
from magent.engine.context import RunContext
from magent.engine.events import resumed_seq
from magent.engine.graph import END, Graph, from_snapshot
from magent.engine.react import unanswered_calls
from magent.engine.recovery import events_after, recover
from magent.engine.runner import Executor, RunOutcome
from magent.engine.toolbox import prepare
from magent.errors import TaskStateError, UsageError
from magent.models import Checkpoint, Entry, Event, Message, Task, TaskStatus
from magent.models.progress import AgentProgress
from magent.store.entries import EntryIndex
from magent.store.tasks import Store, TaskDir

FOLLOWS = (TaskStatus.completed, TaskStatus.failed, TaskStatus.awaiting_human)
"""The statuses a follow-up can be added to."""


async def follow_up(task_ref: str, message: str, *, options: RunOptions | None = None,
                    sinks: Sequence[wiring.Sink] = (), on_task: Callable[[Task], None] | None = None) -> RunOutcome:
    """Add ``message`` to task ``task_ref``'s conversation and run on until it stops again."""
    if not isinstance(message, str) or not message.strip():
        raise UsageError("the follow-up message must not be empty")
    options = options or RunOptions()
    task_dir = Store().task(task_ref)
    lock = task_dir.open_for_writing()  # a running task: TaskLockedError naming its holder
    try:
        task = task_dir.load_task()
        check_can_follow(task)
        return await answer(task_dir, task, message, options, sinks, on_task)
    finally:
        lock.release()


async def answer(task_dir: TaskDir, task: Task, message: str, options: RunOptions,
                 sinks: Sequence[wiring.Sink] = (), on_task: Callable[[Task], None] | None = None,
                 *, kept: Sequence[Entry] = (), opened: bool = False) -> RunOutcome:
    """Run the follow-up ``message`` on ``task``, whose lock the caller holds. Resuming one
    that stopped before its checkpoint: ``kept``, the entries it wrote (the message last),
    taken as they are; ``opened``, its ``run_started`` was kept too (the exchange goes on)."""
    graph = from_snapshot(task.config_snapshot)
    options.model_override = options.model_override or task.config_snapshot.get("options", {}).get("model_override")
    cp, entries = _latest(task_dir, task)
    node = answering_node(graph, cp, entries, task_dir)
    needs = prepare(graph, options)
    # The message meets the input rails before anything of it is written, as a task text does.
    gate = await guard.screen_task(graph, message, options, node=node, source="follow_up", cursors=cp.cursors)
    if on_task:
        on_task(task)
    seq, later = events_after(task_dir.events_file, cp.events_seq)
    task = task_dir.save_task(task.model_copy(update={"status": TaskStatus.running, "error": None,
                                                "completed_at": None}))
    ctx = wiring.open_context(needs, task_dir, task, options, sinks, start_seq=resumed_seq(seq, cp.events_seq, later))
    try:
        recover(ctx, cp, entries, later)
        said = {} if opened else {"follow_up": ctx.deps.redactor.text(gate.description), "answered_by": node}
        ctx.deps.bus.emit("run_started", None, task_id=task.id, workflow=graph.name, resumed=True,
                          from_checkpoint=cp.sequence, description=ctx.deps.redactor.text(task.description),
                          **said)
        outcome = await _exchange(ctx, gate, node, kept)
    finally:
        await wiring.close_run(ctx)
    return wiring.reported(ctx, outcome)


def follow_up_began(later: Sequence[Event]) -> bool:
    """Whether a follow-up's ``run_started`` is among the events ``later`` than a checkpoint."""
    return any(event.type == "run_started" and event.field("follow_up") for event in later)


def unrecorded_follow_up(cp: Checkpoint, entries: EntryIndex, later: Sequence[Event]) -> list[Entry] | None:
    """What a follow-up that began after checkpoint ``cp`` but stopped before its own checkpoint
    wrote under ``cp``'s leaf: the results it gave a failed turn's calls, then its message
    (last); [] when only its ``run_started`` event was kept; None when no follow-up began.
    (After a run's end no entry but a follow-up's is written, so there the entries alone tell it.)"""
    began = follow_up_began(later)
    below: list[tuple[list[Entry], str]] = [([], cp.leaf_entry_id)] if cp.leaf_entry_id and (
        cp.position == END or began) else []
    while below:
        path, parent = below.pop()
        for key in entries.children(parent):
            entry = entries.get(key)
            if entry is None or entry.entry_type != "message":
                continue
            if entry.role == "user":
                return [*path, entry]
            if entry.role == "tool":
                below.append(([*path, entry], key))
    return [] if began else None


async def _exchange(ctx: RunContext, gate: guard.TaskGate, node: str, kept: Sequence[Entry]) -> RunOutcome:
    """The follow-up's message meets its rails, is written (or ``kept``), and ``node`` answers it."""
    gate.record(ctx.node())
    if gate.blocked:  # the exchange fails and its message is not kept
        return Executor(ctx).fail(gate.failure, "guardrail")
    _open_exchange(ctx, node, gate.text, kept)
    request = gate.request(node)
    if request is not None:  # approve: the node answers it; reject: the exchange fails
        return Executor(ctx).pause(request)
    return await Executor(ctx).run()


def check_can_follow(task: Task) -> None:
    """Raise ``TaskStateError`` unless a follow-up can be added to ``task`` now."""
    short = task.id[:8]
    if task.status == TaskStatus.cancelled:
        raise TaskStateError(f"task {short} was cancelled; it takes no follow-ups (start a new one "
                             f"with `magent chat TARGET` or `magent run`)")
    if task.status not in FOLLOWS:
        raise TaskStateError(f"task {short} stopped in the middle of a run ({task.status.value}); "
                             f"continue it first with `magent chat {short}` or `magent resume {short}`")


def answering_node(graph: Graph, cp: Checkpoint, entries: dict[str, Entry], task_dir: TaskDir) -> str:
    """The node that answers a follow-up: the workflow's ``on_message`` node, else the last
    agent node that answered in the main conversation, else the entry point (an agent node)."""
    chosen = graph.workflow.on_message
    if chosen:
        return chosen
    for entry in reversed(task_dir.entries.path_to(cp.leaf_entry_id, entries)):
        node = graph.nodes.get(entry.node or "")
        if entry.role == "assistant" and node is not None and node.kind == "agent":
            return node.name
    entry_point = graph.nodes[graph.workflow.entry_point]
    if entry_point.kind == "agent":
        return entry_point.name
    raise TaskStateError(f"no agent has answered in task {task_dir.id[:8]} yet, and its workflow names no "
                         "on_message node: there is no one to send a follow-up to")


def _latest(task_dir: TaskDir, task: Task) -> tuple[Checkpoint, dict[str, Entry]]:
    cp, notes, entries = decisions.latest_checkpoint(task_dir)
    if cp.sessions:
        raise TaskStateError(f"task {task.id[:8]} stopped with sub-agent sessions open; answer or "
                             f"continue it with `magent resume {task.id[:8]}` before a follow-up")
    return cp, entries


def _open_exchange(ctx: RunContext, node: str, message: str, kept: Sequence[Entry] = ()) -> None:
    """The follow-up's first writes: the person's message, then checkpoint ``follow_up`` at
    ``node`` (a new exchange: its node visits count from zero, a pause it answered is gone).
    ``kept``: those entries, written before the run stopped, are taken instead of written again."""
    main = ctx.state.main
    ids = [entry.id for entry in kept]
    ctx.adopt(list(kept[ids.index(main.leaf) + 1:] if main.leaf in ids else kept), main)
    for call in unanswered_calls(ctx.state.main.messages):
        # A failed turn's calls that never ran get their result first: a tool call is always
        # followed by its result in the history a model reads.
        ctx.add_message(Message(role="tool", tool_call_id=call.id, name=call.full_name,
                                content="not run: the task stopped before this call, and a follow-up came"),
                        node=ctx.state.main.position if ctx.state.main.position != END else None)
    ctx.state.feedback = None
    ctx.state.metadata.pop("human", None)
    ctx.state.main.state.routing_key = None
    ctx.state.visits = {}
    main.position, main.node_done = node, False
    main.progress = AgentProgress(kind="agent", started=True)  # the message is the node's prompt
    if not kept:
        ctx.add_message(Message(role="user", content=message), node=node)
    ctx.checkpoints.inputs_taken("follow_up")
