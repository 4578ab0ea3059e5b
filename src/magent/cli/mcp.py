"""``magent mcp``: the configured MCP servers and whether each answers."""

from __future__ import annotations

from typing import Annotated, List, Optional

import typer

from magent.cli.helpfmt import examples
from magent.cli.options import McpFiles
from magent.cli.usage import CommandGroup

app = typer.Typer(cls=CommandGroup, help="Inspect the configured MCP servers, or serve magent as one.", no_args_is_help=True)

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
    from magent.tools.mcp_login import LoginState

    rows = [[s.name, s.transport, s.target,
             f"ok: {s.tools} tool(s) in {s.seconds:.1f}s" if s.ok else f"not answering: {s.error}",
             LoginState(**s.login).describe() if s.login else "-"]
            for s in statuses]
    from magent.tools.catalog import format_table

    print(format_table(["NAME", "TRANSPORT", "TARGET", "STATUS", "LOGIN"], rows, max_width=200))


@app.command("login", epilog=examples("magent mcp login linear", "magent mcp login docs --mcp team.yaml"))
def login(
    server: Annotated[str, typer.Argument(metavar="SERVER", help="The HTTP MCP server to log in to.")],
    mcp: McpFiles = None,
) -> None:
    """Log in to an HTTP MCP server that asks for OAuth.

    Opens the server's login page in your browser (BROWSER chooses it; the address is
    printed too) and waits on 127.0.0.1 for its answer. The token is kept in the home
    (auth/SERVER.json, readable by you alone) and renewed without asking while it can
    be; a run that paused for this login goes on with: magent resume ID.
    """
    from magent.api.tooling import mcp_login

    state = mcp_login(server, mcp=mcp or [])
    print(f"logged in to {server}: {state.tools} tool(s); {state.describe()}")


@app.command("logout", epilog=examples("magent mcp logout linear"))
def logout(
    server: Annotated[str, typer.Argument(metavar="SERVER", help="The HTTP MCP server to log out of.")],
    mcp: McpFiles = None,
) -> None:
    """Forget the login to an HTTP MCP server.

    Removes its tokens and the client magent registered with its authorization server.
    """
    from magent.api.tooling import mcp_logout

    had = mcp_logout(server, mcp=mcp or [])
    print(f"logged out of {server}" if had else f"{server}: was not logged in")


@app.command("serve", epilog=examples(
    "magent mcp serve examples/workflows/write_review.yaml",
    "magent mcp serve          # everything installed in the home",
    "magent mcp serve --transport streamable-http --port 8765"))
def serve(
    targets: Annotated[Optional[List[str]], typer.Argument(
        metavar="TARGET", help="Workflow or agent files, or names installed in the home "
                                    "(default: every one installed).", show_default=False)] = None,
    transport: Annotated[str, typer.Option("--transport", metavar="MODE", help="stdio or streamable-http.")] = "stdio",
    host: Annotated[Optional[str], typer.Option(
        "--host", metavar="HOST", show_default=False,
        help="Address to listen on (streamable-http; default 127.0.0.1); off the loopback, clients need a "
             "bearer token.")] = None,
    port: Annotated[Optional[int], typer.Option("--port", metavar="PORT", show_default=False,
                                                help="Port to listen on (streamable-http; default 8765).")] = None,
    wait_seconds: Annotated[float, typer.Option(
        "--wait-seconds", metavar="SECONDS", help="How long a call waits for its task's answer before returning the task "
                               "id (the task runs on).")] = 60.0,
) -> None:
    """Serve workflows and agents to MCP clients as tools.

    Each call starts an ordinary task in the home, which survives a crash and
    can be continued from the terminal. Besides one tool per workflow or agent, clients get tasks_list, task_status, resume,
    chat and trace, and each task's trace and result as resources
    (magent://tasks/ID/trace, magent://tasks/ID/result). Over streamable HTTP the server
    listens on 127.0.0.1 unless --host says otherwise; then clients must send the bearer
    token from MAGENT_MCP_TOKEN (or the one printed to stderr at start).
    """
    from magent.mcpserve.server import serve as run_server

    run_server(list(targets or []), transport=transport, host=host, port=port, wait_seconds=wait_seconds)
