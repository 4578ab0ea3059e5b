"""A tool's input schema that changes during a run (the server's tools/list_changed, or a
restart after a crash that brings a new schema): calls are checked against the new one."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from magent.tools.setup import build_registry
from servers.harness import http_server, stdio_server, write_mcp_file

pytestmark = pytest.mark.slow


def registry_for(tmp_path: Path, *servers: dict) -> "object":
    path = write_mcp_file(tmp_path / "mcp.yaml", list(servers))
    return build_registry(mcp_files=[path], artifacts_dir=tmp_path / "artifacts", home_config=False)


def test_a_schema_changed_by_tools_list_changed_checks_the_next_calls(tmp_path: Path) -> None:
    async def main():
        reg = registry_for(tmp_path, stdio_server("tb"))
        await reg.start()
        try:
            assert (await reg.call("tb.pick", {"value": 5})).content == "picked 5"
            assert (await reg.call("tb.retype", {})).outcome == "SUCCESS"
            word = await reg.call("tb.pick", {"value": "five"})
            assert (word.outcome, word.content) == ("SUCCESS", "picked 'five'")
            assert reg.get("tb.pick").input_schema["properties"]["value"]["type"] == "string"
            number = await reg.call("tb.pick", {"value": 5})
            assert number.outcome == "ERROR" and "invalid arguments for tb.pick" in number.content
        finally:
            await reg.close()

    asyncio.run(main())


@pytest.mark.parametrize("transport", ["sse", "streamable_http"])
def test_tools_list_changed_over_http(tmp_path: Path, transport: str) -> None:
    async def main(url: str):
        reg = registry_for(tmp_path, {"name": "web", "transport": transport, "config": {"url": url}})
        await reg.start()
        try:
            assert (await reg.call("web.retype", {})).outcome == "SUCCESS"
            word = await reg.call("web.pick", {"value": "five"})
            assert (word.outcome, word.content) == ("SUCCESS", "picked 'five'"), word.content
        finally:
            await reg.close()

    with http_server(transport) as (url, _proc):
        asyncio.run(main(url))


def test_a_server_restarted_after_a_crash_with_a_new_schema_is_checked_against_it(tmp_path: Path) -> None:
    async def main():
        kind = tmp_path / "pick-type"
        reg = registry_for(tmp_path, stdio_server("tb", env={"TOOLBOX_PICK_FILE": str(kind)}))
        await reg.start()
        try:
            assert (await reg.call("tb.pick", {"value": 5})).content == "picked 5"
            kind.write_text("string")  # what the server offers when it starts again
            crashed = await reg.call("tb.crash", {})
            assert crashed.outcome == "ERROR" and "restarted for the next call" in crashed.content
            refused = await reg.call("tb.pick", {"value": 5})  # checked against the new schema
            assert refused.outcome == "ERROR" and "invalid arguments for tb.pick" in refused.content
            assert any("restarted MCP server 'tb' after it crashed" in n for n in refused.notes)
            word = await reg.call("tb.pick", {"value": "five"})
            assert (word.outcome, word.content) == ("SUCCESS", "picked 'five'"), word.content
            assert not any("restarted" in n for n in word.notes)  # said once, by the call that restarted it
        finally:
            await reg.close()

    asyncio.run(main())


def test_two_servers_with_a_tool_of_the_same_name_keep_their_own_schemas(tmp_path: Path) -> None:
    async def main():
        kind = tmp_path / "pick-type"
        kind.write_text("string")
        reg = registry_for(tmp_path, stdio_server("num"), stdio_server("word", env={"TOOLBOX_PICK_FILE": str(kind)}))
        await reg.start()
        try:
            assert (await reg.call("num.pick", {"value": 5})).content == "picked 5"
            assert (await reg.call("word.pick", {"value": "five"})).content == "picked 'five'"
            assert (await reg.call("word.pick", {"value": 5})).outcome == "ERROR"
            assert (await reg.call("num.pick", {"value": "five"})).outcome == "ERROR"
        finally:
            await reg.close()

    asyncio.run(main())
