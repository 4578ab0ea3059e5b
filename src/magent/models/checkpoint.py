"""Checkpoint and Human Feedback (seed 002 entity 9, seed 001 leaf pointer and usage)."""

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from magent.models.base import Document, Model, UUID4Str, utc_now
from magent.models.budget import Spent
from magent.models.progress import AnyProgress, HumanAction, blank
from magent.models.session import SessionPosition
from magent.models.state import State
from magent.models.task import Usage


class HumanRequest(Model):
    """What a paused run asks of a person."""

    kind: Literal["human_node", "approval", "tool_approval", "tool_recovery", "tool_changed", "plan_failed",
                  "guardrail", "budget", "refusal", "operator", "auth"]
    """Why the run paused."""
    node: str
    """The node that paused."""
    session: str | None = None
    """The child session that paused (None: the main session)."""
    question: str
    """What the person is asked."""
    output: str | None = None
    """The output to judge, when there is one."""
    allowed_actions: list[str] = Field(default_factory=lambda: ["approve", "reject", "modify"])
    details: dict[str, Any] = Field(default_factory=dict)
    """Kind-specific context (the tool call to approve, the changed definition...)."""


class HumanFeedback(Model):
    """A person's answer to a pause."""

    action: HumanAction
    message: str | None = None
    """Free-text feedback the next nodes see."""
    state_updates: dict[str, Any] = Field(default_factory=dict)
    """Manual State modifications (messages appended, other fields replaced)."""
    decided_at: datetime = Field(default_factory=utc_now)


class Checkpoint(Document):
    """A saved, immutable execution position. The conversation itself is in ``entries.jsonl``."""

    checkpoint_id: UUID4Str
    task_id: UUID4Str
    sequence: int = Field(ge=0)
    """Checkpoint number; strictly increasing per task and the ``NNN`` of its file name."""
    parent_id: UUID4Str | None = None
    """The previous checkpoint of this task (recovery falls back to it)."""
    position: str
    """Current node in the workflow (``END`` once finished)."""
    created_at: datetime = Field(default_factory=utc_now)
    awaiting_human: bool = False
    """The run is paused waiting for a person."""
    human_request: HumanRequest | None = None
    human_feedback: HumanFeedback | None = None
    """The answer that was applied when this checkpoint was written."""
    reason: str = "node_end"
    """Why it was written: run_start, llm_turn, node_end, pause, resume, interrupt, finish."""
    state: State = Field(default_factory=State)
    """Execution state; ``messages`` is stored empty and rebuilt from entries by walking from the leaf."""
    leaf_entry_id: UUID4Str | None = None
    """Position in the conversation tree: the last entry of this checkpoint's history."""
    entry_count: int = 0
    """Number of entries on the path from the root to the leaf."""
    node_done: bool = False
    """``position`` has finished; the run continues by routing from it."""
    node_progress: AnyProgress = Field(default_factory=blank)
    """How far the main session has got at ``position`` (its ReAct loop's turn, a map's finished
    items, a fan-out's branches...), as the model its ``kind`` names (``models/progress.py``)."""
    visits: dict[str, int] = Field(default_factory=dict)
    """Node executions so far, per node (bounds loops with ``max_iterations``)."""
    turn_index: int = 0
    """Model turns taken so far in the whole task."""
    usage_by_model: dict[str, Usage] = Field(default_factory=dict)
    """Per-model usage keyed ``provider/model``."""
    cursors: dict[str, int] = Field(default_factory=dict)
    """Responses consumed so far from each scripted model, by agent (so a resumed run continues its script)."""
    events_seq: int = 0
    """Sequence number of the last event written before this checkpoint."""
    sessions: list[SessionPosition] = Field(default_factory=list)
    """The child sessions open at this checkpoint, with their positions (the main session's
    position is the fields above)."""
    spent: dict[str, Spent] = Field(default_factory=dict)
    """What budgets count, so far: ``task`` for the whole task, ``agent:NAME`` per agent."""
    signals_applied: int = 0
    """Number of the last control signal (``signals/NNNNNN.json``) the run applied: a steering
    message, a pause or a cancel sent while it ran. Those numbered above it are still to apply."""
    journals: dict[str, int] | None = None
    """Length in bytes of each journal beside the checkpoints (``kv.jsonl``, ``tool_pins.jsonl``)
    when this checkpoint was written: the task's tool state at this point is those prefixes (a
    journal not named was empty). None: written by a magent older than journals."""
    sha256: str | None = None
    """Hash of the document without this field; a mismatch means the file is corrupt."""

    @property
    def total_usage(self) -> Usage:
        """All models together (derived from ``usage_by_model``, so it is not stored)."""
        total = Usage()
        for usage in self.usage_by_model.values():
            total = total.add(usage)
        return total


class CheckpointSummary(Model):
    """One line of ``magent checkpoints list``."""

    sequence: int
    checkpoint_id: str
    created_at: datetime
    position: str
    reason: str
    awaiting_human: bool
    entry_count: int
    corrupt: bool = False
