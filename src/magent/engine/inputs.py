"""Turning command-line inputs into State updates: ``--set k=v`` and ``--modify FILE``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import yaml

from magent.errors import UsageError
from magent.models import State

STATE_FIELDS = ("routing_key", "next_action", "current_agent")


def check_model_override(model: str | None) -> None:
    """``--model`` names a model when given (an empty one was taken as no --model at all)."""
    if model is not None and not model.strip():
        raise UsageError("--model is empty: name a model (e.g. openai/gpt-4o-mini) or leave --model out")


def parse_sets(pairs: list[str]) -> dict[str, Any]:
    """``["topic=owls", "score=0.9", "a.b=1"]`` → State updates. Values are YAML scalars, or a list
    written ``[a, b, c]``; ``routing_key``, ``next_action`` and ``current_agent`` set those
    fields, any other key (dots for nesting) goes into ``metadata``."""
    values: list[tuple[str, Any, str]] = []
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--set {pair!r}: expected KEY=VALUE")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        is_list = isinstance(value, list) and raw.strip().startswith("[")
        if (isinstance(value, (dict, list)) and not is_list) or value is None and raw.strip() not in ("null", "~"):
            value = raw
        values.append((key, value, f"--set {pair!r}"))
    return _updates(values)


def updates_from(values: Mapping[str, Any]) -> dict[str, Any]:
    """State updates from ``{key: value}`` with ``--set``'s rules for keys (the Python API's
    ``set=``): values are used as given; ``metadata`` given a mapping merges into metadata."""
    if not isinstance(values, Mapping):
        raise UsageError(f"set= takes a mapping of State keys to values, not {type(values).__name__}")
    pairs: list[tuple[str, Any, str]] = []
    for key, value in values.items():
        if not isinstance(key, str) or not key.strip():
            raise UsageError(f"set={{{key!r}: ...}}: keys are non-empty strings")
        if key == "metadata" and isinstance(value, Mapping):
            pairs.extend((f"metadata.{k}", v, f"set={{'metadata': {{{k!r}: ...}}}}")
                         for k, v in value.items())
            continue
        pairs.append((key.strip(), value, f"set={{{key!r}: ...}}"))
    return _updates(pairs)


def _updates(values: list[tuple[str, Any, str]]) -> dict[str, Any]:
    updates: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    for key, value, label in values:
        if key in STATE_FIELDS:
            updates[key] = value
            continue
        parts = key.split(".")
        if any(not p for p in parts):
            raise UsageError(f"{label}: empty part in key {key!r}")
        if parts[0] == "metadata" and len(parts) > 1:
            parts = parts[1:]
        target = metadata
        for part in parts[:-1]:
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                raise UsageError(f"{label}: {part!r} is already a value")
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


def modify_fields() -> list[str]:
    """What a ``--modify`` answer may set: ``output`` (the paused output, replaced) and State's fields."""
    return ["output", *State.model_fields]


def load_modify_file(path: Path) -> dict[str, Any]:
    """State updates from a YAML or JSON file (``resume --modify FILE``); ``output`` replaces
    the output the pause shows (the text the next nodes work on)."""
    from magent.config.yamlfile import load_file

    source = load_file(path)
    if source.data in (None, {}):
        return {}
    if not isinstance(source.data, dict):
        raise source.error("expected a mapping of State fields (output, metadata, routing_key, next_action, "
                           "current_agent, messages)")
    unknown = [k for k in source.data if k not in modify_fields()]
    if unknown:
        raise source.error(f"unknown State field {unknown[0]!r} (fields: {', '.join(modify_fields())})",
                           (unknown[0],))
    if "output" in source.data and not isinstance(source.data["output"], str):
        raise source.error("output: expected the replacement text", ("output",))
    return source.data
