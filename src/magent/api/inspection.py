"""A task's checkpoints and checking config files: ``magent.checkpoints``, ``checkpoint``, ``validate``."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magent import paths

if TYPE_CHECKING:
    from magent.api.reading import PathLike
    from magent.api.checking import CheckResult
    from magent.models import Checkpoint, CheckpointSummary, State, Task


@dataclass(frozen=True)
class Checkpoints:
    """A task's numbered checkpoints, oldest first (``magent.checkpoints``)."""

    task: "Task"
    """The task (``parent_task_id``/``parent_checkpoint``: its origin; ``forks``: tasks forked from it)."""
    checkpoints: list["CheckpointSummary"]
    """One summary per checkpoint file; ``corrupt`` marks one that fails its checks."""
    problems: list[str] = field(default_factory=list)
    """One line per corrupt checkpoint, with what resume does about it."""

    def as_dict(self) -> dict[str, Any]:
        """What ``magent checkpoints list ID --json`` prints."""
        return {"task_id": self.task.id, "parent_task_id": self.task.parent_task_id,
                "parent_checkpoint": self.task.parent_checkpoint,
                "forks": [f.model_dump() for f in self.task.forks],
                "checkpoints": [s.model_dump(mode="json") for s in self.checkpoints]}


@dataclass(frozen=True)
class CheckpointView:
    """One checkpoint with its full State, messages included (``magent.checkpoint``)."""

    task_id: str
    """The task's full id."""
    checkpoint: "Checkpoint"
    """The checkpoint as stored (its ``state`` holds no messages: they live in entries.jsonl)."""
    state: "State"
    """The checkpoint's State with ``messages`` rebuilt from the conversation."""

    def as_dict(self) -> dict[str, Any]:
        """What ``magent checkpoints show ID N --json`` prints."""
        doc: dict[str, Any] = self.checkpoint.model_dump(mode="json")
        doc["state"] = self.state.model_dump(mode="json")
        return doc


def checkpoints(task_id: str, *, home: PathLike | None = None) -> Checkpoints:
    """A task's checkpoints (any id or unique prefix), as ``magent checkpoints list`` shows them."""
    from magent.errors import CheckpointCorruptError
    from magent.store.tasks import Store
    from magent.vocabulary import damage_note

    with paths.using_home(home):
        task_dir = Store().task(task_id)
        task = task_dir.load_task()
        summaries = task_dir.checkpoints.summaries()
        problems: list[str] = []
        for n, s in enumerate(summaries):
            if s.corrupt:
                try:
                    task_dir.checkpoints.read(s.sequence)
                except CheckpointCorruptError as exc:
                    problems.append(f"{exc} ({damage_note(summaries[n + 1:])})")
    return Checkpoints(task=task, checkpoints=summaries, problems=problems)


def checkpoint(task_id: str, number: int | None = None, *,
               home: PathLike | None = None) -> CheckpointView:
    """Checkpoint ``number`` of a task (default: the latest), with its full State. Raises
    ``CheckpointNotFoundError`` or ``CheckpointCorruptError`` (naming the latest valid one)."""
    from magent.errors import CheckpointCorruptError, CheckpointNotFoundError
    from magent.store.tasks import Store

    with paths.using_home(home):
        task_dir = Store().task(task_id)
        nums = task_dir.checkpoints.numbers()
        if number is None:
            if not nums:
                raise CheckpointNotFoundError(f"task {task_dir.id[:8]} has no checkpoints")
            number = nums[-1]
        elif number not in nums:
            raise CheckpointNotFoundError(
                f"task {task_dir.id[:8]} has no checkpoint {number}"
                + (f" (it has {_ranges(nums)})" if nums else " (it has none)"))
        try:
            cp = task_dir.checkpoints.read(number)
        except CheckpointCorruptError as exc:
            good, _ = task_dir.checkpoints.latest(repair=False)  # read-only: nothing is moved aside here
            if good is None:
                raise CheckpointCorruptError(f"{exc}; the task has no valid checkpoint") from None
            raise CheckpointCorruptError(
                f"{exc}; the latest valid one is {good.sequence} "
                f"(magent checkpoints show {task_dir.id[:8]} {good.sequence})") from None
        return CheckpointView(task_id=task_dir.id, checkpoint=cp, state=task_dir.full_state(cp))


def validate(*files: PathLike, home: PathLike | None = None, servers: bool = False) -> list["CheckResult"]:
    """Check agent, workflow, MCP servers, retention policy and script files (``magent validate``).

    A bad file raises nothing: its result has ``ok`` False and ``errors`` (file:line:col, field).
    ``servers``: check tool names against the live tool lists of the MCP servers agents use."""
    from magent.api.checking import check_file

    with paths.using_home(home):
        return [check_file(Path(os.fspath(f)), servers=servers) for f in files]


def _ranges(numbers: list[int]) -> str:
    """``[0, 1, 2, 5]`` → ``checkpoints 0-2, 5``."""
    return ("checkpoint " if len(numbers) == 1 else "checkpoints ") + ", ".join(number_spans(numbers))


def number_spans(numbers: list[int]) -> list[str]:
    """Ascending ``[0, 1, 2, 5]`` → ``["0-2", "5"]``."""
    spans: list[str] = []
    start = prev = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        spans.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return spans
