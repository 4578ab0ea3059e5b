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
