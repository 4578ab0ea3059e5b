"""Command-line mistakes in magent's own words: an unknown command or option, a missing argument."""

from __future__ import annotations

import difflib
from typing import Any

from typer.core import TyperGroup


class CommandGroup(TyperGroup):
    """A command group (``cls=`` of every ``typer.Typer``) that names an unknown command itself."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            known = self.list_commands(ctx)
            close = difflib.get_close_matches(name, known, n=1)
            ctx.fail(f"unknown command {name!r}; " + (f"did you mean {close[0]!r}?" if close
                                                       else f"commands: {', '.join(known)}"))
        return super().resolve_command(ctx, args)


def usage_message(exc: Any) -> str:
    """What a command-line parser's error says, in magent's words where magent has them."""
    kind = type(exc).__name__
    param = getattr(exc, "param", None)
    if kind == "NoSuchOption":
        close = getattr(exc, "possibilities", None)
        return f"unknown option {exc.option_name}" + (f"; did you mean {close[0]}?" if close else "")
    if kind == "MissingParameter" and param is not None:
        if param.param_type_name == "argument":
            return f"{param.metavar or param.name.upper()} is missing"
        return f"option {param.opts[0]} is missing"
    return str(exc.format_message()).rstrip(".")
