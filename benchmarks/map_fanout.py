"""Benchmark: a map over many items, and what a checkpoint costs as open branches grow (issue 11).

1. Map time. A ``map`` node over ITEMS items, a scripted model (no latency) and a tool that
   sleeps 50 ms (an in-process function tool, so the figure is magent's, not a server's).
   Each item is one session: a model turn asking for the tool, the call, a final turn. The
   ideal is ``ITEMS × 50 ms / max_concurrency``; printed: the median over the rounds and its
   ratio to the ideal, per max_concurrency. Every item writes three checkpoints and its entries;
   they are forced to the disk by group commits that run in threads while the other items go on
   (store/commit.py), so items waiting for the disk at the same time share its wait.
2. Checkpoint cost. In the same kind of run with max_concurrency = N and N items whose tool
   sleeps long enough for all N to be open at once, every checkpoint write is timed and
   sized by how many child sessions it lists. Printed per N (1, 10, 100): the median write
   time and size of the checkpoints that list N open sessions, and both divided by N: flat
   per-branch figures mean the cost grows with open branches only, never with history.

    python benchmarks/map_fanout.py [--items 100] [--rounds 3] [--concurrency 1,10,25,100]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SLEEP = 0.05


def setup(folder: Path, items: int, concurrency: int) -> Path:
    (folder / "w.script.yaml").write_text(
        "responses:\n  - tool_calls: [{name: nap.sleep, arguments: {}}]\n  - content: done\n")
    (folder / "w.yaml").write_text("name: w\nrole: worker\nsystem_prompt: work\ntools: [nap.*]\n"
                                   "llm_config: {model: scripted, script: w.script.yaml}\n")
    flow = folder / f"map{concurrency}.yaml"
    flow.write_text(f"name: bench\nentry_point: m\nmax_iterations: 5\nnodes:\n"
                    f"  m: {{type: map, agent: w, over: metadata.items, max_concurrency: {concurrency}}}\n")
    return flow


def nap_provider(seconds: float):  # type: ignore[no-untyped-def]
    from magent.tools.function import FunctionProvider

    async def sleep() -> str:
        await asyncio.sleep(seconds)
        return "slept"

    provider = FunctionProvider("nap")
    provider.add("sleep", sleep, "Sleep a little.", idempotent=True)
    return provider


def run_map(folder: Path, items: int, concurrency: int, seconds: float) -> float:
    from magent.engine.context import RunOptions
    from magent.engine.graph import load_target
    from magent.engine.session import start_run

    graph = load_target(str(setup(folder, items, concurrency)))
    options = RunOptions(extra_providers=[nap_provider(seconds)])
    began = time.perf_counter()
    outcome = asyncio.run(start_run(graph, "bench", initial={"metadata": {"items": list(range(items))}},
                                    options=options))
    took = time.perf_counter() - began
    assert outcome.status.value == "completed", outcome.error
    return took


def checkpoint_costs(folder: Path, n: int) -> tuple[float, int]:
    """Median write time (s) and size (bytes) of the checkpoints listing ``n`` open sessions."""
    from magent.store.checkpoints import CheckpointLog

    samples: list[tuple[float, int]] = []
    original = CheckpointLog.write

    def timed(self, checkpoint):  # type: ignore[no-untyped-def]
        began = time.perf_counter()
        written = original(self, checkpoint)
        took = time.perf_counter() - began
        if len(checkpoint.sessions) == n:
            samples.append((took, self.path(checkpoint.sequence).stat().st_size))
        return written

    CheckpointLog.write = timed  # type: ignore[method-assign]
    try:
        # Long enough that every item is open before the first finishes.
        run_map(folder, n, n, seconds=max(0.3, n * 0.02))
    finally:
        CheckpointLog.write = original  # type: ignore[method-assign]
    assert samples, f"no checkpoint listed {n} open sessions"
    return statistics.median(t for t, _ in samples), int(statistics.median(s for _, s in samples))


def measure(items: int = 100, concurrency: int = 10, rounds: int = 3) -> dict:
    """The map figure for the benchmark entry point: ``seconds`` (median over ``rounds``),
    ``ideal`` (items x 50 ms / concurrency) and ``ratio``."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["MAGENT_HOME"] = str(Path(tmp) / "home")
        run_map(Path(tmp), 4, 2, SLEEP)  # warm up: imports, validators
        median = statistics.median(run_map(Path(tmp), items, concurrency, SLEEP) for _ in range(rounds))
    ideal = items * SLEEP / concurrency
    return {"items": items, "concurrency": concurrency, "seconds": median, "ideal": ideal,
            "ratio": median / ideal}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", default="1,10,25,100")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["MAGENT_HOME"] = str(Path(tmp) / "home")
        folder = Path(tmp)
        run_map(folder, 4, 2, SLEEP)  # warm up: imports, validators
        print(f"map over {args.items} items, tool sleeps {SLEEP * 1000:.0f} ms, median of {args.rounds}")
        print(f"{'max_concurrency':>15}  {'ideal':>8}  {'measured':>9}  {'ratio':>6}")
        for c in [int(x) for x in args.concurrency.split(",")]:
            times = [run_map(folder, args.items, c, SLEEP) for _ in range(args.rounds)]
            ideal = args.items * SLEEP / c
            median = statistics.median(times)
            print(f"{c:>15}  {ideal:>7.2f}s  {median:>8.2f}s  {median / ideal:>6.2f}")
        print()
        print("checkpoints while N sessions are open (median over the checkpoints listing N)")
        print(f"{'open':>5}  {'write':>9}  {'size':>9}  {'write/branch':>12}  {'bytes/branch':>12}")
        for n in (1, 10, 100):
            took, size = checkpoint_costs(folder, n)
            print(f"{n:>5}  {took * 1000:>7.2f}ms  {size:>8}B  {took * 1e6 / n:>10.0f}µs  {size / n:>12.0f}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    main()
