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
        if exc.option_name[1:].isdigit():  # '-1' where a number goes: it reads as an option
            return f"unknown option {exc.option_name} (no value here is a negative number)"
        close = getattr(exc, "possibilities", None)
        return f"unknown option {exc.option_name}" + (f"; did you mean {close[0]}?" if close else "")
    if kind == "MissingParameter" and param is not None:
        if param.param_type_name == "argument":
            return f"{param.metavar or param.name.upper()} is missing"
        return f"option {param.opts[0]} is missing"
    if kind == "BadParameter" and param is not None and (wrong := _wrong_type(exc.__cause__)):
        name = param.opts[0] if param.param_type_name == "option" else param.metavar or param.name.upper()
        return f"{name}: {wrong}"
    return str(exc.format_message()).rstrip(".")


def _wrong_type(cause: Any) -> str | None:
    """``expected a whole number, got 'abc'`` when the parser's check of a value's type or
    bounds said it in pydantic's words (a ``ValidationError`` of a kind magent names)."""
    from pydantic import ValidationError

    from magent.config.validate import expected_words

    if not isinstance(cause, ValidationError) or not cause.errors():
        return None
    error = cause.errors()[0]
    if error["type"] == "value_error":  # a check of magent's own: its words
        return str(error["ctx"]["error"]).rstrip(".")
    should = expected_words(error)
    return None if should is None else f"expected {should}, got {error.get('input')!r}"
