"""A task's events as OpenTelemetry spans, following the GenAI semantic conventions.

Pure data: ``SpanBuilder`` takes events one at a time and hands back each ended span. Ids are
derived from the task and the opening event, so a live export and a later ``--otlp`` land as
one trace. ``invoke_workflow`` per run, a span per node visit, ``chat`` per model call and
``execute_tool`` per tool call; a child session's ``invoke_agent`` sits under the call that
opened it. No prompt, reply, argument or result is ever put in a span."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

MAIN = ""
ERROR_OUTCOMES = ("FAILURE", "ERROR", "TIMEOUT")


@dataclass
class SpanData:
    """One span, ready to hand to an exporter."""

    span_id: int
    parent_id: int | None
    name: str
    kind: str
    """``internal`` or ``client`` (a model call goes out to a provider)."""
    start_ns: int
    end_ns: int = 0
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)
    error: str | None = None
    """Set when the span ended in error (its status description)."""


def trace_id_of(task_id: str) -> int:
    """The trace id of a task: its UUID's 128 bits."""
    return int(task_id.replace("-", ""), 16)


def _ns(ts: Any) -> int:
    try:
        return int(datetime.fromisoformat(str(ts).replace("Z", "+00:00")).timestamp() * 1_000_000) * 1000
    except ValueError:
        return 0


def _attrs(**values: Any) -> dict[str, Any]:
    """Attributes without the empty ones (OpenTelemetry drops None; we drop "" too)."""
    return {k: v for k, v in values.items() if v is not None and v != ""}


def sent_model(model: str, provider: str) -> str:
    """The model name sent to the provider: litellm's model string without its provider prefix
    (``openai/gpt-4o-mini`` → ``gpt-4o-mini``; ``openai/Qwen/Qwen2.5`` → ``Qwen/Qwen2.5``)."""
    return model[len(provider) + 1:] if provider and model.startswith(provider + "/") else model


