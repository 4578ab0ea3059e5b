"""State, Message and ToolCall (seed 002 entity 3).

``messages`` is append-only: ``State.apply`` appends to it and replaces every
other field, which is the seed's reducer rule.
"""

from datetime import datetime
from typing import Any, Literal

from pydantic import Field, PrivateAttr, ValidationError

from magent.models.base import Model, utc_now


class ToolCall(Model):
    """A tool invocation requested by the assistant."""

    id: str
    """Call id: the provider's id when it gave one, else a UUID v4."""
    server: str = ""
    """The server part of the tool's ``server.tool`` name."""
    tool: str
    """The tool name without the server part."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Tool parameters as the model gave them."""
    raw_arguments: str | None = None
    """The model's argument text when it was not valid JSON (the call then fails as an observation)."""

    @property
    def full_name(self) -> str:
        return f"{self.server}.{self.tool}" if self.server else self.tool


class Compaction(Model):
    """What a compaction entry (seed 001 ``compaction``) did to an agent's view of the conversation.

    The history is never changed: the entry is appended to it, and the agent's next requests
    send the task, the summary (the entry's content, if any) and the messages from ``keep_from`` on.
    """

    agent: str
    """The agent whose context budget it serves (each agent has its own view)."""
    strategy: Literal["fifo", "summarize", "hybrid"]
    keep_from: int = Field(ge=0)
    """Index, in the session's history, of the first message still sent after the task."""
    pinned: int = Field(default=0, ge=0)
    """Messages at the start always sent (the task)."""
    dropped: int = Field(default=0, ge=0)
    """Messages this compaction took out of the view (summarized, or simply left out for fifo)."""
    through: str | None = None
    """The last entry it took out."""
    budget: int = Field(default=0, ge=0)
    tokens_before: int = Field(default=0, ge=0)
    """Tokens the request would have had without it."""
    tokens_after: int = Field(default=0, ge=0)


class Message(Model):
    """One conversation message."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Tool invocations (assistant only)."""
    tool_call_id: str | None = None
    """For ``role: tool``: the call this is the result of."""
    name: str | None = None
    """For ``role: tool``: the tool's full name. For others: the agent or person that spoke."""
    timestamp: datetime = Field(default_factory=utc_now)
    compaction: Compaction | None = None
    """Set on a compaction marker (never sent to a model as such; see ``engine.compaction``)."""
    _entry: str | None = PrivateAttr(default=None)
    """The id of this message's entry, once it has one."""


class State(Model):
    """The shared execution context of a run."""

    messages: list[Message] = Field(default_factory=list)
    """Conversation history, append-only."""
    next_action: str | None = None
    """Next planned action."""
    current_agent: str = ""
    """Agent of the node being executed."""
    routing_key: str | None = None
    """Key for conditional routing, set by reflection and condition nodes."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Additional context: ``--set k=v`` values, node outputs, human decisions."""

    def apply(self, updates: dict[str, Any]) -> "State":
        """A new State with ``updates`` applied: messages appended, other fields replaced;
        ``ValueError`` naming the field when an update does not fit the schema."""
        unknown = sorted(set(updates) - set(type(self).model_fields))
        if unknown:
            raise ValueError(f"unknown State field {unknown[0]!r} (fields: "
                             f"{', '.join(type(self).model_fields)})")
        data = self.model_dump()
        for key, value in updates.items():
            if key == "messages":
                if not isinstance(value, list):
                    raise ValueError("messages: must be a list of messages to append")
                data["messages"] = data["messages"] + list(value)
            else:
                data[key] = value
        try:
            return State.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            raise ValueError(f"{loc}: {err['msg']}") from None

