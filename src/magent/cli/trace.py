"""``magent trace ID``: what a task did, why, how long and how much — from its local files."""

from __future__ import annotations

from typing import Annotated, Optional

import typer


def register(app: typer.Typer) -> None:
    app.command("trace")(trace)


def trace(
    task_id: Annotated[str, typer.Argument(metavar="ID", help="Task id or unique prefix.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print the TraceLog as JSON (with --step: that step's details).")] = False,
    step: Annotated[Optional[int], typer.Option("--step", metavar="N", help="Show step N whole: untruncated inputs and outputs, artifact paths.")] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Show the run live until it stops (with --json: events as JSON Lines).")] = False,
    show_all: Annotated[bool, typer.Option("--all", help="Show every turn (long runs of uneventful turns are folded by default).")] = False,
) -> None:
    """Show a task's trace: nodes, turns, model and tool calls, pauses, errors, and totals per model.

    Works for running, paused, failed and finished tasks.
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
