"""Everything that draws for a terminal; with ``liveview``, the only modules importing rich (when they draw)."""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone
from itertools import repeat
from typing import TYPE_CHECKING, Any

from magent.money import money, token_note
from magent.vocabulary import STATUS_STYLE, checkpoint_moment, damage_note, short

if TYPE_CHECKING:
    from rich.console import Console

    from magent.models import CheckpointSummary, State, Task
    from magent.store.listing import TaskRow



def console(stderr: bool = False) -> "Console":
    """A rich console; into a pipe or file it never re-wraps lines (they stay as written)."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, highlight=False, soft_wrap=not stream.isatty())


def ago(when: datetime | None, now: datetime | None = None) -> str:
    """How long before ``now`` (default: this moment) ``when`` was."""
    if when is None:
        return "-"
    return _age((now or datetime.now(timezone.utc)) - when)[0]


_UNITS = (("h", 3600, timedelta(hours=1)), ("m", 60, timedelta(minutes=1)), ("s", 1, timedelta(seconds=1)))


def _age(delta: timedelta) -> tuple[str, timedelta, timedelta]:
    """``ago`` of ``delta`` (whole days, else hours, minutes or seconds; below zero, a clock set
    back, is 0s), and the span ``[low, high)`` of deltas with the same text. From the delta's own
    days and seconds: no float, no rounding."""
    days, secs = delta.days, delta.seconds
    if days > 0:
        return f"{days}d ago", timedelta(days=days), timedelta(days=days + 1)
    if days < 0 or not secs:
        return "0s ago", timedelta.min, timedelta(seconds=1)
    unit, size, step = next(u for u in _UNITS if secs >= u[1])
    return f"{secs // size}{unit} ago", step * (secs // size), step * (secs // size + 1)


def _ages(rows: list["TaskRow"], now: datetime) -> list[str]:
    """``ago`` of each row's ``created_at``. Rows come newest first, so a run of them shares a
    text: a row whose age is in the span of the one before takes its text as it is."""
    out, text, low, high = [], "", timedelta.max, timedelta.min
    for t in rows:
        delta = now - t.created_at
        if not low <= delta < high:
            text, low, high = _age(delta)
        out.append(text)
    return out


def esc(value: Any) -> str:
    """User text (descriptions, node names, errors) shown literally, never read as rich markup."""
    from rich.markup import escape

    return escape(str(value))


def grid(header: list[str], rows: list[list[Any]], flexible: int | list[int],
         droppable: tuple[int, ...] = (), min_flexible: int = 24) -> None:
    """Print text columns; cells are text or (text, style).

    In a terminal ``flexible`` columns are cut (widest first) to fit, and ``droppable`` ones go
    first rather than cut one below ``min_flexible``. Into a pipe nothing is cut or dropped, so
    ``grep`` sees whole values, and rich is not imported."""
    plain = [[c[0] if isinstance(c, tuple) else c for c in row] for row in rows]
    if not is_terminal():
        plain_columns(header, [[r[i] for r in plain] for i in range(len(header))])
        return

    from rich.cells import cell_len, set_cell_size
    from rich.text import Text

    out = console()
    flexible = [flexible] if isinstance(flexible, int) else list(flexible)
    widths = [max([cell_len(h)] + [cell_len(r[i]) for r in plain]) for i, h in enumerate(header)]
    shown = list(range(len(header)))

    def excess() -> int:
        return sum(widths[i] for i in shown) + 2 * (len(shown) - 1) - out.width

    for column in droppable:  # drop columns rather than cut the main text to nothing
        if excess() <= 0 or widths[flexible[0]] - excess() >= min(min_flexible, widths[flexible[0]]):
            break
        shown.remove(column)
    over = excess()
    while over > 0:
        widest = max(flexible, key=lambda i: widths[i] - len(header[i]))
        if widths[widest] <= len(header[widest]):
            break
        widths[widest] -= 1
        over -= 1
    last = shown[-1]

    def line(cells: list[Any], bold: bool = False) -> "Text":
        text_line = Text(no_wrap=True, overflow="ellipsis")
        for i in shown:
            text, style = cells[i] if isinstance(cells[i], tuple) else (cells[i], "bold" if bold else "")
            if cell_len(text) > widths[i]:
                text = set_cell_size(text, widths[i] - 1) + "…"
            if i != shown[0]:
                text_line.append("  ")
            text_line.append(text, style=style or None)  # Text: user values are never markup
            if i != last:
                text_line.append(" " * (widths[i] - cell_len(text)))
        text_line.rstrip()
        return text_line

    out.print(Text("\n").join([line(header, bold=True)] + [line(r) for r in rows]), soft_wrap=True)


def plain_columns(header: list[str], columns: list[list[str]]) -> None:
    """``grid`` into a pipe, from its columns of text: each cell padded to its column's widest
    (header included), two spaces between, the line's trailing spaces stripped."""
    widths = [max(len(h), max(map(len, column), default=0)) for h, column in zip(header, columns)]
    # A column at a time, in C loops (the last one unpadded: its spaces would be stripped).
    padded = [list(map(str.ljust, [h, *column], repeat(w))) for h, column, w in zip(header, columns, widths)]
    padded[-1] = [header[-1], *columns[-1]]
    sys.stdout.write("\n".join(map(str.rstrip, map("  ".join, zip(*padded)))) + "\n")


