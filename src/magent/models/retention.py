"""Retention policy (seed 002 "Retention Policy")."""

from pydantic import Field, NonNegativeInt, PositiveInt

from magent.models.base import Model
from magent.models.memory import MemoryRetention
from magent.models.task import TaskStatus


class RetentionPolicy(Model):
    """How long task directories are kept after they finish (or were last updated)."""

    default_days: NonNegativeInt = 7
    """Days kept when nothing more specific applies."""
    by_task: dict[str, NonNegativeInt] = Field(default_factory=dict)
    """Task tag → days; when several tags match, the longest wins."""
    by_status: dict[TaskStatus, NonNegativeInt] = Field(default_factory=dict)
    """Task status → days. Running and awaiting tasks are only swept if named here (a run
    whose process died counts as ``interrupted``, which is not protected)."""
    keep_checkpoints: PositiveInt | None = None
    """Keep at most this many checkpoints per task (the newest, plus any a fork or pause needs)."""
    memory: MemoryRetention | None = None
    """Rules for long-term memories (``memory/memory.db``); without this section none are removed."""
