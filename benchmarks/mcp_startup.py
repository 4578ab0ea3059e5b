"""Benchmark: start-up of three MCP servers for one run ≈ the slowest one, not their sum.

Three copies of the toolbox test server over stdio, made to take different times
to come up (``TOOLBOX_START_DELAY`` 0, 1 and 2 s before serving). First each is
started alone (connect, initialize, list tools, close) to get its own start-up
time; then all three are started together by ``ToolRegistry.start``, the way a
run starts the servers it needs. Medians over ``--runs``.

    python benchmarks/mcp_startup.py [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLBOX = ROOT / "tests" / "servers" / "toolbox.py"
DELAYS = {"fast": 0.0, "medium": 1.0, "slow": 2.0}


def mcp_file(tmp: Path) -> Path:
    lines = ["servers:"]
    for name, delay in DELAYS.items():
        lines += [f"  - name: {name}", "    transport: stdio",
                  f"    config: {{command: {sys.executable}, args: [{TOOLBOX}], "
                  f"env: {{TOOLBOX_START_DELAY: '{delay}'}}}}"]
    path = tmp / "mcp.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


async def timed_start(path: Path, only: set[str]) -> float:
    from magent.tools.setup import build_registry

    registry = build_registry(mcp_files=[path], home_config=False)
    began = time.perf_counter()
    await registry.start(only=only)
    took = time.perf_counter() - began
    await registry.close()
    if registry.start_errors:
        raise SystemExit(f"a server failed to start: {registry.start_errors}")
    return took


async def main(runs: int) -> tuple[float, float, float]:
    alone: dict[str, list[float]] = {n: [] for n in DELAYS}
    together: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = mcp_file(Path(tmp))
        await timed_start(path, {"fast"})  # warm the file cache for the imports
        for _ in range(runs):
            for name in DELAYS:
                alone[name].append(await timed_start(path, {name}))
            together.append(await timed_start(path, set(DELAYS)))
    medians = {n: statistics.median(v) for n, v in alone.items()}
    slowest, total, both = max(medians.values()), sum(medians.values()), statistics.median(together)
    for name, value in medians.items():
        print(f"{name:7s} alone: median {value:.2f} s")
    print(f"sum of the three alone: {total:.2f} s; slowest alone: {slowest:.2f} s")
    print(f"all three together:     median {both:.2f} s  "
          f"(together/slowest = {both / slowest:.2f}, together/sum = {both / total:.2f})")
    return slowest, total, both


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    opts = parser.parse_args()
    slowest, total, both = asyncio.run(main(opts.runs))
    sys.exit(0 if both < total * 0.75 else 1)
