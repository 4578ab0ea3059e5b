"""Benchmark: a 2,000-turn conversation with a 4,000-token context budget (issue 12 item 2).

One agent on the scripted model; each turn calls an in-process tool ``note(n)`` that returns
about 300 characters, and after N turns it answers. The same run is made twice: with
``memory_config: {short_term: {max_tokens: 4000, strategy: fifo}}`` and with no budget.

Printed per configuration: the median time per turn (durable writes included) over the
first 100 and the last 100 turns and their ratio (flat: about 1), the tokens sent by the
first, the middle and the last request, the largest request, how many compactions were
made, and the time of the whole run. With the budget, no request may send more than
4,000 tokens (the scripted model reports ceil(characters / 4) of what it was sent).

    python benchmarks/context_budget.py [--turns 2000] [--budget 4000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

RESULT = 300
WINDOW = 100


def write_agent(folder: Path, turns: int, budget: int | None) -> Path:
    lines = ["responses:"]
    for i in range(turns):
        lines.append(f"  - content: Noting item {i} of the inventory.")
        lines.append("    tool_calls:")
        lines.append(f"      - {{name: bench.note, arguments: {{n: {i}}}}}")
    lines.append("  - content: All items noted.")
    (folder / "script.yaml").write_text("\n".join(lines) + "\n")
    memory = (f"memory_config: {{short_term: {{max_tokens: {budget}, strategy: fifo}}}}\n"
              if budget else "")
    agent = folder / "inventory.yaml"
    agent.write_text(
        "name: inventory\nrole: benchmark\nsystem_prompt: Note every item, one per turn.\n"
        f"tools: [bench.note]\nmax_iterations: {turns + 5}\n{memory}"
        "llm_config: {model: scripted, script: script.yaml}\n")
    return agent


async def one_run(turns: int, budget: int | None, home: Path) -> dict:
    os.environ["MAGENT_HOME"] = str(home)
    from magent.engine.context import RunOptions
    from magent.engine.graph import load_target
    from magent.engine.session import start_run
    from magent.store.tasks import Store
    from magent.tools.function import FunctionProvider

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from long_react import timed_factory  # magent's model factory, noting when each call starts

    folder = home.parent / f"defs-{budget or 'none'}"
    folder.mkdir(exist_ok=True)
    graph = load_target(str(write_agent(folder, turns, budget)))

    def note(n: int) -> str:
        text = f"item {n}: "
        return text + "shelf, bin and count checked; " * ((RESULT - len(text)) // 30)

    tools = FunctionProvider("bench")
    tools.add("note", note, "Note item n.", {"type": "object", "properties": {"n": {"type": "integer"}},
                                             "required": ["n"]}, idempotent=True)
    stamps: list[tuple[float, float]] = []  # (wall, process CPU) at each model call
    started = time.perf_counter()
    outcome = await start_run(graph, "Note every item of the inventory", options=RunOptions(
        llm_factory=timed_factory(stamps), extra_providers=[tools]))
    total = time.perf_counter() - started
    td = Store().task(outcome.task_id)
    tokens = []
    for line in (td.path / "events.jsonl").read_text().splitlines():
        ev = json.loads(line)
        if ev.get("type") == "llm_call" and not ev.get("error"):
            tokens.append(ev["tokens_in"])
    compactions = sum(1 for e in td.entries.load().values() if e.entry_type == "compaction")
    gaps = [(b[0] - a[0]) * 1000 for a, b in zip(stamps, stamps[1:])]
    return {"status": outcome.status.value, "total": total, "gaps": gaps, "tokens": tokens,
            "compactions": compactions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--budget", type=int, default=4000)
    args = parser.parse_args()
    window = min(WINDOW, max(args.turns // 4, 1))
    print(f"{args.turns} turns, a tool result of ~{RESULT} characters each; per-turn medians over the "
          f"first and last {window} turns")
    print(f"{'budget':>12} {'first ms':>9} {'last ms':>9} {'ratio':>6} {'tokens t1':>10} {'t mid':>8} "
          f"{'t last':>8} {'max':>8} {'compactions':>12} {'run s':>7}")
    for budget in (args.budget, None):
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp) / "home"
            r = asyncio.run(one_run(args.turns, budget, home))
        if r["status"] != "completed":
            sys.exit(f"the run with budget {budget} ended {r['status']}")
        first = statistics.median(r["gaps"][:window])
        last = statistics.median(r["gaps"][-window:])
        t = r["tokens"]
        label = f"fifo {budget}" if budget else "none"
        print(f"{label:>12} {first:9.2f} {last:9.2f} {last / first:6.2f} {t[0]:10,} {t[len(t) // 2]:8,} "
              f"{t[-1]:8,} {max(t):8,} {r['compactions']:12,} {r['total']:7.1f}")
        if budget and max(t) > budget:
            sys.exit(f"a request sent {max(t):,} tokens, over the budget of {budget:,}")


if __name__ == "__main__":
    main()
