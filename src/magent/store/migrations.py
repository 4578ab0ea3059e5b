"""Named migrations of on-disk documents between schema versions.

Each migration takes a document of version N and returns one of version N+1. A
format change adds a function here and bumps ``models.SCHEMA_VERSION``. Documents
are migrated when read; files on disk are not rewritten (checkpoints are
immutable) unless a person asks (``magent migrate``, ``store.rewrite``), so every
step must stay here.
"""

from __future__ import annotations

from typing import Any, Callable

from magent.models import SCHEMA_VERSION

Migration = Callable[[dict[str, Any]], dict[str, Any]]

def checkpoint_1_to_2_drop_total_usage(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 2 derives ``total_usage`` from ``usage_by_model`` instead of storing it."""
    doc = {k: v for k, v in doc.items() if k != "total_usage"}
    doc["schema_version"] = 2
    return doc


def checkpoint_2_to_3_add_sessions(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 3 lists the open child sessions (``sessions``); a version 2 checkpoint had only
    the main conversation, so it has none."""
    return {**doc, "sessions": [], "schema_version": 3}


def task_3_to_4_drop_steps(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 4 drops ``steps``, which counted model calls under a name ``magent trace`` uses for
    its numbered lines: ``usage.calls`` is that count. (Tasks may now also be ``interrupted``.)"""
    doc = {k: v for k, v in doc.items() if k != "steps"}
    doc["schema_version"] = 4
    return doc


def checkpoint_4_to_5_journals_or_none(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 5 leaves out of the file what it can put back (defaults at any depth, the task id,
    empty journals, an agent's ``spent`` equal to the task's: see ``store.checkpoints.to_disk``),
    so "no journals recorded" (written before version 4) is now ``journals: null``, and an empty
    ``journals`` means every journal was empty."""
    doc = dict(doc)
    if not doc.get("journals"):
        doc.pop("journals", None)
    doc["schema_version"] = 5
    return doc


def trace_7_to_8_turn_defaults_written(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 8 reads a turn step without ``agent`` as its node's, and a turn's model call
    without ``provider`` or ``stop_reason`` as the previous call's provider and the stop the step
    tells (``models.tracedisk``); in a version 7 trace they were absent only as defaults, so the
    defaults are written out."""
    doc = dict(doc)
    steps = []
    for step in doc.get("steps") or []:
        if isinstance(step, dict) and step.get("iteration") is not None and step.get("kind") in (None, "agent"):
            step = {**step, "agent": step.get("agent", ""),
                    "llm_calls": [{**c, "provider": c.get("provider", ""), "stop_reason": c.get("stop_reason")}
                                  if isinstance(c, dict) else c for c in step.get("llm_calls") or []]}
        steps.append(step)
    doc["steps"] = steps
    doc["schema_version"] = 8
    return doc


def checkpoint_8_to_9_told_fields_written(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 9 reads a checkpoint without ``reason`` as a model turn's, without
    ``state.current_agent`` as its position's agent, without ``turn_index`` as its node's
    iteration, and the task's spent without tokens, model calls or cost as the sums of its usage
    (``store.checkpoints.to_disk``); in a version 8 checkpoint they were absent only as defaults,
    so the defaults are written out."""
    doc = {**doc, "schema_version": 9}
    doc.setdefault("reason", "node_end")
    doc["state"] = {"current_agent": "", **(doc.get("state") or {})}
    doc.setdefault("turn_index", 0)
    spent = doc.get("spent")
    if isinstance(spent, dict) and isinstance(spent.get("task"), dict):
        doc["spent"] = {**spent, "task": {"tokens": 0, "model_calls": 0, "cost_usd": 0.0, **spent["task"]}}
    return doc


def trace_10_to_11_turn_nodes_written(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 11 reads a turn step without ``node`` as being at the previous turn step's node
    (``models.tracedisk``); in a version 10 trace it was absent only as null, so null is written."""
    steps = [{**step, "node": step.get("node")}
             if isinstance(step, dict) and step.get("iteration") is not None and step.get("kind") in (None, "agent")
             else step for step in doc.get("steps") or []]
    return {**doc, "steps": steps, "schema_version": 11}


def checkpoint_13_to_14_progress_flags_written(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 14 reads ``node_progress`` with an ``iteration`` of 1 or more and no ``entered``
    or ``started`` as true (``store.checkpoints.to_disk``); a version 13 checkpoint always wrote
    them there, so one missing (none was) is written as null, which reads as absent did."""
    doc = {**doc, "schema_version": 14}
    progress = doc.get("node_progress")
    if isinstance(progress, dict) and type(progress.get("iteration")) is int and progress["iteration"] >= 1:
        doc["node_progress"] = {"entered": None, "started": None, **progress}
    return doc


_TOLD = ("reason", "state.current_agent", "turn_index", "spent.task.tokens", "spent.task.model_calls",
         "spent.task.cost_usd", "node_progress.entered", "node_progress.started")
"""The checkpoint fields schemas 9 to 17 left out when the checkpoint's other fields told them."""


def _told(doc: dict[str, Any]) -> dict[str, Any]:
    """What a schema 9-17 checkpoint's other fields tell of the fields in ``_TOLD``: a model turn's
    reason, the position's agent, the node's iteration as the task's turn count, usage summed
    over the models as what the task spent, and a node past its first turn as entered and started."""
    progress = doc.get("node_progress")
    progress = progress if isinstance(progress, dict) else {}
    usage = [u for u in (doc.get("usage_by_model") or {}).values() if isinstance(u, dict)]
    iteration = progress.get("iteration")
    turned = True if type(iteration) is int and iteration >= 1 else None
    return {"reason": "llm_turn", "state.current_agent": doc.get("position"),
            "turn_index": progress.get("iteration", 0),
            "spent.task.tokens": sum(u.get("input", 0) + u.get("output", 0) for u in usage),
            "spent.task.model_calls": sum(u.get("calls", 0) for u in usage),
            "spent.task.cost_usd": sum((u.get("cost", 0.0) for u in usage), 0.0),
            "node_progress.entered": turned, "node_progress.started": turned}


def checkpoint_17_to_18_spelled_out(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 18 writes every field a checkpoint has (optional ones at their defaults aside):
    nothing is left for its other fields, its directory or its name to tell. A version 9-17
    checkpoint gets back what they told (``_told``); an agent's ``spent`` written ``"task"`` (as
    the task's, versions 5-17) is the task's figures. The reader has already put in the task id
    and sequence number. Raises ``ValueError`` for a reference that names nothing."""
    doc = {**doc, "schema_version": 18}
    told = _told(doc)
    for path in _TOLD:
        *heads, key = path.split(".")
        if heads[:1] == ["spent"] and not isinstance((doc.get("spent") or {}).get("task"), dict):
            continue
        if heads[:1] == ["node_progress"] and (told[path] is None or not isinstance(doc.get("node_progress"), dict)):
            continue
        holder = doc
        for head in heads:
            inner = holder.get(head)
            holder[head] = inner = dict(inner) if isinstance(inner, dict) else {}
            holder = inner
        holder.setdefault(key, told[path])
    spent = doc.get("spent")
    if isinstance(spent, dict):
        for key, value in spent.items():
            if isinstance(value, str):
                if not isinstance(spent.get(value), dict):
                    raise ValueError(f"spent.{key}: refers to {value!r}, which is not there")
                spent[key] = spent[value]
    return doc


def trace_17_to_18_spelled_out(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 18 writes every step and action record whole; a version 6-17 trace left out what a
    turn's step and action record could be told from (``models.tracedisk.expand`` puts it back)."""
    from magent.models.tracedisk import expand

    return {**expand(doc), "schema_version": 18}


_AGENT_KEYS = frozenset({"started", "iteration", "turn_open", "held", "held_answer", "rail_blocks", "revisions",
                         "parts", "output_retries", "invalid"})
"""Progress keys only an agent's loop writes."""
_CALL_KEYS = frozenset({"decisions", "arg_rails", "running", "unsure"})
"""Progress keys of a session that calls tools: an agent's loop or a tool node."""
_CALL_PAUSES = frozenset({"tool_approval", "tool_recovery", "tool_changed"})


def _progress_kind(progress: dict[str, Any], paused_for_a_call: bool) -> str:
    """The kind of a schema 18 progress, from its keys: what only one kind writes."""
    for key, kind in (("fanout", "fan_out"), ("map", "map"), ("plan", "plan")):
        if key in progress:
            return kind
    if progress.keys() & _AGENT_KEYS:
        return "agent"
    if progress.keys() & _CALL_KEYS or paused_for_a_call:
        return "tool"
    return "node"


def checkpoint_18_to_19_progress_kinds(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 19 names the kind of each session's progress (``kind``: the model that reads it).
    A version 18 progress is told by its keys; one with none of an agent's or a tool's, paused
    about a tool call, is a tool node's (a node entered before it paused: its node's progress
    once it runs). Keys read as absent are dropped: nulls (written by ``13_to_14``) and
    ``accepted_pins`` (which the first magents wrote, and none reads)."""
    doc = {**doc, "schema_version": 19}
    request = doc.get("human_request")
    request = request if isinstance(request, dict) else {}
    call_pause = request.get("kind") in _CALL_PAUSES or (
        request.get("kind") == "guardrail" and (request.get("details") or {}).get("source") == "tool_arguments")

    def tagged(progress: Any, session: str | None) -> Any:
        if not isinstance(progress, dict):
            return progress  # (not a progress: the checkpoint fails validation, as it did)
        kept = {k: v for k, v in progress.items() if v is not None and k != "accepted_pins"}
        return {"kind": _progress_kind(kept, call_pause and request.get("session") == session), **kept}

    if "node_progress" in doc:
        doc["node_progress"] = tagged(doc["node_progress"], None)
    if isinstance(doc.get("sessions"), list):
        doc["sessions"] = [{**s, "progress": tagged(s["progress"], s.get("session_id"))}
                           if isinstance(s, dict) and "progress" in s else s for s in doc["sessions"]]
    return doc


MIGRATIONS: dict[tuple[str, int], Migration] = {
    ("checkpoint", 1): checkpoint_1_to_2_drop_total_usage,
    ("checkpoint", 2): checkpoint_2_to_3_add_sessions,
    ("task", 3): task_3_to_4_drop_steps,
    ("checkpoint", 4): checkpoint_4_to_5_journals_or_none,
    ("trace", 7): trace_7_to_8_turn_defaults_written,
    ("checkpoint", 8): checkpoint_8_to_9_told_fields_written,
    ("trace", 10): trace_10_to_11_turn_nodes_written,
    ("checkpoint", 13): checkpoint_13_to_14_progress_flags_written,
    ("checkpoint", 17): checkpoint_17_to_18_spelled_out,
    ("trace", 17): trace_17_to_18_spelled_out,
    ("checkpoint", 18): checkpoint_18_to_19_progress_kinds,
}
"""(document kind, from version) → the step to the next version. Where a kind's format did not
change, there is no step: only its ``schema_version`` moves on."""

# What changed in the versions where no document needs a step:
# 3  traces gained fields with defaults (a step's ``session``, richer ``sub_agent_sessions``);
# 4  checkpoints gained ``journals`` (absent: written before journals existed);
# 6  trace.json leaves out what a model turn's step and action record tell, and the text of long
#    results that are entries (``models.tracedisk``); a version 5 trace has them all (its
#    results' previews are marked ``preview``);
# 7  ``llm_call`` events name their parameters by hash (``request.params``, a line of
#    ``requests.jsonl``); readers take that or the parameters written out;
# 10 events.jsonl lines leave out what they can be told from (``store.events``);
# 12 a tool result's line in entries.jsonl leaves out the call id and name its parent's one tool
#    call gives (``store.entries.restore``), 13 its node too when it is its parent's;
# 15 a trace's turn step may lack both its name and iteration, and times may be in milliseconds
#    (no older trace has either);
# 16 an events.jsonl line leaves out the ``ts`` the line before wrote;
# 17 checkpoints leave their ``sequence`` to their file's name (hashed with it, as the task id
#    since version 5);
# 18 events.jsonl and entries.jsonl lines are written whole again; readers still put back what
#    older lines left out.
# Older lines and documents carry every field so left out, so they read as before.


def migrate(kind: str, doc: dict[str, Any]) -> dict[str, Any]:
    version = doc.get("schema_version", 1)
    while version < SCHEMA_VERSION:
        if version not in range(1, SCHEMA_VERSION):
            raise ValueError(f"no migration for {kind} schema {version}")
        step = MIGRATIONS.get((kind, version))
        doc = step(doc) if step is not None else {**doc, "schema_version": int(version) + 1}
        version = doc["schema_version"]
    return doc
