"""Task (seed 002 entity 1), with the CLI runner's extra bookkeeping."""

from datetime import datetime
from enum import Enum
from typing import Any

from pydantic import Field, field_validator

from magent.models.base import Document, Model, UUID4Str, utc_now


class TaskStatus(str, Enum):
    """Lifecycle of a task: the seed's four plus ``awaiting_human``, ``interrupted`` and ``cancelled``.

    ``pending`` (created, not started) and ``running`` hold while a process runs the task;
    a task stopped by a signal is written ``interrupted``, and one whose process died
    without a word (``kill -9``, a reboot) is *shown* as ``interrupted`` wherever a status
    is shown (``store.listing.shown_status``). Both continue with ``magent resume``.
    """

    pending = "pending"
    running = "running"
    awaiting_human = "awaiting_human"
    interrupted = "interrupted"
    completed = "completed"
    failed = "failed"
    cancelled = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (TaskStatus.completed, TaskStatus.failed, TaskStatus.cancelled)


def _zero(value: int) -> bool:
    return value == 0


class Usage(Model):
    """Token and cost totals, per model or overall (seed 001 ``usageByModel``)."""

    input: int = 0
    """Prompt tokens, all of them (cache reads and writes included)."""
    output: int = 0
    """Completion tokens (reasoning included)."""
    cost: float = 0.0
    """Cost in USD as litellm reports it, of the calls it could price."""
    calls: int = 0
    """Number of model calls."""
    unpriced: int = 0
    """Calls litellm had no price for (a local server, a model missing from its price map):
    their cost is unknown, so ``cost`` is a lower bound when this is not 0."""
    # The parts below are written only when not 0, so a file without them reads the same.
    cache_read: int = Field(default=0, exclude_if=_zero)
    """Of ``input``, prompt tokens the provider read from its cache (billed at its cache rate)."""
    cache_write: int = Field(default=0, exclude_if=_zero)
    """Of ``input``, prompt tokens the provider wrote to its cache (billed at its write rate)."""
    reasoning: int = Field(default=0, exclude_if=_zero)
    """Of ``output``, tokens the model spent reasoning before its reply."""
    estimated: int = Field(default=0, exclude_if=_zero)
    """Of ``calls``, those whose tokens magent estimated because the server sent no usage (an
    Ollama ``/v1`` or local server's stream): ``input`` and ``output`` hold estimates when this is not 0."""

    def add(self, other: "Usage") -> "Usage":
        return Usage(**{name: getattr(self, name) + getattr(other, name) for name in _COUNTS},
                     cost=round(self.cost + other.cost, 10))

    @classmethod
    def of_call(cls, call: dict[str, Any]) -> "Usage":
        """One answered call, from the fields of its ``llm_call`` event (a missing ``cost``: the
        model had no price; ``estimated`` true: its tokens are magent's estimate)."""
        cost = call.get("cost")
        return cls(input=int(call.get("tokens_in") or 0), output=int(call.get("tokens_out") or 0),
                   cost=float(cost or 0.0), calls=1, unpriced=int(cost is None),
                   estimated=int(bool(call.get("estimated"))),
                   **{name: int(call.get(name) or 0) for name in CALL_DETAILS})


CALL_DETAILS = ("cache_read", "cache_write", "reasoning")
"""The parts of a call's tokens counted apart, by the same name in ``llm_call`` events and ``Usage``."""
_COUNTS = ("input", "output", "calls", "unpriced", *CALL_DETAILS, "estimated")


def usage_key(model: str, provider: str | None) -> str:
    """The one key a model's usage is counted under (checkpoints, trace.json, recovery): the
    model string when it already names a provider (``openai/gpt-4o-mini``) or is its own
    provider (``scripted``), else ``provider/model``."""
    if provider and provider != model and "/" not in model:
        return f"{provider}/{model}"
    return model or "unknown"


class ForkRef(Model):
    """A task started from one of this task's checkpoints (time travel)."""

    task_id: UUID4Str
    checkpoint: int


class Task(Document):
    """A unit of work: one run of a workflow (or single agent) with its own directory."""

    id: UUID4Str
    """Unique identifier (UUID v4); also the directory name under ``tasks/``."""
    description: str = Field(min_length=1)
    """Human-readable task description: the text given with ``-t``."""
    status: TaskStatus = TaskStatus.pending
    """Current execution status."""
    assigned_agent: str
    """Name of the agent of the entry node (or the single agent run)."""
    result: str | None = None
    """Output result (the final answer)."""
    result_value: Any = None
    """The final answer parsed, when the agent that gave it declares an ``output_schema``."""
    error: str | None = None
    """Error message if failed, cancelled or interrupted."""
    created_at: datetime = Field(default_factory=utc_now)
    started_at: datetime | None = None
    completed_at: datetime | None = None
    updated_at: datetime = Field(default_factory=utc_now)
    """Last time task.json was written."""
    retention_days: int | None = Field(default=None, ge=0)
    """Days to keep this task after it finishes; None means the retention policy decides."""
    parent_task_id: UUID4Str | None = None
    """The task this one was forked from (``resume --from-checkpoint``)."""
    parent_checkpoint: int | None = None
    """Sequence number of the parent's checkpoint this task started from."""
    forks: list[ForkRef] = Field(default_factory=list)
    """Tasks started from this task's checkpoints; retention keeps those checkpoints."""
    workflow: str
    """Name of the workflow that was run."""
    target: str | None = None
    """The path or installed name given to ``magent run``."""
    tags: list[str] = Field(default_factory=list)
    """Free-form labels; the retention policy's ``by_task`` keys match them."""
    config_snapshot: dict[str, Any] = Field(default_factory=dict)
    """Frozen copy of the workflow, agents and options as written (``${VAR}`` left unresolved)."""
    usage: Usage = Field(default_factory=Usage)
    """Token and cost totals of the whole task; ``usage.calls`` counts its model calls."""

    @field_validator("tags")
    @classmethod
    def _unique_tags(cls, tags: list[str]) -> list[str]:
        seen: list[str] = []
        for tag in tags:
            if tag not in seen:
                seen.append(tag)
        return seen
