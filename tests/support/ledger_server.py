"""A test MCP server (stdio) whose tools leave marks outside magent, so tests can count runs.

``append(line)`` adds a line to the file named by ``$LEDGER`` (not idempotent);
``nap(seconds)`` sleeps, then appends ``nap`` to the ledger (not idempotent); it wakes
early once the file named by ``$LEDGER_WAKE`` exists, so a test can hold a run inside
the call for as long as it needs and no longer.

It speaks MCP's JSON-RPC over stdio with the standard library only, as a server written
without the Python SDK does: the crash tests start hundreds of these, and importing the
SDK (its client, server and both protocol versions) was about 0.6 s of CPU per start, most
of the crash tests' CPU. What magent sees is what the SDK's server sent for the same calls
(the initialize result, the tool list with its annotations and output schemas, text and
structured results, errors as results, -32601 for an unknown method); stamp_server.py adds
a tool. As the SDK's server
does, calls run concurrently, a cancelled call ends without a mark or a reply, and the end
of stdin ends the server at once, a call in flight with it (no mark). The SDK's own
servers stay under test elsewhere: tests/servers/toolbox.py (stdio, SSE, streamable HTTP)
and mcp-server-time.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any, Callable

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
_out = threading.Lock()
_cancelled: dict[Any, threading.Event] = {}


def tool_schema(name: str, description: str, arg: str, arg_type: str, *, idempotent: bool | None = False
                ) -> dict[str, Any]:
    """A tool of one required argument returning text, listed as the SDK's server lists it."""
    return {
        **({"annotations": {"idempotentHint": idempotent}} if idempotent is not None else {}),
        "description": description,
        "inputSchema": {"properties": {arg: {"title": arg.title(), "type": arg_type}}, "required": [arg],
                        "type": "object", "title": f"{name}Arguments"},
        "name": name,
        "outputSchema": {"properties": {"result": {"title": "Result", "type": "string"}}, "required": ["result"],
                         "type": "object", "title": f"{name}Output"},
    }


TOOLS = [tool_schema("append", "Append a line to the ledger.", "line", "string"),
         tool_schema("nap", "Sleep, then note it in the ledger.", "seconds", "number")]


def _send(message: dict[str, Any]) -> None:
    data = json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":")) + "\n"
    with _out:
        sys.stdout.write(data)
        sys.stdout.flush()


def _write(line: str) -> None:
    with open(os.environ["LEDGER"], "a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def _text(text: str, error: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"text": text, "type": "text"}], "isError": error}
    if not error:
        result["structuredContent"] = {"result": text}
    return result


def _append(line: str) -> str:
    _write(line)
    return f"appended {line}"


# Tools of one string argument, run as they are called: name -> (argument, function).
TEXT_TOOLS: dict[str, tuple[str, Callable[[str], str]]] = {"append": ("line", _append)}


def _nap(rid: Any, seconds: float, cancelled: threading.Event) -> None:
    wake = os.environ.get("LEDGER_WAKE")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not (wake and os.path.exists(wake)):
        if cancelled.wait(0.02):
            return                                     # cancelled: no mark, no reply
    if cancelled.is_set():
        return
    _write("nap")
    _cancelled.pop(rid, None)
    _send({"id": rid, "result": _text(f"slept {seconds}")})


def _call(rid: Any, params: dict[str, Any]) -> None:
    name, args = params.get("name"), params.get("arguments") or {}
    if name in TEXT_TOOLS:
        arg, run = TEXT_TOOLS[name]
        if not isinstance(args.get(arg), str):
            _send({"id": rid, "result": _text(f"Error executing tool {name}: argument '{arg}' must be a string", True)})
            return
        _send({"id": rid, "result": _text(run(args[arg]))})
    elif name == "nap":
        seconds = args.get("seconds")
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
            _send({"id": rid, "result": _text("Error executing tool nap: argument 'seconds' must be a number", True)})
            return
        event = _cancelled.setdefault(rid, threading.Event())
        threading.Thread(target=_nap, args=(rid, float(seconds), event), daemon=True).start()
    else:
        _send({"id": rid, "result": _text(f"Unknown tool: {name}", True)})


def _handle(message: dict[str, Any]) -> None:
    method, rid, params = message.get("method"), message.get("id"), message.get("params") or {}
    if method is None:
        return                                         # a response to us: this server asks nothing
    if rid is None:                                    # a notification
        if method == "notifications/cancelled":
            _cancelled.setdefault(params.get("requestId"), threading.Event()).set()
        return
    if method == "initialize":
        asked = params.get("protocolVersion")
        _send({"id": rid, "result": {
            "capabilities": {"prompts": {"listChanged": False},
                             "resources": {"listChanged": False, "subscribe": False},
                             "tools": {"listChanged": False}},
            "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0],
            "serverInfo": {"name": "ledger", "version": ""}}})
    elif method == "ping":
        _send({"id": rid, "result": {}})
    elif method == "tools/list":
        _send({"id": rid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        _call(rid, params)
    elif method in ("prompts/list", "resources/list", "resources/templates/list"):
        key = {"prompts/list": "prompts", "resources/list": "resources"}.get(method, "resourceTemplates")
        _send({"id": rid, "result": {key: []}})
    else:
        _send({"id": rid, "error": {"code": -32601, "message": "Method not found", "data": method}})


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            _send({"id": None, "error": {"code": -32700, "message": "Parse error"}})
            continue
        _handle(message)
    os._exit(0)   # stdin closed: the client is gone; a call in flight ends with the server, unmarked


if __name__ == "__main__":
    main()
