"""The file layout under the home: tasks, checkpoints, entries, events, traces, locks.

Knows no LLM and no engine; everything else reaches the disk through here.

The names below are loaded on first use (PEP 562), so importing one light
module of the store (``magent.store.listing``, ``magent.store.locks``) does not
import pydantic and the models: ``magent tasks list`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from magent.store.checkpoints import CheckpointLog
    from magent.store.entries import EntryLog, to_message
    from magent.store.files import (
        JsonlWriter, atomic_write, create_immutable, ensure_dir, read_json, read_jsonl, write_json,
    )
    from magent.store.locks import Lock
    from magent.store.tasks import Store, TaskDir

_EXPORTS = {
    "CheckpointLog": "checkpoints", "EntryLog": "entries", "to_message": "entries",
    "JsonlWriter": "files", "atomic_write": "files", "create_immutable": "files",
    "ensure_dir": "files", "read_json": "files", "read_jsonl": "files", "write_json": "files",
    "Lock": "locks", "Store": "tasks", "TaskDir": "tasks",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'magent.store' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"magent.store.{module}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
