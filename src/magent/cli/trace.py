"""``magent trace ID``: what a task did, why, how long and how much — from its local files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from magent.cli.helpfmt import examples
from magent.cli.options import TaskId


def register(app: typer.Typer) -> None:
    app.command("trace", epilog=examples(
        "magent trace 3f2a              # the story of the run, step by step",
        "magent trace 3f2a --step 3     # step 3 whole: the exact tool result",
        "magent trace 3f2a --step 2 --request   # what step 2 sent to the model",
        "magent trace 3f2a --follow     # a running task, live",
        "magent trace 3f2a --html       # one page to open in a browser",
        "magent trace 3f2a --otlp http://localhost:4318   # to OpenTelemetry",
        "magent trace 3f2a --session 9c1d  # one sub-agent, branch or subtask",
        "magent trace 3f2a --json | jq '.steps | length'"))(trace)


def trace(
    task_id: TaskId,
    file: Annotated[Optional[str], typer.Argument(metavar="FILE", show_default=False, help="With --html: the file to write (default trace-ID.html in this directory; - writes to stdout).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the TraceLog as JSON (with --step: that step's details).")] = False,
    step: Annotated[Optional[int], typer.Option("--step", metavar="N", help="Show step N whole: untruncated inputs and outputs, artifact paths.")] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Show the run live until it stops (with --json: events as JSON Lines).")] = False,
    show_all: Annotated[bool, typer.Option("--all", help="Show every turn (long runs of uneventful turns are folded by default).")] = False,
    html: Annotated[bool, typer.Option("--html", help="Write the trace as one self-contained HTML page that opens offline in a browser: timeline, steps, prompts, tool results, tokens and cost, the workflow graph.")] = False,
    otlp: Annotated[Optional[str], typer.Option("--otlp", metavar="URL", help="Send the finished task's trace as OpenTelemetry spans to this OTLP/HTTP endpoint (like http://localhost:4318); needs pip install 'magent[otel]'.")] = None,
    session: Annotated[Optional[str], typer.Option("--session", metavar="SESSION", help="Show one child session (its id, first characters or key, e.g. subtask:facts#0) and the sessions it opened.")] = None,
    request: Annotated[bool, typer.Option("--request", help="With --step: the exact request each model call of the step sent (system prompt, tools, messages, parameters).")] = False,
) -> None:
    """Show what a task did, step by step, with tokens and cost.

    Nodes, then model turns, then model and tool calls, with durations, outcomes,
    pauses, human decisions, errors and totals per model. Works for running,
    paused, failed and finished tasks. --html writes the same trace as one page
    to open in a browser; --otlp sends it to an OpenTelemetry collector.
    """
    from magent.cli.output import warn
    from magent.errors import UsageError
    from magent.store import Store

    if follow and step is not None:
        raise UsageError("--follow and --step do not go together")
    if file is not None and not html:
        raise UsageError(f"unexpected argument {file!r}: FILE goes with --html (magent trace ID --html [FILE])")
    if html and (follow or step is not None or json_out):
        raise UsageError("--html does not go with --follow, --step or --json")
    if otlp is not None and (html or follow or step is not None or json_out):
        raise UsageError("--otlp does not go with --html, --follow, --step or --json")
    if step is not None and step < 1:
        raise UsageError("--step counts from 1")
    if request and step is None:
        raise UsageError("--request needs --step N: the step whose model calls to show")
    td = Store().task(task_id)
    if otlp is not None:
        _otlp(td, otlp)
        return
    if html:
        _html(td, file)
        return
    if follow:
        _follow(td, json_out)
        return

    from magent import render
    from magent.trace.load import load_view

    view = load_view(td, need_events=step is not None)
    for note in view.notes:
        warn(note)
    if request:
        from magent.trace.request import request_lines, step_requests

        calls, problems = step_requests(view, step)
        for problem in problems:
            warn(problem)
        if json_out:
            from magent.cli.output import print_json

            print_json(calls)
        else:
            render.print_lines(request_lines(step, calls))
        return
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

    render.print_lines(tree_lines(view, show_all=show_all, session=session), crop=True)


def _otlp(td, url: str) -> None:
    from magent.errors import TaskStateError, UsageError
    from magent.trace.load import read_task
    from magent.trace.telemetry import OTLPTarget, traces_url

    target = OTLPTarget(url=traces_url(url), source="--otlp")
    task = read_task(td, [])
    if task is not None and task.status == "running" and not td.lock().is_free():
        raise TaskStateError(f"task {td.id[:8]} is still running: export it once it stops "
                             "(or set OTEL_EXPORTER_OTLP_ENDPOINT and runs export as they go)")
    if not td.events_file.exists():
        raise TaskStateError(f"task {td.id[:8]} has no events.jsonl: nothing to export")
    try:
        from magent.trace.otel import export_task
    except ImportError:
        raise UsageError("--otlp needs the OpenTelemetry SDK: pip install 'magent[otel]'") from None
    sent = export_task(td, target)
    print(f"exported {sent['spans']} spans of task {td.id[:8]} to {target.url} (trace id {sent['trace_id']})")


def _html(td, file: str | None) -> None:
    import sys

    from magent.cli.output import warn
    from magent.trace.html import write_report

    target = None if file == "-" else Path(file or f"trace-{td.id[:8]}.html")
    written = write_report(td, target)
    for note in written.notes:
        warn(note)
    if written.live:
        warn(f"task {td.id[:8]} is still running: the report shows its {written.steps} steps so far")
    if target is None:
        sys.stdout.write(written.page)
    else:
        print(f"wrote {target} ({written.steps} steps, {written.bytes / 1024:,.0f} KB): open it in a browser")


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
