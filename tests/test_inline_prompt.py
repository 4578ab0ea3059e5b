"""In a terminal, a pause asks inline (approve / reject / edit, with a message) instead of exiting."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from support.cli import invoke
from support.engine import task_dir
from support.terminal import Terminal

PUBLISH = str(Path(__file__).resolve().parent.parent / "examples/workflows/publish.yaml")


@pytest.mark.slow
def test_a_pause_in_a_terminal_asks_inline_and_goes_on(magent_home: Path) -> None:
    term = Terminal("run", PUBLISH, "-t", "Announce the Friday closure")
    term.expect("Publish this announcement?")
    term.expect("[a]pprove / [r]eject / [e]dit / [l]ater: ")
    term.type("r")
    term.expect("message (optional): ")
    term.type("Say which Friday")
    term.expect("[a]pprove / [r]eject / [e]dit / [l]ater: ")   # the revised draft, asked again
    term.type("a")
    term.expect("message (optional): ")
    term.type("")
    assert term.finish() == 0, term.seen
    task_id = next(p.name for p in (magent_home / "tasks").iterdir())
    task = task_dir(task_id).load_task()
    assert task.status.value == "completed"
    decisions = [e.field("action") for e in task_dir(task_id).read_events() if e.type == "human_decision"]
    assert decisions == ["reject", "approve"]


@pytest.mark.slow
def test_no_input_in_a_terminal_pauses_and_exits_3(magent_home: Path) -> None:
    term = Terminal("run", PUBLISH, "-t", "Announce the Friday closure", "--no-input")
    term.expect("magent resume")
    assert term.finish() == 3


@pytest.mark.slow
def test_ctrl_c_at_the_prompt_leaves_it_paused_and_says_how_to_go_on(magent_home: Path) -> None:
    term = Terminal("run", PUBLISH, "-t", "Announce the Friday closure")
    term.expect("[a]pprove / [r]eject / [e]dit / [l]ater: ")
    # A person's Ctrl-C comes once the prompt waits: a signal between the prompt's write and
    # readline's wait for a key is only seen at the next key (CPython's readline loop).
    time.sleep(0.5)
    os.kill(term.proc.pid, signal.SIGINT)   # what Ctrl-C sends
    screen = term.screen()
    task_id = next(p.name for p in (magent_home / "tasks").iterdir())
    assert term.proc.returncode == 130
    assert screen.endswith(f"[l]ater: \nstill waiting for a person; continue with: magent resume {task_id[:8]}\n"), screen
    assert "error" not in screen
    assert task_dir(task_id).load_task().status.value == "awaiting_human"


@pytest.mark.slow
def test_resume_in_a_terminal_asks_inline(magent_home: Path) -> None:
    paused = invoke("run", PUBLISH, "-t", "Announce the Friday closure", "--no-input")
    assert paused.code == 3
    task_id = paused.out.split()[1]
    later = Terminal("resume", task_id[:8])
    later.expect("Publish this announcement?")
    later.expect("[a]pprove / [r]eject / [e]dit / [l]ater: ")
    later.type("l")
    assert later.finish() == 3
    assert f"magent resume {task_id} --approve" in later.seen

    term = Terminal("resume", task_id[:8])
    term.expect("[a]pprove / [r]eject / [e]dit / [l]ater: ")
    term.type("a")
    term.expect("message (optional): ")
    term.type("ship it")
    assert term.finish() == 0, term.seen
    assert task_dir(task_id).load_task().status.value == "completed"
    decisions = [(e.field("action"), e.field("message")) for e in task_dir(task_id).read_events()
                 if e.type == "human_decision"]
    assert decisions == [("approve", "ship it")]