class SpanBuilder:
    def __init__(self, task_id: str, service: str = "magent"):
        self.task_id = task_id
        self.trace_id = trace_id_of(task_id)
        self.service = service
        self.run: SpanData | None = None
        self.nodes: dict[str, SpanData] = {}          # session -> its open node span
        self.sessions: dict[str, SpanData] = {}       # child session -> its span
        self.tools: dict[tuple[str, str], SpanData] = {}  # (session, call id) -> open tool span
        self.known: dict[str, dict[str, Any]] = {}  # child session -> its session_started event
        self.last_ns = 0
        self.done: list[SpanData] = []

    def span_id(self, key: str) -> int:
        digest = hashlib.sha256(f"{self.task_id}/{key}".encode()).digest()
        return int.from_bytes(digest[:8], "big") or 1

    # what the caller uses
    def feed(self, ev: dict[str, Any]) -> list[SpanData]:
        """Take one event; returns the spans it ended (in the order they ended)."""
        at = _ns(ev.get("ts"))
        if at:
            self.last_ns = max(self.last_ns, at)
        handler = getattr(self, f"_on_{ev.get('type')}", None)
        if handler is not None and (self.run is not None or ev.get("type") == "run_started"):
            handler(ev, at or self.last_ns)
        done, self.done = self.done, []
        return done

    def remember(self, ev: dict[str, Any]) -> None:
        """Learn a child session from an earlier run's ``session_started`` (a live export of a
        resumed run reads them first), so its span hangs where it did then and has its name."""
        if ev.get("type") == "session_started" and ev.get("session"):
            self.known.setdefault(str(ev["session"]), ev)

    def close(self, reason: str = "the run stopped without finishing") -> list[SpanData]:
        """End every span still open (a crash, or events that stop early) at the last event's time."""
        if self.run is not None:
            self._end_run(self.last_ns, unfinished=reason)
        done, self.done = self.done, []
        return done

    # helpers
    def _end(self, span: SpanData, at: int, unfinished: str | None = None) -> None:
        span.end_ns = max(at, span.start_ns)
        if unfinished:
            span.attributes["magent.unfinished"] = unfinished
        self.done.append(span)

    def _end_run(self, at: int, unfinished: str | None = None) -> None:
        for key in list(self.tools):
            self._end(self.tools.pop(key), at, unfinished or "no result before the run ended")
        for session in list(self.nodes):
            self._end(self.nodes.pop(session), at, unfinished or "the run paused or ended in this node")
        for session in list(self.sessions):
            self._end(self.sessions.pop(session), at, unfinished or "the run paused or ended in this session")
        assert self.run is not None
        self._end(self.run, at, unfinished)
        self.run = None

    def _session(self, ev: dict[str, Any], at: int) -> str:
        """The event's session, opening its span if it is not open (a run resumed inside a
        sub-agent: its ``session_started`` was in an earlier run)."""
        session = str(ev.get("session") or MAIN)
        if session == MAIN:
            return session
        span = self.sessions.get(session)
        if span is None:
            assert self.run is not None
            started = self.known.get(session) or {}
            self._open_session({"agent": ev.get("agent"), **started}, session, self._caller(started), at,
                               key=f"session/{session}/{self.run.span_id}")
        elif not span.attributes.get("gen_ai.agent.name") and ev.get("agent"):  # named by a later event
            span.name = f"invoke_agent {ev['agent']}"
            span.attributes["gen_ai.agent.name"] = ev["agent"]
        return session

    def _caller(self, started: dict[str, Any]) -> SpanData:
        """Where a child session's span goes: under the open ``agents.NAME`` call that opened it
        (a resumed run makes the call again), else the span open in the session that opened it."""
        parent_session = str(started.get("parent_session") or MAIN)
        key = str(started.get("key") or "")
        caller = self.tools.get((parent_session, key[5:])) if key.startswith("call:") else None
        return caller or self._parent(parent_session)

    def _open_session(self, ev: dict[str, Any], session: str, parent: SpanData, at: int, key: str) -> None:
        agent = str(ev.get("agent") or "")
        self.sessions[session] = SpanData(
            span_id=self.span_id(key), parent_id=parent.span_id, name=f"invoke_agent {agent}".strip(),
            kind="internal", start_ns=at,
            attributes=_attrs(**{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent,
                                 "gen_ai.conversation.id": session, "magent.session.id": session,
                                 "magent.session.kind": ev.get("kind"), "magent.session.depth": ev.get("depth"),
                                 "magent.node.name": ev.get("node"),
                                 "magent.session.parent": ev.get("parent_session")}))

    def _parent(self, session: str) -> SpanData:
        span = self.nodes.get(session) or self.sessions.get(session) or self.run
        assert span is not None
        return span

    def _on_session_started(self, ev: dict[str, Any], at: int) -> None:
        session = str(ev.get("session") or "")
        if not session or session in self.sessions:
            return
        self.remember(ev)
        # A sub-agent call's session hangs under the tool call that delegated to it.
        self._open_session(ev, session, self._caller(ev), at, key=f"session/{session}")

    def _on_session_finished(self, ev: dict[str, Any], at: int) -> None:
        span = self.sessions.pop(str(ev.get("session") or ""), None)
        if span is None:
            return
        for key in [k for k in self.tools if k[0] == span.attributes.get("magent.session.id")]:
            self._end(self.tools.pop(key), at, "no result before its session ended")
        node = self.nodes.pop(str(ev.get("session")), None)
        if node is not None:
            self._end(node, at, "its session ended in this node")
        status = str(ev.get("status") or "")
        span.attributes.update(_attrs(**{"magent.session.status": status,
                                         "magent.session.messages": ev.get("message_count")}))
        if status == "failed":
            span.error = str(ev.get("error") or "failed")
            span.attributes["error.type"] = "failed"
        self._end(span, at)

    def _note(self, name: str, at: int, **values: Any) -> None:
        assert self.run is not None
        self.run.events.append((name, at, _attrs(**values)))

    # events
    def _on_run_started(self, ev: dict[str, Any], at: int) -> None:
        if self.run is not None:  # the previous run left no run_finished: it died
            self._end_run(self.last_ns, unfinished="the run stopped without finishing (killed or crashed)")
        workflow = ev.get("workflow") or ""
        self.run = SpanData(
            span_id=self.span_id(f"run/{ev.get('seq')}"), parent_id=None, name=f"invoke_workflow {workflow}".strip(),
            kind="internal", start_ns=at,
            attributes=_attrs(**{"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": workflow,
                                 "gen_ai.conversation.id": self.task_id, "magent.task.id": self.task_id,
                                 "magent.run.resumed": bool(ev.get("resumed")),
                                 "magent.run.from_checkpoint": ev.get("from_checkpoint"),
                                 "magent.run.forked_from": ev.get("forked_from")}))

    def _on_run_finished(self, ev: dict[str, Any], at: int) -> None:
        assert self.run is not None
        status = str(ev.get("status") or "")
        # The task's totals so far (all its runs): not gen_ai.usage.*, which backends add up per call.
        self.run.attributes.update(_attrs(**{
            "magent.task.status": status, "magent.task.turns": ev.get("steps"),
            "magent.task.tokens_in": ev.get("tokens_in"), "magent.task.tokens_out": ev.get("tokens_out"),
            "magent.task.cost_usd": ev.get("cost"), "magent.task.estimated_calls": ev.get("estimated")}))
        if status == "failed":
            self.run.error = str(ev.get("error") or "failed")
            self.run.attributes["error.type"] = "failed"
        self._end_run(at)

    def _on_interrupted(self, ev: dict[str, Any], at: int) -> None:
        self._note("magent.interrupted", at, message=ev.get("message"))

    def _on_node_started(self, ev: dict[str, Any], at: int) -> None:
        session = self._session(ev, at)
        if session in self.nodes:  # a node left open (resumed into, or no node_finished)
            self._end(self.nodes.pop(session), at, "a new node started before it finished")
        kind, node, agent = str(ev.get("kind") or ""), str(ev.get("node") or ""), str(ev.get("agent") or "")
        name = f"invoke_agent {agent}" if kind in ("agent", "reflection") and agent else f"{kind} {node}".strip()
        attributes = _attrs(**{"magent.node.name": node, "magent.node.kind": kind, "magent.node.visit": ev.get("visit"),
                               "magent.node.resumed": bool(ev.get("resumed")) or None,
                               "gen_ai.conversation.id": session or self.task_id})
        if kind in ("agent", "reflection") and agent:
            attributes.update({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent})
        self.nodes[session] = SpanData(span_id=self.span_id(f"node/{ev.get('seq')}"),
                                       parent_id=self._parent(session).span_id, name=name, kind="internal",
                                       start_ns=at, attributes=attributes)

    def _on_node_finished(self, ev: dict[str, Any], at: int) -> None:
        session = self._session(ev, at)
        span = self.nodes.pop(session, None)
        if span is None:
            return
        if ev.get("routing_key"):
            span.attributes["magent.routing_key"] = ev["routing_key"]
        if ev.get("status") not in (None, "ok"):
            span.error = str(ev.get("status"))
        self._end(span, at)

    def _on_llm_call(self, ev: dict[str, Any], at: int) -> None:
        session = self._session(ev, at)
        latency_ns = int(ev.get("latency_ms") or 0) * 1_000_000
        model, provider = str(ev.get("model") or ""), str(ev.get("provider") or "")
        span = SpanData(
            span_id=self.span_id(f"llm/{ev.get('seq')}"), parent_id=self._parent(session).span_id,
            name=f"chat {model}".strip(), kind="client", start_ns=max(0, at - latency_ns),
            attributes=_attrs(**{
                "gen_ai.operation.name": "chat", "gen_ai.provider.name": provider or "_OTHER",
                "gen_ai.request.model": sent_model(model, provider),
                "gen_ai.response.model": ev.get("response_model"),  # (absent: the response named none)
                "gen_ai.usage.input_tokens": int(ev.get("tokens_in") or 0),
                "gen_ai.usage.output_tokens": int(ev.get("tokens_out") or 0),
                # the parts of those counts the provider bills apart, when it reported any (0: absent)
                "gen_ai.usage.cache_read.input_tokens": ev.get("cache_read"),
                "gen_ai.usage.cache_creation.input_tokens": ev.get("cache_write"),
                "gen_ai.usage.reasoning.output_tokens": ev.get("reasoning"),
                # the conventions have no word for counts the server did not send
                "magent.usage.estimated": True if ev.get("estimated") else None,
                "gen_ai.response.finish_reasons": [str(ev["stop_reason"])] if ev.get("stop_reason") else None,
                "gen_ai.agent.name": ev.get("agent"), "gen_ai.conversation.id": session or self.task_id,
                "magent.cost_usd": None if ev.get("cost") is None else float(ev["cost"]),  # unknown: absent
                "magent.turn": ev.get("iteration"), "magent.attempt": ev.get("attempt"),
                "magent.rail": ev.get("rail"), "magent.route": ev.get("route")}))
        if ev.get("error"):
            span.error = str(ev["error"])
            span.attributes["error.type"] = "_OTHER"
        self._end(span, at)

    def _tool_span(self, ev: dict[str, Any], session: str, start: int) -> SpanData:
        name = str(ev.get("requested_tool") or ev.get("tool") or "")
        return SpanData(
            span_id=self.span_id(f"tool/{ev.get('seq')}"), parent_id=self._parent(session).span_id,
            name=f"execute_tool {name}".strip(), kind="internal", start_ns=start,
            attributes=_attrs(**{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                 "gen_ai.tool.call.id": ev.get("call_id"), "gen_ai.tool.type": "function",
                                 "gen_ai.conversation.id": session or self.task_id}))

    def _on_tool_call(self, ev: dict[str, Any], at: int) -> None:
        session = self._session(ev, at)
        self.tools[(session, str(ev.get("call_id")))] = self._tool_span(ev, session, at)

    def _on_tool_result(self, ev: dict[str, Any], at: int) -> None:
        session = self._session(ev, at)
        span = self.tools.pop((session, str(ev.get("call_id"))), None)
        if span is None:  # no intent event (recovered, or refused before running)
            span = self._tool_span(ev, session, max(0, at - int(ev.get("duration_ms") or 0) * 1_000_000))
        outcome = str(ev.get("outcome") or "SUCCESS")
        span.attributes["magent.tool.outcome"] = outcome
        if ev.get("tool") and ev.get("requested_tool") and ev["tool"] != ev["requested_tool"]:
            span.attributes["magent.tool.fallback"] = ev["tool"]
        if outcome in ERROR_OUTCOMES:
            span.error = str(ev.get("error") or outcome)
            span.attributes["error.type"] = outcome
        self._end(span, at)

    def _on_reflection(self, ev: dict[str, Any], at: int) -> None:
        span = self.nodes.get(self._session(ev, at))
        if span is not None:
            span.attributes.update(_attrs(**{"magent.reflection.verdict": ev.get("verdict"),
                                             "magent.reflection.round": ev.get("round")}))

    def _on_route(self, ev: dict[str, Any], at: int) -> None:
        self._note("magent.route", at, **{"magent.node.name": ev.get("node"), "magent.route.to": ev.get("to")})

    def _on_awaiting_human(self, ev: dict[str, Any], at: int) -> None:
        self._note("magent.awaiting_human", at, **{"magent.node.name": ev.get("node"), "magent.pause.kind": ev.get("kind")})

    def _on_human_decision(self, ev: dict[str, Any], at: int) -> None:
        self._note("magent.human_decision", at, **{"magent.node.name": ev.get("node"),
                                                   "magent.decision.action": ev.get("action")})

    def _on_warning(self, ev: dict[str, Any], at: int) -> None:
        self._note("magent.warning", at, **{"magent.message": ev.get("message")})

    def _on_error(self, ev: dict[str, Any], at: int) -> None:
        session = self._session(ev, at)
        span = self.nodes.get(session)
        message = str(ev.get("message") or "error")
        self._note("exception", at, **{"exception.message": message})
        if span is not None:
            span.error = message
            span.attributes["error.type"] = "_OTHER"
