"""Continuing a run whose process died: from the latest valid checkpoint, without repeating work.

Entries and events written after the checkpoint tell what happened since:
- an assistant turn that asked for tools is adopted (its model call is not made
  again), with whichever tool results were written;
- a tool call with an intent event and no result may or may not have run: the
  node re-runs it only if the tool is idempotent, otherwise asks a person;
- model usage after the checkpoint is counted (it was spent).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from pydantic import ValidationError

from magent.engine.context import Recovery, RunContext
from magent.engine.sessions import Session
from magent.models import Checkpoint, Entry, Event
from magent.models.progress import AgentProgress, CallsProgress, FanOutProgress
from magent.models.session import MAIN_SESSION
from magent.models.task import Usage, usage_key
from magent.store.entries import to_message
from magent.store.events import unpack
from magent.store.files import loads, open_nofollow, read_bytes

_SEQ = re.compile(rb'^\{"seq":(\d+),')
_SEQ_LINE = re.compile(rb'(?:^|(?<=\n))\{"seq":(\d+),')


def events_after(path: Path, after: int) -> tuple[int, list[Event]]:
    """The last event number in ``path`` and the events numbered above ``after``, read from the end
    a block at a time (every line starts with its ``seq``, in order): a resume reads what came
    after its checkpoint, not the whole history. A torn last line is ignored, as everywhere."""
    try:
        tail = _tail_after(path, after)
    except FileNotFoundError:
        return 0, []
    last = 0
    out: list[Event] = []
    before: bytes | None = None  # the line just before, unread: what a line may be told from
    previous: dict | None = None
    for line in tail.split(b"\n"):
        m = _SEQ.match(line)
        if m is None:
            before, previous = None, None
            continue
        seq = int(m.group(1))
        if seq <= after:
            last = max(last, seq)
            before = line
            continue
        if before is not None:
            previous, before = _read_line(before), None
        doc = _read_line(line)
        try:
            event = Event.model_validate(unpack(doc, previous)) if doc is not None else None
        except ValidationError:
            event = None
        previous = doc
        if event is None:
            continue
        last = max(last, event.seq)
        out.append(event)
    return last, out


def _read_line(line: bytes) -> dict | None:
    try:
        doc = loads(line)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


_BLOCK = 1 << 16


def _tail_after(path: Path, after: int) -> bytes:
    """The end of ``path`` from a whole line numbered ``after`` or below (or the whole file)."""
    fd = open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return read_bytes(path)  # let the whole-file reader say what is wrong with it
        start = fh.seek(0, os.SEEK_END)
        data = b""
        while start > 0:
            size = min(_BLOCK, start)
            start -= size
            fh.seek(start)
            data = fh.read(size) + data
            cut = 0
            if start > 0:  # what precedes the first newline may be the end of a longer line
                cut = data.find(b"\n") + 1
                if cut == 0:
                    continue
            for m in _SEQ_LINE.finditer(data, cut):  # the first numbered line is the oldest
                if int(m.group(1)) <= after:
                    return data[cut:]
                break
        return data


def recover(ctx: RunContext, cp: Checkpoint, entries: dict[str, Entry], events: list[Event]) -> None:
    """Restore ``ctx`` from ``cp`` (``events``: those written after it): every session open at ``cp``
    takes back the model turn it wrote after it, if any; tool calls are judged per session."""
    task_dir = ctx.deps.task_dir

    def history(leaf: str | None) -> list:
        return [to_message(e) for e in task_dir.entries.path_to(leaf, entries)]

    ctx.checkpoints.restore(cp, history(cp.leaf_entry_id), history)

    adopted: set[str] = set()
    if not cp.awaiting_human:
        for session in [ctx.state.main, *ctx.state.open_children()]:
            adopted |= _adopt_turn(ctx, session, entries)
    _close_answered_children(ctx)

    intents: dict[str, set[str]] = {}
    results: dict[str, dict[str, dict]] = {}
    recorded: set[str] = set()
    for event in events:
        ctx.meter.observe(event)  # what was spent after the checkpoint counts toward budgets
        sid = event.field("session") or MAIN_SESSION
        if event.type == "llm_call" and event.field("error"):
            continue  # a failed attempt: nothing answered, nothing counted
        if event.type == "llm_call":
            key = usage_key(event.field("model") or "", event.field("provider"))
            usage = Usage.of_call(event.model_extra or {})  # (no cost: litellm had no price for it)
            ctx.state.usage_by_model[key] = ctx.state.usage_by_model.get(key, Usage()).add(usage)
            ctx.state.total_usage = ctx.state.total_usage.add(usage)
            ctx.state.turn_index += 1
            recorded.add(event.field("entry_id"))
            owner = ctx.state.sessions.get(sid)
            if owner is not None and event.field("entry_id") in adopted and event.field("cursor") is not None:
                owner.cursors[event.field("agent")] = event.field("cursor")
        elif event.type == "tool_call":
            intents.setdefault(sid, set()).add(event.field("call_id"))
        elif event.type == "tool_result":
            results.setdefault(sid, {})[event.field("call_id")] = event.model_dump()
    _unrecorded_turns(ctx, adopted - recorded, entries)
    _abandon_lost_sessions(ctx, events)
    for sid, session_results in results.items():
        recovery = ctx.state.recoveries.setdefault(sid, Recovery())
        recovery.finished = {cid: ev for cid, ev in session_results.items() if "full_result" in ev}
    for session in [ctx.state.main, *ctx.state.open_children()]:
        # Calls that were running when the checkpoint was written (by another session): their
        # intents are behind it, but they may have run. Answered since: adopted above.
        calls = _calls(session)
        if calls is None:
            continue
        running, calls.running = set(calls.running), []
        if running:
            answered = {m.tool_call_id for m in session.messages if m.role == "tool"}
            intents.setdefault(session.id, set()).update(running - answered)
    for sid, started in intents.items():
        recovery = ctx.state.recoveries.setdefault(sid, Recovery())
        owner = ctx.state.sessions.get(sid)
        calls = _calls(owner) if owner is not None else None
        # A call whose result event survived a power loss but whose result did not (its entry
        # lost, the event lean) ran: it is as unsure as one with no result event, not one to run.
        answered = {m.tool_call_id for m in owner.messages if m.role == "tool"} if owner else set()
        lost = {cid for cid, ev in results.get(sid, {}).items() if "full_result" not in ev and cid not in answered}
        recovery.started_calls = (started - set(results.get(sid, {}))) | (started & lost)
        if calls is not None and recovery.started_calls:
            # Kept in the session's progress, so the checkpoints written from here on remember
            # them: after a pause about one of them (or a second crash) the events that showed
            # these calls started are behind the new checkpoint and would not be read again.
            calls.unsure.extend(sorted(c for c in recovery.started_calls if c not in calls.unsure))


def _calls(session: Session) -> CallsProgress | None:
    """Where ``session`` keeps its tool calls: its agent loop's progress, or its node's when that
    node makes calls (None otherwise)."""
    if not session.is_main and session.kind != "branch":
        return session.progress_as(AgentProgress)
    return session.progress if isinstance(session.progress, CallsProgress) else None


def _unrecorded_turns(ctx: RunContext, ids: set[str], entries: dict[str, Entry]) -> None:
    """Replies taken back whose ``llm_call`` record was lost: a kill cannot do that (the record
    is written first), a power loss can (entries.jsonl and events.jsonl are synced side by
    side). The script cursor that record held is one past the checkpoint's for that agent."""
    for entry_id in ids:
        entry = entries.get(entry_id)
        node = ctx.deps.graph.nodes.get(entry.node) if entry is not None and entry.node else None
        owner = ctx.state.sessions.get(entry.session or MAIN_SESSION) if entry is not None else None
        if entry is None or entry.role != "assistant" or owner is None or node is None or not node.agent_name:
            continue
        owner.cursors[node.agent_name] = owner.cursors.get(node.agent_name, 0) + 1


