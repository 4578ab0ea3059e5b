"""The root ``magent`` command, and the one place errors become exit codes.

Command modules import the library inside their functions, so ``magent --help``
loads neither pydantic models nor litellm nor mcp.
"""

from __future__ import annotations

import copy
import os
import sys
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

from magent import __version__
from magent.cli import collector


class MagentGroup(TyperGroup):
    """Maps ``MagentError`` to a one-line message and its exit code, for every command."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from magent.cli.helpfmt import plain_words

        plain_words(self)

    def invoke(self, ctx: Any) -> Any:
        from magent.errors import EXIT_FAILED, EXIT_INTERRUPTED, MagentError

        try:
            return super().invoke(ctx)
        except MagentError as exc:
            if os.environ.get("MAGENT_DEBUG") == "1":
                raise
            _error(str(exc))
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            _error("interrupted")
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except (typer.Exit, typer.Abort):
            raise
        except Exception as exc:  # an unexpected failure: say so plainly, trace only on request
            if os.environ.get("MAGENT_DEBUG") == "1" or _is_click_exception(exc):
                raise
            _error(f"internal error: {type(exc).__name__}: {exc} (set MAGENT_DEBUG=1 for the traceback)")
            raise typer.Exit(EXIT_FAILED) from None


    def main(self, args: Any = None, prog_name: Any = None, complete_var: Any = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        """Command-line mistakes (an unknown option, a missing argument...) as one line too."""
        if not standalone_mode:
            return super().main(args=args, prog_name=prog_name, complete_var=complete_var,
                                standalone_mode=False, **extra)
        try:
            rv = super().main(args=args, prog_name=prog_name, complete_var=complete_var,
                              standalone_mode=False, **extra)
        except typer.Abort:
            _error("aborted")
            sys.exit(1)
        except typer.TyperException as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # a bare group: its help is the answer
                exc.show()  # type: ignore[attr-defined]
                sys.exit(2)
            ctx = getattr(exc, "ctx", None)
            hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
            _error(exc.format_message().rstrip('.') + hint)  # type: ignore[attr-defined]
            sys.exit(getattr(exc, "exit_code", 2))
        sys.exit(rv if isinstance(rv, int) else 0)


def _is_click_exception(exc: Exception) -> bool:
    return type(exc).__module__.startswith("typer")


def _error(message: str) -> None:
    print(f"magent: error: {message}", file=sys.stderr)


app = typer.Typer(
    name="magent",
    cls=MagentGroup,
    help="Run agents and workflows from the terminal; every step is kept as plain files "
         "under $MAGENT_HOME (default ~/.multi-agent).",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        print(f"magent {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    version: Annotated[Optional[bool], typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version and exit.")] = None,
) -> None:
    """magent: a local-first agent runner."""


def _register() -> None:
    from magent.cli import checkpoints, run, setup, tasks

    setup.register(app)
    run.register(app)
    from magent.cli import chat
    chat.register(app)
    app.add_typer(tasks.app, name="tasks")
    app.add_typer(checkpoints.app, name="checkpoints")
    from magent.cli import retention
    app.add_typer(retention.app, name="retention")
    from magent.cli import mcp, tools
    app.add_typer(tools.app, name="tools")
    app.add_typer(mcp.app, name="mcp")
    from magent.cli import graph, trace
    trace.register(app)
    graph.register(app)
    from magent.cli import config, examples, new
    app.add_typer(new.app, name="new")
    app.add_typer(examples.app, name="examples")
    from magent.cli import memory, prompts
    app.add_typer(memory.app, name="memory")
    app.add_typer(prompts.app, name="prompts")
    app.add_typer(config.app, name="config")
    from magent.cli import batch
    app.add_typer(batch.app, name="batch")


_register()


def main() -> None:
    """Run the ``magent`` command in this process (it ends in ``SystemExit`` with the exit code)."""
    _narrowed(sys.argv[1:])(prog_name="magent")


def _narrowed(args: list[str]) -> typer.Typer:
    """``app`` with only the command ``args`` start with: Typer turns every registered command
    into a click command (its parameters, their converters) before it looks at the arguments,
    and the one that runs is all a run needs. With anything else first (``--help``, an option,
    a misspelt command) or while completing, every command is there to list or suggest."""
    if not args or args[0].startswith("-") or os.environ.get("_MAGENT_COMPLETE"):
        return app
    from typer.main import get_command_name

    name = args[0]
    commands = [c for c in app.registered_commands
                if (c.name or get_command_name(c.callback.__name__)) == name]  # type: ignore[union-attr]
    groups = [g for g in app.registered_groups if g.name == name]
    if not commands and not groups:
        return app
    narrow = copy.copy(app)
    narrow.registered_commands, narrow.registered_groups = commands, groups
    return narrow


def entry() -> None:
    """The ``magent`` program (its console script, ``python -m magent``): the command, then an
    immediate exit.

    A run leaves litellm, mcp and pydantic's hundreds of thousands of objects loaded, and
    Python's own teardown (its last garbage collections, then freeing module after module)
    took 1 to 5 s between the answer, or a Ctrl-C, and the prompt. Everything magent writes
    is written, synced and closed by the time the command returns, so once stdout and stderr
    are flushed the process ends at once, without that teardown (``os._exit``).

    pydantic plugins (found through every installed package's entry points, a scan that took
    as long as building magent's models) are for a program's own models, not magent's: the
    program turns them off unless the user set ``PYDANTIC_DISABLE_PLUGINS`` (pydantic's
    documented switch). MCP servers do not inherit it: they get the SDK's default environment.
    """
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    collector.starting()
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    if isinstance(code, str):  # SystemExit("message"): Python prints it and exits 1
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that went away, a stream already closed
            pass
    os._exit(code if isinstance(code, int) else 0)
