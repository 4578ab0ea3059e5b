"""``magent graph TARGET``: draw a workflow (or a single agent) without running it."""

from __future__ import annotations

from typing import Annotated

import typer

from magent.cli.helpfmt import examples
from magent.cli.options import Target

FORMATS = ("text", "mermaid", "json")


def register(app: typer.Typer) -> None:
    app.command("graph", epilog=examples(
        "magent graph examples/workflows/write_review.yaml",
        "magent graph publish --format mermaid > publish.md"))(graph)


def graph(
    target: Target,
    format_: Annotated[str, typer.Option("--format", metavar="FORMAT", help="text (default), mermaid (a flowchart for Markdown) or json.")] = "text",
) -> None:
    """Draw a workflow without running it.

    Nodes by kind, edges with their conditions, END, and approval gates.
    """
    from magent.api import load
    from magent.errors import UsageError

    if format_ not in FORMATS:
        raise UsageError(f"--format {format_!r} is not a format (one of: {', '.join(FORMATS)})")
    loaded = load(target).graph
    from magent.trace import diagram

    if format_ == "mermaid":
        print(diagram.mermaid(loaded), end="")
    elif format_ == "json":
        from magent.cli.output import print_json

        print_json(diagram.describe(loaded))
    else:
        from magent.render import print_lines

        print_lines(diagram.text_lines(loaded), crop=True)
