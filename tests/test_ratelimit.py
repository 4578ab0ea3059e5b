"""Tool rate limits (issue 13 item 5, seed 004): ``rate_limit: {calls, per_seconds}`` per tool or
per server in the MCP servers file; over the limit a call waits (bounded) or is refused as an
observation, and the limit holds across the concurrent calls of one model response."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from magent.models import RateLimit
from magent.tools.ratelimit import RateLimited, RateLimiter
from servers.harness import write_mcp_file
from support.cli import invoke
from support.engine import agent_yaml, events, task_dir, write


class FakeTime:
    """A clock that only moves when someone sleeps."""

    def __init__(self) -> None:
        self.now = 100.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


def limits(limiter: RateLimiter, tool: str = "s.t", own: RateLimit | None = None):
    return limiter.limits_for(tool, tool.split(".")[0], own)


def test_a_window_admits_its_calls_then_books_the_next_free_start() -> None:
    t = FakeTime()
    limiter = RateLimiter(clock=t.clock, sleep=t.sleep)
    own = RateLimit(calls=2, per_seconds=10)
    waits = [limiter.reserve(limits(limiter, own=own)).wait for _ in range(5)]
    # two now, two when the first two leave the window, the fifth ten seconds after that
    assert waits == [0, 0, 10, 10, 20]
    t.now += 25   # the window (115, 125] holds only the start booked at 120: one more fits now
    assert limiter.reserve(limits(limiter, own=own)).wait == 0
    assert limiter.reserve(limits(limiter, own=own)).wait == pytest.approx(5)


def test_refuse_and_max_wait_bound_the_wait_and_a_refusal_books_nothing() -> None:
    t = FakeTime()
    limiter = RateLimiter(clock=t.clock, sleep=t.sleep)
    refuse = RateLimit(calls=1, per_seconds=60, on_limit="refuse")
    limiter.reserve(limits(limiter, own=refuse))
    with pytest.raises(RateLimited, match=r"rate limited: tool s.t \(1 call per 60s\); the next call could "
                                          r"start in 60s"):
        limiter.reserve(limits(limiter, own=refuse))
    bounded = RateLimit(calls=1, per_seconds=60, max_wait_seconds=30)
    limiter.reserve(limits(limiter, "s.u", own=bounded))
    with pytest.raises(RateLimited, match="longer than max_wait_seconds"):
        limiter.reserve(limits(limiter, "s.u", own=bounded))
    t.now += 31   # the refused calls took no slot: 29 s to go now
    assert limiter.reserve(limits(limiter, "s.u", own=bounded)).wait == pytest.approx(29)


def test_a_call_needs_a_slot_in_its_own_window_and_its_servers() -> None:
    t = FakeTime()
    limiter = RateLimiter({"s": RateLimit(calls=3, per_seconds=10)}, clock=t.clock, sleep=t.sleep)
    loose = RateLimit(calls=100, per_seconds=1)
    waits = [limiter.reserve(limits(limiter, f"s.tool{i}", own=loose)).wait for i in range(4)]
    assert waits == [0, 0, 0, 10]   # four different tools, one server budget
    slot = limiter.reserve(limits(limiter, "s.tool9"))
    assert slot.wait == 10 and slot.limits == ["server 's' (3 calls per 10s)"]
    assert limiter.reserve(limits(limiter, "other.x")).wait == 0   # no limit at all


def test_concurrent_acquires_never_share_the_last_slot() -> None:
    t = FakeTime()
    limiter = RateLimiter(clock=t.clock, sleep=t.sleep)
    own = RateLimit(calls=2, per_seconds=1)
    admitted: list[float] = []

    async def call() -> None:
        await limiter.acquire(limits(limiter, own=own))
        admitted.append(t.now)

    async def all_at_once() -> None:
        await asyncio.gather(*(call() for _ in range(6)))

    asyncio.run(all_at_once())
    admitted.sort()
    assert len(admitted) == 6
    for i in range(len(admitted) - 2):   # any three consecutive starts span a whole window
        assert admitted[i + 2] - admitted[i] >= 1


# Through `magent run`, against a real MCP server: the toolbox the session shares (conftest toolbox_url).

def flow(folder: Path, script: str, url: str, *, server_limit: dict | None = None, tool_limit: dict | None = None
         ) -> Path:
    server = {"name": "tb", "transport": "streamable_http", "config": {"url": url}}
    if server_limit:
        server["rate_limit"] = server_limit
    if tool_limit:
        server["tools"] = {"stamp": {"rate_limit": tool_limit}}
    write_mcp_file(folder / "mcp.yaml", [server])
    write(folder, "a.script.yaml", script)
    return write(folder, "a.yaml", agent_yaml("a", "[tb.*]", "mcp_servers: mcp.yaml\n"))


THREE_STAMPS = """
responses:
  - tool_calls:
      - {name: tb.stamp, arguments: {label: one}}
      - {name: tb.stamp, arguments: {label: two}}
      - {name: tb.stamp, arguments: {label: three}}
  - content: done
