"""A test MCP server built with the mcp SDK: ``python toolbox.py [stdio|sse|streamable_http] [PORT]``.

Tools: ``echo``, ``add``, ``slow`` (sleeps), ``pid`` (its process id), ``cwd``,
``chatty`` (logs a message per part), ``fail`` (an MCP ``isError`` result), ``crash`` (the process exits), ``hang``
(never returns), ``huge`` (about a megabyte of text), ``writes`` (not
idempotent), ``whoami`` (the request's Authorization header), ``env_sha``
(hash of an environment variable), ``stamp`` (the wall-clock time it ran),
``customer`` (a made-up customer record full of personal data, for guardrails),
``pick`` (takes an integer ``value``, or a string when ``TOOLBOX_PICK_FILE`` names a file
holding ``string``, read at each start) and ``retype`` (``pick`` takes a string from then on,
and the server says so with ``notifications/tools/list_changed``).

Environment knobs, so tests can make misbehaving servers from one script:
``TOOLBOX_START_DELAY`` seconds to sleep before serving; ``TOOLBOX_MEET``
``DIR:N`` waits before serving until N servers given the same DIR have started
(exits with an error after 20 s alone); ``TOOLBOX_STDERR``
a line written to stderr at start; ``TOOLBOX_DESCRIBE`` replaces ``echo``'s
description (to test definition pinning), or ``TOOLBOX_DESCRIBE_FILE`` names a
file holding it (read at each start); ``TOOLBOX_PIDFILE`` where to write
the pid at start; ``TOOLBOX_CHILD_PIDFILE`` starts a helper child (a long
sleep that never reads stdin, like a server that forks a worker) and adds its
pid there (a line per start); ``TOOLBOX_IGNORE_TERM`` makes the server ignore SIGTERM (only SIGKILL
ends it); ``TOOLBOX_EXIT`` exits at once with that code (after the stderr line);
``TOOLBOX_WAKE`` a file whose existence ends ``slow`` early
(so a test holds a run inside a call exactly as long as it needs).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
import time

# The start-up knobs act before the (slow) mcp import, so their timing does not depend on it.
if __name__ == "__main__":
    if os.environ.get("TOOLBOX_PIDFILE"):
        with open(os.environ["TOOLBOX_PIDFILE"], "w") as f:
            f.write(str(os.getpid()))
    if os.environ.get("TOOLBOX_IGNORE_TERM"):
        import signal

        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.environ.get("TOOLBOX_CHILD_PIDFILE"):
        import subprocess

        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        with open(os.environ["TOOLBOX_CHILD_PIDFILE"], "a") as f:
            f.write(f"{helper.pid}\n")
    if os.environ.get("TOOLBOX_STDERR"):
        print(os.environ["TOOLBOX_STDERR"], file=sys.stderr, flush=True)
    if os.environ.get("TOOLBOX_EXIT"):
        sys.exit(int(os.environ["TOOLBOX_EXIT"]))
    if float(os.environ.get("TOOLBOX_START_DELAY", "0")):
        time.sleep(float(os.environ["TOOLBOX_START_DELAY"]))
    if os.environ.get("TOOLBOX_MEET"):
        meet_dir, _, count = os.environ["TOOLBOX_MEET"].rpartition(":")
        open(os.path.join(meet_dir, str(os.getpid())), "w").close()
        waited_until = time.monotonic() + 20
        while len(os.listdir(meet_dir)) < int(count):
            if time.monotonic() > waited_until:
                sys.exit(f"toolbox: started alone ({len(os.listdir(meet_dir))} of {count} servers)")
            time.sleep(0.02)

from mcp.server.mcpserver import Context, MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402
from mcp_types import ToolAnnotations  # noqa: E402

server = MCPServer("toolbox", log_level="WARNING")


def _echo_description() -> str:
    path = os.environ.get("TOOLBOX_DESCRIBE_FILE")
    if path and os.path.exists(path):
        with open(path) as f:
            return f.read().strip()
    return os.environ.get("TOOLBOX_DESCRIBE", "Return the text unchanged.")


@server.tool(description=_echo_description(),
             annotations=ToolAnnotations(idempotentHint=True, readOnlyHint=True))
def echo(text: str) -> str:
    return text


@server.tool(description="Add two integers.", annotations=ToolAnnotations(idempotentHint=True))
def add(a: int, b: int) -> int:
    return a + b


@server.tool(description="Sleep for some seconds, then say so.")
async def slow(seconds: float = 0.5) -> str:
    wake = os.environ.get("TOOLBOX_WAKE")
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline and not (wake and os.path.exists(wake)):
        await asyncio.sleep(0.02)
    return f"slept {seconds}"


@server.tool(description="Take some steps, reporting progress after each.")
async def steps(count: int, ctx: Context) -> str:
    for i in range(1, count + 1):
        await asyncio.sleep(0.3)
        await ctx.report_progress(i, count, f"step {i} done")
    return f"took {count} steps"


@server.tool(description="Do some work, logging a message after each part.")
async def chatty(count: int, ctx: Context) -> str:
    for i in range(1, count + 1):
        await asyncio.sleep(0.3)
        await ctx.info(f"part {i} of {count} done")
    return f"did {count} parts"


@server.tool(description="The server's process id.")
def pid() -> int:
    return os.getpid()


@server.tool(description="The server's working directory.")
def cwd() -> str:
    return os.getcwd()


@server.tool(description="Always fails (an MCP error result).")
def fail(reason: str = "it went wrong") -> str:
    raise ToolError(reason)


@server.tool(description="Exit the server process at once.")
def crash() -> str:
    print("toolbox: crashing on request", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool(description="Never return.")
async def hang() -> str:
    while True:
        await asyncio.sleep(3600)


@server.tool(description="Return a lot of text.")
def huge(size: int = 1_000_000) -> str:
    line = "0123456789abcdefghijklmnopqrstuvwxyz" * 2 + "\n"
    return (line * (size // len(line) + 1))[:size]


@server.tool(description="Record a write (not idempotent).", annotations=ToolAnnotations(idempotentHint=False))
def writes(value: str) -> str:
    return f"wrote {value}"


@server.tool(description="The Authorization header of the HTTP request (empty over stdio).")
def whoami(ctx: Context) -> str:
    request = getattr(ctx.request_context, "request", None)
    headers = getattr(request, "headers", None)
    return (headers.get("authorization") if headers is not None else None) or ""


@server.tool(description="sha256 of an environment variable's value (to check it arrived, unseen).")
def env_sha(name: str) -> str:
    return hashlib.sha256(os.environ.get(name, "").encode()).hexdigest()


@server.tool(description="The wall-clock time (time.time()) at which this call ran.",
             annotations=ToolAnnotations(idempotentHint=True))
def stamp(label: str = "") -> str:
    return f"{label} {time.time():.6f}".strip()


@server.tool(description="Look up a customer record (made-up personal data).",
             annotations=ToolAnnotations(idempotentHint=True, readOnlyHint=True))
def customer(id: int, notes: int = 0) -> str:
    record = (f"Customer {id}: Jane Roe, jane.roe@example.com, +44 20 7946 0958, "
              "card 4111 1111 1111 1111, SSN 123-45-6789.")
    return record + ("\nNote: " + "nothing to add. " * notes if notes else "")


def _pick_number(value: int) -> str:
    return f"picked {value!r}"


def _pick_word(value: str) -> str:
    return f"picked {value!r}"


def _pick_takes_words() -> bool:
    path = os.environ.get("TOOLBOX_PICK_FILE")
    if not path or not os.path.exists(path):
        return False
    with open(path) as f:
        return f.read().strip() == "string"


server.add_tool(_pick_word if _pick_takes_words() else _pick_number, name="pick", description="Pick a value.")


@server.tool(description="From now on pick takes a string (the server says its tools changed).")
async def retype(ctx: Context) -> str:
    server.remove_tool("pick")
    server.add_tool(_pick_word, name="pick", description="Pick a value.")
    await ctx.session.send_tool_list_changed()
    return "pick takes a string now"


def main() -> None:
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    if transport == "stdio":
        server.run("stdio")
    elif transport == "sse":
        server.run("sse", host="127.0.0.1", port=port)
    elif transport == "streamable_http":
        server.run("streamable-http", host="127.0.0.1", port=port)
    else:
        sys.exit(f"unknown transport {transport!r}")
    leave()


def leave() -> None:
    """End the server once it has served (its client closed stdin), as magent's own program
    ends: without Python's teardown (final garbage collections, freeing the mcp SDK's modules
    one by one), about a quarter of a server's CPU; the suite starts hundreds of servers."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
