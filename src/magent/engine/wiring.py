"""What every entry point wires around a run: its context with the event sinks (events.jsonl,
the terminal, telemetry), its durability mode, its tool servers, and closing all of it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Callable

from pydantic_core import to_jsonable_python

from magent import failpoints

from magent.engine.context import RunContext, RunDeps, RunOptions
from magent.engine.events import EventBus
from magent.engine.graph import Graph
from magent.offloop import off_loop
from magent.engine.toolbox import RunNeeds
from magent.models import Event, Task
from magent.redact import Redactor
from magent.store.tasks import TaskDir
from magent.store.events import LIVE_ONLY, for_disk

if TYPE_CHECKING:
    from magent.engine.runner import RunOutcome
    from magent.store.toolstats import Outcomes

Sink = Callable[[Event], None]


def open_context(needs: RunNeeds, task_dir: TaskDir, task: Task, options: RunOptions, sinks: Sequence[Sink],
                 start_seq: int, redactor: Redactor | None = None) -> RunContext:
    """The run's context with its event sinks; tools come later (``_start_tools``)."""
    from magent.tools.pinning import PINS_FILE, PinStore
    from magent.trace import may_export

    redactor = redactor or Redactor.configured(set(needs.secrets))
    bus = EventBus(start_seq=start_seq)
    # OpenTelemetry spans of what is written, when asked: a process of its own follows events.jsonl
    telemetry = None
    if may_export():
        from magent.trace.telemetry import open_live

        telemetry = open_live(task.id, task_dir.events_file, start_seq)

    def deliver(raw: dict[str, Any]) -> None:
        if not sinks and raw["type"] in LIVE_ONLY:
            return  # nobody is watching and events.jsonl does not keep it
        # Masked for every sink: events.jsonl (which telemetry follows), the terminal and --json
        # show the same thing, and a secret a person typed or a model repeated reaches none. The
        # event (the bus's dict, not to be changed) is turned into its line of JSON once, and
        # masked field by field only when that line may hold something to mask.
        doc = redactor.data(raw) if sinks or not redactor.tool_io else None
        if redactor.tool_io:
            kept = for_disk(raw)
            if kept is not None:
                task_dir.append_event_line(redactor.json_line(kept))
        elif doc is not None and (kept := for_disk(doc, lean=False)) is not None:
            task_dir.append_event_doc(to_jsonable_python(redactor.event(kept)))
        if sinks:
            shown = Event.model_validate(doc)
            for sink in sinks:
                sink(shown)

    bus.subscribe(deliver, live=bool(sinks), raw=True)
    from magent.store.toolstats import Outcomes

    outcomes = Outcomes(task_dir.store.root)  # (tool selection)
    bus.subscribe(outcomes.observe, live=False, raw=True)
    ctx = RunContext(RunDeps(graph=needs.graph, needs=needs, task=task, task_dir=task_dir, bus=bus, options=options,
                             redactor=redactor, pins=PinStore(task_dir.path / PINS_FILE), telemetry=telemetry,
                             outcomes=outcomes))
    task_dir.commit_with(durability_of(options, needs.graph, task))
    return ctx


def durability_of(options: RunOptions, graph: Graph, task: Task | None = None) -> str:
    """The run's durability mode: ``--durability``, else the one the task started with, else the
    workflow's ``durability:``, else ``sync``."""
    from magent.store.commit import DEFAULT_MODE

    started = (task.config_snapshot.get("options") or {}).get("durability") if task is not None else None
    return options.durability or started or graph.workflow.durability or DEFAULT_MODE


async def need_tools(ctx: RunContext) -> None:
    """The run's tool servers, started the first time a node that may call a tool is about to
    run (``Executor``): a run or a resume that stops at a person's step starts none, and pays
    no server's seconds to find that out. Branches of a fan-out asking at once share one start."""
    if ctx.deps.registry is not None:
        return
    starting = ctx.tools_starting
    if starting is None:
        starting = ctx.tools_starting = asyncio.ensure_future(_start_tools(ctx))
    await asyncio.shield(starting)


async def _start_tools(ctx: RunContext) -> None:
    """Start the tool servers the run can reach (seconds, so after the first checkpoint)."""
    from magent.engine.toolbox import open_registry

    redactor = ctx.deps.redactor  # it knows the servers' secrets already (RunNeeds.with_servers)
    registry = ctx.deps.registry = await open_registry(ctx.deps.needs, ctx.deps.task_dir, ctx.deps.options, redact=lambda text: redactor.text(text))
    for problem in ctx.deps.pins.warnings:
        ctx.deps.bus.emit("warning", None, message=problem)
    for server in registry.start_errors:
        ctx.deps.bus.emit("warning", None, message=f"tool server {server!r} did not start: "
                                              f"{registry.down_reason(server)}")


def reported(ctx: RunContext, outcome: RunOutcome) -> RunOutcome:
    """``outcome`` with ``ctx.deps.options.report``'s reading of the task. Called after ``close_run`` (the
    trace is written) and before the lock is released: once it is, a retention sweep may remove
    a finished task at any moment, so nothing of the run may be read back after that."""
    if ctx.deps.options.report is not None:
        outcome.report = ctx.deps.options.report(ctx.deps.task_dir)
    return outcome


def _write_out(task_dir: TaskDir, write_trace: Callable[[TaskDir], Any], outcomes: "Outcomes | None") -> None:
    """trace.json written, the task's files closed, its tool results added to the home's tool
    stats (in a worker thread: ``close_run``)."""
    write_trace(task_dir)
    task_dir.close()
    if outcomes is not None:
        outcomes.save()


async def close_run(ctx: RunContext) -> None:
    """End the run however it stopped: its tool servers closed, its files synced, its trace written."""
    from magent.trace import write_trace

    starting = ctx.tools_starting
    try:
        if starting is not None and not starting.done():  # the run was stopped while they started
            starting.cancel()
            await asyncio.gather(starting, return_exceptions=True)
        if ctx.deps.registry is not None:
            await asyncio.shield(ctx.deps.registry.close())
    finally:
        # The sync settles the group commit's work on the loop's thread, which owns it; what
        # follows touches only this task's files (and the home's tool stats).
        ctx.deps.task_dir.sync()
        failpoints.hit("before_trace")
        await off_loop(_write_out, ctx.deps.task_dir, write_trace, ctx.deps.outcomes)
        if ctx.deps.telemetry is not None:
            ctx.deps.telemetry.close()  # waits for its exporter: a few seconds at most, whatever the endpoint does
