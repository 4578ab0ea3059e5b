"""In a terminal, a pause asks inline (approve / reject / edit, with a message) instead of exiting."""

from __future__ import annotations

from pathlib import Path

import pytest

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
