"""``magent mcp serve``: the real server as a subprocess, driven by the mcp SDK's own client."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from mcp.shared.exceptions import MCPError
from support.cli import invoke, run
from support.crashflow import ledger_lines, make_flow
from support.mcpserve import (PUBLISH, ROOT, TEMPLATED, WRITE_REVIEW, reply, serving_child, stdio_session,
                              wait_for_nap)

pytestmark = pytest.mark.slow


def test_tools_are_the_served_workflows_and_the_verbs() -> None:
    async def main() -> None:
        async with stdio_session(WRITE_REVIEW, TEMPLATED) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert list(tools) == ["write_review", "templated_reply", "tasks_list", "task_status", "resume",
                                   "chat", "steer", "trace"]
            assert tools["write_review"].description.startswith("Draft product copy and revise it")
            schema = tools["templated_reply"].input_schema
            # the --set values its templates need are required arguments beside the task
            assert schema["required"] == ["task", "customer", "ticket_id"]
            assert {"task", "customer", "ticket_id", "tone", "wait_seconds"} <= set(schema["properties"])
            assert [n for n, t in tools.items() if t.annotations and t.annotations.read_only_hint] == [
                "tasks_list", "task_status", "trace"]
            missing = await s.call_tool("templated_reply", {"task": "late parcel"})
            assert missing.is_error and "'customer' is required" in missing.content[0].text
            stranger = await s.call_tool("write_review", {"task": "x", "next_action": "END"})
            assert stranger.is_error and "unknown argument 'next_action'" in stranger.content[0].text
            nobody = await s.call_tool("task_status", {"task_id": "../../etc"})
            assert nobody.is_error
            for uri in ("magent://tasks/../../etc/trace", "file:///etc/passwd", "magent://tasks/0123abcd/result"):
                with pytest.raises(MCPError):             # outside the home, or no such task
                    await s.read_resource(uri)

    asyncio.run(main())


def test_a_workflow_runs_to_completion_as_an_ordinary_task(magent_home: Path) -> None:
    heard: list[str] = []

    async def progress(count: float, total: float | None, message: str | None) -> None:
        heard.append(message or "")

    async def main() -> tuple[dict[str, Any], str, str]:
        async with stdio_session(WRITE_REVIEW) as s:
            done = reply(await s.call_tool("write_review", {"task": "Copy for Tidy"}, progress_callback=progress))
            trace = await s.read_resource(f"magent://tasks/{done['task_id']}/trace")
            result = await s.read_resource(f"magent://tasks/{done['task_id']}/result")
            listed = await s.list_resources()
            assert f"magent://tasks/{done['task_id']}/trace" in [str(r.uri) for r in listed.resources]
            return done, trace.contents[0].text, result.contents[0].text

    done, trace, result = asyncio.run(main())
    assert done["status"] == "completed" and "20 cm tray" in done["output"]
    assert "node write started" in heard and "calling kv.set (node write)" in heard
    assert json.loads(trace)["task_id"] == done["task_id"] and json.loads(result)["success"] is True
    listed = invoke("tasks", "list", "--json")
    assert [t["id"] for t in json.loads(listed.out)] == [done["task_id"]]     # the CLI sees it
    assert invoke("trace", done["task_id"]).code == 0


def test_a_pause_returns_the_question_and_the_resume_tool_continues_it(magent_home: Path) -> None:
    async def main() -> tuple[dict[str, Any], dict[str, Any], str, list[dict[str, Any]]]:
        async with stdio_session(PUBLISH) as s:
            paused = reply(await s.call_tool("publish", {"task": "Office closed Friday"}))
            call = paused["resume_call"]
            assert call["tool"] == "resume"
            status = reply(await s.call_tool("task_status", {"task_id": paused["task_id"]}))
            assert status["status"] == "awaiting_human"
            done = reply(await s.call_tool("resume", {**call["arguments"], "message": "ship it"}))
            text = (await s.call_tool("trace", {"task_id": paused["task_id"]})).content[0].text
            listed = reply(await s.call_tool("tasks_list", {}))["tasks"]
            return paused, done, text, listed

    paused, done, text, listed = asyncio.run(main())
    assert paused["status"] == "awaiting_human" and paused["question"] == "Publish this announcement?"
    assert paused["resume_call"]["arguments"] == {"task_id": paused["task_id"], "action": "approve"}
    assert done["status"] == "completed" and done["task_id"] == paused["task_id"]
    assert "waiting for a person" in text
    assert [(t["task_id"], t["status"]) for t in listed] == [(paused["task_id"], "completed")]


def test_an_agent_served_alone_takes_a_follow_up_through_chat(magent_home: Path) -> None:
    tagline = str(ROOT / "examples/agents/tagline_writer.yaml")

    async def main() -> tuple[str, dict[str, Any], dict[str, Any]]:
        async with stdio_session(tagline) as s:
            (tool,) = [t for t in (await s.list_tools()).tools if t.name == "tagline_writer"]
            first = reply(await s.call_tool("tagline_writer", {"task": "A tagline for the Tidy desk tray"}))
            again = reply(await s.call_tool("chat", {"task_id": first["task_id"][:8], "message": "Shorter"}))
            return str(tool.description), first, again

    description, first, again = asyncio.run(main())
    assert description.startswith("Ask the magent agent 'tagline_writer'")
    assert first["status"] == again["status"] == "completed"
    assert again["task_id"] == first["task_id"] and again["output"] != first["output"]   # the same task


def test_a_client_with_forms_asks_the_person_itself(magent_home: Path) -> None:
    import mcp_types as types

    asked: list[types.ElicitRequestFormParams] = []

    async def person(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params)
        if len(asked) == 1:
            return types.ElicitResult(action="accept", content={"action": "reject", "message": "Say which Friday"})
        return types.ElicitResult(action="accept", content={"action": "approve"})

    async def main() -> dict[str, Any]:
        async with stdio_session(PUBLISH, elicitation=person) as s:
            return reply(await s.call_tool("publish", {"task": "Office closed Friday"}))

    done = asyncio.run(main())
    assert done["status"] == "completed"                  # rejected once, revised, approved: one call
    assert [p.message.splitlines()[0] for p in asked] == ["Publish this announcement?"] * 2
    assert asked[0].requested_schema["properties"]["action"]["enum"] == ["approve", "reject"]
    shown = json.loads(invoke("trace", done["task_id"], "--json").out)
    assert "Say which Friday" in json.dumps(shown)


def test_a_long_run_returns_its_id_at_once_and_runs_on(tmp_path: Path, magent_home: Path) -> None:
    flow = make_flow(tmp_path, nap=600)
    ledger, wake = tmp_path / "ledger.txt", tmp_path / "wake"
    env = {"LEDGER": str(ledger), "LEDGER_WAKE": str(wake)}

    heard: list[Any] = []

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with stdio_session(str(flow), wait=0, env=env, heard=heard) as s:
            started = reply(await s.call_tool("crashflow", {"task": "nap"}))
            await asyncio.to_thread(wait_for_nap, magent_home)
            twice = await s.call_tool("resume", {"task_id": started["task_id"]})   # one writer per task
            assert twice.is_error and "is in use by pid" in twice.content[0].text
            caps = s.server_capabilities
            assert caps is not None and caps.resources is not None and caps.resources.list_changed
            wake.touch()
            status = reply(await s.call_tool("task_status", {"task_id": started["task_id"], "wait_seconds": 120}))
            for _ in range(100):
                if heard:
                    break
                await asyncio.sleep(0.1)
            return started, status

    started, status = asyncio.run(main())
    # the client is told when the task is done: its result and trace resources have changed
    assert [type(m).__name__ for m in heard] == ["ResourceListChangedNotification"]
    assert started["status"] == "running" and "task_status" in started["message"]
    assert status["status"] == "completed" and status["output"] == "stored final"
    assert ledger_lines(ledger) == ["a", "nap", "b"]


def test_steer_sends_a_running_task_a_message_its_agent_reads(tmp_path: Path, magent_home: Path) -> None:
    flow = make_flow(tmp_path, nap=600)
    ledger, wake = tmp_path / "ledger.txt", tmp_path / "wake"
    env = {"LEDGER": str(ledger), "LEDGER_WAKE": str(wake)}

    async def main() -> tuple[dict[str, Any], dict[str, Any], Any]:
        async with stdio_session(str(flow), wait=0, env=env) as s:
            started = reply(await s.call_tool("crashflow", {"task": "nap"}))
            await asyncio.to_thread(wait_for_nap, magent_home)
            sent = reply(await s.call_tool("steer", {"task_id": started["task_id"],
                                                     "message": "Also note the weather."}))
            wake.touch()
            status = reply(await s.call_tool("task_status", {"task_id": started["task_id"], "wait_seconds": 120}))
            stopped = await s.call_tool("steer", {"task_id": started["task_id"], "message": "too late"})
            return sent, status, stopped

    sent, status, stopped = asyncio.run(main())
    assert (sent["status"], sent["signal"]) == ("queued", 1) and status["status"] == "completed"
    entries = [json.loads(line) for line in
               (magent_home / "tasks" / status["task_id"] / "entries.jsonl").read_text().splitlines()]
    assert [e["content"] for e in entries if e.get("entry_type") == "injection"] == ["Also note the weather."]
    assert stopped.is_error                                          # a task no run holds: refused


def test_a_call_the_client_cancels_cancels_its_task(tmp_path: Path, magent_home: Path) -> None:
    flow = make_flow(tmp_path, nap=600)
    ledger = tmp_path / "ledger.txt"

    async def main() -> dict[str, Any]:
        async with stdio_session(str(flow), env={"LEDGER": str(ledger)}) as s:
            call = asyncio.ensure_future(s.call_tool("crashflow", {"task": "nap"}))
            await asyncio.to_thread(wait_for_nap, magent_home)
            call.cancel()                  # the SDK's client sends notifications/cancelled
            with contextlib.suppress(asyncio.CancelledError):
                await call
            (task_id,) = [p.name for p in (magent_home / "tasks").iterdir() if not p.name.startswith(".")]
            for _ in range(300):
                status = reply(await s.call_tool("task_status", {"task_id": task_id}))
                if status["status"] not in ("running", "interrupted"):
                    break
                await asyncio.sleep(0.1)
            return status

    status = asyncio.run(main())
    assert status["status"] == "cancelled", status
    assert ledger_lines(ledger) == ["a"]                    # the nap was stopped, not finished
    assert invoke("tasks", "list", "--status", "cancelled").code == 0


def test_a_client_that_leaves_mid_run_leaves_an_interrupted_task_the_next_serve_reports(
        tmp_path: Path, magent_home: Path) -> None:
    flow = make_flow(tmp_path, nap=600)
    env = {"LEDGER": str(tmp_path / "ledger.txt")}

    async def main() -> str:
        async with stdio_session(str(flow), wait=0, env=env) as s:
            started = reply(await s.call_tool("crashflow", {"task": "nap"}))
            await asyncio.to_thread(wait_for_nap, magent_home)
            return str(started["task_id"])

    task_id = asyncio.run(main())
    shown = json.loads(invoke("tasks", "show", task_id, "--json").out)
    assert shown["status"] == "interrupted"
    again = run("mcp", "serve", str(flow), input="", env=env)     # stdin at its end: serve, then leave
    assert again.code == 0, again.err
    assert "1 task(s) stopped mid-run" in again.err and task_id[:8] in again.err


def test_kill_9_of_the_server_mid_task_leaves_a_task_the_cli_resumes(tmp_path: Path, magent_home: Path) -> None:
    flow = make_flow(tmp_path, nap=600)
    ledger = tmp_path / "ledger.txt"
    env = {"LEDGER": str(ledger)}

    async def main() -> str:
        async with stdio_session(str(flow), wait=0, env=env) as s:
            started = reply(await s.call_tool("crashflow", {"task": "nap"}))
            wait_for_nap(magent_home)
            server = serving_child()
            os.kill(server, signal.SIGKILL)
            return str(started["task_id"])

    with contextlib.suppress(Exception):  # the client sees its server die
        task_id = asyncio.run(main())
    (task_id,) = [p.name for p in (magent_home / "tasks").iterdir() if not p.name.startswith(".")]
    again = run("mcp", "serve", str(flow), input="", env=env)      # the next serve names it
    assert again.code == 0 and "1 task(s) stopped mid-run" in again.err and task_id[:8] in again.err
    paused = run("resume", task_id, env=env)
    assert paused.code == 3 and "ledger.nap" in paused.out      # the nap may have run: a person decides
    finished = run("resume", task_id, "--reject", env=env)
    assert finished.code == 0, finished.err
    assert ledger_lines(ledger) == ["a", "b"]


def test_without_targets_it_serves_what_is_installed_and_by_name(magent_home: Path) -> None:
    import shutil

    shutil.copytree(ROOT / "examples/agents", magent_home / "agents")

    async def main(*targets: str) -> list[str]:
        async with stdio_session(*targets) as s:
            return [t.name for t in (await s.list_tools()).tools]

    everything = asyncio.run(main())
    assert "tagline_writer" in everything and "writer" in everything and everything[-6:] == [
        "tasks_list", "task_status", "resume", "chat", "steer", "trace"]
    assert asyncio.run(main("tagline_writer"))[0] == "tagline_writer"


def test_a_name_that_would_hide_a_verb_is_refused(tmp_path: Path) -> None:
    script = ROOT / "examples/agents/scripts/writer.yaml"
    (tmp_path / "chat.yaml").write_text(f"name: chat\nrole: talks\nsystem_prompt: talk\n"
                                        f"llm_config: {{model: scripted, script: {script}}}\n")
    refused = run("mcp", "serve", str(tmp_path / "chat.yaml"))
    assert refused.code == 2 and "would hide the chat tool" in refused.err


def test_bad_targets_are_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = run("mcp", "serve", str(tmp_path / "nope.yaml"))
    assert missing.code == 2 and "nope.yaml" in missing.err and len(missing.err.strip().splitlines()) <= 2
    nothing = run("mcp", "serve")
    assert nothing.code == 2 and "nothing to serve" in nothing.err
    port = run("mcp", "serve", "--transport", "streamable-http", "--port", "0", WRITE_REVIEW)
    assert port.code == 2 and "--port" in port.err


def test_the_docs_client_snippets_start_the_server() -> None:
    text = (ROOT / "docs" / "guides" / "tools-and-mcp.md").read_text()
    section = text.split("### Use magent from Claude Desktop / Claude Code / Cursor", 1)[1].split("\n## ", 1)[0]
    configs = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", section, re.S)]
    assert len(configs) == 2                                    # Claude Desktop, Cursor
    for config in configs:
        server = config["mcpServers"]["magent"]
        assert server["command"] == "magent" and server["args"][:2] == ["mcp", "serve"]
    assert "claude mcp add magent -- magent mcp serve" in section
    help_text = invoke("mcp", "serve", "--help")
    assert help_text.code == 0 and "--transport" in help_text.out and "--wait-seconds" in help_text.out
