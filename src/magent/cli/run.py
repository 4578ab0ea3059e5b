"""``magent run`` and ``magent resume``."""

from __future__ import annotations

import sys
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
NoInputOpt = Annotated[bool, typer.Option("--no-input", help="Never ask at the terminal; pauses exit with code 3.")]


def register(app: typer.Typer) -> None:
    app.command("run", epilog=examples(
        'magent run examples/workflows/write_review.yaml -t "Write copy for Tidy"',
        'magent run triage -t "Checkout is broken" --set priority=high --tag urgent',
        'magent run my_agent.yaml -t "Sum up notes.txt" --model ollama/llama3.2 -q'))(run)
    app.command("resume", epilog=examples(
        "magent resume 3f2a --approve",
        'magent resume 3f2a --reject --message "Say which Friday"',
        "magent resume 3f2a --from-checkpoint 3 --set priority=low  # a new task"))(resume)
    app.command("replay", epilog=examples("magent replay 3f2a", "magent replay 3f2a --json"))(replay)


def run(
    target: Target,
    task: Annotated[str, typer.Option("-t", "--task", metavar="TEXT", help="What to do: the task description.")],
    model: ModelOpt = None,
    set_: SetOpt = None,
    tag: Annotated[Optional[list[str]], typer.Option("--tag", metavar="TAG", help="Label the task (retention's by_task keys match tags). Repeatable.")] = None,
    retention_days: Annotated[Optional[int], typer.Option("--retention-days", metavar="N", min=0, help="Keep this task N days after it finishes.")] = None,
    json_out: JsonOpt = False,
    no_input: NoInputOpt = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the final answer.")] = False,
) -> None:
    """Run a workflow (or a single agent) on a task.

    Prints the task id, then the run as it happens. Exit 0 completed, 1 failed,
    3 paused for a person (resume it with magent resume), 130 interrupted.
    """
    from magent.engine.graph import load_target
    from magent.engine.inputs import parse_sets
    from magent.engine.session import start_run

    if not task.strip():
        from magent.errors import UsageError

        raise UsageError("-t/--task must not be empty")
    graph = load_target(target)
    initial = parse_sets(set_ or [])
    view = _View(json_out, quiet)

    def started(t: Any) -> None:
        view.announce(t.id, graph.name)

    outcome = view.go(lambda options, sinks: start_run(
        graph, task, target=target, tags=tag or [], retention_days=retention_days, initial=initial,
        options=options, sinks=sinks, on_task=started), model=model, no_input=no_input)
    raise typer.Exit(outcome.exit_code)


def resume(
    task_id: TaskId,
    approve: Annotated[bool, typer.Option("--approve", help="Approve what the paused run asks.")] = False,
    reject: Annotated[bool, typer.Option("--reject", help="Reject it (give --message to say why).")] = False,
    modify: Annotated[Optional[Path], typer.Option("--modify", metavar="FILE", help="Approve with State updates from a YAML or JSON file.")] = None,
    message: Annotated[Optional[str], typer.Option("--message", "-m", metavar="TEXT", help="Feedback the next nodes see.")] = None,
    set_: SetOpt = None,
    from_checkpoint: Annotated[Optional[int], typer.Option("--from-checkpoint", metavar="N", help="Start a new task from checkpoint N of ID (time travel).")] = None,
    model: ModelOpt = None,
    json_out: JsonOpt = False,
    no_input: NoInputOpt = False,
) -> None:
    """Continue a paused, interrupted or crashed task, or fork one.

    A paused run needs an answer (--approve, --reject or --modify) unless you give
    it inline; a crashed or interrupted one continues from its last checkpoint.
    --from-checkpoint N starts a new task from an older checkpoint instead.
    """
    from magent.engine.inputs import load_modify_file, parse_sets
    from magent.engine.session import Decision, fork_run, resume_run
    from magent.errors import UsageError

    chosen = [name for name, on in (("approve", approve), ("reject", reject), ("modify", modify is not None)) if on]
    if len(chosen) > 1:
        raise UsageError("give only one of --approve, --reject, --modify")
    if message is not None and not chosen:
        raise UsageError("--message goes with --approve, --reject or --modify")
    if from_checkpoint is not None and from_checkpoint < 0:
        raise UsageError("--from-checkpoint must be 0 or more")
    decision = None
    if chosen:
        updates = load_modify_file(modify) if modify is not None else {}
        decision = Decision(action=chosen[0], message=message, state_updates=updates)
    sets = parse_sets(set_ or [])
    view = _View(json_out, False)
    if from_checkpoint is not None:
        outcome = view.go(lambda options, sinks: fork_run(
            task_id, from_checkpoint, decision=decision, set_values=sets, options=options, sinks=sinks,
            on_task=lambda t: view.announce(t.id, t.workflow, forked=True)), model=model, no_input=no_input)
    else:
        from magent.store import Store

        task_id = Store().resolve(task_id)
        view.announce(task_id, "resumed")
        outcome = view.go(lambda options, sinks: resume_run(
            task_id, decision=decision, set_values=sets, options=options, sinks=sinks), model=model,
            no_input=no_input)
    raise typer.Exit(outcome.exit_code)


