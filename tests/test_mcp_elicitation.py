"""A server's question mid-call (MCP elicitation): asked at the terminal, else answered by the
agent's ``elicitation`` setting, and recorded in the trace, masked."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from support.cli import invoke
from support.engine import events, write
from support.terminal import Terminal

pytestmark = pytest.mark.slow

ASKER = Path(__file__).resolve().parent / "servers" / "asker.py"
PIN = "door-7Q4x-91zz"


def setup(folder: Path, elicitation: str | None) -> Path:
    write(folder, "mcp.yaml", f"""
        servers:
          - name: ask
            transport: stdio
            config: {{command: {sys.executable}, args: [{ASKER}], env: {{ASKER_PIN: "${{DOOR_PIN}}"}}}}
    """)
    write(folder, "booker.script.yaml", """
        responses:
          - tool_calls: [{name: ask.book, arguments: {room: "4"}}]
          - content: done
    """)
    setting = f"elicitation: {elicitation}\n" if elicitation else ""
    return write(folder, "booker.yaml", "name: booker\nrole: books rooms\nsystem_prompt: Book.\n"
                 "tools: [ask.*]\nmcp_servers: mcp.yaml\n"
                 f"llm_config: {{model: scripted, script: booker.script.yaml}}\n{setting}")


def run_json(agent: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, list]:
    monkeypatch.setenv("DOOR_PIN", PIN)
    r = invoke("run", str(agent), "-t", "book room 4", "--json", "--no-input")
    assert r.code == 0, r.out + r.err
    task_id = json.loads(r.out.splitlines()[-1])["task_id"]
    return task_id, events(task_id)


def test_a_batch_answer_takes_the_forms_defaults_and_the_trace_masks_them(
        tmp_path: Path, magent_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task_id, evs = run_json(setup(tmp_path, "defaults"), monkeypatch)
    result = next(e for e in evs if e.type == "tool_result")
    asked = next(e for e in evs if e.type == "elicitation")
    assert result.field("outcome") == "SUCCESS"
    assert "booked 4 for 2 (nobody), door ***" in result.field("result")
    assert asked.field("message") == "Details for booking 4?" and asked.field("server") == "ask"
    assert asked.field("action") == "accept" and asked.field("answered_by") == "config: defaults"
    content = asked.field("content")
    assert (content["name"], content["people"]) == ("", 2) and PIN not in content["pin"]
    assert asked.field("call_id") == result.field("call_id") and asked.field("agent") == "booker"
    assert "ask asked 'Details for booking 4?': accept" in invoke("trace", task_id, "--json").out
    assert not [p for p in magent_home.rglob("*") if p.is_file() and PIN in p.read_text(errors="replace")]


def test_an_agent_without_the_setting_declines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, evs = run_json(setup(tmp_path, None), monkeypatch)
    assert "the user chose decline" in next(e for e in evs if e.type == "tool_result").field("result")
    assert next(e for e in evs if e.type == "elicitation").field("answered_by") == "config: decline"


def test_at_a_terminal_the_form_is_asked_with_its_defaults(tmp_path: Path) -> None:
    setup(tmp_path, None)
    term = Terminal("tools", "call", "ask.book", "--args", '{"room": "9"}', "--mcp", str(tmp_path / "mcp.yaml"),
                    env={"DOOR_PIN": "1234"})
    term.expect("Details for booking 9?")
    term.expect("Who books")
    term.type("Ann")
    term.expect("[2]")
    term.type("")          # Enter: the default
    term.expect("[1234]")
    term.type("")
    screen = term.screen()
    assert "booked 9 for 2 (Ann), door ***" in screen, screen  # (the pin is a secret from the env)
    assert term.proc.returncode == 0


def test_bad_setting_is_one_line_exit_2(tmp_path: Path) -> None:
    setup(tmp_path, None)
    r = invoke("tools", "call", "ask.book", "--args", '{"room": "9"}', "--elicitation", "maybe",
               "--mcp", str(tmp_path / "mcp.yaml"))
    assert r.code == 2 and "--elicitation must be one of decline, cancel, defaults" in r.err


def test_a_run_killed_while_the_form_is_asked_resumes(tmp_path: Path, magent_home: Path) -> None:
    """kill -9 while the person is being asked: the call's intent is on disk, so the resumed run
    asks whether to make the (not idempotent) call again, and makes it when approved."""
    import os
    import signal

    agent = setup(tmp_path, "decline")
    term = Terminal("run", str(agent), "-t", "book room 4", env={"DOOR_PIN": PIN})
    term.expect("Details for booking 4?")
    os.kill(term.proc.pid, signal.SIGKILL)
    term.finish()
    task_id = json.loads(invoke("tasks", "list", "--json").out)[0]["id"]
    paused = invoke("resume", task_id, "--no-input", env={"DOOR_PIN": PIN})
    assert paused.code == 3 and "ask.book" in paused.out + paused.err
    done = invoke("resume", task_id, "--approve", "--no-input", "--json", env={"DOOR_PIN": PIN})
    assert done.code == 0, done.out + done.err
    assert "the user chose decline" in done.out  # no one at a terminal now: the agent's setting
