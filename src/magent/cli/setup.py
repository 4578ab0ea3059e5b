"""``magent init`` and ``magent validate``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    app.command("init")(init)
    app.command("validate")(validate)


def init() -> None:
    """Create the home layout and default config files (safe to run again)."""
    from magent import paths
    from magent.store.home import init_home

    created = init_home()
    root = paths.home()
    if created:
        for path in created:
            print(f"created {path}")
    print(f"magent home ready at {root}")


def validate(
    files: Annotated[list[Path], typer.Argument(help="Agent, workflow, MCP servers or retention policy files.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print results as JSON.")] = False,
) -> None:
    """Check config files; says which kind each is and whether it is valid. Exit 2 if any is not.

    Valid files are listed on stdout; each invalid one is one ``magent: error:`` line
    on stderr naming file:line:col and the field.
    """
    import sys

    from magent.cli.output import print_json
    from magent.config.check import check_file

    results = [check_file(path) for path in files]
    if json_out:
        print_json([r.as_dict() for r in results])
    for r in results:
        if r.ok:
            if not json_out:
                print(f"ok  {r.kind:<17} {r.path}" + (f"  ({r.summary})" if r.summary else ""))
        else:
            what = f"invalid {r.kind}: " if r.kind else ""
            print(f"magent: error: {what}{r.error}", file=sys.stderr)
    if not all(r.ok for r in results):
        raise typer.Exit(2)
