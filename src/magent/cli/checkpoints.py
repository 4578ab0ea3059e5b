"""``magent checkpoints``: the numbered checkpoints of a task."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from magent.cli.helpfmt import examples
from magent.cli.options import TaskId
from magent.cli.usage import CommandGroup

app = typer.Typer(cls=CommandGroup, help="List and inspect a task's checkpoints.", no_args_is_help=True)


@app.command("list", epilog=examples("magent checkpoints list 3f2a", "magent checkpoints list 3f2a --json"))
def list_checkpoints(
    task_id: TaskId,
    json_out: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """List a task's checkpoints, with forks and the task it was forked from."""
    from magent.api.inspection import checkpoints
    from magent.cli.output import print_json, warn

    listed = checkpoints(task_id)
    for problem in listed.problems:
        warn(problem)
    if json_out:
        print_json(listed.as_dict())
        return
    from magent import render

    render.checkpoint_table(listed.task, listed.checkpoints)


@app.command("show", epilog=examples(
    "magent checkpoints show 3f2a      # the latest",
    "magent checkpoints show 3f2a 3    # checkpoint 3, messages included"))
def show(
    task_id: TaskId,
    number: Annotated[Optional[int], typer.Argument(metavar="N", help="Checkpoint number (default: the latest).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the checkpoint with its full State as JSON.")] = False,
) -> None:
    """Show one checkpoint with its full State, messages included."""
    from magent.api.inspection import checkpoint
    from magent.cli.output import print_json

    view = checkpoint(task_id, number)
    if json_out:
        print_json(view.as_dict())
        return
    from magent import render

    cp = view.checkpoint
    header = {"task": view.task_id, "checkpoint": f"{cp.sequence} ({cp.checkpoint_id})",
              "created": cp.created_at.isoformat(timespec="seconds"), "position": cp.position,
              "reason": cp.reason, "awaiting_human": cp.awaiting_human}
    if cp.human_request:
        header["question"] = cp.human_request.question
    if cp.human_feedback:
        header["decision"] = f"{cp.human_feedback.action}: {cp.human_feedback.message or ''}"
    sessions = [{"session_id": p.session_id, "agent": p.agent, "kind": p.kind, "node": p.node,
                 "depth": p.depth, "key": p.key, "status": "running", "message_count": p.entry_count,
                 "summary": f"at {p.position}" if p.position else None} for p in cp.sessions]
    render.state_view(view.state, header, sessions)
