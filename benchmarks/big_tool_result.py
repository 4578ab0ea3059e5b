"""Benchmark: time of one tool call by the size of its result (issue 10, case 24: 20 MB took 57 s).

The project's toolbox test server runs over stdio; magent's ``ToolRegistry.call`` asks its
``huge`` tool for SIZE bytes of text: the reply crosses the pipe as one JSON-RPC line, is parsed,
converted, cut to ``limits.max_output_chars`` for the model, and the full copy is masked and
written to ``artifacts/``. Sizes alternate within each round so drift in machine load hits all
of them alike. Prints, per size, the median time of a call, the time per MB, and the marginal time
per MB (from the size before): linear when the marginal time stays flat as sizes grow. A fixed
cost per call (the round trip) makes small sizes look dear per MB.

``--old`` also times the line reader alone, the current one against the one it replaced (glue
each chunk onto the line so far, split it again), on the same bytes in the same run: that
quadratic reader is where 20 MB spent most of its 57 s.

    python benchmarks/big_tool_result.py [--sizes 1,5,10,20] [--rounds 3] [--old]
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
MB = 1_000_000
CHUNK = 32 * 1024
"""8 MB arrived in 248 reads when profiled: about 32 KiB each."""


async def main(sizes: list[float], rounds: int) -> None:
    from magent.tools.setup import build_registry

    with tempfile.TemporaryDirectory() as tmp:
        mcp_file = Path(tmp) / "mcp.yaml"
        mcp_file.write_text(f"servers:\n  - name: tb\n    transport: stdio\n"
                            f"    config: {{command: {sys.executable}, args: [{TOOLBOX}]}}\n")
        registry = build_registry(mcp_files=[mcp_file], home_config=False,
                                  artifacts_dir=Path(tmp) / "artifacts")
        registry.limits.artifacts_max_bytes = 10 * max(int(s * MB) for s in sizes) * (rounds + 1)
        await registry.start(only={"tb"})
        times: dict[float, list[float]] = {s: [] for s in sizes}
        try:
            async def call(size: float) -> float:
                began = time.perf_counter()
                result = await registry.call("tb.huge", {"size": int(size * MB)})
                took = time.perf_counter() - began
                assert result.ok and result.artifact, result.content[:200]
                return took

            await call(sizes[0])  # warm up: imports, validators
            for _ in range(rounds):
                for size in sizes:
                    times[size].append(await call(size))
        finally:
            await registry.close()
    print("one call through magent's MCP client (the server's own time included):")
    print(f"{'size':>8}  {'median':>9}  {'per MB':>9}  {'marginal per MB':>16}")
    previous = None
    for size in sizes:
        median = statistics.median(times[size])
        marginal = "" if previous is None else \
            f"{(median - previous[1]) / (size - previous[0]) * 1000:>14.0f}ms"
        print(f"{size:>6g}MB  {median:>8.2f}s  {median / size * 1000:>7.0f}ms  {marginal:>16}")
        previous = (size, median)


def old_reader(chunks: list[bytes]) -> int:
    """The reader before the fix, for comparison: quadratic in the length of a line."""
    buffer, count = b"", 0
    for chunk in chunks:
        lines = (buffer + chunk).split(b"\n")
        buffer = lines.pop()
        count += len(lines)
    return count


async def new_reader(chunks: list[bytes]) -> int:
    from magent.tools.mcp_process import _lines

    async def stream():
        for chunk in chunks:
            yield chunk

    return sum([1 async for _ in _lines(stream())])


def compare_readers(sizes: list[float], rounds: int) -> None:
    print(f"the line reader alone, on one line in {CHUNK // 1024} KiB chunks (the mean read from the pipe):")
    print(f"{'size':>8}  {'current':>9}  {'before the fix':>15}  {'ratio':>7}")
    for size in sizes:
        line = b"x" * int(size * MB) + b"\n"
        chunks = [line[i:i + CHUNK] for i in range(0, len(line), CHUNK)]
        new, old = [], []
        for _ in range(rounds):
            began = time.perf_counter()
            assert asyncio.run(new_reader(chunks)) == 1
            new.append(time.perf_counter() - began)
            began = time.perf_counter()
            assert old_reader(chunks) == 1
            old.append(time.perf_counter() - began)
        n, o = statistics.median(new), statistics.median(old)
        print(f"{size:>6g}MB  {n:>8.3f}s  {o:>14.2f}s  {o / n:>6.0f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,5,10,20", help="result sizes in MB, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--old", action="store_true", help="also time the line reader before the fix")
    args = parser.parse_args()
    sizes = [float(s) for s in args.sizes.split(",")]
    asyncio.run(main(sizes, args.rounds))
    if args.old:
        compare_readers(sizes, args.rounds)
