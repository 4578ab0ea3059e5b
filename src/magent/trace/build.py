"""Building seed 002's TraceLog (with seed 003 action records) from ``events.jsonl``."""

from __future__ import annotations

from datetime import datetime

from magent.models import (
    ActionRecord, ActionToolCall, Event, LLMCallRecord, StepRecord, ToolCallRecord, TraceLog, Usage,
)
from magent.store import TaskDir


def build_trace(task_id: str, events: list[Event], created_at: datetime | None = None) -> TraceLog:
    steps: list[StepRecord] = []
    actions: list[ActionRecord] = []
    usage: dict[str, Usage] = {}
    current: StepRecord | None = None
    calls: dict[str, ToolCallRecord] = {}
    action_by_entry: dict[str, ActionRecord] = {}
    for ev in events:
        ts = datetime.fromisoformat(ev.ts)
        if ev.type == "node_started":
            current = StepRecord(step_name=ev.node or "", node=ev.node, kind=ev.field("kind"),
                                 agent=ev.field("agent") or "", timestamp=ts,
                                 message=f"{ev.field('kind')} node '{ev.node}' (visit {ev.field('visit')})")
            steps.append(current)
        elif ev.type == "node_finished" and current is not None:
            current.duration_ms = ev.field("duration_ms", 0)
            if ev.field("output"):
                current.message += f": {ev.field('output')[:200]}"
        elif ev.type == "llm_call":
            rec = LLMCallRecord(model=ev.field("model", ""), provider=ev.field("provider") or "",
                                tokens_in=ev.field("tokens_in", 0), tokens_out=ev.field("tokens_out", 0),
                                cost=ev.field("cost", 0.0), latency_ms=ev.field("latency_ms", 0),
                                stop_reason=ev.field("stop_reason"))
            if current is not None:
                current.llm_calls.append(rec)
            key = rec.model if not rec.provider or "/" in rec.model else f"{rec.provider}/{rec.model}"
            usage[key] = usage.get(key, Usage()).add(Usage(input=rec.tokens_in, output=rec.tokens_out,
                                                           cost=rec.cost, calls=1))
            response = ev.field("response") or {}
            if current is not None and current.kind == "agent":
                action = ActionRecord(iteration=ev.field("iteration", 0), timestamp=ts,
                                      thinking=response.get("content") or "")
                actions.append(action)
                if ev.field("entry_id"):
                    action_by_entry[ev.field("entry_id")] = action
                for call in response.get("tool_calls") or []:
                    action.tool_calls.append(ActionToolCall(name=call.get("name", ""),
                                                            args=call.get("arguments") or {}))
        elif ev.type == "tool_call":
            server, _, tool = (ev.field("tool") or "").partition(".")
            rec = ToolCallRecord(call_id=ev.field("call_id"), server=server, tool=tool,
                                 arguments=ev.field("arguments") or {})
            calls[rec.call_id or ""] = rec
            if current is not None:
                current.tool_calls.append(rec)
        elif ev.type == "tool_result":
            rec = calls.get(ev.field("call_id") or "")
            if rec is None:
                server, _, tool = (ev.field("requested_tool") or ev.field("tool") or "").partition(".")
                rec = ToolCallRecord(call_id=ev.field("call_id"), server=server, tool=tool)
                if current is not None:
                    current.tool_calls.append(rec)
            rec.outcome = ev.field("outcome", "SUCCESS")
            rec.error = ev.field("error")
            rec.duration_ms = ev.field("duration_ms", 0)
            rec.result = {"text": ev.field("result", "")}
            if ev.field("artifact"):
                rec.result["artifact"] = ev.field("artifact")
            if rec.outcome != "SUCCESS" and current is not None:
                current.status = "warning" if current.status == "info" else current.status
            for action in reversed(actions):
                for tc in action.tool_calls:
                    if tc.name == (ev.field("requested_tool") or ev.field("tool")) and not tc.result:
                        tc.result, tc.outcome = ev.field("result", ""), rec.outcome
                        break
                else:
                    continue
                break
        elif ev.type == "error":
            steps.append(StepRecord(step_name="error", node=ev.node, status="error", timestamp=ts,
                                    message=ev.field("message", "")))
            if current is not None:
                current.status = "error"
        elif ev.type in ("awaiting_human", "human_decision"):
            text = (f"waiting for a person: {ev.field('question')}" if ev.type == "awaiting_human"
                    else f"a person chose {ev.field('action')}" + (f": {ev.field('message')}" if ev.field("message") else ""))
            steps.append(StepRecord(step_name=ev.type, node=ev.node, status="warning" if ev.type == "awaiting_human" else "info",
                                    timestamp=ts, message=text))
        elif ev.type == "reflection" and current is not None:
            current.message += f" — verdict {ev.field('verdict')}: {str(ev.field('feedback') or '')[:200]}"
    created = created_at or (datetime.fromisoformat(events[0].ts) if events else None)
    trace = TraceLog(task_id=task_id, steps=steps, actions=actions, usage_by_model=usage)
    if created is not None:
        trace.created_at = created
    return trace


def write_trace(td: TaskDir) -> TraceLog:
    task = td.load_task()
    trace = build_trace(td.id, td.read_events(), task.created_at)
    td.write_trace(trace)
    return trace
