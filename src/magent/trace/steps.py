"""The step builder behind ``build.build_trace_doc``: the layout ``magent.trace.build`` describes."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from magent.models.task import CALL_DETAILS, usage_key
from magent.store.events import truncate
from magent.trace import composition, notes
from magent.trace.notes import RESULT_LIMIT, describe_guardrail, recalled_text, stored_text
from magent.vocabulary import how_started, plural, round_limit

THINKING_LIMIT = 4000
"""Characters of a model turn's text kept in its action record (the whole text is an entry)."""


ENDS_A_CALL = frozenset({"error", "interrupted", "run_started", "run_finished", "session_finished", "node_started",
                         "node_finished", "awaiting_human"})
"""Events after which failed model attempts can no longer be followed by their answer."""


def _ms_between(start: str, end: str) -> int:
    try:
        delta = datetime.fromisoformat(end) - datetime.fromisoformat(start)
    except ValueError:
        return 0
    return max(0, int(delta.total_seconds() * 1000))


def _minus_ms(ts: str, ms: int) -> str:
    if not ms:
        return ts
    try:
        return (datetime.fromisoformat(ts) - timedelta(milliseconds=ms)).isoformat(timespec="milliseconds")
    except ValueError:
        return ts


@dataclass
class _Node:
    index: int
    visit: int = 1
    finished: bool = False
    parts: list[str] = field(default_factory=list)
    route: str | None = None


@dataclass
class TraceDoc:
    """A built trace: the TraceLog's JSON form plus, per step, the events it came from."""

    doc: dict[str, Any]
    events: list[list[dict[str, Any]]]
    """``events[i]`` are the event dicts behind ``doc["steps"][i]`` (for ``--step``)."""


@dataclass
class _Thread:
    """Where one session's events land: its open node step and its open turn step."""

    node: _Node | None = None
    turn: int | None = None
    react: bool = False
    """A session that runs one agent's loop (sub-agent, map item, subtask): every model call
    is a turn, with no node step of its own."""
    failed: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    """Failed model attempts (event, record) waiting for the answer of their turn."""



