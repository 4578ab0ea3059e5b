"""Building the tool registry a run needs, and starting it alongside the model library's import."""

from __future__ import annotations

import asyncio

from magent.engine.context import RunOptions
from magent.engine.graph import Graph
from magent.store import TaskDir
from magent.tools.kv import kv_provider
from magent.tools.registry import ToolRegistry


def needed_servers(graph: Graph) -> set[str]:
    names: set[str] = set()
    for loaded in graph.agents.values():
        for pattern in loaded.agent.tools:
            names.add(pattern.split(".", 1)[0])
    for node in graph.nodes.values():
        tool = getattr(node.config, "tool", None)
        if tool:
            names.add(tool.split(".", 1)[0])
    return names


def uses_real_model(graph: Graph, options: RunOptions) -> bool:
    if options.llm_factory is not None:
        return False
    if options.model_override:
        return options.model_override != "scripted"
    return any(a.agent.llm_config.model != "scripted" for a in graph.agents.values())


async def open_registry(graph: Graph, td: TaskDir, options: RunOptions) -> ToolRegistry:
    registry = ToolRegistry([kv_provider(td.path / "kv.json"), *options.extra_providers],
                            artifacts_dir=td.artifacts_dir)
    jobs = [registry.start()]
    if uses_real_model(graph, options):
        from magent.llm.factory import warm_import

        jobs.append(asyncio.to_thread(warm_import))
    await asyncio.gather(*jobs)
    return registry
