"""Everything that draws for a terminal. The only module that imports rich (lazily)."""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone
from functools import cached_property
from itertools import repeat
from typing import TYPE_CHECKING, Any

from magent.money import cost_phrase, money
from magent.vocabulary import STATUS_STYLE, checkpoint_moment, how_started, plural

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


def short(text: str | None, width: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _esc(value: Any) -> str:
    """User text (descriptions, node names, errors) shown literally, never read as rich markup."""
    from rich.markup import escape

    return escape(str(value))


def grid(header: list[str], rows: list[list[Any]], flexible: int | list[int],
         droppable: tuple[int, ...] = (), min_flexible: int = 24) -> None:
    """Print text columns; cells are text or (text, style).

    In a terminal the ``flexible`` columns are shortened (with …, the widest first) to fit the
    width, and styles are shown; but before the first of them would be cut below
    ``min_flexible`` characters, the ``droppable`` columns go, in the order given. Into a pipe
    nothing is cut or dropped, so ``grep`` sees whole values, and rich is not even imported (a
    thousand rows print in milliseconds).
    """
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
        ("id", task.id), ("status", f"[{style}]{status}[/]"), ("workflow", _esc(task.workflow)),
        ("target", _esc(task.target or "-")), ("task", _esc(task.description)),
        ("agent", _esc(task.assigned_agent)), ("tags", _esc(", ".join(task.tags) or "-")),
        ("created", f"{task.created_at.isoformat(timespec='seconds')} ({ago(task.created_at)})"),
        ("started", task.started_at.isoformat(timespec="seconds") if task.started_at else "-"),
        ("finished", task.completed_at.isoformat(timespec="seconds") if task.completed_at else "-"),
        ("model calls", str(task.usage.calls)), ("checkpoints", str(checkpoints)),
        ("tokens", f"{task.usage.input} in / {task.usage.output} out"),
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
        out.print(f"[bold red]error[/]        {_esc(task.error)}", soft_wrap=True)


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
    line = (f"{'  ' * (depth - 1)}{_esc(str(info.get('session_id'))[:8])} [bold]{_esc(who)}[/] "
            f"[{style}]{status}[/] [dim]{_esc(' · '.join(extra))}[/]")
    said = info.get("error") or info.get("summary")
    if said:
        line += f" {_esc(short(said, 100))}"
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
    for s in summaries:
        style = ""
        what = [checkpoint_moment(s.reason, s.position)]
        if s.corrupt:
            what = ["damaged: resume falls back to the one before"]
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
        out.print(f"[bold]{key:<15}[/] {_esc(value)}", soft_wrap=True)
    if sessions:
        out.print(f"[bold]{'open sessions':<15}[/] {len(sessions)}")
        for info in sessions:
            out.print("  " + session_line(info), soft_wrap=True)
    out.print(f"[bold]{'current_agent':<15}[/] {_esc(state.current_agent or '-')}")
    out.print(f"[bold]{'routing_key':<15}[/] {_esc(state.routing_key or '-')}")
    out.print(f"[bold]{'next_action':<15}[/] {_esc(state.next_action or '-')}")
    if state.metadata:
        import json

        out.print("[bold]metadata[/]")
        out.print(json.dumps(state.metadata, indent=2, default=str), markup=False, soft_wrap=True)
    out.print(f"[bold]messages[/] ({len(state.messages)})")
    for i, m in enumerate(state.messages):
        who = m.role + (f" {m.name}" if m.name else "")
        out.print(f"[dim]{i:>3}[/] [bold]{_esc(who)}[/]", end=" ")
        text = m.content
        if m.tool_calls:
            calls = ", ".join(f"{c.full_name}({short(str(c.arguments), 60)})" for c in m.tool_calls)
            text = (text + "\n    " if text else "") + f"→ {calls}"
        out.print(text, markup=False, soft_wrap=True)


def is_terminal() -> bool:
    return sys.stdout.isatty()


class EventPrinter:
    """The live view of a run: node headers, streamed text, tool calls and results, verdicts,
    pauses and a closing summary. Subscribe ``print_event`` to the bus and pass ``token``
    as the model's token sink."""

    def __init__(self, task_id: str = "", quiet: bool = False):
        self.quiet = quiet
        self.task_id = task_id
        self._streamed = False
        self._open_line = False
        self._kind = ""
        self._sessions: dict[str, str] = {}
        self._waiting: _Waiting | None = None
        self._reply = ""  # what the current model call has streamed so far
        self._last_streamed = ""  # the reply of the last model call, when it was streamed
        self.said_interrupted = False
        """The run's ``interrupted`` event has been shown (so the command need not say it again)."""

    @cached_property
    def out(self) -> "Console":
        """Made when something is first drawn: a quiet run that prints nothing never imports rich."""
        return console()

    @cached_property
    def err(self) -> "Console":
        return console(stderr=True)

    def _who(self, ev: Any) -> str:
        """``worker › `` before what a child session does (its events interleave with others')."""
        sid = ev.field("session")
        return f"[dim]{_esc(self._sessions.get(sid, 'session ' + sid[:8]))} ›[/] " if sid else ""

    def token(self, text: str) -> None:
        self.close()
        if self.quiet:
            return
        if not self._open_line:
            self.out.print("  ", end="")
        self.out.print(text.replace("\n", "\n  "), end="", markup=False, highlight=False)
        self._open_line = True
        self._streamed = True
        self._reply += text

    def _close_line(self) -> None:
        if self._open_line:
            self.out.print()
            self._open_line = False

    def close(self) -> None:
        """Stop drawing a model call in progress (before anything else is printed)."""
        if self._waiting is not None:
            self._waiting.stop()
            self._waiting = None

    def print_event(self, ev: Any) -> None:
        handler = getattr(self, f"_on_{ev.type}", None)
        if handler is None:
            from magent.trace import composition

            if ev.type not in composition.EVENTS:
                return
            handler = self._composition
        self.close()
        if self.quiet and ev.type not in ("warning",):
            return
        if ev.type != "llm_call":
            self._close_line()
        handler(ev)

    def _on_run_started(self, ev: Any) -> None:
        how = how_started(ev.model_dump())
        if how:
            self.out.print(how, style="dim", markup=False)

    def _on_node_started(self, ev: Any) -> None:
        self._kind = ev.field("kind") or ""
        who = f" · {ev.field('agent')}" if ev.field("agent") else ""
        visit = f" · visit {ev.field('visit')}" if (ev.field("visit") or 1) > 1 else ""
        again = " (continuing)" if ev.field("resumed") else ""
        self.out.print(f"[bold cyan]▸ {ev.node}[/] [dim]{ev.field('kind')}{who}{visit}{again}[/]")

    def _composition(self, ev: Any) -> None:
        from magent.trace import composition

        data = ev.model_dump()
        style = {"info": "green", "warning": "yellow", "error": "red"}[composition.status_of(data)]
        self.out.print(f"  {self._who(ev)}[{style}]{_esc(short(composition.describe(data), 300))}[/]")

    def _on_session_started(self, ev: Any) -> None:
        who = ev.field("agent") or ev.field("key") or "branch"
        self._sessions[ev.field("session")] = who
        task = f" {short(ev.field('task') or '', 120)}" if ev.field("task") else ""
        self.out.print(f"  [bold blue]⇢ {_esc(who)}[/] [dim]({ev.field('kind')} session){_esc(task)}[/]")

    def _on_session_finished(self, ev: Any) -> None:
        who = self._sessions.get(ev.field("session"), ev.field("agent") or "session")
        status = ev.field("status")
        color = "green" if status == "completed" else "red"
        said = ev.field("output") or ev.field("error") or ""
        self.out.print(f"  [{color}]⇠ {_esc(who)} {status}[/] {_esc(short(said, 160))}")

    def _on_llm_started(self, ev: Any) -> None:
        # (only the main conversation's: child sessions run side by side)
        if self.out.is_terminal and not self._open_line and not ev.field("session"):
            self._waiting = _Waiting(self.out, ev.field("model") or "the model", ev.field("attempt") or 1,
                                     ev.field("attempts") or 1)

    def _on_llm_call(self, ev: Any) -> None:
        if ev.field("error"):
            self._failed_attempt(ev)
            return
        if ev.field("rail"):  # a guardrail's judge: its verdict line says what it decided
            self.out.print(f"  [dim]rail {_esc(ev.field('rail'))} asked {ev.field('model')} · "
                           f"{ev.field('tokens_in')}→{ev.field('tokens_out')} tokens · {ev.field('latency_ms')} ms[/]",
                           highlight=False)
            return
        response = ev.field("response") or {}
        who = self._who(ev)
        # (A critic's raw reply is not shown: its verdict line says it better.)
        if not self._streamed and response.get("content") and self._kind != "reflection":
            self.out.print("  " + who + _esc(short(response["content"], 2000)).replace("\n", "\n  "))
        self._close_line()
        self._last_streamed = self._reply if self._streamed else ""
        self._streamed, self._reply = False, ""
        cost = "" if ev.field("cost") == 0 else f" · {cost_phrase(ev.field('cost'))}"
        attempt = f" · attempt {ev.field('attempt')}" if ev.field("attempt") else ""
        self.out.print(f"  {who}[dim]{ev.field('model')} · {ev.field('tokens_in')}→{ev.field('tokens_out')} tokens"
                       f"{cost} · {ev.field('latency_ms')} ms{attempt}[/]")

    def _failed_attempt(self, ev: Any) -> None:
        self._close_line()
        self._streamed = False
        if ev.field("retry_in") is not None:
            then = f"; retrying in {ev.field('retry_in'):.1f} s"
        else:
            then = "" if ev.field("cancelled") else "; giving up on this model"
        rail = f"rail {_esc(ev.field('rail'))} · " if ev.field("rail") else ""
        self.out.print(f"  {self._who(ev)}[yellow]{rail}✗ {_esc(ev.field('model'))} attempt {ev.field('attempt')}/"
                       f"{ev.field('attempts')} failed after {(ev.field('latency_ms') or 0) / 1000:.1f} s: "
                       f"{_esc(ev.field('error'))}{then}[/]", highlight=False)

    def _on_tool_call(self, ev: Any) -> None:
        import json

        args = json.dumps(ev.field("arguments") or {}, ensure_ascii=False, default=str)
        self.out.print(f"  {self._who(ev)}[magenta]→ {ev.field('tool')}[/] {_esc(short(args, 160))}", highlight=False)

    def _on_tool_result(self, ev: Any) -> None:
        outcome = ev.field("outcome")
        color = {"SUCCESS": "green", "FAILURE": "yellow", "ERROR": "red", "TIMEOUT": "red"}.get(outcome, "white")
        took = f" {ev.field('duration_ms')} ms" if ev.field("duration_ms") else ""
        self.out.print(f"  {self._who(ev)}[{color}]← {outcome}{took}[/] {_esc(short(ev.field('result') or '', 160))}",
                       highlight=False)
        for note in ev.field("notes") or []:
            self.out.print(f"    [dim]{short(note, 200)}[/]")

    def _on_reflection(self, ev: Any) -> None:
        color = "green" if ev.field("verdict") == "pass" else "yellow"
        self.out.print(f"  [{color}]verdict: {ev.field('verdict')}[/] (round {ev.field('round')}/"
                       f"{ev.field('max_rounds')}) {_esc(short(ev.field('feedback') or '', 200))}")
        if ev.field("routing_key") == "max_rounds":
            from magent.vocabulary import round_limit

            self.out.print(f"  [yellow]{round_limit(ev.field('max_rounds'))}[/]")

    def _on_guardrail(self, ev: Any) -> None:
        from magent.trace.notes import describe_guardrail

        outcome = ev.field("outcome")
        if outcome == "pass":
            return
        color = "red" if outcome == "block" else "yellow"
        line = short(describe_guardrail(ev.model_dump()), 240)
        self.out.print(f"  [{color}]⛨ {_esc(line)}[/]", highlight=False)

    def _on_output_invalid(self, ev: Any) -> None:
        from magent.trace import notes

        self.out.print(f"  [yellow]⚠ {_esc(short(notes.output_invalid(ev.model_dump()), 240))}[/]", highlight=False)

    def _on_compaction(self, ev: Any) -> None:
        from magent.trace import notes

        self.out.print(f"  [cyan]⇣ {_esc(short(notes.compaction(ev.model_dump()), 240))}[/]", highlight=False)

    def _on_memory_recalled(self, ev: Any) -> None:
        hits = ev.field("hits") or []
        shown = "; ".join(f"{str(h.get('id'))[:8]} {short(h.get('content') or '', 60)}" for h in hits[:3])
        more = f" (+{len(hits) - 3})" if len(hits) > 3 else ""
        self.out.print(f"  [magenta]◆ memory:[/] recalled {len(hits)}" + (f": {_esc(shown)}{more}" if hits else ""),
                       highlight=False)

    def _on_memory_stored(self, ev: Any) -> None:
        from magent.trace.notes import stored_text

        line = short(stored_text(ev.model_dump()), 160)
        self.out.print(f"  [magenta]◆ memory:[/] {_esc(line)}", highlight=False)

    def _on_memory_consolidated(self, ev: Any) -> None:
        self.out.print(f"  [magenta]◆ {_esc(ev.field('summary'))}[/]", highlight=False)

    def _on_memory_forgotten(self, ev: Any) -> None:
        self.out.print(f"  [magenta]◆ memory:[/] forgot {str(ev.field('id'))[:8]}: "
                       f"{_esc(short(ev.field('content') or '', 80))}", highlight=False)

    def _on_human_decision(self, ev: Any) -> None:
        msg = f": {ev.field('message')}" if ev.field("message") else ""
        self.out.print(f"  [bold]a person chose {ev.field('action')}[/]{msg}")

    def _on_warning(self, ev: Any) -> None:
        self.err.print(f"[yellow]warning:[/] {ev.field('message')}", highlight=False)

    def _on_error(self, ev: Any) -> None:
        self.out.print(f"  [bold red]✗ {ev.field('message')}[/]", highlight=False)

    def _on_awaiting_human(self, ev: Any) -> None:
        self.out.print(f"[bold yellow]⏸ waiting for a person at '{ev.node}'[/]: {ev.field('question')}")
        if ev.field("output"):
            self.out.print("[dim]output to judge:[/]")
            text = ev.field("output").strip()
            if len(text) > 3000:
                text = text[:3000] + f"… [{len(text) - 3000} more characters: magent checkpoints show {self.task_id}]"
            self.out.print("  " + text.replace("\n", "\n  "), markup=False)

    def _on_interrupted(self, ev: Any) -> None:
        self.said_interrupted = True
        self.err.print(f"[yellow]interrupted[/]: the task was checkpointed; continue with "
                       f"`magent resume {self.task_id[:8]}`", highlight=False)

    def _on_run_finished(self, ev: Any) -> None:
        status = ev.field("status")
        color = STATUS_STYLE.get(status, "")
        secs = (ev.field("duration_ms") or 0) / 1000
        self.out.print(f"[{color}]{status}[/] · {plural(ev.field('model_calls') or 0, 'model call')} · "
                       f"{ev.field('tokens_in')}→{ev.field('tokens_out')} tokens · "
                       f"{cost_phrase(ev.field('cost') or 0.0, ev.field('unpriced') or 0)} · {secs:.1f}s")
        result = ev.field("result")
        # In a terminal an answer that streamed just above is not printed again; into a pipe
        # or a file the answer always ends the output, where scripts look for it.
        if status == "completed" and result and not (is_terminal() and result.strip() == self._last_streamed.strip()):
            self.out.print("[bold]answer[/]")
            self.out.print(result, markup=False)

    def resume_hint(self, task_id: str, allowed: list[str], limit: str | None = None) -> None:
        """The commands that continue a paused task (``limit``: the budget limit it stopped at)."""
        self.out.print("continue with:")
        if limit:
            self.out.print(f"  magent resume {task_id} --approve --budget {limit}=N   (N above what was used)",
                           markup=False)
        elif "approve" in allowed:
            self.out.print(f"  magent resume {task_id} --approve [--message TEXT]", markup=False)
        if "reject" in allowed:
            self.out.print(f"  magent resume {task_id} --reject --message TEXT", markup=False)
        if "modify" in allowed:
            self.out.print(f"  magent resume {task_id} --modify FILE   (state updates, YAML or JSON)", markup=False)


class _Waiting:
    """A model call in progress, drawn in place on a terminal: which model, which attempt,
    seconds so far. It vanishes when the first token or any other output arrives."""

    def __init__(self, out: "Console", model: str, attempt: int, attempts: int):
        import time

        from rich.live import Live
        from rich.spinner import Spinner

        self._clock = time.monotonic
        self.started = self._clock()
        self.label = f"waiting for {model}" + (f" · attempt {attempt}/{attempts}" if attempt > 1 else "")
        self.spinner = Spinner("dots", style="cyan")
        self.live = Live(self, console=out, transient=True, refresh_per_second=4)
        self.live.start()

    def __rich__(self) -> Any:
        from rich.text import Text

        seconds = int(self._clock() - self.started)
        self.spinner.text = Text(f"{self.label} · {seconds} s", style="dim")
        return Text("  ") + self.spinner.render(self._clock())

    def stop(self) -> None:
        self.live.stop()


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
    """Print styled lines (see ``magent.trace.view``): rich styles on a terminal, plain text otherwise.

    ``crop`` cuts lines wider than the terminal with … (overviews); otherwise they wrap."""
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
