"""The live view of `magent run` in a real terminal: an answer that streamed is not printed
twice, and Ctrl-C says one thing."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest

from servers.harness import stdio_server, write_mcp_file
from support.cli import invoke
from support.engine import write
from support.terminal import Terminal

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
ANSWER = "Noted: the meeting is on Thursday at 10:00 in room 4."

pytestmark = pytest.mark.slow

SLOW = """
name: slow
mcp_servers: mcp.yaml
entry_point: wait
nodes:
  wait: {type: tool, tool: tb.slow, arguments: {seconds: 600}}
edges:
  - {from: wait, to: END}
"""


def test_a_streamed_answer_is_not_printed_again_in_a_terminal(magent_home: Path) -> None:
    screen = ANSI.sub("", Terminal("run", str(EXAMPLES / "agents/note_taker.yaml"), "-t", "remember").screen())
    assert screen.count(ANSWER) == 1, screen
    assert "\nanswer\n" not in screen and "completed · 3 model calls" in screen


def test_into_a_pipe_the_answer_still_ends_the_output(magent_home: Path) -> None:
    out = invoke("run", str(EXAMPLES / "agents/note_taker.yaml"), "-t", "remember").out
    assert out.endswith(f"answer\n{ANSWER}\n")


def test_an_answer_that_did_not_stream_is_printed(magent_home: Path) -> None:
    screen = ANSI.sub("", Terminal("run", str(EXAMPLES / "workflows/publish.yaml"), "-t", "Friday",
                                   "--no-input").screen())
    assert "waiting for a person" in screen  # (no answer yet: nothing to repeat or leave out)


def _interrupt(tmp_path: Path, *args: str) -> tuple[int, str]:
    write_mcp_file(tmp_path / "mcp.yaml", [stdio_server("tb")])
    flow = write(tmp_path, "slow.yaml", SLOW)
    term = Terminal("run", str(flow), "-t", "wait", *args)
    term.expect("tb.slow" if not args else "task ")
    if args:  # --quiet prints no node lines: wait until the call is in flight
        task = next((Path(os.environ["MAGENT_HOME"]) / "tasks").iterdir())
        deadline = time.monotonic() + 60
        events = task / "events.jsonl"
        while not events.exists() or "tool_call" not in events.read_text():
            assert time.monotonic() < deadline, "the tool call never started"
            time.sleep(0.05)
    os.kill(term.proc.pid, signal.SIGINT)
    code = term.finish()
    return code, ANSI.sub("", term.seen).replace("\r\n", "\n")


def test_ctrl_c_says_once_that_the_task_can_be_continued(magent_home: Path, tmp_path: Path) -> None:
    code, screen = _interrupt(tmp_path)
    assert code == 130
    task_id = re.search(r"task ([0-9a-f-]{36})", screen).group(1)
    assert screen.count("interrupted") == 1, screen
    assert f"interrupted: the task was checkpointed; continue with `magent resume {task_id[:8]}`" in screen
    assert "magent: error" not in screen


def test_ctrl_c_with_quiet_says_it_in_one_error_line_naming_the_task(magent_home: Path, tmp_path: Path) -> None:
    code, screen = _interrupt(tmp_path, "--quiet")
    assert code == 130
    task_id = re.search(r"task ([0-9a-f-]{36})", screen).group(1)
    assert screen.count("interrupted") == 1, screen
    assert (f"magent: error: interrupted: task {task_id[:8]} was checkpointed; continue with "
            f"`magent resume {task_id[:8]}`") in screen
