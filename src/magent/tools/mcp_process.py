"""The stdio side of MCP: a server subprocess speaking JSON-RPC lines on stdin/stdout.

magent runs its own transport instead of the SDK's ``stdio_client`` for what that hides: the
process id (to end a hung server at once), the stderr tail (for the trace) and non-JSON-RPC lines
on stdout (an error, not a silent wait). Framing and ``SessionMessage`` streams are the SDK's."""

from __future__ import annotations

import collections
import os
import signal
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import anyio
import anyio.abc
import mcp_types
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

STDERR_TAIL_LINES = 20
"""How many of a server's last stderr lines are kept for the trace."""
STDIN_GRACE_SECONDS = 1.0
"""After closing stdin, how long a server may take to exit on its own (MCP shutdown)."""
TERM_GRACE_SECONDS = 2.0
"""After SIGTERM, how long before SIGKILL."""
MAX_LINE_CHARS = 300
"""Garbage lines are quoted this short in messages."""


@dataclass
class StdioProcess:
    """What magent knows about one server process while and after it runs."""

    command: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    pid: int | None = None
    returncode: int | None = None
    stderr: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=STDERR_TAIL_LINES))
    garbage: list[str] = field(default_factory=list)
    """Non-JSON-RPC lines seen on stdout (only the first few are kept)."""
    garbage_count: int = 0
    on_garbage: Callable[[], None] | None = None
    """Called for each non-JSON-RPC line (the connect step fails fast on it)."""
    stopped_by_us: bool = False
    _process: anyio.abc.Process | None = None

    def stderr_tail(self) -> str:
        return "\n".join(self.stderr)

    @property
    def exit_code(self) -> int | None:
        return self._process.returncode if self._process is not None else self.returncode

    async def wait_exit(self, timeout: float) -> int | None:
        """The exit code once the process has exited, waiting at most ``timeout`` seconds."""
        if self._process is not None:
            await _wait_exit(self._process, timeout)
        return self.exit_code

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def terminate(self) -> None:
        """SIGTERM the server's process group, SIGKILL it after a grace period, reap it."""
        self.stopped_by_us = True
        if self._process is not None:
            await _terminate(self._process)
            self.returncode = self._process.returncode


def resolve_command(proc: StdioProcess) -> str:
    """The executable to run, or ``FileNotFoundError``: a bare name is looked up on PATH, then
    beside the running Python (a server in magent's own, unactivated virtualenv)."""
    import shutil
    import sys

    if proc.cwd is not None and not Path(proc.cwd).is_dir():
        raise FileNotFoundError(f"working directory {proc.cwd!r} does not exist")
    command = proc.command
    if os.sep in command:
        path = Path(command)
        if not path.is_absolute() and proc.cwd is not None:
            path = Path(proc.cwd) / path
        if not path.exists():
            raise FileNotFoundError(f"command {command!r} does not exist")
        if not os.access(path, os.X_OK):
            raise FileNotFoundError(f"command {command!r} is not executable")
        return os.path.abspath(path)
    found = shutil.which(command, path=proc.env.get("PATH") or os.environ.get("PATH"))
    if found is None:
        beside = Path(sys.executable).parent / command
        if beside.is_file() and os.access(beside, os.X_OK):
            return str(beside)
        raise FileNotFoundError(f"command {command!r} not found on PATH")
    return found


@asynccontextmanager
async def stdio_transport(proc: StdioProcess) -> AsyncIterator[tuple[Any, Any]]:
    """Spawn the server and yield ``(read_stream, write_stream)`` of ``SessionMessage``. On any exit
    the server is stopped and reaped inside a shield, so no orphan or zombie is left."""
    command = resolve_command(proc)
    env = {**get_default_environment(), **proc.env}
    process = await anyio.open_process(
        [command, *proc.args], env=env, cwd=proc.cwd, start_new_session=True)
    proc._process = process
    proc.pid = process.pid
    read_send, read_recv = anyio.create_memory_object_stream[Any](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)

    async def stdout_reader() -> None:
        assert process.stdout is not None
        async with read_send:
            try:
                async for raw in _lines(process.stdout):
                    item = _parse(raw, proc)
                    if item is not None:
                        await read_send.send(item)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
                pass

    async def stderr_reader() -> None:
        assert process.stderr is not None
        buffer = b""
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            async for chunk in process.stderr:
                lines = (buffer + chunk).split(b"\n")
                buffer = lines.pop()[-4096:]
                for raw in lines:
                    proc.stderr.append(raw.decode(errors="replace").rstrip()[:1000])
        if buffer:
            proc.stderr.append(buffer.decode(errors="replace").rstrip()[:1000])

    async def stdin_writer() -> None:
        assert process.stdin is not None
        async with write_recv:
            try:
                async for message in write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((data + "\n").encode())
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                # The server is gone: end the read side so pending requests fail now.
                await read_send.aclose()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stderr_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_recv, write_send
        finally:
            with anyio.CancelScope(shield=True):
                await write_send.aclose()
                await _stop(process)
                proc.returncode = process.returncode
            tg.cancel_scope.cancel()


async def _lines(stream: Any) -> AsyncIterator[bytes]:
    """The lines of ``stream`` without their newline, in time linear in their length (each chunk
    searched once, a line's pieces joined once)."""
    pieces: list[bytes] = []
    async for chunk in stream:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            pieces.append(chunk[start:end])
            yield b"".join(pieces)
            pieces.clear()
            start = end + 1
        if start < len(chunk):
            pieces.append(chunk[start:])


def _parse(raw: bytes, proc: StdioProcess) -> Any:
    line = raw.decode(errors="replace").strip()
    if not line:
        return None
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError:
        proc.garbage_count += 1
        if len(proc.garbage) < 5:
            proc.garbage.append(line[:MAX_LINE_CHARS])
        if proc.on_garbage is not None:
            proc.on_garbage()
        return None  # dropped: the session would only log it


async def _stop(process: anyio.abc.Process) -> None:
    """MCP shutdown: close stdin, give the server a moment, then end what is left of its group,
    even when the server exited on its own (its helpers share the group and would live on)."""
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    await _wait_exit(process, STDIN_GRACE_SECONDS)
    await _terminate(process)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.aclose()


async def _terminate(process: anyio.abc.Process) -> None:
    """SIGTERM the server's process group, SIGKILL what is left after a grace period. killpg
    reaches members whose leader is gone; a daemon with a session of its own is out of reach."""
    pgid = process.pid
    for sig, wait in ((signal.SIGTERM, TERM_GRACE_SECONDS), (signal.SIGKILL, 5.0)):
        if _ended(process, pgid):
            return
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
        with anyio.move_on_after(wait):
            while not _ended(process, pgid):
                await anyio.sleep(0.01)
            return


async def _wait_exit(process: anyio.abc.Process, timeout: float) -> bool:
    """Whether the process exited and was reaped within ``timeout`` seconds; polls ``returncode``,
    since asyncio's ``wait()`` also waits for pipes a grandchild may hold open."""
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(0.01)
        return True
    return False


def _ended(process: anyio.abc.Process, pgid: int) -> bool:
    """The server has exited (and been reaped) and nothing of its group still runs."""
    return process.returncode is not None and not _group_alive(pgid)


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs. Zombies do not count (init reaps them, or
    never does); without ``/proc``, ``killpg(pgid, 0)`` answers and they do."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        names = os.listdir("/proc")
    except OSError:
        return True
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # gone since the listing
        if int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False
