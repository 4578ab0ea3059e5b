"""One step of a trace, whole (``magent trace ID --step N``): the full texts from its events,
``entries.jsonl`` or a tool node's ``full_result``, and the paths of artifacts."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from magent.trace.actions import compress_actions
from magent.trace.load import TraceView
from magent.money import cost_phrase, token_note
from magent.trace.view import Line, OUTCOME_STYLE, duration, is_node, opens_exchange, tokens


def _entries(task_dir: Any, wanted: set[str]) -> dict[str, dict[str, Any]]:
    from magent.store.files import read_jsonl

    if not wanted:
        return {}
    found: dict[str, dict[str, Any]] = {}
    for raw in read_jsonl(task_dir.path / "entries.jsonl"):
        if raw.get("id") in wanted:
            found[raw["id"]] = raw
            if len(found) == len(wanted):
                break
    return found


def artifact_info(task_dir: Any, name: str | None) -> dict[str, Any] | None:
    """Where an artifact is, if the name stays inside the task directory."""
    if not name:
        return None
    rel = Path(name)
    if rel.is_absolute() or ".." in rel.parts:
        return {"path": name, "exists": False, "note": "not a path inside the task directory"}
    path = task_dir.path / rel
    try:
        info = path.lstat()  # a link planted there is not followed, nor reported as the artifact
    except OSError:
        return {"path": str(path), "exists": False}
    if not stat.S_ISREG(info.st_mode):
        return {"path": str(path), "exists": False, "note": "not a regular file"}
    return {"path": str(path), "exists": True, "bytes": info.st_size}


def check_step(view: TraceView, number: int) -> None:
    """Raise ``UsageError`` unless the task has a step ``number`` (1-based)."""
    from magent.errors import UsageError

    steps = view.steps
    if not 1 <= number <= len(steps):
        raise UsageError(f"task {view.task_dir.id[:8]} has no step {number}"
                         + (f" (its steps are 1..{len(steps)})" if steps else " (it has no steps yet)"))


def step_detail(view: TraceView, number: int) -> dict[str, Any]:
    """Everything known about step ``number`` (1-based) as plain data. Raises ``UsageError``
    when there is no such step."""
    check_step(view, number)
    steps = view.steps
    step = steps[number - 1]
    events = view.built.events[number - 1] if view.built is not None else []
    by_type: dict[str, list[dict[str, Any]]] = {}
    for ev in events:
        by_type.setdefault(str(ev.get("type")), []).append(ev)
    detail: dict[str, Any] = {"number": number, "source": view.source, "step": step,
                              "type": "node" if is_node(step) else "turn" if step.get("iteration") is not None
                              else "event"}
    if view.built is None:
        detail["note"] = "events.jsonl is missing: inputs and outputs are shown as the trace kept them (truncated)"

    llm_events = by_type.get("llm_call", [])
    detail["llm_calls"] = []
    for i, record in enumerate(step.get("llm_calls") or []):
        ev = llm_events[i] if i < len(llm_events) else {}
        detail["llm_calls"].append({**record, "response": (ev.get("response") or {}).get("content"),
                                    "entry_id": ev.get("entry_id"),
                                    "tool_selection": (ev.get("request") or {}).get("selection")})

    tool_calls = []
    calls_by_id = {ev.get("call_id"): ev for ev in by_type.get("tool_call", [])}
    results_by_id = {ev.get("call_id"): ev for ev in by_type.get("tool_result", [])}
    entry_ids = {str((r.get("result") or {}).get("entry_id")) for r in step.get("tool_calls") or []
                 if (r.get("result") or {}).get("entry_id")}
    entries = _entries(view.task_dir, entry_ids)
    for record in step.get("tool_calls") or []:
        result = record.get("result") or {}
        call_ev = calls_by_id.get(record.get("call_id"), {})
        result_ev = results_by_id.get(record.get("call_id"), {})
        entry = entries.get(str(result.get("entry_id")))
        if entry is not None:
            full, where = entry.get("content") or "", "entries.jsonl (what the model saw)"
        elif result_ev.get("full_result") is not None:
            full, where = result_ev["full_result"], "events.jsonl (the tool node's full result)"
        elif result_ev.get("result") is not None:
            full, where = result_ev["result"], "events.jsonl (truncated)"
        else:
            full, where = result.get("text"), "trace (truncated)"
        tool_calls.append({
            "name": f"{record.get('server')}.{record.get('tool')}" if record.get("server") else record.get("tool"),
            "call_id": record.get("call_id"), "arguments": call_ev.get("arguments", record.get("arguments")),
            "outcome": record.get("outcome") if result or record.get("error") else None,
            "error": record.get("error"), "duration_ms": record.get("duration_ms"),
            "result": full, "result_from": where if full is not None else None,
            "data": result_ev.get("data"), "notes": result.get("notes"),
            "requested": result.get("requested"), "artifact": artifact_info(view.task_dir, result.get("artifact"))})
    detail["tool_calls"] = tool_calls
    if detail["type"] != "event":
        from magent.trace.notes import describe_guardrail

        detail["guardrails"] = [describe_guardrail(ev) for ev in by_type.get("guardrail", [])]

    if detail["type"] == "node":
        children, turns = [], []
        for n in range(number + 1, len(steps) + 1):
            if is_node(steps[n - 1]) or opens_exchange(steps[n - 1]):
                break
            children.append(n)
            if steps[n - 1].get("iteration") is not None:
                turns.append(steps[n - 1])
        detail["children"] = children
        finished = by_type.get("node_finished", [])
        detail["output"] = finished[-1].get("output") if finished else None
        reflection = by_type.get("reflection", [])
        if reflection:
            detail["verdict"] = {k: reflection[-1].get(k) for k in ("verdict", "feedback", "round", "max_rounds",
                                                                     "routing_key", "understood")}
        if turns:
            last = _last_reply(view, number, children)
            if last is not None:
                detail["output"] = last
            detail["attempts"] = compress_actions(_actions_of(view, turns))
    elif detail["type"] == "event" and events:
        detail["event"] = {k: v for k, v in events[0].items() if k not in ("seq", "type")}
    return detail


def _last_reply(view: TraceView, number: int, children: list[int]) -> str | None:
    """The full text of the node's last model reply (its answer), from the events."""
    if view.built is None:
        return None
    for n in reversed(children):
        for ev in reversed(view.built.events[n - 1]):
            # (a rail's judge answers the rail; a failed attempt answered nothing)
            if ev.get("type") == "llm_call" and not ev.get("rail") and not ev.get("error"):
                return (ev.get("response") or {}).get("content")
    return None


