"""The built-in key-value connector (seed 004): ``kv.get``, ``kv.set``, ``kv.delete``, ``kv.list``.

Values live in memory for the run and, when the run has a task directory, in
its ``kv.json`` (rewritten atomically on each change) so a resumed run sees them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from magent.tools.function import FunctionProvider, ToolFailure


def kv_provider(path: Path | None = None, redact=None) -> FunctionProvider:  # type: ignore[no-untyped-def]
    """``redact`` (text → text) masks secrets in what is written to ``path``; the values in
    memory stay as given for the rest of the run."""
    data: dict[str, Any] = {}
    if path is not None and path.exists():
        try:
            data.update(json.loads(path.read_text()))
        except (OSError, ValueError):
            pass

    def save() -> None:
        if path is not None:
            from magent.store.files import atomic_write, dumps

            atomic_write(path, dumps(data if redact is None else _masked(data, redact), indent=1))

    def get(key: str) -> Any:
        if key not in data:
            raise ToolFailure(f"no key {key!r}")
        return data[key]

    def set_(key: str, value: Any) -> str:
        data[key] = value
        save()
        return f"stored {key}"

    def delete(key: str) -> str:
        if key not in data:
            raise ToolFailure(f"no key {key!r}")
        del data[key]
        save()
        return f"deleted {key}"

    def list_(prefix: str = "") -> list[str]:
        return sorted(k for k in data if k.startswith(prefix))

    key = {"key": {"type": "string", "description": "The key."}}
    p = FunctionProvider("kv")
    p.add("get", get, "Read the value stored under a key.",
          {"type": "object", "properties": key, "required": ["key"]}, idempotent=True)
    p.add("set", set_, "Store a value (any JSON) under a key, replacing what was there.",
          {"type": "object", "properties": {**key, "value": {"description": "Any JSON value."}},
           "required": ["key", "value"]}, idempotent=True)
    p.add("delete", delete, "Remove a key.",
          {"type": "object", "properties": key, "required": ["key"]}, idempotent=False)
    p.add("list", list_, "List the keys, optionally only those starting with a prefix.",
          {"type": "object", "properties": {"prefix": {"type": "string"}}}, idempotent=True)
    return p


def _masked(value: Any, redact) -> Any:  # type: ignore[no-untyped-def]
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _masked(v, redact) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v, redact) for v in value]
    return value
