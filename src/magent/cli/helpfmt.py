"""How ``--help`` reads: arguments by their word (``ID``, ``PATH...``), and examples after the options."""

from __future__ import annotations

from typing import Any

from typer.core import TyperArgument


def examples(*lines: str) -> str:
    """An epilog of example command lines (``# comments`` allowed), kept as written."""
    label = "Example:" if len(lines) == 1 else "Examples:"
    # \b tells the help formatter not to re-wrap the paragraph that follows
    return f"{label}\n\n\b\n" + "\n".join(f"  {line}" for line in lines)


class WordArgument(TyperArgument):
    """An argument shown by its metavar alone: ``ID`` in the usage line and the list
    of arguments, ``[N]`` when optional, ``PATH...`` when it takes several."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def _word(self) -> str:
        return self.metavar or (self.name or "").upper()

    def _rich_display_name(self) -> str:
        return self._word() + ("..." if self.nargs != 1 else "")

    def _usage_display_name(self) -> str:
        word = self._rich_display_name()
        return word if self.required else f"[{word}]"


def plain_words(command: Any) -> None:
    """Give every argument of ``command`` and of its subcommands the plain display."""
    for param in getattr(command, "params", []):
        if type(param) is TyperArgument:
            param.__class__ = WordArgument
    for sub in (getattr(command, "commands", None) or {}).values():
        plain_words(sub)
