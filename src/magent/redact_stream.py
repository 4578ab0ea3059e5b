"""Masking a model's text as it streams (the live view, ``--json --stream``, ``on_token``).

A secret or key-shaped text can arrive in pieces, so ``StreamMask`` holds back only the shortest
tail that could still become, or extend, a match: secrets are replaced first, then the patterns
searched in the result, as in a whole text. Ordinary text is not delayed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from magent.llm.base import Attempt, LLMClient, LLMRequest, LLMResponse
    from magent.redact import Redactor

_PROBES = ("a" * 64, "A" * 64, "0" * 64, " " + "a" * 64)
"""Text that could follow the tail: a match of the patterns that would run from the tail into one
of these is still open (``sk-abc``, ``AKIA12``, ``Bearer``), so the tail is held from its start."""


class StreamMask:
    """A token sink that hands ``sink`` the pieces masked as ``redactor`` masks whole texts; call
    ``flush()`` when the reply ends or an attempt fails. The pieces join to the masked reply."""

    def __init__(self, redactor: "Redactor", sink: Callable[[str], None]):
        self.redactor = redactor
        self.sink = sink
        self.pending = ""
        """Text received whose secrets are not yet replaced."""
        self.unsearched = ""
        """Text whose secrets are replaced, not yet searched for the patterns."""

    def __call__(self, piece: str) -> None:
        if not piece:
            return
        text = self.pending + piece
        cut = _secrets_end(text, self.redactor.secrets)
        self.pending = text[cut:]
        self._search(self.redactor.mask_secrets(text[:cut]), last=False)

    def flush(self) -> None:
        text, self.pending = self.pending, ""
        self._search(self.redactor.mask_secrets(text), last=True)

    def _search(self, text: str, *, last: bool) -> None:
        text = self.unsearched + text
        cut = len(text) if last else _patterns_end(text, self.redactor)
        self.unsearched = text[cut:]
        if cut:
            self.sink(self.redactor.mask_patterns(text[:cut]))


def _secrets_end(text: str, secrets: list[str]) -> int:
    """How much of ``text`` can have its secrets replaced now: up to the longest tail that
    begins a secret, and never through the middle of one."""
    cut = min((_open_start(text, secret) for secret in secrets), default=len(text))
    spans = []
    for secret in secrets:
        at = text.find(secret)
        while at >= 0:
            spans.append((at, at + len(secret)))
            at = text.find(secret, at + 1)
    return _not_inside(cut, spans)


def _patterns_end(text: str, redactor: "Redactor") -> int:
    """How much of ``text`` (its secrets replaced) can be searched for the patterns now: up to
    where something that may still become a match starts, and never through a match."""
    pattern = redactor.pattern
    if pattern is None:
        return len(text)
    cut = min((_open_start(text, start) for start in redactor.starts), default=len(text))
    if redactor.others:  # a configured pattern may begin anywhere in the word under way
        cut = min(cut, _word_start(text))
    end = len(text)
    for probe in _PROBES:
        for match in pattern.finditer(text + probe):
            if match.start() >= end:
                break
            if match.end() > end:
                cut = min(cut, match.start())
                break
    return _not_inside(cut, [match.span() for match in pattern.finditer(text)])


def _not_inside(cut: int, spans: list[tuple[int, int]]) -> int:
    """``cut``, moved back to the start of any span it falls inside (what is masked is masked whole)."""
    moved = True
    while moved:
        moved = False
        for start, stop in spans:
            if start < cut < stop:
                cut, moved = start, True
    return cut


def _open_start(text: str, literal: str) -> int:
    """Where the longest tail of ``text`` that is a proper beginning of ``literal`` starts
    (``len(text)`` when none); only the places of its first character in the last
    ``len(literal) - 1`` characters are tried, so a PEM key costs a few comparisons."""
    first = literal[0]
    at = text.find(first, max(0, len(text) - len(literal) + 1))
    while at >= 0:
        if literal.startswith(text[at:]):
            return at
        at = text.find(first, at + 1)
    return len(text)


def _word_start(text: str) -> int:
    """Where the last word of ``text`` starts (just after its last whitespace)."""
    for i in range(len(text) - 1, -1, -1):
        if text[i].isspace():
            return i + 1
    return 0


async def complete_masked(client: "LLMClient", request: "LLMRequest", on_token: Callable[[str], None],
                          on_attempt: "Callable[[Attempt], None]", redactor: "Redactor") -> "LLMResponse":
    """``client.complete(request)`` with its streamed text masked before ``on_token`` sees it. A
    failed attempt's held-back tail goes out before the failure is reported (a retry starts afresh)."""
    stream = StreamMask(redactor, on_token)

    def attempt(report: Any) -> None:
        if report.error is not None:
            stream.flush()
        on_attempt(report)

    try:
        return await client.complete(request, stream, on_attempt=attempt)
    finally:
        stream.flush()