def _actions_of(view: TraceView, turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    all_turns = [s for s in view.steps if s.get("iteration") is not None and s.get("kind") == "agent"]
    actions = view.doc.get("actions") or []
    if len(all_turns) != len(actions):
        return []
    index = {id(s): a for s, a in zip(all_turns, actions)}
    return [index[id(t)] for t in turns if id(t) in index]


def _block(lines: list[Line], title: str, text: Any, style: str | None = None) -> None:
    lines.append([(title, "bold")])
    if text is None or text == "":
        lines.append([("  (empty)", "dim")])
        return
    if not isinstance(text, str):
        text = json.dumps(text, indent=2, ensure_ascii=False, default=str)
    for row in text.splitlines() or [""]:
        lines.append([("  " + row, style)])


def selection_lines(selection: dict[str, Any]) -> list[Line]:
    """Which tools a request carried and why (an agent's ``tool_selection``)."""
    carried = selection.get("carried") or []
    head = f"tools carried: {len(carried)} of {selection.get('allowed')}, ranked by {selection.get('method')}"
    lines: list[Line] = [[(head, "bold")]]
    if selection.get("left_out"):
        lines[0].append((f" · {selection['left_out']} left out, tools.search offered", "dim"))
    for tool in carried:
        lines.append([(f"  {tool.get('tool')}", "magenta"), (f"  {carried_why(tool)}", "dim")])
    return lines


def carried_why(tool: dict[str, Any]) -> str:
    """Why a request carried a tool, in a few words."""
    by = {"always": "always", "top_k": "top_k", "search": "found by tools.search"}.get(str(tool.get("by")), "?")
    if tool.get("score") is None:
        return by
    return (f"{by} · rank {tool.get('rank')} · score {tool['score']:.2f} = 0.8 x relevance "
            f"{tool.get('relevance', 0):.2f} + 0.2 x success {tool.get('success', 0):.2f} "
            f"({tool.get('calls', 0)} past calls)")


def step_lines(detail: dict[str, Any]) -> list[Line]:
    """A step's details as styled lines, nothing truncated."""
    step = detail["step"]
    lines: list[Line] = []
    head: Line = [(f"step {detail['number']}", "bold"), (f" · {detail['type']}", "dim")]
    name = step.get("step_name")
    head.append((f" · {name}", "bold cyan"))
    for key in ("kind", "agent"):
        if step.get(key):
            head.append((f" · {step[key]}", None))
    if step.get("iteration") is not None:
        head.append((f" · turn {step['iteration']}", None))
    if detail["type"] != "event":
        head.append((f" · {duration(step.get('duration_ms'))}", "dim"))
    status = step.get("status") or "info"
    if status != "info":
        head.append((f" · {status}", "bold red" if status == "error" else "yellow"))
    lines.append(head)
    lines.append([(f"at {step.get('timestamp')}", "dim")])
    if step.get("message"):
        lines.append([(str(step["message"]), None)])
    if detail.get("note"):
        lines.append([(detail["note"], "yellow")])
    for call in detail.get("llm_calls") or []:
        lines.append([])
        if call.get("error"):
            lines.append([("failed attempt ", "bold red"), (str(call.get("model")), "blue"),
                          (f" · attempt {call.get('attempt') or 1} · {duration(call.get('latency_ms'))}", "dim")])
            lines.append([(f"  {call['error']}", "red")])
            continue
        lines.append([(f"rail {call['rail']} · " if call.get("rail") else "", "bold"),
                      ("model call ", "bold"), (str(call.get("model")), "blue"),
                      (f" ({call.get('provider')}) · {tokens(int(call.get('tokens_in') or 0))} in · "
                       f"{tokens(int(call.get('tokens_out') or 0))} out{token_note(call)} · "
                       f"{cost_phrase(call.get('cost', 0.0))} · "
                       f"{duration(call.get('latency_ms'))} · stop: {call.get('stop_reason')}", "dim")])
        if call.get("tool_selection"):
            lines.extend(selection_lines(call["tool_selection"]))
        if call.get("response") is not None:
            _block(lines, "reply", call["response"], "italic")
    for i, call in enumerate(detail.get("tool_calls") or [], 1):
        lines.append([])
        outcome = call.get("outcome")
        lines.append([(f"tool call {i}: ", "bold"), (str(call.get("name")), "magenta"),
                      (f"  {outcome or 'no result'}", OUTCOME_STYLE.get(outcome or "", "yellow")),
                      (f" · {duration(call.get('duration_ms'))} · id {call.get('call_id')}", "dim")])
        if call.get("requested"):
            lines.append([(f"  fallback for {call['requested']}", "yellow")])
        _block(lines, "arguments", call.get("arguments") or {})
        if call.get("error"):
            _block(lines, "error", call["error"], "red")
        if call.get("result") is not None:
            _block(lines, f"result (from {call.get('result_from')})", call["result"])
        for note in call.get("notes") or []:
            lines.append([(f"  note: {note}", "dim")])
        artifact = call.get("artifact")
        if artifact:
            state = f"{artifact.get('bytes')} bytes" if artifact.get("exists") else "missing"
            lines.append([("full output: ", "bold"), (artifact["path"], None), (f" ({state})", "dim")])
    if detail.get("guardrails"):
        lines.append([])
        lines.append([("guardrails", "bold")])
        for line in detail["guardrails"]:
            lines.append([("  " + line, None)])
    if detail.get("verdict"):
        lines.append([])
        _block(lines, "verdict", detail["verdict"])
    if detail.get("output") is not None and detail["type"] == "node":
        lines.append([])
        _block(lines, "output", detail["output"])
    if detail.get("attempts"):
        lines.append([])
        lines.append([("attempts (seed 003, derived from the action records)", "bold")])
        for line in detail["attempts"]:
            lines.append([("  " + line, None)])
    if detail.get("children"):
        lines.append([])
        lines.append([("steps inside: ", "bold"), (", ".join(map(str, detail["children"])), None)])
    if detail.get("event"):
        lines.append([])
        for key, value in detail["event"].items():
            if key == "ts":
                continue
            inline = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
            if "\n" not in inline and len(inline) <= 100:
                lines.append([(f"{key}: ", "bold"), (inline, None)])
            else:
                _block(lines, f"{key}:", value)
    return lines
