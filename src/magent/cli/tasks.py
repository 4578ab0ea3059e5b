"""``magent tasks``: list, show, pause and cancel tasks."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from magent.cli.helpfmt import examples
from magent.cli.options import TaskId
from magent.cli.usage import CommandGroup
from magent.vocabulary import TASK_STATUSES as STATUSES

app = typer.Typer(cls=CommandGroup, help="List, inspect, pause and cancel tasks.", no_args_is_help=True)


@app.command("list", epilog=examples(
    "magent tasks list -n 10",
    "magent tasks list --status awaiting_human",
    "magent tasks list --search invoice --since 2d",
    "magent tasks list --workflow triage --tag urgent --model 'openai/*'",
    "magent tasks list --json | jq -r '.[].id'"))
def list_tasks(
    status: Annotated[Optional[str], typer.Option("--status", "-s", metavar="STATUS", help=f"Only tasks with this status: {', '.join(STATUSES)}.")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", metavar="N", min=1, help="Only the newest N tasks (of those the other options keep).")] = None,
    search: Annotated[Optional[str], typer.Option("--search", metavar="TEXT", help="Only tasks whose text or result contains TEXT (any case).")] = None,
    tag: Annotated[Optional[list[str]], typer.Option("--tag", metavar="TAG", help="Only tasks with this tag (repeat: all of them).")] = None,
    workflow: Annotated[Optional[str], typer.Option("--workflow", "-w", metavar="NAME", help="Only runs of this workflow (or single agent).")] = None,
    model: Annotated[Optional[str], typer.Option("--model", metavar="MODEL", help="Only tasks configured with or answered by this model: gpt-4o-mini, openai/gpt-4o-mini or a pattern like 'openai/*'.")] = None,
    since: Annotated[Optional[str], typer.Option("--since", metavar="WHEN", help="Only tasks created since WHEN: an age (30m, 2h, 3d, 1w) or a date (2026-11-20).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the tasks as a JSON array.")] = False,
) -> None:
    """List tasks, newest first, with model calls, tokens and cost.

    A run whose process died (kill -9, a reboot) shows as interrupted. In a terminal
    the columns fit its width: the task text is cut last, after the less important
    columns are left out.
    """
    # The light listing path: neither pydantic nor the models are imported here.
    from magent.api.reading import tasks
    from magent.cli import collector
    from magent.cli.output import print_json, warn
    from magent.errors import UsageError
    from magent.store.listing import TaskFilter, parse_since

    try:
        after = parse_since(since) if since is not None else None
    except ValueError as exc:
        raise UsageError(f"--since: {exc}") from None
    tags = tuple(tag or ())
    if any(t.startswith("batch:") for t in tags):  # batch:SHORT, as every batch command takes it
        from magent.store.batches import full_tag

        tags = tuple(full_tag(t) for t in tags)
    where = TaskFilter(search=search, tags=tags, workflow=workflow, model=model, since=after)
    problems: list[str] = []
    collector.reading()
    rows = tasks(status, problems=problems, where=where, documents=json_out)
    collector.keep(rows)
    rows = rows[:limit]
    for p in problems:
        warn(p)
    if json_out:
        print_json([r.doc for r in rows])
        return
    from magent import render

    filtered = any(v is not None for v in (status, search, workflow, model, since)) or bool(tag)
    render.task_table(rows, filtered)


@app.command("show", epilog=examples("magent tasks show 3f2a", "magent tasks show 3f2a --json"))
def show(
    task_id: TaskId,
    json_out: Annotated[bool, typer.Option("--json", help="Print task.json, with its AgentResult under agent_result.")] = False,
) -> None:
    """Show one task: status, timing, usage, result or error."""
    from magent.api.reading import task_details
    from magent.cli.output import print_json

    details = task_details(task_id)
    if json_out:
        print_json(details.as_dict())
        return
    from magent import render

    render.task_detail(details.task, details.checkpoints, details.sessions)


@app.command("pause", epilog=examples("magent tasks pause 3f2a", "magent resume 3f2a --approve"))
def pause(
    task_id: TaskId,
    no_wait: Annotated[bool, typer.Option("--no-wait", help="Return once the pause is sent, without waiting for the run to stop.")] = False,
) -> None:
    """Pause a running task at its next safe point.

    The run stops after the model call or tool call in progress and waits for a person like
    any pause; magent resume ID --approve continues it.
    """
    from magent.api import pause as pause_task

    print(_stopped(pause_task(task_id, wait=not no_wait), "pause"))


@app.command("cancel", epilog=examples("magent tasks cancel 3f2a"))
def cancel(
    task_id: TaskId,
    no_wait: Annotated[bool, typer.Option("--no-wait", help="For a running task: return once the cancel is sent.")] = False,
) -> None:
    """Cancel a task (its status becomes cancelled). A running task stops at its next safe
    point (after the model call or tool call in progress), its tool servers and processes
    ended; a paused or dead one is cancelled at once.
    """
    from magent.api import cancel as cancel_task

    print(_stopped(cancel_task(task_id, wait=not no_wait), "cancel"))


def _stopped(result, verb: str) -> str:  # type: ignore[no-untyped-def]
    """What pause and cancel say: what was sent, or what the task is now."""
    from magent.api.steering import Sent

    short = result.task_id[:8]
    if isinstance(result, Sent):
        return (f"task {short}: {verb} sent (signal {result.signal}); it applies after the model call "
                "or tool call in progress")
    if result.status == "awaiting_human" and verb == "pause":
        return f"task {short} paused; go on with: magent resume {short} --approve"
    if result.status == "cancelled":
        return f"task {result.task_id} cancelled"
    return f"task {short} is {result.status.value}: it stopped before the {verb} applied"
