"""Finding memories: full-text search (FTS5, BM25), vectors too when configured.

Plain words match memories holding any of them (stemmed, stop words dropped), searched rarest
first within ``BUDGET`` so a long query stays fast; full-text syntax is used as written, or the
words instead with a note when it is invalid. The text score (0 to 1) is the IDF-weighted share
of the query's words a memory holds; with vectors, ``0.5 × text + 0.5 × cosine``. Ties go by
importance, then BM25 rank, then the newer memory."""

from __future__ import annotations

import math
import re
import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

from magent.memory.store import MemoryStore, scope_clause
from magent.models.memory import MemoryEntry

if TYPE_CHECKING:
    from magent.memory.vectors import VectorIndex

CANDIDATES = 20
"""Text and vector candidates each ranked before scoring (at least ``4 × top_k``)."""
BUDGET = 2000
"""A plain query searches for its words rarest first while the memories they occur in add up
to at most this many (the rarest word always), and for at most ``SEARCHED`` words."""
SEARCHED = 8
MAX_TERMS = 24
TEXT_WEIGHT = 0.5

STOP_WORDS = frozenset("""
a about above after again all am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having
he her here hers herself him himself his how i if in into is it its itself just me more most my
myself no nor not now of off on once only or other our ours ourselves out over own same she should
so some such than that the their theirs them themselves then there these they this those through
to too under until up very was we were what when where which while who whom why will with would
you your yours yourself yourselves please tell know let us me
""".split())

_WORD = re.compile(r"\w+", re.UNICODE)
_SYNTAX = re.compile(r'["*():^+{}]|\b(?:AND|OR|NOT|NEAR)\b')
_OPERATORS = {"and", "or", "not", "near"}
_EXCLUDED = re.compile(r'\bNOT\s+(?:"(?:[^"]|"")*"|\([^)]*\)|\S+)')
"""What follows NOT (a word, a phrase, a group): words a memory must not contain, not scored."""


@dataclass
class Query:
    text: str
    """The query as given."""
    match: str
    """The FTS5 expression searched."""
    terms: list[str]
    """The words whose presence makes the text score."""
    raw: bool = False
    """The query was used as full-text syntax."""


def words(text: str, *, keep_stop_words: bool = False) -> list[str]:
    """The distinct lowercase words of ``text`` in order (stop words dropped unless all are)."""
    seen: list[str] = []
    for word in _WORD.findall(text.lower()):
        if word not in seen:
            seen.append(word)
    if keep_stop_words:
        return seen[:MAX_TERMS]
    content = [w for w in seen if w not in STOP_WORDS]
    return (content or seen)[:MAX_TERMS]


