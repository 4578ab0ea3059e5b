"""``magent trace ID``: what a task did, why, how long and how much — from its local files."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from magent.cli.helpfmt import examples
from magent.cli.options import TaskId


def register(app: typer.Typer) -> None:
    app.command("trace", epilog=examples(
        "magent trace 3f2a              # the story of the run, step by step",
        "magent trace 3f2a --step 3     # step 3 whole: the exact tool result",
        "magent trace 3f2a --follow     # a running task, live",
        "magent trace 3f2a --json | jq '.steps | length'"))(trace)


def trace(
    task_id: TaskId,
    json_out: Annotated[bool, typer.Option("--json", help="Print the TraceLog as JSON (with --step: that step's details).")] = False,
    step: Annotated[Optional[int], typer.Option("--step", metavar="N", help="Show step N whole: untruncated inputs and outputs, artifact paths.")] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Show the run live until it stops (with --json: events as JSON Lines).")] = False,
    show_all: Annotated[bool, typer.Option("--all", help="Show every turn (long runs of uneventful turns are folded by default).")] = False,
) -> None:
    """Show what a task did, step by step, with tokens and cost.

    Nodes, then model turns, then model and tool calls, with durations, outcomes,
    pauses, human decisions, errors and totals per model. Works for running,
    paused, failed and finished tasks.
    """
    from magent.cli.output import warn
    from magent.errors import UsageError
    from magent.store import Store

    if follow and step is not None:
        raise UsageError("--follow and --step do not go together")
    if step is not None and step < 1:
        raise UsageError("--step counts from 1")
    td = Store().task(task_id)
    if follow:
        _follow(td, json_out)
        return

    from magent import render
    from magent.trace.load import load_view

    view = load_view(td, need_events=step is not None)
    for note in view.notes:
        warn(note)
    if step is not None:
        from magent.trace.detail import step_detail, step_lines

        detail = step_detail(view, step)
        if json_out:
            from magent.cli.output import print_json

            print_json(detail)
        else:
            render.print_lines(step_lines(detail))
        return
    if json_out:
        from magent.cli.output import print_json
        from magent.trace.load import as_tracelog

        trace_log, problem = as_tracelog(view)
        if problem:
            warn(problem + "; printing it as it is")
        print_json(trace_log)
        return
    from magent.trace.view import tree_lines

    render.print_lines(tree_lines(view, show_all=show_all), crop=True)


def _follow(td, json_out: bool) -> None:
    from magent.errors import EXIT_INTERRUPTED
    from magent.trace.follow import follow

    if json_out:
        from magent.cli.runtime import JsonLines

        sink = JsonLines()
        header = None
    else:
        from magent.render import EventPrinter

        printer = EventPrinter(task_id=td.id)
        sink = printer.print_event
        header = printer.out.print
    try:
        follow(td, sink, say=header)
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
