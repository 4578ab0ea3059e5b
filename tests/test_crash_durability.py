"""Durability modes (issue 17): each mode survives real kill -9s, and the mode is the one asked for.

``sync``, ``step`` and ``exit`` change when writes are forced to the disk, never the order they
are made in, so a kill -9 (which loses nothing the process wrote) must leave every file whole and a
task that ``magent resume`` completes without repeating a finished tool call, in every mode. The
crash workflow calls a non-idempotent MCP tool (the ledger records each call outside magent) and an
idempotent built-in, as tests/test_crash.py does. ``before_link`` kills inside a group commit,
between a checkpoint's content reaching the disk and its name.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from support.cli import invoke, run
from support.crashflow import ledger_lines, make_flow, only_task
from support.engine import all_files_parse, checkpoint_numbers, kv_store, task_dir, write

POINTS = [("after_assistant_entry", 2), ("after_tool_intent", 2), ("after_tool_call", 1),
          ("after_tool_entry", 2), ("after_checkpoint", 3), ("before_link", 4), ("after_node_end", 1)]
CASES = [(mode, point, nth) for mode in ("sync", "step", "exit") for point, nth in POINTS]


@pytest.mark.parametrize("mode, point, nth", CASES, ids=[f"{m}-{p}@{n}" for m, p, n in CASES])
def test_a_kill_in_any_mode_leaves_whole_files_and_resume_completes(mode: str, point: str, nth: int,
                                                                     tmp_path: Path, magent_home: Path) -> None:
    flow = make_flow(tmp_path)
    ledger = tmp_path / "ledger.txt"
    env = {"LEDGER": str(ledger)}
    killed = run("run", str(flow), "-t", "crash me", "--durability", mode,
                 env={**env, "MAGENT_FAILPOINT": f"{point}@{nth}"})
    assert killed.code == -signal.SIGKILL, (killed.code, killed.out, killed.err)
    task_id = only_task(magent_home)
    all_files_parse(magent_home)                 # nothing torn, in any mode
    assert not list(magent_home.rglob("*.corrupt*"))

    resumed = invoke("resume", task_id, env=env)
    if resumed.code == 3:  # the non-idempotent call may have run: answer as its ledger says
        cp = task_dir(task_id).checkpoints.read(checkpoint_numbers(task_id)[-1])
        assert cp.human_request.kind == "tool_recovery"
        ran = cp.human_request.details["arguments"]["line"] in ledger_lines(ledger)
        resumed = invoke("resume", task_id, "--reject" if ran else "--approve", env=env)
    assert resumed.code == 0, (resumed.out, resumed.err)

    td = task_dir(task_id)
    task = td.load_task()
    assert task.status.value == "completed" and task.result == "stored final"
    assert task.config_snapshot["options"]["durability"] == mode    # a resume keeps the mode
    numbers = checkpoint_numbers(task_id)
    assert numbers == list(range(len(numbers)))
    all_files_parse(magent_home)
    assert not list(magent_home.rglob("*.corrupt*"))
    assert ledger_lines(ledger) == ["a", "b"]    # each finished call ran exactly once
    assert kv_store(task_id) == {"k1": 1, "final": "all done"}
    state = td.full_state(td.checkpoints.read(numbers[-1]))
    answered = [m.tool_call_id for m in state.messages if m.role == "tool"]
    assert len(answered) == len(set(answered)) == 3


def test_the_workflow_sets_the_mode_and_the_command_line_wins(tmp_path: Path, magent_home: Path) -> None:
    flow = make_flow(tmp_path)
    text = flow.read_text().replace("name: crashflow\n", "name: crashflow\ndurability: exit\n")
    flow.write_text(text)
    env = {"LEDGER": str(tmp_path / "ledger.txt")}
    assert invoke("run", str(flow), "-t", "one", env=env).code == 0
    first = only_task(magent_home)
    assert task_dir(first).load_task().config_snapshot["options"]["durability"] == "exit"
    assert invoke("run", str(flow), "-t", "two", "--durability", "step", env=env).code == 0
    modes = sorted(task_dir(t.name).load_task().config_snapshot["options"]["durability"]
                   for t in (magent_home / "tasks").iterdir() if t.name != first)
    assert modes == ["step"]


def test_a_mode_that_does_not_exist_is_a_clear_error(tmp_path: Path, magent_home: Path) -> None:
    flow = make_flow(tmp_path)
    bad = invoke("run", str(flow), "-t", "x", "--durability", "never")
    assert bad.code == 2 and "never" in bad.err and "sync" in bad.err
    assert "Traceback" not in bad.err
    wrong = write(tmp_path, "wrong.yaml", flow.read_text().replace("name: crashflow\n",
                                                                   "name: crashflow\ndurability: always\n"))
    checked = invoke("validate", str(wrong))
    assert checked.code == 2 and "durability" in checked.out + checked.err
    assert not (magent_home / "tasks").exists() or not any((magent_home / "tasks").iterdir())
