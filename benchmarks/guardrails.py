"""Benchmark: what the pattern guardrails cost per text they check.

Each rail kind that needs no model (``pii`` with every entity, ``pii`` with emails
only, ``regex``, ``max_length``, ``json_schema``) screens texts of several sizes:
ordinary prose with a few pieces of personal data sprinkled in (one every ~500
characters). Prints the median time per check over repeats, and the rate in
characters per millisecond, next to the baseline of copying the text once (what a
tool result costs anyway on its way to an entry). Judges are left out: their cost
is a model call.

    python benchmarks/guardrails.py [--repeats 15] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from magent.config.yamlfile import load_file  # noqa: E402
from magent.guardrails.base import RailInput  # noqa: E402
from magent.guardrails.rails import compile_rails  # noqa: E402
from magent.models.guardrails import Guardrails  # noqa: E402

RAILS = {
    "pii (all entities)": "{type: pii}",
    "pii (email only)": "{type: pii, entities: [email]}",
    "regex (2 patterns)": "{type: regex, patterns: ['ACME-[0-9]{8}', '(?i)password\\s*[:=]\\s*\\S+']}",
    "max_length": "{type: max_length, max_words: 100000}",
    "json_schema": "{type: json_schema, schema: {type: object}}",
}
SIZES = (1_000, 20_000, 200_000)
PROSE = ("The parcel left the warehouse on Tuesday and should arrive before the weekend; the customer "
         "asked twice about the tracking number, which we sent again with an apology. ")
DATA = ["write to jane.roe@example.com", "call +44 20 7946 0958", "card 4111 1111 1111 1111",
        "SSN 123-45-6789", "IBAN GB82 WEST 1234 5698 7654 32"]


class NoModel:
    info = RailInput("input", "tool_result")

    async def ask(self, *args):  # type: ignore[no-untyped-def]
        raise AssertionError("no model here")


def text_of(size: int) -> str:
    parts, i = [], 0
    while sum(map(len, parts)) < size:
        parts.append(PROSE * 3 + DATA[i % len(DATA)] + ". ")
        i += 1
    return "".join(parts)[:size]


def build(spec: str):  # type: ignore[no-untyped-def]
    folder = Path(tempfile.mkdtemp())
    (folder / "rails.yaml").write_text(f"guardrails:\n  input:\n    - {spec}\n")
    source = load_file(folder / "rails.yaml")
    (rail,) = compile_rails(source, "bench", Guardrails.model_validate(source.data["guardrails"])).input
    return rail


def median_seconds(fn, repeats: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def median_check_seconds(rail, text: str, repeats: int) -> float:  # type: ignore[no-untyped-def]
    run = NoModel()
    await rail.check(text, run)  # warm: imports, compiled patterns
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        await rail.check(text, run)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for size in SIZES:
        text = text_of(size)
        baseline = median_seconds(lambda: bytearray(text.encode()), args.repeats)
        for label, spec in RAILS.items():
            seconds = asyncio.run(median_check_seconds(build(spec), text, args.repeats))
            rows.append({"rail": label, "chars": size, "median_ms": round(seconds * 1000, 3),
                         "chars_per_ms": round(size / (seconds * 1000)), "vs_copy": round(seconds / baseline, 1)})
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'rail':<22} {'chars':>8} {'median ms':>10} {'chars/ms':>9} {'x copy':>8}")
    for r in rows:
        print(f"{r['rail']:<22} {r['chars']:>8} {r['median_ms']:>10} {r['chars_per_ms']:>9} {r['vs_copy']:>8}")


if __name__ == "__main__":
    main()
