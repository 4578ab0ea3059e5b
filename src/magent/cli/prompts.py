"""``magent prompts``: the prompt store, named and versioned templates under ``$MAGENT_HOME/prompts/``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from magent.cli.helpfmt import examples
from magent.cli.usage import CommandGroup

app = typer.Typer(
    cls=CommandGroup,
    help="List, show and add named, versioned prompt templates.\n\n"
         "An agent uses one with system_prompt: {prompt: NAME, version: V} (a workflow node with "
         "prompt: {prompt: NAME, version: V}). Each version is prompts/NAME/VERSION.yaml with text: "
         "and an optional description:, and is never changed once written.",
    no_args_is_help=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


@app.command("list", epilog=examples("magent prompts list", "magent prompts list --json"))
def list_prompts(json_out: JsonOpt = False) -> None:
    """List stored prompts, their versions and the values they need.

    One line per name: its versions, and the latest one's description and required values."""
    from magent.api.prompting import prompts, prompts_folder
    from magent.cli.output import print_json
    from magent.tools.catalog import format_table

    items = [p.as_dict(text=False) for p in prompts()]
    if json_out:
        print_json(items)
        return
    if not items:
        print(f"no stored prompts in {prompts_folder()} (magent prompts add NAME --version 1 --file F adds one)")
        return
    rows = [[i["name"], ", ".join(i["versions"]), ", ".join(i["required"]) or "-", i["description"] or ""]
            for i in items]
    print(format_table(["NAME", "VERSIONS", "NEEDS (--set)", "DESCRIPTION"], rows, 60))


@app.command("show", epilog=examples("magent prompts show triage", "magent prompts show triage --version 1 --json"))
def show(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The prompt's name.")],
    version: Annotated[Optional[str], typer.Option("--version", "-v", metavar="V",
                                                  help="This version (default: the latest).")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Show one version of a stored prompt: its text and the values it needs."""
    from magent.api.prompting import prompt
    from magent.cli.output import print_json

    template = prompt(name, version)
    if json_out:
        print_json(template.as_dict())
        return
    print(f"{template.name} version {template.version}" + (f" · {template.description}" if template.description else ""))
    if template.required:
        print(f"needs: {', '.join('metadata.' + k for k in template.required)} (give with --set KEY=VALUE)")
    print(f"file: {template.path}")
    print()
    sys.stdout.write(template.text if template.text.endswith("\n") else template.text + "\n")


@app.command("add", epilog=examples(
    "magent prompts add triage --version 1 --file triage.txt",
    "magent prompts add triage -v 2 -f triage.txt -d 'Shorter'",
    "echo 'About {{ metadata.product }}.' | magent prompts add triage -v 3"))
def add(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The prompt's name (lowercase, digits, - and _).")],
    version: Annotated[str, typer.Option("--version", "-v", metavar="V", help="The new version (1, 2, 2024-06...).")],
    file: Annotated[Optional[Path], typer.Option("--file", "-f", metavar="FILE",
                                                 help="Read the text from FILE (default: standard input).")] = None,
    description: Annotated[str, typer.Option("--description", "-d", metavar="TEXT",
                                             help="One line on what it is for.")] = "",
) -> None:
    """Store a new version of a prompt.

    An existing version is never replaced: add a new one instead."""
    from magent.api.prompting import add_prompt

    if file is not None:
        template = add_prompt(name, version, file=file, description=description)
    else:
        template = add_prompt(name, version, sys.stdin.read(), description=description)
    print(f"stored {template.name} version {template.version} ({template.path})")
