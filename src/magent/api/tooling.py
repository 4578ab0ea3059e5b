"""Tools and MCP servers from Python; each call starts the servers it needs and stops them after."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from magent import paths
from magent.api.reading import PathLike
from magent.api.runs import run_sync

if TYPE_CHECKING:
    from magent.models import Tool
    from magent.tools.base import ToolResult
    from magent.tools.catalog import ServerStatus
    from magent.tools.mcp_login import LoginState


@dataclass(frozen=True)
class ToolList:
    """The tools on offer (``magent.list_tools``), sorted by full name ``server.tool``."""

    tools: list["Tool"]
    """Each with ``full_name``, ``description`` and its JSON ``input_schema``."""
    problems: list[str] = field(default_factory=list)
    """One line per server that did not start (its tools are missing from ``tools``)."""
    failed: dict[str, str] = field(default_factory=dict)
    """The servers that did not start, each with why."""


async def alist_tools(server: str | None = None, *, mcp: Iterable[PathLike] = (),
                 home: PathLike | None = None) -> ToolList:
    """``list_tools`` for asyncio."""
    from magent.tools import catalog

    with paths.using_home(home):
        registry = catalog.cli_registry(_files(mcp))
        found = await catalog.list_tools(registry, server)
    failed = dict(sorted(registry.start_errors.items()))
    problems = [error if name in error else f"{name}: {error}" for name, error in failed.items()]
    return ToolList(tools=found, problems=problems, failed=failed)


def list_tools(server: str | None = None, *, mcp: Iterable[PathLike] = (),
          home: PathLike | None = None) -> ToolList:
    """The tools agents can use (only ``server``'s when given); an unknown ``server`` is a
    ``UsageError``, a server that fails to start is in ``failed`` and ``problems``."""
    return run_sync(alist_tools(server, mcp=mcp, home=home), "list_tools")


async def acall_tool(name: str, arguments: Mapping[str, Any] | None = None, *,
                     mcp: Iterable[PathLike] = (), home: PathLike | None = None,
                     elicitation: str = "decline") -> "ToolResult":
    """``call_tool`` for asyncio."""
    from magent.errors import UsageError
    from magent.tools import catalog
    from magent.tools.base import CallContext, calling
    from magent.tools.mcp_elicit import POLICIES

    if elicitation not in POLICIES:
        raise UsageError(f"--elicitation must be one of {', '.join(POLICIES)}, not {elicitation!r}")
    with paths.using_home(home), calling(CallContext(elicitation=elicitation)):
        registry = catalog.cli_registry(_files(mcp))
        return await catalog.call_tool(registry, name, dict(arguments or {}))


def call_tool(name: str, arguments: Mapping[str, Any] | None = None, *,
              mcp: Iterable[PathLike] = (), home: PathLike | None = None,
              elicitation: str = "decline") -> "ToolResult":
    """Run one tool, ``server.tool``, outside any task; a failing tool is a result, not an
    exception. A bad name or arguments raise ``UsageError``, a server that cannot start
    ``ToolError``; MCP elicitation is answered as ``elicitation`` says."""
    return run_sync(acall_tool(name, arguments, mcp=mcp, home=home, elicitation=elicitation), "call_tool")


async def amcp_servers(*, mcp: Iterable[PathLike] = (), home: PathLike | None = None) -> list["ServerStatus"]:
    """``mcp_servers`` for asyncio."""
    from magent.tools import catalog

    with paths.using_home(home):
        config = catalog.cli_config(_files(mcp))
        return await catalog.probe_servers(config)


def mcp_servers(*, mcp: Iterable[PathLike] = (), home: PathLike | None = None) -> list["ServerStatus"]:
    """Each configured MCP server, started, listed and stopped; one that does not answer has ``ok`` False."""
    return run_sync(amcp_servers(mcp=mcp, home=home), "mcp_servers")


async def amcp_login(server: str, *, mcp: Iterable[PathLike] = (), home: PathLike | None = None) -> "LoginState":
    """``mcp_login`` for asyncio."""
    from magent.tools import catalog, mcp_login

    with paths.using_home(home):
        return await mcp_login.login(catalog.cli_config(_files(mcp)), server)


def mcp_login(server: str, *, mcp: Iterable[PathLike] = (), home: PathLike | None = None) -> "LoginState":
    """Log in to HTTP MCP server ``server`` with OAuth in the person's browser; the token goes to
    ``auth/SERVER.json`` (mode 0600). A bad name or a stdio server is a ``UsageError``."""
    return run_sync(amcp_login(server, mcp=mcp, home=home), "mcp_login")


def mcp_logout(server: str, *, mcp: Iterable[PathLike] = (), home: PathLike | None = None) -> bool:
    """Forget the login to ``server`` (``magent mcp logout``); whether there was one."""
    from magent.tools import catalog, mcp_login

    with paths.using_home(home):
        return mcp_login.logout(catalog.cli_config(_files(mcp)), server)


def _files(mcp: Iterable[PathLike]) -> list[Path]:
    return [Path(os.fspath(f)) for f in mcp]
