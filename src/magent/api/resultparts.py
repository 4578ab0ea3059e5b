"""The detail of an ``AgentResult`` (seed 004's recommended fields), from the task's files."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from magent.models import Model
from magent.models.trace import LLMCallRecord, ToolCallRecord

if TYPE_CHECKING:
    from magent.models import Event
    from magent.store.tasks import TaskDir


class Where(Model):
    """Where in the run a call was made."""

    step: int
    """Its step in ``magent trace`` (``--step N`` shows it whole, ``--request`` the prompt sent)."""
    node: str | None = None
    """The workflow node."""
    agent: str = ""
    """The agent that made it."""
    session: str | None = None
    """The child session it ran in (None: the task's own conversation)."""


class ActionResult(ToolCallRecord, Where):
    """One tool call (seed 004 ``actions``): its name, input, output and outcome."""


class ModelCall(LLMCallRecord, Where):
    """One model call or failed attempt (seed 004 ``modelCalls``): provider, model, tokens, cost."""


class MemoryChange(Model):
    """One change the run made to long-term memory or to the task's key-value store."""

    store: Literal["memory", "kv"]
    """``memory`` (long-term, shared between tasks) or ``kv`` (the task's ``kv`` tool)."""
    op: str
    """``store`` or ``forget`` for memory; ``set`` or ``delete`` for the key-value store."""
    key: str | None = None
    """The memory's id, or the key-value store's key."""
    scope: str | None = None
    """For memory: the scope written to (``agent:NAME``, ``global``...)."""
    value: Any = None
    """What was written: a memory's text (shortened), a key's value; None for a removal."""


class Diagnostics(Model):
    """What the run went on despite, and where its full record is."""

    warnings: list[str] = Field(default_factory=list)
    """Warnings of the run, in order (a tool server that did not start, an answer that did not
    fit its schema, a usage limit reached...)."""
    traces: list[str] = Field(default_factory=list)
    """The files that hold the run's full record: ``trace.json`` and ``events.jsonl``."""


class RetryInfo(Model):
    """Attempts that failed and were tried again (or given up), model and tool calls together."""

    attempts: int = 0
    """How many attempts failed: model calls (rate limits, timeouts, server errors) and tool
    calls a retry policy tried again."""
    last_error: str | None = None
    """The last of those failures, as recorded."""


class Metrics(Model):
    """Timings."""

    duration_ms: int | None = None
    """From the run's start to its end (or to its last event, when it has not ended)."""
    tool_latency_ms: dict[str, int] = Field(default_factory=dict)
    """Per tool (``server.tool``): the wall time of all its calls together."""
    tool_calls: dict[str, int] = Field(default_factory=dict)
    """Per tool: how many calls were made."""


def calls_of(steps: list[dict[str, Any]]) -> tuple[list[ActionResult], list[ModelCall]]:
    """Every tool call and every model call of the trace's ``steps``, in order."""
    actions: list[ActionResult] = []
    models: list[ModelCall] = []
    for n, step in enumerate(steps, 1):
        where = {"step": n, "node": step.get("node"), "agent": step.get("agent") or "",
                 "session": step.get("session")}
        models += [ModelCall.model_validate({**call, **where}) for call in step.get("llm_calls") or []]
        actions += [ActionResult.model_validate({**call, **where}) for call in step.get("tool_calls") or []]
    return actions, models


def memory_deltas(events: list["Event"], task_dir: "TaskDir") -> list[MemoryChange]:
    """Long-term memory writes (from the events), then the key-value store's changes (its journal)."""
    out: list[MemoryChange] = []
    for event in events:
        if event.type == "memory_stored" and not event.field("again"):
            out.append(MemoryChange(store="memory", op="store", key=event.field("id"), scope=event.field("scope"),
                                    value=event.field("content")))
        elif event.type == "memory_forgotten":
            out.append(MemoryChange(store="memory", op="forget", key=event.field("id"), scope=event.field("scope")))
    from magent.store.journal import Journal

    journal = Journal(task_dir.path / "kv.jsonl")
    if journal.exists():
        for change in journal.changes([]):
            out.append(MemoryChange(store="kv", op=str(change.get("op")), key=change.get("key"),
                                    value=change.get("value")))
    return out


def diagnostics(events: list["Event"], task_dir: "TaskDir") -> Diagnostics:
    from magent.engine.budget import describe

    warnings: list[str] = []
    for event in events:
        if event.type == "warning":
            warnings.append(str(event.field("message") or ""))
        elif event.type == "output_invalid":
            warnings.append(f"answer did not fit output_schema: {event.field('problem')}")
        elif event.type == "budget_reached":
            warnings.append(describe(str(event.field("limit")), float(event.field("value") or 0),
                                     float(event.field("used") or 0), str(event.field("scope") or "task"),
                                     event.node))
    traces = [str(p) for p in (task_dir.path / "trace.json", task_dir.path / "events.jsonl") if p.exists()]
    return Diagnostics(warnings=warnings, traces=traces)


def retry_info(events: list["Event"]) -> RetryInfo:
    info = RetryInfo()
    for event in events:
        if event.type == "llm_call" and event.field("error"):
            info.attempts += 1
            info.last_error = str(event.field("error"))
        elif event.type == "tool_result":
            for attempt in (event.field("attempts") or [])[:-1]:  # (the last is the result itself)
                info.attempts += 1
                info.last_error = str(attempt.get("error") or attempt.get("outcome"))
    return info


def metrics(events: list["Event"], actions: list[ActionResult], started: datetime | None,
            finished: datetime | None) -> Metrics:
    out = Metrics()
    for action in actions:
        name = f"{action.server}.{action.tool}" if action.server else action.tool
        out.tool_latency_ms[name] = out.tool_latency_ms.get(name, 0) + action.duration_ms
        out.tool_calls[name] = out.tool_calls.get(name, 0) + 1
    end = finished
    if end is None and events:
        try:
            end = datetime.fromisoformat(events[-1].ts.replace("Z", "+00:00"))
        except ValueError:
            end = None
    if started is not None and end is not None:
        if (started.tzinfo is None) != (end.tzinfo is None):
            end = end.replace(tzinfo=started.tzinfo)
        out.duration_ms = max(0, int((end - started).total_seconds() * 1000))
    return out


def deterministic(models: list[ModelCall]) -> bool:
    """Every model call was answered by the scripted model (or none was made): the run replays exactly."""
    return all(call.provider == "scripted" for call in models if not call.error)
