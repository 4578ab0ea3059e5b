"""The ledger test server (``append``, ``nap``: see ledger_server.py) with one more tool for
batches: ``stamp(label)`` appends ``PID PPID LABEL`` to ``$LEDGER``, so a test can count the
server processes that served a batch's rows, and the processes that started them."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ledger_server import _write, server  # noqa: E402


@server.tool(description="Note a label, with this server's pid, in the ledger.")
def stamp(label: str) -> str:
    _write(f"{os.getpid()} {os.getppid()} {label}")
    return f"stamped {label}"


if __name__ == "__main__":
    server.run("stdio")
    os._exit(0)  # served: skip Python's teardown of the mcp SDK (as tests/servers/toolbox.py does)
