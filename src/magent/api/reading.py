"""Reading tasks: ``tasks``, ``task``, ``task_details``, ``trace_log`` (and ``api.definition``'s ``load``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from magent import paths
from magent.api.definition import Definition as Definition, PathLike as PathLike, load as load
from magent.errors import UsageError

if TYPE_CHECKING:
    from magent.api.result import AgentResult
    from magent.models import Task, TraceLog
    from magent.store.listing import TaskFilter, TaskRow


def tasks(status: str | None = None, *, home: PathLike | None = None,
          problems: list[str] | None = None, where: "TaskFilter | None" = None,
          documents: bool = False) -> list["TaskRow"]:
    """Every task in the home, newest first (``magent tasks list``), filtered by ``status`` and
    ``where``. An unreadable task.json is left out and described in ``problems``; ``documents``
    reads every row's task.json at once instead of on first use."""
    from magent.store.listing import list_rows
    from magent.vocabulary import TASK_STATUSES

    if status is not None and status not in TASK_STATUSES:
        raise UsageError(f"--status {status!r} is not a status (one of: {', '.join(TASK_STATUSES)})")
    with paths.using_home(home):
        return list_rows(status=status, problems=problems, where=where, documents=documents)


def task(task_id: str, *, home: PathLike | None = None) -> "AgentResult":
    """The ``AgentResult`` of a task as it stands (any id or unique prefix)."""
    from magent.api.result import result_of
    from magent.store.tasks import Store

    with paths.using_home(home):
        task_dir = Store().task(task_id)
        return result_of(task_dir, task_dir.shown_task())   # a run whose process died is interrupted


@dataclass(frozen=True)
class TaskDetails:
    """One task as ``magent tasks show`` shows it (``magent.task_details``)."""

    task: "Task"
    """task.json as it stands (a run whose process died reads as ``interrupted``)."""
    result: "AgentResult"
    """Its ``AgentResult`` (what ``magent.task`` returns)."""
    checkpoints: int
    """How many checkpoints it has."""
    sessions: list[dict[str, Any]]
    """Its sub-agent sessions as the trace records them (``key``, ``kind``, ``agent``, ``status``...)."""

    def as_dict(self) -> dict[str, Any]:
        """What ``magent tasks show ID --json`` prints: task.json with ``agent_result``."""
        return {**self.task.model_dump(mode="json"), "agent_result": self.result.model_dump(mode="json")}


def task_details(task_id: str, *, home: PathLike | None = None) -> TaskDetails:
    """A task (any id or unique prefix) with its result, checkpoint count and sessions."""
    from magent.api.result import result_of
    from magent.store.tasks import Store
    from magent.trace.load import load_view

    with paths.using_home(home):
        task_dir = Store().task(task_id)
        shown = task_dir.shown_task()
        # (the trace as read: its sessions need none of the result texts ``doc`` reads back)
        sessions = list((load_view(task_dir).partial.get("sub_agent_sessions") or {}).values())
        return TaskDetails(task=shown, result=result_of(task_dir, shown),
                           checkpoints=len(task_dir.checkpoints.numbers()), sessions=sessions)


def trace_log(task_id: str, *, home: PathLike | None = None) -> "TraceLog":
    """The task's trace (``magent trace ID --json``), running or not; ``StoreError`` when unreadable."""
    from magent.errors import StoreError
    from magent.models import TraceLog
    from magent.store.tasks import Store
    from magent.trace.load import as_tracelog, load_view

    with paths.using_home(home):
        view = load_view(Store().task(task_id))
    log, problem = as_tracelog(view)
    if problem:
        raise StoreError(f"task {view.task_dir.id[:8]}: {problem}")
    trace: TraceLog = log
    return trace
