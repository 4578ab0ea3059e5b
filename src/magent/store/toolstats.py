"""Each tool's past success in this home: ``cache/tool-stats.json``, for tool selection.

A run counts its own tool results (``Outcomes``, a sink on the run's event bus) and adds them
to the file when it ends (finished, failed, paused or stopped by a signal; in a worker thread,
with the run's other closing file work), under a short lock, so concurrent runs each add theirs. It is a cache in the sense of ``store.taskindex``: never the
only record of anything (every call is in its task's trace), not synced, and a missing or
damaged file only means every tool starts again from an even prior. A run killed with
SIGKILL adds nothing for the calls it made since it started.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from magent.store.files import loads, read_bytes, write_cache, dumps

VERSION = 1
LOCK_SECONDS = 2.0
"""How long a run's end waits for another run's update of the file before going without."""


def stats_file(root: Path) -> Path:
    return root / "cache" / "tool-stats.json"


def read_stats(root: Path) -> dict[str, tuple[int, int]]:
    """``{server.tool: (calls, successes)}``; empty when the file is missing or unreadable."""
    try:
        doc = loads(read_bytes(stats_file(root)))
    except Exception:  # (a cache: whatever is wrong with it, it is as if there were none)
        return {}
    tools = doc.get("tools") if isinstance(doc, dict) and doc.get("version") == VERSION else None
    out: dict[str, tuple[int, int]] = {}
    for name, counts in (tools or {}).items():
        if isinstance(counts, list) and len(counts) == 2 and all(type(n) is int and n >= 0 for n in counts):
            out[str(name)] = (counts[0], min(counts[1], counts[0]))
    return out


def add_stats(root: Path, counts: dict[str, tuple[int, int]]) -> bool:
    """Add ``counts`` (``{tool: (calls, successes)}``) to the file; False when it could not be."""
    from filelock import FileLock, Timeout

    path = stats_file(root)
    if not counts or not path.parent.parent.is_dir():
        return False
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        with FileLock(path.with_suffix(".lock"), timeout=LOCK_SECONDS, is_singleton=False):
            merged = read_stats(root)
            for name, (calls, ok) in counts.items():
                before = merged.get(name, (0, 0))
                merged[name] = (before[0] + calls, before[1] + ok)
            doc = {"version": VERSION, "tools": {k: list(v) for k, v in sorted(merged.items())}}
            return write_cache(path, dumps(doc))
    except (Timeout, OSError):
        return False


class Outcomes:
    """Counts a run's tool results by tool; ``save`` adds them to the home's file."""

    def __init__(self, root: Path):
        self.root = root
        self.counts: dict[str, list[int]] = {}

    def observe(self, event: dict[str, Any]) -> None:
        if event.get("type") == "tool_result" and event.get("tool"):
            seen = self.counts.setdefault(str(event["tool"]), [0, 0])
            seen[0] += 1
            seen[1] += event.get("outcome") == "SUCCESS"

    def save(self) -> None:
        """Add the results counted since the last save to the file (from any thread)."""
        counts, self.counts = self.counts, {}
        if counts:
            add_stats(self.root, {k: (v[0], v[1]) for k, v in counts.items()})