def quoted(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def plain_query(text: str) -> Query:
    terms = words(text)
    return Query(text=text, match=" OR ".join(quoted(t) for t in terms), terms=terms)


def parse_query(text: str) -> Query:
    """Full-text syntax when the query uses any, else plain words (see the module docstring)."""
    if _SYNTAX.search(text):
        terms = [w for w in words(_EXCLUDED.sub(" ", text), keep_stop_words=True) if w not in _OPERATORS]
        return Query(text=text, match=text, terms=terms, raw=True)
    return plain_query(text)


@dataclass
class Hit:
    entry: MemoryEntry
    rowid: int
    score: float
    text_score: float
    vector_score: float | None = None
    matched: list[str] = field(default_factory=list)
    terms: int = 0
    rank: float = 0.0
    """BM25 (lower is better; 0 when only the vector found it)."""

    def why(self) -> str:
        """Why it was found, in a few words (shown in the trace and by ``memory search``)."""
        parts = []
        if self.matched:
            parts.append(f"matched {', '.join(self.matched)} ({len(self.matched)} of {self.terms} words)")
        if self.vector_score is not None:
            parts.append(f"similarity {self.vector_score:.2f}")
        return "; ".join(parts) or "no words matched"

    def as_dict(self) -> dict:
        return {"id": self.entry.id, "score": round(self.score, 4), "why": self.why(),
                "text_score": round(self.text_score, 4),
                "vector_score": None if self.vector_score is None else round(self.vector_score, 4),
                "matched": self.matched}


@dataclass
class SearchResult:
    query: Query
    hits: list[Hit]
    mode: str = "text"
    """``text``, or ``hybrid`` when vectors took part."""
    notes: list[str] = field(default_factory=list)
    """What the user should know: a query read as words, an embedding model that failed."""


def search(store: MemoryStore, text: str, *, visible: list[tuple[str, str]] | None = None,
           types: Sequence[str] = (), top_k: int = 5, min_score: float = 0.0,
           vectors: "VectorIndex | None" = None, query_vector: "Sequence[float] | None" = None,
           exclude_task: str | None = None) -> SearchResult:
    """The ``top_k`` active memories best matching ``text`` in ``visible`` scopes, not ``exclude_task``'s."""
    query = parse_query(text)
    notes: list[str] = []
    limit = max(CANDIDATES, 4 * top_k)
    if not query.terms and not query.raw:
        return SearchResult(query, [], notes=["the query has no words to search for"])
    weigh = _Weights(store, query.terms)
    try:
        ranked = _text_candidates(store, weigh.match(query), visible, types, limit)
    except sqlite3.OperationalError as exc:
        if not query.raw:
            raise
        reason = str(exc).removeprefix("fts5: ")
        query = plain_query(text)
        notes.append(f"not valid full-text syntax ({reason}); searched for the words "
                     f"{', '.join(query.terms) or '(none)'} instead")
        weigh = _Weights(store, query.terms)
        ranked = _text_candidates(store, weigh.match(query), visible, types, limit) if query.terms else {}
    similarity: dict[int, float] = {}
    mode = "text"
    if vectors is not None and query_vector is not None:
        similarity = vectors.similarities(store, query_vector, visible, types, top=limit, also=list(ranked))
        mode = "hybrid"
        for rowid in similarity:
            ranked.setdefault(rowid, 0.0)
    facts = _facts(store, list(ranked))
    hits = []
    for rowid, rank in ranked.items():
        fact = facts.get(rowid)
        if fact is None or (exclude_task and fact.source_task == exclude_task):
            continue
        found, text_score = weigh.score(fact.terms)
        vector = similarity.get(rowid)
        score = text_score if vector is None else (
            TEXT_WEIGHT * text_score + (1 - TEXT_WEIGHT) * max(vector, 0.0))
        if score < min_score or score <= 0:
            continue
        hits.append(Hit(entry=None, rowid=rowid, score=score, text_score=text_score,  # type: ignore[arg-type]
                        vector_score=vector, matched=found, terms=len(query.terms), rank=rank))
    # Equal scores: the more important memory first, then the better BM25 rank, then the newer.
    hits.sort(key=lambda h: (-round(h.score, 6), -facts[h.rowid].importance, h.rank, -h.rowid))
    hits = hits[:top_k]
    for hit, entry in zip(hits, store.entries([h.rowid for h in hits])):
        hit.entry = entry
    return SearchResult(query, hits, mode=mode, notes=notes)


class _Weights:
    """The query's words as index terms, with their weights (inverse document frequency)."""

    def __init__(self, store: MemoryStore, words: list[str]):
        self.words = words
        self.stems = store.stems(words) if words else []
        docs = store.term_docs(sorted({t for s in self.stems for t in s}))
        total = store.doc_count()
        self.docs: dict[str, int] = {}
        """word → how many memories contain it"""
        self.weight: dict[str, float] = {}
        for word, stems in zip(words, self.stems):
            df = min((docs.get(t, 0) for t in stems), default=0)  # a phrase is as rare as its rarest term
            self.docs[word] = df
            self.weight[word] = math.log(1 + (total - df + 0.5) / (df + 0.5)) if stems else 0.0

    def match(self, query: Query) -> str:
        """The FTS5 expression: as written for full-text syntax; else the words, without the
        very common ones when rarer ones are there."""
        if query.raw:
            return query.match
        kept, postings = [], 0
        for word in sorted(self.words, key=lambda w: self.docs[w])[:SEARCHED]:
            if kept and postings + self.docs[word] > BUDGET:
                break
            kept.append(word)
            postings += self.docs[word]
        return " OR ".join(quoted(w) for w in kept)

    def score(self, terms: set[str]) -> tuple[list[str], float]:
        """The words a memory with index ``terms`` contains, and their share of the weight."""
        found = [w for w, stems in zip(self.words, self.stems) if stems and stems <= terms]
        total = sum(self.weight.values())
        if not total:
            return found, (len(found) / len(self.words) if self.words else 0.0)
        return found, sum(self.weight[w] for w in found) / total


@dataclass
class _Fact:
    terms: set[str]
    importance: float
    source_task: str | None


def _facts(store: MemoryStore, rowids: list[int]) -> dict[int, _Fact]:
    """What scoring needs of each candidate: its index terms, importance and origin."""
    if not rowids:
        return {}
    rows = store.query(f"SELECT rowid, content, tags, importance, source_task FROM memories "
                       f"WHERE rowid IN ({','.join('?' * len(rowids))})", rowids)
    terms = store.stems([f"{r[1]}\n{r[2]}" for r in rows])
    return {int(r[0]): _Fact(t, float(r[3]), r[4]) for r, t in zip(rows, terms)}


def _text_candidates(store: MemoryStore, match: str, visible: list[tuple[str, str]] | None,
                     types: Sequence[str], limit: int) -> dict[int, float]:
    """rowid → BM25 rank of the best ``limit`` active matches (raises on bad FTS syntax)."""
    where, params = scope_clause(visible)
    sql = ("SELECT m.rowid, bm25(memory_fts, 1.0, 0.5) AS r FROM memory_fts "
           "JOIN memories m ON m.rowid = memory_fts.rowid "
           f"WHERE memory_fts MATCH ? AND m.status = 'active' AND {where}")
    if types:
        sql += f" AND m.memory_type IN ({','.join('?' * len(types))})"
    sql += f" ORDER BY r LIMIT {int(limit)}"
    try:
        rows = store.conn.execute(sql, [match, *params, *types]).fetchall()
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and _is_query_error(exc):
            raise
        raise store.failure(exc) from None  # a locked or broken database, named
    return {int(r[0]): float(r[1]) for r in rows}


def _is_query_error(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return text.startswith("fts5:") or "no such column" in text or "unterminated string" in text \
        or "syntax error" in text or "unknown special query" in text
