"""Benchmark: per-call overhead of a tool call through magent vs a direct mcp SDK call (target: ratio <= 1.2).

Two copies of the project's toolbox test server run over stdio: one driven by the
SDK directly (``stdio_client`` + ``ClientSession.call_tool``), one by magent's
``ToolRegistry.call`` (schema check, timeout, result conversion, output limit).
Both call ``echo`` with the same small argument; rounds alternate between them
so drift in machine load hits both alike. Prints the median per-call time of
each and their ratio.

    python benchmarks/mcp_overhead.py [--calls 200] [--rounds 5]
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


async def main(calls: int, rounds: int) -> float:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from magent.tools.setup import build_registry

    with tempfile.TemporaryDirectory() as tmp:
        mcp_file = Path(tmp) / "mcp.yaml"
        mcp_file.write_text(f"servers:\n  - name: tb\n    transport: stdio\n"
                            f"    config: {{command: {sys.executable}, args: [{TOOLBOX}]}}\n")
        registry = build_registry(mcp_files=[mcp_file], home_config=False)
        await registry.start(only={"tb"})
        params = StdioServerParameters(command=sys.executable, args=[str(TOOLBOX)])
        direct_times: list[float] = []
        magent_times: list[float] = []
        try:
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                await session.list_tools()

                async def direct() -> None:
                    result = await session.call_tool("echo", {"text": "ping"}, read_timeout_seconds=300)
                    assert not result.is_error

                async def through_magent() -> None:
                    result = await registry.call("tb.echo", {"text": "ping"}, allowed={"tb.echo"})
                    assert result.ok, result.content

                for fn in (direct, through_magent):  # warm up both paths
                    for _ in range(20):
                        await fn()
                for _ in range(rounds):
                    for fn, out in ((direct, direct_times), (through_magent, magent_times)):
                        for _ in range(calls):
                            began = time.perf_counter()
                            await fn()
                            out.append(time.perf_counter() - began)
        finally:
            await registry.close()
    d, m = statistics.median(direct_times), statistics.median(magent_times)
    print(f"calls per path: {len(direct_times)} ({rounds} alternating rounds of {calls})")
    print(f"direct mcp SDK call_tool: median {d * 1000:.3f} ms")
    print(f"magent ToolRegistry.call: median {m * 1000:.3f} ms")
    print(f"ratio magent/direct: {m / d:.3f} (target <= 1.2)")
    return m / d


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    ratio = asyncio.run(main(opts.calls, opts.rounds))
    sys.exit(0 if ratio <= 1.2 else 1)
