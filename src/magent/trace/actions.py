"""Seed 003's two layers: the action records kept in the trace, and ``attempts`` derived from them."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from magent.models import TraceLog


def hydrate(doc: dict[str, Any], refresh: bool = False) -> dict[str, Any]:
    """Fill the action records' ``result`` (and ``args``, ``outcome``) from their iteration steps
    (``refresh``: even where there is one); returns ``doc``, changed in place. Actions that do
    not line up with their steps (a hand-edited trace) are left as they are."""
    turns = [s for s in doc.get("steps") or [] if s.get("iteration") is not None and s.get("kind") == "agent"]
    actions = doc.get("actions") or []
    if len(turns) != len(actions):
        return doc
    for step, action in zip(turns, actions):
        calls = action.get("tool_calls") or []
        records = step.get("tool_calls") or []
        if len(calls) != len(records):
            continue
        for call, record in zip(calls, records):
            result = record.get("result") or {}
            if not call.get("args"):
                call["args"] = record.get("arguments") or {}
            if refresh or not call.get("result"):
                call["result"] = result.get("text") or record.get("error") or ""
            call["outcome"] = record.get("outcome") or "SUCCESS"
    return doc


def compress_actions(actions: Iterable[Any]) -> list[str]:
    """Seed 003's ``attempts``, phase 1: ``name(args) → OUTCOME`` per tool call, never stored."""
    out: list[str] = []
    for action in actions:
        calls = action.get("tool_calls") if isinstance(action, dict) else action.tool_calls
        for call in calls or []:
            get = call.get if isinstance(call, dict) else lambda k, d=None, c=call: getattr(c, k, d)
            args = get("args") or {}
            summary = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in args.items())
            if len(summary) > 80:
                summary = summary[:79] + "…"
            out.append(f"{get('name')}({summary}) → {get('outcome') or 'SUCCESS'}")
    return out


def attempts(trace: "TraceLog | dict[str, Any]") -> list[str]:
    """The ``attempts`` list of a trace (its actions compressed; args filled in first)."""
    doc = trace if isinstance(trace, dict) else trace.model_dump(mode="json")
    return compress_actions(hydrate(doc).get("actions") or [])
