"""``magent.api.migrate_tasks``: rewrite tasks written by an older schema in the current plain form."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from magent import paths
from magent.api.definition import PathLike
from magent.errors import MagentError, TaskLockedError, UsageError


@dataclass
class TaskMigration:
    """What became of one task."""

    task_id: str
    outcome: str
    """``migrated``, ``would migrate`` (a dry run), ``current``, ``skipped`` (running: ``why``)
    or ``failed`` (``why``; the files written before it stay, each whole)."""
    files: list[str] = field(default_factory=list)
    """The files rewritten (or that would be), in order: ``events.jsonl (12 lines)``."""
    checkpoints: int = 0
    lines: dict[str, int] = field(default_factory=dict)
    kept: list[str] = field(default_factory=list)
    """What cannot be read and is left byte for byte (a line, a checkpoint failing its hash)."""
    why: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "outcome": self.outcome, "files": self.files,
                "checkpoints": self.checkpoints, "lines": self.lines, "kept": self.kept, "why": self.why}


@dataclass
class MigrationReport:
    """What ``migrate_tasks`` did (or, with ``dry_run``, would do), task by task."""

    dry_run: bool
    tasks: list[TaskMigration] = field(default_factory=list)

    def count(self, outcome: str) -> int:
        return sum(1 for t in self.tasks if t.outcome == outcome)

    @property
    def failed(self) -> bool:
        return self.count("failed") > 0

    def as_dict(self) -> dict[str, Any]:
        """What ``magent migrate --json`` prints."""
        outcomes = ("would migrate" if self.dry_run else "migrated", "current", "skipped", "failed")
        return {"dry_run": self.dry_run, "tasks": [t.as_dict() for t in self.tasks],
                "summary": {o.replace(" ", "_"): self.count(o) for o in outcomes}}


def migrate_tasks(task_ids: Iterable[str] = (), *, all_tasks: bool = False, dry_run: bool = False,
                  home: PathLike | None = None) -> MigrationReport:
    """Rewrite the named tasks (or ``all_tasks``) in the current plain form. Every id is resolved
    before anything is written; a running task is skipped, never waited for."""
    from magent.store.tasks import Store

    task_ids = list(task_ids)
    if all_tasks == bool(task_ids):
        raise UsageError("name the tasks to migrate, or give --all (not both)")
    with paths.using_home(home):
        store = Store()
        ids = store.task_ids() if all_tasks else list(dict.fromkeys(store.resolve(t) for t in task_ids))
        report = MigrationReport(dry_run=dry_run)
        for task_id in ids:
            report.tasks.append(_migrate_one(store, task_id, dry_run))
        return report


def _migrate_one(store: Any, task_id: str, dry_run: bool) -> TaskMigration:
    """Plan without the lock (a task already current is not touched, not even its lock), then
    take it and plan again before writing: what a run wrote in between counts."""
    from magent.store import rewrite
    from magent.store.tasks import TaskDir
    from magent.trace.migrating import plan_task

    task_dir = TaskDir(store, task_id)
    lock = task_dir.lock()
    if not lock.is_free():
        return TaskMigration(task_id, "skipped", why=f"running ({_holder(lock)})")
    try:
        task_dir.refuse_links()
        todo = plan_task(task_dir)
        if dry_run or todo.current:
            return _told(task_id, todo, "would migrate" if dry_run else "migrated")
        try:
            lock = task_dir.open_for_writing()
        except TaskLockedError:
            return TaskMigration(task_id, "skipped", why=f"running ({_holder(lock)})")
        try:
            todo = plan_task(task_dir)
            rewrite.apply(task_dir, todo)
        finally:
            lock.release()
    except (MagentError, ValueError) as exc:   # (a model's ValidationError is a ValueError)
        return TaskMigration(task_id, "failed", why=str(exc).splitlines()[0])
    return _told(task_id, todo, "migrated")


def _told(task_id: str, todo: Any, outcome: str) -> TaskMigration:
    return TaskMigration(task_id, outcome if todo.rewrites else "current",
                         files=[r.what for r in todo.rewrites], checkpoints=todo.checkpoints,
                         lines=todo.lines, kept=todo.kept)


def _holder(lock: Any) -> str:
    return f"in use by {lock.describe_holder()}"
