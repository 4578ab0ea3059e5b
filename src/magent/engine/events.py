"""The event bus: one typed stream, three sinks (events.jsonl, the terminal, ``--json``).

Event types: run_started, node_started, llm_call, tool_call (intent, before the
call), tool_result, reflection, route, checkpoint, awaiting_human,
human_decision, node_finished, error, run_finished.
"""

from __future__ import annotations

from typing import Any, Callable

from magent.ids import now
from magent.models import Event

Sink = Callable[[Event], None]


class EventBus:
    def __init__(self, start_seq: int = 0):
        self.seq = start_seq
        self._sinks: list[Sink] = []

    def subscribe(self, sink: Sink) -> None:
        self._sinks.append(sink)

    def emit(self, type: str, node: str | None = None, **fields: Any) -> Event:
        self.seq += 1
        event = Event(seq=self.seq, ts=now().isoformat(timespec="milliseconds"), type=type,
                      node=node, **fields)
        for sink in self._sinks:
            sink(event)
        return event


def truncate(text: str | None, limit: int = 1000) -> str:
    """Seed 003's truncation of results in action records (about 1,000 characters)."""
    if text is None:
        return ""
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit} more characters]"
