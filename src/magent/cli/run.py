"""``magent run`` and ``magent resume``."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from magent.cli.helpfmt import examples
from magent.cli.options import TaskId, Target, complete_task_id

SetOpt = Annotated[Optional[list[str]], typer.Option(
    "--set", metavar="KEY=VALUE", help="Set a State value: a metadata key (dots nest) or routing_key/next_action. Repeatable.")]
ModelOpt = Annotated[Optional[str], typer.Option(
    "--model", metavar="MODEL", help="Use this litellm model string for every agent (e.g. openai/gpt-4o-mini).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Stream events as JSON Lines on stdout; the last line is the result.")]
class Durability(str, Enum):
    sync = "sync"
    step = "step"
    exit = "exit"


DurabilityOpt = Annotated[Optional[Durability], typer.Option(
    "--durability", case_sensitive=False,
    help="When writes reach the disk: sync (default: before every tool and model call), step "
         "(once per step) or exit (when the run stops). See docs/durability.md.")]
NoInputOpt = Annotated[bool, typer.Option("--no-input", help="Never ask at the terminal; pauses exit with code 3.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Print only the final answer (the task line and errors go to stderr).")]
BudgetOpt = Annotated[Optional[str], typer.Option(
    "--budget", metavar="LIMITS", help="Usage limits for the whole task: max_tokens=N, max_cost_usd=X, max_model_calls=N, max_tool_calls=N, comma-separated (on_exceeded=fail fails instead of pausing).")]
StreamOpt = Annotated[bool, typer.Option("--stream", help='With --json: also print the model\'s text as it arrives, as {"type": "text_delta", "text": ...} lines (not kept in the trace).')]


def register(app: typer.Typer) -> None:
    app.command("run", epilog=examples(
        'magent run examples/workflows/write_review.yaml -t "Write copy for Tidy"',
        'magent run triage -t "Checkout is broken" --set priority=high --tag urgent',
        'magent run my_agent.yaml -t "Sum up notes.txt" --model ollama/llama3.2 -q',
        'magent run brief.yaml -t "Trays" --budget max_tokens=50000,max_cost_usd=1'))(run)
    app.command("resume", epilog=examples(
        "magent resume 3f2a --approve",
        'magent resume 3f2a --reject --message "Say which Friday"',
        "magent resume 3f2a --modify edits.yaml   # output: the text as it should be",
        "magent resume 3f2a --approve --budget max_tokens=90000   # raise a budget",
        "magent resume 3f2a --from-checkpoint 3 --set priority=low  # a new task"))(resume)
    app.command("replay", epilog=examples("magent replay 3f2a", "magent replay 3f2a --json"))(replay)


def run(
    target: Target,
    task: Annotated[str, typer.Option("-t", "--task", metavar="TEXT", help="What to do: the task description.")],
    model: ModelOpt = None,
    set_: SetOpt = None,
    tag: Annotated[Optional[list[str]], typer.Option("--tag", metavar="TAG", help="Label the task (retention's by_task keys match tags). Repeatable.")] = None,
    retention_days: Annotated[Optional[int], typer.Option("--retention-days", metavar="N", min=0, help="Keep this task N days after it finishes.")] = None,
    budget: BudgetOpt = None,
    json_out: JsonOpt = False,
    stream: StreamOpt = False,
    no_input: NoInputOpt = False,
    durability: DurabilityOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Run a workflow (or a single agent) on a task.

    Prints the task id, then the run as it happens. Exit 0 completed, 1 failed,
    3 paused for a person (resume it with magent resume), 130 interrupted.
    """
    from magent import api
    from magent.engine.inputs import parse_sets

    initial = parse_sets(set_ or [])
    view = RunView(json_out, quiet, stream=stream)
    result = view.go(lambda live: api.arun(
        target, task, set=initial, model=model, tags=tag or [], retention_days=retention_days, budget=budget,
        durability=durability.value if durability else None, on_start=lambda t: view.announce(t.id, t.workflow), **live), model=model, no_input=no_input)
    raise typer.Exit(exit_code(result))


