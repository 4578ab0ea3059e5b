"""``regex`` and ``pii`` rails: both can mask, and both are sensitive: what they find is never
written anywhere, not even in their reason (which only counts it)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Literal

from pydantic import Field

from magent.guardrails import pii
from magent.guardrails.base import Rail, RailConfig, RailConfigError, RailRun, Verdict
from magent.vocabulary import plural


class RegexConfig(RailConfig):
    type: Literal["regex"]
    patterns: list[str] = Field(min_length=1)
    """Regular expressions (Python syntax); any match trips the rail."""
    ignore_case: bool = False
    replacement: str = "[MASKED]"
    """What a match becomes with ``action: mask``."""


class RegexRail(Rail):
    kind = "regex"
    Config = RegexConfig
    can_mask = True
    sensitive = True

    def __init__(self, config: RegexConfig, **kw):  # type: ignore[no-untyped-def]
        super().__init__(config, **kw)
        flags = re.IGNORECASE if config.ignore_case else 0
        self.compiled: list[re.Pattern[str]] = []
        for i, pattern in enumerate(config.patterns):
            try:
                compiled = re.compile(pattern, flags)
            except re.error as exc:
                raise RailConfigError(f"not a regular expression: {exc}", "patterns", i) from None
            if compiled.fullmatch(""):
                raise RailConfigError("matches the empty string, so it would trip on every text",
                                      "patterns", i)
            self.compiled.append(compiled)

    async def check(self, text: str, run: RailRun) -> Verdict:
        counts: dict[int, int] = {}
        masked = text
        replacement: str = self.config.replacement  # type: ignore[attr-defined]
        for i, pattern in enumerate(self.compiled):
            masked, n = pattern.subn(lambda _: replacement, masked)  # literal, not a template
            if n:
                counts[i] = n
        if not counts:
            return Verdict(False)
        total = sum(counts.values())
        which = ", ".join(f"#{i + 1}" for i in counts)
        return Verdict(True, f"{plural(total, 'match', 'matches')} of pattern {which}", masked=masked,
                       findings={f"pattern {i + 1}": n for i, n in counts.items()})


class PIIConfig(RailConfig):
    type: Literal["pii"]
    action: Literal["block", "mask", "revise", "pause", "warn"] = "mask"
    entities: list[str] = Field(default_factory=lambda: list(pii.ENTITIES), min_length=1)
    """What to look for: ``email``, ``phone``, ``card``, ``us_ssn``, ``uk_nino``, ``in_aadhaar``,
    ``es_dni``, ``iban``, or ``national_id`` for all four national ids (default: everything)."""
    phone_region: str | None = "US"
    """Country (ISO 3166 code) whose national format numbers without ``+`` are read in; null: only
    international numbers count."""
    replacement: str | None = None
    """What a finding becomes with ``action: mask`` (default: its tag, e.g. ``[EMAIL]``)."""


class PIIRail(Rail):
    kind = "pii"
    Config = PIIConfig
    can_mask = True
    sensitive = True

    def __init__(self, config: PIIConfig, **kw):  # type: ignore[no-untyped-def]
        super().__init__(config, **kw)
        known = [*pii.ENTITIES, *pii.GROUPS]
        for i, name in enumerate(config.entities):
            if name not in known:
                raise RailConfigError(f"unknown entity {name!r}; known: {', '.join(known)}", "entities", i)
        if config.phone_region is not None and not pii.valid_region(config.phone_region):
            raise RailConfigError(f"{config.phone_region!r} is not a country code phonenumbers knows "
                                  "(use ISO 3166 codes such as US, GB, DE, IN)", "phone_region")
        self.entities = pii.expand(config.entities)

    async def check(self, text: str, run: RailRun) -> Verdict:
        config: PIIConfig = self.config  # type: ignore[assignment]
        matches = pii.find(text, self.entities, config.phone_region)
        if not matches:
            return Verdict(False)
        counts = dict(Counter(m.entity for m in matches))
        return Verdict(True, f"found {pii.describe(counts)}", masked=pii.mask(text, matches, config.replacement),
                       findings=counts)
