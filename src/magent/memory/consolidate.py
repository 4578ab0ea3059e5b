"""Consolidation (seed 000 MemoryConsolidation): embed what lacks a vector, decay, merge
near-duplicates, archive (``evict``: delete), as docs/guides/memory.md describes.

The plan is made in a read transaction, so other tasks' writes are not held up, and applied in
one write transaction, so no one sees half of it; if others committed meanwhile it is made again
(the third time inside the write transaction). Decay counts only the time since the last
consolidation, so running it often decays no faster than running it rarely."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from magent.ids import now
from magent.memory.service import Memory
from magent.memory.store import iso
from magent.models.memory import ConsolidationSettings
from magent.vocabulary import plural

_WORD = re.compile(r"\w+", re.UNICODE)
PLAN_ATTEMPTS = 3
"""Plans made without the write lock before one is made holding it (see ``consolidate``)."""
DECAY_STEP = 1e-3
"""Importance changes smaller than this are not applied yet (nor reported): the time they
cover is not marked as decayed, so it still counts at a later consolidation."""


@dataclass
class Merge:
    keeper: str
    duplicate: str
    similarity: float
    measure: str
    """``cosine`` (vectors) or ``jaccard`` (words)."""
    content: str


@dataclass
class Change:
    id: str
    before: float
    after: float
    content: str


@dataclass
class ConsolidationReport:
    at: datetime
    dry_run: bool
    scanned: int = 0
    embedded: int = 0
    decayed: list[Change] = field(default_factory=list)
    merged: list[Merge] = field(default_factory=list)
    archived: list[Change] = field(default_factory=list)
    """Below the threshold: archived, or deleted with ``evict``."""
    evict: bool = False
    threshold: float = 0.0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line: what it did (or would do)."""
        if self.dry_run:
            verbs, head = ("would merge", "decay", "evict" if self.evict else "archive"), " (dry run)"
        else:
            verbs, head = ("merged", "decayed", "evicted" if self.evict else "archived"), ""
        n = len(self.merged)
        text = (f"memory consolidation{head}: {self.scanned} active memories: {verbs[0]} "
                f"{plural(n, 'near-duplicate')}, {verbs[1]} {len(self.decayed)}, "
                f"{verbs[2]} {len(self.archived)} below importance {self.threshold:g}")
        if self.embedded:
            text += f", embedded {self.embedded}"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {"at": self.at.isoformat(timespec="seconds"), "dry_run": self.dry_run,
                "scanned": self.scanned, "embedded": self.embedded, "evict": self.evict,
                "decayed": [vars(c) for c in self.decayed], "merged": [vars(m) for m in self.merged],
                "archived" if not self.evict else "evicted": [vars(c) for c in self.archived],
                "threshold": self.threshold,
                "notes": self.notes}


@dataclass
class _Row:
    rowid: int
    id: str
    content: str
    importance: float
    created_at: str
    last_accessed: str
    decayed_at: str | None
    access_count: int
    tags: list[str]
    group: tuple[str, str]
    merged_into: int | None = None


def consolidate(memory: Memory, *, dry_run: bool = False, settings: ConsolidationSettings | None = None,
                at: datetime | None = None) -> ConsolidationReport:
    settings = settings or memory.settings.consolidation
    at = at or now()
    report = ConsolidationReport(at=at, dry_run=dry_run, evict=settings.evict,
                                 threshold=settings.archive_below)
    if not dry_run:
        report.embedded, notes = _embed_missing(memory)
        report.notes += notes
    store = memory.store
    # Planned in a read transaction, so other tasks keep writing meanwhile (planning a large
    # store takes seconds; a write transaction that long would make their writes time out).
    for _ in range(PLAN_ATTEMPTS):
        with store.snapshot():
            seen = store.data_version()
            rows = _plan(memory, settings, at, _reset(report))
        if dry_run:
            return report
        with store.transaction() as conn:
            if store.data_version() == seen:  # nobody wrote since: the plan holds
                _apply(conn, rows, report, at, settings.evict)
                return report
    with store.transaction() as conn:  # other tasks kept writing: plan under the lock this time
        rows = _plan(memory, settings, at, _reset(report))
        _apply(conn, rows, report, at, settings.evict)
    return report


