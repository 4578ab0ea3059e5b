"""What a run needs from its graph, resolved once, and starting its tools.

``prepare(graph, options)`` walks the graph one time and returns ``RunNeeds`` — the tool
patterns and MCP files it can reach, the secrets to keep off disk (its files' and its tool
servers'), each agent's model config (with ``--model`` applied), the limits — after checking
every model config and tool server (exit 2 before anything is written). The run context
carries that value; nothing re-derives it from the graph.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import AsyncIterator, Callable

from magent.engine.context import RunOptions
from magent.engine.graph import Graph
from magent.errors import ConfigError
from magent.models import LLMConfig
from magent.store.tasks import TaskDir
from magent.tools.registry import ToolRegistry
from magent.tools.setup import build_registry

SUB_AGENT_SERVER = "agents"
"""The tool namespace of sub-agents (``agents.NAME``): no tool server may take it."""
SEARCH_SERVER = "tools"
"""Where ``tool_selection`` offers ``tools.search``: no tool server may take it then."""


@dataclass(frozen=True)
class RunNeeds:
    """What running ``graph`` takes: tools, servers, secrets, models and limits."""

    graph: Graph
    tool_patterns: tuple[str, ...]
    """Every tool name or pattern the run can reach: agents' tools and tool nodes' tools."""
    mcp_files: tuple[Path, ...]
    secrets: frozenset[str]
    """Values taken from the environment by the run's files and its MCP files (``with_servers``),
    to be redacted from anything written, from the task's first byte on."""
    models: dict[str, LLMConfig]
    """Each agent's model config, with the run's ``--model`` override applied."""
    real_model: bool
    """Some agent calls a real model (litellm must be imported)."""
    delegates: bool
    """Some agent has sub-agents."""

    @classmethod
    def of(cls, graph: Graph, options: RunOptions) -> "RunNeeds":
        patterns: list[str] = []
        for loaded in graph.agents.values():
            patterns.extend(loaded.agent.tools)
        for node in graph.nodes.values():
            tool = getattr(node.config, "tool", None)
            if tool:
                patterns.append(tool)
        models = {}
        for name, loaded in graph.agents.items():
            config = loaded.agent.llm_config
            if options.model_override:
                config = config.model_copy(update={"model": options.model_override, "script": None,
                                                   "models": [], "routing": []})  # (one model: no routing)
            models[name] = config
        judges = [config for rail in graph.rails for config in rail.models()]  # (no --model for them)
        real = options.llm_factory is None and any(c.model != "scripted" for c in [*models.values(), *judges])
        return cls(graph=graph, tool_patterns=tuple(patterns), mcp_files=tuple(graph.mcp_files),
                   secrets=frozenset(graph.secrets), models=models, real_model=real,
                   delegates=any(a.agent.sub_agents for a in graph.agents.values()))

    def with_servers(self, registry: ToolRegistry) -> "RunNeeds":
        """These needs with the secrets the MCP files took from the environment (a server's
        ``env: {TOKEN: ${VAR}}``): known before the task exists, not when a server starts."""
        return replace(self, secrets=self.secrets | registry.secrets)


def prepare(graph: Graph, options: RunOptions) -> RunNeeds:
    """Resolve what the run needs and check it: model configs (scripts, model names, keys) and
    that every tool pattern names a configured server. Raises ``ConfigError`` (exit 2)."""
    needs = _settings_checked(graph, options)
    check_models(needs, options)
    return needs.with_servers(prepare_registry(needs, None, options))


@asynccontextmanager
async def prepared(graph: Graph, options: RunOptions) -> AsyncIterator[RunNeeds]:
    """``prepare`` for a run that starts inside the block, its MCP servers started early: importing
    litellm for a real model's checks takes seconds, as do the servers, so the checks run in a
    thread meanwhile and the registry takes the servers as a batch's rows do (``tools.shared``).
    They stop when the block ends, or at once if a check fails (exit 2, nothing written).
    Scripted runs, batch rows and servers marked ``shared: false`` start with the run."""
    from magent.tools.shared import SharedServers, current, sharing

    needs = _settings_checked(graph, options)
    if not needs.real_model or current() is not None:
        check_models(needs, options)
        yield needs.with_servers(prepare_registry(needs, None, options))
        return
    pool = SharedServers()
    early: asyncio.Task[None] | None = None
    with sharing(pool):
        try:
            registry = prepare_registry(needs, None, options)
            needs = needs.with_servers(registry)
            wanted = set(registry.servers_for(list(needs.tool_patterns))) & registry.shared
            if wanted:
                early = asyncio.create_task(registry.start(only=wanted))
            await asyncio.to_thread(check_models, needs, options)
            yield needs
        finally:
            if early is not None and not early.done():
                early.cancel()
                await asyncio.gather(early, return_exceptions=True)
            await pool.close()


