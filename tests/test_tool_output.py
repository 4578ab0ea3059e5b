"""A tool's output as it happens (issue 32 item 4): the built-in shell tool's lines reach the live
view and ``--json --stream`` while the command runs, masked; events.jsonl keeps the result once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from magent.redact import MASK
from support.cli import invoke
from support.engine import write

KEY = "sk-live-typedbyaperson0123456789"
PRINTS = f"import time\nfor i in range(3):\n    print('line', i, '{KEY}', flush=True); time.sleep(0.6)"


def printer(folder: Path) -> Path:
    write(folder, "mcp.yaml", f"""
        builtins:
          shell: {{enabled: true, allow_commands: [{sys.executable}], timeout_seconds: 60}}
        """)
    command = json.dumps([sys.executable, "-c", PRINTS])
    write(folder, "printer.script.yaml", f"""
        responses:
          - tool_calls: [{{name: shell.run, arguments: {{command: {command}}}}}]
          - content: printed
        """)
    return write(folder, "printer.yaml", """
        name: printer
        role: prints lines slowly
        system_prompt: print
        tools: [shell.run]
        mcp_servers: mcp.yaml
        llm_config: {model: scripted, script: printer.script.yaml}
        """)


def test_shell_lines_stream_as_they_are_printed_and_only_the_result_is_kept(tmp_path: Path,
                                                                             magent_home: Path) -> None:
    agent = printer(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "magent", "run", str(agent), "-t", "go", "--no-input",
                             "--json", "--stream"], stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    arrived: list[tuple[float, dict]] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith('{"seq"'):
            arrived.append((time.monotonic(), json.loads(line)))
    assert proc.wait(timeout=60) == 0
    outputs = [(t, ev) for t, ev in arrived if ev["type"] == "tool_output"]
    assert [ev["line"] for _, ev in outputs] == [f"line {i} {MASK}" for i in range(3)]  # masked as it streams
    assert {(ev["tool"], ev["stream"]) for _, ev in outputs} == {("shell.run", "stdout")}
    (result_at,) = [t for t, ev in arrived if ev["type"] == "tool_result"]
    assert result_at - outputs[0][0] > 1.0  # the first line came while the command still ran
    # events.jsonl (and so the trace) keeps the result once, never the lines one by one.
    (events,) = (magent_home / "tasks").glob("*/events.jsonl")
    kept = [json.loads(line) for line in events.read_text().splitlines()]
    assert not [e for e in kept if e["type"] == "tool_output"]
    without_stream = invoke("run", str(agent), "-t", "go", "--no-input", "--json")
    assert '"tool_output"' not in without_stream.out


def test_the_live_view_shows_the_lines_under_the_call(tmp_path: Path, magent_home: Path) -> None:
    live = invoke("run", str(printer(tmp_path)), "-t", "go", "--no-input")
    assert live.code == 0, live.err
    lines = live.out.splitlines()
    call = next(i for i, line in enumerate(lines) if line.startswith("  → shell.run"))
    assert lines[call + 1:call + 4] == [f"  │ line {i} {MASK}" for i in range(3)]
    assert lines[call + 4].startswith("  ← SUCCESS")
    assert KEY not in live.out


def watched(tmp_path: Path, *calls: tuple[str, dict]) -> tuple[list, list[tuple[float, str, str]], float]:
    """Make ``calls`` on the toolbox server in turn, the first watched (its output lines kept, with
    when they came), the rest not; their results, the lines, and when the first call ended."""
    import asyncio

    from magent.tools.base import CallContext, calling
    from magent.tools.setup import build_registry
    from servers.harness import stdio_server, write_mcp_file

    path = write_mcp_file(tmp_path / "mcp.yaml", [stdio_server("tb")])
    reg = build_registry(mcp_files=[path], artifacts_dir=tmp_path / "artifacts", home_config=False)
    seen: list[tuple[float, str, str]] = []

    async def main():  # type: ignore[no-untyped-def]
        try:
            (name, args), *rest = calls
            with calling(CallContext(output=lambda stream, line: seen.append((time.monotonic(), stream, line)))):
                results = [await reg.call(name, args)]
            ended = time.monotonic()
            results += [await reg.call(n, a) for n, a in rest]
            return results, ended
        finally:
            await reg.close()

    results, ended = asyncio.run(main())
    return results, seen, ended


def test_mcp_progress_notifications_are_output_lines_as_they_come(tmp_path: Path) -> None:
    (result,), seen, ended = watched(tmp_path, ("tb.steps", {"count": 3}))
    assert result.outcome == "SUCCESS" and "took 3 steps" in result.content
    assert [(stream, line) for _, stream, line in seen] == [
        ("progress", f"{i}/3 step {i} done") for i in (1, 2, 3)]
    assert ended - seen[0][0] > 0.4  # the first came while the call still ran


def test_mcp_log_messages_are_output_lines_of_the_call_that_runs(tmp_path: Path) -> None:
    # the echo after it is not watched: the server's log lines go to the call in flight only
    (result, quiet), seen, ended = watched(tmp_path, ("tb.chatty", {"count": 2}), ("tb.echo", {"text": "after"}))
    assert result.outcome == "SUCCESS" and "did 2 parts" in result.content
    assert quiet.outcome == "SUCCESS"
    assert [(stream, line) for _, stream, line in seen] == [("log", f"info: part {i} of 2 done") for i in (1, 2)]
    assert ended - seen[0][0] > 0.2  # the first came while the call still ran


def test_an_mcp_servers_log_lines_show_in_the_live_view(tmp_path: Path, magent_home: Path) -> None:
    from servers.harness import stdio_server, write_mcp_file

    write_mcp_file(tmp_path / "mcp.yaml", [stdio_server("tb")])
    write(tmp_path, "chatty.script.yaml", f"""
        responses:
          - tool_calls: [{{name: tb.chatty, arguments: {{count: 2}}}}]
          - content: done, with {KEY}
        """)
    agent = write(tmp_path, "chatty.yaml", """
        name: chatty
        role: does work in parts
        system_prompt: work
        tools: [tb.chatty]
        mcp_servers: mcp.yaml
        llm_config: {model: scripted, script: chatty.script.yaml}
        """)
    live = invoke("run", str(agent), "-t", "go", "--no-input")
    assert live.code == 0, live.err
    lines = live.out.splitlines()
    call = next(i for i, line in enumerate(lines) if line.startswith("  → tb.chatty"))
    assert lines[call + 1:call + 3] == [f"  │ info: part {i} of 2 done" for i in (1, 2)]


def test_the_python_apis_on_event_gets_the_lines(tmp_path: Path, magent_home: Path) -> None:
    import magent

    seen: list = []
    result = magent.run(printer(tmp_path), "go", on_event=seen.append)
    assert result.status == "completed"
    assert [(e.field("stream"), e.field("line")) for e in seen if e.type == "tool_output"] == [
        ("stdout", f"line {i} {MASK}") for i in range(3)]
