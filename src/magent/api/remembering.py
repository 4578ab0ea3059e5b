"""Long-term memory from Python (what ``magent memory ...`` does). Readers never create the
database; writers create it. Secrets are masked before anything is stored, as in a run."""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Iterable, Iterator, Union, cast

from magent import paths
from magent.errors import UsageError

if TYPE_CHECKING:
    from magent.api.reading import PathLike
    from magent.memory.consolidate import ConsolidationReport
    from magent.memory.search import Hit
    from magent.memory.service import Memory, Stored
    from magent.memory.transfer import ImportReport
    from magent.models.memory import MemoryEntry

STATUSES = ("active", "archived", "all")


@dataclass(frozen=True)
class MemoryList:
    """Memories as ``magent memory list`` shows them (``memories``)."""

    entries: list["MemoryEntry"]
    """Newest first, at most ``limit``."""
    total: int
    """How many match the scope and status (``entries`` may be fewer)."""
    size_bytes: int
    """The size of memory.db (0 when there is none yet)."""


@dataclass(frozen=True)
class MemorySearch:
    """What ``search_memory`` found, best first."""

    query: str
    """The query as given."""
    searched: str
    """What was sent to the full-text index (plain words are joined with OR)."""
    mode: str
    """``text``, or ``hybrid`` when an embedding model's vectors took part."""
    notes: list[str]
    """What to know: a query read as plain words, an embedding model that failed."""
    hits: list["Hit"]
    """Each with ``entry``, ``score`` (0 to 1) and ``why()``."""

    def as_dict(self) -> dict[str, Any]:
        """What ``magent memory search --json`` prints."""
        return {"query": self.query, "searched": self.searched, "mode": self.mode, "notes": self.notes,
                "hits": [{**h.entry.model_dump(mode="json"), **h.as_dict()} for h in self.hits]}


def memories(*, scope: str | None = None, types: Iterable[str] | None = None, status: str = "active",
             limit: int = 50, home: PathLike | None = None) -> MemoryList:
    """Memories, newest first. ``scope`` is ``agent:NAME``, ``workflow:NAME``, ``global``, or
    ``agent``/``workflow`` for any name; a bad scope, type or status is a ``UsageError``."""
    visible, kinds, state = _visible(scope), _types(types), _status(status)
    if limit < 1:
        raise UsageError(f"--limit must be 1 or more, not {limit}")
    with _open(home) as memory:
        return MemoryList(entries=memory.store.list(visible=visible, types=kinds, status=state, limit=limit),
                          total=memory.store.count(status=state, visible=visible),
                          size_bytes=memory.store.size_bytes())


def search_memory(query: str, *, scope: str | None = None, types: Iterable[str] | None = None,
                  top_k: int = 10, min_score: float = 0.0, home: PathLike | None = None) -> MemorySearch:
    """Search memories as an agent's ``memory.search`` does, best first: plain words match any of
    them; full-text syntax (``"exact phrase"``, ``a AND b``, ``pre*``) is used as written."""
    visible, kinds = _visible(scope), _types(types)
    if top_k < 1:
        raise UsageError(f"--top-k must be 1 or more, not {top_k}")
    if not 0.0 <= min_score <= 1.0:
        raise UsageError(f"--min-score must be between 0 and 1, not {min_score}")
    with _open(home) as memory:
        result = memory.search(query, visible=visible, types=kinds, top_k=top_k, min_score=min_score)
    return MemorySearch(query=query, searched=result.query.match, mode=result.mode, notes=list(result.notes),
                        hits=list(result.hits))


def memory_entry(memory_id: str, *, home: PathLike | None = None) -> "MemoryEntry":
    """One memory, every field; an unknown id or a prefix under 4 characters is a ``MemoryNotFoundError``."""
    with _open(home) as memory:
        return memory.store.get(memory_id)


