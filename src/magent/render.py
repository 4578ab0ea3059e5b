"""Everything that draws for a terminal. The only module that imports rich (lazily)."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from magent.models import CheckpointSummary, State, Task

STATUS_STYLE = {
    "pending": "dim", "running": "cyan", "awaiting_human": "yellow", "completed": "green",
    "failed": "red", "cancelled": "magenta",
}


def console(stderr: bool = False) -> "Console":
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def ago(when: datetime | None) -> str:
    if when is None:
        return "-"
    secs = (datetime.now(timezone.utc) - when).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{int(secs // size)}{unit} ago"
    return f"{max(0, int(secs))}s ago"


def short(text: str | None, width: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def task_table(tasks: list["Task"], live: dict[str, bool]) -> None:
    from rich.table import Table

    out = console()
    if not tasks:
        out.print("no tasks yet: start one with `magent run TARGET -t TEXT`")
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("ID", "STATUS", "WORKFLOW", "TASK", "CREATED", "STEPS", "COST"):
        table.add_column(col, no_wrap=True)
    for t in tasks:
        status = t.status.value
        if status == "running" and not live.get(t.id, True):
            status = "running (not live)"
        table.add_row(t.id[:8], f"[{STATUS_STYLE.get(t.status.value, '')}]{status}[/]", t.workflow,
                      short(t.description, 40), ago(t.created_at), str(t.steps),
                      f"${t.usage.cost:.4f}")
    out.print(table)


def task_detail(task: "Task", live: bool, checkpoints: int) -> None:
    out = console()
    style = STATUS_STYLE.get(task.status.value, "")
    status = task.status.value + ("" if live or task.status.value != "running" else " (not live: resume it)")
    rows = [
        ("id", task.id), ("status", f"[{style}]{status}[/]"), ("workflow", task.workflow),
        ("target", task.target or "-"), ("task", task.description),
        ("agent", task.assigned_agent), ("tags", ", ".join(task.tags) or "-"),
        ("created", f"{task.created_at.isoformat(timespec='seconds')} ({ago(task.created_at)})"),
        ("started", task.started_at.isoformat(timespec="seconds") if task.started_at else "-"),
        ("finished", task.completed_at.isoformat(timespec="seconds") if task.completed_at else "-"),
        ("steps", str(task.steps)), ("checkpoints", str(checkpoints)),
        ("tokens", f"{task.usage.input} in / {task.usage.output} out"),
        ("cost", f"${task.usage.cost:.4f}"),
        ("retention", f"{task.retention_days} days" if task.retention_days is not None else "policy"),
    ]
    if task.parent_task_id:
        rows.append(("forked from", f"{task.parent_task_id} checkpoint {task.parent_checkpoint}"))
    for fork in task.forks:
        rows.append(("fork", f"{fork.task_id} from checkpoint {fork.checkpoint}"))
    for key, value in rows:
        out.print(f"[bold]{key:<12}[/] {value}")
    if task.result:
        out.print("[bold]result[/]")
        out.print(task.result, markup=False)
    if task.error:
        out.print(f"[bold red]error[/]        {task.error}", markup=True)


def checkpoint_table(task: "Task", summaries: list["CheckpointSummary"]) -> None:
    from rich.table import Table

    out = console()
    if task.parent_task_id:
        out.print(f"forked from task {task.parent_task_id[:8]} at checkpoint {task.parent_checkpoint}")
    if not summaries:
        out.print("no checkpoints")
        return
    forks: dict[int, list[str]] = {}
    for fork in task.forks:
        forks.setdefault(fork.checkpoint, []).append(fork.task_id[:8])
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("#", "WHEN", "NODE", "REASON", "ENTRIES", "NOTE"):
        table.add_column(col, no_wrap=True)
    for s in summaries:
        note = []
        if s.corrupt:
            note.append("[red]corrupt[/]")
        if s.awaiting_human:
            note.append("[yellow]awaiting human[/]")
        if s.sequence in forks:
            note.append("forked → " + ", ".join(forks[s.sequence]))
        table.add_row(str(s.sequence), s.created_at.strftime("%Y-%m-%d %H:%M:%S"), s.position,
                      s.reason, str(s.entry_count), " ".join(note))
    out.print(table)


def state_view(state: "State", header: dict[str, Any]) -> None:
    out = console()
    for key, value in header.items():
        out.print(f"[bold]{key:<15}[/] {value}")
    out.print(f"[bold]{'current_agent':<15}[/] {state.current_agent or '-'}")
    out.print(f"[bold]{'routing_key':<15}[/] {state.routing_key or '-'}")
    out.print(f"[bold]{'next_action':<15}[/] {state.next_action or '-'}")
    if state.metadata:
        import json

        out.print(f"[bold]metadata[/]")
        out.print(json.dumps(state.metadata, indent=2, default=str), markup=False)
    out.print(f"[bold]messages[/] ({len(state.messages)})")
    for i, m in enumerate(state.messages):
        who = m.role + (f" {m.name}" if m.name else "")
        out.print(f"[dim]{i:>3}[/] [bold]{who}[/]", end=" ")
        text = m.content
        if m.tool_calls:
            calls = ", ".join(f"{c.full_name}({short(str(c.arguments), 60)})" for c in m.tool_calls)
            text = (text + "\n    " if text else "") + f"→ {calls}"
        out.print(text, markup=False)


def is_terminal() -> bool:
    return sys.stdout.isatty()