"""


def stamps(task_id: str) -> dict[str, float]:
    out = {}
    for entry in task_dir(task_id).entries.load().values():
        if entry.role == "tool" and not entry.content.startswith("["):
            label, when = entry.content.split()
            out[label] = float(when)
    return out


def test_over_the_limit_a_call_waits_for_its_slot(tmp_path: Path, toolbox_url: str) -> None:
    target = flow(tmp_path, THREE_STAMPS, toolbox_url, tool_limit={"calls": 2, "per_seconds": 1.5})
    before = time.time()
    result = invoke("run", str(target), "-t", "stamp three times", "--no-input")
    assert result.code == 0, result.out + result.err
    task_id = result.out.split()[1]
    got = stamps(task_id)
    assert set(got) == {"one", "two", "three"}
    # Whatever the machine's speed: two calls could start at once, the third only a window later.
    assert sorted(got.values())[2] >= before + 1.5
    notes = [n for e in events(task_id) if e.type == "tool_result" for n in e.field("notes") or []]
    assert len(notes) == 1 and notes[0].startswith("waited ")
    assert "for the rate limit of tool tb.stamp (2 calls per 1.5s)" in notes[0]
    trace = invoke("trace", task_id[:8], "--json")
    assert "for the rate limit of tool tb.stamp" in trace.out


def test_a_refused_call_is_an_observation_the_model_sees(tmp_path: Path, toolbox_url: str) -> None:
    target = flow(tmp_path, THREE_STAMPS, toolbox_url, server_limit={"calls": 2, "per_seconds": 3600, "on_limit": "refuse"})
    result = invoke("run", str(target), "-t", "stamp three times", "--no-input")
    assert result.code == 0, result.out + result.err
    task_id = result.out.split()[1]
    assert len(stamps(task_id)) == 2
    outcomes = sorted(e.field("outcome") for e in events(task_id) if e.type == "tool_result")
    assert outcomes == ["ERROR", "SUCCESS", "SUCCESS"]
    refused = [e for e in task_dir(task_id).entries.load().values()
               if e.role == "tool" and e.content.startswith("[ERROR]")]
    assert len(refused) == 1
    assert refused[0].content.startswith("[ERROR] rate limited: server 'tb' (2 calls per 3600s); "
                                         "the next call could start in ")


@pytest.mark.parametrize("limit,message", [
    ({"calls": 0, "per_seconds": 1}, "servers[0].rate_limit.calls: expected more than 0"),
    ({"calls": 2, "per_seconds": 0}, "servers[0].rate_limit.per_seconds: expected more than 0"),
    ({"calls": 2, "per_seconds": 1, "on_limit": "sleep"}, "servers[0].rate_limit.on_limit: 'sleep' is not "
                                                           "one of wait, refuse"),
    ({"calls": 2}, "servers[0].rate_limit.per_seconds: missing required field 'per_seconds'"),
])
def test_a_bad_rate_limit_is_a_config_error_naming_the_field(tmp_path: Path, limit: dict, message: str) -> None:
    path = write_mcp_file(tmp_path / "mcp.yaml", [{"name": "tb", "transport": "stdio",
                                                   "config": {"command": "x"}, "rate_limit": limit}])
    result = invoke("validate", str(path))
    assert result.code == 2
    assert message in result.err, result.err
