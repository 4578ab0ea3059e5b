"""The retention policy's ``memory`` section (``unused_days``, ``archived_days``, ``max_entries``),
applied by ``magent retention sweep`` in one transaction. Without it memories are kept (seed 000)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable

from magent.errors import MagentError
from magent.memory.store import MemoryStore, iso
from magent.models.memory import MemoryRetention
from magent.vocabulary import plural


@dataclass
class Doomed:
    id: str
    rule: str
    """``unused_days``, ``archived_days`` or ``max_entries``."""
    detail: str
    content: str


@dataclass
class MemorySweep:
    dry_run: bool
    doomed: list[Doomed] = field(default_factory=list)
    problem: str | None = None

    def counts(self) -> dict[str, int]:
        return dict(Counter(d.rule for d in self.doomed))

    def summary(self) -> str:
        """The part of the sweep's line about memory, e.g. ``memory: removed 3 (2 unused_days, ...)``."""
        verb = "would remove" if self.dry_run else "removed"
        n = len(self.doomed)
        text = f"memory: {verb} {plural(n, 'memory', 'memories')}"
        if n:
            text += " (" + ", ".join(f"{c} by {rule}" for rule, c in sorted(self.counts().items())) + ")"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {"removed": len(self.doomed), "by_rule": self.counts(), "problem": self.problem,
                "memories": [vars(d) for d in self.doomed]}


def plan(store: MemoryStore, policy: MemoryRetention, at: datetime) -> list[Doomed]:
    """What the policy removes now, each memory once (the first rule that takes it)."""
    doomed: dict[int, Doomed] = {}

    def take(rows: list[tuple[Any, ...]], rule: str, detail: Callable[[Any], str]) -> None:
        for rowid, memory_id, content, value in rows:
            if rowid not in doomed:
                doomed[rowid] = Doomed(memory_id, rule, detail(value), " ".join(content.split())[:100])

    def when(text: str) -> str:
        return str(text)[:16].replace("T", " ")

    if policy.unused_days is not None:
        cutoff = iso(at - timedelta(days=policy.unused_days))
        take(store.query("SELECT rowid, id, content, last_accessed FROM memories WHERE status = 'active' "
                         "AND last_accessed < ? ORDER BY last_accessed", [cutoff]),
             "unused_days", lambda v: f"last used {when(v)} UTC; unused_days: {policy.unused_days}d")
    if policy.archived_days is not None:
        cutoff = iso(at - timedelta(days=policy.archived_days))
        take(store.query("SELECT rowid, id, content, archived_at FROM memories WHERE status = 'archived' "
                         "AND archived_at < ? ORDER BY archived_at", [cutoff]),
             "archived_days", lambda v: f"archived {when(v)} UTC; archived_days: {policy.archived_days}d")
    if policy.max_entries is not None:
        active = store.count(status="active") - sum(1 for d in doomed.values() if d.rule == "unused_days")
        over = active - policy.max_entries
        if over > 0:
            rows = store.query("SELECT rowid, id, content, importance FROM memories WHERE status = 'active' "
                               "ORDER BY importance, last_accessed, rowid")
            rows = [r for r in rows if r[0] not in doomed][:over]
            take(rows, "max_entries", lambda v: f"importance {float(v):.3f}, among the least important "
                                                f"beyond max_entries: {policy.max_entries}")
    return [doomed[r] for r in sorted(doomed)]


def sweep(db: Path, policy: MemoryRetention, at: datetime, *, dry_run: bool,
          busy_timeout: float = 10.0) -> MemorySweep:
    """Apply ``policy`` to the memory database at ``db`` (nothing to do when it does not exist).
    A database that is locked or unreadable is reported in ``problem``, never touched."""
    result = MemorySweep(dry_run=dry_run)
    if not db.exists():
        return result
    try:
        with MemoryStore(db, busy_timeout=busy_timeout, create=False) as store:
            if dry_run:
                with store.snapshot():
                    result.doomed = plan(store, policy, at)
                return result
            with store.transaction() as conn:
                result.doomed = plan(store, policy, at)
                ids = [d.id for d in result.doomed]
                for start in range(0, len(ids), 500):
                    chunk = ids[start:start + 500]
                    conn.execute(f"DELETE FROM memories WHERE id IN ({','.join('?' * len(chunk))})", chunk)
    except MagentError as exc:
        result.problem = str(exc)
        result.doomed = []
    return result
