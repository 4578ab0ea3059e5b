"""Long-term memory: MemoryEntry (seed 000 ``memory_entry``), an agent's ``memory:`` block,
the home's ``config/memory.yaml`` and the retention policy's ``memory`` section."""

from datetime import datetime
from typing import Literal

from pydantic import Field, NonNegativeInt, PositiveInt, field_validator

from magent.models.base import Model

MemoryType = Literal["episodic", "semantic", "procedural"]
"""Seed 000: episodic (what happened: past tasks), semantic (facts), procedural (how to do things)."""
Scope = Literal["agent", "workflow", "global"]
"""Who a memory belongs to: one agent (by name), one workflow (by name), or everyone."""
MEMORY_TYPES: tuple[str, ...] = ("episodic", "semantic", "procedural")
SCOPES: tuple[str, ...] = ("agent", "workflow", "global")


class MemoryEntry(Model):
    """One long-term memory, as stored in ``memory/memory.db`` and exported as a JSON line."""

    id: str = Field(pattern=r"^[0-9a-f][0-9a-f-]{7,63}$")
    """A UUID v4 (any unique prefix works on the command line)."""
    content: str = Field(min_length=1)
    """The memory itself, secrets masked."""
    memory_type: MemoryType = "semantic"
    importance: float = Field(default=0.5, ge=0, le=1)
    """0.0 - 1.0; decays with time since ``last_accessed`` when memory is consolidated."""
    created_at: datetime
    last_accessed: datetime
    """When a run last retrieved it (``created_at`` until then)."""
    access_count: NonNegativeInt = 0
    """How many times runs retrieved it (before a model turn or with ``memory.search``)."""
    source: Literal["user", "agent", "tool", "system"] = "user"
    """Seed 000 ``metadata.source``: who stored it (``system`` for a task's summary)."""
    source_task: str | None = None
    """The task that stored it."""
    source_agent: str | None = None
    """The agent that stored it."""
    tags: list[str] = Field(default_factory=list)
    scope: Scope = "global"
    scope_name: str = ""
    """The agent's or workflow's name for scope ``agent``/``workflow``; empty for ``global``."""
    status: Literal["active", "archived"] = "active"
    """Archived memories are kept (and exported) but never retrieved."""
    archived_at: datetime | None = None
    merged_into: str | None = None
    """For a near-duplicate archived by consolidation: the memory it was merged into."""
    embedding_model: str | None = None
    """The model that made this memory's vector, when it has one."""

    @field_validator("scope_name")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()

    @property
    def scope_label(self) -> str:
        """``agent:NAME``, ``workflow:NAME`` or ``global``."""
        return "global" if self.scope == "global" else f"{self.scope}:{self.scope_name}"


class AgentMemory(Model):
    """An agent's ``memory:`` block: what it retrieves before each model turn and where it writes."""

    long_term: bool = False
    """Retrieve the memories most relevant to the current task before each model turn."""
    top_k: PositiveInt = 5
    """At most this many memories are injected."""
    min_score: float = Field(default=0.0, ge=0, le=1)
    """Leave out memories scoring below this (0.0 - 1.0; see docs/guides/memory.md)."""
    scope: Scope = "agent"
    """Where ``memory.remember`` and the summary write by default."""
    summarize_on_finish: bool = False
    """When the agent's node finishes, store an episodic summary of the task and its answer."""
    embedding_model: str | None = None
    """A litellm embedding model; overrides ``config/memory.yaml``'s."""


class ConsolidationSettings(Model):
    """How ``magent memory consolidate`` merges, decays and archives."""

    similarity: float = Field(default=0.95, gt=0, le=1)
    """Near-duplicates: cosine similarity of the two vectors at or above this (with embeddings)."""
    text_similarity: float = Field(default=0.9, gt=0, le=1)
    """Near-duplicates without vectors: Jaccard similarity of the two sets of words."""
    half_life_days: float = Field(default=30, gt=0)
    """Importance halves for every this many days a memory goes unretrieved."""
    archive_below: float = Field(default=0.05, ge=0, le=1)
    """Memories whose importance falls below this are archived (or evicted)."""
    evict: bool = False
    """Delete what falls below the threshold instead of archiving it."""
    after_task: bool = False
    """Also consolidate (the same way) at the end of every task that stored a memory."""


class MemorySettings(Model):
    """The home's ``config/memory.yaml``."""

    embedding_model: str | None = None
    """A litellm embedding model (e.g. ``openai/text-embedding-3-small``); none: text search only."""
    embedding_endpoint: str | None = None
    """API base URL of the embedding model (for self-hosted or OpenAI-compatible servers)."""
    embedding_api_key: str | None = None
    """Write it as ``${ENV_VAR}``; never stored."""
    embedding_timeout_seconds: float = Field(default=30, gt=0)
    busy_timeout_seconds: float = Field(default=10, gt=0)
    """How long a write waits for another process's write before failing with a clear error."""
    consolidation: ConsolidationSettings = Field(default_factory=ConsolidationSettings)


class MemoryRetention(Model):
    """The retention policy's ``memory`` section, applied by ``magent retention sweep``."""

    unused_days: NonNegativeInt | None = None
    """Delete active memories no run has retrieved for this many days (counted from creation
    when never retrieved)."""
    archived_days: NonNegativeInt | None = None
    """Delete archived memories this many days after they were archived."""
    max_entries: PositiveInt | None = None
    """Keep at most this many active memories: the least important (then least recently used) go."""