def resume(
    task_id: TaskId,
    approve: Annotated[bool, typer.Option("--approve", help="Approve what the paused run asks.")] = False,
    reject: Annotated[bool, typer.Option("--reject", help="Reject it (give --message to say why).")] = False,
    modify: Annotated[Optional[Path], typer.Option("--modify", metavar="FILE", help="Approve with State updates from a YAML or JSON file; output: TEXT in it replaces the output.")] = None,
    message: Annotated[Optional[str], typer.Option("--message", "-m", metavar="TEXT", help="Feedback the next nodes see.")] = None,
    set_: SetOpt = None,
    from_checkpoint: Annotated[Optional[int], typer.Option("--from-checkpoint", metavar="N", help="Start a new task from checkpoint N of ID (time travel).")] = None,
    model: ModelOpt = None,
    budget: Annotated[Optional[str], typer.Option(
        "--budget", metavar="LIMITS", help="Raise the usage limit the task stopped at, e.g. max_tokens=100000 (with --approve at a budget pause).")] = None,
    json_out: JsonOpt = False,
    stream: StreamOpt = False,
    quiet: QuietOpt = False,
    no_input: NoInputOpt = False,
    durability: DurabilityOpt = None,
) -> None:
    """Continue a paused, interrupted or crashed task, or fork one.

    A paused run needs an answer (--approve, --reject or --modify); in a terminal,
    without one, it asks for it inline. A crashed or interrupted run continues from
    its last checkpoint.
    --from-checkpoint N starts a new task from an older checkpoint instead.
    """
    from magent import api
    from magent.engine.inputs import parse_sets

    _check_answer(approve, reject, modify, message)
    sets = parse_sets(set_ or [])
    view = RunView(json_out, quiet, stream=stream)
    forked = from_checkpoint is not None
    answer: dict[str, Any] = {"approve": approve, "reject": reject, "modify": modify, "message": message,
                              "budget": budget}
    if not (approve or reject or modify or forked) and view.interactive(no_input):
        answer = view.answer_first(task_id) or answer
    result = view.go(lambda live: api.aresume(
        task_id, **answer, set=sets, from_checkpoint=from_checkpoint, model=model,
        durability=durability.value if durability else None,
        on_start=lambda t: view.announce(t.id, t.workflow if forked else "resumed", forked=forked),
        **live), model=model, no_input=no_input)
    raise typer.Exit(exit_code(result))


def _check_answer(approve: bool, reject: bool, modify: Path | None, message: str | None) -> None:
    """``resume``'s answer flags, in their own words (the API names its keyword arguments)."""
    from magent.errors import UsageError

    chosen = [on for on in (approve, reject, modify is not None) if on]
    if len(chosen) > 1:
        raise UsageError("give only one of --approve, --reject, --modify")
    if message is not None and not chosen:
        raise UsageError("--message goes with --approve, --reject or --modify")


def exit_code(result: Any) -> int:
    """0 completed, 3 paused for a person, 1 anything else (failed, cancelled)."""
    from magent.errors import EXIT_FAILED, EXIT_OK, EXIT_PAUSED

    return {"completed": EXIT_OK, "awaiting_human": EXIT_PAUSED}.get(result.status.value, EXIT_FAILED)


