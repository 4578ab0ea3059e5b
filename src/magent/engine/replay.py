"""Deterministic replay (seed 004): run a finished task again with the model responses its
history recorded, and report whether it did the same thing or where it first diverged.

The replay is a real new task (tagged ``replay``, its parent the original), so its own trace can be
inspected. Tools run for real; only the model is replaced. People's decisions at pauses are replayed
from the record too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from magent.engine.context import RunOptions
from magent.engine.graph import from_snapshot
from magent.engine.session import Decision, resume_run, start_run
from magent.errors import TaskStateError
from magent.llm.base import LLMRequest, LLMResponse, LLMToolCall
from magent.models import Event, TaskStatus
from magent.store.tasks import Store
from magent.store.events import read_events

# What must match, per event type (volatile fields such as ids, times and latency are left out).
COMPARED = {
    "node_started": ("kind", "agent"),
    "llm_call": ("agent", "response"),
    "tool_call": ("tool", "arguments"),
    "tool_result": ("tool", "outcome", "result"),
    "reflection": ("verdict", "routing_key"),
    "human_decision": ("action", "message"),
    "awaiting_human": ("kind", "question"),
    "run_finished": ("status", "result", "error"),
}


WHAT = {"node_started": "a node's start", "llm_call": "a model call", "tool_call": "a tool call",
        "tool_result": "a tool result", "reflection": "a verdict", "human_decision": "a decision",
        "awaiting_human": "a pause", "run_finished": "the end of the run"}
"""What each compared event is, in the words of ``magent.vocabulary``."""


@dataclass
class ReplayReport:
    original: str
    replay: str
    matched: bool
    model_calls: int
    """Model calls of the original that the replay made the same way (all of them on a match)."""
    tool_calls: int
    """Likewise for tool calls."""
    step: int | None = None
    """The step of the original's trace (``magent trace ID --step N``) where the replay diverged."""
    divergence: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


class RecordedModel:
    """Answers each model call with the next response recorded for that agent."""

    def __init__(self, calls: list[Event]):
        self.by_agent: dict[str, list[Event]] = {}
        for ev in calls:
            self.by_agent.setdefault(ev.field("agent") or "", []).append(ev)

    def supports_tools(self, model: str) -> bool:
        return True

    async def complete(self, request: LLMRequest, on_token=None, *, on_attempt=None) -> LLMResponse:
        queue = self.by_agent.get(request.agent) or []
        if not queue:
            from magent.errors import LLMError

            raise LLMError(f"replay: the record has no more model responses for agent '{request.agent}'")
        ev = queue.pop(0)
        response = ev.field("response") or {}
        calls = [LLMToolCall(id=c.get("id") or "", name=c.get("name", ""), arguments=c.get("arguments"),
                             raw_arguments=c.get("raw_arguments") or "")
                 for c in response.get("tool_calls") or []]
        if on_token and response.get("content"):
            on_token(response["content"])
        return LLMResponse(content=response.get("content") or "", tool_calls=calls, model=ev.field("model", ""),
                           provider=ev.field("provider") or "", tokens_in=ev.field("tokens_in", 0),
                           tokens_out=ev.field("tokens_out", 0), cost=0.0,
                           stop_reason=ev.field("stop_reason"))


async def replay_task(task_ref: str, *, sinks=()) -> ReplayReport:
    store = Store()
    src = store.task(task_ref)
    original = src.load_task()
    if not original.status.finished or original.status == TaskStatus.cancelled:
        raise TaskStateError(f"task {original.id[:8]} is {original.status.value}; only completed or failed "
                             "tasks can be replayed")
    events = [Event.model_validate(e) for e in read_events(src)]
    model = RecordedModel([e for e in events if e.type == "llm_call" and not e.field("error")])
    decisions = [e for e in events if e.type == "human_decision"]
    graph = from_snapshot(original.config_snapshot)
    initial = original.config_snapshot.get("options", {}).get("initial") or {}
    options = RunOptions(llm_factory=lambda *a, **k: model, no_input=True)
    outcome = await start_run(graph, original.description, target=original.target,
                              tags=[*original.tags, "replay"], retention_days=original.retention_days,
                              initial=initial, options=options, sinks=list(sinks))
    replay_id = outcome.task_id
    task_dir = store.task(replay_id)
    task = task_dir.load_task()
    task = task_dir.save_task(task.model_copy(update={"parent_task_id": original.id}))
    while outcome.status == TaskStatus.awaiting_human and decisions:
        ev = decisions.pop(0)
        decision = Decision(action=ev.field("action"), message=ev.field("message"),
                            state_updates=ev.field("state_updates") or {})
        outcome = await resume_run(replay_id, decision=decision, options=RunOptions(
            llm_factory=lambda *a, **k: model, no_input=True), sinks=list(sinks))
    return compare(original.id, replay_id, events, [Event.model_validate(e) for e in read_events(task_dir)])


