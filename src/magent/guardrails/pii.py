"""Finding personal data in text: where each match is, and what kind it is.

Each entity has a candidate regex and, where its format has one, a check that a candidate must
pass (python-stdnum: Luhn, SSN rules, Verhoeff, DNI letter, IBAN mod 97; phonenumbers for phones
valid in their country or ``phone_region``), so an order number is not taken for a card.
``national_id`` stands for ``us_ssn``, ``uk_nino``, ``in_aadhaar`` and ``es_dni``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterator

NATIONAL_IDS = ("us_ssn", "uk_nino", "in_aadhaar", "es_dni")
ENTITIES = ("email", "phone", "card", *NATIONAL_IDS, "iban")
GROUPS = {"national_id": NATIONAL_IDS}


@dataclass(frozen=True)
class Match:
    start: int
    end: int
    entity: str


def _valid(module: str) -> Callable[[str], bool]:
    def check(candidate: str) -> bool:
        import importlib

        return bool(importlib.import_module(f"stdnum.{module}").is_valid(candidate))

    return check


# An email is found from its "@" (a pattern that started at every letter would retry each word);
# the local part is then read backwards.
_EMAIL_DOMAIN = re.compile(r"@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
_EMAIL_LOCAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-")
# Stretches of text that could hold a phone number: phonenumbers reads only those (it is slow on prose).
_PHONE_CANDIDATE = re.compile(r"\+?\(?\d[\d\s().\-/]{5,}\d")
_SHAPES: dict[str, tuple[re.Pattern[str], Callable[[str], bool]]] = {
    "card": (re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])"),
             lambda s: _valid("luhn")(re.sub(r"\D", "", s))),
    "us_ssn": (re.compile(r"(?<!\d)\d{3}-\d{2}-\d{4}(?!\d)"), _valid("us.ssn")),
    "uk_nino": (re.compile(r"\b(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
                           r" ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b"), lambda s: True),
    "in_aadhaar": (re.compile(r"(?<!\d)[2-9]\d{3} ?\d{4} ?\d{4}(?!\d)"), _valid("in_.aadhaar")),
    "es_dni": (re.compile(r"(?<![\dA-Z])\d{8}-?[A-Z](?![A-Za-z\d])"), _valid("es.dni")),
    "iban": (re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b"), _valid("iban")),
}
# When two findings overlap, the earlier entity here wins (an IBAN's digits are not a card).
_PRIORITY = ("email", "iban", "card", "us_ssn", "uk_nino", "in_aadhaar", "es_dni", "phone")


def expand(names: list[str]) -> list[str]:
    """Entity names with groups (``national_id``) expanded, in ``ENTITIES`` order."""
    wanted = set()
    for name in names:
        wanted.update(GROUPS.get(name, (name,)))
    return [e for e in ENTITIES if e in wanted]


def find(text: str, entities: list[str], phone_region: str | None = "US") -> list[Match]:
    """Non-overlapping matches of ``entities`` in ``text``, in order of position."""
    kept: list[Match] = []
    for entity in sorted(entities, key=_PRIORITY.index):
        for m in _find_one(text, entity, phone_region, kept):
            if all(m.end <= k.start or m.start >= k.end for k in kept):
                kept.append(m)
    return sorted(kept, key=lambda m: m.start)


def _find_one(text: str, entity: str, phone_region: str | None, found: list[Match]) -> Iterator[Match]:
    """Matches of ``entity``; ``found`` (entities that win over it) lets phone detection skip
    stretches already taken, such as the digits of a card number."""
    if entity == "email":
        for m in _EMAIL_DOMAIN.finditer(text):
            start = m.start()
            while start > 0 and text[start - 1] in _EMAIL_LOCAL:
                start -= 1
            if start < m.start() and not (start > 0 and text[start - 1].isalnum()):
                yield Match(start, m.end(), entity)
    elif entity == "phone":
        import phonenumbers

        for candidate in _PHONE_CANDIDATE.finditer(text):
            at = candidate.start()
            if any(k.start <= at and candidate.end() <= k.end for k in found):
                continue
            for m in phonenumbers.PhoneNumberMatcher(candidate.group(0), phone_region,
                                                     leniency=phonenumbers.Leniency.VALID):
                yield Match(at + m.start, at + m.end, entity)
    else:
        shape, valid = _SHAPES[entity]
        for m in shape.finditer(text):
            if valid(m.group(0)):
                yield Match(m.start(), m.end(), entity)


def valid_region(region: str) -> bool:
    import phonenumbers

    return region in phonenumbers.SUPPORTED_REGIONS


def mask(text: str, matches: list[Match], replacement: str | None) -> str:
    """``text`` with each match replaced by ``replacement`` or its entity's tag (``[EMAIL]``)."""
    out, at = [], 0
    for m in matches:
        out.append(text[at:m.start])
        out.append(replacement if replacement is not None else f"[{m.entity.upper()}]")
        at = m.end
    out.append(text[at:])
    return "".join(out)


LABELS = {"email": ("email address", "email addresses"), "phone": ("phone number", "phone numbers"),
          "card": ("card number", "card numbers"), "us_ssn": ("US social security number", "US social "
                                                                "security numbers"),
          "uk_nino": ("UK national insurance number", "UK national insurance numbers"),
          "in_aadhaar": ("Aadhaar number", "Aadhaar numbers"), "es_dni": ("Spanish DNI", "Spanish DNIs"),
          "iban": ("IBAN", "IBANs")}


def describe(counts: dict[str, int]) -> str:
    """``1 email address, 2 phone numbers``."""
    return ", ".join(f"{n} {LABELS[e][0 if n == 1 else 1]}" for e, n in counts.items())
