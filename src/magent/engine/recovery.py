"""Continuing a run whose process died: from the latest valid checkpoint, without repeating work.

Entries and events written after the checkpoint tell what happened since:
- an assistant turn that asked for tools is adopted (its model call is not made
  again), with whichever tool results were written;
- a tool call with an intent event and no result may or may not have run: the
  node re-runs it only if the tool is idempotent, otherwise asks a person;
- model usage after the checkpoint is counted (it was spent).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import ValidationError

from magent.engine.context import RunContext
from magent.models import Checkpoint, Entry, Event
from magent.models.task import Usage
from magent.store import to_message

_SEQ = re.compile(rb'^\{"seq":(\d+),')


def events_after(path: Path, after: int) -> tuple[int, list[Event]]:
    """The last event number in ``path`` and the events numbered above ``after``.

    Lines at or before ``after`` are skipped without parsing (every event is written
    with ``seq`` first), so a long task's resume does not re-read its whole history.
    A torn last line is ignored, as everywhere.
    """
    last = 0
    out: list[Event] = []
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0, []
    for line in data.split(b"\n"):
        m = _SEQ.match(line)
        if m is None:
            continue
        seq = int(m.group(1))
        if seq <= after:
            last = max(last, seq)
            continue
        try:
            event = Event.model_validate(json.loads(line))
        except (ValueError, ValidationError):
            continue
        last = max(last, event.seq)
        out.append(event)
    return last, out


def recover(ctx: RunContext, cp: Checkpoint, entries: dict[str, Entry], events: list[Event]) -> None:
    """Restore ``ctx`` from ``cp``; ``events`` are those written after it."""
    td = ctx.td
    messages = [to_message(e) for e in td.entries.path_to(cp.leaf_entry_id, entries)]
    ctx.restore(cp, messages)

    adopted: set[str] = set()
    node = ctx.graph.nodes.get(cp.position)
    tail = td.entries.children_chain(cp.leaf_entry_id, entries)
    if (tail and not cp.node_done and not cp.awaiting_human and node is not None and node.kind == "agent"
            and tail[0].role == "assistant" and tail[0].node == cp.position and tail[0].tool_calls):
        call_ids = {c.id for c in tail[0].tool_calls}
        take = [tail[0]]
        for entry in tail[1:]:
            if entry.role == "tool" and entry.tool_call_id in call_ids:
                take.append(entry)
            else:
                break
        ctx.adopt(take)
        adopted = {e.id for e in take}
        ctx.progress["turn_open"] = tail[0].id

    intents: set[str] = set()
    results: dict[str, dict] = {}
    for event in events:
        if event.type == "llm_call":
            key = event.field("model") or "unknown"
            provider = event.field("provider")
            if provider and "/" not in key:
                key = f"{provider}/{key}"
            usage = Usage(input=event.field("tokens_in", 0), output=event.field("tokens_out", 0),
                          cost=event.field("cost", 0.0), calls=1)
            ctx.usage_by_model[key] = ctx.usage_by_model.get(key, Usage()).add(usage)
            ctx.total_usage = ctx.total_usage.add(usage)
            ctx.turn_index += 1
            if event.field("entry_id") in adopted and event.field("cursor") is not None:
                ctx.cursors[event.field("agent")] = event.field("cursor")
        elif event.type == "tool_call":
            intents.add(event.field("call_id"))
        elif event.type == "tool_result":
            results[event.field("call_id")] = event.model_dump()
    ctx.recovery.started_calls = intents - set(results)
    ctx.recovery.finished = {cid: ev for cid, ev in results.items() if "full_result" in ev}
