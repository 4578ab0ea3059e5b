"""Benchmark: ``magent trace ID`` on a 1,000-step task (target: median <= 0.5 s).

Runs a real task in-process first: one agent whose model (a ``magent.testing``
double) calls a tool 1,000 times, the tool returning 10,000 bytes each time,
then a final answer. Then times ``magent trace ID`` as a subprocess (stdout to a
pipe, so plain text), from the finished task's trace.json and, with
``--from-events``, with trace.json removed (the path a running task takes).
Also prints the task's bytes on disk per file kind.

    python benchmarks/trace_view.py [--steps 1000] [--runs 7] [--home DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AGENT = """\
name: worker
role: Reads pages until it has read them all
system_prompt: Read every page, then summarise.
tools: [bench.read_page]
max_iterations: {iterations}
llm_config:
  model: bench-double
"""


def build_task(home: Path, steps: int, result_bytes: int = 10_000) -> str:
    """Run a ``steps``-turn task under ``home``; returns its id."""
    os.environ["MAGENT_HOME"] = str(home)
    from magent.engine.context import RunOptions
    from magent.engine.graph import load_target
    from magent.engine.session import start_run
    from magent.llm.base import LLMResponse, LLMToolCall
    from magent.testing import client_factory
    from magent.tools.function import FunctionProvider

    agent_file = home / "worker.yaml"
    home.mkdir(parents=True, exist_ok=True)
    agent_file.write_text(AGENT.format(iterations=steps + 5))
    graph = load_target(str(agent_file))

    class Reader:
        """Asks for one page per turn, then answers (no copies of the growing conversation)."""

        turns = 0

        def supports_tools(self, model: str) -> bool:
            return True

        async def complete(self, request, on_token=None, *, on_attempt=None):
            self.turns += 1
            n = self.turns
            if n <= steps:
                return LLMResponse(content=f"Reading page {n}.", model=request.model, provider="bench",
                                   tokens_in=900 + n, tokens_out=40, cost=0.00001, latency_ms=1,
                                   stop_reason="tool_calls",
                                   tool_calls=[LLMToolCall(id=f"call_{n}", name="bench.read_page",
                                                           arguments={"page": n})])
            return LLMResponse(content=f"Read {steps} pages.", model=request.model, provider="bench",
                               tokens_in=2000, tokens_out=10, latency_ms=1, stop_reason="stop")

    tools = FunctionProvider("bench")
    line = "lorem ipsum dolor sit amet " * 4 + "\n"
    page_text = (line * (result_bytes // len(line) + 1))[:result_bytes]

    def read_page(page: int = 0) -> str:
        return page_text

    tools.add("read_page", read_page, "Read one page",
              {"type": "object", "properties": {"page": {"type": "integer"}}, "required": ["page"]})
    options = RunOptions(llm_factory=client_factory(Reader()), extra_providers=[tools])
    outcome = asyncio.run(start_run(graph, f"read {steps} pages", options=options))
    return outcome.task_id


def time_command(args: list[str], runs: int, env: dict[str, str]) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "magent", *args], capture_output=True, env=env)
        times.append(time.perf_counter() - started)
        if p.returncode != 0:
            raise SystemExit(f"magent {' '.join(args)} failed ({p.returncode}): {p.stderr.decode()[-500:]}")
    return times


def sizes(task_dir: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for path in task_dir.rglob("*"):
        if path.is_file():
            key = "checkpoints" if path.name.startswith("checkpoint_") else path.name \
                if path.parent == task_dir else path.parent.name
            out[key] = out.get(key, 0) + path.stat().st_size
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--home", type=Path, default=None, help="keep the home here (default: a temp dir)")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = opts.home or Path(tmp) / "home"
        started = time.perf_counter()
        task_id = build_task(home, opts.steps)
        print(f"built a {opts.steps}-step task in {time.perf_counter() - started:.1f} s: {task_id}")
        task_dir = home / "tasks" / task_id
        by_kind = sizes(task_dir)
        total = sum(by_kind.values())
        print("bytes on disk: " + ", ".join(f"{k} {v:,}" for k, v in sorted(by_kind.items()))
              + f"; total {total:,} ({total / (opts.steps * 10_000):.2f} × steps × 10,000)")
        env = {**os.environ, "MAGENT_HOME": str(home)}
        env.pop("FORCE_COLOR", None)
        times = time_command(["trace", task_id[:8]], opts.runs, env)
        print(f"magent trace ID (trace.json): median {statistics.median(times):.3f} s "
              f"(min {min(times):.3f}, max {max(times):.3f}, {opts.runs} runs)")
        (task_dir / "trace.json").rename(task_dir / "trace.json.bak")
        times = time_command(["trace", task_id[:8]], opts.runs, env)
        (task_dir / "trace.json.bak").rename(task_dir / "trace.json")
        print(f"magent trace ID (from events.jsonl): median {statistics.median(times):.3f} s "
              f"(min {min(times):.3f}, max {max(times):.3f}, {opts.runs} runs)")
        times = time_command(["trace", task_id[:8], "--json"], max(3, opts.runs // 2), env)
        print(f"magent trace ID --json: median {statistics.median(times):.3f} s")
        times = time_command(["--help"], opts.runs, env)
        print(f"(magent --help for comparison: median {statistics.median(times):.3f} s)")


if __name__ == "__main__":
    main()