def _adopt_turn(ctx: RunContext, session: Session, entries: dict[str, Entry]) -> set[str]:
    """Take back the model turn ``session`` wrote after the checkpoint: an assistant message
    that asked for tools, with whichever results followed. Returns the adopted entry ids."""
    if session.is_main or session.kind == "branch":  # walks the graph: an agent node's turn
        node = ctx.deps.graph.nodes.get(session.position or "")
        if (session.node_done or node is None or node.kind != "agent"
                or isinstance(session.progress, FanOutProgress)):
            return set()
        turn_node = session.position
    else:  # a sub-agent, map item or subtask: its one loop
        turn_node = session.node
    tail = [e for e in ctx.deps.task_dir.entries.children_chain(session.leaf, entries, session=session.tag)]
    compacted: set[str] = set()
    if tail and tail[0].entry_type == "compaction" and tail[0].node == turn_node:
        # A context budget's compaction, made just before the model call of the next turn:
        # kept, so the view it made (and its summary) is not made again.
        ctx.adopt(tail[:1], session)
        compacted = {tail[0].id}
        tail = tail[1:]
    if not tail:
        return compacted
    progress = session.progress_as(AgentProgress)
    open_turn = progress.turn_open
    if open_turn:
        # The checkpoint was written in the middle of this turn (another session's): the
        # results that came after it belong to the same turn.
        turn = next((m for m in reversed(session.messages) if m.role == "assistant"), None)
        call_ids = {c.id for c in turn.tool_calls} if turn is not None else set()
        take = []
    elif tail[0].role == "assistant" and tail[0].node == turn_node and tail[0].tool_calls:
        call_ids = {c.id for c in tail[0].tool_calls}
        take = [tail[0]]
        tail = tail[1:]
    else:
        return compacted
    for entry in tail:
        if entry.role == "tool" and entry.tool_call_id in call_ids:
            take.append(entry)
        else:
            break
    if not take:
        return compacted
    ctx.adopt(take, session)
    if not open_turn:
        progress.turn_open = take[0].id
    return compacted | {e.id for e in take}


def _close_answered_children(ctx: RunContext) -> None:
    """A sub-agent whose answer already reached its caller's history finished before the crash
    (between its last checkpoint and the next): it is done, not to be continued."""
    for child in ctx.state.open_children():
        if child.kind != "agent" or not child.key.startswith("call:"):
            continue
        parent = ctx.state.sessions.get(child.parent or MAIN_SESSION)
        call_id = child.key[len("call:"):]
        if parent is not None and any(m.role == "tool" and m.tool_call_id == call_id for m in parent.messages):
            child.status = "completed"


def _abandon_lost_sessions(ctx: RunContext, events: list[Event]) -> None:
    """Sessions opened after the checkpoint never reached one: the run opens them again (with
    new ids), so the trace is told these ended here."""
    started = {e.field("session"): e for e in events if e.type == "session_started"}
    for e in events:
        if e.type == "session_finished":
            started.pop(e.field("session"), None)
    for sid, event in started.items():
        if sid not in ctx.state.sessions:
            ctx.deps.bus.emit("session_finished", event.node, session=sid, status="failed",
                         agent=event.field("agent"),
                         error="the run stopped before this session's first checkpoint; it starts again")
