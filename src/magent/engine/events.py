"""The event bus: one typed stream, three sinks (events.jsonl, the terminal, ``--json``).

Event types: run_started, node_started, llm_started (live only: an attempt at a
model call begins), llm_call (an answer, or a failed attempt with its ``error``),
tool_call (intent, before the call), tool_result, reflection, route, checkpoint,
awaiting_human, human_decision, node_finished, error, run_finished.
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


# What the persisted stream leaves out, and how it is put back.
#
# The text of a model's reply and of a tool's result is already in entries.jsonl (the
# conversation), so events.jsonl stores only the entry's id: the history is stored once.
# ``for_disk`` drops those texts; ``with_texts`` restores them from the entries when the
# events are read back (by the trace, ``--follow`` and replay). The live stream (terminal,
# ``--json``) always carries them. Checkpoint notices are live only: the checkpoint files
# are their own record; so are the starts of model attempts (the attempt's outcome is
# recorded, as an ``llm_call``, the moment it is known).
LIVE_ONLY = frozenset({"checkpoint", "llm_started"})
RESULT_PREVIEW = 1000


def for_disk(doc: dict[str, Any], *, lean: bool = True) -> dict[str, Any] | None:
    """The event as events.jsonl keeps it (None: not kept). With ``lean`` false the texts stay
    (so that redaction can replace them by a note when tool I/O is kept out of traces)."""
    kind = doc.get("type")
    if kind in LIVE_ONLY:
        return None
    if not lean:
        return doc
    if doc.get("entry_id") and kind == "llm_call":
        doc = {k: v for k, v in doc.items() if k != "response"}
    elif doc.get("entry_id") and kind == "tool_result":
        doc = {k: v for k, v in doc.items() if k != "result"}
    return doc


def with_texts(events: list[dict[str, Any]], entries: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Put back the texts ``for_disk`` left out, from ``entries`` (raw entry dicts by id)."""
    out = []
    for ev in events:
        entry = entries.get(ev.get("entry_id") or "")
        if entry is not None and ev.get("type") == "llm_call" and "response" not in ev:
            calls = [{"id": c.get("id"), "name": f"{c['server']}.{c['tool']}" if c.get("server") else c.get("tool"),
                      "arguments": None if c.get("raw_arguments") is not None else c.get("arguments", {}),
                      **({"raw_arguments": c["raw_arguments"]} if c.get("raw_arguments") is not None else {})}
                     for c in entry.get("tool_calls") or []]
            ev = {**ev, "response": {"content": entry.get("content", ""), "tool_calls": calls}}
        elif entry is not None and ev.get("type") == "tool_result" and "result" not in ev:
            ev = {**ev, "result": truncate(entry.get("content", ""), RESULT_PREVIEW)}
        out.append(ev)
    return out


def needed_entries(events: list[dict[str, Any]]) -> set[str]:
    return {ev["entry_id"] for ev in events if ev.get("entry_id")
            and ((ev.get("type") == "llm_call" and "response" not in ev)
                 or (ev.get("type") == "tool_result" and "result" not in ev))}


def read_events(td: Any, problems: list[str] | None = None,
                entries: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """A task's events as dicts, oldest first, with the texts ``for_disk`` left out put back
    (from ``entries``, raw entries by id, when the caller has read them already)."""
    from magent.store.files import read_jsonl

    events = list(read_jsonl(td.events_file, problems))
    wanted = needed_entries(events)
    if not wanted:
        return events
    if entries is None:
        entries = {raw["id"]: raw for raw in read_jsonl(td.entries.path) if raw.get("id") in wanted}
    return with_texts(events, entries)
