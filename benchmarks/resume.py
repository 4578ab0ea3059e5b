"""Resume of a long task to its first new model call (issue 4).

Builds a task whose agent took N tool turns (each tool result 10,000 bytes), then
paused at a human node; resumes it with --approve (in-process, so the time is
magent's, not Python's start-up) and times the moment the next agent's model is
called. Compares with simply reading and parsing the task's entries.jsonl, for
several N, to show resume grows no faster than reading the entries.
Usage: python benchmarks/resume.py [repeats]
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from long_react import PAYLOAD, timed_factory, write_agent  # noqa: E402


def echo_provider():
    from magent.tools.function import FunctionProvider

    def echo(n: int) -> str:
        text = f"{n}:"
        return text + "x" * (PAYLOAD - len(text))

    tools = FunctionProvider("bench")
    tools.add("echo", echo, "Echo n, padded to 10,000 bytes.",
              {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}, idempotent=True)
    return tools


def build(folder: Path, n: int) -> Path:
    write_agent(folder, n)
    (folder / "after.script.yaml").write_text("responses:\n  - content: thanks\n")
    (folder / "after.yaml").write_text("name: after\nrole: closer\nsystem_prompt: close\n"
                                       "llm_config: {model: scripted, script: after.script.yaml}\n")
    flow = folder / "flow.yaml"
    flow.write_text("name: longpause\nentry_point: work\nnodes:\n  work: {type: agent, agent: long}\n"
                    "  ask: {type: human, prompt: ok}\n  close: {type: agent, agent: after}\n"
                    "edges:\n  - {from: work, to: ask}\n  - {from: ask, to: close}\n")
    return flow


async def make_task(home: Path, flow: Path) -> str:
    os.environ["MAGENT_HOME"] = str(home)
    from magent.engine.context import RunOptions
    from magent.engine.graph import load_target
    from magent.engine.session import start_run

    outcome = await start_run(load_target(str(flow)), "bench", options=RunOptions(extra_providers=[echo_provider()]))
    assert outcome.status.value == "awaiting_human", outcome
    return outcome.task_id


async def time_resume(home: Path, task_id: str) -> float:
    os.environ["MAGENT_HOME"] = str(home)
    from magent.engine.context import RunOptions
    from magent.engine.session import Decision, resume_run

    first: list[tuple[float, float]] = []  # (wall, process CPU) at each model call
    factory = timed_factory(first)

    started = time.perf_counter()
    outcome = await resume_run(task_id, decision=Decision(action="approve"),
                               options=RunOptions(llm_factory=factory, extra_providers=[echo_provider()]))
    assert outcome.status.value == "completed", outcome
    return first[0][0] - started


def read_entries(path: Path) -> float:
    started = time.perf_counter()
    with open(path, "rb") as fh:
        for line in fh:
            json.loads(line)
    return time.perf_counter() - started


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (250, 500, 1000):
            base = Path(tmp) / f"n{n}"
            (base / "defs").mkdir(parents=True)
            flow = build(base / "defs", n)
            task_id = asyncio.run(make_task(base / "home", flow))
            entries = base / "home" / "tasks" / task_id / "entries.jsonl"
            resumes, reads = [], []
            for r in range(repeats):
                copy = base / f"copy{r}"
                shutil.copytree(base / "home", copy)
                reads.append(read_entries(copy / "tasks" / task_id / "entries.jsonl"))
                resumes.append(asyncio.run(time_resume(copy, task_id)))
                shutil.rmtree(copy)
            rows.append((n, statistics.median(resumes), statistics.median(reads), entries.stat().st_size))
    print(f"resume to first new model call ({repeats} repeats, medians)")
    for n, resume, read, size in rows:
        print(f"  N={n:5}  resume {resume * 1000:7.1f} ms   read+parse entries.jsonl ({size / 1e6:.1f} MB) "
              f"{read * 1000:6.1f} ms   ratio {resume / read:.1f}")
    n, resume, _, _ = rows[-1]
    print(f"  target: N=1000 resume <= 500 ms -> {resume * 1000:.0f} ms")
    growth_resume = rows[-1][1] / rows[0][1]
    growth_read = rows[-1][2] / rows[0][2]
    print(f"  growth 250 -> 1000: resume x{growth_resume:.2f}, reading entries x{growth_read:.2f}")


if __name__ == "__main__":
    main()
