"""Sessions in ``magent trace``: a header and time bar per child session (shown under the step
that opened it, so parallel branches read side by side), ``--session``, and usage per session
and agent."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Callable

from magent.errors import UsageError
from magent.money import TOKEN_PARTS

BAR = 24


def parse_ts(ts: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(ts).replace("Z", "+00:00"))
    except ValueError:
        return None


def span(infos: list[dict[str, Any]]) -> tuple[datetime, float] | None:
    """The start of the earliest of ``infos`` and the seconds to the end of the latest."""
    starts = [t for t in (parse_ts(i.get("started_at")) for i in infos) if t]
    ends = [t for t in (parse_ts(i.get("ended_at") or i.get("started_at")) for i in infos) if t]
    if not starts or not ends:
        return None
    first = min(starts)
    return first, max((max(ends) - first).total_seconds(), 0.0)


def bar(info: dict[str, Any], timeline: tuple[datetime, float] | None) -> str:
    """``▕  ████████      ▏`` — when ``info`` ran within ``timeline`` (its start and its seconds)."""
    start, end = parse_ts(info.get("started_at")), parse_ts(info.get("ended_at"))
    if timeline is None or start is None:
        return ""
    first, length = timeline
    if length <= 0:
        return "▕" + "█" * BAR + "▏"
    a = int((start - first).total_seconds() / length * BAR)
    b = BAR if end is None else max(a + 1, round((end - first).total_seconds() / length * BAR))
    a, b = min(a, BAR - 1), min(b, BAR)
    return "▕" + " " * a + ("█" if end is not None else "▒") * (b - a) + " " * (BAR - b) + "▏"


def branch_spans(sessions: dict[str, dict[str, Any]]) -> dict[str, tuple[datetime, float]]:
    """For each parallel branch's session: the span of it and its siblings (the branches one
    fan-out opened: same node, step and parent session)."""
    groups: dict[tuple[Any, ...], list[str]] = {}
    for sid, info in sessions.items():
        if info.get("kind") == "branch":
            groups.setdefault((info.get("node"), info.get("opened_by_step"), info.get("parent_session")), []).append(sid)
    out = {}
    for members in groups.values():
        timeline = span([sessions[sid] for sid in members])
        if timeline is not None:
            out.update((sid, timeline) for sid in members)
    return out


def step_bar(step: dict[str, Any], timeline: tuple[datetime, float] | None) -> str:
    """The time bar of a node step that ran in a parallel branch, within its siblings' span
    (its start is the step's timestamp, its end that plus its duration); "" otherwise."""
    start = parse_ts(step.get("timestamp")) if timeline is not None else None
    if start is None or step.get("duration_ms") is None:
        return ""
    end = start + timedelta(milliseconds=float(step["duration_ms"]))
    return bar({"started_at": start.isoformat(), "ended_at": end.isoformat()}, timeline)


def label(info: dict[str, Any]) -> str:
    """``researcher · subtask facts_a#0`` / ``branch left`` / ``item 3``."""
    key = str(info.get("key") or "")
    kind = info.get("kind") or "agent"
    where = key.split(":", 1)[1] if ":" in key else key
    what = {"branch": f"branch {where}", "map": f"item {where}", "subtask": f"subtask {where}",
            "plan": ("plan" if key == "plan:0" else f"plan revision {where}") if key.startswith("plan:")
            else "synthesis" if key.startswith("synthesis") else "plan",
            "agent": "sub-agent"}.get(kind, kind)
    agent = info.get("agent") or ""
    return f"{agent} · {what}" if agent and kind != "branch" else what


def find_session(sessions: dict[str, dict[str, Any]], wanted: str) -> str:
    """The id of the session ``wanted`` names: an id, its first characters, or its key."""
    hits = [sid for sid, info in sessions.items() if sid.startswith(wanted) or info.get("key") == wanted]
    if len(hits) == 1:
        return hits[0]
    if not sessions:
        raise UsageError(f"session {wanted!r}: this task has no sessions besides the main conversation")
    if not hits:
        known = ", ".join(f"{sid[:8]} ({info.get('key')})" for sid, info in list(sessions.items())[:8])
        raise UsageError(f"no session {wanted!r} in this task; sessions: {known}")
    raise UsageError(f"session {wanted!r} is ambiguous: {', '.join(h[:8] for h in hits)}")


def with_descendants(sessions: dict[str, dict[str, Any]], root: str) -> set[str]:
    out = {root}
    grew = True
    while grew:
        more = {sid for sid, info in sessions.items() if info.get("parent_session") in out and sid not in out}
        out |= more
        grew = bool(more)
    return out


def usage_by(steps: list[dict[str, Any]], key: Callable[[dict[str, Any], dict[str, Any]], str]) -> dict[str, dict[str, Any]]:
    """Model calls, tokens and cost of ``steps`` grouped by ``key(step, call)``."""
    out: dict[str, dict[str, Any]] = {}
    for step in steps:
        for call in step.get("llm_calls") or []:
            row = out.setdefault(key(step, call), {"calls": 0, "failed": 0, "input": 0, "output": 0, "cost": 0.0,
                                                   "unpriced": 0, "estimated": 0})
            if call.get("error"):  # a failed attempt: counted apart, no tokens
                row["failed"] += 1
                continue
            row["calls"] += 1
            row["input"] += int(call.get("tokens_in") or 0)
            row["output"] += int(call.get("tokens_out") or 0)
            row["cost"] += float(call.get("cost") or 0.0)
            row["unpriced"] += call.get("cost", 0.0) is None  # (absent: the default, 0)
            row["estimated"] += bool(call.get("estimated"))
            for part, _ in TOKEN_PARTS:
                row[part] = row.get(part, 0) + int(call.get(part) or 0)
    return out


def by_agent(steps: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Model calls, tokens and cost per agent (the agent whose turn or node made the call)."""
    return usage_by(steps, lambda step, call: step.get("agent") or "(none)")


def rolled_up(sessions: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each session's usage with its descendants' added (a sub-agent's sub-agents count for it)."""
    out = {}
    for sid in sessions:
        total = {"calls": 0, "input": 0, "output": 0, "cost": 0.0, "unpriced": 0, "estimated": 0}
        for member in with_descendants(sessions, sid):
            usage = sessions[member].get("usage") or {}
            for key in total:
                total[key] += usage.get(key) or 0
        out[sid] = total
    return out


def only_sessions(doc: dict[str, Any], wanted: str) -> dict[str, Any]:
    """A copy of ``doc`` cut to one session and those it opened (``--session S --json``): their
    steps, actions, ``sub_agent_sessions`` entries and usage per model."""
    from magent.models.task import usage_key

    sessions: dict[str, dict[str, Any]] = doc.get("sub_agent_sessions") or {}
    keep = with_descendants(sessions, find_session(sessions, wanted))
    steps = doc.get("steps") or []
    turns = [s for s in steps if s.get("iteration") is not None and s.get("kind") == "agent"]
    actions = doc.get("actions") or []
    paired = list(zip(turns, actions)) if len(turns) == len(actions) else []
    kept = [s for s in steps if s.get("session") in keep]
    usage: dict[str, dict[str, Any]] = {}
    for step in kept:
        for call in step.get("llm_calls") or []:
            if call.get("error"):
                continue
            row = usage.setdefault(usage_key(str(call.get("model") or ""), call.get("provider") or ""),
                                   {"input": 0, "output": 0, "cost": 0.0, "calls": 0})
            row["input"] += int(call.get("tokens_in") or 0)
            row["output"] += int(call.get("tokens_out") or 0)
            row["cost"] = round(row["cost"] + float(call.get("cost") or 0.0), 10)
            row["calls"] += 1
            if call.get("cost") is None:
                row["unpriced"] = row.get("unpriced", 0) + 1
            if call.get("estimated"):
                row["estimated"] = row.get("estimated", 0) + 1
    return {**doc, "steps": kept, "actions": [a for s, a in paired if s.get("session") in keep],
            "sub_agent_sessions": {sid: info for sid, info in sessions.items() if sid in keep},
            "usage_by_model": usage}
