"""Building a run's tool registry from the MCP files (the home's, then a workflow's own);
``build_registry`` starts nothing, a run then starts only the servers its agents reach."""

from __future__ import annotations

import asyncio
import functools
import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from magent.models.tools import Builtins, ToolLimits
from magent.tools.base import ToolProvider
from magent.tools.ratelimit import RateLimiter
from magent.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from magent.models.servers import MCPServersFile


@functools.cache
def _default_builtins() -> Builtins:
    """The built-in connectors' settings when no file sets them, made once per process (a run
    used to make them twice, ~0.6 ms each: pydantic's ``model_construct`` inspects the signature
    of each default factory every time). Shared, so never changed in place: ``_overlay`` lays a
    file's settings over a copy."""
    return Builtins.defaults()


@dataclass(eq=False)
class ToolConfig:
    """The MCP files of a run merged: later files override servers of the same name."""

    servers: dict[str, Any] = field(default_factory=dict)
    """Server name → ``StdioServer | HttpServer``."""
    base_dirs: dict[str, Path] = field(default_factory=dict)
    """Server name → directory of the file that defined it (relative ``cwd`` resolves there)."""
    sources: dict[str, Path] = field(default_factory=dict)
    """Server name → the file that defined it."""
    builtins: Builtins = field(default_factory=_default_builtins)
    limits: ToolLimits = field(default_factory=ToolLimits.defaults)
    secrets: set[str] = field(default_factory=set)


def load_tool_config(mcp_files: Iterable[Path] = (), *, home_config: bool = True) -> ToolConfig:
    """Read the home's ``config/mcp_servers.yaml`` and then each of ``mcp_files`` (which must
    exist); a later file overrides only the sections it writes. Problems are ``ConfigError``."""
    from magent import paths
    from magent.config.files import load_mcp_servers

    out = ToolConfig()
    loaded = []
    home_file = paths.mcp_servers_file()
    if home_config and os.path.lexists(home_file):  # none: nothing to add (and no model to build for it)
        loaded.append(load_mcp_servers(home_file))
    loaded.extend(load_mcp_servers(Path(f)) for f in mcp_files)
    for item in loaded:
        cfg: MCPServersFile = item.config
        for server in cfg.servers:
            out.servers[server.name] = server
            out.base_dirs[server.name] = item.base_dir
            if item.source is not None:
                out.sources[server.name] = item.source.path
        out.builtins = _overlay(out.builtins, cfg.builtins)
        out.limits = _overlay(out.limits, cfg.limits)
        if item.source is not None:
            out.secrets |= item.source.secrets
    return out


def _overlay(base: Any, top: Any) -> Any:
    """``base`` with the fields ``top`` explicitly set (recursively for nested models)."""
    update = {}
    for name in top.model_fields_set:
        value = getattr(top, name)
        current = getattr(base, name)
        update[name] = _overlay(current, value) if hasattr(value, "model_fields_set") else value
    return base.model_copy(update=update)


def tool_settings(config: ToolConfig) -> dict[str, dict[str, Any]]:
    """``server.tool`` → the per-tool settings a file wrote explicitly (others keep the server's)."""
    out: dict[str, dict[str, Any]] = {}
    for server in config.servers.values():
        for tool, settings in server.tools.items():
            # Values as they are (a ``rate_limit`` stays a model): ``Tool.model_copy`` applies them unvalidated.
            written = {name: getattr(settings, name) for name in settings.model_fields_set}
            if written:
                out[f"{server.name}.{tool}"] = written
    return out


def build_registry(*, mcp_files: Iterable[Path] = (), artifacts_dir: Path | None = None,
                   kv_path: Path | None = None, extra_providers: Iterable[ToolProvider] = (),
                   home_config: bool = True, config: ToolConfig | None = None,
                   redact: Callable[[str], str] | None = None, memory: Any = None) -> ToolRegistry:
    """A registry with the built-in connectors and every configured MCP server, none started.
    ``kv`` and ``memory`` are on and ``http`` and ``shell`` off unless a file says otherwise;
    ``extra_providers`` are added last and win over a server of the same name."""
    config = config or load_tool_config(mcp_files, home_config=home_config)
    providers: list[ToolProvider] = []
    if config.builtins.kv.enabled:
        from magent.tools.kv import kv_provider

        providers.append(kv_provider(kv_path, redact=redact))
    if memory is None:
        from magent.memory.run import RunMemory

        memory = RunMemory(task_id=None, workflow=None, redact=redact)
    if config.builtins.memory.enabled:
        from magent.tools.memory import memory_provider

        providers.append(memory_provider(memory))
    if config.builtins.http.enabled:
        from magent.tools.http import http_provider

        providers.append(http_provider(config.builtins.http))
    if config.builtins.shell.enabled:
        from magent.tools.shell import ShellProvider

        providers.append(ShellProvider(config.builtins.shell))
    from magent.tools.shared import current

    pool = current()  # a batch's shared server processes, when this run is one of its rows
    shared: set[str] = set()
    if config.servers:  # the MCP SDK takes a third of a second to import: only when a server is configured
        from magent.tools.mcp import MCPProvider
    for name, server in config.servers.items():
        provider = pool.provider(server, base_dir=config.base_dirs.get(name), secrets=config.secrets) \
            if pool is not None else None
        if provider is not None:
            shared.add(name)
        else:
            provider = MCPProvider(server, base_dir=config.base_dirs.get(name), secrets=config.secrets)
            provider.source = config.sources.get(name)
        providers.append(provider)
    providers.extend(extra_providers)
    limiter = RateLimiter({name: server.rate_limit for name, server in config.servers.items()
                           if server.rate_limit is not None})
    registry = ToolRegistry(providers, limits=config.limits, artifacts_dir=artifacts_dir,
                            settings=tool_settings(config), limiter=limiter,
                            retries={name: server.retry for name, server in config.servers.items()
                                     if server.retry is not None})
    registry.shared = shared - {p.name for p in extra_providers}
    registry.secrets = set(config.secrets)
    registry.redact = redact
    registry.memory = memory
    return registry


async def start_with_imports(registry: ToolRegistry, only: Iterable[str] | None = None,
                             modules: Iterable[str] = ()) -> None:
    """Start servers while heavy modules import in a worker thread (start-up is mostly waiting);
    an import error is raised after the servers have started."""
    imports = [asyncio.to_thread(importlib.import_module, m) for m in modules]
    results = await asyncio.gather(registry.start(only=only), *imports, return_exceptions=True)
    for res in results:
        if isinstance(res, BaseException):
            raise res
