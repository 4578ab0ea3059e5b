"""CPU per model call: magent's litellm client against the OpenAI SDK on the same endpoint (issue 34).

Starts ``model_server.py`` with no latency and, in this process, makes CALLS chat calls of the
throughput workload's shape (a system and a user message, one tool) in each of four ways,
interleaved in blocks, CONCURRENT at a time: through ``LiteLLMClient.complete`` (magent's whole
path: retries, tool names, usage and cost) with no one reading the tokens (asked whole, as a
batch row or an API call without ``on_token`` is) and with a token sink (streamed, as the live
view is), and through ``openai.AsyncOpenAI`` directly, whole and streamed (the stream drained).
Prints the CPU per call of each and the ratio of each magent mode to the SDK in the same mode
(goal: at most 1.5). ``--profile FILE`` writes a cProfile of magent's whole calls there (read it
with ``python -m pstats FILE``) and prints the 25 costliest functions by own time.

    python benchmarks/model_call.py [CALLS=400] [--concurrency 16] [--profile FILE]

What it showed (litellm 1.110, openai 3.57, a busy 2-core machine): streamed, magent ~10.4 ms a
call against the SDK's ~2.6 (4x): litellm's streaming path (each chunk rebuilt, the whole
response rebuilt from its chunks in a thread, then its success handler: logging payload and a
cost lookup, run for every call with no callback set), which no public setting turns off.
Whole, ~4.5 ms against the SDK's ~2.4: what is left is litellm's own request building (run in a
thread executor per call), its logging object and cost lookup; see the report of issue 34 for
the smallest change of stack that would reach 1.5x.
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


def listening(text: str) -> None:
    """A token sink: with one, magent asks for the reply as a stream."""


async def through_magent(client, url: str, n: int, c: int, sink=None) -> None:  # type: ignore[no-untyped-def]
    gate = asyncio.Semaphore(c)

    async def one(i: int) -> None:
        async with gate:
            reply = await client.complete(magent_request(url, i), sink)
            assert reply.tool_calls, reply

    await asyncio.gather(*(one(i) for i in range(n)))


async def through_sdk(client, n: int, c: int, stream: bool = False) -> None:  # type: ignore[no-untyped-def]
    gate = asyncio.Semaphore(c)

    async def one(i: int) -> None:
        async with gate:
            messages = [{"role": "system", "content": "Work."}, {"role": "user", "content": f"job {i}"}]
            if stream:
                chunks = await client.chat.completions.create(
                    model="stub", messages=messages, tools=[TOOL], stream=True,
                    stream_options={"include_usage": True}, temperature=0.7)
                assert [chunk async for chunk in chunks]
            else:
                reply = await client.chat.completions.create(model="stub", messages=messages, tools=[TOOL],
                                                             temperature=0.7)
                assert reply.choices[0].message.tool_calls

    await asyncio.gather(*(one(i) for i in range(n)))


async def measure(url: str, calls: int, c: int, profile: str | None) -> dict[str, float]:
    import cProfile

    import openai

    from magent.llm.litellm_client import LiteLLMClient, warm

    warm()
    magent_client = LiteLLMClient()
    sdk = openai.AsyncOpenAI(base_url=url, api_key=KEY, max_retries=0)
    ways = {"magent whole": lambda n: through_magent(magent_client, url, n, c),
            "sdk whole": lambda n: through_sdk(sdk, n, c),
            "magent streamed": lambda n: through_magent(magent_client, url, n, c, listening),
            "sdk streamed": lambda n: through_sdk(sdk, n, c, stream=True)}
    for way in ways.values():  # first calls import and connect: not counted
        await way(c)
    spent = dict.fromkeys(ways, 0.0)
    profiler = cProfile.Profile() if profile else None
    block = max(c, 50)
    rounds = max(calls // block, 1)
    for _ in range(rounds):
        for name, way in ways.items():
            watched = profiler is not None and name == "magent whole"
            began = time.process_time()
            if watched:
                profiler.enable()
            await way(block)
            if watched:
                profiler.disable()
            spent[name] += time.process_time() - began
    if profiler and profile:
        import pstats

        profiler.dump_stats(profile)
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)
    return {name: total / (rounds * block) for name, total in spent.items()}


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
        cpu = asyncio.run(measure(url, a.calls, a.concurrency, a.profile))
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    print(f"CPU per call ({a.calls} calls each way, {a.concurrency} at once; goal: magent <= 1.5x the SDK):")
    for mode in ("whole", "streamed"):
        lean, direct = cpu[f"magent {mode}"], cpu[f"sdk {mode}"]
        print(f"  {mode:8} magent (litellm) {lean * 1000:5.2f} ms, OpenAI SDK {direct * 1000:5.2f} ms, "
              f"ratio {lean / direct:.2f}")


if __name__ == "__main__":
    main()
