"""events.jsonl as stored, and read back: what a written line leaves out and how it is put back.

The engine's bus (``engine.events``) writes through ``for_disk``; the store, the trace and
replay read through ``read_events`` / ``unpack_all``. Here, below them all, so that reading a
task's events needs nothing of the engine.
"""

from __future__ import annotations

from typing import Any

from magent.store.files import read_jsonl


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
LIVE_ONLY = frozenset({"checkpoint", "llm_started", "tool_output"})
RESULT_PREVIEW = 1000


def for_disk(doc: dict[str, Any], *, lean: bool = True) -> dict[str, Any] | None:
    """The event as events.jsonl keeps it (None: not kept). With ``lean`` false the texts stay
    (so that redaction can replace them by a note when tool I/O is kept out of traces)."""
    kind = doc.get("type")
    if kind in LIVE_ONLY:
        return None
    if not lean:
        return doc
    if kind == "llm_call" and "response" in doc and doc.get("entry_id"):
        doc = {k: v for k, v in doc.items() if k != "response"}
    elif kind == "tool_result" and "result" in doc and doc.get("entry_id"):
        doc = {k: v for k, v in doc.items() if k != "result"}
    return doc


# events.jsonl's compact form (schemas 10 to 17), read back: those versions left out of a line
# what it could be told from, itself or the line before it; from schema 18 every line is written
# whole, and ``unpack`` finds nothing to put back in it. What they left out:
# - ``ts`` in UTC was written ``...Z`` instead of ``...+00:00`` (read back as ``+00:00``), and
#   (schema 16) not at all when it was the one the line before wrote (the same millisecond);
# - an ``llm_call``'s ``agent`` when it was its ``node``, its ``latency_ms`` when 0, and its
#   ``request.conversation.leaf`` when it was the ``entry_id`` of the line before;
# - a ``tool_result``'s ``outcome`` when ``SUCCESS``; and when the line before was its own
#   ``tool_call``, its ``call_id``, and its ``tool`` and ``node`` when they were the call's.
# Only fields that every line carries were left out, so an absent one can only mean that form.

_UTC = "+00:00"


def unpack(doc: dict[str, Any], previous: dict[str, Any] | None) -> dict[str, Any]:
    """Put back (in place) what a schema 10-17 line left out of ``doc``; ``previous``: the event
    of the line just before it in the file, as read (None when there is none, or it could not be
    read)."""
    if "ts" not in doc and previous is not None and "ts" in previous:
        doc["ts"] = previous["ts"]
    ts = doc.get("ts")
    if isinstance(ts, str) and ts.endswith("Z"):
        doc["ts"] = ts[:-1] + _UTC
    kind = doc.get("type")
    if kind == "llm_call":
        if "agent" not in doc and doc.get("node") is not None:
            doc["agent"] = doc["node"]
        doc.setdefault("latency_ms", 0)
        request = doc.get("request")
        if previous is not None and isinstance(request, dict):
            conversation = request.get("conversation")
            if isinstance(conversation, dict) and "leaf" not in conversation and previous.get("entry_id"):
                conversation["leaf"] = previous["entry_id"]
    elif kind == "tool_result":
        doc.setdefault("outcome", "SUCCESS")
        if "call_id" not in doc and previous is not None and previous.get("type") == "tool_call":
            doc["call_id"] = previous.get("call_id")
            for key in ("tool", "node"):
                if key not in doc and previous.get(key) is not None:
                    doc[key] = previous[key]
    return doc


class Unpacker:
    """``unpack`` for the lines of one file read in order: call it on each line's event, and with
    None for a line that could not be read."""

    def __init__(self) -> None:
        self.previous: dict[str, Any] | None = None

    def __call__(self, doc: dict[str, Any] | None) -> dict[str, Any] | None:
        if doc is not None:
            doc = unpack(doc, self.previous)
        self.previous = doc
        return doc


def unpack_all(docs: Any) -> list[dict[str, Any]]:
    """The events of ``docs`` (the readable lines of one file, in order) with what older lines
    left out put back (``unpack``)."""
    step = Unpacker()
    return [step(doc) for doc in docs]  # type: ignore[misc]


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


def read_events(task_dir: Any, problems: list[str] | None = None,
                entries: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """A task's events as dicts, oldest first, with the texts ``for_disk`` left out put back
    (from ``entries``, raw entries by id, when the caller has read them already)."""
    events = unpack_all(read_jsonl(task_dir.events_file, problems))
    wanted = needed_entries(events)
    if not wanted:
        return events
    if entries is None:
        entries = {raw["id"]: raw for raw in read_jsonl(task_dir.entries.path) if raw.get("id") in wanted}
    return with_texts(events, entries)