class TraceBuilder:
    """Builds a trace's steps and action records from its events, one event at a time."""

    def __init__(self, task_id: str):
        self.task_id = task_id
        self.steps: list[dict[str, Any]] = []
        self.step_events: list[list[dict[str, Any]]] = []
        self.actions: list[dict[str, Any]] = []
        self.action_of: dict[int, int] = {}  # iteration step index -> action index
        self.usage: dict[str, dict[str, Any]] = {}
        self.nodes: dict[tuple[str, int], _Node] = {}  # (name, visit) -> the latest such visit
        self.visits: list[tuple[int, _Node]] = []  # (visit, node step), every one
        self.threads: dict[str | None, _Thread] = {None: _Thread()}
        self.current: _Thread = self.threads[None]
        self.calls: dict[tuple[str | None, str], tuple[int, int]] = {}  # (session, call id) -> (step, position)
        self.sessions: dict[str, dict[str, Any]] = {}
        self.first_ts: str | None = None

    # the session the event being fed belongs to
    @property
    def node(self) -> _Node | None:
        return self.current.node

    @node.setter
    def node(self, value: _Node | None) -> None:
        self.current.node = value

    @property
    def turn(self) -> int | None:
        return self.current.turn

    @property
    def failed(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        return self.current.failed

    @failed.setter
    def failed(self, value: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        self.current.failed = value

    @turn.setter
    def turn(self, value: int | None) -> None:
        self.current.turn = value

    # helpers
    def _step(self, ev: dict[str, Any], **fields: Any) -> int:
        step = {"step_name": "", "message": "", "timestamp": ev.get("ts"), "status": "info", "agent": "",
                "tool_calls": [], "duration_ms": 0, "node": ev.get("node"), "kind": None,
                "iteration": None, "llm_calls": [], "session": ev.get("session")}
        step.update(fields)
        self.steps.append(step)
        self.step_events.append([ev])
        return len(self.steps) - 1

    def _flag(self, index: int, status: str) -> None:
        order = {"info": 0, "warning": 1, "error": 2}
        if order[status] > order[self.steps[index]["status"]]:
            self.steps[index]["status"] = status

    def _attach(self, index: int, ev: dict[str, Any]) -> None:
        self.step_events[index].append(ev)

    def _owner(self) -> int | None:
        """The step a tool call or model call belongs to: the open turn, else the node."""
        if self.turn is not None:
            return self.turn
        return self.node.index if self.node is not None else None

    def _add_call(self, index: int, record: dict[str, Any]) -> int:
        calls = self.steps[index]["tool_calls"]
        calls.append(record)
        action = self.action_of.get(index)
        if action is not None:
            self.actions[action]["tool_calls"].append(
                {"name": f"{record['server']}.{record['tool']}" if record["server"] else record["tool"],
                 "args": record["arguments"]})
        if record.get("call_id"):
            self.calls[(self.steps[index].get("session"), record["call_id"])] = (index, len(calls) - 1)
        return len(calls) - 1

    # events
    def feed(self, ev: dict[str, Any]) -> None:
        kind = ev.get("type")
        if self.first_ts is None:
            self.first_ts = ev.get("ts")
        self.current = self.threads.setdefault(ev.get("session"), _Thread())
        if self.failed and kind in ENDS_A_CALL:
            self._flush_failed()
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(ev)
        elif kind in composition.EVENTS:  # fan-out, join, map, plan: a line under the node
            self._step(ev, step_name=str(kind), status=composition.status_of(ev),
                       message=composition.describe(ev))

    def _on_session_started(self, ev: dict[str, Any]) -> None:
        sid = str(ev.get("session") or "")
        parent = self.threads.get(ev.get("parent_session"))
        opened_by = None
        if parent is not None:
            opened_by = parent.turn if parent.turn is not None else (parent.node.index if parent.node else None)
        self.threads[sid] = _Thread(react=ev.get("kind") != "branch")
        self.sessions[sid] = {
            "session_id": sid, "agent": ev.get("agent") or "", "message_count": 0, "status": "running",
            "kind": ev.get("kind") or "agent", "parent_session": ev.get("parent_session"),
            "node": ev.get("node"), "key": ev.get("key"), "depth": int(ev.get("depth") or 1),
            "task_description": ev.get("task"), "opened_by_step": opened_by, "started_at": ev.get("ts"),
            "usage": {"input": 0, "output": 0, "cost": 0.0, "calls": 0}}
        if opened_by is not None:
            self._attach(opened_by, ev)

    def _on_session_finished(self, ev: dict[str, Any]) -> None:
        info = self.sessions.get(str(ev.get("session") or ""))
        if info is None:
            return
        info.update(status=ev.get("status") or "completed", ended_at=ev.get("ts"),
                    message_count=int(ev.get("message_count") or 0))
        if ev.get("output"):
            info["summary"] = truncate(str(ev["output"]), 300)
        if ev.get("error"):
            info["error"] = str(ev["error"])

    def _on_run_started(self, ev: dict[str, Any]) -> None:
        text = how_started(ev)
        if text is not None:
            self._step(ev, step_name="resumed", message=text)

    def _on_node_started(self, ev: dict[str, Any]) -> None:
        name, visit = ev.get("node") or "", int(ev.get("visit") or 1)
        self.turn = None
        known = self.nodes.get((name, visit))
        if ev.get("resumed") and known is not None:
            self.node = known
            self._attach(known.index, ev)
            return
        # A new visit: no call before it is answered inside it. Forget their ids, for a follow-up
        # counts visits from 1 again and a tool node's call id is its name and visit ("record:1").
        session = ev.get("session")
        self.calls = {key: where for key, where in self.calls.items() if key[0] != session}
        index = self._step(ev, step_name=name, agent=ev.get("agent") or "", kind=ev.get("kind") or "")
        self.node = self.nodes[(name, visit)] = _Node(index=index, visit=visit)
        self.visits.append((visit, self.node))

    def _on_node_finished(self, ev: dict[str, Any]) -> None:
        if self.node is None:
            return
        self._attach(self.node.index, ev)
        self.steps[self.node.index]["duration_ms"] += int(ev.get("duration_ms") or 0)
        self.node.finished = True
        self.turn = None

    def _on_route(self, ev: dict[str, Any]) -> None:
        node = self.node
        if node is not None and self.steps[node.index]["node"] == ev.get("node"):
            node.route = ev.get("to")
            self._attach(node.index, ev)

    def _on_llm_call(self, ev: dict[str, Any]) -> None:
        record = {"model": ev.get("model") or "", "provider": ev.get("provider") or "",
                  "tokens_in": int(ev.get("tokens_in") or 0), "tokens_out": int(ev.get("tokens_out") or 0),
                  "cost": None if ev.get("cost") is None and not ev.get("error") else float(ev.get("cost") or 0.0),
                  "latency_ms": int(ev.get("latency_ms") or 0),
                  "stop_reason": ev.get("stop_reason"), "error": ev.get("error"), "attempt": ev.get("attempt"),
                  "rail": ev.get("rail")}
        record.update({name: int(ev[name]) for name in CALL_DETAILS if ev.get(name)})
        if ev.get("estimated"):
            record["estimated"] = True
        if ev.get("route"):
            record["route"] = ev["route"]
        selection = (ev.get("request") or {}).get("selection")
        if isinstance(selection, dict):
            record["tools"] = [str(t.get("tool")) for t in selection.get("carried") or []] + (
                ["tools.search"] if selection.get("left_out") else [])
        failed = bool(record["error"])
        if not failed:  # a failed attempt answered nothing: it counts as an attempt, not as usage
            _count(self.usage.setdefault(usage_key(record["model"], record["provider"]),
                                         {"input": 0, "output": 0, "cost": 0.0, "calls": 0}), record)
            info = self.sessions.get(ev.get("session") or "")
            if info is not None:
                _count(info["usage"], record)
        response = ev.get("response") or {}
        node = self.node
        if ev.get("rail"):  # a guardrail's judge: on the step it judged for, not a turn of its own
            owner = self._owner()
            last = self.steps[-1] if self.steps else None
            if owner is None and last is not None and last["step_name"] == "llm_call" and \
                    last["llm_calls"][-1].get("rail") == ev["rail"] and last["llm_calls"][-1].get("error"):
                owner = len(self.steps) - 1  # the same call, after an attempt of it that failed
                self._attach(owner, ev)
            elif owner is None:
                owner = self._step(ev, step_name="llm_call", message=f"model call of rail '{ev['rail']}'")
            else:
                self._attach(owner, ev)
            if failed:
                self._flag(owner, "warning")
            self.steps[owner]["llm_calls"].append(record)
            return
        if not self.current.react and (node is None or self.steps[node.index]["kind"] != "agent"):
            owner = node.index if node is not None else self._step(ev, step_name="llm_call")
            self.steps[owner]["llm_calls"].append(record)
            if node is not None:
                self._attach(owner, ev)
            if failed:
                self._flag(owner, "warning")
            return
        if failed:  # held until the turn's answer arrives, and shown inside that turn
            self.failed.append((ev, record))
            return
        iteration = int(ev.get("iteration") or 0)
        calls = response.get("tool_calls") or []
        content = response.get("content") or ""
        message = ("calls " + ", ".join(str(c.get("name")) for c in calls) if calls
                   else "final answer" if content.strip() else "empty reply")
        name = f"{ev.get('agent')}:{iteration}" if self.current.react else f"{ev.get('node')}:{iteration}"
        failed_before, self.failed = self.failed, []
        first = failed_before[0] if failed_before else (ev, record)
        started = _minus_ms(first[0].get("ts") or "", first[1]["latency_ms"])
        index = self._step(ev, step_name=name, message=message, timestamp=started,
                           agent=ev.get("agent") or "", kind="agent", iteration=iteration,
                           llm_calls=[r for _, r in failed_before] + [record],
                           duration_ms=_ms_between(started, ev.get("ts") or started) if failed_before
                           else record["latency_ms"])
        if failed_before:
            self.step_events[index] = [e for e, _ in failed_before] + [ev]
            self._flag(index, "warning")
        self.turn = index
        self.action_of[index] = len(self.actions)
        self.actions.append({"iteration": iteration, "timestamp": ev.get("ts"),
                             "thinking": truncate(content, THINKING_LIMIT), "tool_calls": []})
        for call in calls:
            server, dot, tool = str(call.get("name") or "").partition(".")
            if not dot:
                server, tool = "", server
            args = call.get("arguments")
            if args is None:
                args = {"_raw": call.get("raw_arguments") or ""}
            self._add_call(index, {"call_id": call.get("id"), "server": server, "tool": tool,
                                   "arguments": args, "result": None, "error": None,
                                   "outcome": "SUCCESS", "duration_ms": 0})

    def _flush_failed(self) -> None:
        """Failed attempts no answer followed (the call gave up, or the run stopped): a step of
        their own, where they happened."""
        if not self.failed:
            return
        failed, self.failed = self.failed, []
        last = failed[-1][1]
        message = (f"model call failed: {plural(len(failed), 'attempt')}; last: {last['error']}")
        index = self._step(failed[0][0], step_name="llm_attempts", status="warning", message=message,
                           agent=failed[0][0].get("agent") or "", llm_calls=[r for _, r in failed],
                           duration_ms=sum(r["latency_ms"] for _, r in failed))
        self.step_events[index] = [e for e, _ in failed]
        if self.node is not None:
            self._flag(self.node.index, "warning")

    def _locate(self, ev: dict[str, Any], name: str) -> tuple[int, int] | None:
        found = self.calls.get((ev.get("session"), ev.get("call_id") or ""))
        if found is not None:
            return found
        owner = self._owner()
        if owner is None:
            return None
        server, dot, tool = name.partition(".")
        if not dot:
            server, tool = "", server
        position = self._add_call(owner, {"call_id": ev.get("call_id"), "server": server, "tool": tool,
                                          "arguments": {}, "result": None, "error": None,
                                          "outcome": "SUCCESS", "duration_ms": 0})
        return owner, position

    def _on_tool_call(self, ev: dict[str, Any]) -> None:
        where = self._locate(ev, ev.get("tool") or "")
        if where is None:
            return
        index, position = where
        self._attach(index, ev)
        if "arguments" in ev:
            args = ev.get("arguments") or {}
            self.steps[index]["tool_calls"][position]["arguments"] = args
            action = self.action_of.get(index)
            if action is not None:
                self.actions[action]["tool_calls"][position]["args"] = args

    def _on_tool_result(self, ev: dict[str, Any]) -> None:
        where = self._locate(ev, ev.get("requested_tool") or ev.get("tool") or "")
        if where is None:
            return
        index, position = where
        self._attach(index, ev)
        record = self.steps[index]["tool_calls"][position]
        outcome = ev.get("outcome") or "SUCCESS"
        text = str(ev.get("result") or "")
        # The engine already cut it to about RESULT_LIMIT with a note of how much is left; keep that note.
        result: dict[str, Any] = {"text": text if len(text) <= RESULT_LIMIT + 64 else truncate(text, RESULT_LIMIT)}
        for key in ("entry_id", "artifact", "notes", "attempts"):
            if ev.get(key):
                result[key] = ev[key]
        used = ev.get("tool") or ""
        if used and ev.get("requested_tool") and used != ev.get("requested_tool"):
            server, _, tool = used.partition(".")
            result["requested"] = ev.get("requested_tool")
            record["server"], record["tool"] = server, tool
        record.update(result=result, outcome=outcome, error=ev.get("error"),
                      duration_ms=int(ev.get("duration_ms") or 0))
        action = self.action_of.get(index)
        if action is not None and outcome != "SUCCESS":
            self.actions[action]["tool_calls"][position]["outcome"] = outcome
        if self.steps[index]["iteration"] is not None:
            start = self.steps[index]["timestamp"]
            self.steps[index]["duration_ms"] = max(self.steps[index]["duration_ms"],
                                                   _ms_between(start, ev.get("ts") or start))
        if outcome != "SUCCESS":
            self._flag(index, "warning")
            if self.node is not None:
                self._flag(self.node.index, "warning")

    def _on_reflection(self, ev: dict[str, Any]) -> None:
        if self.node is None:
            return
        self._attach(self.node.index, ev)
        feedback = " ".join(str(ev.get("feedback") or "").split())
        text = (f"verdict {ev.get('verdict')} (round {ev.get('round')}/{ev.get('max_rounds')})"
                + (f": {truncate(feedback, 300)}" if feedback else ""))
        if ev.get("understood") is False:
            text += " [the critic's reply could not be read; counted as revise]"
        if ev.get("routing_key") == "max_rounds":
            text += f" — {round_limit(ev.get('max_rounds'))}"
        self.node.parts.append(text)

    def _on_awaiting_human(self, ev: dict[str, Any]) -> None:
        self._step(ev, step_name="awaiting_human", status="warning",
                   message=f"waiting for a person ({ev.get('kind')}): {ev.get('question') or ''}")

    def _on_human_decision(self, ev: dict[str, Any]) -> None:
        text = f"a person chose {ev.get('action')}"
        if ev.get("message"):
            text += f": {ev['message']}"
        if ev.get("state_updates"):
            text += f" (state updates: {', '.join(map(str, ev['state_updates']))})"
        self._step(ev, step_name="human_decision", message=text)

    def _on_guardrail(self, ev: dict[str, Any]) -> None:
        """A rail that passed is kept with the step it checked; one that tripped is a step of its own."""
        outcome = ev.get("outcome")
        if outcome == "pass":
            owner = self._owner()
            if owner is not None:
                self._attach(owner, ev)
            return
        status = "error" if outcome == "block" else "warning"
        self._step(ev, step_name="guardrail", status=status, message=describe_guardrail(ev))

    def _on_memory_recalled(self, ev: dict[str, Any]) -> None:
        self._step(ev, step_name="memory", agent=ev.get("agent") or "", message=recalled_text(ev))

    def _on_memory_stored(self, ev: dict[str, Any]) -> None:
        self._step(ev, step_name="memory", agent=ev.get("agent") or "", message=stored_text(ev))

    def _on_memory_consolidated(self, ev: dict[str, Any]) -> None:
        text = str(ev.get("summary") or "memory consolidation")
        for note in ev.get("notes") or []:
            text += f" [{note}]"
        self._step(ev, step_name="memory", message=text)

    def _on_memory_forgotten(self, ev: dict[str, Any]) -> None:
        text = f"forgot memory [{str(ev.get('id'))[:8]}] in {ev.get('scope')}: {ev.get('content') or ''}"
        self._step(ev, step_name="memory", agent=ev.get("agent") or "", message=text)

    def _on_elicitation(self, ev: dict[str, Any]) -> None:
        self._step(ev, step_name="elicitation", agent=ev.get("agent") or "", message=notes.elicitation_text(ev))

    def _on_output_invalid(self, ev: dict[str, Any]) -> None:
        self._step(ev, step_name="warning", status="warning", agent=ev.get("agent") or "",
                   message=notes.output_invalid(ev))

    def _on_tool_mode(self, ev: dict[str, Any]) -> None:
        if self.node is not None:  # (the node's last word: a resume may decide again)
            self.steps[self.node.index]["tool_calling"] = f"{ev.get('mode')}: {ev.get('reason')}"

    def _on_compaction(self, ev: dict[str, Any]) -> None:
        self._step(ev, step_name="compaction", agent=ev.get("agent") or "", message=notes.compaction(ev))

    def _on_injection(self, ev: dict[str, Any]) -> None:
        self._step(ev, step_name="operator", message=f"operator said: {ev.get('message') or ''}")

    def _on_signal(self, ev: dict[str, Any]) -> None:
        self._step(ev, step_name="operator", message=f"operator asked to {ev.get('kind')}")

    def _on_warning(self, ev: dict[str, Any]) -> None:
        self._step(ev, step_name="warning", status="warning", message=str(ev.get("message") or ""))

    def _on_error(self, ev: dict[str, Any]) -> None:
        self._step(ev, step_name="error", status="error", message=str(ev.get("message") or ""))
        if self.node is not None:
            self._flag(self.node.index, "error")

    def _on_interrupted(self, ev: dict[str, Any]) -> None:
        self._step(ev, step_name="interrupted", status="warning",
                   message=str(ev.get("message") or "stopped by a signal"))

    def finish(self, created_at: str | None) -> TraceDoc:
        for thread in self.threads.values():
            self.current = thread
            self._flush_failed()
        for visit, node in self.visits:
            parts = ([f"visit {visit}"] if visit > 1 else []) + node.parts
            if node.route:
                parts.append(f"→ {node.route}")
            if not node.finished:
                parts.append("did not finish")
            self.steps[node.index]["message"] = " · ".join(parts)
        created = created_at or self.first_ts
        doc: dict[str, Any] = {"task_id": self.task_id, "steps": self.steps, "sub_agent_sessions": self.sessions,
                               "actions": self.actions, "usage_by_model": self.usage}
        if created:
            doc["created_at"] = created
        return TraceDoc(doc=doc, events=self.step_events)


def _count(usage: dict[str, Any], record: dict[str, Any]) -> None:
    """Add an answered call's ``record`` to ``usage`` (a ``Usage`` as a dict, its zero parts left out)."""
    usage.update(input=usage["input"] + record["tokens_in"], output=usage["output"] + record["tokens_out"],
                 cost=round(usage["cost"] + (record["cost"] or 0.0), 10), calls=usage["calls"] + 1)
    if record["cost"] is None:
        usage["unpriced"] = usage.get("unpriced", 0) + 1
    for name in CALL_DETAILS:
        if record.get(name):
            usage[name] = usage.get(name, 0) + record[name]
    if record.get("estimated"):
        usage["estimated"] = usage.get("estimated", 0) + 1
