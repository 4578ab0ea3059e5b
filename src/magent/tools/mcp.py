"""MCP servers as tool providers: stdio subprocesses, SSE and streamable HTTP endpoints.

One ``MCPProvider`` per server; what goes wrong comes back as a ``ToolResult``, never raised:
``isError`` is FAILURE; a crash or dropped connection is ERROR with the stderr tail, and the
server is restarted once for the next call; a hang is TIMEOUT, the stdio server's group killed
and reaped (restarted without using up the crash restart); a server that cannot be reached
answers ERROR at once until its next try is due (``retry.RetrySchedule``)."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Union

from magent.errors import ToolError
from magent.models import Tool
from magent.models.servers import HttpServer, StdioServer
from magent.tools.base import CallContext, ToolResult, current_call
from magent.tools.mcp_convert import describe_error, is_transport_error, list_all, result_text, to_tool
from magent.tools.mcp_auth import LoginRequired
from magent.tools.mcp_http import login_required
from magent.tools.mcp_process import StdioProcess
from magent.tools.mcp_session import GARBAGE_LINES, Connection
from magent.tools.retry import RetrySchedule

# magent reports every MCP failure itself; the SDK's own log lines would only
# repeat them on the terminal (a handler here keeps logging's last resort quiet).
logging.getLogger("mcp").addHandler(logging.NullHandler())

ServerConfig = Union[StdioServer, HttpServer]


class MCPProvider:
    """A configured MCP server behind the ``ToolProvider`` interface."""

    def __init__(self, server: ServerConfig, *, base_dir: Path | None = None, max_restarts: int = 1,
                 secrets: Iterable[str] = (), auth: Any = None):
        self.server = server
        self.auth = auth
        """An OAuth provider for an HTTP server that may send a person to log in (``magent mcp
        login``); None: the stored login, refreshed as needed, else ``LoginRequired``."""
        self.login_needed: LoginRequired | None = None
        """Set when the server wants a login magent lacks (the run pauses, kind ``auth``)."""
        self.source: Path | None = None
        """The MCP servers file that defines the server (the login command names it)."""
        self.name = server.name
        self.base_dir = base_dir
        self.max_restarts = max_restarts
        self.restarts = 0
        self._secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)
        self._conn: Connection | None = None
        self._down: str | None = None
        """Why the server is not restarted again (set after the restart budget is spent)."""
        self._crashed = False
        self.retry = RetrySchedule()
        """After a failed connect (other than a crash's restart): when the server is tried again."""
        self._lock = asyncio.Lock()
        self._tools: list[Tool] = []
        self.stderr_tail = ""
        """The last stderr lines of a stdio server that failed to start or crashed (for the trace)."""
        self.generation = 0
        """Moves with each connection and each new listing of the tools: when it moves (a restart,
        the server's tools/list_changed), the registry re-reads the tools."""
        self.connections = 0
        self._stopping: set[asyncio.Future[None]] = set()
        """Servers being stopped in the background after a timeout (``close`` waits for them)."""
        self._calls: list[CallContext | None] = []
        """Who is calling, for each call in flight (``calling``)."""

    # -- what the registry and the CLI see ---------------------------------------------------

    @property
    def target(self) -> str:
        """What the server is: its command line or its URL (for listings and messages), secrets masked."""
        if isinstance(self.server, StdioServer):
            return self._redact(" ".join([self.server.config.command, *self.server.config.args]))
        return self._redact(self.server.config.url)

    @property
    def pid(self) -> int | None:
        """Process id of a running stdio server (None for HTTP servers or when stopped)."""
        conn = self._conn
        return conn.proc.pid if conn is not None and conn.proc is not None and conn.proc.alive else None

    async def start(self) -> None:
        """Connect and list tools; ``ToolError`` with one clear line when that fails."""
        async with self._lock:
            if self._conn is not None and self._conn.usable:
                return
            await self._connect_when_due()

    async def list_tools(self) -> list[Tool]:
        return list(self._tools)

    def calling(self) -> CallContext | None:
        """Who made the call a server's request belongs to (an elicitation's answer and record):
        the latest call in flight (MCP does not say which call a request is for)."""
        return self._calls[-1] if self._calls else None

    async def prepare(self, notes: list[str]) -> ToolResult | None:
        """Before a call's arguments are checked: restart a server that stopped and relist the
        tools of one that said they changed, so the call is checked against what it will reach.
        What it did goes to ``notes``; an ERROR result when the server cannot be reached."""
        conn = self._conn
        if conn is not None and conn.usable and not conn.tools_changed:
            return None
        started = time.perf_counter()
        try:
            conn = await self._ensure(notes)
            if conn.tools_changed:
                conn.tools_changed = False
                listed = await list_all(conn.session)
                self._tools = [to_tool(self.name, t, self.server.call_timeout_seconds) for t in listed]
                self.generation += 1
        except ToolError as exc:
            return self._result("ERROR", str(exc) + self.retry.note(), started, notes)
        except Exception as exc:  # noqa: BLE001 - listing failed: the call finds out what is wrong
            notes.append(self._redact(f"could not list the tools of {self.name!r} again: {describe_error(exc)}"))
        return None

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> ToolResult:
        started = time.perf_counter()
        notes: list[str] = []
        try:
            conn = await self._ensure(notes)
        except ToolError as exc:
            return self._result("ERROR", str(exc) + self.retry.note(), started, notes)
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        output = _call_output()
        if output is not None:
            conn.watching.append(output)
        caller = current_call.get()
        self._calls.append(caller)
        try:
            res = await conn.session.call_tool(tool, arguments, read_timeout_seconds=timeout,
                                               progress_callback=_progress(output))
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                return await self._timed_out(conn, timeout, started, notes)
            if exc.code == CONNECTION_CLOSED or not conn.usable:
                return await self._lost(conn, started, notes, detail=conn.transport_error)
            return self._result("ERROR", f"server {self.name!r} refused the call: {exc.error.message}",
                                started, notes)
        except Exception as exc:  # noqa: BLE001 - a transport failure is an observation
            if not conn.usable or is_transport_error(exc):
                return await self._lost(conn, started, notes, detail=describe_error(exc))
            return self._result("ERROR", f"server {self.name!r}: {describe_error(exc)}", started, notes)
        finally:
            if output is not None:
                conn.watching.remove(output)
            self._calls.remove(caller)
        text = result_text(res)
        outcome = "FAILURE" if res.is_error else "SUCCESS"
        out = self._result(outcome, text, started, notes, error=text if res.is_error else None)
        out.data = res.structured_content
        return out

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()
        stopping, self._stopping = list(self._stopping), set()
        await asyncio.gather(*stopping, return_exceptions=True)

    # -- connecting, restarting ---------------------------------------------------------------

    async def _connect_when_due(self) -> None:
        """Connect, unless the last try failed and the next is not due: then fail at once with its cause."""
        if self.retry.waiting():
            assert self.retry.cause is not None
            raise ToolError(self.retry.cause)
        try:
            await self._connect()
        except ToolError as exc:
            self.retry.failed(str(exc))
            raise
        self.retry.succeeded()

    async def _connect(self) -> None:
        conn = Connection(self)
        timeout = float(self.server.connect_timeout_seconds)
        deadline = time.monotonic() + timeout
        ready = asyncio.ensure_future(conn.ready.wait())
        garbage = asyncio.ensure_future(conn.garbage.wait())
        try:
            await asyncio.wait({ready, garbage}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if not ready.done() and garbage.done():
                # The reply may have come in right behind the noise; otherwise give up now
                # rather than wait out the whole connect timeout.
                await asyncio.wait({ready}, timeout=min(0.5, max(0, deadline - time.monotonic())))
        finally:
            ready.cancel()
            garbage.cancel()
        if conn.session is not None and conn.error is None:
            self._conn = conn
            self.login_needed = None
            self._tools = [to_tool(self.name, t, self.server.call_timeout_seconds) for t in conn.tools]
            self.generation += 1
            self.connections += 1
            return
        timed_out = not conn.ready.is_set()  # neither connected nor failed yet
        await conn.close()
        login = login_required(conn.error)
        if login is not None:
            self.login_needed = LoginRequired(self.name, self.source)
            raise self.login_needed
        raise ToolError(self._connect_failure(conn, timeout, timed_out))

    def _connect_failure(self, conn: Connection, timeout: float, timed_out: bool) -> str:
        where = f"MCP server {self.name!r} ({self.target})"
        proc = conn.proc
        if proc is not None and proc.garbage:
            msg = f"{where} wrote non-MCP output on stdout: {proc.garbage[0]!r}"
            if timed_out and proc.garbage_count < GARBAGE_LINES:
                msg = f"{where} did not answer within {timeout:g}s; it wrote non-MCP output on stdout: " \
                      f"{proc.garbage[0]!r}"
        elif conn.error is not None and not timed_out:
            err = describe_error(conn.error)
            if proc is not None and proc.exit_code is not None:
                msg = f"{where} exited with code {proc.exit_code} before answering"
            else:
                verb = "started" if proc is not None else "reached"
                msg = f"{where} could not be {verb}: {err}"
        else:
            msg = f"{where} did not answer within {timeout:g}s"
        if proc is not None:
            self.stderr_tail = self._redact(proc.stderr_tail())
        return self._redact(msg + self._stderr_suffix(proc))

    async def _ensure(self, notes: list[str]) -> Connection:
        conn = self._conn
        if conn is not None and conn.usable:
            return conn
        async with self._lock:
            conn = self._conn
            if conn is not None and conn.usable:
                return conn
            if self._down:
                raise ToolError(self._down)
            if conn is not None:  # it stopped between calls, on its own
                self._conn = None
                await conn.close()
                gone = self._gone_message(conn)
                if self.restarts >= self.max_restarts:
                    self._down = self._redact(f"{gone}; it was already restarted once, so it is down")
                    raise ToolError(self._down)
                self._crashed = True
                notes.append(self._redact(gone + self._stderr_suffix(conn.proc)))
            crashed = self._crashed
            if crashed:
                self.restarts += 1
                self._crashed = False
            try:
                await (self._connect() if crashed else self._connect_when_due())
            except ToolError as exc:
                if crashed:  # the one restart failed: do not try on every call
                    self._down = f"{exc}; restarting it after a crash failed, so it is down"
                raise
            if self.connections > 1:
                notes.append(f"restarted MCP server {self.name!r}" + (" after it crashed" if crashed else ""))
            assert self._conn is not None
            return self._conn

    def _gone_message(self, conn: Connection) -> str:
        if conn.proc is not None:
            code = conn.proc.exit_code
            return f"MCP server {self.name!r} had exited" + (f" (exit code {code})" if code is not None else "")
        detail = describe_error(conn.error) if conn.error is not None else "closed"
        return f"the connection to MCP server {self.name!r} was lost ({detail})"

    async def _lost(self, conn: Connection, started: float, notes: list[str], detail: str = "") -> ToolResult:
        proc = conn.proc
        if proc is not None and proc.stopped_by_us:
            msg = f"MCP server {self.name!r} was stopped while this call ran (another call timed out)"
            return self._result("ERROR", msg, started, notes)
        code = await proc.wait_exit(0.5) if proc is not None else None
        await conn.close()
        login = login_required(conn.error)
        if login is not None:  # a 403 asked for more access than the login gave
            async with self._lock:
                if self._conn is conn:
                    self._conn = None
            self.login_needed = LoginRequired(self.name, self.source)
            return self._result("ERROR", f"{self.login_needed} (this call needs more access)", started, notes)
        if proc is not None:
            msg = f"MCP server {self.name!r} crashed during the call" + (
                f" (exit code {code})" if code is not None else "")
        else:
            detail = detail or (describe_error(conn.error) if conn.error is not None else "")
            msg = f"lost the connection to MCP server {self.name!r}" + (f" ({detail})" if detail else "")
        async with self._lock:
            if self._conn is conn:
                self._conn = None
                if self.restarts < self.max_restarts:
                    self._crashed = True
                    msg += "; it will be restarted for the next call"
                else:
                    self._down = self._redact(
                        f"MCP server {self.name!r} is down: it failed again after {self.restarts} restart(s)")
                    msg += "; it was already restarted once, so its tools are now unavailable"
        if proc is not None and proc.stderr:
            self.stderr_tail = self._redact(proc.stderr_tail())
            notes.append(f"stderr of {self.name} (last lines):\n{proc.stderr_tail()}")
            msg += f"; last stderr line: {proc.stderr[-1]}"
        return self._result("ERROR", msg, started, notes)

    async def _timed_out(self, conn: Connection, timeout: float, started: float, notes: list[str]) -> ToolResult:
        msg = f"timed out after {timeout:g}s; the call was cancelled"
        if conn.proc is not None:
            # A stdio server stuck in a call may never read its stdin again: stop it now
            # rather than leave a busy process behind; it starts afresh on the next call.
            # The stopping runs in the background (a server that ignores SIGTERM takes the
            # grace period to kill): the model has waited long enough. ``close`` waits for it.
            async with self._lock:
                if self._conn is conn:
                    self._conn = None
            conn.proc.stopped_by_us = True
            stopping = asyncio.ensure_future(self._stop_hung(conn))
            self._stopping.add(stopping)
            stopping.add_done_callback(self._stopping.discard)
            msg += f" and MCP server {self.name!r} is being stopped (it starts again on the next call)"
            notes.append(f"stopping MCP server {self.name!r} (pid {conn.proc.pid}) after a timeout")
        return self._result("TIMEOUT", msg, started, notes)

    @staticmethod
    async def _stop_hung(conn: Connection) -> None:
        assert conn.proc is not None
        await conn.proc.terminate()
        await conn.close()

    # -- helpers ------------------------------------------------------------------------------

    def _stderr_suffix(self, proc: StdioProcess | None) -> str:
        if proc is None or not proc.stderr:
            return ""
        lines = [line for line in proc.stderr if line.strip()][-3:]
        return ("; stderr: " + " | ".join(lines)) if lines else ""

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def _result(self, outcome: Any, content: str, started: float, notes: list[str],
                error: str | None = None) -> ToolResult:
        content = self._redact(content)
        if outcome in ("ERROR", "TIMEOUT") and error is None:
            error = content
        return ToolResult(outcome=outcome, content=content, error=error,
                          duration_ms=int((time.perf_counter() - started) * 1000),
                          notes=[self._redact(n) for n in notes])


def _call_output() -> Callable[[str, str], None] | None:
    """Where the running call's output lines go (``CallContext.output``): the live view and
    ``--json --stream``; None when no one watches."""
    from magent.tools.base import current_call

    call = current_call.get()
    return call.output if call is not None else None


def _progress(output: Callable[[str, str], None] | None) -> Any:
    """The call's progress notifications as output lines of stream ``progress``."""
    if output is None:
        return None

    async def progress(value: float, total: float | None, message: str | None) -> None:
        done = f"{value:g}/{total:g}" if total else f"{value:g}"
        output("progress", f"{done} {message}" if message else done)
    return progress
