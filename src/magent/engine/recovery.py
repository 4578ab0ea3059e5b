"""Continuing a run whose process died: from the latest valid checkpoint, without repeating work.

Entries and events written after the checkpoint tell what happened since:
- an assistant turn that asked for tools is adopted (its model call is not made
  again), with whichever tool results were written;
- a tool call with an intent event and no result may or may not have run: the
  node re-runs it only if the tool is idempotent, otherwise asks a person;
- model usage after the checkpoint is counted (it was spent).
"""

from __future__ import annotations

from magent.engine.context import RunContext
from magent.models import Checkpoint, Entry
from magent.models.task import Usage
from magent.store import to_message


def recover(ctx: RunContext, cp: Checkpoint, entries: dict[str, Entry]) -> None:
    td = ctx.td
    messages = [to_message(e) for e in td.entries.path_to(cp.leaf_entry_id, entries)]
    ctx.restore(cp, messages)
    events = [e for e in td.read_events() if e.seq > cp.events_seq]

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
