"""The file layout under the home: tasks, checkpoints, entries, events, traces, locks.

Knows no LLM and no engine; everything else reaches the disk through here.
"""

from magent.store.checkpoints import CheckpointLog
from magent.store.entries import EntryLog, to_message
from magent.store.files import (
    JsonlWriter, atomic_write, create_immutable, ensure_dir, read_json, read_jsonl, write_json,
)
from magent.store.locks import Lock
from magent.store.tasks import Store, TaskDir

__all__ = [
    "CheckpointLog", "EntryLog", "JsonlWriter", "Lock", "Store", "TaskDir", "atomic_write",
    "create_immutable", "ensure_dir", "read_json", "read_jsonl", "to_message", "write_json",
]
