"""The live view of a run (``magent run``, ``resume``, ``chat``, ``trace --follow``): node headers,
streamed text, tool calls and results, verdicts, pauses and a closing summary, drawn as the run's
events arrive. Rich is imported only when something is drawn."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from magent.money import cost_phrase, token_note
from magent.render import console, esc, is_terminal
from magent.vocabulary import STATUS_STYLE, how_started, plural, short

if TYPE_CHECKING:
    from rich.console import Console


class EventPrinter:
    """Subscribe ``print_event`` to the bus and pass ``token`` as the model's token sink."""

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
        return f"[dim]{esc(self._sessions.get(sid, 'session ' + sid[:8]))} ›[/] " if sid else ""

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
        self.out.print(f"  {self._who(ev)}[{style}]{esc(short(composition.describe(data), 300))}[/]")

    def _on_session_started(self, ev: Any) -> None:
        who = ev.field("agent") or ev.field("key") or "branch"
        self._sessions[ev.field("session")] = who
        task = f" {short(ev.field('task') or '', 120)}" if ev.field("task") else ""
        self.out.print(f"  [bold blue]⇢ {esc(who)}[/] [dim]({ev.field('kind')} session){esc(task)}[/]")

    def _on_session_finished(self, ev: Any) -> None:
        who = self._sessions.get(ev.field("session"), ev.field("agent") or "session")
        status = ev.field("status")
        color = "green" if status == "completed" else "red"
        said = ev.field("output") or ev.field("error") or ""
        self.out.print(f"  [{color}]⇠ {esc(who)} {status}[/] {esc(short(said, 160))}")

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
            self.out.print(f"  [dim]rail {esc(ev.field('rail'))} asked {ev.field('model')} · "
                           f"{ev.field('tokens_in')}→{ev.field('tokens_out')} tokens · {ev.field('latency_ms')} ms[/]",
                           highlight=False)
            return
        response = ev.field("response") or {}
        who = self._who(ev)
        # (A critic's raw reply is not shown: its verdict line says it better.)
        if not self._streamed and response.get("content") and self._kind != "reflection":
            self.out.print("  " + who + esc(short(response["content"], 2000)).replace("\n", "\n  "))
        self._close_line()
        self._last_streamed = self._reply if self._streamed else ""
        self._streamed, self._reply = False, ""
        cost = "" if ev.field("cost") == 0 else f" · {cost_phrase(ev.field('cost'))}"
        attempt = f" · attempt {ev.field('attempt')}" if ev.field("attempt") else ""
        route = f" · chosen by {esc(ev.field('route'))}" if ev.field("route") else ""
        self.out.print(f"  {who}[dim]{ev.field('model')} · {ev.field('tokens_in')}→{ev.field('tokens_out')} tokens"
                       f"{token_note(ev.model_extra or {})}{cost} · {ev.field('latency_ms')} ms{attempt}{route}[/]")

    def _failed_attempt(self, ev: Any) -> None:
        self._close_line()
        self._streamed = False
        if ev.field("retry_in") is not None:
            then = f"; retrying in {ev.field('retry_in'):.1f} s"
        else:
            then = "" if ev.field("cancelled") else "; giving up on this model"
        rail = f"rail {esc(ev.field('rail'))} · " if ev.field("rail") else ""
        self.out.print(f"  {self._who(ev)}[yellow]{rail}✗ {esc(ev.field('model'))} attempt {ev.field('attempt')}/"
                       f"{ev.field('attempts')} failed after {(ev.field('latency_ms') or 0) / 1000:.1f} s: "
                       f"{esc(ev.field('error'))}{then}[/]", highlight=False)

    def _on_tool_call(self, ev: Any) -> None:
        import json

        args = json.dumps(ev.field("arguments") or {}, ensure_ascii=False, default=str)
        self.out.print(f"  {self._who(ev)}[magenta]→ {ev.field('tool')}[/] {esc(short(args, 160))}", highlight=False)

    def _on_tool_result(self, ev: Any) -> None:
        outcome = ev.field("outcome")
        color = {"SUCCESS": "green", "FAILURE": "yellow", "ERROR": "red", "TIMEOUT": "red"}.get(outcome, "white")
        took = f" {ev.field('duration_ms')} ms" if ev.field("duration_ms") else ""
        self.out.print(f"  {self._who(ev)}[{color}]← {outcome}{took}[/] {esc(short(ev.field('result') or '', 160))}",
                       highlight=False)
        for note in ev.field("notes") or []:
            self.out.print(f"    [dim]{short(note, 200)}[/]")

    def _on_reflection(self, ev: Any) -> None:
        color = "green" if ev.field("verdict") == "pass" else "yellow"
        self.out.print(f"  [{color}]verdict: {ev.field('verdict')}[/] (round {ev.field('round')}/"
                       f"{ev.field('max_rounds')}) {esc(short(ev.field('feedback') or '', 200))}")
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
        self.out.print(f"  [{color}]⛨ {esc(line)}[/]", highlight=False)

    def _on_output_invalid(self, ev: Any) -> None:
        from magent.trace import notes

        self.out.print(f"  [yellow]⚠ {esc(short(notes.output_invalid(ev.model_dump()), 240))}[/]", highlight=False)

    def _on_tool_mode(self, ev: Any) -> None:
        if ev.field("mode") == "text":  # (native is the usual case: said only in the trace)
            self.out.print(f"  {self._who(ev)}[yellow]tools in the text format (Thought/Action): "
                           f"{esc(short(ev.field('reason') or '', 200))}[/]", highlight=False)
        else:
            self.out.print(f"  {self._who(ev)}[dim]tools: native function calling[/]", highlight=False)

    def _on_compaction(self, ev: Any) -> None:
        from magent.trace import notes

        self.out.print(f"  [cyan]⇣ {esc(short(notes.compaction(ev.model_dump()), 240))}[/]", highlight=False)

    def _on_memory_recalled(self, ev: Any) -> None:
        hits = ev.field("hits") or []
        shown = "; ".join(f"{str(h.get('id'))[:8]} {short(h.get('content') or '', 60)}" for h in hits[:3])
        more = f" (+{len(hits) - 3})" if len(hits) > 3 else ""
        self.out.print(f"  [magenta]◆ memory:[/] recalled {len(hits)}" + (f": {esc(shown)}{more}" if hits else ""),
                       highlight=False)

    def _on_memory_stored(self, ev: Any) -> None:
        from magent.trace.notes import stored_text

        line = short(stored_text(ev.model_dump()), 160)
        self.out.print(f"  [magenta]◆ memory:[/] {esc(line)}", highlight=False)

    def _on_memory_consolidated(self, ev: Any) -> None:
        self.out.print(f"  [magenta]◆ {esc(ev.field('summary'))}[/]", highlight=False)

    def _on_memory_forgotten(self, ev: Any) -> None:
        self.out.print(f"  [magenta]◆ memory:[/] forgot {str(ev.field('id'))[:8]}: "
                       f"{esc(short(ev.field('content') or '', 80))}", highlight=False)

    def _on_elicitation(self, ev: Any) -> None:
        from magent.trace.notes import elicitation_text

        self.out.print(f"  [magenta]? {esc(short(elicitation_text(ev.model_dump()), 200))}[/]", highlight=False)

    def _on_human_decision(self, ev: Any) -> None:
        msg = f": {ev.field('message')}" if ev.field("message") else ""
        self.out.print(f"  [bold]a person chose {ev.field('action')}[/]{msg}")

    def _on_tool_output(self, ev: Any) -> None:
        self.out.print(f"  [dim]│ {esc(short(ev.field('line') or '', 200))}[/]", highlight=False)

    def _on_injection(self, ev: Any) -> None:
        self.out.print(f"  [bold magenta]✉ operator said:[/] {esc(short(ev.field('message') or '', 240))}",
                       highlight=False)

    def _on_signal(self, ev: Any) -> None:
        self.out.print(f"  [bold magenta]✉ operator asked to {ev.field('kind')}[/]", highlight=False)

    def _on_warning(self, ev: Any) -> None:
        self.err.print(f"[yellow]warning:[/] {ev.field('message')}", highlight=False)

    def _on_error(self, ev: Any) -> None:
        self.out.print(f"  [bold red]✗ {ev.field('message')}[/]", highlight=False)

    def _on_awaiting_human(self, ev: Any) -> None:
        self.pause(ev.node, ev.field("question"), ev.field("output"))

    def pause(self, node: str, question: str, output: str | None) -> None:
        """What a paused run asks, and the output to judge."""
        self.out.print(f"[bold yellow]⏸ waiting for a person at '{node}'[/]: {question}")
        if output:
            self.out.print("[dim]output to judge:[/]")
            text = output.strip()
            if len(text) > 3000:
                text = text[:3000] + f"… [{len(text) - 3000} more characters: magent checkpoints show {self.task_id}]"
            self.out.print("  " + text.replace("\n", "\n  "), markup=False)

    def _on_interrupted(self, ev: Any) -> None:
        import sys

        self.said_interrupted = True
        cause = "stdout was closed; " if getattr(sys.stdout, "gone", False) else ""  # ``run | head``
        self.err.print(f"[yellow]interrupted[/]: {cause}the task was checkpointed; continue with "
                       f"`magent resume {self.task_id[:8]}`", highlight=False)

    def _on_run_finished(self, ev: Any) -> None:
        status = ev.field("status")
        color = STATUS_STYLE.get(status, "")
        secs = (ev.field("duration_ms") or 0) / 1000
        self.out.print(f"[{color}]{status}[/] · {plural(ev.field('model_calls') or 0, 'model call')} · "
                       f"{ev.field('tokens_in')}→{ev.field('tokens_out')} tokens"
                       f"{token_note({'estimated': ev.field('estimated'), 'calls': ev.field('model_calls')})} · "
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
