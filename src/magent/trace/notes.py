"""One-line descriptions of the events of structured output and context budgets, shared by
the live view and ``magent trace``."""

from __future__ import annotations

from typing import Any


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
