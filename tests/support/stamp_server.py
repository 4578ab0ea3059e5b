"""The ledger test server's tools (``append``, ``nap``: see ledger_server.py) on the Python MCP
SDK's server, with one more tool for batches: ``stamp(label)`` appends ``PID PPID LABEL`` to
``$LEDGER``, so a test can count the server processes that served a batch's rows, and the
processes that started them."""

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


@server.tool(description="Note a label, with this server's pid, in the ledger.")
def stamp(label: str) -> str:
    _write(f"{os.getpid()} {os.getppid()} {label}")
    return f"stamped {label}"


if __name__ == "__main__":
    server.run("stdio")
    os._exit(0)  # served: skip Python's teardown of the mcp SDK (as tests/servers/toolbox.py does)