def _signature(events: list[Event]) -> list[tuple[str, str | None, dict[str, Any], int]]:
    out = []
    for ev in _replayable(events):
        keys = COMPARED.get(ev.type)
        if keys is None or (ev.type == "llm_call" and ev.field("error")):
            continue  # (failed attempts of the original are not replayed: only answers are)
        fields = {k: ev.field(k) for k in keys}
        if ev.type == "llm_call":
            response = dict(fields["response"] or {})
            response["tool_calls"] = [{k: v for k, v in c.items() if k != "id"}
                                      for c in response.get("tool_calls") or []]
            fields["response"] = response
        out.append((ev.type, ev.node, fields, ev.seq))
    return out


def _replayable(events: list[Event]) -> list[Event]:
    """The events a replay can reproduce. A run that failed or was killed and then resumed ended
    because of its model or its process, which a replay does not play again (it plays answers
    only): that end, and the node the resume entered again, are left out. A pause is kept: the
    replay pauses there too, and gives the recorded decision."""
    out: list[Event] = []
    open_nodes: list[str] = []  # nodes started and not finished, as of the last run's end
    reentered: set[str] = set()
    for i, ev in enumerate(events):
        if ev.type == "run_started":
            resumed_after_end = bool(out) and not (out[-1].type == "run_finished"
                                                   and out[-1].field("status") == "awaiting_human")
            reentered = set(open_nodes) if resumed_after_end else set()
            if resumed_after_end and out[-1].type == "run_finished":
                out.pop()  # (its failure or interruption is the model's or the process's)
        elif ev.type == "node_started":
            if ev.node in reentered:
                reentered.discard(ev.node)
                continue
            open_nodes.append(ev.node or "")
        elif ev.type == "node_finished" and ev.node in open_nodes:
            open_nodes.remove(ev.node or "")
        out.append(ev)
    return out


def compare(original_id: str, replay_id: str, before: list[Event], after: list[Event]) -> ReplayReport:
    """Match the two runs event by event; a divergence is placed at a step of the original's
    trace (or of the replay's, when only the replay went on), the steps ``magent trace`` numbers."""
    a, b = _signature(before), _signature(after)
    same = 0
    for x, y in zip(a, b):
        if x[:3] != y[:3]:
            break
        same += 1
    done = a[:same]
    counts = (sum(1 for s in done if s[0] == "llm_call"), sum(1 for s in done if s[0] == "tool_call"))
    if same == len(a) == len(b):
        return ReplayReport(original_id, replay_id, True, *counts)
    if same < len(a):
        x = a[same]
        step = _trace_step(original_id, before, x[3])
        where = f"{_at(step)} of the original's trace ({_what(x)})"
        if same < len(b):
            y = b[same]
            return ReplayReport(original_id, replay_id, False, *counts, step=step,
                                divergence=f"{where}: {_describe(x, y)}",
                                details={"recorded": x[2], "replayed": y[2]})
        return ReplayReport(original_id, replay_id, False, *counts, step=step,
                            divergence=f"{where}: the replay stopped before it")
    y = b[same]
    step = _trace_step(replay_id, after, y[3])
    return ReplayReport(original_id, replay_id, False, *counts,
                        divergence=f"after the original ended, the replay went on with {_what(y)} "
                                   f"({_at(step)} of the replay's trace)")


def _trace_step(task_id: str, events: list[Event], seq: int) -> int | None:
    """The number ``magent trace`` gives the step that event ``seq`` belongs to."""
    from magent.trace.build import build_trace_doc

    built = build_trace_doc(task_id, events)
    for number, step_events in enumerate(built.events, start=1):
        if any(ev.get("seq") == seq for ev in step_events):
            return number
    return None


def _at(step: int | None) -> str:
    return f"step {step}" if step is not None else "the end"


def _what(x: tuple) -> str:
    """``a tool call at node 'n'``; ``the end of the run`` (it has no node)."""
    return WHAT.get(x[0], x[0]) + (f" at node '{x[1]}'" if x[1] is not None else "")


def _describe(x: tuple, y: tuple) -> str:
    if x[0] != y[0] or x[1] != y[1]:
        return f"recorded {_what(x)}, replay did {_what(y)}"
    diffs = [k for k in x[2] if x[2][k] != y[2].get(k)]
    k = diffs[0]
    show = lambda v: json.dumps(v, ensure_ascii=False, default=str)[:200]  # noqa: E731
    return f"{k}: recorded {show(x[2][k])}, replay {show(y[2][k])}"
