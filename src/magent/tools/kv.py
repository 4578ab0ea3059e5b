"""The built-in key-value connector (seed 004): ``kv.get``, ``kv.set``, ``kv.delete``, ``kv.list``.

Values live in memory for the run and in the task's ``kv.jsonl``, a journal of changes appended
and fsynced before each call returns (in a worker thread, one change at a time: its fsync on the
event loop's thread would stall every task of the process), so a resume sees them and a fork
sees them as at its checkpoint. An older task's ``kv.json`` is the starting state, copied into
the journal (``{"op": "load"}``) at the first change."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from magent.offloop import off_loop
from magent.tools.function import FunctionProvider, ToolFailure

LEGACY_FILE = "kv.json"


def kv_state(path: Path) -> dict[str, Any]:
    """The store a journal at ``path`` describes (its legacy ``kv.json`` when there is none)."""
    from magent.store.files import loads, read_bytes
    from magent.store.journal import Journal

    journal = Journal(path)
    data: dict[str, Any] = {}
    if not journal.exists():
        legacy = path.with_name(LEGACY_FILE)
        try:
            loaded = loads(read_bytes(legacy))  # never through a link (SymlinkError)
        except (OSError, ValueError):
            return data
        return loaded if isinstance(loaded, dict) else data
    for change in journal.changes():
        op = change.get("op")
        if op == "set" and isinstance(change.get("key"), str):
            data[change["key"]] = change.get("value")
        elif op == "delete":
            data.pop(change.get("key"), None)
        elif op == "load" and isinstance(change.get("data"), dict):
            data = dict(change["data"])
    return data


def kv_provider(path: Path | None = None, redact=None) -> FunctionProvider:  # type: ignore[no-untyped-def]
    """``path`` is the task's ``kv.jsonl`` (None: in memory only). ``redact`` (text → text) masks
    secrets in what is written there; the values in memory stay as given for the rest of the run."""
    data: dict[str, Any] = kv_state(path) if path is not None else {}
    journal = None
    if path is not None:
        from magent.store.journal import Journal

        journal = Journal(path)
        if not journal.exists() and data:  # a legacy kv.json: its state starts the journal
            journal.append({"op": "load", "data": _mask(data, redact)})

    turn = asyncio.Lock()
    """Held while a change is written and applied: the journal and the values agree."""

    async def record(change: dict[str, Any]) -> None:
        if journal is not None:
            await off_loop(journal.append, _mask(change, redact))

    def get(key: str) -> Any:
        if key not in data:
            raise ToolFailure(f"no key {key!r}")
        return data[key]

    async def set_(key: str, value: Any) -> str:
        async with turn:
            await record({"op": "set", "key": key, "value": value})
            data[key] = value
        return f"stored {key}"

    async def delete(key: str) -> str:
        async with turn:
            if key not in data:
                raise ToolFailure(f"no key {key!r}")
            await record({"op": "delete", "key": key})
            del data[key]
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


def _mask(value: Any, redact) -> Any:  # type: ignore[no-untyped-def]
    if redact is None:
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _mask(v, redact) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, redact) for v in value]
    return value
