"""``magent validate``: check any mix of config files and say what each one is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from magent.config.files import (
    ConfigKind, detect_kind, load_agent, load_mcp_servers, load_retention_policy,
)
from magent.config.yamlfile import display_path, load_file
from magent.errors import ConfigError


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
    """When not ok: the one-line error, naming file:line:col and the field."""
    summary: str = ""
    """When ok: a few words on what it holds (the model, the node count...)."""

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "valid": self.ok, "error": self.error}


def check_file(path: Path) -> CheckResult:
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
                summary += f", sub-agents {', '.join(sorted(set(graph.agents) - {loaded.agent.name}))}"
            summary += _rails(len(graph.rails.agents[loaded.agent.name].input)
                              + len(graph.rails.agents[loaded.agent.name].output))
        elif kind is ConfigKind.workflow:
            from magent.engine.graph import load_workflow

            graph = load_workflow(path, source=source)
            summary = f"{len(graph.nodes)} nodes, entry {graph.workflow.entry_point}" + _rails(len(list(graph.rails)))
        elif kind is ConfigKind.mcp_servers:
            loaded_mcp = load_mcp_servers(path)
            count = len(loaded_mcp.config.servers)
            summary = f"{count} server{'' if count == 1 else 's'}"
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
        return CheckResult(path=shown, kind=kind.value if kind else None, ok=False, error=str(exc))


def _rails(n: int) -> str:
    return f", {n} guardrail{'s' if n != 1 else ''}" if n else ""
