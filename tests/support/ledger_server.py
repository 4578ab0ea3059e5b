"""A test MCP server (stdio) whose tools leave marks outside magent, so tests can count runs.

``append(line)`` adds a line to the file named by ``$LEDGER`` (not idempotent);
``nap(seconds)`` sleeps, then appends ``nap`` to the ledger (not idempotent); it wakes
early once the file named by ``$LEDGER_WAKE`` exists, so a test can hold a run inside
the call for as long as it needs and no longer.
"""

from __future__ import annotations

import asyncio
import os

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("ledger", log_level="WARNING")


def _write(line: str) -> None:
    with open(os.environ["LEDGER"], "a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


@server.tool(description="Append a line to the ledger.", annotations=ToolAnnotations(idempotentHint=False))
def append(line: str) -> str:
    _write(line)
    return f"appended {line}"


@server.tool(description="Sleep, then note it in the ledger.", annotations=ToolAnnotations(idempotentHint=False))
async def nap(seconds: float) -> str:
    wake = os.environ.get("LEDGER_WAKE")
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline and not (wake and os.path.exists(wake)):
        await asyncio.sleep(0.02)
    _write("nap")
    return f"slept {seconds}"


if __name__ == "__main__":
    server.run("stdio")
    os._exit(0)  # served: skip Python's teardown of the mcp SDK (as tests/servers/toolbox.py does)
