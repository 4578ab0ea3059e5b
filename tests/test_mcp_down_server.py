"""A tool server that never answers: its calls answer at once with the cause and the time of the
next try, a try that is due waits and says so, and the trace's durations are the real ones
(issue 30, 3). The server is a real process over real stdio that reads and never replies."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from magent.tools import retry
from magent.tools.setup import build_registry
from servers.harness import write_mcp_file
from support.cli import UUID, run
from test_engine_tools import toolbox_flow

pytestmark = pytest.mark.slow

TIMEOUT = 2
SILENT = "import sys\nfor line in sys.stdin:\n    pass\n"
"""Reads the initialize request and every line after it, and answers none."""
THREE_CALLS = """
responses:
  - tool_calls: [{name: dead.echo, arguments: {text: a}}]
  - tool_calls: [{name: dead.echo, arguments: {text: b}}]
  - tool_calls: [{name: dead.echo, arguments: {text: c}}]
  - content: gave up
"""
RETRY_IN = re.compile(r"; next retry in (\d+)s$")


def silent_server(folder: Path) -> dict:
    """An MCP servers file entry for ``dead``, which never answers."""
    script = folder / "silent.py"
    script.write_text(SILENT)
    return {"name": "dead", "transport": "stdio", "connect_timeout_seconds": TIMEOUT,
            "config": {"command": sys.executable, "args": [str(script)]}}


def test_calls_to_a_server_that_never_answered_come_back_at_once_with_the_cause(
        tmp_path: Path, magent_home: Path) -> None:
    flow = toolbox_flow(tmp_path, THREE_CALLS, servers=[silent_server(tmp_path)])
    result = run("run", str(flow), "-t", "x", "--no-input")
    assert result.code == 0, result.out + result.err
    warning = next(line for line in result.err.splitlines() if "did not start" in line)
    assert f"did not answer within {TIMEOUT}s" in warning and RETRY_IN.search(warning)

    trace = run("trace", UUID.search(result.out).group(0), "--json")
    assert trace.code == 0, trace.err
    steps = json.loads(trace.out)["steps"]
    calls = [c for step in steps for c in step["tool_calls"]]
    assert len(calls) == 3
    # one wait of the connect timeout, at the start; none per call (there was one before each)
    told = next(at(s) for s in steps if s["step_name"] == "warning")
    last_turn = max(at(s) for s in steps if s["tool_calls"])
    assert last_turn - told < TIMEOUT / 2, f"the calls took {last_turn - told:.1f}s"
    for call in calls:
        assert call["outcome"] == "ERROR"
        assert "MCP server 'dead'" in call["error"] and f"did not answer within {TIMEOUT}s" in call["error"]
        assert 0 < int(RETRY_IN.search(call["error"]).group(1)) <= retry.FIRST_RETRY_SECONDS
        assert call["duration_ms"] < 1000  # none of them waited, and none says it did


def at(step: dict) -> float:
    return datetime.fromisoformat(step["timestamp"].replace("Z", "+00:00")).timestamp()


def test_a_retry_that_is_due_waits_for_the_server_and_the_call_says_how_long(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the engine does before each turn's calls (``ready``, then the call), with the first
    retry due after 1 s rather than 10."""
    monkeypatch.setattr(retry, "FIRST_RETRY_SECONDS", 1.0)
    mcp_file = write_mcp_file(tmp_path / "mcp.yaml", [silent_server(tmp_path)])
    registry = build_registry(mcp_files=[mcp_file], home_config=False)

    async def call() -> tuple[float, object]:
        began = time.monotonic()
        await registry.ready(["dead.echo"])
        result = await registry.call("dead.echo", {"text": "hi"})
        return time.monotonic() - began, result

    async def main() -> list[tuple[float, object]]:
        try:
            await registry.start()
            seen = [await call()]  # at once: the retry is not due
            await asyncio.sleep(1.2)
            seen.append(await call())  # due: it waits the connect timeout again, and fails
            seen.append(await call())  # at once again: the next retry is 2 s away
            return seen
        finally:
            await registry.close()

    (quick, first), (waited, second), (again, third) = asyncio.run(main())
    for result in (first, second, third):
        assert result.outcome == "ERROR" and f"did not answer within {TIMEOUT}s" in result.error
    assert quick < 0.5 and first.duration_ms < 500 and RETRY_IN.search(first.error).group(1) == "1"
    assert waited >= TIMEOUT and second.duration_ms >= TIMEOUT * 1000 - 50
    assert second.duration_ms <= waited * 1000 + 50
    assert RETRY_IN.search(second.error).group(1) == "2"  # twice as long after a second failure
    assert again < 0.5 and third.duration_ms < 500
