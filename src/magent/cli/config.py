"""``magent config``: the effective settings and where each one comes from; the home's path."""

from __future__ import annotations

from typing import Annotated

import typer

from magent.cli.helpfmt import examples
from magent.cli.usage import CommandGroup

app = typer.Typer(cls=CommandGroup, help="Show the settings in force, and where each comes from.", no_args_is_help=True)


@app.command("show", epilog=examples("magent config show", "MAGENT_MODEL=ollama/llama3.2 magent config show --json"))
def show(
    json_out: Annotated[bool, typer.Option("--json", help="Print the settings as a JSON array.")] = False,
) -> None:
    """Show every setting in force and where its value came from.

    The home, the default model and endpoint, retention, the config files. Each setting says where its value came from: an environment variable, a file under
    the home's config/, or magent's built-in default.
    """
    from magent.cli.output import print_json
    from magent.config.settings import effective_settings

    settings = effective_settings()
    if json_out:
        print_json([s.as_dict() for s in settings])
        return
    from magent import render

    render.grid(["SETTING", "VALUE", "FROM"], [[s.name, s.shown, s.source] for s in settings], flexible=1)


@app.command("path", epilog=examples("magent config path", "ls \"$(magent config path)\"/tasks"))
def path() -> None:
    """Print the home folder (MAGENT_HOME, default ~/.multi-agent)."""
    from magent import paths

    print(paths.home())