def add_memory(content: str, *, memory_type: str = "semantic", scope: str = "global", importance: float = 0.5,
               tags: Iterable[str] | None = None, home: PathLike | None = None) -> "Stored":
    """Store a memory by hand (secrets masked first); returns it as stored, with ``notes``."""
    from magent.memory.service import check_type, parse_scope

    check_type(memory_type)
    scope_kind, name = parse_scope(scope)
    if not 0.0 <= importance <= 1.0:
        raise UsageError(f"--importance must be between 0 and 1, not {importance}")
    with _open(home, create=True) as memory:
        return memory.remember(content, memory_type=memory_type, importance=importance, tags=list(tags or []),
                               scope=scope_kind, scope_name=name, source="user")


def forget_memories(memory_ids: Iterable[str], *, home: PathLike | None = None) -> list["MemoryEntry"]:
    """Delete memories for good; if one id is unknown (``MemoryNotFoundError``), none is deleted."""
    refs = [memory_ids] if isinstance(memory_ids, str) else list(memory_ids)
    with _open(home) as memory:
        rowids = [memory.store.resolve(ref) for ref in refs]
        entries = memory.store.entries(rowids)
        memory.store.delete(rowids)
    return entries


def export_memories(path: PathLike | None = None, *, scope: str | None = None, status: str = "all",
                    home: PathLike | None = None) -> list[str]:
    """Memories as JSON Lines, without vectors; with ``path`` also written there, whole or not at all."""
    from magent.memory.transfer import export_lines
    from magent.store.files import write_output

    visible, state = _visible(scope), _status(status)
    with _open(home) as memory:
        lines = list(export_lines(memory.store.iter_all(visible=visible, status=state)))
    if path is not None:
        write_output(Path(os.fspath(path)), "".join(lines).encode())
    return lines


def import_memories(source: Union[PathLike, IO[str]], *, home: PathLike | None = None) -> "ImportReport":
    """Add memories from a JSON Lines file or text stream, skipping ids already stored. A bad
    line imports nothing (``UsageError`` naming it)."""
    from magent.memory.transfer import import_file

    with _open(home, create=True) as memory:
        if isinstance(source, (str, os.PathLike)):
            return import_file(memory, Path(os.fspath(source)))
        return import_file(memory, None, source)


def consolidate_memory(*, dry_run: bool = False, evict: bool | None = None,
                       home: PathLike | None = None) -> "ConsolidationReport":
    """Merge near-duplicates, decay importance, archive (``evict``: delete) what falls below
    config/memory.yaml's threshold; ``dry_run`` only says what it would do."""
    from magent.memory.consolidate import ConsolidationReport, consolidate

    with _open(home) as memory:
        settings = memory.settings.consolidation
        if evict is not None:
            settings = settings.model_copy(update={"evict": evict})
        if not memory.store.path.exists():
            from magent.ids import now

            return ConsolidationReport(at=now(), dry_run=dry_run, evict=settings.evict,
                                       threshold=settings.archive_below)
        return consolidate(memory, dry_run=dry_run, settings=settings)


@contextmanager
def _open(home: PathLike | None, *, create: bool = False) -> Iterator["Memory"]:
    """The home's memory for one call (``home=`` applies to that call alone)."""
    from magent.memory.service import Memory

    with paths.using_home(home):
        memory = Memory.open(create=create)
        try:
            yield memory
        finally:
            memory.close()


def _visible(scope: str | None) -> list[tuple[str, str]] | None:
    """The scope filter: ``(scope, name)``, the name None for any (``agent`` alone)."""
    from magent.memory.service import parse_scope

    return None if scope is None else [cast("tuple[str, str]", parse_scope(scope, any_name=True))]


def _types(types: Iterable[str] | None) -> list[str]:
    from magent.memory.service import check_type

    if isinstance(types, str):
        types = [types]
    return [check_type(t) for t in types or []]


def _status(status: str) -> str | None:
    if status not in STATUSES:
        raise UsageError(f"status {status!r}: use one of {', '.join(STATUSES)}")
    return None if status == "all" else status
