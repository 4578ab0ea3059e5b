"""``magent mcp``: the configured MCP servers and whether each answers."""

from __future__ import annotations

from typing import Annotated

import typer

from magent.cli.helpfmt import examples
from magent.cli.options import McpFiles

app = typer.Typer(help="Inspect the configured MCP servers.", no_args_is_help=True)



@app.command("list", epilog=examples("magent mcp list", "magent mcp list --mcp examples/mcp/time.yaml --json"))
def list_servers(
    json_out: Annotated[bool, typer.Option("--json", help="Print the servers as a JSON array.")] = False,
    mcp: McpFiles = None,
) -> None:
    """List the MCP servers and whether each one answers.

    Shows name, transport, command or URL; each server is started, asked for its
    tools, and stopped.
    """
    from magent.api.tooling import mcp_servers
    from magent.cli.output import print_json

    statuses = mcp_servers(mcp=mcp or [])
    if json_out:
        print_json([s.to_dict() for s in statuses])
        return
    if not statuses:
        print("no MCP servers configured: add them to config/mcp_servers.yaml in the home, "
              "or pass --mcp FILE")
        return
    rows = [[s.name, s.transport, s.target,
             f"ok: {s.tools} tool(s) in {s.seconds:.1f}s" if s.ok else f"not answering: {s.error}"]
            for s in statuses]
    from magent.tools.catalog import format_table

    print(format_table(["NAME", "TRANSPORT", "TARGET", "STATUS"], rows, max_width=200))
