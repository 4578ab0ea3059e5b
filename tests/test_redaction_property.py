"""The redactor's shortcuts never change what it masks.

``Redactor`` searches for the patterns only in a text that holds a built-in pattern's start,
screens an event's JSON whole, and masks a streamed reply piece by piece. Over many random texts
(seeded ``random``: the same cases on every run, no extra dependency) each of its ways of masking
gives what the plain way gives: replace every secret, longest first, then one search-and-replace
of all the patterns.
"""

from __future__ import annotations

import json
import random
import re
import string
from typing import Iterator

import pytest
from pydantic_core import to_jsonable_python

from magent.redact import BUILT_IN, DEFAULT_PATTERNS, MASK, Redactor, alternative
from magent.redact_stream import StreamMask
from magent.store.files import dumps

CONFIGURED = ("ACME-[0-9]{8}", "(?i)tok_[0-9]{4}", r"pin:\s*[0-9]{4}")
PATTERN_SETS = [DEFAULT_PATTERNS, DEFAULT_PATTERNS + CONFIGURED, CONFIGURED, ()]
TOKEN = string.ascii_letters + string.digits + "_-."
FILLER = string.ascii_letters + string.digits + " _-.:/\"\\\n\té✓"


def plain(secrets: set[str], patterns: tuple[str, ...], text: str) -> str:
    """Masking with no shortcut at all."""
    for secret in sorted((s for s in secrets if len(s) >= 4), key=len, reverse=True):
        text = text.replace(secret, MASK)
    if patterns:
        text = re.sub("|".join(alternative(p) for p in patterns), MASK, text)
    return text


def _run(rng: random.Random, alphabet: str, low: int, high: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(low, high)))


def key_shaped(rng: random.Random) -> str:
    """Something that is, or nearly is, a key one of the patterns masks."""
    return rng.choice([
        lambda: rng.choice(["sk-", "SK-", "sk_"]) + _run(rng, TOKEN, 10, 24),
        lambda: "AKIA" + _run(rng, string.ascii_uppercase + string.digits, 12, 18),
        lambda: "gh" + rng.choice("pousrx") + "_" + _run(rng, string.ascii_letters + string.digits, 25, 35),
        lambda: "xox" + rng.choice("abprsz") + "-" + _run(rng, string.ascii_letters + string.digits + "-", 5, 14),
        lambda: "AIza" + _run(rng, TOKEN, 30, 37),
        lambda: rng.choice("Bb") + rng.choice(["earer", "EARER", "earer:"]) + rng.choice([" ", "  ", "\t", "\n", ""])
        + _run(rng, TOKEN, 10, 20),
        lambda: "ACME-" + _run(rng, string.digits, 6, 9),
        lambda: rng.choice(["tok_", "TOK_", "Tok_"]) + _run(rng, string.digits, 3, 5),
        lambda: "pin:" + rng.choice(["", " ", "\n"]) + _run(rng, string.digits, 3, 5),
    ])()


def random_text(rng: random.Random, secrets: list[str]) -> str:
    pieces = []
    for _ in range(rng.randint(0, 10)):
        roll = rng.random()
        if roll < 0.25 and secrets:
            secret = rng.choice(secrets)
            pieces.append(secret if rng.random() < 0.7 else secret[:rng.randint(1, len(secret))])
        elif roll < 0.55:
            pieces.append(key_shaped(rng))
        elif roll < 0.6:
            pieces.append(_run(rng, FILLER, 60, 400))
        else:
            pieces.append(_run(rng, FILLER, 0, 12))
    return "".join(pieces)


def random_secrets(rng: random.Random) -> list[str]:
    secrets = [_run(rng, string.ascii_letters + string.digits + "\"\\/+=&-", 3, 14) for _ in range(rng.randint(0, 4))]
    if secrets and rng.random() < 0.3:  # a secret that holds another
        secrets.append(secrets[0] + _run(rng, string.ascii_letters, 1, 4))
    return secrets


def cases(name: str, patterns: tuple[str, ...], count: int) -> Iterator[tuple[random.Random, list[str], Redactor]]:
    """``count`` random sets of secrets, each with a redactor of them and ``patterns``."""
    rng = random.Random(f"{name} {patterns}")
    for _ in range(count):
        secrets = random_secrets(rng)
        yield rng, secrets, Redactor(set(secrets), patterns)


@pytest.mark.parametrize("patterns", PATTERN_SETS, ids=["built-in", "both", "configured", "none"])
def test_screened_masking_is_the_plain_masking(patterns: tuple[str, ...]) -> None:
    for rng, secrets, redactor in cases("text", patterns, 300):
        texts = [random_text(rng, secrets) for _ in range(8)]
        for text in texts:
            assert redactor.text(text) == plain(set(secrets), patterns, text), text
        later = secrets + random_secrets(rng)
        redactor.add(set(later))  # a secret learned later is masked in texts seen before
        for text in texts:
            assert redactor.text(text) == plain(set(later), patterns, text), text


@pytest.mark.parametrize("patterns", PATTERN_SETS, ids=["built-in", "both", "configured", "none"])
def test_an_event_line_is_the_event_masked_field_by_field(patterns: tuple[str, ...]) -> None:
    for rng, secrets, redactor in cases("json", patterns, 300):
        doc = {"type": "x", "text": random_text(rng, secrets), random_text(rng, secrets): 1,
               "list": [random_text(rng, secrets), {"deep": random_text(rng, secrets)}, 2.5, None]}
        line = redactor.json_line(doc)
        assert line == dumps(to_jsonable_python(redactor.data(doc)))
        assert json.loads(line)["text"] == plain(set(secrets), patterns, doc["text"])


@pytest.mark.parametrize("patterns", PATTERN_SETS, ids=["built-in", "both", "configured", "none"])
def test_a_streamed_text_is_masked_as_the_whole_text(patterns: tuple[str, ...]) -> None:
    for rng, secrets, redactor in cases("stream", patterns, 200):
        text = random_text(rng, secrets)
        out: list[str] = []
        stream = StreamMask(redactor, out.append)
        at = 0
        while at < len(text):
            step = rng.randint(1, 8)
            stream(text[at:at + step])
            at += step
        stream.flush()
        assert "".join(out) == plain(set(secrets), patterns, text), text


def test_every_built_in_match_starts_with_one_of_its_starts() -> None:
    """What the screen relies on, checked on matches of each built-in pattern found in random
    key-shaped texts (every start is also seen to begin a match)."""
    rng = random.Random("starts")
    seen: set[str] = set()
    for _ in range(5000):
        text = _run(rng, FILLER, 0, 3) + key_shaped(rng)
        for pattern, shape in BUILT_IN.items():
            for match in re.finditer(pattern, text):
                assert match.group().startswith(shape.starts), (pattern, match.group())
                seen.update(s for s in shape.starts if match.group().startswith(s))
    assert seen == {s for shape in BUILT_IN.values() for s in shape.starts}


def test_no_built_in_match_is_shorter_than_its_shortest() -> None:
    """What lets ``text`` leave shorter texts unsearched, checked on random key-shaped texts
    (each pattern is also seen to match a text of exactly that length)."""
    rng = random.Random("shortest")
    lengths: dict[str, set[int]] = {pattern: set() for pattern in BUILT_IN}
    for _ in range(5000):
        text = key_shaped(rng)
        for pattern, shape in BUILT_IN.items():
            for match in re.finditer(pattern, text):
                assert len(match.group()) >= shape.shortest, (pattern, match.group())
                lengths[pattern].add(len(match.group()))
    assert {p: min(found) for p, found in lengths.items()} == {p: s.shortest for p, s in BUILT_IN.items()}

