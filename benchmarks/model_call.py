"""CPU per model call: magent's litellm client against the OpenAI SDK on the same endpoint (issue 34).

Starts ``model_server.py`` with no latency and, in this process, makes CALLS streamed chat
calls of the throughput workload's shape (a system and a user message, one tool) through
``LiteLLMClient.complete`` (magent's whole path: retries, streaming, tool names, usage and
cost) and CALLS through ``openai.AsyncOpenAI`` directly (``stream=True``, the stream drained),
interleaved in blocks, CONCURRENT at a time. Prints the CPU per call of each and the ratio
(goal: at most 1.5). ``--profile FILE`` writes a cProfile of the litellm calls there (read it
with ``python -m pstats FILE``) and prints the 25 costliest functions by own time.

    python benchmarks/model_call.py [CALLS=400] [--concurrency 16] [--profile FILE]

What it showed (litellm 1.110, openai 3.57, a busy 2-core machine): magent 11.2 ms a call, a bare
``litellm.acompletion(stream=True)`` 11.6 ms, ``stream=False`` 4.3-5.8 ms, the SDK 2.9 ms. magent's
own share is small once the model map is asked once per model; the rest is litellm's streaming
path (``stream_chunk_builder`` in a thread, then its success handler: logging payload and a cost
lookup, run for every call with no callback set), which no public setting turns off. The
smallest change that would reach 1.5x: ask litellm without streaming when nobody listens to the
tokens (a batch row, the API without ``on_token``), or call OpenAI-compatible endpoints through
the openai SDK that litellm already brings, keeping litellm for other providers and prices.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["MAGENT_FORBID_REMOTE_LLM"] = "1"
HERE = Path(__file__).resolve().parent
KEY = "sk-bench-not-a-key"
TOOL = {"type": "function", "function": {"name": "kv__set", "description": "Set a key.", "parameters": {
    "type": "object", "properties": {"key": {"type": "string"}, "value": {"type": "string"}},
    "required": ["key", "value"]}}}


def magent_request(url: str, i: int):  # type: ignore[no-untyped-def]
    from magent.llm.base import LLMRequest, ToolSpec
    from magent.models import Message

    return LLMRequest(model="openai/stub", endpoint=url, api_key=KEY, system="Work.",
                      messages=[Message(role="user", content=f"job {i}")],
                      tools=[ToolSpec(name="kv.set", description="Set a key.",
                                      parameters=TOOL["function"]["parameters"])])


async def through_magent(client, url: str, n: int, c: int) -> None:  # type: ignore[no-untyped-def]
    gate = asyncio.Semaphore(c)

    async def one(i: int) -> None:
        async with gate:
            reply = await client.complete(magent_request(url, i))
            assert reply.tool_calls, reply

    await asyncio.gather(*(one(i) for i in range(n)))


async def through_sdk(client, n: int, c: int) -> None:  # type: ignore[no-untyped-def]
    gate = asyncio.Semaphore(c)

    async def one(i: int) -> None:
        async with gate:
            stream = await client.chat.completions.create(
                model="stub", messages=[{"role": "system", "content": "Work."}, {"role": "user", "content": f"job {i}"}],
                tools=[TOOL], stream=True, stream_options={"include_usage": True}, temperature=0.7)
            calls = [chunk async for chunk in stream]
            assert calls

    await asyncio.gather(*(one(i) for i in range(n)))


async def measure(url: str, calls: int, c: int, profile: str | None) -> tuple[float, float]:
    import cProfile

    import openai

    from magent.llm.litellm_client import LiteLLMClient, warm

    warm()
    magent_client = LiteLLMClient()
    sdk = openai.AsyncOpenAI(base_url=url, api_key=KEY, max_retries=0)
    await through_magent(magent_client, url, c, c)  # first calls import and connect: not counted
    await through_sdk(sdk, c, c)
    spent = {"magent": 0.0, "sdk": 0.0}
    profiler = cProfile.Profile() if profile else None
    block = max(c, 50)
    for _ in range(max(calls // block, 1)):
        began = time.process_time()
        if profiler:
            profiler.enable()
        await through_magent(magent_client, url, block, c)
        if profiler:
            profiler.disable()
        spent["magent"] += time.process_time() - began
        began = time.process_time()
        await through_sdk(sdk, block, c)
        spent["sdk"] += time.process_time() - began
    done = max(calls // block, 1) * block
    if profiler and profile:
        import pstats

        profiler.dump_stats(profile)
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)
    return spent["magent"] / done, spent["sdk"] / done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("calls", nargs="?", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--profile")
    a = parser.parse_args()
    server = subprocess.Popen([sys.executable, str(HERE / "model_server.py"), "0"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        lean, direct = asyncio.run(measure(url, a.calls, a.concurrency, a.profile))
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    print(f"CPU per call: magent (litellm) {lean * 1000:.2f} ms, OpenAI SDK {direct * 1000:.2f} ms, "
          f"ratio {lean / direct:.2f} (goal <= 1.5; {a.calls} calls each, {a.concurrency} at once)")


if __name__ == "__main__":
    main()
