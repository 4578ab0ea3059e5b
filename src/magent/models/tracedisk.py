"""trace.json's compact form: what a model turn's step and action record can be told from, left out.

A long run writes a step and an action record per model turn, so every byte of them counts a
thousand times. ``compact`` (on the TraceLog's JSON form, defaults already left out) drops what
``expand`` puts back exactly:

- a turn step's ``step_name`` when it is ``node:iteration``, its ``message`` when it is ``calls``
  and the names of its tool calls, its ``kind`` (always ``agent``);
- a long tool result's text when the result is an entry (``entry_id``): reading the trace puts
  back its first ~1,000 characters from the entry (``trace.load.restore_results``);
- an action record's ``iteration``, ``timestamp`` and tool calls' names and arguments when its
  turn step says the same (the k-th action is the k-th agent turn step);
- (schema 8) a turn step's ``agent`` when it is its ``node``; a turn's model call's ``model`` and
  ``provider`` when they are the previous turn's call's, and its ``stop_reason`` when it is what
  the step says (``tool_calls`` when it made tool calls, else ``stop``; none for a failed attempt).
  A value that differs is written, even a default (``"agent": ""``, ``"stop_reason": null``);
- (schema 11) a turn step's ``node`` when it is the previous turn step's (null is written);
- (schema 15) a turn step's ``iteration`` when its ``step_name`` is left out and it is one more
  than the previous turn step's at the same node (a step without ``step_name`` is a turn: every
  other step has one), and a step's ``timestamp`` in milliseconds (``...08.008000Z`` is written
  ``...08.008Z``, read back as it was).

Each field is dropped only when ``expand`` gives back the same value, so a step written some
other way (a renamed tool, failed attempts before the answer) keeps what differs. Validating a
``TraceLog`` expands its input, so trace.json read as it is is the whole TraceLog (but for the
long results' texts, which are their entries').
"""

import re
from datetime import datetime, timedelta
from typing import Any

LONG_RESULT = 164
"""Results longer than this (characters) that are entries are not kept in trace.json."""


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


def _compact_turn_fields(turns: list[dict[str, Any]]) -> None:
    """Schema 8: a turn step's agent, its model calls' model, provider and stop reason (see the
    module's docstring); what differs from the value read back is written, defaults included."""
    previous: dict[str, Any] = {}
    for step in turns:
        agent = step.get("agent", "")
        if step.get("node") is not None and agent == step["node"]:
            step.pop("agent", None)
        else:
            step["agent"] = agent
        for call in step.get("llm_calls") or []:
            derived = {"stop_reason": _stop_reason(step, call)}
            if previous:
                derived.update(previous)
            current = {"model": call.get("model"), "provider": call.get("provider", ""),
                       "stop_reason": call.get("stop_reason")}
            for key, value in current.items():
                if key not in derived:
                    continue  # absent is the model's default, as before
                if derived[key] == value:
                    call.pop(key, None)
                else:
                    call[key] = value  # even a default: the reader would give back another
            previous = {"model": current["model"], "provider": current["provider"]}


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


def _compact_turn_nodes(turns: list[dict[str, Any]]) -> None:
    """Schema 11: a turn step's node left out when it is the previous turn step's."""
    nodes = [step.get("node") for step in turns]
    for i, step in enumerate(turns):
        if i and nodes[i] == nodes[i - 1]:
            step.pop("node", None)
        else:
            step["node"] = nodes[i]


def _compact_turn_iterations(turns: list[dict[str, Any]]) -> None:
    """Schema 15: a turn step's iteration left out when its step_name is (so the reader knows it
    for a turn) and it follows the previous turn at its node's."""
    last: dict[Any, Any] = {}
    for step in turns:
        node, iteration = step.get("node"), step.get("iteration")
        if ("step_name" not in step and type(iteration) is int and node in last
                and type(last[node]) is int and iteration == last[node] + 1):
            del step["iteration"]
        last[node] = iteration


def _expand_turn_iterations(turns: list[dict[str, Any]]) -> None:
    last: dict[Any, Any] = {}
    for step in turns:
        node = step.get("node")
        if "iteration" not in step and type(last.get(node)) is int:
            step["iteration"] = last[node] + 1
        last[node] = step.get("iteration")


_MICROS = re.compile(r"\.(\d{3})000Z$")


def _compact_timestamps(steps: list[Any]) -> None:
    for step in steps:
        ts = step.get("timestamp") if isinstance(step, dict) else None
        if isinstance(ts, str) and ts.endswith("000Z"):
            step["timestamp"] = _MICROS.sub(r".\1Z", ts)


def _expand_timestamps(steps: list[Any]) -> None:
    # What replacing ``\.(\d{3})Z$`` with ``.\1000Z`` gives, by slicing: a trace shows every step's
    # time, and a regular expression's substitution per step was most of expanding them.
    # (``isdecimal`` is ``\d``'s own class: Unicode decimal digits.)
    for step in steps:
        ts = step.get("timestamp") if isinstance(step, dict) else None
        if isinstance(ts, str) and ts.endswith("Z") and len(ts) > 5 and ts[-5] == "." and ts[-4:-1].isdecimal():
            step["timestamp"] = ts[:-1] + "000Z"


def _expand_turn_nodes(turns: list[dict[str, Any]]) -> None:
    for i, step in enumerate(turns):
        if i and "node" not in step:
            step["node"] = turns[i - 1].get("node")


def compact(doc: dict[str, Any]) -> dict[str, Any]:
    """Leave out of ``doc`` (changed in place and returned) what ``expand`` puts back."""
    turns = _turns(doc, compacted=False)
    _compact_turn_fields(turns)
    for step in doc.get("steps") or []:
        for record in step.get("tool_calls") or []:
            result = record.get("result") or {}
            if result.get("entry_id") and len(result.get("text") or "") > LONG_RESULT:
                del result["text"]
    for step in turns:
        for key, value in _step_fields(step).items():
            if step.get(key) == value:
                del step[key]
    actions = doc.get("actions") or []
    if len(actions) == len(turns):
        for step, action in zip(turns, actions):
            derived = _action_fields({**step, "tool_calls": step.get("tool_calls") or []})
            for call in action.get("tool_calls") or []:
                call.pop("result", None)
            for key, value in derived.items():
                if action.get(key, [] if key == "tool_calls" else None) == value:
                    action.pop(key, None)
    else:
        for action in actions:
            for call in action.get("tool_calls") or []:
                call.pop("result", None)
    _compact_turn_iterations(turns)
    _compact_turn_nodes(turns)
    _compact_timestamps(doc.get("steps") or [])
    return doc


def expand(doc: dict[str, Any]) -> dict[str, Any]:
    """Put back what ``compact`` left out (a no-op on a trace that has it all, and on steps and
    records given as models: those were built in memory, never compacted). Returns ``doc``."""
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
