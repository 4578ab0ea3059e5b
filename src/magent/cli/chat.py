"""``magent chat``: follow-ups to a task, or a conversation with an agent in the terminal."""

from __future__ import annotations

import sys
from typing import Annotated, Any, Optional

import typer

from magent.cli.helpfmt import examples
from magent.cli.options import complete_task_id
from magent.cli.run import JsonOpt, ModelOpt, NoInputOpt, QuietOpt, RunView, SetOpt, StreamOpt, exit_code

PROMPT = "you> "


def register(app: typer.Typer) -> None:
    app.command("chat", epilog=examples(
        'magent chat 3f2a "Now make it shorter"        # a follow-up to task 3f2a',
        "magent chat examples/agents/note_taker.yaml  # talk; Ctrl-D to leave",
        "magent chat 3f2a                              # go on talking in task 3f2a",
        'magent chat 3f2a "And in French?" --json --stream',
        'magent chat 3f2a "Skip the tests, just build"  # steer 3f2a while it runs',
        'magent chat 3f2a "Cite sources" --session researcher  # steer its sub-agent'))(chat)


def chat(
    what: Annotated[str, typer.Argument(
        metavar="ID|TARGET", help="A task (id or unique prefix) to continue, or an agent or workflow "
                                  "(file or installed name) to start a conversation with.",
        autocompletion=complete_task_id)],
    message: Annotated[Optional[str], typer.Argument(
        metavar="MESSAGE", help="What to say. Without it, in a terminal, you are asked turn by turn.")] = None,
    model: ModelOpt = None,
    set_: SetOpt = None,
    json_out: JsonOpt = False,
    stream: StreamOpt = False,
    quiet: QuietOpt = False,
    no_input: NoInputOpt = False,
    wait: Annotated[bool, typer.Option("--wait", help="Steering a running task: wait for the agent's next answer and print it.")] = False,
    session: Annotated[Optional[str], typer.Option(
        "--session", metavar="SESSION",
        help="Steering a running task: the conversation that takes the message — main, or an open "
             "sub-agent, branch or item by its agent name, key (branch:NODE) or id. Default: the "
             "first to reach its next turn.")] = None,
) -> None:
    """Talk to an agent, or send a follow-up to a task.

    With a task ID and a MESSAGE, the message goes to the agent that answered last (or the
    workflow's on_message node) and the task runs again; its new checkpoints and steps follow
    the old ones. With a TARGET, a new task starts with the first message. Without a MESSAGE,
    in a terminal, you are asked for one turn after turn (the answer streams, tool calls
    show) until Ctrl-D. Every turn is saved like a run: a chat that was killed continues with
    magent chat ID. Exit codes as magent run.

    To a task that is running (in another terminal, a script), the MESSAGE is queued and the
    command returns: the agent reads it as a user message at its next turn (--wait: and prints
    its next answer).
    """
    from magent.engine.inputs import parse_sets
    from magent.errors import UsageError

    task_id, target = _which(what)
    initial = parse_sets(set_ or [])
    if initial and task_id is not None:
        raise UsageError("--set goes with a TARGET (it sets State values of a new conversation); "
                         f"{what!r} is a task")
    interactive = message is None and not no_input and not json_out and sys.stdin.isatty()
    if message is None and target is not None and not interactive:
        raise UsageError("give a MESSAGE to start a conversation with "
                         f"{what!r} (or run it in a terminal to be asked)")
    if message is not None and target is not None and not message.strip():
        raise UsageError(f"the message is empty; say what {what!r} should do")
    if task_id is not None and _steer(task_id, message, wait, json_out, session, model):
        return
    if session is not None:
        raise UsageError(f"--session goes with a running task; {what!r} is not running")
    view = RunView(json_out, quiet, stream=stream)
    result = None
    if task_id is not None and (message is not None or not interactive or _stopped(task_id)):
        result = _turn(view, lambda live: _achat(task_id, message, model, view, live), model, no_input)
        task_id = result.task_id
    elif target is not None and message is not None:
        result = _turn(view, lambda live: _arun(target, message, initial, model, view, live), model, no_input)
        task_id = result.task_id
    if interactive:
        result = _converse(view, task_id, target, initial, model, no_input) or result
    if result is not None:
        raise typer.Exit(exit_code(result))


