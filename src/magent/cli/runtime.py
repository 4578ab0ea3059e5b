"""Running an async run from a command: signals, output sinks, pauses answered inline."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from contextlib import contextmanager, suppress
from typing import Any, Awaitable, Callable, Iterator

from magent.errors import EXIT_INTERRUPTED, MagentError


class Interrupted(MagentError):
    exit_code = EXIT_INTERRUPTED
    cause: str | None = None
    """What stopped the run when it was not a signal (``stdout was closed``)."""


class ReaderGone:
    """``sys.stdout`` for a run: when a pipe's reader goes away (``| head``), later writes are
    dropped and ``on_closed`` is called once, so the run stops like Ctrl-C instead of dying with
    the task marked running."""

    def __init__(self, stream: Any):
        self.stream = stream
        self.gone = False
        self.on_closed: Callable[[], None] = lambda: None

    @classmethod
    def install(cls) -> "ReaderGone":
        if not isinstance(sys.stdout, cls):
            sys.stdout = cls(sys.stdout)  # type: ignore[assignment]
        return sys.stdout  # type: ignore[return-value]

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self.stream.write(text)
            except BrokenPipeError:
                self._closed()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._closed()

    def _closed(self) -> None:
        self.gone = True
        # Point the descriptor at /dev/null so the interpreter's own flush at exit is quiet too.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass
        self.on_closed()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def run_async(make: Callable[[], Awaitable[Any]]) -> Any:
    """Run ``make()``. SIGINT and SIGTERM cancel it, and so does a closed stdout (``| head``):
    the run checkpoints and stops as ``interrupted`` → exit 130."""
    stdout = ReaderGone.install()
    why: list[str] = []

    async def main() -> Any:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, task.cancel)  # type: ignore[union-attr]

        def reader_gone() -> None:
            why.append("stdout was closed")
            # Soon, not now: the write that failed is inside the run's own step, and a run that
            # is just finishing must not be turned into an interrupted one.
            loop.call_soon(task.cancel)  # type: ignore[union-attr]

        stdout.on_closed = reader_gone
        return await make()

    try:
        return asyncio.run(main())
    except (asyncio.CancelledError, KeyboardInterrupt):
        cause = f"{why[0]}; " if why else ""
        error = Interrupted(f"interrupted: {cause}the task was checkpointed and can be resumed with "
                            "`magent resume ID`")
        error.cause = why[0] if why else None
        raise error from None
    finally:
        stdout.on_closed = lambda: None


class JsonLines:
    """``--json``: every event as one JSON object per line on stdout, flushed as it happens.

    With ``--stream``, tool output lines (``tool_output``) and the main conversation's text
    deltas (``{"type": "text_delta", "node", "agent", "text"}``) come too, between the events;
    the deltas before an ``llm_call`` join to its reply. They are never in events.jsonl."""

    def __init__(self, stream: bool = False) -> None:
        self.speaking: dict[str, Any] = {}
        """Who the next deltas belong to: the main session's node that runs."""
        self.stream = stream
        """``--stream``: also a tool's output lines as it prints them (``tool_output``)."""

    def __call__(self, event: Any) -> None:
        if event.type == "tool_output" and not self.stream:
            return
        doc = event.model_dump(mode="json", exclude_none=True)
        if doc.get("type") in ("node_started", "llm_started") and not doc.get("session") and not doc.get("rail"):
            self.speaking = {"node": doc.get("node"), "agent": doc.get("agent")}
        self._line(doc)

    def delta(self, text: str) -> None:
        """One piece of the model's text (``--json --stream``)."""
        if text:
            self._line({"type": "text_delta", **{k: v for k, v in self.speaking.items() if v is not None},
                        "text": text})

    @staticmethod
    def _line(doc: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(doc, ensure_ascii=False) + "\n")
        sys.stdout.flush()

    @staticmethod
    def result(result: Any) -> None:
        """The last line: the run's ``AgentResult``."""
        sys.stdout.write(result.to_json() + "\n")
        sys.stdout.flush()


