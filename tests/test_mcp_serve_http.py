"""``magent mcp serve --transport streamable-http``: on 127.0.0.1, with a bearer token off it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from support.cli import invoke
from support.mcpserve import PUBLISH, WRITE_REVIEW, http_server, http_session, reply

pytestmark = pytest.mark.slow


def test_streamable_http_on_127_0_0_1_runs_and_resumes(magent_home: Path) -> None:
    proc, url = http_server(WRITE_REVIEW, PUBLISH)

    async def main() -> tuple[list[str], dict[str, Any], dict[str, Any], str]:
        async with http_session(url) as s:
            names = [t.name for t in (await s.list_tools()).tools]
            done = reply(await s.call_tool("write_review", {"task": "Copy for Tidy"}))
            paused = reply(await s.call_tool("publish", {"task": "Office closed Friday"}))
            resumed = reply(await s.call_tool("resume", paused["resume_call"]["arguments"]))
            trace = await s.read_resource(f"magent://tasks/{done['task_id']}/trace")
            return names, done, resumed, trace.contents[0].text

    try:
        names, done, resumed, trace = asyncio.run(main())
    finally:
        proc.kill()
        proc.wait()
    assert names[:2] == ["write_review", "publish"]
    assert done["status"] == "completed" and resumed["status"] == "completed"
    assert json.loads(trace)["task_id"] == done["task_id"]
    assert len(json.loads(invoke("tasks", "list", "--json").out)) == 2


def test_a_client_of_the_2026_protocol_runs_and_hears_progress_over_http(magent_home: Path) -> None:
    from mcp.client import Client

    proc, url = http_server(WRITE_REVIEW)
    heard: list[str] = []

    async def progress(count: float, total: float | None, message: str | None) -> None:
        heard.append(message or "")

    async def main() -> tuple[str, dict[str, Any]]:
        async with Client(url) as client:            # discovers the server, no initialize handshake
            done = await client.call_tool("write_review", {"task": "Copy for Tidy"}, progress_callback=progress)
            return client.protocol_version, reply(done)

    try:
        version, done = asyncio.run(main())
    finally:
        proc.kill()
        proc.wait()
    assert version >= "2026-07-28" and done["status"] == "completed"
    assert "node review started" in heard


def test_http_with_a_token_refuses_requests_without_it(magent_home: Path) -> None:
    import httpx2

    proc, url = http_server(WRITE_REVIEW, env={"MAGENT_MCP_TOKEN": "s3cret-token"})
    try:
        refused = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        wrong = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                            headers={"Authorization": "Bearer nope"})

        async def main() -> list[str]:
            async with http_session(url, token="s3cret-token") as s:
                return [t.name for t in (await s.list_tools()).tools]

        names = asyncio.run(main())
    finally:
        proc.kill()
        proc.wait()
    assert refused.status_code == 401 and wrong.status_code == 401
    assert names[0] == "write_review"


def test_http_off_the_loopback_prints_a_token_once_and_requires_it(magent_home: Path) -> None:
    import httpx2

    proc, url = http_server(WRITE_REVIEW, host="0.0.0.0")
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline().decode()
        token = first.split("Bearer ", 1)[1].split("'", 1)[0]
        refused = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})

        async def main() -> list[str]:
            async with http_session(url, token=token) as s:
                return [t.name for t in (await s.list_tools()).tools]

        names = asyncio.run(main())
    finally:
        proc.kill()
        proc.wait()
    assert "MAGENT_MCP_TOKEN" in first and len(token) >= 32
    assert refused.status_code == 401 and names[0] == "write_review"
