"""``magent validate``: check any mix of config files and say what each one is."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from magent.config.files import (
    ConfigKind, detect_kind, load_agent, load_mcp_servers, load_retention_policy,
)
from magent.config.yamlfile import display_path, load_file
from magent.errors import ConfigError
from magent.vocabulary import plural


@dataclass
class CheckResult:
    """What ``magent validate`` says of one file (``magent.validate`` returns one per file)."""

    path: str
    """The file, as shown (relative to the working directory when under it)."""
    kind: str | None
    """agent, workflow, mcp_servers, retention_policy or script; None when it could not be told."""
    ok: bool
    """Whether the file is valid."""
    error: str | None = None
    """When not ok: the first error, one line naming file:line:col and the field."""
    summary: str = ""
    """When ok: a few words on what it holds (the model, the node count...)."""
    errors: list[str] = field(default_factory=list)
    """When not ok: every error found in the file, one line each (the first is ``error``)."""

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "valid": self.ok, "error": self.error,
                "errors": self.errors}


def check_file(path: Path, *, servers: bool = False) -> CheckResult:
    """What ``path`` is and whether it is valid; with ``servers``, tool names are checked against
    the live tool lists of the MCP servers it uses (started for this and stopped)."""
    shown = display_path(path)
    kind: ConfigKind | None = None
    try:
        source = load_file(path)
        kind = detect_kind(source)
        summary = ""
        if kind is ConfigKind.agent:
            loaded = load_agent(path, source)
            summary = f"model {loaded.agent.llm_config.model}"
            from magent.engine.graph import single_agent_graph

            graph = single_agent_graph(loaded)  # sub-agents must resolve, transitively; rails must build
            if loaded.agent.sub_agents:
                name = loaded.agent.name
                called = sorted(set(graph.agents) - {name})
                called += [f"{name} (itself)"] if name in loaded.agent.sub_agents else []
                summary += f", sub-agents {', '.join(called)}"
            summary += _rails(len(graph.rails.agents[loaded.agent.name].input)
                              + len(graph.rails.agents[loaded.agent.name].output))
            _check_uses(graph, servers)
        elif kind is ConfigKind.workflow:
            from magent.engine.graph import load_workflow

            graph = load_workflow(path, source=source)
            summary = f"{plural(len(graph.nodes), 'node')}, entry {graph.workflow.entry_point}" + _rails(len(list(graph.rails)))
            _check_uses(graph, servers)
        elif kind is ConfigKind.mcp_servers:
            loaded_mcp = load_mcp_servers(path)
            count = len(loaded_mcp.config.servers)
            summary = plural(count, "server")
        elif kind is ConfigKind.script:
            from magent.llm.scripted import load_script

            summary = f"{len(load_script(path).responses)} responses"
        elif kind is ConfigKind.memory:
            from magent.config.files import load_memory_settings

            settings = load_memory_settings(path, missing_ok=False).settings
            summary = f"embedding model {settings.embedding_model}" if settings.embedding_model \
                else "text search only"
        elif kind is ConfigKind.defaults:
            from magent.config.defaults import load_defaults

            summary = f"model {load_defaults(Path(path)).model or '-'}"
        else:
            load_retention_policy(path, missing_ok=False)
        return CheckResult(path=shown, kind=kind.value, ok=True, summary=summary)
    except ConfigError as exc:
        errors = [str(e) for e in exc.errors]
        return CheckResult(path=shown, kind=kind.value if kind else None, ok=False, error=errors[0],
                           errors=errors)


def _check_uses(graph: Any, servers: bool) -> None:
    """The tools, scripts and template values a loaded graph names exist; one error carries all."""
    from magent.tools.names import ToolUse, check_tool_names

    uses: list[ToolUse] = []
    errors: list[ConfigError] = []
    for name, loaded in graph.agents.items():
        assert loaded.source is not None
        at = ("agents", name) if graph.source is loaded.source and graph.kind == "workflow" else ()
        uses.extend(ToolUse(t, loaded.source, at + ("tools", i)) for i, t in enumerate(loaded.agent.tools))
        uses.extend(ToolUse(t, loaded.source, at + ("deny_tools", i), denied=True)
                    for i, t in enumerate(loaded.agent.deny_tools))
        always = loaded.agent.tool_selection.always if loaded.agent.tool_selection is not None else []
        uses.extend(ToolUse(t, loaded.source, at + ("tool_selection", "always", i)) for i, t in enumerate(always))
        errors.extend(_script_errors(loaded, at + ("llm_config", "script")))
    if graph.workflow is not None and graph.source is not None and graph.kind == "workflow":
        for node, config in graph.nodes.items():
            tool = getattr(config.config, "tool", None)
            if tool:
                uses.append(ToolUse(tool, graph.source, ("nodes", node, "tool")))
    errors.extend(check_tool_names(uses, graph.mcp_files, live=servers))
    from magent.api.references import check_references

    errors.extend(check_references(graph))  # what conditions and templates read is there
    if errors:
        errors.sort(key=lambda e: (e.path or "", e.line or 0, e.column or 0))
        raise ConfigError.of_all(errors)


def _script_errors(loaded: Any, at: tuple[Any, ...]) -> list[ConfigError]:
    """A scripted agent's script file is there and well formed."""
    from magent.llm.scripted import SCRIPTED, load_script, resolve_script

    config = loaded.agent.llm_config
    if config.model != SCRIPTED or loaded.source is None:
        return []
    path = resolve_script(config.script, loaded.base_dir, loaded.agent.name)
    if not path.is_file():
        return [loaded.source.error(f"script file {config.script!r} not found (looked for "
                                    f"{display_path(path)})", at)]
    try:
        load_script(path)
    except ConfigError as exc:
        return list(exc.errors)
    return []


def _rails(n: int) -> str:
    return ", " + plural(n, "guardrail") if n else ""
