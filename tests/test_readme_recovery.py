"""The recovery contract (docs/guides/hitl-and-recovery.md), row by row: each way of stopping a run, done for real
(a signal, a kill, a failed model, a damaged file), leaves the status the table names, and
the table's command continues the task to its end.

The rows are read from that page itself, so a row added there without a way to stop a run
here, or a command that stops working, fails this test.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from support.cli import invoke, run
from support.crashflow import only_task
from support.engine import task_dir, write
from support.recoveryflow import SLOW, started_run, toolbox_flow, wait_for_event

ROOT = Path(__file__).resolve().parent.parent
PUBLISH = ROOT / "examples" / "workflows" / "publish.yaml"


@dataclass
class Row:
    how: str
    status: str
    exit_code: int | None
    commands: list[str]


def recovery_table() -> list[Row]:
    text = (ROOT / "docs" / "guides" / "hitl-and-recovery.md").read_text()
    section = text.split("## Stopping and continuing", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) != 3 or cells[0].startswith("---") or cells[0] == "How the run stopped":
            continue
        how, status, cont = cells
        code = re.search(r"exit (\d+)", status)
        rows.append(Row(how, re.match(r"`(\w+)`", status).group(1), int(code.group(1)) if code else None,
                        re.findall(r"`(magent [^`]+)`", cont)))
    return rows


# -- stopping a run each way the table names; each returns the task id and the run's exit code, ---
# -- or None when the way it stopped came after the run (a damaged file) ---------------------------

def needs_a_person(tmp_path: Path, home: Path) -> tuple[str, int | None]:
    paused = invoke("run", str(PUBLISH), "-t", "Announce that the office is closed on Friday", "--no-input")
    return only_task(home), paused.code


def signalled(sig: int) -> Callable[[Path, Path], tuple[str, int | None]]:
    def stop(tmp_path: Path, home: Path) -> tuple[str, int | None]:
        # The run is stopped inside a tool call declared idempotent, so the resume runs it again
        # without asking; the wake file ($WAKE, set for every command) lets it return at once.
        flow = toolbox_flow(tmp_path, first=SLOW, idempotent_slow=True)
        proc = started_run(flow)
        try:
            task_id = wait_for_event(home, '"tool":"toolbox.slow"', proc)
            os.kill(proc.pid, sig)           # Ctrl-C, or kill -9 PID: the run alone
        finally:
            proc.wait(timeout=120)
        Path(os.environ["WAKE"]).touch()
        return task_id, proc.returncode
    return stop


def killed_before_checkpoint_0(tmp_path: Path, home: Path) -> tuple[str, int | None]:
    killed = run("run", str(toolbox_flow(tmp_path)), "-t", "say hello",
                 env={"MAGENT_FAILPOINT": "after_task_created"})
    task_id = only_task(home)
    assert task_dir(task_id).checkpoints.numbers() == []
    return task_id, killed.code


def failed(tmp_path: Path, home: Path) -> tuple[str, int | None]:
    """The model gives out after one turn (its script ends); then it is back (the reply is added)."""
    script = write(tmp_path, "keeper.script.yaml", """
        responses:
          - tool_calls: [{name: kv.set, arguments: {key: city, value: Lyon}}]
        """)
    agent = write(tmp_path, "keeper.yaml", """
        name: keeper
        role: stores things
        system_prompt: Store what you are told.
        tools: [kv.set]
        llm_config: {model: scripted, script: keeper.script.yaml}
        """)
    result = invoke("run", str(agent), "-t", "Remember the city Lyon", "--no-input")
    with script.open("a") as f:
        f.write("  - content: Stored Lyon.\n")
    return only_task(home), result.code


def damaged_pause(tmp_path: Path, home: Path) -> tuple[str, int | None]:
    task_id, _ = needs_a_person(tmp_path, home)
    td = task_dir(task_id)
    damaged = td.checkpoints.path(td.checkpoints.numbers()[-1])
    damaged.write_bytes(damaged.read_bytes()[:40])          # a torn write, as a crash leaves
    return task_id, None


def finished(tmp_path: Path, home: Path) -> tuple[str, int | None]:
    done = invoke("run", str(toolbox_flow(tmp_path)), "-t", "say hello")
    return only_task(home), done.code


WAYS: dict[str, Callable[[Path, Path], tuple[str, int | None]]] = {
    "It needs a person": needs_a_person,
    "Ctrl-C": signalled(signal.SIGINT),
    "`kill -9`": signalled(signal.SIGKILL),
    "Killed before its first checkpoint": killed_before_checkpoint_0,
    "It failed": failed,
    "The checkpoint of its pause was damaged": damaged_pause,
    "It finished": finished,
}


def way_of(row: Row) -> str:
    (key,) = [k for k in WAYS if row.how.startswith(k)]
    return key


def test_every_row_of_the_table_is_tried_here() -> None:
    rows = recovery_table()
    assert sorted(way_of(r) for r in rows) == sorted(WAYS)
    assert all(r.commands for r in rows)


@pytest.mark.parametrize("way", list(WAYS))
def test_the_readme_command_continues_a_task_stopped_this_way(way: str, tmp_path: Path, magent_home: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (row,) = [r for r in recovery_table() if way_of(r) == way]
    monkeypatch.setenv("WAKE", str(tmp_path / "wake"))
    task_id, code = WAYS[way](tmp_path, magent_home)
    if code is not None:     # the row's exit code, or none for a process that was killed
        assert code == (row.exit_code if row.exit_code is not None else -signal.SIGKILL)
    shown = invoke("tasks", "show", task_id[:8], "--json")
    assert json.loads(shown.out)["status"] == row.status, shown.err

    for i, command in enumerate(row.commands):
        args = [task_id[:8] if a == "ID" else "1" if a == "N" else a for a in shlex.split(command)[1:]]
        result = invoke(*args, "--no-input")
        last = i == len(row.commands) - 1
        assert result.code == (0 if last else 3), (command, result.out, result.err)
    if "--from-checkpoint" in row.commands[-1]:      # a new task, from the finished one's checkpoint
        task_id = next(p.name for p in (magent_home / "tasks").iterdir()
                       if not p.name.startswith(".") and p.name != task_id)
    assert task_dir(task_id).load_task().status.value == "completed"