def _reset(report: ConsolidationReport) -> ConsolidationReport:
    report.decayed, report.merged, report.archived = [], [], []
    return report


def _plan(memory: Memory, settings: ConsolidationSettings, at: datetime,
          report: ConsolidationReport) -> dict[int, _Row]:
    rows = _load(memory)
    report.scanned = len(rows)
    when = iso(at)
    for row in rows.values():  # 2. decay
        since = max(row.last_accessed, row.decayed_at) if row.decayed_at else row.last_accessed
        days = max(0.0, (at - datetime.fromisoformat(since)).total_seconds() / 86400)
        after = row.importance * 0.5 ** (days / settings.half_life_days)
        if row.importance - after >= DECAY_STEP:  # smaller changes wait: their time still counts later
            report.decayed.append(Change(row.id, round(row.importance, 6), round(after, 6), row.content))
            row.importance = after
            row.decayed_at = when
    for a, b, similarity, measure in _pairs(memory, rows, settings):  # 3. merge
        keep, drop = _root(rows, a), _root(rows, b)
        if keep is drop:
            continue
        if _rank(drop) > _rank(keep):
            keep, drop = drop, keep
        drop.merged_into = keep.rowid
        keep.access_count += drop.access_count
        keep.last_accessed = max(keep.last_accessed, drop.last_accessed)
        keep.importance = max(keep.importance, drop.importance)
        keep.tags += [t for t in drop.tags if t not in keep.tags]
        report.merged.append(Merge(keep.id, drop.id, round(similarity, 4), measure, drop.content))
    for row in rows.values():  # 4. archive
        if row.merged_into is None and row.importance < settings.archive_below:
            report.archived.append(Change(row.id, round(row.importance, 6), round(row.importance, 6),
                                          row.content))
    return rows


def _rank(row: _Row) -> tuple[float, int, str]:
    """Which of two duplicates is kept: more important, then more used, then older."""
    return (round(row.importance, 3), row.access_count, _invert(row.created_at))


def _invert(text: str) -> str:
    return "".join(chr(0x10FFFF - ord(c)) for c in text)


def _root(rows: dict[int, _Row], rowid: int) -> _Row:
    row = rows[rowid]
    while row.merged_into is not None:
        row = rows[row.merged_into]
    return row


def _load(memory: Memory) -> dict[int, _Row]:
    rows = memory.store.conn.execute(
        "SELECT rowid, id, content, importance, created_at, last_accessed, decayed_at, access_count, "
        "tags, scope, scope_name FROM memories WHERE status = 'active' ORDER BY rowid").fetchall()
    out = {}
    for r in rows:
        try:
            tags = json.loads(r[8] or "[]")
        except ValueError:
            tags = []
        out[int(r[0])] = _Row(int(r[0]), r[1], r[2], float(r[3]), r[4], r[5], r[6], int(r[7]), tags,
                              (r[9], r[10]))
    return out


def _pairs(memory: Memory, rows: dict[int, _Row], settings: ConsolidationSettings
           ) -> list[tuple[int, int, float, str]]:
    """Near-duplicate pairs ``(rowid, rowid, similarity, measure)``, most similar first."""
    groups: dict[tuple[str, str], list[_Row]] = {}
    for row in rows.values():
        groups.setdefault(row.group, []).append(row)
    pairs: list[tuple[int, int, float, str]] = []
    vectors = _vectors(memory)
    for members in groups.values():
        if len(members) < 2:
            continue
        with_vectors = [m for m in members if m.rowid in vectors]
        if len(with_vectors) > 1:
            pairs += _cosine_pairs(with_vectors, vectors, settings.similarity)
        without = [m for m in members if m.rowid not in vectors]
        if without and with_vectors:
            without += with_vectors  # a memory without a vector is compared by words with all
        pairs += _jaccard_pairs(without if with_vectors else members, settings.text_similarity)
    pairs.sort(key=lambda p: -p[2])
    return pairs


def _vectors(memory: Memory) -> dict[int, Any]:
    model = memory.embedding_model
    if not model:
        return {}
    import numpy as np

    rows = memory.store.conn.execute(
        "SELECT v.rowid, v.vector FROM memory_vectors v JOIN memories m ON m.rowid = v.rowid "
        "WHERE v.model = ? AND m.status = 'active'", [model]).fetchall()
    return {int(r): np.frombuffer(blob, dtype=np.float32) for r, blob in rows}


