"""Command-line options and arguments shared by several commands, and their shell completion."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

McpFiles = Annotated[Optional[List[Path]], typer.Option(
    "--mcp", metavar="FILE", help="An extra MCP servers file (repeatable); later files override servers "
                                  "of the same name from the home's config/mcp_servers.yaml.")]


def complete_task_id(incomplete: str) -> list[tuple[str, str]]:
    """Task ids starting with what was typed, newest first, each with its description."""
    from magent.store.listing import list_rows

    try:
        rows = list_rows()
    except Exception:  # completion must never fail loudly (e.g. a home that is not there)
        return []
    return [(r.id, f"{r.status}: {r.description[:60]}") for r in rows if r.id.startswith(incomplete.lower())]


def complete_target(incomplete: str) -> list[str]:
    """Workflow and agent names installed under the home; none matching lets the shell offer files."""
    from magent import paths

    names = set()
    for folder in (paths.workflows_dir(), paths.agents_dir()):
        try:
            names.update(p.stem for p in folder.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
        except OSError:
            continue
    return sorted(n for n in names if n.startswith(incomplete))


TaskId = Annotated[str, typer.Argument(metavar="ID", help="Task id or unique prefix.",
                                       autocompletion=complete_task_id)]
Target = Annotated[str, typer.Argument(
    metavar="TARGET", help="A workflow or agent YAML file, or the name of one installed under the home.",
    autocompletion=complete_target)]
