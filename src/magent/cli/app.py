"""The root ``magent`` command, and the one place errors become exit codes. Command modules
import the library inside their functions, so ``magent --help`` loads none of it."""

from __future__ import annotations

import contextlib
import copy
import errno
import importlib
import os
import sys
from typing import Annotated, Any, Optional

import typer

from magent.version import DISTRIBUTION, __version__
from magent.cli import collector
from magent.cli.usage import CommandGroup, usage_message


class MagentGroup(CommandGroup):
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
            if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:  # a name the user gave
                name = os.fspath(exc.filename) if exc.filename is not None else "a name"
                _error(f"{name if len(name) <= 80 else name[:77] + '...'}: the name is too long for a file")
                raise typer.Exit(2) from None
            _error(f"internal error: {type(exc).__name__}: {exc} (set MAGENT_DEBUG=1 for the traceback)")
            raise typer.Exit(EXIT_FAILED) from None


    def main(self, args: Any = None, prog_name: Any = None, complete_var: Any = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        """Command-line mistakes (an unknown option, a missing argument...) as one line too."""
        if not standalone_mode:
            return super().main(args=args, prog_name=prog_name, complete_var=complete_var,
                                standalone_mode=False, **extra)
        undecodable = _not_utf8(sys.argv[1:] if args is None else list(args))
        if undecodable is not None:
            _error(undecodable)
            sys.exit(2)
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
            _error(usage_message(exc) + hint)
            sys.exit(getattr(exc, "exit_code", 2))
        sys.exit(rv if isinstance(rv, int) else 0)


def _not_utf8(args: list[str]) -> str | None:
    """What is wrong with the first argument that is not UTF-8 text (Python keeps its bytes as
    lone surrogates, which no file magent writes can hold); a file that exists is named as it is."""
    for number, arg in enumerate(args, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            if not os.path.lexists(arg):
                shown = arg.encode("utf-8", "surrogateescape")
                return f"argument {number} ({shown!r}) is not UTF-8 text; magent keeps text as UTF-8"
    return None


def _is_click_exception(exc: Exception) -> bool:
    return type(exc).__module__.startswith("typer")


def _error(message: str) -> None:
    print(f"magent: error: {message}", file=sys.stderr)


_root = typer.Typer(
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
        print(f"magent {__version__} ({DISTRIBUTION})")
        raise typer.Exit(0)


@_root.callback()
def root(
    version: Annotated[Optional[bool], typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version and exit.")] = None,
) -> None:
    """magent: a local-first agent runner."""


_PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("setup", ("init", "validate")),
    ("run", ("run", "resume", "replay")),
    ("chat", ("chat",)),
    ("tasks", ("tasks",)),
    ("checkpoints", ("checkpoints",)),
    ("retention", ("retention",)),
    ("migrate", ("migrate",)),
    ("tools", ("tools",)),
    ("mcp", ("mcp",)),
    ("trace", ("trace",)),
    ("graph", ("graph",)),
    ("new", ("new",)),
    ("examples", ("examples",)),
    ("memory", ("memory",)),
    ("prompts", ("prompts",)),
    ("config", ("config",)),
    ("batch", ("batch",)),
)
"""The modules that add commands, in ``--help``'s order, with the names each adds (its commands
via ``register(app)``, or its own group ``app``). tests/test_startup.py checks the names."""

_whole: typer.Typer | None = None


def _add(app: typer.Typer, module_name: str) -> None:
    module = importlib.import_module(f"magent.cli.{module_name}")
    register = getattr(module, "register", None)
    if register is not None:
        register(app)
    else:
        app.add_typer(module.app, name=module_name)


def _full() -> typer.Typer:
    """The ``magent`` app with every command (what ``--help`` lists), registered on first use."""
    global _whole
    if _whole is None:
        for module_name, _ in _PARTS:
            _add(_root, module_name)
        _whole = _root
    return _whole


def __getattr__(name: str) -> Any:
    if name == "app":  # ``from magent.cli.app import app``: the whole app
        return _full()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Run the ``magent`` command in this process (it ends in ``SystemExit`` with the exit code)."""
    _narrowed(sys.argv[1:])(prog_name="magent")


def _narrowed(args: list[str]) -> typer.Typer:
    """The app with only the command ``args`` start with (its module alone imported): Typer
    builds every registered command before it looks at the arguments. With anything else first,
    or while completing, the whole app."""
    if not args or args[0].startswith("-") or os.environ.get("_MAGENT_COMPLETE"):
        return _full()
    from typer.main import get_command_name

    name = args[0]
    module_name = next((module for module, names in _PARTS if name in names), None)
    if module_name is None:
        return _full()
    narrow = copy.copy(_root)
    narrow.registered_commands, narrow.registered_groups = [], []
    _add(narrow, module_name)
    narrow.registered_commands = [c for c in narrow.registered_commands
                                  if (c.name or get_command_name(c.callback.__name__)) == name]  # type: ignore[union-attr]
    narrow.registered_groups = [g for g in narrow.registered_groups if g.name == name]
    return narrow


def entry() -> None:
    """The ``magent`` program: the command, then an immediate exit.

    Everything magent writes is synced and closed when the command returns, so after flushing
    stdout and stderr the process skips Python's teardown (``os._exit``), which took seconds
    with litellm and mcp loaded. pydantic plugins are for a program's own models: they are off
    unless the user set ``PYDANTIC_DISABLE_PLUGINS``."""
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
        with contextlib.suppress(OSError, ValueError):  # a reader that went away, a stream already closed
            stream.flush()
    os._exit(code if isinstance(code, int) else 0)
