"""One set of MCP server processes for the runs of a ``magent batch``: inside ``sharing(pool)``,
the first run needing a server starts it, others share its session (MCP requests carry ids), and
``pool.close()`` stops them all. A server with ``shared: false`` gets a process per run."""

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
