"""``magent tools``: list the tools the configured servers offer, and call one directly."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from magent.cli.helpfmt import examples
from magent.cli.options import McpFiles
from magent.cli.usage import CommandGroup

app = typer.Typer(cls=CommandGroup, help="List tools and call one directly.", no_args_is_help=True)



@app.command("list", epilog=examples(
    "magent tools list",
    "magent tools list --server time --mcp examples/mcp/time.yaml"))
def list_tools(
    server: Annotated[Optional[str], typer.Option("--server", "-s", metavar="NAME", help="Only this server's tools.")] = None,
    json_out: Annotated[bool, typer.Option(
        "--json", help='Print {"tools": [...], "failed": {server: why}} as JSON.')] = False,
    mcp: McpFiles = None,
) -> None:
    """List the tools agents can use, with descriptions and arguments.

    Tools are named server.tool; a * marks a required argument. Exit 0 when every
    listed server started, 4 when one did not (a warning says why; the other
    servers' tools are still listed).
    """
    from magent.api import tooling
    from magent.cli.output import print_json, warn
    from magent.errors import EXIT_SERVERS_DOWN
    from magent.tools import catalog

    listed = tooling.list_tools(server, mcp=mcp or [])
    tools = listed.tools
    for problem in listed.problems:
        warn(problem)
    if json_out:
        print_json({"tools": [catalog.tool_dict(t) for t in tools], "failed": listed.failed})
    elif not tools:
        print("no tools" + (f" on {server}" if server else ""))
    else:
        from magent import render

        rows = [[t.full_name, t.description.split("\n")[0], catalog.schema_summary(t.input_schema)] for t in tools]
        render.grid(["TOOL", "DESCRIPTION", "ARGUMENTS"], rows, flexible=[1, 2])
    if listed.failed:
        raise typer.Exit(EXIT_SERVERS_DOWN)


@app.command("call", epilog=examples(
    "magent tools call kv.get --args '{\"key\": \"meeting\"}'",
    "magent tools call time.get_current_time -a '{\"timezone\": \"Asia/Tokyo\"}' \\",
    "    --mcp examples/mcp/time.yaml"))
def call(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The tool, as server.tool.")],
    args: Annotated[str, typer.Option("--args", "-a", metavar="JSON", help="Arguments as a JSON object.")] = "{}",
    json_out: Annotated[bool, typer.Option("--json", help="Print the whole result as JSON.")] = False,
    elicitation: Annotated[str, typer.Option(
        "--elicitation", metavar="ANSWER", help="A question the server asks during the call, when no one is asked "
        "at the terminal: decline, cancel, or defaults (accept its form's defaults).")] = "decline",
    no_input: Annotated[bool, typer.Option("--no-input", help="Never ask at the terminal.")] = False,
    mcp: McpFiles = None,
) -> None:
    """Run one tool directly and print its result.

    Exit 0 on success, 1 otherwise (the outcome and error on stderr). A question the
    server asks during the call is asked at the terminal, else answered per --elicitation.
    """
    from magent.api.tooling import call_tool
    from magent.cli.output import print_json
    from magent.cli.runtime import asking
    from magent.errors import EXIT_FAILED
    from magent.tools.catalog import parse_args_json

    with asking(not no_input and not json_out):
        result = call_tool(name, parse_args_json(args), mcp=mcp or [], elicitation=elicitation)
    if json_out:
        print_json({"tool": result.tool, "outcome": result.outcome, "content": result.content,
                    "data": result.data, "error": result.error, "duration_ms": result.duration_ms,
                    "notes": result.notes})
    elif result.ok:
        sys.stdout.write(result.content + ("" if result.content.endswith("\n") else "\n"))
    else:
        print(f"magent: {result.outcome}: {result.content}", file=sys.stderr)
    for note in result.notes if not json_out else []:
        print(f"magent: note: {note}", file=sys.stderr)
    if not result.ok:
        raise typer.Exit(EXIT_FAILED)
