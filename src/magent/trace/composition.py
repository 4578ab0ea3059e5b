"""One line per composition event (fan-out, join, map, plan), said the same way by the live view
and ``magent trace``, from the event's fields alone."""

from __future__ import annotations

from typing import Any

EVENTS = ("fan_out", "join", "map_started", "map_finished", "plan_started", "plan", "plan_invalid",
          "plan_level", "subtask_finished", "plan_revising", "plan_finished")
"""The event types described here."""

WARNING = {"plan_invalid", "plan_revising"}


def status_of(ev: dict[str, Any]) -> str:
    """``info``, ``warning`` (something was sent back or retried) or ``error``."""
    kind = ev.get("type")
    if kind in WARNING:
        return "warning"
    if kind == "subtask_finished" and ev.get("status") != "completed":
        return "error" if ev.get("status") == "failed" else "warning"
    if kind == "join" and ev.get("failed"):
        return "warning"
    if kind == "map_finished" and ev.get("failed"):
        return "warning"
    return "info"


def describe(ev: dict[str, Any]) -> str:
    """``⇉ fan-out to left, right (joining at merge)``, ``plan (revision 1): 3 subtasks in 2 levels``..."""
    kind = ev.get("type")
    if kind == "fan_out":
        policy = ", errors collected" if ev.get("on_error") == "collect" else ""
        return f"⇉ fan-out to {', '.join(ev.get('targets') or [])} (joining at {ev.get('join')}{policy})"
    if kind == "join":
        failed = ev.get("failed") or []
        return (f"⋈ joined {', '.join(ev.get('branches') or [])}"
                + (f"; failed: {', '.join(failed)}" if failed else ""))
    if kind == "map_started":
        return (f"map: {ev.get('items')} items with {ev.get('agent')}, {ev.get('max_concurrency')} at a time"
                + (", errors collected" if ev.get("on_error") == "collect" else ""))
    if kind == "map_finished":
        return f"map: {ev.get('completed')} of {ev.get('items')} items done" + (
            f", {ev.get('failed')} failed" if ev.get("failed") else "")
    if kind == "plan_started":
        return f"planning with {ev.get('agent')} for {', '.join(ev.get('workers') or [])}"
    if kind == "plan":
        subtasks = ev.get("subtasks") or []
        levels = ev.get("levels") or []
        shown = " | ".join(", ".join(f"{s}" for s in level) for level in levels)
        return (f"plan{_revision(ev)}: {len(subtasks)} subtasks in {len(levels)} levels: {shown}")
    if kind == "plan_invalid":
        return f"plan sent back (answer {ev.get('attempt')}): {ev.get('error')}"
    if kind == "plan_level":
        return f"level {ev.get('level')}: {', '.join(ev.get('subtasks') or [])}"
    if kind == "subtask_finished":
        status = ev.get("status")
        text = f"subtask {ev.get('subtask')} ({ev.get('agent')}) {status}"
        if status != "completed":
            text += f" after try {ev.get('attempt')}: {ev.get('error') or ''}"
        return text
    if kind == "plan_revising":
        return f"revising the plan (revision {ev.get('revision')}): {ev.get('reason')}"
    if kind == "plan_finished":
        return f"plan done: {ev.get('subtasks')} subtasks, {ev.get('revisions')} revision(s)"
    return str(kind)


def _revision(ev: dict[str, Any]) -> str:
    return f" (revision {ev.get('revision')})" if ev.get("revision") else ""
