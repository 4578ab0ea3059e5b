"""Building the tool registry a run needs, and starting it alongside the model library's import."""

from __future__ import annotations

import asyncio
from typing import Callable

from magent.engine.context import RunOptions
from magent.engine.graph import Graph
from magent.errors import ConfigError
from magent.store import TaskDir
from magent.tools.registry import ToolRegistry
from magent.tools.setup import build_registry


def tool_patterns(graph: Graph) -> list[str]:
    """Every tool name or pattern the run can reach: agents' tools and tool nodes' tools."""
    patterns: list[str] = []
    for loaded in graph.agents.values():
        patterns.extend(loaded.agent.tools)
    for node in graph.nodes.values():
        tool = getattr(node.config, "tool", None)
        if tool:
            patterns.append(tool)
    return patterns


def uses_real_model(graph: Graph, options: RunOptions) -> bool:
    if options.llm_factory is not None:
        return False
    if options.model_override:
        return options.model_override != "scripted"
    return any(a.agent.llm_config.model != "scripted" for a in graph.agents.values())


def prepare_registry(graph: Graph, td: TaskDir | None, options: RunOptions,
                     redact: Callable[[str], str] | None = None) -> ToolRegistry:
    """The registry for a run (nothing started). A tool naming an unknown server is a config error."""
    registry = build_registry(mcp_files=graph.mcp_files,
                              artifacts_dir=td.artifacts_dir if td else None,
                              kv_path=(td.path / "kv.json") if td else None,
                              extra_providers=options.extra_providers, redact=redact)
    unknown = registry.unknown_servers(tool_patterns(graph))
    if unknown:
        servers = ", ".join(sorted(registry.providers)) or "none"
        raise ConfigError(f"tool {unknown[0]!r} names a server that is not configured (servers: {servers}; "
                          "add it to config/mcp_servers.yaml or the workflow's mcp_servers file)")
    return registry


async def open_registry(graph: Graph, td: TaskDir, options: RunOptions,
                        redact: Callable[[str], str] | None = None) -> ToolRegistry:
    """Start the servers the run can reach, concurrently, while litellm imports if a real model
    is used (both take seconds; together they take as long as the slowest)."""
    registry = prepare_registry(graph, td, options, redact)
    jobs = [registry.start(only=registry.servers_for(tool_patterns(graph)))]
    if uses_real_model(graph, options):
        from magent.llm.factory import warm_import

        jobs.append(asyncio.to_thread(warm_import))
    await asyncio.gather(*jobs)
    return registry
