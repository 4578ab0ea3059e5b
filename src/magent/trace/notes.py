"""One-line descriptions of events (structured output, context budgets, guardrails, memory),
shared by the live view and ``magent trace``."""

from __future__ import annotations

from typing import Any

from magent.store.events import truncate
from magent.vocabulary import plural


def output_invalid(ev: dict[str, Any]) -> str:
    """``output_invalid``: a final answer that did not fit the agent's ``output_schema``."""
    retries = ev.get("retries") or 0
    then = (f"sent back to the model (retry {ev['retry']}/{retries})" if ev.get("retry")
            else f"no retries left ({retries}): the node fails")
    return f"answer does not fit output_schema: {ev.get('problem') or ''} — {then}"


def compaction(ev: dict[str, Any]) -> str:
    """``compaction``: an agent's context budget left older messages out of its view."""
    how = {"fifo": "left out", "summarize": "summarized", "hybrid": "summarized"}.get(str(ev.get("strategy")), "left out")
    through = f" through entry {str(ev['through'])[:8]}" if ev.get("through") else ""
    text = (f"context of {ev.get('agent')} compacted ({ev.get('strategy')}): {how} {ev.get('dropped')} "
            f"message{'s' if ev.get('dropped') != 1 else ''}{through}, kept {ev.get('kept')}; "
            f"{ev.get('tokens_before'):,} → {ev.get('tokens_after'):,} tokens (budget {ev.get('budget'):,})")
    if ev.get("summary"):
        text += f"; summary: {' '.join(str(ev['summary']).split())}"
    return text



RESULT_LIMIT = 1000
"""Characters of a tool result the trace shows (seed 003: about 1,000). (Here rather than in
``trace.steps``, so reading a trace.json does not import the step builder.)"""
PREVIEW_LIMIT = 200
"""Characters of a longer result that trace.json keeps, marked ``preview``; reading the trace puts
``RESULT_LIMIT`` back from its entry (``trace.load.restore_results``)."""


def describe_guardrail(ev: dict[str, Any]) -> str:
    """One line for a rail's decision: ``input rail 'pii' masked the result of kb.get: found 1 email``."""
    subjects = {"task": "the task text", "follow_up": "the follow-up", "answer": "the answer",
                "memory": "the task summary for long-term memory"}
    if ev.get("source") == "tool_arguments":
        subject = f"the arguments of {ev.get('tool')} ({ev.get('argument')})"
    else:
        subject = subjects.get(str(ev.get("source")), f"the result of {ev.get('tool')}")
    name = f"{ev.get('stage')} rail '{ev.get('rail')}'" + (
        f" ({ev.get('kind')})" if ev.get("kind") != ev.get("rail") else "")
    outcome = str(ev.get("outcome"))
    verb = {"pass": "passed", "mask": "masked", "warn": "flagged", "block": "blocked", "revise": "sent back",
            "pause": "held"}.get(outcome, outcome)
    return f"{name} {verb} {subject}" + (f": {ev['reason']}" if ev.get("reason") else "")


def stored_text(ev: dict[str, Any]) -> str:
    """One line for a ``memory_stored`` event: what was written, where, and what it says."""
    what = "replaced" if ev.get("replaced") else "already had" if ev.get("again") else "stored"
    kind = ev.get("kind") or "memory"
    kind = f"{ev['memory_type']} {kind}" if kind == "memory" and ev.get("memory_type") else kind
    text = f"{what} {kind} [{str(ev.get('id'))[:8]}] in {ev.get('scope')}: {ev.get('content') or ''}"
    for note in ev.get("notes") or []:
        text += f" [{note}]"
    return text


def elicitation_text(ev: dict[str, Any]) -> str:
    """One line for an ``elicitation`` event: the server's question and how it was answered."""
    text = f"{ev.get('server')} asked {ev.get('message')!r}: {ev.get('action')} ({ev.get('answered_by')})"
    if ev.get("content"):
        text += " " + ", ".join(f"{k}={v}" for k, v in ev["content"].items())
    return text


def recalled_text(ev: dict[str, Any]) -> str:
    """One line for a ``memory_recalled`` event: how many, for what, and why each."""
    hits = ev.get("hits") or []
    query = " ".join(str(ev.get("query") or "").split())
    how = "text and vector search" if ev.get("mode") == "hybrid" else "text search"
    if not hits:
        text = f"recalled no memories ({how} for {truncate(query, 60)!r})"
    else:
        n = len(hits)
        parts = [f"[{str(h.get('id'))[:8]}] {float(h.get('score') or 0):.2f}: {h.get('why')}" for h in hits]
        text = (f"recalled {plural(n, 'memory', 'memories')} ({how} for {truncate(query, 60)!r}): "
                + "; ".join(parts))
    for note in ev.get("notes") or []:
        text += f" [{note}]"
    return text
