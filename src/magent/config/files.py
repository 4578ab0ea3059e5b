"""Loading each kind of config file: agents, workflows, MCP servers, retention policies."""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magent.config.validate import validate
from magent.config.yamlfile import SourceFile, load_file
from magent.errors import ConfigError
from magent.models import Agent, MemorySettings, Workflow

if TYPE_CHECKING:  # loaded by the functions that read such a file (a run reads neither)
    from magent.models import MCPServersFile, RetentionPolicy


class ConfigKind(str, Enum):
    agent = "agent"
    workflow = "workflow"
    mcp_servers = "mcp_servers"
    retention_policy = "retention_policy"
    script = "script"
    """A scripted model's ``responses:`` file."""
    memory = "memory"
    """Long-term memory settings (``config/memory.yaml``)."""
    defaults = "defaults"
    """``config/defaults.yaml``: the default model and endpoint."""


_MARKERS: list[tuple[ConfigKind, set[str]]] = [
    (ConfigKind.workflow, {"nodes", "entry_point", "edges"}),
    (ConfigKind.mcp_servers, {"servers", "builtins"}),
    (ConfigKind.retention_policy, {"default_days", "by_task", "by_status", "keep_checkpoints", "memory"}),
    (ConfigKind.agent, {"system_prompt", "llm_config", "role"}),
    (ConfigKind.script, {"responses"}),
    (ConfigKind.memory, {"embedding_model", "embedding_endpoint", "embedding_api_key",
                         "embedding_timeout_seconds", "busy_timeout_seconds", "consolidation"}),
    (ConfigKind.defaults, {"model", "endpoint"}),
]


def detect_kind(source: SourceFile) -> ConfigKind:
    """Tell which kind of config a parsed file is, from its top-level keys."""
    data = source.data
    if data in (None, {}):
        raise source.error("the file is empty (or holds only comments)")
    if not isinstance(data, dict):
        raise source.error("expected a mapping of fields at the top of the file")
    keys = set(data)
    scores = [(len(keys & markers), kind) for kind, markers in _MARKERS]
    best = max(score for score, _ in scores)
    winners = [kind for score, kind in scores if score == best]
    if best == 0 or len(winners) > 1:
        raise source.error(
            "cannot tell what kind of config this is: an agent has system_prompt and llm_config, "
            "a workflow nodes and entry_point, an MCP file servers, a retention policy default_days, "
            "a scripted model's file responses, memory settings embedding_model or consolidation, "
            "a defaults file model")
    return winners[0]


@dataclass(eq=False)
class LoadedAgent:
    agent: Agent
    source: SourceFile | None
    """None for agents defined inline in a workflow."""
    default_model: bool = False
    """Its file names no model: it runs on the default one (``config.defaults``)."""

    @property
    def base_dir(self) -> Path:
        return self.source.path.parent if self.source else Path.cwd()


def load_agent(path: Path | str, source: SourceFile | None = None) -> LoadedAgent:
    source = source or load_file(path)
    agent, defaulted = validate_agent(source)
    return LoadedAgent(agent=agent, source=source, default_model=defaulted)


def validate_agent(source: SourceFile, data: Any = None, prefix: tuple[Any, ...] = ()) -> tuple[Agent, bool]:
    """An agent's fields (the whole file, or ``data`` at ``prefix`` for one defined inline),
    with the default model when they name none (``config.defaults``); and whether it did."""
    from magent.config.defaults import with_default_model

    from magent.config.prompts import resolve_ref

    raw = source.data if data is None else data
    if isinstance(raw, dict):  # system_prompt: {prompt: NAME, version: V} → the stored text
        raw = resolve_ref(source, raw, "system_prompt", prefix)
    filled, defaulted = with_default_model(raw)
    llm = raw.get("llm_config") if isinstance(raw, dict) else None
    if not defaulted and isinstance(raw, dict) and (llm is None or (isinstance(llm, dict)
                                                                    and llm.get("model") is None
                                                                    and not llm.get("models"))):
        try:  # any other mistake first (a misspelt "modle" explains the missing model best)
            validate(source, Agent, data=raw, prefix=prefix)
        except ConfigError as exc:
            if not (exc.field or "").split(".")[-1] in ("llm_config", "model"):
                raise
        raise source.error("no model: name one in llm_config.model, or set a default with MAGENT_MODEL "
                           "or model in config/defaults.yaml (see magent config show)",
                           prefix + (("llm_config",) if "llm_config" in raw else ()))
    agent = validate(source, Agent, data=filled, prefix=prefix)
    _check_scripted(source, agent.llm_config.model, agent.llm_config.script, prefix + ("llm_config",))
    _check_always(source, agent, prefix + ("tool_selection", "always"))
    return agent, defaulted


