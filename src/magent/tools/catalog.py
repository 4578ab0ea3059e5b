"""What the ``magent mcp`` and ``magent tools`` commands show: server health, tool listings, one call."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable

from magent.errors import ToolError, UsageError
from magent.models import Tool
from magent.tools.base import ToolResult
from magent.tools.registry import ToolRegistry
from magent.tools.validation import check_arguments
from magent.tools.setup import ToolConfig, build_registry, load_tool_config


@dataclass
class ServerStatus:
    name: str
    transport: str
    target: str
    ok: bool
    tools: int = 0
    seconds: float = 0.0
    error: str | None = None
    source: str | None = None
    """The MCP file that defines the server."""
    login: dict[str, Any] | None = None
    """An HTTP server's OAuth login (``mcp_login.LoginState``: ``logged_in``, ``expires_at``...)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


async def probe_servers(config: ToolConfig) -> list[ServerStatus]:
    """Start every configured MCP server at once, list its tools, close it: does it answer?"""
    from magent.tools.mcp import MCPProvider

    async def probe(name: str, server: Any) -> ServerStatus:
        provider = MCPProvider(server, base_dir=config.base_dirs.get(name), secrets=config.secrets)
        began = time.perf_counter()
        status = ServerStatus(name=name, transport=server.transport, target=provider.target, ok=False,
                              source=str(config.sources.get(name, "")) or None)
        try:
            await provider.start()
            status.tools = len(await provider.list_tools())
            status.ok = True
        except ToolError as exc:
            status.error = str(exc)
        finally:
            await provider.close()
            status.seconds = round(time.perf_counter() - began, 3)
        if server.transport != "stdio":  # (after the probe, which may have renewed the token)
            from magent.tools.mcp_http import uses_oauth
            from magent.tools.mcp_login import state

            if uses_oauth(server):  # (not a server whose file sends its own Authorization)
                status.login = state(server).to_dict()
        return status

    return list(await asyncio.gather(*(probe(n, s) for n, s in sorted(config.servers.items()))))


async def list_tools(registry: ToolRegistry, server: str | None = None) -> list[Tool]:
    """Start the registry's providers (or only ``server``) and return their tools."""
    if server is not None and server not in registry.providers:
        known = ", ".join(sorted(registry.providers)) or "none"
        raise UsageError(f"no server named {server!r} (servers: {known})")
    try:
        await registry.start(only={server} if server else None)
        tools = registry.all_tools()
        return [t for t in tools if server is None or t.server == server]
    finally:
        await registry.close()


async def call_tool(registry: ToolRegistry, name: str, arguments: dict[str, Any]) -> ToolResult:
    """Run one tool by its full name. Bad names and arguments raise ``UsageError``."""
    server, _, tool_name = name.partition(".")
    if not tool_name:
        raise UsageError(f"tool name {name!r} must be server.tool")
    if server not in registry.providers:
        known = ", ".join(sorted(registry.providers)) or "none"
        raise UsageError(f"no server named {server!r} (servers: {known})")
    try:
        await registry.start(only={server})
        if server in registry.start_errors:
            raise ToolError(registry.start_errors[server])
        tool = registry.get(name)
        if tool is None:
            names = ", ".join(t.name for t in registry.all_tools() if t.server == server) or "none"
            raise UsageError(f"server {server!r} has no tool {tool_name!r} (its tools: {names})")
        problem = check_arguments(tool, arguments)
        if problem:
            raise UsageError(f"--args do not fit {name}'s input schema: {problem}")
        return await registry.call(name, arguments)
    finally:
        await registry.close()


def parse_args_json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--args is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError("--args must be a JSON object, e.g. '{\"key\": \"value\"}'")
    return value


def cli_registry(mcp_files: Iterable[Path]) -> ToolRegistry:
    """The registry the CLI commands use: home config plus ``--mcp`` files, outputs not cut."""
    registry = build_registry(mcp_files=list(mcp_files))
    registry.limits = registry.limits.model_copy(update={"max_output_chars": 10**12})
    return registry


def cli_config(mcp_files: Iterable[Path]) -> ToolConfig:
    return load_tool_config(list(mcp_files))


def schema_summary(schema: dict[str, Any]) -> str:
    """``key: string*, value`` -- each argument, its type when simple, ``*`` when required."""
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parts = []
    for key, spec in props.items():
        kind = _type_of(spec if isinstance(spec, dict) else {})
        parts.append(f"{key}{': ' + kind if kind else ''}{'*' if key in required else ''}")
    return ", ".join(parts) or "-"


def _type_of(spec: dict[str, Any]) -> str:
    kind = spec.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if kind == "array" and isinstance(spec.get("items"), dict) and spec["items"].get("type"):
        return f"{spec['items']['type']}[]"
    if kind:
        return str(kind)
    if "enum" in spec:
        return "|".join(json.dumps(v) for v in spec["enum"][:5])
    options = spec.get("anyOf") or spec.get("oneOf")
    if isinstance(options, list):
        kinds = [_type_of(o) for o in options if isinstance(o, dict)]
        return "|".join(k for k in kinds if k and k != "null")
    return ""


def tool_dict(tool: Tool) -> dict[str, Any]:
    return {"name": tool.full_name, "server": tool.server, "description": tool.description,
            "input_schema": tool.input_schema, "arguments": schema_summary(tool.input_schema),
            "timeout_seconds": tool.timeout_seconds, "fallback_tools": tool.fallback_tools,
            "idempotent": bool(tool.idempotent), "needs_approval": tool.needs_approval}


def format_table(headers: list[str], rows: list[list[str]], max_width: int = 60) -> str:
    """Plain aligned columns (no colours), each cell cut to ``max_width``; the last column is not padded."""
    cells = [[_cut(c, max_width) for c in row] for row in [headers, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        padded = [c.ljust(w) for c, w in zip(row[:-1], widths[:-1])] + [row[-1]]
        lines.append("  ".join(padded).rstrip())
    return "\n".join(lines)


def _cut(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"