@contextmanager
def asking(interactive: bool) -> Iterator[None]:
    """While the block runs, a question an MCP server asks mid-call goes to the person at the
    terminal (when ``interactive`` and stdin is one); otherwise the caller's setting answers."""
    if not (interactive and sys.stdin.isatty()):
        yield
        return
    from magent.tools.mcp_elicit import ask_in_terminal, terminal_asker

    token = terminal_asker.set(ask_in_terminal)
    try:
        yield
    finally:
        terminal_asker.reset(token)


def ask_inline(request: Any) -> dict[str, Any] | None:
    """Ask the person at the terminal: ``magent.aresume``'s answer arguments, or None to stay paused."""
    from magent.engine.inputs import parse_sets

    allowed = request.allowed_actions
    keys = {"a": "approve", "r": "reject", "e": "modify", "l": None}
    options = ["[a]pprove" if "approve" in allowed else "", "[r]eject" if "reject" in allowed else "",
               "[e]dit" if "modify" in allowed else "", "[l]ater"]
    prompt = " / ".join(o for o in options if o) + ": "
    while True:
        said = _line(prompt)
        if said is None:
            return None
        answer = said.lower()[:1]
        if answer in keys and (keys[answer] is None or keys[answer] in allowed):
            break
        offered = [k for k, action in keys.items() if action is None or action in allowed]
        print(f"please answer {', '.join(offered[:-1])} or {offered[-1]}")
    action = keys[answer]
    if action is None:
        return None
    updates: dict[str, Any] = {}
    if action == "modify" and request.output and request.kind in ("human_node", "approval"):
        edited = edit_text(request.output)
        if edited is not None and edited.strip() != request.output.strip():
            updates["output"] = edited.rstrip("\n")
            print("the output is replaced with your edit")
        else:
            print("the output is unchanged")
    if action == "modify":
        print("state updates as key=value (metadata keys, or routing_key=...); empty line to finish")
        pairs = []
        while line := _line("  "):
            pairs.append(line)
        updates.update(parse_sets(pairs))
    raised = ask_limit(request.details) if action == "approve" and request.kind == "budget" else None
    if action == "approve" and request.kind == "budget" and not raised:
        return None  # the input ended before a new limit: it stays paused
    message = _line("message (optional): ") or None
    if action == "modify":
        return {"modify": updates, "message": message}
    if raised:
        return {"approve": True, "message": message, "budget": raised}
    return {action: True, "message": message}


def ask_limit(details: dict[str, Any]) -> str | None:
    """The raised budget limit, asked until it is above what was used (None: input ended, stay paused)."""
    from magent.engine.budget import figure, parse, reached
    from magent.errors import UsageError

    limit, used = details.get("limit"), details.get("used") or 0
    while True:
        raw = _line(f"new {limit} (above {figure(str(limit), used)}): ")
        if raw is None:
            return None
        try:
            value = parse(f"{limit}={raw}", "the limit")[str(limit)]
        except UsageError as exc:
            print(str(exc))
            continue
        if reached(str(limit), value, used):
            print(f"that is not above {figure(str(limit), used)}")
            continue
        return f"{limit}={raw}"


def _line(prompt: str) -> str | None:
    """A line typed at ``prompt``, stripped; None when the input ended."""
    try:
        return input(prompt).strip()
    except EOFError:
        return None


def edit_text(text: str) -> str | None:
    """``text`` edited in ``$VISUAL``, ``$EDITOR`` or an editor found on the system; the saved
    text, or None when not saved or the editor could not run."""
    import click

    print("opening the output in your editor: save and close it to use your edit")
    try:
        return click.edit(text, require_save=True, extension=".md")
    except click.ClickException as exc:
        print(f"the editor did not run ({exc.format_message()}); set EDITOR to the one you use")
        return None
