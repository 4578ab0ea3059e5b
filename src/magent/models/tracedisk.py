"""Reading trace.json of schemas 6 to 17, which left out what a model turn's step and action
record could be worked out from; ``expand`` puts it back (the trace migration to schema 18 calls it).
From schema 18 on, trace.json holds every record whole, and nothing here applies to it.

What those versions left out, and ``expand`` gives back exactly:

- a turn step's ``step_name`` when it is ``node:iteration``, its ``message`` when it is ``calls``
  and the names of its tool calls, its ``kind`` (always ``agent``);
- an action record's ``iteration``, ``timestamp`` and tool calls' names and arguments when its
  turn step says the same (the k-th action is the k-th agent turn step);
- (schema 8) a turn step's ``agent`` when it is its ``node``; a turn's model call's ``model`` and
  ``provider`` when they are the previous turn's call's, and its ``stop_reason`` when it is what
  the step says (``tool_calls`` when it made tool calls, else ``stop``; none for a failed attempt);
- (schema 11) a turn step's ``node`` when it is the previous turn step's;
- (schema 15) a turn step's ``iteration`` when it is one more than the previous turn step's at
  the same node, and a step's ``timestamp`` in milliseconds (``...08.008Z`` is ``...08.008000Z``).

(Long results' texts, left to their entries, are put back by ``trace.load.restore_results``.)
"""

import re
from datetime import datetime, timedelta
from typing import Any

def _turns(doc: dict[str, Any], *, compacted: bool) -> list[dict[str, Any]]:
    """The agent turn steps (``compacted``: their ``kind`` and ``iteration`` may have been left
    out; a step without ``step_name`` is a compacted turn)."""
    if not compacted:
        return [s for s in doc.get("steps") or []
                if isinstance(s, dict) and s.get("iteration") is not None and s.get("kind") == "agent"]
    return [s for s in doc.get("steps") or []
            if isinstance(s, dict) and (s.get("iteration") is not None or "step_name" not in s)
            and s.get("kind") in (None, "agent")]


def _name(record: dict[str, Any]) -> str:
    server, tool = record.get("server") or "", record.get("tool") or ""
    return f"{server}.{tool}" if server else tool


def _step_fields(step: dict[str, Any]) -> dict[str, Any]:
    """What a turn step's own fields say of its name, message and kind."""
    calls = step.get("tool_calls") or []
    out = {"step_name": f"{step.get('node')}:{step.get('iteration')}", "kind": "agent"}
    if calls:
        out["message"] = "calls " + ", ".join(_name(c) for c in calls)
    return out


def _action_fields(step: dict[str, Any]) -> dict[str, Any]:
    """What a turn step says of its action record (the answer's time: the step's start plus the
    answer's latency, when the step is that one call)."""
    out: dict[str, Any] = {"iteration": step.get("iteration"),
                           "tool_calls": [{"name": _name(c), "args": c.get("arguments") or {}}
                                          for c in step.get("tool_calls") or []]}
    llm = step.get("llm_calls") or []
    if len(llm) == 1 and step.get("timestamp"):
        try:
            began = datetime.fromisoformat(str(step["timestamp"]).replace("Z", "+00:00"))
        except ValueError:
            return out
        answered = began + timedelta(milliseconds=llm[0].get("latency_ms") or 0)
        out["timestamp"] = answered.isoformat().replace("+00:00", "Z")
    return out


def _stop_reason(step: dict[str, Any], call: dict[str, Any]) -> str | None:
    """The stop reason a turn's model call is read back with when trace.json leaves it out."""
    if call.get("error"):
        return None
    return "tool_calls" if step.get("tool_calls") else "stop"


def _expand_turn_fields(turns: list[dict[str, Any]]) -> None:
    previous: dict[str, Any] = {}
    for step in turns:
        if step.get("node") is not None:
            step.setdefault("agent", step["node"])
        for call in step.get("llm_calls") or []:
            if not isinstance(call, dict):
                continue
            for key, value in previous.items():
                call.setdefault(key, value)
            call.setdefault("stop_reason", _stop_reason(step, call))
            previous = {"model": call.get("model"), "provider": call.get("provider", "")}


def _expand_turn_iterations(turns: list[dict[str, Any]]) -> None:
    last: dict[Any, Any] = {}
    for step in turns:
        node = step.get("node")
        if "iteration" not in step and type(last.get(node)) is int:
            step["iteration"] = last[node] + 1
        last[node] = step.get("iteration")


_MILLIS = re.compile(r"\.(\d{3})Z$")


def _expand_timestamps(steps: list[Any]) -> None:
    for step in steps:
        ts = step.get("timestamp") if isinstance(step, dict) else None
        if isinstance(ts, str):
            step["timestamp"] = _MILLIS.sub(r".\g<1>000Z", ts)


def _expand_turn_nodes(turns: list[dict[str, Any]]) -> None:
    for i, step in enumerate(turns):
        if i and "node" not in step:
            step["node"] = turns[i - 1].get("node")


def expand(doc: dict[str, Any]) -> dict[str, Any]:
    """Put back what a schema 6-17 trace.json left out (``doc`` changed in place and returned)."""
    if not all(isinstance(s, dict) for s in [*(doc.get("steps") or []), *(doc.get("actions") or [])]):
        return doc
    _expand_timestamps(doc.get("steps") or [])
    turns = _turns(doc, compacted=True)
    _expand_turn_nodes(turns)
    _expand_turn_iterations(turns)
    _expand_turn_fields(turns)
    for step in turns:
        for key, value in _step_fields(step).items():
            step.setdefault(key, value)
    actions = doc.get("actions") or []
    if len(actions) == len(turns):
        for step, action in zip(turns, actions):
            for key, value in _action_fields(step).items():
                action.setdefault(key, value)
    return doc
