"""MCP servers over SSE and streamable HTTP: the toolbox run as a real server on 127.0.0.1."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from magent.tools.setup import build_registry
from servers.harness import http_server, refused_url, write_mcp_file

pytestmark = pytest.mark.slow
TRANSPORTS = ["sse", "streamable_http"]


def http_registry(tmp_path: Path, transport: str, url: str, **extra):
    server = {"name": "web", "transport": transport, "config": {"url": url}, **extra}
    path = write_mcp_file(tmp_path / "mcp.yaml", [server], limits={"max_output_chars": 2000})
    return build_registry(mcp_files=[path], artifacts_dir=tmp_path / "artifacts", home_config=False)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_calls_failures_timeouts_and_big_outputs(tmp_path: Path, transport: str) -> None:
    # SSE events are capped at 1 MB by the SDK, so its big output stays under that.
    size = 400_000 if transport == "sse" else 1_500_000

    async def main(url: str):
        reg = http_registry(tmp_path, transport, url, tools={"hang": {"timeout_seconds": 1}})
        await reg.start()
        try:
            assert reg.start_errors == {}
            assert (await reg.call("web.add", {"a": 1, "b": 2})).content == "3"
            failed = await reg.call("web.fail", {"reason": "nope"})
            assert failed.outcome == "FAILURE" and "nope" in failed.content
            hung = await reg.call("web.hang", {})  # never returns: only the 1 s timeout ends it
            assert hung.outcome == "TIMEOUT" and "timed out after 1s" in hung.content
            assert (await reg.call("web.echo", {"text": "after"})).content == "after"  # same connection
            big = await reg.call("web.huge", {"size": size})
            assert big.outcome == "SUCCESS" and f"showing 2000 of {size} characters" in big.content
            assert len((tmp_path / big.artifact).read_text()) == size
        finally:
            await reg.close()

    with http_server(transport) as (url, _proc):
        asyncio.run(main(url))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_headers_carry_env_values(tmp_path: Path, transport: str, monkeypatch) -> None:
    monkeypatch.setenv("WEB_TOKEN", "tok-123456")

    async def main(url: str):
        path = tmp_path / "mcp.yaml"
        path.write_text(f"servers:\n  - name: web\n    transport: {transport}\n    config:\n"
                        f"      url: {url}\n      headers: {{Authorization: 'Bearer ${{WEB_TOKEN}}'}}\n")
        reg = build_registry(mcp_files=[path], home_config=False)
        await reg.start()
        try:
            return (await reg.call("web.whoami", {})).content
        finally:
            await reg.close()

    with http_server(transport) as (url, _proc):
        seen = asyncio.run(main(url))
    # The server saw the real header; what comes back to magent is redacted like any secret.
    assert seen == "Bearer ***"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_server_that_goes_away_is_an_error_then_a_clear_down_message(tmp_path: Path, transport: str) -> None:
    async def main(url: str, proc):
        # A connect timeout longer than the test's own: only a refusal can end the restart quickly.
        reg = http_registry(tmp_path, transport, url, connect_timeout_seconds=600)
        await reg.start()
        try:
            assert (await reg.call("web.echo", {"text": "x"})).ok
            proc.kill()
            proc.wait()
            lost = await reg.call("web.echo", {"text": "x"})
            assert lost.outcome == "ERROR" and "MCP server 'web'" in lost.content
            again = await reg.call("web.echo", {"text": "x"})  # the one restart: refused
            assert again.outcome == "ERROR" and "cannot connect (connection refused" in again.content
            down = await reg.call("web.echo", {"text": "x"})
            assert down.outcome == "ERROR" and "down" in down.content
        finally:
            await reg.close()

    with http_server(transport) as (url, proc):
        asyncio.run(main(url, proc))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_refused_url_is_one_clear_line_quickly(tmp_path: Path, transport: str) -> None:
    # The connect timeout is longer than the test's own: the refusal itself must end the start.
    async def main(url: str):
        reg = http_registry(tmp_path, transport, url, connect_timeout_seconds=600)
        await reg.start()
        res = await reg.call("web.echo", {"text": "x"})
        await reg.close()
        return reg.start_errors["web"], res

    with refused_url() as url:
        err, res = asyncio.run(main(url))
    assert err == f"MCP server 'web' ({url}) could not be reached: cannot connect (connection refused or host unreachable)"
    assert res.outcome == "ERROR" and err in res.content
