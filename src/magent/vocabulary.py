"""The words magent uses for what a run did, in one place (no imports: every layer may use it).

- a **visit** is one run of a node (a node sent back to runs again: visit 2);
- a **model call** is one request to a model (a ReAct agent makes one per turn);
- a **step** is one numbered line of ``magent trace`` (a node visit, a model turn inside it,
  or a moment such as a pause or a resume); ``magent trace ID --step N`` opens step N;
- a **round** is one critique of a reflection node (``max_rounds`` bounds them).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

TASK_STATUSES = ("pending", "running", "awaiting_human", "interrupted", "completed", "failed", "cancelled")
"""The values of ``models.TaskStatus`` (a test keeps them equal), for the light command paths."""

STATUS_STYLE = {
    "pending": "dim", "running": "cyan", "awaiting_human": "yellow", "interrupted": "dark_orange",
    "completed": "green", "failed": "bold red", "cancelled": "magenta",
}
"""How each task status looks in a terminal (the task table, ``tasks show``, the trace)."""

UNSETTLED = ("pending", "running")
"""Statuses that hold only while a process runs the task (and holds its lock)."""


def shown_status(status: str, live: bool) -> str:
    """The status to show: a pending or running task no process holds (it died: ``kill -9``, a
    reboot) is ``interrupted``, and continues with ``magent resume``."""
    return "interrupted" if status in UNSETTLED and not live else status


def short(text: Any, width: int) -> str:
    """``text`` on one line (runs of white space as one space), cut to ``width`` with ``…``."""
    text = " ".join(str(text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def plural(n: int, word: str, many: str = "") -> str:
    """``plural(1, "step")`` → ``1 step``; ``plural(1200, "step")`` → ``1,200 steps``; ``many`` for
    a word whose plural is not ``word + "s"``."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


_MOMENTS = {
    "run_start": "the start: nothing has run yet",
    "node_start": "{node} started, before its first model call",
    "llm_turn": "{node}: a model turn and its tool calls done",
    "node_end": "{node} finished, before choosing where to go",
    "pause": "waiting for a person at {node}",
    "resume": "a person's answer applied at {node}",
    "interrupt": "stopped by a signal in {node}",
    "finish": "the end",
    "fork": "a branch starts here, at {node}",
}


def checkpoint_moment(reason: str, node: str) -> str:
    """What a checkpoint marks, in words (``magent checkpoints list``): where a fork would start."""
    return _MOMENTS.get(reason, reason + " at {node}").format(node=node)


FOLLOW_UP = "follow-up for "
"""How the step that opens a follow-up's exchange begins (``how_started``)."""


def how_started(event: Mapping[str, Any]) -> str | None:
    """What a ``run_started`` event says about where the run picked up (None: a fresh start)."""
    if not event.get("resumed"):
        return None
    if event.get("follow_up"):
        said = " ".join(str(event["follow_up"]).split())
        said = said if len(said) <= 160 else said[:159] + "…"
        return f"{FOLLOW_UP}{event.get('answered_by') or 'the agent'}: {said}"
    if event.get("forked_from"):
        return f"forked from task {str(event['forked_from'])[:8]} at checkpoint {event.get('from_checkpoint')}"
    if event.get("from_start"):
        return "started again from the beginning (it stopped before its first checkpoint)"
    if event.get("retry"):
        return f"retried from checkpoint {event.get('from_checkpoint')} after it failed"
    return f"resumed from checkpoint {event.get('from_checkpoint')}"


def round_limit(max_rounds: Any) -> str:
    """What is said when a reflection node's review loop ends at its ``max_rounds``."""
    return (f"round limit reached: no pass in {plural(int(max_rounds or 0), 'round')}; "
            "the last output goes on (routing_key max_rounds)")


def damage_note(later: Sequence[Any]) -> str:
    """What resume does about a damaged checkpoint, given the summaries of the ones after it."""
    if any(not s.corrupt for s in later):
        return "a newer checkpoint is sound: resume goes on from that"
    return "resume falls back to the checkpoint before it"
