"""One live MCP session with a server (``Connection``), for ``mcp.MCPProvider``."""

from __future__ import annotations

import asyncio
import json
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from magent.models.servers import StdioServer
from magent.tools.mcp_convert import describe_error, list_all
from magent.tools.mcp_elicit import callback as elicit_callback
from magent.tools.mcp_http import http_transport
from magent.tools.mcp_process import StdioProcess, stdio_transport

if TYPE_CHECKING:
    from magent.tools.mcp import MCPProvider

GARBAGE_LINES = 2
"""This many non-MCP lines on stdout before the handshake ends it: one may be a start-up banner,
but a server that answers our request with more noise will never speak MCP."""
CLOSE_TIMEOUT_SECONDS = 10.0


class Connection:
    """One live session with a server, owned by a background task from connect to close (the SDK's
    anyio task groups must be exited by the task that entered them)."""

    def __init__(self, provider: "MCPProvider"):
        self.provider = provider
        self.session: Any = None
        self.tools: list[Any] = []
        self.error: BaseException | None = None
        self.proc: StdioProcess | None = None
        self.ready = asyncio.Event()
        self.garbage = asyncio.Event()
        self.stop = asyncio.Event()
        self.lost = False
        self.transport_error = ""
        self.watching: list[Callable[[str, str], None]] = []
        """The output lines of the calls in flight on this connection: a server's log messages
        (``notifications/message``) belong to no request, so each goes to every call that runs."""
        self.tools_changed = False
        """The server said its tools changed (``notifications/tools/list_changed``): they are
        listed again before the next call is checked (``MCPProvider.prepare``)."""
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        from mcp.client.session import ClientSession
        from mcp_types import Implementation

        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(stack))
                session = await stack.enter_async_context(ClientSession(
                    read, write, client_info=Implementation(name="magent", version=_version()),
                    message_handler=self._on_message, logging_callback=self._on_log,
                    elicitation_callback=elicit_callback(self.provider)))
                await session.initialize()
                self.tools = await list_all(session)
                self.session = session
                self.ready.set()
                await self.stop.wait()
        except BaseException as exc:  # noqa: BLE001 - kept and reported by whoever waits
            self.error = exc
        finally:
            self.session = None
            self.lost = True
            self.ready.set()

    async def _on_log(self, params: Any) -> None:
        if not self.watching:
            return
        data = params.data if isinstance(params.data, str) else json.dumps(params.data, default=str)
        line = f"{params.level}: {data}" if params.logger is None else f"{params.level} {params.logger}: {data}"
        for output in list(self.watching):
            output("log", line)

    def _on_garbage(self) -> None:
        if self.proc is not None and self.proc.garbage_count >= GARBAGE_LINES:
            self.garbage.set()

    async def _on_message(self, message: Any) -> None:
        # Transport faults (a broken SSE stream, an oversized event) arrive here as
        # exceptions; the last one explains a lost connection better than "closed".
        if isinstance(message, Exception):
            self.transport_error = describe_error(message)
        elif getattr(message, "method", None) == "notifications/tools/list_changed":
            self.tools_changed = True

    def _transport(self, stack: AsyncExitStack) -> Any:
        server = self.provider.server
        if isinstance(server, StdioServer):
            cfg = server.config
            cwd = cfg.cwd
            if cwd is not None and self.provider.base_dir is not None and not Path(cwd).is_absolute():
                cwd = str(self.provider.base_dir / cwd)
            self.proc = StdioProcess(command=cfg.command, args=list(cfg.args), env=dict(cfg.env), cwd=cwd,
                                     on_garbage=self._on_garbage)
            return stdio_transport(self.proc)
        return http_transport(server, stack, self.provider.auth)

    @property
    def usable(self) -> bool:
        if self.session is None or self.lost:
            return False
        return self.proc is None or self.proc.alive

    async def close(self) -> None:
        self.stop.set()
        if self.session is None:
            self.task.cancel()  # still connecting: nothing will look at ``stop``
        try:
            await asyncio.wait_for(asyncio.shield(self.task), CLOSE_TIMEOUT_SECONDS)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)


def _version() -> str:
    from magent.version import __version__

    return __version__
