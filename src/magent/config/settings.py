"""The effective settings and where each came from (``magent config show``): all a user can set."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from magent import paths
from magent.config.defaults import ENDPOINT_ENV, MODEL_ENV, default_model, defaults_file, load_defaults
from magent.vocabulary import plural

BUILT_IN = "built-in default"


@dataclass(frozen=True)
class Setting:
    name: str
    value: Any
    source: str
    """An environment variable, a file, or ``built-in default``."""

    @property
    def shown(self) -> str:
        return "-" if self.value is None else str(self.value)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "source": self.source}


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


def effective_settings(root: Path | None = None) -> list[Setting]:
    from magent.config.files import load_mcp_servers, load_retention_policy
    from magent.config.yamlfile import MAX_BYTES_ENV, max_config_bytes

    home = root or paths.home()
    out = [Setting("home", str(home), "MAGENT_HOME" if _env(paths.HOME_ENV) else f"{BUILT_IN} ({paths.DEFAULT_HOME})")]

    chosen = default_model(home)
    out.append(Setting("model", chosen.model, chosen.source if chosen.model
                       else "not set: each agent names its own (llm_config.model)"))
    file_endpoint = load_defaults(defaults_file(home)).endpoint if chosen.source != MODEL_ENV else None
    endpoint_from = (ENDPOINT_ENV if _env(ENDPOINT_ENV) else str(defaults_file(home)) if file_endpoint
                     else "not set: the model provider's own")
    out.append(Setting("endpoint", chosen.endpoint, endpoint_from))

    policy_file = paths.retention_policy_file(home)
    policy = load_retention_policy(policy_file)
    policy_from = str(policy_file) if policy_file.exists() else BUILT_IN
    out.append(Setting("retention.default_days", policy.default_days, policy_from))
    out.append(Setting("retention.keep_checkpoints", policy.keep_checkpoints, policy_from))

    mcp_file = paths.mcp_servers_file(home)
    if os.path.lexists(mcp_file):  # (a link to nowhere is read, and said)
        count = len(load_mcp_servers(mcp_file).config.servers)
        out.append(Setting("mcp_servers", plural(count, "server"), str(mcp_file)))
    else:
        out.append(Setting("mcp_servers", "none", f"{mcp_file} (not there: magent init creates it)"))
    redaction = paths.redaction_file(home)
    out.append(Setting("redaction", "configured" if redaction.exists() else "defaults",
                       str(redaction) if redaction.exists() else BUILT_IN))

    cost_map = _env("LITELLM_LOCAL_MODEL_COST_MAP")
    local = cost_map is None or cost_map.lower() in ("true", "1", "yes")
    out.append(Setting("cost_map", "bundled with litellm" if local else "fetched by litellm",
                       "LITELLM_LOCAL_MODEL_COST_MAP" if cost_map is not None else BUILT_IN))
    out.append(Setting("max_config_bytes", max_config_bytes(),
                       MAX_BYTES_ENV if _env(MAX_BYTES_ENV) else BUILT_IN))
    out.append(Setting("debug", "on" if _env("MAGENT_DEBUG") == "1" else "off",
                       "MAGENT_DEBUG" if _env("MAGENT_DEBUG") else BUILT_IN))
    return out