def _which(what: str) -> tuple[str | None, str | None]:
    """(task id, None) or (None, target): an existing file is a target, a known task id or
    prefix a task, anything else the name of an installed agent or workflow."""
    from pathlib import Path

    from magent.errors import ConfigError, InvalidTaskIdError, TaskNotFoundError
    from magent.store.tasks import Store

    if Path(what).expanduser().is_file():
        return None, what
    try:
        return Store().resolve(what), None
    except InvalidTaskIdError:
        return None, what
    except TaskNotFoundError as missing:
        from magent.api.reading import load

        try:  # a name that could be an id prefix ('cafe'): an installed agent or workflow?
            load(what)
        except ConfigError:
            raise missing from None
        return None, what


def _steer(task_id: str, message: str | None, wait: bool, json_out: bool, session: str | None,
           model: str | None) -> bool:
    """A running task: queue ``message`` for it (and with ``wait`` print the answer to it).
    False when no run holds the task (the message is a follow-up then)."""
    import json

    from magent import api
    from magent.api.steering import running
    from magent.errors import TaskStateError, UsageError
    from magent.store.tasks import Store

    if not running(Store().task(task_id)):
        return False
    if message is None:
        raise UsageError(f"task {task_id[:8]} is running; give a MESSAGE to steer it")
    if model is not None:
        raise UsageError(f"task {task_id[:8]} is running on the models it started with: --model goes with a "
                         "follow-up to a stopped task or a new conversation")
    try:
        sent = api.steer(task_id, message, session=session)
    except TaskStateError:
        return False  # it stopped just now: a follow-up then
    answer = api.answer_after(task_id, sent.signal) if wait else None
    if json_out:
        print(json.dumps({"task_id": sent.task_id, "signal": sent.signal, "queued": True,
                          **({"answer": answer} if wait else {})}))
    else:
        print(f"task {task_id[:8]} is running: message queued (signal {sent.signal}); "
              "the agent reads it at its next turn")
        if wait:
            print(answer if answer is not None else f"(task {task_id[:8]} stopped before answering; "
                                                    f"see magent trace {task_id[:8]})")
    return True


def _stopped(task_id: str) -> bool:
    """The task stopped in the middle of a run (a kill, Ctrl-C): continue it before asking."""
    from magent.store.tasks import Store

    return Store().task(task_id).shown_task().status.value in ("pending", "running", "interrupted")


def _converse(view: RunView, task_id: str | None, target: str | None, initial: dict[str, Any],
              model: str | None, no_input: bool) -> Any:
    """Ask for a message, answer it, until Ctrl-D (or an empty line after Ctrl-D)."""
    result = None
    print("(Ctrl-D to leave)")
    while True:
        try:
            line = input(PROMPT)
        except EOFError:
            print()
            break
        except KeyboardInterrupt:
            print()
            break
        if not line.strip():
            continue
        if task_id is None:
            result = _turn(view, lambda live: _arun(target, line, initial, model, view, live), model, no_input)
        else:
            result = _turn(view, lambda live: _achat(task_id, line, model, view, live), model, no_input)
        task_id = result.task_id
    if task_id is not None:
        print(f"task {task_id[:8]} — go on with: magent chat {task_id[:8]}")
    return result


def _turn(view: RunView, start: Any, model: str | None, no_input: bool) -> Any:
    return view.go(start, model=model, no_input=no_input)


async def _achat(task_id: str, message: str | None, model: str | None, view: RunView, live: dict[str, Any]) -> Any:
    from magent import api

    return await api.achat(task_id, message, model=model,
                           on_start=lambda t: view.announce(t.id, "follow-up" if message else "resumed"), **live)


async def _arun(target: Any, message: str, initial: dict[str, Any], model: str | None, view: RunView,
                live: dict[str, Any]) -> Any:
    from magent import api

    return await api.arun(target, message, set=initial, model=model,
                          on_start=lambda t: view.announce(t.id, t.workflow), **live)
