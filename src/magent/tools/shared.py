"""One set of MCP server processes for many runs in one process (``magent batch``).

Inside ``sharing(pool)``, every run's registry takes its MCP servers from ``pool``: the
first run that needs a server starts it, the others call the same process (or HTTP
connection), and a run's end leaves it running; ``pool.close()`` stops them all when
the batch ends. A server whose calls depend on who calls it (it keeps a session, a
login, files of its own per client) says ``shared: false`` in its MCP servers file and
gets a process per run, as outside a batch. Calls of many runs to one server go through
one MCP session, side by side (MCP requests carry ids; the server answers each).
A shared server's crash restart is shared too: once for the batch, not once per run.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from pathlib import Path
from typing import Any, Iterable, Iterator


class SharedServers:
    def __init__(self) -> None:
        self._providers: dict[tuple[str, str], Any] = {}

    def provider(self, server: Any, *, base_dir: Path | None, secrets: Iterable[str]) -> Any:
        """The pool's provider for ``server`` (made on first use), or None when it opts out."""
        if not server.shared:
            return None
        from magent.tools.mcp import MCPProvider

        key = (server.model_dump_json(), str(base_dir))
        found = self._providers.get(key)
        if found is None:
            found = self._providers[key] = MCPProvider(server, base_dir=base_dir, secrets=secrets)
        return found

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._providers.values() if p.pid is not None]

    async def close(self) -> None:
        providers, self._providers = list(self._providers.values()), {}
        await asyncio.gather(*(p.close() for p in providers), return_exceptions=True)


_current: contextvars.ContextVar[SharedServers | None] = contextvars.ContextVar("magent_shared_servers",
                                                                               default=None)


def current() -> SharedServers | None:
    return _current.get()


@contextlib.contextmanager
def sharing(pool: SharedServers | None) -> Iterator[None]:
    token = _current.set(pool)
    try:
        yield
    finally:
        _current.reset(token)
