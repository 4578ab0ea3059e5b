"""Tool definition pinning: a task notices when a server changes a tool under it.

A tool's first use stores a hash of its description and schema in ``tool_pins.jsonl`` (a journal:
the last line for a tool wins, so a fork sees the pins of its checkpoint). A different definition
later makes ``check`` return a ``PinChange`` and the run pauses; the pin moves only on
``accept``, so a refused change keeps pausing."""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from magent.models import Tool

PINS_FILE = "tool_pins.jsonl"
LEGACY_FILE = "tool_pins.json"
"""What an older magent wrote (``{"schema_version": 1, "pins": {...}}``): read as the first pins."""
MAX_DIFF_LINES = 30


def definition(tool: Tool) -> dict[str, Any]:
    """The part of a tool that is pinned: what the model reads to decide how to use it."""
    return {"description": tool.description, "input_schema": tool.input_schema}


def definition_hash(tool: Tool) -> str:
    canonical = json.dumps(definition(tool), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(eq=False)
class PinChange:
    """A tool whose definition differs from the one pinned for this task."""

    tool: str
    old_hash: str
    new_hash: str
    old_description: str
    new_description: str
    old_schema: dict[str, Any]
    new_schema: dict[str, Any]
    pinned_at: str = ""
    diff: list[str] = field(default_factory=list)
    """Short human-readable lines: what changed in the description and the schema."""

    @property
    def question(self) -> str:
        """The question to ask a person when pausing."""
        return (f"The definition of tool {self.tool} changed since this task first used it. "
                "Approve to use the new definition, reject to stop.")

    def text(self) -> str:
        return "\n".join([f"tool {self.tool} changed ({self.old_hash[:19]} → {self.new_hash[:19]}):", *self.diff])

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "old_hash": self.old_hash, "new_hash": self.new_hash,
                "old_description": self.old_description, "new_description": self.new_description,
                "old_schema": self.old_schema, "new_schema": self.new_schema,
                "pinned_at": self.pinned_at, "diff": self.diff}


class PinStore:
    """The pins of one task, in ``path`` (written atomically on each new pin)."""

    def __init__(self, path: Path):
        from magent.store.journal import Journal

        self.path = path
        self.journal = Journal(path)
        self.warnings: list[str] = []
        self._pins: dict[str, dict[str, Any]] = self._load()
        self._digests: dict[str, tuple[Tool, str]] = {}
        """The hash of each tool definition checked, with the definition (a tool object is
        replaced, never changed, when its server lists its tools again)."""

    def _load(self) -> dict[str, dict[str, Any]]:
        if not self.journal.exists():
            return self._load_legacy()
        pins: dict[str, dict[str, Any]] = {}
        problems: list[str] = []
        for line in self.journal.changes(problems):
            tool = line.get("tool")
            if isinstance(tool, str) and isinstance(line.get("hash"), str):
                pins[tool] = {k: v for k, v in line.items() if k != "tool"}
            else:
                problems.append(f"{self.path.name}: a line without tool and hash, skipped")
        # A skipped pin is pinned again at the tool's next use (what a first use does).
        self.warnings.extend(problems)
        return pins

    def _load_legacy(self) -> dict[str, dict[str, Any]]:
        legacy = self.path.with_name(LEGACY_FILE)
        if not legacy.exists():
            return {}
        from magent.store.files import loads, read_bytes

        try:
            pins = loads(read_bytes(legacy))["pins"]  # never through a link (SymlinkError)
            if not isinstance(pins, dict):
                raise ValueError("pins is not a mapping")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            # Never deleted: moved aside, like a corrupt checkpoint, and the tools re-pinned.
            aside = legacy.with_name(legacy.name + ".corrupt")
            legacy.replace(aside)
            self.warnings.append(f"{legacy} was unreadable ({exc}); moved to {aside.name}, tools re-pinned")
            return {}
        for tool, pin in pins.items():  # the journal starts with them
            self.journal.append({"tool": tool, **pin})
        return pins

    def pinned(self, name: str) -> dict[str, Any] | None:
        return self._pins.get(name)

    def check(self, tool: Tool) -> PinChange | None:
        """None when the tool is first seen (it is pinned now) or unchanged; else the change."""
        known = self._digests.get(tool.full_name)
        if known is not None and known[0] is tool:
            digest = known[1]
        else:
            digest = definition_hash(tool)
            self._digests[tool.full_name] = (tool, digest)
        pin = self._pins.get(tool.full_name)
        if pin is None:
            self._pin(tool, digest)
            return None
        if pin.get("hash") == digest:
            return None
        old_schema = pin.get("input_schema") or {}
        old_description = pin.get("description") or ""
        return PinChange(tool=tool.full_name, old_hash=str(pin.get("hash")), new_hash=digest,
                         old_description=old_description, new_description=tool.description,
                         old_schema=old_schema, new_schema=tool.input_schema,
                         pinned_at=str(pin.get("pinned_at", "")),
                         diff=describe_change(old_description, tool.description, old_schema, tool.input_schema))

    def accept(self, tool: Tool) -> None:
        """Pin the tool's current definition (after a person approved the change)."""
        self._pin(tool, definition_hash(tool))

    def _pin(self, tool: Tool, digest: str) -> None:
        pin = {"hash": digest, **definition(tool),
               "pinned_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        self.journal.append({"tool": tool.full_name, **pin})
        self._pins[tool.full_name] = pin


def describe_change(old_desc: str, new_desc: str, old_schema: Any, new_schema: Any) -> list[str]:
    """Lines a person can read: a word-level diff of the description, then schema paths changed."""
    lines: list[str] = []
    if old_desc != new_desc:
        lines.append("description:")
        lines.append(f"  - {old_desc}")
        lines.append(f"  + {new_desc}")
        words = [w for w in difflib.ndiff(old_desc.split(), new_desc.split()) if w[:1] in "+-"]
        if words and len(words) <= 12:
            lines.append("  words: " + " ".join(words))
    old_flat, new_flat = _flatten(old_schema), _flatten(new_schema)
    for key in sorted(set(old_flat) | set(new_flat)):
        if key not in new_flat:
            lines.append(f"schema {key}: removed (was {_short(old_flat[key])})")
        elif key not in old_flat:
            lines.append(f"schema {key}: added {_short(new_flat[key])}")
        elif old_flat[key] != new_flat[key]:
            lines.append(f"schema {key}: {_short(old_flat[key])} → {_short(new_flat[key])}")
    if len(lines) > MAX_DIFF_LINES:
        lines = lines[:MAX_DIFF_LINES] + [f"... and {len(lines) - MAX_DIFF_LINES} more"]
    return lines


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix or "(root)": value}


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 80 else text[:79] + "…"
