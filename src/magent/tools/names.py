"""Checking the tool names a config writes before anything runs (``magent validate``): a built-in
connector's tools when it is on, any name on a configured MCP server unless ``--servers`` listed
its live tools."""

from __future__ import annotations

import asyncio
import difflib
import fnmatch
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable

from magent.config.yamlfile import FieldPath, SourceFile
from magent.errors import ConfigError

BUILTIN_SERVERS = ("kv", "memory", "http", "shell")


@dataclass(frozen=True)
class ToolUse:
    """One tool name or pattern as a config file writes it."""

    name: str
    source: SourceFile
    at: FieldPath
    """Where in ``source`` it is written (``tools[0]``, ``nodes.fetch.tool``)."""
    denied: bool = False
    """A ``deny_tools`` entry: a built-in connector that is off is no mistake there."""


def check_tool_names(uses: Iterable[ToolUse], mcp_files: Iterable[Path], *,
                     live: bool = False) -> list[ConfigError]:
    """Every use naming a tool or server that does not exist, with a did-you-mean; ``live``: against
    the started MCP servers' tool lists."""
    from magent.tools.setup import build_registry, load_tool_config

    uses = list(uses)
    config = load_tool_config(mcp_files)
    tools: dict[str, list[str]] = {}  # server → tool names; a server missing here accepts any name
    builtins = build_registry(config=replace(config, servers={}))
    asyncio.run(builtins.start())
    for tool in builtins.all_tools():
        tools.setdefault(tool.server, []).append(tool.name)
    servers = sorted({*builtins.providers, *config.servers})
    down: dict[str, str] = {}
    if live:
        wanted = {s for u in uses for s in config.servers if fnmatch.fnmatchcase(s, _server(u.name))}
        tools.update(asyncio.run(_live_tools(config, wanted, down)))
    errors: list[ConfigError] = []
    reported: set[str] = set()
    for use in uses:
        if use.denied and _server(use.name) in BUILTIN_SERVERS and _server(use.name) not in servers:
            continue
        message = _problem(use.name, servers, tools, down, reported)
        if message:
            errors.append(use.source.error(message, use.at))
    return errors


def _server(name: str) -> str:
    return name.split(".", 1)[0]


def _problem(name: str, servers: list[str], tools: dict[str, list[str]], down: dict[str, str],
             reported: set[str]) -> str | None:
    server, _, tool = name.partition(".")
    if not tool:
        return f"tool {name!r} needs a server part: server.tool or server.*"
    reach = [s for s in servers if fnmatch.fnmatchcase(s, server)]
    if not reach:
        if server in BUILTIN_SERVERS:
            return (f"tool {name!r}: the built-in {server} connector is off (turn it on under "
                    f"builtins.{server} in config/mcp_servers.yaml or the agent's mcp_servers file)")
        hint = _did_you_mean(server, servers) or f" (servers: {', '.join(servers)})"
        return f"unknown server {server!r} in tool {name!r}{hint}"
    for s in reach:
        if s in down and s not in reported:
            reported.add(s)
            return f"tool {name!r}: server {s!r} did not start: {down[s]}"
    known = [f"{s}.{t}" for s in reach if s in tools for t in tools[s]]
    if any(s not in tools for s in reach) or any(fnmatch.fnmatchcase(k, name) for k in known):
        return None
    if any(ch in tool for ch in "*?["):
        return f"pattern {name!r} matches no tool (tools: {', '.join(sorted(known)) or 'none'})"
    hint = _did_you_mean(name, known) or f" ({server} has: {', '.join(sorted(known)) or 'no tools'})"
    return f"unknown tool {name!r}{hint}"


def _did_you_mean(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


async def _live_tools(config: Any, wanted: set[str], down: dict[str, str]) -> dict[str, list[str]]:
    """Start ``wanted`` MCP servers, list their tools, stop them; failures go into ``down``."""
    from magent.tools.setup import build_registry

    registry = build_registry(config=replace(config, servers={n: config.servers[n] for n in wanted}))
    try:
        await registry.start(only=wanted)
        out: dict[str, list[str]] = {name: [] for name in wanted if name not in registry.start_errors}
        for tool in registry.all_tools():
            if tool.server in out:
                out[tool.server].append(tool.name)
        down.update({name: registry.start_errors[name] for name in wanted if name in registry.start_errors})
        return out
    finally:
        await registry.close()
