"""What was sent to models, each distinct piece once: ``requests.jsonl``.

A model call's ``llm_call`` event names its parameters by hash (model, temperature,
timeouts, and the hashes of its system prompt and tool set; since schema 7), and a
one-off prompt, such as a critic's, the same way; the value behind each hash is
one line of this journal, written the first time it is sent. A ReAct agent sends
the same parameters, prompt and tools on every turn, so a long run adds three
lines, not three per turn. The conversation itself is in ``entries.jsonl``: an
event points at the last entry sent instead of copying it.

Lines are appended before the event that names them, so a reader that finds a
hash in an event finds its line (a crash between the two leaves a line no event
names, which costs nothing).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from magent.store.files import AppendLog, read_jsonl

KINDS = ("system", "tools", "messages", "params")
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def digest(value: Any) -> str:
    """A short stable name for ``value``: sha256 of its canonical JSON, 16 hex digits."""
    text = _CANONICAL.encode(value)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class RequestLog(AppendLog):
    """The task's ``requests.jsonl``: ``put`` a piece, get its hash; ``load`` them all back."""

    def __init__(self, path: Path):
        super().__init__(path)
        self._known: set[str] | None = None
        self.memo: dict[Any, tuple[str, Any]] = {}
        """Hashes of pieces already put, by what the caller made them from (``engine/sent.py``)."""

    def put(self, kind: str, value: Any) -> str:
        """Store ``value`` (a ``system`` prompt, a ``tools`` list, a ``messages`` list, a call's
        ``params``) unless an identical one is there already; return its hash."""
        if kind not in KINDS:
            raise ValueError(f"unknown request piece {kind!r}")
        key = digest([kind, value])
        if self._known is None:  # a resumed run: what earlier runs of the task wrote counts
            self._known = {str(line.get("hash")) for line in read_jsonl(self.path)}
        if key not in self._known:
            self._append({"hash": key, "kind": kind, "value": value})
            self._known.add(key)
        return key

    def load(self, problems: list[str] | None = None) -> dict[str, Any]:
        """Every stored piece by hash."""
        return {str(line["hash"]): line.get("value") for line in read_jsonl(self.path, problems)
                if "hash" in line}