def replay(
    task_id: Annotated[str, typer.Argument(metavar="ID", help="A completed or failed task (id or unique prefix).",
                                           autocompletion=complete_task_id)],
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Re-run a finished task with its recorded model replies.

    Tools run for real; reports a match or the first step that diverged. Exit 0
    when it matched, 1 when it diverged.
    """
    from magent.api.replaying import areplay
    from magent.cli.output import print_json
    from magent.cli.runtime import run_async

    report = run_async(lambda: areplay(task_id))
    if json_out:
        print_json({"original": report.original, "replay": report.replay, "matched": report.matched,
                    "model_calls": report.model_calls, "tool_calls": report.tool_calls, "step": report.step,
                    "divergence": report.divergence, "details": report.details})
    elif report.matched:
        from magent.vocabulary import plural

        print(f"replay matched: {plural(report.model_calls, 'model call')} and "
              f"{plural(report.tool_calls, 'tool call')}, the same calls and results as recorded "
              f"(replay task {report.replay[:8]})")
    else:
        print(f"replay diverged at {report.divergence} (replay task {report.replay[:8]})")
        if report.step is not None:
            print(f"see: magent trace {report.original[:8]} --step {report.step}")
    raise typer.Exit(0 if report.matched else 1)


class RunView:
    """Output of a run: live terminal view, quiet, or JSON Lines; and inline answers to pauses."""

    def __init__(self, json_out: bool, quiet: bool, *, stream: bool = False):
        from magent.errors import UsageError

        if stream and not json_out:
            raise UsageError("--stream goes with --json (the terminal view streams the answer already)")
        self.json_out = json_out
        self.stream = stream
        self.quiet = quiet
        self.printer: Any = None
        self.task_id = ""
        if not json_out:
            from magent.liveview import EventPrinter

            self.printer = EventPrinter(quiet=quiet)

    def announce(self, task_id: str, workflow: str, forked: bool = False) -> None:
        self.task_id = task_id
        if self.printer is not None:
            self.printer.task_id = task_id
            line = f"task {task_id} ({'new branch of ' if forked else ''}{workflow})"
            if self.quiet:
                print(line, file=sys.stderr)
            else:
                self.printer.out.print(f"[bold]{line}[/]")

    def _run(self, make: Any) -> Any:
        """``run_async``, with one message on Ctrl-C: the live view's, or else one naming the task."""
        from magent.cli.runtime import Interrupted, run_async
        from magent.errors import EXIT_INTERRUPTED

        try:
            return run_async(make)
        except Interrupted as exc:
            task_id = self.printer.task_id if self.printer is not None else self.task_id
            if self.printer is not None and self.printer.said_interrupted:
                raise typer.Exit(EXIT_INTERRUPTED) from None  # the live view has said it, and why
            if task_id:
                cause = f"{exc.cause}; " if exc.cause else ""
                raise Interrupted(f"interrupted: {cause}task {task_id[:8]} was checkpointed; continue with "
                                  f"`magent resume {task_id[:8]}`") from None
            raise

    def live(self) -> dict[str, Any]:
        """The API's live handlers for this view: ``on_event`` and ``on_token``."""
        from magent.cli.runtime import JsonLines

        from magent.cli.collector import after_first

        if self.json_out:
            lines = JsonLines(stream=self.stream)
            return {"on_event": after_first(lines), "on_token": lines.delta if self.stream else None}
        return {"on_event": after_first(self.printer.print_event),
                "on_token": None if self.quiet else self.printer.token}

    def answer_first(self, task_id: str) -> dict[str, Any] | None:
        """A paused task resumed in a terminal without an answer: show its question and ask it
        inline (None: it is not paused). Answered ``l``ater, it stays paused (exit 3)."""
        from magent import api
        from magent.errors import EXIT_PAUSED

        known = api.task(task_id)
        if known.pause is None:
            return None
        self.printer.pause(known.pause.node, known.pause.question, known.pause.output)
        answer = self.ask(known.task_id, known.pause)
        if answer is None:
            limit = known.pause.details.get("limit") if known.pause.kind == "budget" else None
            self.printer.resume_hint(known.task_id, known.pause.allowed_actions, limit)
            raise typer.Exit(EXIT_PAUSED)
        return answer

    def interactive(self, no_input: bool) -> bool:
        """A person at the terminal answers pauses inline."""
        return not no_input and not self.json_out and sys.stdin.isatty()

    def ask(self, task_id: str, pause: Any) -> dict[str, Any] | None:
        """``ask_inline``; Ctrl-C at the prompt leaves the task paused and says how to go on."""
        from magent.cli.runtime import ask_inline
        from magent.errors import EXIT_INTERRUPTED

        try:
            return ask_inline(pause)
        except KeyboardInterrupt:
            print(file=sys.stderr)  # off the prompt's line
            print(f"still waiting for a person; continue with: magent resume {task_id[:8]}", file=sys.stderr)
            raise typer.Exit(EXIT_INTERRUPTED) from None

    def go(self, start: Any, *, model: str | None, no_input: bool) -> Any:
        """Run ``start(live)`` (an API coroutine given the live-view handlers), answer pauses
        inline when a person is at the terminal, then print the ending."""
        from magent import api
        from magent.cli.runtime import JsonLines, asking

        interactive = self.interactive(no_input)
        live = self.live()
        with asking(interactive):
            result = self._run(lambda: start(live))
            while result.pause is not None and interactive:
                answer = self.ask(result.task_id, result.pause)
                if answer is None:
                    break
                result = self._run(lambda: api.aresume(result.task_id, model=model, **answer, **live))
        if self.json_out:
            JsonLines.result(result)
        elif result.pause is not None:
            limit = result.pause.details.get("limit") if result.pause.kind == "budget" else None
            self.printer.resume_hint(result.task_id, result.pause.allowed_actions, limit)
        elif self.quiet and result.output and result.success:
            print(result.output)
        elif self.quiet and result.error:
            print(f"magent: {result.status.value}: {result.error.message}", file=sys.stderr)
        return result
