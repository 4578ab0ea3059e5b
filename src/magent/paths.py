"""The one place that knows where magent keeps its state: ``MAGENT_HOME`` moves all of it, and
the API's ``home=`` moves it for one call (``using_home``, a context variable)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Iterator, Union

HOME_ENV = "MAGENT_HOME"
DEFAULT_HOME = "~/.multi-agent"

_chosen: ContextVar[Union[Path, None]] = ContextVar("magent_home", default=None)


def home() -> Path:
    """The state root: ``using_home``'s for this call, else ``$MAGENT_HOME``, else ``~/.multi-agent``."""
    chosen = _chosen.get()
    if chosen is not None:
        return chosen
    raw = os.environ.get(HOME_ENV) or DEFAULT_HOME
    return Path(raw).expanduser().absolute()


@contextmanager
def using_home(root: Union[str, "os.PathLike[str]", None]) -> Iterator[Path]:
    """Inside the block (this task or thread only), ``home()`` is ``root`` (``None``: unchanged)."""
    if root is None:
        yield home()
        return
    token = _chosen.set(Path(root).expanduser().absolute())
    try:
        yield home()
    finally:
        _chosen.reset(token)


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


def redaction_file(root: Path | None = None) -> Path:
    return config_dir(root) / "redaction.yaml"


def memory_dir(root: Path | None = None) -> Path:
    """Long-term memory shared by every task (one SQLite database)."""
    return (root or home()) / "memory"


def memory_db(root: Path | None = None) -> Path:
    return memory_dir(root) / "memory.db"


def memory_settings_file(root: Path | None = None) -> Path:
    return config_dir(root) / "memory.yaml"


def defaults_file(root: Path | None = None) -> Path:
    return config_dir(root) / "defaults.yaml"
