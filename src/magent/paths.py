"""The one place that knows where magent keeps its state.

Everything under the home is reached through these functions, so tests (and
users) move all state at once by setting ``MAGENT_HOME``.
"""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "MAGENT_HOME"
DEFAULT_HOME = "~/.multi-agent"


def home() -> Path:
    """The state root: ``$MAGENT_HOME`` if set, else ``~/.multi-agent``."""
    raw = os.environ.get(HOME_ENV) or DEFAULT_HOME
    return Path(raw).expanduser().absolute()


def tasks_dir(root: Path | None = None) -> Path:
    return (root or home()) / "tasks"


def locks_dir(root: Path | None = None) -> Path:
    return (root or home()) / "locks"


def config_dir(root: Path | None = None) -> Path:
    return (root or home()) / "config"


def agents_dir(root: Path | None = None) -> Path:
    return (root or home()) / "agents"


def workflows_dir(root: Path | None = None) -> Path:
    return (root or home()) / "workflows"


def mcp_servers_file(root: Path | None = None) -> Path:
    return config_dir(root) / "mcp_servers.yaml"


def retention_policy_file(root: Path | None = None) -> Path:
    return config_dir(root) / "retention_policy.yaml"
