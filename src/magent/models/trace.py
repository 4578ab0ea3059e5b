"""TraceLog with StepRecord, ToolCallRecord and SubAgentSessionInfo (seed 002 entity 6),
SubAgentSession (entity 7), and seed 003's action records."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from magent.models.base import Document, Model, Timestamp, UUID4Str
from magent.models.state import Message
from magent.models.task import Usage

Outcome = Literal["SUCCESS", "FAILURE", "ERROR", "TIMEOUT"]


class ToolCallRecord(Model):
    """One tool call as the trace keeps it."""

    call_id: str | None = None
    server: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: dict[str, Any] | None = None
    """Output, truncated; ``artifact`` names the full copy when there is one."""
    error: str | None = None
    outcome: Outcome = "SUCCESS"
    duration_ms: int = 0


class LLMCallRecord(Model):
    """One model call (seed 001 ``llm_call``)."""

    model: str
    provider: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    latency_ms: int = 0
    stop_reason: str | None = None
    error: str | None = None


class StepRecord(Model):
    """One step of the run: a node, or a model turn inside a node."""

    step_name: str
    message: str = ""
    timestamp: Timestamp
    status: Literal["info", "warning", "error"] = "info"
    agent: str = ""
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    duration_ms: int = 0
    node: str | None = None
    kind: str | None = None
    iteration: int | None = None
    llm_calls: list[LLMCallRecord] = Field(default_factory=list)


class SubAgentSessionInfo(Model):
    session_id: str
    agent: str
    message_count: int = 0
    status: str = "running"


class ActionToolCall(Model):
    """A tool call inside a seed 003 action record."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    result: str = ""
    """Tool result truncated to about 1,000 characters."""
    outcome: Outcome = "SUCCESS"
    insights: str = ""
    learning: str = ""
    relevance: str = ""


class ActionRecord(Model):
    """Seed 003 rich action record: one ReAct iteration."""

    iteration: int
    timestamp: Timestamp
    mode: Literal["fast", "deep"] = "fast"
    thinking: str = ""
    planning: str = ""
    reflection: str = ""
    approach: str = ""
    tool_calls: list[ActionToolCall] = Field(default_factory=list)
    synthesis: str = ""
    progress: str = ""
    hypothesis: dict[str, str] = Field(default_factory=lambda: {"belief": "", "test": ""})


class TraceLog(Document):
    """The execution history of a task, built from its events."""

    task_id: UUID4Str
    steps: list[StepRecord] = Field(default_factory=list)
    sub_agent_sessions: dict[str, SubAgentSessionInfo] = Field(default_factory=dict)
    actions: list[ActionRecord] = Field(default_factory=list)
    usage_by_model: dict[str, Usage] = Field(default_factory=dict)
    created_at: Timestamp
    updated_at: Timestamp


class SubAgentSession(Model):
    """An isolated sub-agent conversation."""

    session_id: UUID4Str
    parent_task_id: UUID4Str
    agent_name: str
    task_description: str
    message_history: list[Message] = Field(default_factory=list)
    summary: str | None = None
    status: Literal["running", "completed", "failed"] = "running"
    created_at: Timestamp
