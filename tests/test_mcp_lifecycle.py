"""Which servers a run starts, when, and for how long; and the published reference server."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pytest

from magent.tools.setup import build_registry, start_with_imports
from servers.harness import TOOLBOX, pid_gone, process_ended, stdio_server, write_mcp_file

pytestmark = pytest.mark.slow


def test_three_servers_start_together(tmp_path: Path) -> None:
    # Each server waits for the other two before it answers: started one after another,
    # the first would wait alone and fail to start.
    meet = tmp_path / "meet"
    meet.mkdir()
    names = ["first", "second", "third"]
    servers = [stdio_server(n, env={"TOOLBOX_MEET": f"{meet}:3"}, connect_timeout_seconds=60) for n in names]
    reg = build_registry(mcp_files=[write_mcp_file(tmp_path / "mcp.yaml", servers)], home_config=False)

    async def main():
        await reg.start(only=set(names))
        await reg.close()

    asyncio.run(main())
    assert reg.start_errors == {}
    assert len(list(meet.iterdir())) == 3


def test_only_the_named_servers_start_and_others_start_on_first_use(tmp_path: Path) -> None:
    servers = [stdio_server("needed"), stdio_server("later"), stdio_server("never")]
    reg = build_registry(mcp_files=[write_mcp_file(tmp_path / "mcp.yaml", servers)], home_config=False)
    patterns = ["needed.*", "kv.get"]
    assert reg.servers_for(patterns) == {"needed", "kv"}
    assert reg.unknown_servers(["needed.echo", "nosuch.tool"]) == ["nosuch.tool"]

    async def main():
        await reg.start(only=reg.servers_for(patterns))
        started_first = reg.started
        known = {t.server for t in reg.all_tools()}
        later = await reg.call("later.echo", {"text": "on demand"})
        started_after = reg.started
        await reg.close()
        return started_first, known, later, started_after

    started_first, known, later, started_after = asyncio.run(main())
    assert started_first == {"needed", "kv"} and known == {"needed", "kv"}
    assert later.ok and later.content == "on demand"
    assert started_after == {"needed", "kv", "later"}


def test_servers_start_while_a_heavy_module_imports(tmp_path: Path) -> None:
    reg = build_registry(mcp_files=[write_mcp_file(tmp_path / "mcp.yaml", [stdio_server("tb")])],
                         home_config=False)

    async def main():
        await start_with_imports(reg, {"tb"}, modules=("json", "email.mime.text"))
        try:
            return (await reg.call("tb.echo", {"text": "ok"})).content
        finally:
            await reg.close()

    assert asyncio.run(main()) == "ok"
    assert "email.mime.text" in sys.modules


def test_the_reference_time_server_over_stdio(tmp_path: Path) -> None:
    """``mcp-server-time`` (installed by .ci/run from the test extras) is found beside this Python."""
    command = shutil.which("mcp-server-time") or str(Path(sys.executable).parent / "mcp-server-time")
    assert Path(command).exists(), "mcp-server-time is not installed: pip install -e '.[test]'"
    path = write_mcp_file(tmp_path / "mcp.yaml", [
        {"name": "time", "transport": "stdio", "config": {"command": "mcp-server-time"}}])
    reg = build_registry(mcp_files=[path], home_config=False)

    async def main():
        await reg.start()
        try:
            tools = {t.full_name: t for t in reg.all_tools()}
            now = await reg.call("time.get_current_time", {"timezone": "UTC"})
            converted = await reg.call("time.convert_time", {
                "source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})
            bad = await reg.call("time.get_current_time", {"timezone": "Mars/Olympus_Mons"})
            return tools, now, converted, bad
        finally:
            await reg.close()

    tools, now, converted, bad = asyncio.run(main())
    assert {"time.get_current_time", "time.convert_time"} <= set(tools)
    assert now.outcome == "SUCCESS" and json.loads(now.content)["timezone"] == "UTC"
    assert converted.outcome == "SUCCESS" and json.loads(converted.content)["target"]["datetime"].endswith("T21:00:00+09:00")
    assert bad.outcome == "FAILURE" and "Mars/Olympus_Mons" in bad.content


def test_a_server_stopped_by_close_does_not_linger_even_after_a_restart(tmp_path: Path) -> None:
    reg = build_registry(mcp_files=[write_mcp_file(tmp_path / "mcp.yaml", [stdio_server("tb")])],
                         home_config=False)

    async def main():
        await reg.start()
        first = int((await reg.call("tb.pid", {})).content)
        await reg.call("tb.crash", {})
        second = int((await reg.call("tb.pid", {})).content)
        await reg.close()
        return first, second

    first, second = asyncio.run(main())
    assert first != second
    assert pid_gone(first) and pid_gone(second)


def _children_outlive(tmp_path: Path, server: dict, pidfile: Path, *calls: str) -> list[int]:
    """Start ``server``, make ``calls``, close; the pids in ``pidfile`` that still run."""
    reg = build_registry(mcp_files=[write_mcp_file(tmp_path / "mcp.yaml", [server])], home_config=False)

    async def main():
        await reg.start()
        try:
            for call in calls:
                await reg.call(call, {"text": "hi"} if call == "tb.echo" else {})
        finally:
            await reg.close()

    asyncio.run(main())
    assert reg.start_errors == {}, reg.start_errors
    children = [int(line) for line in pidfile.read_text().split()]
    assert len(children) >= 1
    return [pid for pid in children if not process_ended(pid)]


def test_a_server_that_forks_a_helper_leaves_no_child_behind(tmp_path: Path) -> None:
    """The server stops when its stdin closes; its helper would live on with ppid 1."""
    pidfile = tmp_path / "child.pid"
    server = stdio_server("tb", env={"TOOLBOX_CHILD_PIDFILE": str(pidfile)})
    assert _children_outlive(tmp_path, server, pidfile, "tb.echo") == []


def test_a_crashed_servers_helper_is_ended_with_it(tmp_path: Path) -> None:
    """The server exits at once (a crash); its helper is ended too, and the restarted
    server's helper at close."""
    pidfile = tmp_path / "child.pid"
    server = stdio_server("tb", env={"TOOLBOX_CHILD_PIDFILE": str(pidfile)})
    assert _children_outlive(tmp_path, server, pidfile, "tb.crash", "tb.echo") == []
    assert len(pidfile.read_text().split()) == 2


def test_a_server_under_a_shell_wrapper_leaves_no_background_job_behind(tmp_path: Path) -> None:
    pidfile = tmp_path / "job.pid"
    wrapper = f'sleep 3600 & echo $! > "{pidfile}"; exec "{sys.executable}" "{TOOLBOX}"'
    server = {"name": "tb", "transport": "stdio", "config": {"command": "sh", "args": ["-c", wrapper]}}
    assert _children_outlive(tmp_path, server, pidfile, "tb.echo") == []


def test_a_timed_out_servers_child_is_ended_with_it(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    server = stdio_server("tb", env={"TOOLBOX_CHILD_PIDFILE": str(pidfile)}, tools={"hang": {"timeout_seconds": 1}})
    assert _children_outlive(tmp_path, server, pidfile, "tb.hang") == []
