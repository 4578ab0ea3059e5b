"""The built-in shell connector (seed 004): ``shell.run``, off unless the config enables it.

A command is split by ``shlex`` but never run by a shell, and its first word must be in
``allow_commands``. It runs in its own process group, so a timeout stops all it started; if magent
is killed, the kernel ends it (``PR_SET_PDEATHSIG``) and the next process to open the task ends
the rest of its group (``magent.store.toolgroups``)."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import shlex
import signal
import sys
import time
from typing import Any, Callable

from magent.models import Tool
from magent.models.tools import ShellBuiltin
from magent.tools.base import ToolResult

MAX_STREAM_BYTES = 1_000_000
"""Each of stdout and stderr is kept up to this size."""


class ShellProvider:
    """``shell.run``: run one allow-listed command, return its exit code, stdout and stderr."""

    name = "shell"

    def __init__(self, settings: ShellBuiltin):
        self.settings = settings

    async def start(self) -> None:
        return None

    async def list_tools(self) -> list[Tool]:
        allowed = ", ".join(self.settings.allow_commands) or "none"
        return [Tool(
            name="run", server=self.name, idempotent=False,
            description=("Run a command (no shell: no pipes, redirection or variables) and return its "
                         f"exit code, stdout and stderr. Allowed commands: {allowed}."),
            input_schema={"type": "object", "properties": {
                "command": {"description": "The command line, or a list of words.",
                            "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
                "stdin": {"type": "string", "description": "Text given to the command on stdin."}},
                "required": ["command"]})]

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> ToolResult:
        started = time.perf_counter()
        if tool != "run":
            return _result("ERROR", f"no tool {tool!r} on shell", started)
        command = arguments.get("command")
        try:
            argv = shlex.split(command) if isinstance(command, str) else [str(w) for w in command or []]
        except ValueError as exc:
            return _result("ERROR", f"cannot parse the command: {exc}", started)
        if not argv:
            return _result("ERROR", "empty command", started)
        if argv[0] not in self.settings.allow_commands:
            allowed = ", ".join(self.settings.allow_commands) or "none"
            return _result("ERROR", f"command {argv[0]!r} is not allowed (allowed: {allowed})", started)
        limit = min(float(self.settings.timeout_seconds), timeout)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True, preexec_fn=_die_with_parent())
        except OSError as exc:
            return _result("ERROR", f"cannot run {argv[0]!r}: {exc.strerror or exc}", started)
        stdin = (arguments.get("stdin") or "").encode()
        with _noted(proc.pid):
            try:
                out, err = await asyncio.wait_for(_communicate(proc, stdin), limit)
            except asyncio.TimeoutError:
                await _kill_group(proc)
                return _result("TIMEOUT", f"{argv[0]} timed out after {limit:g}s and was stopped", started)
            except asyncio.CancelledError:
                await _kill_group(proc)
                raise
        code = proc.returncode
        text = f"exit code {code}\n--- stdout ---\n{out}\n--- stderr ---\n{err}"
        result = _result("SUCCESS" if code == 0 else "FAILURE", text, started)
        result.data = {"exit_code": code, "stdout": out, "stderr": err}
        if code != 0:
            result.error = f"{argv[0]} exited with code {code}"
        return result

    async def close(self) -> None:
        return None


PR_SET_PDEATHSIG = 1


def _die_with_parent() -> Callable[[], None] | None:
    """Where the kernel can (Linux), a function for the child, run before ``exec``, that asks
    for SIGKILL when magent dies; None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def child() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # magent died before the request took hold
            os._exit(1)

    return child


@contextlib.contextmanager
def _noted(pgid: int) -> Any:
    """The command's group noted under its task while it runs (``magent.store.toolgroups``)."""
    from magent import paths
    from magent.ids import is_uuid4
    from magent.store import toolgroups
    from magent.tools.base import current_call

    call = current_call.get()
    locks = paths.locks_dir()
    in_task = call is not None and call.task_id is not None and is_uuid4(call.task_id) and locks.is_dir()
    noted = toolgroups.note(locks, call.task_id, pgid) if in_task else None  # type: ignore[union-attr,arg-type]
    try:
        yield
    finally:
        if noted is not None:
            toolgroups.forget(noted)


async def _communicate(proc: asyncio.subprocess.Process, stdin: bytes) -> tuple[str, str]:
    from magent.tools.base import current_call

    call = current_call.get()
    output = call.output if call is not None else None

    async def read(stream: Any, name: str) -> str:
        data = b""
        line = b""  # what has come of the line being printed (handed to ``output`` when it ends)
        while chunk := await stream.read(65536):
            if len(data) < MAX_STREAM_BYTES:
                data += chunk
            if output is not None:
                *whole, line = (line + chunk).split(b"\n")
                for piece in whole:
                    output(name, piece.decode(errors="replace"))
        if output is not None and line:
            output(name, line.decode(errors="replace"))
        text = data[:MAX_STREAM_BYTES].decode(errors="replace")
        return text + ("\n[... truncated]" if len(data) > MAX_STREAM_BYTES else "")

    async def feed() -> None:
        assert proc.stdin is not None
        try:
            if stdin:
                proc.stdin.write(stdin)
                await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            proc.stdin.close()

    _, out, err = await asyncio.gather(feed(), read(proc.stdout, "stdout"), read(proc.stderr, "stderr"))
    await proc.wait()
    return out, err


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            await asyncio.wait_for(proc.wait(), 2.0)
            return
        except asyncio.TimeoutError:
            continue
    await proc.wait()


def _result(outcome: Any, content: str, started: float) -> ToolResult:
    return ToolResult(outcome=outcome, content=content, error=None if outcome == "SUCCESS" else content,
                      duration_ms=int((time.perf_counter() - started) * 1000))
