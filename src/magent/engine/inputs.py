"""Turning command-line inputs into State updates: ``--set k=v`` and ``--modify FILE``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from magent.errors import UsageError
from magent.models import State

STATE_FIELDS = ("routing_key", "next_action", "current_agent")


def parse_sets(pairs: list[str]) -> dict[str, Any]:
    """``["topic=owls", "score=0.9", "a.b=1"]`` → State updates.

    Values are read as YAML scalars (numbers, booleans, null, or text). Keys
    ``routing_key``, ``next_action`` and ``current_agent`` set those State
    fields; any other key (dots for nesting) goes into ``metadata``.
    """
    updates: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--set {pair!r}: expected KEY=VALUE")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        if isinstance(value, (dict, list)) or value is None and raw.strip() not in ("null", "~"):
            value = raw
        if key in STATE_FIELDS:
            updates[key] = value
            continue
        parts = key.split(".")
        if any(not p for p in parts):
            raise UsageError(f"--set {pair!r}: empty part in key {key!r}")
        if parts[0] == "metadata" and len(parts) > 1:
            parts = parts[1:]
        target = metadata
        for part in parts[:-1]:
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                raise UsageError(f"--set {pair!r}: {part!r} is already a value")
        target[parts[-1]] = value
    if metadata:
        updates["metadata"] = metadata
    return updates


def merge_updates(state: State, updates: dict[str, Any]) -> State:
    """Apply updates where ``metadata`` is merged key by key (deeply) instead of replaced."""
    if "metadata" in updates and isinstance(updates["metadata"], dict):
        updates = {**updates, "metadata": _deep_merge(state.metadata, updates["metadata"])}
    try:
        return state.apply(updates)
    except ValueError as exc:
        raise UsageError(f"state update does not fit the State schema: {exc}") from None


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def load_modify_file(path: Path) -> dict[str, Any]:
    """State updates from a YAML or JSON file (``resume --modify FILE``)."""
    from magent.config.yamlfile import load_file

    source = load_file(path)
    if source.data in (None, {}):
        return {}
    if not isinstance(source.data, dict):
        raise source.error("expected a mapping of State fields (metadata, routing_key, next_action, "
                           "current_agent, messages)")
    unknown = [k for k in source.data if k not in State.model_fields]
    if unknown:
        raise source.error(f"unknown State field {unknown[0]!r} (fields: {', '.join(State.model_fields)})",
                           (unknown[0],))
    return source.data
