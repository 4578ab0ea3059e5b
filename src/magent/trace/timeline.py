"""The report's timeline: where each node, model call and tool call sits in time, per session lane.

Positions are fractions of the axis; long idle stretches are squeezed into a labelled break. A
lane has rows 0 nodes, 1 model calls, 2 tool calls. Bars are ``[step, lane, row, x0, x1,
status]``, marks ``[step, lane, x, name]``, ``segments`` ``[x0, x1, ms0, ms1]``."""

from __future__ import annotations

from bisect import bisect_right
from datetime import datetime, timedelta
from typing import Any

BREAK_WIDTH = 0.03
"""Share of the axis one squeezed break takes."""
MIN_GAP_MS = 2000
"""Idle stretches shorter than this are drawn to scale."""
GAP_SHARE = 0.1
"""...and so are those shorter than this share of the time spent working."""
MIN_WIDTH_MS = 1
MARKS = ("awaiting_human", "human_decision", "resumed", "error", "warning", "interrupted")


def _ts(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def _plus(start: datetime, ms: int) -> datetime:
    return start + timedelta(milliseconds=max(ms, MIN_WIDTH_MS))


class _Axis:
    """Maps datetimes to 0..1 with long gaps squeezed."""

    def __init__(self, spans: list[tuple[datetime, datetime]]):
        spans = sorted(spans)
        merged: list[list[datetime]] = []
        for start, end in spans:
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        self.origin = merged[0][0] if merged else None
        busy = sum((e - s).total_seconds() * 1000 for s, e in merged)
        threshold = max(MIN_GAP_MS, GAP_SHARE * busy)
        # pieces: (start, end, squeezed?)
        pieces: list[tuple[datetime, datetime, bool]] = []
        for i, (start, end) in enumerate(merged):
            if i:
                gap_start = merged[i - 1][1]
                gap = (start - gap_start).total_seconds() * 1000
                pieces.append((gap_start, start, gap > threshold))
            pieces.append((start, end, False))
        scaled = sum((e - s).total_seconds() * 1000 for s, e, squeezed in pieces if not squeezed) or 1.0
        breaks = sum(1 for *_, squeezed in pieces if squeezed)
        width_left = max(0.0, 1.0 - BREAK_WIDTH * breaks)
        self.starts: list[datetime] = []
        self.pieces: list[tuple[datetime, datetime, float, float]] = []
        self.breaks: list[tuple[float, int]] = []
        x = 0.0
        for start, end, squeezed in pieces:
            ms = (end - start).total_seconds() * 1000
            width = BREAK_WIDTH if squeezed else width_left * ms / scaled
            self.starts.append(start)
            self.pieces.append((start, end, x, x + width))
            if squeezed:
                self.breaks.append((x, int(ms)))
            x += width

    def x(self, t: datetime) -> float:
        if not self.pieces:
            return 0.0
        i = max(0, bisect_right(self.starts, t) - 1)
        start, end, x0, x1 = self.pieces[i]
        span = (end - start).total_seconds()
        if span <= 0 or t >= end:
            return min(1.0, x1)
        return max(0.0, x0 + (x1 - x0) * (t - start).total_seconds() / span)

    def segments(self) -> list[list[float]]:
        assert self.origin is not None
        return [[round(x0, 5), round(x1, 5), int((start - self.origin).total_seconds() * 1000),
                 int((end - self.origin).total_seconds() * 1000)] for start, end, x0, x1 in self.pieces]


def _intervals(step: dict[str, Any], events: list[dict[str, Any]], last: datetime | None):
    """``(row, start, end)`` of the bars a step draws."""
    start = _ts(step.get("ts"))
    if start is None:
        return
    if step["type"] == "node":
        if step.get("done"):
            yield 0, start, _plus(start, step["ms"])
        else:  # unfinished: until the last thing that happened
            yield 0, start, max(_plus(start, 0), last or start)
        for call in step["llm"]:  # a reflection's or tool node's own calls
            yield 1, start, _plus(start, int(call.get("latency_ms") or 0))
    elif step["type"] == "turn":
        latency = int(step["llm"][0].get("latency_ms") or 0) if step["llm"] else 0
        yield 1, start, _plus(start, latency)
    intents = {e.get("call_id"): _ts(e.get("ts")) for e in events if e.get("type") == "tool_call"}
    cursor = _plus(start, int(step["llm"][0].get("latency_ms") or 0)) if step["llm"] else start
    for call in step["tools"]:
        began = intents.get(call.get("id")) or cursor
        yield 2, began, _plus(began, call.get("ms") or 0)
        cursor = _plus(began, call.get("ms") or 0)


def timeline(steps: list[dict[str, Any]], built: Any) -> dict[str, Any]:
    """The timeline of the report's ``steps`` (``built``: the events behind each step, or None)."""
    lanes = {step["session"]: None for step in steps}
    lane_of = {sid: i for i, sid in enumerate(lanes)}
    stamps = [t for t in (_ts(s.get("ts")) for s in steps) if t is not None]
    last = max(stamps) if stamps else None
    raw_bars, raw_marks = [], []
    for i, step in enumerate(steps):
        events = built.events[i] if built is not None and i < len(built.events) else []
        for row, start, end in _intervals(step, events, last):
            raw_bars.append((step["n"], lane_of[step["session"]], row, start, end, step["status"]))
            last = max(last, end) if last else end
        if step["type"] == "event" and step["name"] in MARKS:
            at = _ts(step.get("ts"))
            if at is not None:
                raw_marks.append((step["n"], lane_of[step["session"]], at, step["name"]))
    spans = [(b[3], b[4]) for b in raw_bars] + [(m[2], _plus(m[2], 0)) for m in raw_marks]
    if not spans:
        return {"lanes": list(lanes), "bars": [], "marks": [], "breaks": [], "segments": []}
    axis = _Axis(spans)
    bars = [[n, lane, row, round(axis.x(s), 5), round(axis.x(e), 5), status]
            for n, lane, row, s, e, status in raw_bars]
    marks = [[n, lane, round(axis.x(at), 5), name] for n, lane, at, name in raw_marks]
    return {"lanes": list(lanes), "bars": bars, "marks": marks,
            "breaks": [[round(x, 5), ms] for x, ms in axis.breaks], "segments": axis.segments(),
            "start": axis.origin.isoformat() if axis.origin else None}