def task_table(rows: list["TaskRow"], filtered: bool = False) -> None:
    """``magent tasks list``: one line per task row (``store.listing``), newest first. In a
    narrow terminal CALLS, TOKENS, WORKFLOW, COST and CREATED go (in that order) before the
    task text is cut short."""
    if not rows:
        print("no tasks match" if filtered else "no tasks yet: start one with `magent run TARGET -t TEXT`")
        return
    now = datetime.now(timezone.utc)   # (one moment for every row: ten thousand clock reads add up)
    # Built a column at a time: ten thousand rows of eight calls each were most of a listing's time.
    statuses = [t.status for t in rows]
    columns: list[list[Any]] = [[t.id[:8] for t in rows], statuses, [t.workflow for t in rows],
               [short(t.description, 60) for t in rows], _ages(rows, now),
               [str(t.calls) for t in rows], [f"{t.tokens:,}" for t in rows],
               [money(t.cost, t.unpriced) for t in rows]]
    header = ["ID", "STATUS", "WORKFLOW", "TASK", "CREATED", "CALLS", "TOKENS", "COST"]
    if not is_terminal():
        plain_columns(header, columns)
        return
    columns[1] = [(s, STATUS_STYLE.get(s, "")) for s in statuses]
    grid(header, [list(cells) for cells in zip(*columns)], flexible=3, droppable=(5, 6, 2, 7, 4))


def task_detail(task: "Task", checkpoints: int, sessions: list[dict[str, Any]] = ()) -> None:
    out = console()
    style = STATUS_STYLE.get(task.status.value, "")
    status = task.status.value + (f" (continue with `magent resume {task.id[:8]}`)"
                                  if task.status.value == "interrupted" else "")
    rows = [
        ("id", task.id), ("status", f"[{style}]{status}[/]"), ("workflow", esc(task.workflow)),
        ("target", esc(task.target or "-")), ("task", esc(task.description)),
        _entry(task), ("tags", esc(", ".join(task.tags) or "-")),
        ("created", f"{task.created_at.isoformat(timespec='seconds')} ({ago(task.created_at)})"),
        ("started", task.started_at.isoformat(timespec="seconds") if task.started_at else "-"),
        ("finished", task.completed_at.isoformat(timespec="seconds") if task.completed_at else "-"),
        ("model calls", str(task.usage.calls)), ("checkpoints", str(checkpoints)),
        ("tokens", f"{task.usage.input} in / {task.usage.output} out{token_note(task.usage.model_dump())}"),
        ("cost", money(task.usage.cost, task.usage.unpriced)),
        ("retention", f"{task.retention_days} days" if task.retention_days is not None else "policy"),
    ]
    if task.parent_task_id:
        rows.append(("forked from", f"{task.parent_task_id} checkpoint {task.parent_checkpoint}"))
    for fork in task.forks:
        rows.append(("fork", f"{fork.task_id} from checkpoint {fork.checkpoint}"))
    for key, value in rows:
        out.print(f"[bold]{key:<12}[/] {value}", soft_wrap=True)
    if sessions:
        out.print(f"[bold]{'sessions':<12}[/] {len(sessions)} besides the main conversation")
        for info in sessions:
            out.print("  " + session_line(info), soft_wrap=True)
    if task.result:
        out.print("[bold]result[/]")
        out.print(task.result, markup=False, soft_wrap=True)  # the text as written, not re-wrapped
    if task.error:
        out.print(f"[bold red]error[/]        {esc(task.error)}", soft_wrap=True)


def _entry(task: "Task") -> tuple[str, str]:
    """The row naming where the task starts: its agent, or the entry node when that is a tool
    or condition node (the snapshot's workflow says which)."""
    snapshot = task.config_snapshot or {}
    agents = snapshot.get("agents")
    if not isinstance(agents, dict) or task.assigned_agent in agents:
        return "agent", esc(task.assigned_agent)
    workflow = snapshot.get("workflow") or {}
    nodes = (workflow.get("raw") if isinstance(workflow, dict) else None) or {}
    node = (nodes.get("nodes") or {}).get(task.assigned_agent) if isinstance(nodes, dict) else None
    kind = node.get("type") if isinstance(node, dict) else None
    return "entry", esc(f"{task.assigned_agent} ({kind or 'a'} node)")


