"""Many runs at once from the Python API (what a batch runner does, issue 15).

Runs N copies of a small agent (three model turns of a double that waits 50 ms
each, like a fast hosted model, and a key-value tool call per turn) one after the
other with ``magent.run`` and all at once with ``asyncio.gather(magent.arun(...))``
in one event loop, each in its own home. Prints the median wall time over repeats
and the speed-up: the runs' waits on the model overlap, and so do their waits on the
disk for entries and checkpoints (group commits in threads, store/commit.py); what
is still done on the event loop's thread (task.json, the lock's note and trace.json,
each written atomically with its fsyncs, and the CPU work) concurrent runs take
turns at.
Usage: python benchmarks/api_concurrency.py [repeats]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import magent  # noqa: E402
from magent.testing import FunctionModel  # noqa: E402

AGENT = """name: worker
role: bench
system_prompt: Work.
tools: [kv.*]
llm_config: {model: openai/gpt-4o-mini}
"""
MODEL_WAIT = 0.05


async def reply(request):
    await asyncio.sleep(MODEL_WAIT)
    turns = sum(1 for m in request.messages if m.role == "tool")
    if turns < 2:
        return {"tool_calls": [{"name": "kv.set", "arguments": {"key": f"k{turns}", "value": "v"}}]}
    return "done"


def sequential(agent: Path, root: Path, n: int) -> float:
    started = time.perf_counter()
    for i in range(n):
        result = magent.run(agent, f"job {i}", llm=FunctionModel(reply), home=root / f"s{i}")
        assert result.success, result.error
    return time.perf_counter() - started


def concurrent(agent: Path, root: Path, n: int) -> float:
    async def all_at_once() -> None:
        definition = magent.load(agent)
        results = await asyncio.gather(*(magent.arun(definition, f"job {i}", llm=FunctionModel(reply),
                                                     home=root / f"c{i}") for i in range(n)))
        assert all(r.success for r in results)

    started = time.perf_counter()
    asyncio.run(all_at_once())
    return time.perf_counter() - started


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        agent = folder / "worker.yaml"
        agent.write_text(AGENT)
        sequential(agent, folder / "warm", 1)
        print(f"{'runs':>5} {'one by one':>11} {'all at once':>12} {'speed-up':>9} {'per run (at once)':>18}")
        for n in (1, 10, 50):
            seq, con = [], []
            for r in range(repeats):
                seq.append(sequential(agent, folder / f"seq{n}-{r}", n))
                con.append(concurrent(agent, folder / f"con{n}-{r}", n))
            s, c = statistics.median(seq), statistics.median(con)
            print(f"{n:>5} {s:>10.2f}s {c:>11.2f}s {s / c:>8.1f}x {c / n * 1000:>16.0f} ms")
        print(f"(each run: 3 model calls that wait {MODEL_WAIT * 1000:.0f} ms, 2 tool calls; median of {repeats})")


if __name__ == "__main__":
    main()
