"""Driving ``magent mcp serve`` in tests: the server as a subprocess, the mcp SDK's client."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, AsyncIterator

ROOT = Path(__file__).resolve().parent.parent.parent
WRITE_REVIEW = str(ROOT / "examples/workflows/write_review.yaml")
PUBLISH = str(ROOT / "examples/workflows/publish.yaml")
TEMPLATED = str(ROOT / "examples/workflows/templated_reply.yaml")


@contextlib.asynccontextmanager
async def stdio_session(*targets: str, wait: float = 60, env: dict[str, str] | None = None,
                        elicitation: Any = None, heard: list[Any] | None = None) -> AsyncIterator[Any]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "magent", "mcp", "serve", "--wait-seconds", str(wait), *targets],
        env={**os.environ, **(env or {})})
    # errlog given: the SDK's default is the sys.stderr of when it was first imported, which
    # may be a CliRunner's stream (an in-process command imported it) that has no file number
    async with stdio_client(params, errlog=sys.stderr) as (read, write):
        async def on_message(message: Any) -> None:
            if heard is not None:
                heard.append(message)

        async with ClientSession(read, write, elicitation_callback=elicitation,
                                 message_handler=on_message) as session:
            await session.initialize()
            yield session


def reply(result: Any) -> dict[str, Any]:
    assert result.structured_content is not None, result.content[0].text
    return dict(result.structured_content)


@contextlib.asynccontextmanager
async def http_session(url: str, token: str | None = None) -> AsyncIterator[Any]:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with create_mcp_http_client(headers=headers) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def wait_for_nap(home: Path, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = list((home / "tasks").glob("*/events.jsonl"))
        if found and '"tool":"ledger.nap"' in found[0].read_text():
            time.sleep(0.3)
            return
        time.sleep(0.1)
    raise AssertionError("the run never reached ledger.nap")


def serving_child() -> int:
    """The pid of the ``magent mcp serve`` this test process started."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(stat[1]) == os.getpid() and b"serve" in cmdline and b"mcp" in cmdline:
            return int(entry.name)
    raise AssertionError("no magent mcp serve child found")


def http_server(*targets: str, env: dict[str, str] | None = None, host: str = "127.0.0.1"
                ) -> tuple[subprocess.Popen[bytes], str]:
    from servers.harness import _wait_listening, free_port

    for _attempt in range(3):
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "magent", "mcp", "serve", "--transport", "streamable-http",
                                 "--port", str(port), "--host", host, *targets], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, env={**os.environ, **(env or {})})
        if _wait_listening(proc, port):
            return proc, f"http://127.0.0.1:{port}/mcp"
        proc.kill()
        proc.wait()
    raise RuntimeError("magent mcp serve did not start")