def session_line(info: dict[str, Any]) -> str:
    """One child session, as ``tasks show`` and ``checkpoints show`` list it (rich markup)."""
    status = info.get("status") or "running"
    style = STATUS_STYLE.get(status, "")
    who = info.get("agent") or info.get("key") or info.get("kind")
    depth = int(info.get("depth") or 1)
    extra = [str(info.get("kind") or "agent")]  # (trace.json leaves fields at their defaults out)
    if info.get("node"):
        extra.append(f"node {info['node']}")
    if info.get("message_count") is not None:
        extra.append(f"{info['message_count']} messages")
    usage = info.get("usage") or {}
    if usage.get("calls"):
        extra.append(f"{usage['calls']} model calls, {usage.get('input', 0)}→{usage.get('output', 0)} tokens")
    line = (f"{'  ' * (depth - 1)}{esc(str(info.get('session_id'))[:8])} [bold]{esc(who)}[/] "
            f"[{style}]{status}[/] [dim]{esc(' · '.join(extra))}[/]")
    said = info.get("error") or info.get("summary")
    if said:
        line += f" {esc(short(said, 100))}"
    return line


def checkpoint_table(task: "Task", summaries: list["CheckpointSummary"]) -> None:
    if task.parent_task_id:
        print(f"forked from task {task.parent_task_id[:8]} at checkpoint {task.parent_checkpoint}")
    if not summaries:
        print("no checkpoints")
        return
    forks: dict[int, list[str]] = {}
    for fork in task.forks:
        forks.setdefault(fork.checkpoint, []).append(fork.task_id[:8])
    rows: list[list[Any]] = []
    for n, s in enumerate(summaries):
        style = ""
        what = [checkpoint_moment(s.reason, s.position)]
        if s.corrupt:
            what = ["damaged: " + damage_note(summaries[n + 1:])]
            style = "red"
        elif s.awaiting_human:
            style = "yellow"
        if s.sequence in forks:
            what.append("forked → " + ", ".join(forks[s.sequence]))
        rows.append([str(s.sequence), s.created_at.strftime("%Y-%m-%d %H:%M:%S"), s.position,
                     s.reason, ("; ".join(what), style)])
    grid(["#", "WHEN", "NODE", "REASON", "WHAT"], rows, flexible=4)


def state_view(state: "State", header: dict[str, Any], sessions: list[dict[str, Any]] = ()) -> None:
    out = console()
    for key, value in header.items():
        out.print(f"[bold]{key:<15}[/] {esc(value)}", soft_wrap=True)
    if sessions:
        out.print(f"[bold]{'open sessions':<15}[/] {len(sessions)}")
        for info in sessions:
            out.print("  " + session_line(info), soft_wrap=True)
    out.print(f"[bold]{'current_agent':<15}[/] {esc(state.current_agent or '-')}")
    out.print(f"[bold]{'routing_key':<15}[/] {esc(state.routing_key or '-')}")
    out.print(f"[bold]{'next_action':<15}[/] {esc(state.next_action or '-')}")
    if state.metadata:
        import json

        out.print("[bold]metadata[/]")
        out.print(json.dumps(state.metadata, indent=2, default=str), markup=False, soft_wrap=True)
    out.print(f"[bold]messages[/] ({len(state.messages)})")
    for i, m in enumerate(state.messages):
        who = m.role + (f" {m.name}" if m.name else "")
        out.print(f"[dim]{i:>3}[/] [bold]{esc(who)}[/]", end=" ")
        text = m.content
        if m.tool_calls:
            calls = ", ".join(f"{c.full_name}({short(str(c.arguments), 60)})" for c in m.tool_calls)
            text = (text + "\n    " if text else "") + f"→ {calls}"
        out.print(text, markup=False, soft_wrap=True)


def is_terminal() -> bool:
    return sys.stdout.isatty()


# Trace, step and graph views: ``magent.trace`` lays out lines of (text, style)
# segments; these print them, with colour only on a terminal. Off a terminal
# (pipes, files, tests, benchmarks) rich is not even imported.

def wants_color(stderr: bool = False) -> bool:
    import os

    stream = sys.stderr if stderr else sys.stdout
    if os.environ.get("NO_COLOR"):
        return False
    return bool(os.environ.get("FORCE_COLOR")) or stream.isatty()


def print_lines(lines: list[list[tuple[str, Any]]], stderr: bool = False, crop: bool = False) -> None:
    """Print styled lines (``magent.trace.view``), with rich styles on a terminal; ``crop`` cuts
    lines wider than the terminal with … instead of wrapping."""
    stream = sys.stderr if stderr else sys.stdout
    if not wants_color(stderr):
        stream.write("".join("".join(text for text, _ in line) + "\n" for line in lines))
        stream.flush()
        return
    from rich.text import Text

    text = Text()
    for line in lines:
        for segment, style in line:
            text.append(segment, style or "")
        text.append("\n")
    if crop:
        console(stderr).print(text, end="", no_wrap=True, overflow="ellipsis")
    else:
        console(stderr).print(text, end="", soft_wrap=True)
