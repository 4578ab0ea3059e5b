"""Starting the project's test MCP servers for tests and benchmarks: stdio configs, HTTP subprocesses."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

HERE = Path(__file__).resolve().parent
TOOLBOX = HERE / "toolbox.py"
GARBAGE = HERE / "garbage.py"


def stdio_server(name: str = "tb", script: Path = TOOLBOX, args: list[str] | None = None,
                 env: dict[str, str] | None = None, cwd: str | None = None, **extra: Any) -> dict[str, Any]:
    """An MCP servers file entry running ``script`` with this Python over stdio."""
    config: dict[str, Any] = {"command": sys.executable, "args": [str(script), *(args or [])], "env": env or {}}
    if cwd is not None:
        config["cwd"] = cwd
    return {"name": name, "transport": "stdio", "config": config, **extra}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def refused_url(path: str = "/mcp") -> Iterator[str]:
    """A URL on 127.0.0.1 where nothing listens, and nothing will while the block runs.

    The port stays bound (never listening) so a parallel test worker cannot take it:
    connecting is refused at once.
    """
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{s.getsockname()[1]}{path}"


@contextlib.contextmanager
def http_server(transport: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, subprocess.Popen]]:
    """Run the toolbox over ``sse`` or ``streamable_http`` on 127.0.0.1; yield its URL and process.

    A free port can be taken by another test worker before the server binds it: then the
    server exits at once and a new port is tried.
    """
    for _attempt in range(3):
        port = free_port()
        proc = subprocess.Popen([sys.executable, str(TOOLBOX), transport, str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env={**os.environ, **(env or {})})
        if _wait_listening(proc, port):
            break
        proc.kill()
        proc.wait()
    else:
        raise RuntimeError(f"toolbox {transport} server did not start (exit {proc.poll()})")
    try:
        path = "/sse" if transport == "sse" else "/mcp"
        yield f"http://127.0.0.1:{port}{path}", proc
    finally:
        proc.kill()
        proc.wait()


def _wait_listening(proc: subprocess.Popen, port: int) -> bool:
    """True once ``proc`` accepts connections on ``port``; False if it exited first."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return proc.poll() is None
        except OSError:
            if proc.poll() is not None:
                return False
            time.sleep(0.05)
    return False


def pid_gone(pid: int, wait: float = 60.0) -> bool:
    """True once no process (not even a zombie) has this pid (``wait`` only bounds a hang)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)  # a zombie (exited, not reaped) still answers kill(pid, 0)
    return False


def running(pid: int) -> bool:
    """Whether ``pid`` runs now: it exists and is not a zombie (exited, not yet reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: a zombie counts as running here
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def process_ended(pid: int, wait: float = 60.0) -> bool:
    """True once ``pid`` no longer runs: gone, or a zombie left for its parent to reap.

    For a server's own children, whose parent is init once the server exits: this
    machine's init may never reap them, and a zombie runs nothing.
    """
    deadline = time.monotonic() + wait
    while running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def write_mcp_file(path: Path, servers: list[dict[str, Any]], **top: Any) -> Path:
    import yaml

    path.write_text(yaml.safe_dump({"servers": servers, **top}, sort_keys=False))
    return path