def replay(
    task_id: Annotated[str, typer.Argument(metavar="ID", help="A completed or failed task (id or unique prefix).",
                                           autocompletion=complete_task_id)],
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Re-run a finished task with its recorded model replies.

    Tools run for real; reports a match or the first step that diverged. Exit 0
    when it matched, 1 when it diverged.
    """
    from magent.cli.output import print_json
    from magent.cli.runtime import run_async
    from magent.engine.replay import replay_task

    report = run_async(lambda: replay_task(task_id))
    if json_out:
        print_json({"original": report.original, "replay": report.replay, "matched": report.matched,
                    "steps": report.steps, "divergence": report.divergence, "details": report.details})
    elif report.matched:
        print(f"replay matched: {report.steps} steps, same calls and results "
              f"(replay task {report.replay[:8]})")
    else:
        print(f"replay diverged at {report.divergence} (replay task {report.replay[:8]})")
    raise typer.Exit(0 if report.matched else 1)


class _View:
    """Output of a run: live terminal view, quiet, or JSON Lines; and inline answers to pauses."""

    def __init__(self, json_out: bool, quiet: bool):
        self.json_out = json_out
        self.quiet = quiet
        self.printer: Any = None
        if not json_out:
            from magent.render import EventPrinter

            self.printer = EventPrinter(quiet=quiet)

    def announce(self, task_id: str, workflow: str, forked: bool = False) -> None:
        if self.printer is not None:
            self.printer.task_id = task_id
            line = f"task {task_id} ({'new branch of ' if forked else ''}{workflow})"
            if self.quiet:
                print(line, file=sys.stderr)
            else:
                self.printer.out.print(f"[bold]{line}[/]")

    def go(self, start: Any, *, model: str | None, no_input: bool) -> Any:
        from magent.cli.runtime import JsonLines, ask_inline, run_async
        from magent.engine.context import RunOptions
        from magent.engine.session import resume_run

        interactive = not no_input and not self.json_out and sys.stdin.isatty()
        sinks = [JsonLines()] if self.json_out else [self.printer.print_event]
        on_token = None if self.json_out or self.quiet else self.printer.token
        options = RunOptions(model_override=model, no_input=not interactive, on_token=on_token)
        outcome = run_async(lambda: start(options, sinks))
        while outcome.request is not None and interactive:
            decision = ask_inline(outcome.request)
            if decision is None:
                break
            options = RunOptions(model_override=model, no_input=False, on_token=on_token)
            outcome = run_async(lambda: resume_run(outcome.task_id, decision=decision, options=options,
                                                   sinks=sinks))
        if self.json_out:
            JsonLines.result(outcome)
        elif outcome.request is not None:
            self.printer.resume_hint(outcome.task_id, outcome.request.allowed_actions)
        elif self.quiet and outcome.result and outcome.status.value == "completed":
            print(outcome.result)
        elif self.quiet and outcome.error:
            print(f"magent: {outcome.status.value}: {outcome.error}", file=sys.stderr)
        return outcome
