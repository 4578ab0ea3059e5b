"""In a terminal, a pause asks inline (approve / reject / edit, with a message) instead of exiting."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.engine import task_dir

PUBLISH = str(Path(__file__).resolve().parent.parent / "examples/workflows/publish.yaml")


class Terminal:
    """A process attached to a pseudo-terminal, driven like a person at the keyboard."""

    def __init__(self, *args: str):
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen([sys.executable, "-m", "magent", *args], stdin=slave, stdout=slave,
                                     stderr=slave, env={**os.environ, "COLUMNS": "120"}, close_fds=True)
        os.close(slave)
        self.seen = ""

    def expect(self, text: str, timeout: float = 60) -> None:
        deadline = time.time() + timeout
        while text not in self.seen:
            left = deadline - time.time()
            assert left > 0, f"never saw {text!r}; screen:\n{self.seen}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    self.seen += os.read(self.master, 4096).decode(errors="replace")
                except OSError:
                    break
        assert text in self.seen, self.seen

    def type(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def finish(self) -> int:
        code = self.proc.wait(timeout=60)
        os.close(self.master)
        return code


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
