"""Conversation entries (seed 001 AgentEntry) and events (the run's JSON Lines stream)."""

from datetime import datetime
from typing import Any, Literal

from pydantic import ConfigDict, Field

from magent.models.base import Model, UUID4Str, utc_now
from magent.models.state import Compaction, ToolCall


class Entry(Model):
    """One node of the conversation tree in ``entries.jsonl``."""

    id: UUID4Str
    parent_id: UUID4Str | None = None
    """The entry before this one; ``None`` for the root."""
    entry_type: Literal["message", "compaction", "injection"] = "message"
    """``compaction``: an agent's context budget left older messages out of its view from here
    on (see ``compaction``; the content is the summary, if the strategy makes one).
    ``injection``: a message an operator sent the running task (``magent chat ID`` while it
    runs, seed 001); the model sees it as a user message."""
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    turn_id: str | None = None
    """Groups an assistant message with its tool results."""
    node: str | None = None
    """Workflow node that wrote it."""
    session: UUID4Str | None = None
    """The child session it belongs to; absent for the main session."""
    created_at: datetime = Field(default_factory=utc_now)
    compaction: Compaction | None = None
    """For a ``compaction`` entry: what it left out of which agent's view."""
    signal: int | None = None
    """For an ``injection`` entry: the number of the control signal it came from."""


class Event(Model):
    """One line of ``events.jsonl``: ``seq``, ``ts``, ``type`` and type-specific fields."""

    model_config = ConfigDict(extra="allow")

    seq: int
    ts: str
    type: str
    node: str | None = None

    def field(self, name: str, default: Any = None) -> Any:
        return (self.model_extra or {}).get(name, default)
