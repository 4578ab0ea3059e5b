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
        "magent trace 3f2a --step 2     # step 2 whole: its tool call and result",
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
    otlp: Annotated[Optional[str], typer.Option("--otlp", metavar="URL", help="Send the finished task's trace as OpenTelemetry spans to this OTLP/HTTP endpoint (like http://localhost:4318); needs pip install 'magent-runner[otel]'.")] = None,
    session: Annotated[Optional[str], typer.Option("--session", metavar="SESSION", help="Show one child session (its id, first characters or key, e.g. subtask:facts#0) and the sessions it opened; with --json only their steps, sessions and usage.")] = None,
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
    if otlp is not None:
        _otlp(task_id, otlp)
        return
    if html:
        _html(task_id, file)
        return
    if follow:
        _follow(task_id, json_out)
        return

    from magent import render
    from magent.api.tracing import read_trace

    reading = read_trace(task_id, steps_in_full=step is not None)
    for note in reading.notes:
        warn(note)
    if request:
        sent = reading.requests(step)
        for problem in sent.problems:
            warn(problem)
        if json_out:
            from magent.cli.output import print_json

            print_json(sent.calls)
        else:
            render.print_lines(sent.lines())
        return
    if step is not None:
        if json_out:
            from magent.cli.output import print_json

            print_json(reading.step(step))
        else:
            render.print_lines(reading.step_lines(step))
        return
    if json_out:
        from magent.cli.output import print_json

        doc, problem = reading.log(session=session)
        if problem:
            warn(problem + "; printing it as it is")
        print_json(doc)
        return
    render.print_lines(reading.tree(show_all=show_all, session=session), crop=True)


def _otlp(task_id: str, url: str) -> None:
    from magent.api.tracing import export_trace

    sent = export_trace(task_id, url)
    print(f"exported {sent.spans} spans of task {sent.task_id[:8]} to {sent.url} (trace id {sent.trace_id})")


def _html(task_id: str, file: str | None) -> None:
    import sys

    from magent.api.tracing import trace_html
    from magent.cli.output import warn

    written = trace_html(task_id)
    target = None if file == "-" else Path(file or f"trace-{written.task_id[:8]}.html")
    if target is not None:
        from magent.store.files import write_output

        write_output(target, written.page.encode())
    for note in written.notes:
        warn(note)
    if written.live:
        warn(f"task {written.task_id[:8]} is still running: the report shows its {written.steps} steps so far")
    if target is None:
        sys.stdout.write(written.page)
    else:
        print(f"wrote {target} ({written.steps} steps, {written.bytes / 1024:,.0f} KB): open it in a browser")


def _follow(task_id: str, json_out: bool) -> None:
    from magent.api.tracing import follow_trace
    from magent.errors import EXIT_INTERRUPTED

    if json_out:
        from magent.cli.runtime import JsonLines

        sink = JsonLines()
        header = named = None
    else:
        from magent.liveview import EventPrinter

        printer = EventPrinter()
        sink = printer.print_event
        header = printer.out.print

        def named(full_id: str) -> None:
            printer.task_id = full_id
    try:
        follow_trace(task_id, sink, on_start=header, on_task=named)
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
