"""``magent migrate``: rewrite tasks written by an older schema in the current plain form."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from magent.cli.helpfmt import examples
from magent.vocabulary import plural

if TYPE_CHECKING:
    from magent.api.migrating import MigrationReport, TaskMigration


def register(app: typer.Typer) -> None:
    app.command("migrate", epilog=examples(
        "magent migrate --all --dry-run    # which files would change, and how much",
        "magent migrate 3f2a",
        "magent migrate --all --json")
    )(migrate)


def migrate(
    task_ids: Annotated[Optional[list[str]], typer.Argument(
        metavar="ID", help="Task ids or unique prefixes.", show_default=False)] = None,
    all_tasks: Annotated[bool, typer.Option("--all", help="Every task in the home.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would change; write nothing.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print what was done as JSON.")] = False,
) -> None:
    """Rewrite old tasks' files in the current plain form.

    magent reads old files as they are; migrating them lets jq and other tools read them
    too. Each file is replaced atomically; a running task is left alone. Exit 1 if a task
    failed part-way (run it again to finish), 2 for an unknown or running task named.
    """
    from magent.api.migrating import migrate_tasks
    from magent.cli.output import print_json, warn

    report = migrate_tasks(task_ids or (), all_tasks=all_tasks, dry_run=dry_run)
    refused = [t for t in report.tasks if t.outcome == "skipped" and not all_tasks]
    if json_out:
        print_json(report.as_dict())
    else:
        for task in report.tasks:
            if task not in refused:
                print(task_line(task), flush=True)
            for kept in task.kept:
                warn(f"task {task.task_id[:8]}: {kept}")
        if len(refused) < len(report.tasks):
            print(summary_line(report), flush=True)
    for task in refused:
        print(f"magent: error: task {task.task_id} is {task.why}: migrate it once it has stopped",
              file=sys.stderr)
    if refused:
        raise typer.Exit(2)
    if report.failed:
        raise typer.Exit(1)


def task_line(task: "TaskMigration") -> str:
    """``3f2a1b2c  migrated: task.json, 7 checkpoints, entries.jsonl (3 lines), trace.json``."""
    head = f"{task.task_id[:8]}  "
    if task.outcome == "current":
        return head + "already current"
    if task.outcome in ("skipped", "failed"):
        return f"{head}{task.outcome}: {task.why}"
    files = [f for f in task.files if not f.startswith("checkpoint_")]
    if task.checkpoints:
        files.insert(1 if files[:1] == ["task.json"] else 0,
                     plural(task.checkpoints, "checkpoint"))
    return f"{head}{task.outcome}: {', '.join(files)}"


def summary_line(report: "MigrationReport") -> str:
    done = "would migrate" if report.dry_run else "migrated"
    parts = [f"{report.count(done)} {done}", f"{report.count('current')} already current"]
    parts += [f"{report.count(o)} {o}" for o in ("skipped", "failed") if report.count(o)]
    tasks = len(report.tasks)
    return f"{plural(tasks, 'task')}: {', '.join(parts)}" + (" (dry run: nothing written)"
                                                                            if report.dry_run else "")
