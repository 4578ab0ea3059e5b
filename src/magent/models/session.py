"""Sessions: conversation threads of one task (seed 002 SubAgentSession, as positions).

The task's own conversation is the main session. A sub-agent call, a parallel
branch, a ``map`` item and a plan subtask each open a child session with its own
history (entries carry its id), agent and status. A checkpoint lists the child
sessions open at that moment, each with its position: never its history.
"""

from typing import Literal

from pydantic import Field

from magent.models.base import Model, UUID4Str
from magent.models.progress import AnyProgress, blank

MAIN_SESSION = "main"
"""The id of a task's own conversation (entries and events without a ``session`` field)."""

SessionKind = Literal["main", "agent", "branch", "map", "subtask", "plan"]


class SessionPosition(Model):
    """Where an open child session stands: enough to continue it, nothing of its history."""

    session_id: UUID4Str
    kind: SessionKind
    """``agent`` (a sub-agent call), ``branch`` (one path of a fan-out), ``map`` (one item of a
    map node), ``subtask`` (one subtask of a plan) or ``plan`` (a plan node's planner, writing
    or revising the plan, or the final answer)."""
    parent: str
    """The session that opened it (``main`` or a session id)."""
    key: str
    """Where in its parent it was opened: ``call:ID``, ``branch:NODE``, ``item:N``, ``subtask:ID#N``."""
    node: str
    """The workflow node that opened it."""
    agent: str = ""
    """The agent whose loop it runs (empty for a branch, which walks workflow nodes)."""
    depth: int = 1
    """Nesting depth: 1 for a child of the main session."""
    leaf_entry_id: UUID4Str | None = None
    """The last entry of its history (None before its first entry)."""
    entry_count: int = 0
    progress: AnyProgress = Field(default_factory=blank)
    """How far it has got: its agent loop's (``kind: agent``), or for a branch its node's."""
    cursors: dict[str, int] = Field(default_factory=dict)
    """Scripted-model positions of this session's agents."""
    # A branch walks the workflow graph like the main session:
    position: str | None = None
    """For a branch: the node it is at."""
    node_done: bool = False
    stop_at: str | None = None
    """For a branch: the join node where it ends."""
    routing_key: str | None = None
    """For a branch: its own routing key (branches route independently)."""
    output: str | None = None
    """For a branch: the output of its last node."""
