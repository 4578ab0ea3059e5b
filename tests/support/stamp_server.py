"""The ledger test server (``append``, ``nap``: see ledger_server.py) with one more tool for
batches: ``stamp(label)`` appends ``PID PPID LABEL`` to ``$LEDGER``, so a test can count the
server processes that served a batch's rows, and the processes that started them."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ledger_server  # noqa: E402


def stamp(label: str) -> str:
    ledger_server._write(f"{os.getpid()} {os.getppid()} {label}")
    return f"stamped {label}"


ledger_server.TOOLS.append(ledger_server.tool_schema(
    "stamp", "Note a label, with this server's pid, in the ledger.", "label", "string", idempotent=None))
ledger_server.TEXT_TOOLS["stamp"] = ("label", stamp)

if __name__ == "__main__":
    ledger_server.main()