def _settings_checked(graph: Graph, options: RunOptions) -> RunNeeds:
    from magent.redact import load_settings

    load_settings()  # a broken redaction.yaml fails here, before a task exists
    from magent.trace import may_export

    if may_export():
        from magent.trace.telemetry import configured

        configured()  # and so does a broken config/otel.yaml or OTLP endpoint variable
    return RunNeeds.of(graph, options)


def check_models(needs: RunNeeds, options: RunOptions) -> None:
    """Every model config of the run can work (``llm.factory.preflight``), judges' included."""
    if options.llm_factory is not None:
        return
    from magent.llm.factory import preflight

    graph = needs.graph
    from magent.engine.routing import configs

    for name, config in needs.models.items():
        for routed in configs(config):  # each model the agent's routing may choose
            preflight(routed, agent=name, base_dir=graph.agents[name].base_dir)
    for rail in graph.rails:  # a guardrail's judge keeps its own model whatever --model says
        for config in rail.models():
            try:
                preflight(config, agent=rail.key, base_dir=rail.base_dir)
            except ConfigError as exc:
                raise ConfigError(exc.reason.replace(f"agent {rail.key!r}", f"guardrail {rail.name!r} "
                                                     f"({rail.key})"), path=exc.path, line=exc.line,
                                  column=exc.column, field=exc.field) from None


def prepare_registry(needs: RunNeeds, task_dir: TaskDir | None, options: RunOptions,
                     redact: Callable[[str], str] | None = None) -> ToolRegistry:
    """The registry for a run (nothing started). A tool naming an unknown server is a config error."""
    from magent.memory.run import RunMemory

    registry = build_registry(mcp_files=list(needs.mcp_files),
                              artifacts_dir=task_dir.artifacts_dir if task_dir else None,
                              kv_path=(task_dir.path / "kv.jsonl") if task_dir else None,
                              extra_providers=options.extra_providers, redact=redact,
                              memory=RunMemory.for_graph(needs.graph, task_dir.id if task_dir else None, redact))
    unknown = registry.unknown_servers(list(needs.tool_patterns))
    if unknown:
        servers = ", ".join(sorted(registry.providers)) or "none"
        raise ConfigError(f"tool {unknown[0]!r} names a server that is not configured (servers: {servers}; "
                          "add it to config/mcp_servers.yaml or the workflow's mcp_servers file)")
    if needs.delegates and SUB_AGENT_SERVER in registry.providers:
        raise ConfigError(f"a tool server is named {SUB_AGENT_SERVER!r}, which is where sub-agents are "
                          "called (agents.NAME); rename the server")
    if SEARCH_SERVER in registry.providers and any(a.agent.tool_selection for a in needs.graph.agents.values()):
        raise ConfigError(f"a tool server is named {SEARCH_SERVER!r}, which is where an agent's tool_selection "
                          "offers tools.search; rename the server")
    return registry


async def open_registry(needs: RunNeeds, task_dir: TaskDir, options: RunOptions,
                        redact: Callable[[str], str] | None = None) -> ToolRegistry:
    """Start the servers the run can reach, concurrently, while litellm imports if a real model
    is used (both take seconds; together they take as long as the slowest)."""
    registry = prepare_registry(needs, task_dir, options, redact)
    jobs = [registry.start(only=registry.servers_for(list(needs.tool_patterns)))]
    if needs.real_model:
        from magent.llm.factory import warm_import

        jobs.append(asyncio.to_thread(warm_import, options.on_token is not None))
    await asyncio.gather(*jobs)
    return registry
