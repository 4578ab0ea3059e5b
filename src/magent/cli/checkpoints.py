"""``magent checkpoints``: the numbered checkpoints of a task."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from magent.cli.helpfmt import examples
from magent.cli.options import TaskId

app = typer.Typer(help="List and inspect a task's checkpoints.", no_args_is_help=True)


@app.command("list", epilog=examples("magent checkpoints list 3f2a", "magent checkpoints list 3f2a --json"))
def list_checkpoints(
    task_id: TaskId,
    json_out: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """List a task's checkpoints, with forks and the task it was forked from."""
    from magent.cli.output import print_json, warn
    from magent.errors import CheckpointCorruptError
    from magent.store import Store

    td = Store().task(task_id)
    task = td.load_task()
    summaries = td.checkpoints.summaries()
    for s in summaries:
        if s.corrupt:
            try:
                td.checkpoints.read(s.sequence)
            except CheckpointCorruptError as exc:
                warn(f"{exc} (resume falls back to the checkpoint before it)")
    if json_out:
        print_json({"task_id": task.id, "parent_task_id": task.parent_task_id,
                    "parent_checkpoint": task.parent_checkpoint,
                    "forks": [f.model_dump() for f in task.forks],
                    "checkpoints": [s.model_dump(mode="json") for s in summaries]})
        return
    from magent import render

    render.checkpoint_table(task, summaries)


@app.command("show", epilog=examples(
    "magent checkpoints show 3f2a      # the latest",
    "magent checkpoints show 3f2a 3    # checkpoint 3, messages included"))
def show(
    task_id: TaskId,
    number: Annotated[Optional[int], typer.Argument(metavar="N", help="Checkpoint number (default: the latest).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the checkpoint with its full State as JSON.")] = False,
) -> None:
    """Show one checkpoint with its full State, messages included."""
    from magent.cli.output import print_json
    from magent.errors import CheckpointCorruptError, CheckpointNotFoundError
    from magent.store import Store

    td = Store().task(task_id)
    nums = td.checkpoints.numbers()
    if number is None:
        if not nums:
            raise CheckpointNotFoundError(f"task {td.id[:8]} has no checkpoints")
        number = nums[-1]
    elif number not in nums:
        raise CheckpointNotFoundError(
            f"task {td.id[:8]} has no checkpoint {number}"
            + (f" (it has {_ranges(nums)})" if nums else " (it has none)"))
    try:
        cp = td.checkpoints.read(number)
    except CheckpointCorruptError as exc:
        good, _ = td.checkpoints.latest(repair=False)  # read-only: nothing is moved aside here
        if good is None:
            raise CheckpointCorruptError(f"{exc}; the task has no valid checkpoint") from None
        raise CheckpointCorruptError(
            f"{exc}; the latest valid one is {good.sequence} "
            f"(magent checkpoints show {td.id[:8]} {good.sequence})") from None
    state = td.full_state(cp)
    if json_out:
        doc = cp.model_dump(mode="json")
        doc["state"] = state.model_dump(mode="json")
        print_json(doc)
        return
    from magent import render

    header = {"task": td.id, "checkpoint": f"{cp.sequence} ({cp.checkpoint_id})",
              "created": cp.created_at.isoformat(timespec="seconds"), "position": cp.position,
              "reason": cp.reason, "awaiting_human": cp.awaiting_human}
    if cp.human_request:
        header["question"] = cp.human_request.question
    if cp.human_feedback:
        header["decision"] = f"{cp.human_feedback.action}: {cp.human_feedback.message or ''}"
    sessions = [{"session_id": p.session_id, "agent": p.agent, "kind": p.kind, "node": p.node,
                 "depth": p.depth, "key": p.key, "status": "running", "message_count": p.entry_count,
                 "summary": f"at {p.position}" if p.position else None} for p in cp.sessions]
    render.state_view(state, header, sessions)


def _ranges(numbers: list[int]) -> str:
    """``[0, 1, 2, 5]`` → ``checkpoints 0-2, 5``."""
    spans: list[str] = []
    start = prev = numbers[0]
    for n in numbers[1:] + [None]:  # type: ignore[list-item]
        if n is not None and n == prev + 1:
            prev = n
            continue
        spans.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ("checkpoint " if len(numbers) == 1 else "checkpoints ") + ", ".join(spans)
