"""``magent examples``: the README's examples, listed or copied into a folder of yours."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from magent.cli.helpfmt import examples
from magent.cli.usage import CommandGroup

app = typer.Typer(cls=CommandGroup, help="List the bundled examples or copy them into a folder.", no_args_is_help=True)


@app.command("list", epilog=examples("magent examples list"))
def list_examples(
    json_out: Annotated[bool, typer.Option("--json", help="Print the examples as a JSON array.")] = False,
) -> None:
    """List the example agents, workflows and MCP files."""
    from magent.api.starting import examples, examples_folder
    from magent.cli.output import print_json

    found = examples()
    if json_out:
        print_json([{"path": e.path, "about": e.about} for e in found])
        return
    from magent import render

    print(f"examples in {examples_folder()} (copy them with: magent examples copy)")
    render.grid(["PATH", "ABOUT"], [[e.path, e.about] for e in found], flexible=1)


@app.command("copy", epilog=examples(
    "magent examples copy            # into ./examples, as the tour expects",
    "magent examples copy ~/magent-examples"))
def copy(
    dest: Annotated[Path, typer.Argument(metavar="DIR", help="Where to put them.")] = Path("examples"),
    force: Annotated[bool, typer.Option("--force", help="Overwrite files that differ from the bundled ones.")] = False,
) -> None:
    """Copy the examples into a folder (default ./examples).

    The tour (README.md, docs/tour.md) then runs from the folder above it. Files already in DIR are left alone when they are the same; a file that differs
    stops the copy (nothing is written) unless --force.
    """
    from magent.api.starting import copy_examples

    report = copy_examples(dest, force=force)
    same = f" ({len(report.unchanged)} already there)" if report.unchanged else ""
    print(f"copied {len(report.copied)} files to {dest}{same}")
    print(f"try: magent run {dest / 'workflows' / 'write_review.yaml'} -t \"Write one line of copy for Tidy\"")
