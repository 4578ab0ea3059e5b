"""The memory operations the CLI, the ``memory.*`` tools and runs share: ``Memory`` masks secrets
before storing, embeds when configured (text search with a note when that fails) and resolves
who may see what."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Sequence

from magent.errors import LLMError, UsageError
from magent.ids import new_id, now
from magent.memory.search import SearchResult, search
from magent.memory.store import MemoryStore
from magent.models.memory import MEMORY_TYPES, SCOPES, MemoryEntry, MemorySettings

Redact = Callable[[str], str]


@dataclass(frozen=True)
class Caller:
    """Who uses memory: an agent of a workflow in a task, or (all None) a person at the CLI."""

    agent: str | None = None
    workflow: str | None = None
    task_id: str | None = None

    def visible(self) -> list[tuple[str, str]] | None:
        """The scopes this caller reads: its agent's, its workflow's, global; a person sees all."""
        if not self.agent and not self.workflow:
            return None
        pairs = [("global", "")]
        if self.workflow:
            pairs.insert(0, ("workflow", self.workflow))
        if self.agent:
            pairs.insert(0, ("agent", self.agent))
        return pairs

    def owner(self, scope: str) -> str:
        """The ``scope_name`` of a memory this caller writes in ``scope``."""
        if scope == "global":
            return ""
        name = self.agent if scope == "agent" else self.workflow
        if not name:
            raise UsageError(f"scope {scope!r} needs a name here: write it as {scope}:NAME")
        return name


def parse_scope(text: str, *, any_name: bool = False) -> tuple[str, str | None]:
    """``agent:NAME``, ``workflow:NAME`` or ``global`` → ``(scope, scope_name)``. With
    ``any_name`` (filters), a bare ``agent`` or ``workflow`` means any name: ``(scope, None)``."""
    scope, colon, name = text.strip().partition(":")
    if scope not in SCOPES:
        raise UsageError(f"unknown scope {text!r}: use agent:NAME, workflow:NAME or global")
    if scope == "global":
        if name:
            raise UsageError(f"scope 'global' takes no name (got {text!r})")
        return "global", ""
    if not name.strip():
        if any_name and not colon:
            return scope, None
        raise UsageError(f"scope {scope!r} needs a name: {scope}:NAME")
    return scope, name.strip()


def check_type(memory_type: str) -> str:
    if memory_type not in MEMORY_TYPES:
        raise UsageError(f"unknown memory type {memory_type!r}: use {', '.join(MEMORY_TYPES)}")
    return memory_type


def new_entry(content: str, *, memory_type: str = "semantic", importance: float = 0.5,
              tags: Sequence[str] = (), scope: str = "global", scope_name: str = "",
              source: str = "user", caller: Caller | None = None, at: datetime | None = None) -> MemoryEntry:
    at = at or now()
    caller = caller or Caller()
    return MemoryEntry(id=new_id(), content=content, memory_type=memory_type, importance=importance,  # type: ignore[arg-type]
                       created_at=at, last_accessed=at, source=source, source_task=caller.task_id,  # type: ignore[arg-type]
                       source_agent=caller.agent, tags=list(tags), scope=scope, scope_name=scope_name)  # type: ignore[arg-type]


def idempotency_key(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


def load_settings(root: Path | None = None) -> tuple[MemorySettings, set[str]]:
    """``config/memory.yaml`` (defaults without it) and the secrets it took from the environment."""
    from magent import paths
    from magent.config.files import load_memory_settings

    loaded = load_memory_settings(paths.memory_settings_file(root))
    return loaded.settings, loaded.secrets


@dataclass
class Stored:
    entry: MemoryEntry
    stored: bool
    """False when the same memory (same id or idempotency key) was already there."""
    notes: list[str] = field(default_factory=list)


class Memory:
    """One open memory database with the home's settings. Close it when done."""

    def __init__(self, store: MemoryStore, settings: MemorySettings, *, redact: Redact | None = None,
                 embedding_model: str | None = None):
        self.store = store
        self.settings = settings
        self.redact: Redact = redact or (lambda text: text)
        self.embedding_model = embedding_model or settings.embedding_model
        self._embedder: Any = None
        self._index: Any = None
        self.embedding_error: str | None = None
        """Set when the embedding model failed: from then on this memory searches by text only
        (one slow failure per task, not one per model turn)."""

    @classmethod
    def open(cls, root: Path | None = None, *, create: bool = True, redact: Redact | None = None,
             embedding_model: str | None = None, settings: MemorySettings | None = None) -> "Memory":
        """Open the home's memory. Without ``redact``, the home's redaction settings mask secrets."""
        from magent import paths

        secrets: set[str] = set()
        if settings is None:
            settings, secrets = load_settings(root)
        if redact is None:
            from magent.redact import Redactor

            redact = Redactor.configured(secrets, root).text
        store = MemoryStore(paths.memory_db(root), busy_timeout=settings.busy_timeout_seconds, create=create)
        return cls(store, settings, redact=redact, embedding_model=embedding_model)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # embeddings
    @property
    def embedder(self) -> Any:
        if self._embedder is None and self.embedding_model:
            from magent.memory.vectors import Embedder, VectorIndex

            self._embedder = Embedder.configured(self.settings, self.embedding_model)
            self._index = VectorIndex(self.embedding_model)
        return self._embedder

    def embed_rows(self, rows: dict[int, str]) -> list[str]:
        """Give these memories (rowid → content) vectors; returns notes (empty when it worked)."""
        embedder = self.embedder
        if embedder is None or not rows:
            return []
        from magent.memory.vectors import save_vectors

        later = "stored without a vector (`magent memory consolidate` adds it later)"
        if self.embedding_error:
            return [f"{self.embedding_error}; {later}"]
        try:
            vectors = embedder.embed(list(rows.values()))
        except LLMError as exc:
            self.embedding_error = str(exc)
            return [f"{exc}; {later}"]
        save_vectors(self.store, embedder.model, dict(zip(rows, vectors)))
        return []

    # operations
    def remember(self, content: str, *, caller: Caller | None = None, memory_type: str = "semantic",
                 importance: float = 0.5, tags: Sequence[str] = (), scope: str = "agent",
                 scope_name: str | None = None, source: str = "user", key: str | None = None,
                 replace: bool = False) -> Stored:
        """Store one memory, secrets masked. With ``key``, storing it again returns the first."""
        caller = caller or Caller()
        content = self.redact(content.strip())
        if not content:
            raise UsageError("a memory needs some content")
        if not 0 <= importance <= 1:
            raise UsageError(f"importance must be between 0 and 1, not {importance:g}")
        check_type(memory_type)
        owner = scope_name if scope_name is not None else caller.owner(scope)
        entry = new_entry(content, memory_type=memory_type, importance=importance,
                          tags=[self.redact(t) for t in tags], scope=scope, scope_name=owner,
                          source=source, caller=caller)
        [(entry_id, stored)] = self.store.add([entry], keys=[key], replace=replace)
        notes: list[str] = []
        if stored or replace:
            rowid = self.store.rowids([entry_id])[entry_id]
            notes = self.embed_rows({rowid: content})
        return Stored(self.store.get(entry_id), stored, notes)

    def search(self, text: str, *, visible: list[tuple[str, str]] | None = None,
               types: Sequence[str] = (), top_k: int = 5, min_score: float = 0.0,
               touch: bool = False, exclude_task: str | None = None) -> SearchResult:
        """Text search, combined with vectors when an embedding model is configured. A failing
        embedding model does not fail the search: it is text-only, with a note saying why."""
        for t in types:
            check_type(t)
        query_vector, notes = None, []
        if self.embedder is not None and not self.embedding_error:
            try:
                query_vector = self.embedder.query(text)
            except LLMError as exc:
                self.embedding_error = str(exc)
        if self.embedding_error:
            notes.append(f"{self.embedding_error}; searched by text only")
        result = search(self.store, text, visible=visible, types=types, top_k=top_k, min_score=min_score,
                        vectors=self._index if query_vector is not None else None,
                        query_vector=query_vector, exclude_task=exclude_task)
        result.notes[:0] = notes
        if touch and result.hits:
            self.store.touch([h.rowid for h in result.hits], now())
        return result

    def forget(self, ref: str, *, visible: list[tuple[str, str]] | None = None) -> MemoryEntry:
        rowid = self.store.resolve(ref, visible)
        entry = self.store.entries([rowid])[0]
        self.store.delete([rowid])
        return entry

    def add_entries(self, entries: Sequence[MemoryEntry]) -> list[tuple[str, bool]]:
        """Store whole entries (an import), masked, in one transaction; then embed the new ones."""
        masked = [e.model_copy(update={"content": self.redact(e.content),
                                       "tags": [self.redact(t) for t in e.tags],
                                       "embedding_model": None}) for e in entries]
        results = self.store.add(masked)
        new = [i for i, stored in results if stored]
        if new and self.embedder is not None:
            rowids = self.store.rowids(new)
            contents = {e.id: e.content for e in masked}
            self.embed_rows({rowids[i]: contents[i] for i in new if i in rowids})
        return results
