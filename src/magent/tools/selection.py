"""Ranking tools against a text (seed 000's dynamic tool selection): ``0.8 x relevance + 0.2 x
success``, relevance BM25 (or cosine of embeddings) relative to the best match, success
``(successes + 1) / (calls + 2)`` in this home. Ties go by name."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from magent.llm.base import ToolSpec

RELEVANCE_WEIGHT = 0.8
SUCCESS_WEIGHT = 0.2
K1, B = 1.2, 0.75
"""BM25's usual term-frequency saturation and length normalisation."""

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_STOP = frozenset("a an and are as at be by can do does for from has have how i in is it its me my "
                  "of on or please the this that to use was what when where which who will with you your".split())


def terms(text: str) -> list[str]:
    """Lowercase words of ``text``, camelCase and snake_case split, stop words and a plural ``s``
    left out (``getCurrentTimes`` → ``get``, ``current``, ``time``)."""
    out = []
    for word in _WORD.findall(text):
        word = word.lower()
        if word in _STOP:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.append(word)
    return out


def document(spec: ToolSpec) -> str:
    """What a tool is matched on: its name (twice: it says most in fewest words) and description."""
    return f"{spec.name} {spec.name} {spec.description}"


def bm25(query: str, docs: Sequence[str]) -> list[float]:
    """Okapi BM25 score of each of ``docs`` for ``query`` (IDF ``ln(1 + (N - n + 0.5) / (n + 0.5))``,
    never negative)."""
    bags = [Counter(terms(d)) for d in docs]
    if not bags:
        return []
    lengths = [sum(b.values()) for b in bags]
    average = sum(lengths) / len(bags) or 1.0
    wanted = set(terms(query))
    idf = {t: math.log(1 + (len(bags) - n + 0.5) / (n + 0.5))
           for t in wanted if (n := sum(1 for b in bags if t in b))}
    scores = []
    for bag, length in zip(bags, lengths):
        score = 0.0
        for term in sorted(idf):  # (a fixed order: the same sum to the last bit)
            f = bag.get(term, 0)
            if f:
                score += idf[term] * f * (K1 + 1) / (f + K1 * (1 - B + B * length / average))
        scores.append(score)
    return scores


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


@dataclass(frozen=True)
class Scored:
    """One tool's place in a ranking, and what it is made of."""

    name: str
    score: float
    relevance: float
    """0.0 - 1.0, relative to the best match."""
    success: float
    calls: int
    """Past calls in this home that ``success`` is made from."""

    def why(self) -> str:
        return (f"{self.score:.2f} = 0.8 x relevance {self.relevance:.2f} + 0.2 x success {self.success:.2f}"
                f" ({self.calls} past call{'' if self.calls == 1 else 's'})")


def rank(raw: Sequence[float], specs: Sequence[ToolSpec], stats: dict[str, tuple[int, int]]) -> list[Scored]:
    """``specs`` best first, from their raw relevance (``bm25`` or ``cosine``, in the same order)
    and ``stats`` (``{tool: (calls, successes)}``)."""
    best = max((float(r) for r in raw if r > 0), default=0.0)
    out = []
    for spec, value in zip(specs, raw):
        calls, ok = stats.get(spec.name, (0, 0))
        relevance = round(max(float(value), 0.0) / best, 4) if best else 0.0
        success = round((ok + 1) / (calls + 2), 4)
        score = round(RELEVANCE_WEIGHT * relevance + SUCCESS_WEIGHT * success, 4)
        out.append(Scored(spec.name, score, relevance, success, calls))
    return sorted(out, key=lambda s: (-s.score, s.name))
