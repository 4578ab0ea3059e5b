"""docs/reading-files.md's five jq one-liners work as written, with the real jq, on a real task."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from support.cli import invoke
from support.jq import jq
from test_examples import ROOT

PAGE = ROOT / "docs" / "reading-files.md"


def one_liners() -> list[str]:
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", PAGE.read_text(), re.S)]


def run(command: str, task_dir: Path) -> str:
    assert command.startswith("jq ")
    done = subprocess.run(["sh", "-c", jq() + command[2:]], cwd=task_dir, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, f"{command}\n{done.stderr}"
    return done.stdout


def test_the_five_one_liners_answer_their_questions(magent_home: Path) -> None:
    answer, tool_calls, tokens, question, position = one_liners()
    started = invoke("run", str(ROOT / "examples/workflows/triage.yaml"), "-t", "Checkout is broken",
                     "--set", "ticket=checkout fails", "--set", "priority=high", "--no-input")
    assert started.code == 3, started.out + started.err  # paused at the approval gate
    task_dir = magent_home / "tasks" / started.out.split()[1]

    assert run(answer, task_dir) == "null\n"  # no answer while it waits
    assert run(tool_calls, task_dir) == ('kv.set {"key":"ticket","value":"checkout fails"}\n'
                                         'kv.get {"key":"ticket"}\n')
    assert run(tokens, task_dir) == "scripted: 58 in, 44 out\n"
    assert run(question, task_dir) == "Node 'escalate' has finished. Approve its output to go on?\n"
    assert run(position, task_dir) == "escalate\n"

    assert invoke("resume", task_dir.name, "--approve", "--no-input").code == 0
    assert run(answer, task_dir).startswith("URGENT: checkout fails for all users")
    assert run(question, task_dir) == ""  # the last checkpoint is no pause
    assert run(position, task_dir) == "END\n"


def test_the_readme_links_the_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "(docs/reading-files.md)" in readme
