"""TraceLog with StepRecord, ToolCallRecord and SubAgentSessionInfo (seed 002 entity 6),
SubAgentSession (entity 7), and seed 003's action records."""

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from magent.models.base import Document, Model, UUID4Str, utc_now
from magent.models.state import Message
from magent.models.task import Usage

Outcome = Literal["SUCCESS", "FAILURE", "ERROR", "TIMEOUT"]


class ToolCallRecord(Model):
    """One tool call as the trace keeps it."""

    call_id: str | None = None
    """The id the model gave the call (links it to its ``tool_call`` and ``tool_result`` events)."""
    server: str
    """Server part of the tool's name (``kv`` in ``kv.set``); empty for an unqualified name."""
    tool: str
    """Tool part of the name (``set`` in ``kv.set``)."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Arguments as the model gave them (secrets masked)."""
    result: dict[str, Any] | None = None
    """Output, truncated; ``artifact`` names the full copy when there is one."""
    error: str | None = None
    """What went wrong when ``outcome`` is not SUCCESS."""
    outcome: Outcome = "SUCCESS"
    """Seed 003 outcome: SUCCESS, FAILURE (the tool said no), ERROR, TIMEOUT."""
    duration_ms: int = 0
    """Wall time of the call."""


class LLMCallRecord(Model):
    """One model call (seed 001 ``llm_call``)."""

    model: str
    """Model asked (the fallback, when it was used)."""
    provider: str = ""
    """Provider as litellm names it (``openai``, ``anthropic``, ``scripted``...)."""
    tokens_in: int = 0
    """Prompt tokens, all of them (cache reads and writes included)."""
    tokens_out: int = 0
    """Completion tokens (reasoning included)."""
    cache_read: int = 0
    """Of ``tokens_in``, those the provider read from its prompt cache."""
    cache_write: int = 0
    """Of ``tokens_in``, those the provider wrote to its prompt cache."""
    reasoning: int = 0
    """Of ``tokens_out``, those the model spent reasoning."""
    estimated: bool = False
    """True when the server sent no usage: ``tokens_in`` and ``tokens_out`` are magent's estimate."""
    cost: float | None = 0.0
    """Cost in USD as litellm reports it from the whole usage; None when it has no price for the model."""
    latency_ms: int = 0
    """Wall time of this attempt."""
    stop_reason: str | None = None
    """Why the model stopped (``stop``, ``tool_calls``, ``length``...)."""
    error: str | None = None
    """Set when this attempt failed (timed out, cut off, refused...): it answered nothing, and
    its tokens and cost are not counted."""
    attempt: int | None = None
    """Which attempt of ``model`` this was, when it was not the first."""
    rail: str | None = None
    """Set when a guardrail's judge made this call (the rail's name), not the step's own model."""
    route: str | None = None
    """The routing rule that chose ``model`` (``routing[1] turn tool_result``), when the agent
    routes its turns over several models (``llm_config.routing``)."""
    tools: list[str] | None = None
    """When the agent selects its tools (``tool_selection``): the tools this request carried
    (``magent trace ID --step N`` says why each)."""


class StepRecord(Model):
    """One step of the run: a node, or a model turn inside a node."""

    step_name: str
    """A node's name for a node step, ``node:iteration`` for a model turn, else the event
    (``awaiting_human``, ``human_decision``, ``resumed``, ``warning``, ``error``, ``interrupted``).
    ``magent trace ID --step N`` shows step N (counting from 1) whole."""
    message: str = ""
    """A line saying what happened (a verdict, the route taken, a person's decision...)."""
    timestamp: datetime = Field(default_factory=utc_now)
    """When the step started."""
    status: Literal["info", "warning", "error"] = "info"
    """``warning`` or ``error`` when something in the step went wrong."""
    agent: str = ""
    """Agent that ran the node or took the turn."""
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    """Tool calls made in this step, in the order the model asked for them."""
    duration_ms: int = 0
    """Wall time of the node visit or the turn (model call and its tool calls)."""
    node: str | None = None
    """Workflow node the step belongs to."""
    kind: str | None = None
    """Node kind (``agent``, ``reflection``, ``tool``, ``human``, ``condition``...) for node and
    turn steps; null for event steps."""
    iteration: int | None = None
    """ReAct turn number within the node visit (from 0); null for node and event steps."""
    llm_calls: list[LLMCallRecord] = Field(default_factory=list)
    """Model calls made in this step."""
    session: str | None = None
    """The child session this step belongs to (None: the main session)."""
    tool_calling: str | None = None
    """For an agent node with tools: ``native`` (the provider's function calling) or ``text``
    (ReAct's Thought/Action format), then why (``text: litellm does not know ...``)."""


class SubAgentSessionInfo(Model):
    """A child session of the task (seed 002), with where it came from and what it cost."""

    session_id: str
    """The session's id (its entries and events carry it as ``session``)."""
    agent: str
    """Agent that holds the conversation."""
    message_count: int = 0
    """Messages in the session's conversation."""
    status: str = "running"
    """``running``, ``completed`` or ``failed``."""
    kind: str = "agent"
    """``agent`` (sub-agent call), ``branch`` (fan-out), ``map`` (item) or ``subtask`` (plan)."""
    parent_session: str | None = None
    """The session that opened it (None: the main session)."""
    node: str | None = None
    """The workflow node that opened it."""
    key: str | None = None
    """Where in its parent it was opened (``call:ID``, ``item:N``, ``branch:NODE``, ``subtask:ID#N``)."""
    depth: int = 1
    """How deeply nested: 1 for a child of the main session."""
    task_description: str | None = None
    """Its instruction (the first message of its history), shortened."""
    opened_by_step: int | None = None
    """Index in ``steps`` of the step that opened it (the turn that called it, or the node)."""
    started_at: str | None = None
    """When it was opened (the time of its ``session_started`` event)."""
    ended_at: str | None = None
    """When it finished (null while it runs or after it was stopped by a pause)."""
    summary: str | None = None
    """Its final answer, shortened (seed 002 SubAgentSession ``summary``)."""
    error: str | None = None
    """Why it failed, when it did."""
    usage: Usage = Field(default_factory=Usage)
    """Model usage of this session alone (its own children count separately)."""


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
    timestamp: datetime = Field(default_factory=utc_now)
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
    """The task this trace belongs to."""
    steps: list[StepRecord] = Field(default_factory=list)
    """Every step of the run, in order: nodes, model turns, and events between them."""
    sub_agent_sessions: dict[str, SubAgentSessionInfo] = Field(default_factory=dict)
    """Child sessions (sub-agents, parallel branches, map items) by session id."""
    actions: list[ActionRecord] = Field(default_factory=list)
    """Seed 003 action records, one per ReAct turn of an agent node (the same turns as the
    steps with an ``iteration``)."""
    usage_by_model: dict[str, Usage] = Field(default_factory=dict)
    """Tokens, cost and calls per model (``provider/model`` keys, as checkpoints' usage)."""
    created_at: datetime = Field(default_factory=utc_now)
    """When the task was created."""
    updated_at: datetime = Field(default_factory=utc_now)
    """When the trace was last written."""


class SubAgentSession(Model):
    """An isolated sub-agent conversation."""

    session_id: UUID4Str
    parent_task_id: UUID4Str
    agent_name: str
    task_description: str
    message_history: list[Message] = Field(default_factory=list)
    summary: str | None = None
    status: Literal["running", "completed", "failed"] = "running"
    created_at: datetime = Field(default_factory=utc_now)
