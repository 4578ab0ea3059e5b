"""``magent new agent|workflow NAME``: a commented, valid file to start from."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from magent.cli.helpfmt import examples
from magent.cli.usage import CommandGroup

app = typer.Typer(cls=CommandGroup, help="Write a commented starting file for an agent or a workflow.", no_args_is_help=True)

Name = Annotated[str, typer.Argument(metavar="NAME", help="Its name (lowercase, digits, _); the file is NAME.yaml.")]
Folder = Annotated[Path, typer.Option("--dir", "-d", metavar="DIR", help="Where to write it.")]
Model = Annotated[Optional[str], typer.Option(
    "--model", metavar="MODEL", help="The litellm model string to put in (default: the default model if one "
                                     "is set, else openai/gpt-4o-mini).")]
Force = Annotated[bool, typer.Option("--force", help="Replace the file if it exists.")]


def _done(path: Path, kind: str) -> None:
    print(f"wrote {path}")
    print(f"next: magent validate {path} && magent run {path} -t \"...\"")
    if kind == "agent":
        print(f"      or use it in a workflow node: {{type: agent, agent: {path.stem}}}")


@app.command("agent", epilog=examples(
    "magent new agent support_bot",
    "magent new agent helper --model ollama/llama3.2 --dir agents"))
def agent(name: Name, folder: Folder = Path("."), model: Model = None, force: Force = False) -> None:
    """Write NAME.yaml: an agent with every field explained.

    It validates as written; edit the role, prompt, tools and model to taste.
    """
    from magent.api.starting import new_agent

    _done(new_agent(name, folder=folder, model=model, force=force), "agent")


@app.command("workflow", epilog=examples(
    "magent new workflow answer_review",
    "magent new workflow triage --dir workflows"))
def workflow(name: Name, folder: Folder = Path("."), model: Model = None, force: Force = False) -> None:
    """Write NAME.yaml: a draft-and-review workflow, fields explained.

    A writer drafts, a critic sends it back until it passes; commented nodes show a
    human step and a tool call. It validates as written.
    """
    from magent.api.starting import new_workflow

    _done(new_workflow(name, folder=folder, model=model, force=force), "workflow")
