"""How a cost reads: dollars, or unknown when litellm has no price for a model (such calls are
counted as ``unpriced``, never as $0). Imports nothing, so every view can use it."""

from __future__ import annotations

from typing import Any, Mapping

TOKEN_PARTS = (("cache_read", "cache read"), ("cache_write", "cache write"), ("reasoning", "reasoning"))
"""The parts of a call's tokens billed apart (usage and ``llm_call`` field names), as they read."""


def money(cost: float | None, unpriced: int = 0) -> str:
    """``$0.0123``, ``$0.0123 + unknown`` when some calls were unpriced, ``unknown`` when all were."""
    if cost is None or (unpriced and not cost):
        return "unknown"
    text = f"${cost:.6f}" if 0 < cost < 0.0001 else f"${cost:.4f}"
    return f"{text} + unknown" if unpriced else text


def cost_phrase(cost: float | None, unpriced: int = 0) -> str:
    """``money`` for running text: ``cost unknown`` rather than a bare ``unknown``."""
    text = money(cost, unpriced)
    return text if text.startswith("$") else "cost unknown"


def token_parts(counts: Mapping[str, Any]) -> str:
    """``4,000 cache read, 256 reasoning``: the parts of ``counts``' tokens billed at their own
    rate (keys as in ``Usage`` and ``llm_call`` events), or ``""`` when it has none."""
    return ", ".join(f"{int(counts.get(key) or 0):,} {label}" for key, label in TOKEN_PARTS if counts.get(key))


def estimate_note(counts: Mapping[str, Any]) -> str:
    """``estimated`` when all of ``counts``' tokens are magent's estimate (the server sent no
    usage), ``1 of 3 calls estimated`` when some are, or ``""``."""
    estimated, calls = int(counts.get("estimated") or 0), counts.get("calls")
    if not estimated:
        return ""
    return "estimated" if calls is None or estimated >= int(calls) else f"{estimated} of {calls} calls estimated"


def token_note(counts: Mapping[str, Any]) -> str:
    """``token_parts`` and ``estimate_note`` in brackets after a token count (`` (4,000 cache
    read)``, `` (estimated)``), or ``""``."""
    parts = ", ".join(text for text in (token_parts(counts), estimate_note(counts)) if text)
    return f" ({parts})" if parts else ""
