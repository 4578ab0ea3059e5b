"""``magent init`` and ``magent validate``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


from magent.cli.helpfmt import examples


def register(app: typer.Typer) -> None:
    app.command("init", epilog=examples(
        "magent init",
        "MAGENT_HOME=~/magent-test magent init     # a second, separate home"))(init)
    app.command("validate", epilog=examples(
        "magent validate examples/agents/*.yaml examples/workflows/*.yaml",
        "magent validate my_agent.yaml --json",
        "magent validate my_agent.yaml --servers   # names against live tool lists"))(validate)


def init() -> None:
    """Create the home folder and its default config files.

    Safe to run again: files that are already there (your edits) are kept.
    """
    from magent.api.starting import init as make_home

    home = make_home()
    for path in home.created:
        print(f"created {path}")
    print(f"magent home ready at {home.root}")


def validate(
    files: Annotated[list[Path], typer.Argument(metavar="FILE", help="Agent, workflow, MCP servers or retention policy files.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print results as JSON.")] = False,
    servers: Annotated[bool, typer.Option(
        "--servers", help="Start the MCP servers the agents use and check tool names against "
                          "their live tool lists.")] = False,
) -> None:
    """Check agent, workflow, MCP and retention files.

    Nothing runs. Says which kind each file is and whether it is valid; exit 2 if any is not.
    Valid files are listed on stdout; each error in an invalid one is a "magent: error:"
    line on stderr naming file:line:col and the field. Tool names are checked against the
    built-in tools and the configured servers (with --servers, their live tool lists).
    """
    import sys

    from magent.api.inspection import validate as check
    from magent.cli.output import print_json

    results = check(*files, servers=servers)
    if json_out:
        print_json([r.as_dict() for r in results])
    for r in results:
        if r.ok:
            if not json_out:
                print(f"ok  {r.kind:<17} {r.path}" + (f"  ({r.summary})" if r.summary else ""))
        else:
            what = f"invalid {r.kind}: " if r.kind else ""
            for error in r.errors or [r.error]:
                print(f"magent: error: {what}{error}", file=sys.stderr)
    if not all(r.ok for r in results):
        raise typer.Exit(2)