def _check_always(source: SourceFile, agent: Agent, at: tuple[Any, ...]) -> None:
    """``tool_selection.always`` names only tools the agent may call."""
    import difflib
    import fnmatch

    for i, name in enumerate(agent.tool_selection.always if agent.tool_selection is not None else ()):
        denied = next((d for d in agent.deny_tools if fnmatch.fnmatchcase(name, d)), None)
        if denied is not None and any(fnmatch.fnmatchcase(name, p) for p in agent.tools):
            raise source.error(f"{name!r} is denied by deny_tools ({denied!r}): it cannot always be sent", at + (i,))
        if not any(fnmatch.fnmatchcase(name, p) for p in agent.tools) or denied is not None:
            close = difflib.get_close_matches(name, agent.tools, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (tools: {', '.join(agent.tools) or 'none'})"
            raise source.error(f"{name!r} is not one of the agent's tools{hint}", at + (i,))


def _check_scripted(source: SourceFile, model: str, script: str | None, at: tuple[Any, ...]) -> None:
    if model == "scripted" and not script:
        raise source.error("model 'scripted' needs a 'script' file of responses", at + ("script",))
    if script and model != "scripted":
        raise source.error("'script' is only used with model 'scripted'", at + ("script",))


def load_workflow_file(path: Path | str, source: SourceFile | None = None) -> tuple[Workflow, SourceFile]:
    """Parse and validate a workflow's fields. Graph checks are ``engine.graph``'s job."""
    source = source or load_file(path)
    return validate(source, Workflow), source


@dataclass(eq=False)
class LoadedMCP:
    config: MCPServersFile
    source: SourceFile | None

    @property
    def base_dir(self) -> Path:
        return self.source.path.parent if self.source else Path.cwd()


def load_mcp_servers(path: Path | str, *, missing_ok: bool = False) -> LoadedMCP:
    from magent.models import MCPServersFile

    path = Path(path)
    if missing_ok and not os.path.lexists(path):  # (a link to nowhere is read, and said)
        return LoadedMCP(config=MCPServersFile(), source=None)
    source = load_file(path)
    if source.data in (None, {}):
        return LoadedMCP(config=MCPServersFile(), source=source)
    config = validate(source, MCPServersFile)
    seen: dict[str, int] = {}
    for i, server in enumerate(config.servers):
        if server.name in seen:
            raise source.error(f"duplicate server name {server.name!r} (also servers[{seen[server.name]}])",
                               ("servers", i, "name"))
        if server.name in ("kv", "http", "shell", "memory"):
            raise source.error(f"server name {server.name!r} is taken by a built-in connector",
                               ("servers", i, "name"))
        seen[server.name] = i
    return LoadedMCP(config=config, source=source)


def load_retention_policy(path: Path | str, *, missing_ok: bool = True) -> RetentionPolicy:
    from magent.models import RetentionPolicy

    path = Path(path)
    if missing_ok and not os.path.lexists(path):  # (a link to nowhere is read, and said)
        return RetentionPolicy()
    source = load_file(path)
    if source.data in (None, {}):
        return RetentionPolicy()
    return validate(source, RetentionPolicy)



@dataclass(eq=False)
class LoadedMemorySettings:
    settings: MemorySettings
    secrets: set[str]
    """Values taken from the environment (an embedding API key): masked wherever they appear."""


def load_memory_settings(path: Path | str, *, missing_ok: bool = True) -> LoadedMemorySettings:
    path = Path(path)
    if missing_ok and not os.path.lexists(path):  # (a link to nowhere is read, and said)
        return LoadedMemorySettings(MemorySettings(), set())
    source = load_file(path)
    if source.data in (None, {}):
        return LoadedMemorySettings(MemorySettings(), set(source.secrets))
    return LoadedMemorySettings(validate(source, MemorySettings), set(source.secrets))
