"""Starting, resuming and forking runs: everything around the executor loop.

Each entry point takes the task's lock for the whole run (a second one fails at
once naming the holder), rebuilds the run context from disk when continuing,
and always releases the lock and closes tool servers at the end.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from collections.abc import Sequence
from typing import Any, Callable, TypeVar

from magent import failpoints
from magent.engine import budget as budgets
from magent.engine import conversation, guard, statekeys, templating
from magent.engine.context import RunContext, RunOptions
from magent.engine.decisions import Decision as Decision  # callers import it from here
from magent.engine.decisions import (
    check_pause, check_resumable, go_on, latest_checkpoint, prepare_feedback,
)
from magent.engine.events import EventBus, resumed_seq
from magent.engine.graph import Graph, from_snapshot
from magent.engine.inputs import merge_updates
from magent.offloop import off_loop
from magent.engine.runner import Executor, RunOutcome
from magent.engine.sessions import entries_in_use
from magent.engine.toolbox import prepare, prepared
from magent.engine.wiring import Sink, close_run, durability_of, need_tools, open_context, reported
from magent.errors import TaskStateError, UsageError
from magent.ids import new_id, now
from magent.models import ForkRef, Message, Task, TaskStatus
from magent.redact import Redactor
from magent.store.tasks import Store, TaskDir


T = TypeVar("T")

TOOL_PAUSES = frozenset({"tool_approval", "tool_recovery", "tool_changed"})
"""Pauses about one tool call: applying the answer looks the tool up, so its servers start first."""


async def start_run(graph: Graph, description: str, *, target: str | None = None,
                    tags: list[str] | None = None, retention_days: int | None = None,
                    initial: dict[str, Any] | None = None, options: RunOptions | None = None,
                    sinks: Sequence[Sink] = (), on_task: Callable[[Task], None] | None = None,
                    budget: dict[str, Any] | None = None) -> RunOutcome:
    """Create a task and run it, in an order that leaves every task on disk continuable: the lock
    is taken before the task's directory exists (a ``pending`` or ``running`` task with a free
    lock is a dead one), and checkpoint 0 is written before anything slow (tool servers, the
    model library), so a kill during start-up leaves a task ``magent resume`` continues. (A real
    model's checks run before the task exists, to fail with nothing written.)"""
    options = options or RunOptions()
    async with prepared(graph, options) as needs:
        redactor = Redactor.configured(set(needs.secrets))
        templating.require(graph.templates, initial)  # a value a template needs: before anything is written
        gate = await guard.screen_task(graph, description, options)  # before anything is written
        store = Store().ensure()
        entry = graph.nodes[graph.workflow.entry_point]
        # What the person typed (the task, --set values) is kept masked like everything on disk;
        # the run itself uses it as given.
        task = Task(id=new_id(), description=redactor.text(gate.description),
                    status=TaskStatus.pending,
                    assigned_agent=entry.agent_name or entry.name, workflow=graph.name, target=target,
                    tags=tags or [], retention_days=retention_days,
                    config_snapshot={**graph.snapshot, "options": {
                        "model_override": options.model_override, "initial": redactor.data(initial or {}),
                        "durability": durability_of(options, graph),
                        **({"budget": budget} if budget else {})}})
        lock = await off_loop(TaskDir(store, task.id).lock().acquire)
        try:
            task_dir = await off_loop(store.create_task, task)
            failpoints.hit("after_task_created")
            if on_task:
                on_task(task)
            ctx = open_context(needs, task_dir, task, options, sinks, start_seq=0, redactor=redactor)
            try:
                await _begin(ctx, gate, initial, target=target)
                if gate.blocked:
                    outcome = Executor(ctx).fail(gate.failure, "guardrail")
                else:
                    failpoints.hit("after_run_start")
                    outcome = await _first_node(ctx, gate)
            finally:
                await close_run(ctx)
            return reported(ctx, outcome)
        finally:
            await off_loop(lock.release)


async def _first_node(ctx: RunContext, gate: guard.TaskGate) -> RunOutcome:
    """After checkpoint 0: the pause an input rail asked for on the task text, else the run."""
    request = gate.request(ctx.deps.graph.workflow.entry_point)
    if request is not None:
        return Executor(ctx).pause(request)
    return await Executor(ctx).run()  # it starts the tool servers for the first node that may call one


async def _begin(ctx: RunContext, gate: guard.TaskGate, *updates: dict[str, Any] | None, target: str | None,
           resumed: bool = False) -> None:
    """The first moments of a run: what the task text's rails did, its first message, checkpoint 0,
    then status ``running`` (unless a rail blocked the text: then nothing of it is written)."""
    before = ctx.state.main.state
    for values in updates:
        if values:
            ctx.state.set_main_state(merge_updates(ctx.state.main.state, values))
    ctx.deps.bus.emit("run_started", None, task_id=ctx.deps.task.id, workflow=ctx.deps.graph.name, target=target,
                 description=ctx.deps.redactor.text(ctx.deps.task.description), resumed=resumed,
                 from_start=resumed or None)
    statekeys.report_unread(ctx.node(), before, ctx.state.main.state)
    gate.record(ctx.node())
    if gate.blocked:
        return
    ctx.add_message(Message(role="user", content=gate.text), node=None)
    ctx.checkpoints.inputs_taken("run_start")
    ctx.deps.task = await off_loop(ctx.deps.task_dir.save_task, ctx.deps.task.model_copy(update={
        "status": TaskStatus.running, "started_at": now(), "error": None}))


async def resume_run(task_ref: str, *, decision: Decision | None = None, set_values: dict[str, Any] | None = None,
                     options: RunOptions | None = None, sinks: Sequence[Sink] = (),
                     budget: dict[str, Any] | None = None) -> RunOutcome:
    from magent.engine.recovery import events_after, recover

    options = options or RunOptions()
    store = Store()
    task_dir = store.task(task_ref)
    lock = task_dir.open_for_writing()
    try:
        task = task_dir.load_task()
        check_resumable(task, decision)
        graph = from_snapshot(task.config_snapshot)
        options.model_override = options.model_override or task.config_snapshot.get("options", {}).get("model_override")
        cp, notes, entries = latest_checkpoint(task_dir, none_ok=True)
        if cp is None:  # killed before its first checkpoint, or lost it with the power: begin again
            return await _start_again(graph, task_dir, task, decision, set_values, options, sinks, notes)
        if task.status == TaskStatus.running:  # a follow-up that stopped before its checkpoint?
            later = events_after(task_dir.events_file, cp.events_seq)[1]
            kept = conversation.unrecorded_follow_up(cp, entries, later)
            if kept:
                return await conversation.answer(task_dir, task, kept[-1].content or "", options, sinks,
                                                 kept=kept, opened=conversation.follow_up_began(later))
            if kept == []:
                notes.append(f"a follow-up to task {task.id[:8]} stopped before its message was kept; "
                             f"send it again with `magent chat {task.id[:8]} MESSAGE`")
        check_pause(task, cp, decision, notes)
        # Check every input before anything is written.
        feedback, new_state = prepare_feedback(cp, decision, set_values, task_dir)
        seq, later = events_after(task_dir.events_file, cp.events_seq)
        snapshot = task.config_snapshot
        if budget:  # a person raises the limit that was reached (kept in task.json)
            snapshot = budgets.raise_limits(snapshot, budgets.scope_reached(cp, later), budget)
        budgets.check_answer(cp, graph, snapshot, decision.action if decision else None)
        async with prepared(graph, options) as needs:
            retry = task.status == TaskStatus.failed
            task = task_dir.save_task(task.model_copy(update={"status": TaskStatus.running, "error": None,
                                                        "completed_at": None, "config_snapshot": snapshot}))
            ctx = open_context(needs, task_dir, task, options, sinks, start_seq=resumed_seq(seq, cp.events_seq, later))
            try:
                recover(ctx, cp, entries, later)
                for note in notes:
                    ctx.deps.bus.emit("warning", None, message=note)
                ctx.deps.bus.emit("run_started", None, task_id=task.id, workflow=graph.name, resumed=True,
                             from_checkpoint=cp.sequence, retry=retry or None,
                             description=ctx.deps.redactor.text(task.description))
                if feedback is not None and cp.human_request is not None and cp.human_request.kind in TOOL_PAUSES:
                    await need_tools(ctx)  # the decision names a tool of the registry
                outcome = await go_on(ctx, cp, feedback, new_state)
            finally:
                await close_run(ctx)
            return reported(ctx, outcome)
    finally:
        lock.release()


async def _start_again(graph: Graph, task_dir: TaskDir, task: Task, decision: Decision | None,
                       set_values: dict[str, Any] | None, options: RunOptions, sinks: Sequence[Sink],
                       notes: Sequence[str] = ()) -> RunOutcome:
    """Resume a task that has no checkpoint to go on from: start it from task.json. Either it
    stopped before its first one, or a power loss left every one it had damaged (``notes``: they
    were moved aside), which only mode ``exit`` allows for what ran: the others sync checkpoint 0
    before the first model call."""
    if decision is not None:
        why = f"lost every checkpoint ({'; '.join(notes)})" if notes else "never started"
        raise TaskStateError(f"task {task.id[:8]} {why}, so nothing waits for a person; "
                             f"--{decision.action} has nothing to answer (`magent resume {task.id[:8]}` "
                             "starts it again)")
    from magent.engine.recovery import events_after

    needs = prepare(graph, options)
    initial = task.config_snapshot.get("options", {}).get("initial")
    gate = await guard.screen_task(graph, task.description, options)  # again: its record was lost with the run
    seq, _ = events_after(task_dir.events_file, 0)
    ctx = open_context(needs, task_dir, task, options, sinks, start_seq=seq)
    try:
        for note in notes:
            ctx.deps.bus.emit("warning", None, message=note)
        await _begin(ctx, gate, initial, set_values, target=task.target, resumed=True)
        if gate.blocked:
            outcome = Executor(ctx).fail(gate.failure, "guardrail")
        else:
            outcome = await _first_node(ctx, gate)
    finally:
        await close_run(ctx)
    return reported(ctx, outcome)


async def fork_run(task_ref: str, checkpoint: int, *, decision: Decision | None = None,
                   set_values: dict[str, Any] | None = None, options: RunOptions | None = None,
                   sinks: Sequence[Sink] = (), on_task: Callable[[Task], None] | None = None) -> RunOutcome:
    """Time travel: a new task that starts from checkpoint ``checkpoint`` of ``task_ref``."""
    from magent.store.checkpoints import CheckpointLog
    from magent.store.entries import EntryLog
    from magent.store.journal import positions as journal_positions

    store = Store()
    src = store.task(task_ref)
    parent = src.load_task()
    numbers = src.checkpoints.numbers()
    if checkpoint not in numbers:
        last = numbers[-1] if numbers else None
        raise UsageError(f"task {parent.id[:8]} has no checkpoint {checkpoint}"
                         + (f" (its checkpoints are 0..{last})" if last is not None else ""))
    cp = src.checkpoints.read(checkpoint)
    entries = src.entries.load()
    path = src.entries.path_to(cp.leaf_entry_id, entries)
    kept = entries_in_use(cp, entries, src.entries.path_to)
    graph = from_snapshot(parent.config_snapshot)
    feedback, new_state = prepare_feedback(cp, decision, set_values, src, fork=True)
    options = options or RunOptions()
    options.model_override = options.model_override or parent.config_snapshot.get("options", {}).get("model_override")
    needs = prepare(graph, options)
    task = Task(id=new_id(), description=parent.description, status=TaskStatus.pending,
                assigned_agent=parent.assigned_agent, workflow=parent.workflow, target=parent.target,
                tags=list(parent.tags), retention_days=parent.retention_days,
                parent_task_id=parent.id, parent_checkpoint=checkpoint,
                config_snapshot=parent.config_snapshot)
    paused = cp.awaiting_human and feedback is None
    first = cp.model_copy(update={
        "task_id": task.id, "sequence": 0, "checkpoint_id": new_id(), "parent_id": None, "reason": "fork",
        "created_at": now(), "events_seq": 0, "awaiting_human": paused, "human_feedback": None,
        "human_request": cp.human_request if paused else None, "sha256": None,
        "signals_applied": 0})  # (the fork's own signals/ starts empty, numbered from 1)

    def fill(staging: Path) -> None:
        """The fork's history, tool state and checkpoint 0, written before its directory appears."""
        entries = EntryLog(staging / "entries.jsonl")
        for entry in kept:  # the histories it continues, so the new task stands on its own
            entries.append(entry)
        entries.close()
        copy_state(src, staging, cp)
        CheckpointLog(staging, task.id).write(first.model_copy(update={"journals": journal_positions(staging)}))

    lock = TaskDir(store, task.id).lock().acquire()
    try:
        task_dir = store.create_task(task, fill=fill)
        _record_fork(src, task.id, checkpoint)
        if on_task:
            on_task(task)
        ctx = open_context(needs, task_dir, task, options, sinks, start_seq=0)
        try:
            ctx.checkpoints.restore(task_dir.checkpoints.read(0), _messages(path),
                        lambda leaf: _messages(src.entries.path_to(leaf, entries)))
            ctx.deps.bus.emit("run_started", None, task_id=task.id, workflow=graph.name, resumed=True,
                         forked_from=parent.id, from_checkpoint=checkpoint,
                         description=ctx.deps.redactor.text(task.description))
            ctx.deps.bus.emit("checkpoint", first.position, sequence=0, reason="fork")
            ctx.deps.task = task_dir.save_task(ctx.deps.task.model_copy(update={"status": TaskStatus.running,
                                                                "started_at": now()}))
            if paused:
                outcome = Executor(ctx).end(TaskStatus.awaiting_human, request=cp.human_request)
            else:
                if feedback is not None and cp.human_request is not None and cp.human_request.kind in TOOL_PAUSES:
                    await need_tools(ctx)
                outcome = await go_on(ctx, cp, feedback, new_state)
        finally:
            await close_run(ctx)
        return reported(ctx, outcome)
    finally:
        lock.release()


# internals

def copy_state(src: TaskDir, dst: Path, cp) -> None:
    """The task state beside the checkpoints as it was at ``cp``, into ``dst``: journals cut to the
    lengths ``cp`` recorded (copied whole when it recorded none), artifacts (immutable,
    content-addressed) hard-linked, or copied across filesystems."""
    from magent.store.journal import copy_prefixes
    from magent.store.journal import positions as journal_positions
    from magent.tools.kv import LEGACY_FILE as KV_LEGACY
    from magent.tools.pinning import LEGACY_FILE as PINS_LEGACY

    if cp.journals is not None:
        copy_prefixes(src.path, dst, cp.journals)
    else:
        copy_prefixes(src.path, dst, journal_positions(src.path))
        for name in (KV_LEGACY, PINS_LEGACY):
            if (src.path / name).is_file() and not (src.path / name).is_symlink():
                shutil.copyfile(src.path / name, dst / name)
    if src.artifacts_dir.is_dir() and not src.artifacts_dir.is_symlink():
        (dst / "artifacts").mkdir(mode=0o700, exist_ok=True)
        for item in src.artifacts_dir.iterdir():
            if item.is_file() and not item.is_symlink() and not item.name.startswith("."):
                try:
                    os.link(item, dst / "artifacts" / item.name)
                except OSError:
                    shutil.copyfile(item, dst / "artifacts" / item.name)


def _record_fork(src: TaskDir, child: str, checkpoint: int) -> None:
    from magent.errors import TaskLockedError

    try:
        lock = src.open_for_writing()
    except TaskLockedError:
        return  # the parent is running; its fork list is best effort
    try:
        parent = src.load_task()
        src.save_task(parent.model_copy(update={"forks": [*parent.forks, ForkRef(task_id=child,
                                                                                  checkpoint=checkpoint)]}))
    finally:
        lock.release()


def _messages(entries):
    from magent.store.entries import to_message

    return [to_message(e) for e in entries]


def cancel_task(task_ref: str, report: Callable[[TaskDir, Task], T]) -> T:
    """Abandon a paused or dead task: status ``cancelled``. A live run's lock makes this fail.
    Returns ``report(task_dir, task)`` of the cancelled task, read before its lock is let go (as
    ``wiring.reported`` reads a run's)."""
    task_dir = Store().task(task_ref)
    lock = task_dir.open_for_writing()
    try:
        task = task_dir.load_task()
        if task.status.finished:
            raise TaskStateError(f"task {task.id[:8]} is already {task.status.value}")
        with_events = EventBus(start_seq=max((e.seq for e in task_dir.read_events()), default=0))
        with_events.subscribe(lambda ev: task_dir.append_event(ev))
        with_events.emit("run_finished", None, status="cancelled", error="cancelled by a person",
                         model_calls=task.usage.calls, tokens_in=task.usage.input, tokens_out=task.usage.output,
                         cost=task.usage.cost, unpriced=task.usage.unpriced or None,
                         estimated=task.usage.estimated or None)
        task = task_dir.save_task(task.model_copy(update={"status": TaskStatus.cancelled, "completed_at": now(),
                                                    "error": "cancelled by a person"}))
        task_dir.sync()
        from magent.trace import write_trace

        write_trace(task_dir)
        task_dir.close()
        return report(task_dir, task)
    finally:
        lock.release()