def _cosine_pairs(members: list[_Row], vectors: dict[int, Any], threshold: float
                  ) -> list[tuple[int, int, float, str]]:
    import numpy as np

    by_dim: dict[int, list[_Row]] = {}
    for m in members:
        by_dim.setdefault(int(vectors[m.rowid].shape[0]), []).append(m)
    out = []
    for same in by_dim.values():
        matrix = np.stack([vectors[m.rowid] for m in same])
        for start in range(0, len(same), 512):  # blocks, so memory stays bounded
            sims = matrix[start:start + 512] @ matrix.T
            for i, j in np.argwhere(sims >= threshold):
                a, b = start + int(i), int(j)
                if a < b:
                    out.append((same[a].rowid, same[b].rowid, float(sims[i, j]), "cosine"))
    return out


def _jaccard_pairs(members: list[_Row], threshold: float) -> list[tuple[int, int, float, str]]:
    """Pairs of word sets with Jaccard similarity >= ``threshold``, found by prefix filtering:
    with words ordered rarest first, two sets that similar must share a word among the first
    ``n - ceil(threshold * n) + 1`` words of each, so only those are indexed and compared."""
    sets = [(m.rowid, set(_WORD.findall(m.content.lower()))) for m in members]
    df = Counter(w for _, s in sets for w in s)
    index: dict[str, list[int]] = {}
    out = []
    for position, (rowid, words) in enumerate(sets):
        if not words:
            continue
        ordered = sorted(words, key=lambda w: (df[w], w))
        prefix = len(ordered) - math.ceil(threshold * len(ordered)) + 1
        candidates: set[int] = set()
        for word in ordered[:prefix]:
            candidates.update(index.get(word, ()))
            index.setdefault(word, []).append(position)
        for other in candidates:
            other_id, other_words = sets[other]
            small, large = sorted((len(words), len(other_words)))
            if small < threshold * large:
                continue
            common = len(words & other_words)
            similarity = common / (len(words) + len(other_words) - common)
            if similarity >= threshold:
                out.append((other_id, rowid, similarity, "jaccard"))
    return out


def _apply(conn: Any, rows: dict[int, _Row], report: ConsolidationReport, at: datetime,
           evict: bool) -> None:
    when = iso(at)
    changed = {r.rowid for r in rows.values() if r.decayed_at == when}
    keepers = {rows[r.merged_into].rowid for r in rows.values() if r.merged_into is not None}
    for rowid in changed | keepers:
        row = _root(rows, rowid) if rowid in keepers else rows[rowid]
        conn.execute("UPDATE memories SET importance = ?, decayed_at = ?, access_count = ?, last_accessed = ?, "
                     "tags = ? WHERE rowid = ?",
                     [min(1.0, row.importance), row.decayed_at, row.access_count, row.last_accessed,
                      json.dumps(row.tags, ensure_ascii=False), row.rowid])
    ids = {r.id: r.rowid for r in rows.values()}
    gone = [(_root(rows, r.rowid).id, r.rowid) for r in rows.values() if r.merged_into is not None]
    below = [(None, ids[c.id]) for c in report.archived]
    if evict:
        rowids = [r for _, r in gone + below]
        for start in range(0, len(rowids), 500):
            chunk = rowids[start:start + 500]
            conn.execute(f"DELETE FROM memories WHERE rowid IN ({','.join('?' * len(chunk))})", chunk)
        return
    conn.executemany("UPDATE memories SET status = 'archived', archived_at = ?, merged_into = ? WHERE rowid = ?",
                     [(when, keeper, rowid) for keeper, rowid in gone + below])


def _embed_missing(memory: Memory) -> tuple[int, list[str]]:
    """Vectors for active memories that have none from the configured model."""
    if memory.embedder is None:
        return 0, []
    rows = memory.store.query(
        "SELECT m.rowid, m.content FROM memories m LEFT JOIN memory_vectors v ON v.rowid = m.rowid "
        "AND v.model = ? WHERE m.status = 'active' AND v.rowid IS NULL", [memory.embedding_model])
    if not rows:
        return 0, []
    notes = memory.embed_rows({int(r): c for r, c in rows})
    return (0 if notes else len(rows)), notes
