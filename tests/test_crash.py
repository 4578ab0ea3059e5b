"""Crash tests for real: runs killed with SIGKILL at many points, then resumed (issue 4).

A failpoint (``MAGENT_FAILPOINT=name@N``) makes the run kill itself at an exact
place; the ledger MCP server writes outside magent so a repeated call shows.
After resuming, the task must complete with contiguous checkpoints, every file
must parse, and no finished tool call may have run twice.
The killed runs are real processes; the resumes after them run in-process (``invoke``),
except where two processes race for the task.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.cli import invoke, run
from support.crashflow import ledger_lines, make_flow, only_task, wait_for_nap
from support.engine import all_files_parse, checkpoint_numbers, kv_store, task_dir

POINTS = [
    ("after_run_start", 1), ("after_assistant_entry", 1), ("after_tool_intent", 1),
    ("after_tool_intent", 2), ("after_tool_call", 1), ("after_tool_call", 2), ("after_tool_entry", 1),
    ("after_tool_entry", 2), ("before_checkpoint", 3), ("after_checkpoint", 3),
    ("after_assistant_entry", 2), ("after_tool_intent", 3), ("after_tool_call", 3),
    ("after_assistant_entry", 3), ("after_node_end", 1), ("after_tool_intent", 4), ("after_tool_call", 4),
]


@pytest.mark.parametrize("point, nth", POINTS, ids=[f"{p}@{n}" for p, n in POINTS])
def test_killed_run_resumes_and_completes_without_repeating_work(point: str, nth: int, tmp_path: Path,
                                                                 magent_home: Path) -> None:
    flow = make_flow(tmp_path)
    ledger = tmp_path / "ledger.txt"
    env = {"LEDGER": str(ledger)}
    killed = run("run", str(flow), "-t", "crash me", env={**env, "MAGENT_FAILPOINT": f"{point}@{nth}"})
    assert killed.code == -signal.SIGKILL, (killed.code, killed.out, killed.err)
    task_id = only_task(magent_home)
    assert task_dir(task_id).load_task().status.value in ("pending", "running")  # as it was written
    assert task_dir(task_id).shown_task().status.value == "interrupted"         # as it is shown

    resumed = invoke("resume", task_id, env=env)
    if resumed.code == 3:
        # A non-idempotent call may or may not have run: a person decides. Its mark in the ledger
        # tells the truth, so answer as a careful person would.
        cp = task_dir(task_id).checkpoints.read(checkpoint_numbers(task_id)[-1])
        assert cp.human_request.kind == "tool_recovery"
        line = cp.human_request.details["arguments"]["line"]
        ran = line in ledger_lines(ledger)
        resumed = invoke("resume", task_id, "--reject" if ran else "--approve", env=env)
    assert resumed.code == 0, (resumed.out, resumed.err)

    task = task_dir(task_id).load_task()
    assert task.status.value == "completed" and task.result == "stored final"
    numbers = checkpoint_numbers(task_id)
    assert numbers == list(range(len(numbers)))
    all_files_parse(magent_home)
    assert ledger_lines(ledger) == ["a", "b"]          # each finished call ran exactly once
    assert kv_store(task_id) == {"k1": 1, "final": "all done"}
    td = task_dir(task_id)
    state = td.full_state(td.checkpoints.read(numbers[-1]))
    answered = [m.tool_call_id for m in state.messages if m.role == "tool"]
    assert len(answered) == len(set(answered)) == 3      # every call answered once in the history


def test_sigkill_mid_tool_call_then_resume(tmp_path: Path, magent_home: Path) -> None:
    """A real kill -9 while an MCP call is in flight (no failpoint): resume asks, then finishes."""
    flow = make_flow(tmp_path, nap=600)
    ledger = tmp_path / "ledger.txt"
    env = {**os.environ, "LEDGER": str(ledger)}
    proc = subprocess.Popen([sys.executable, "-m", "magent", "run", str(flow), "-t", "nap"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_nap(magent_home, proc)
        time.sleep(0.3)
        os.killpg(proc.pid, signal.SIGKILL)   # the run and the MCP server it started
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    task_id = only_task(magent_home)
    paused = invoke("resume", task_id, env={"LEDGER": str(ledger)})
    assert paused.code == 3 and "ledger.nap" in paused.out
    finished = invoke("resume", task_id, "--reject", "--message", "do not nap again", env={"LEDGER": str(ledger)})
    assert finished.code == 0, finished.err
    assert ledger_lines(ledger) == ["a", "b"]           # the interrupted nap never completed
    assert task_dir(task_id).load_task().result == "stored final"


def test_sigterm_stops_cleanly_with_a_checkpoint_and_exit_130(tmp_path: Path, magent_home: Path) -> None:
    flow = make_flow(tmp_path, nap=600)
    ledger = tmp_path / "ledger.txt"
    env = {**os.environ, "LEDGER": str(ledger)}
    proc = subprocess.Popen([sys.executable, "-m", "magent", "run", str(flow), "-t", "nap"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_nap(magent_home, proc)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, (out, err)
    assert "magent resume" in err
    task_id = only_task(magent_home)
    td = task_dir(task_id)
    last = td.checkpoints.read(checkpoint_numbers(task_id)[-1])
    assert last.reason == "interrupt"
    assert td.load_task().status.value == "interrupted"  # said plainly, and resumable
    all_files_parse(magent_home)
    resumed = invoke("resume", task_id, "--no-input", env={"LEDGER": str(ledger)})
    assert resumed.code == 3                              # the nap may have run: a person decides
    assert invoke("resume", task_id, "--reject", env={"LEDGER": str(ledger)}).code == 0


def test_two_resumes_at_once_one_proceeds_the_other_names_the_holder(tmp_path: Path, magent_home: Path) -> None:
    flow = make_flow(tmp_path, nap=600)
    ledger = tmp_path / "ledger.txt"
    wake = tmp_path / "wake"
    env = {"LEDGER": str(ledger), "LEDGER_WAKE": str(wake)}
    killed = run("run", str(flow), "-t", "x", env={**env, "MAGENT_FAILPOINT": "after_run_start"})
    assert killed.code == -signal.SIGKILL
    task_id = only_task(magent_home)
    # The first resume does the whole run; it stays inside the nap until the second has
    # raced it, so however slow the machine, the second finds the task held.
    a = subprocess.Popen([sys.executable, "-m", "magent", "resume", task_id], env={**os.environ, **env},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_nap(magent_home, a)
        b = run("resume", task_id, env=env)   # a waiting resume would never return: a holds the task
        assert b.code == 2
        assert f"task {task_id} is in use by pid {a.pid}" in b.err
    finally:
        wake.touch()
        out, err = a.communicate(timeout=120)
    assert a.returncode == 0, (out, err)
    assert ledger_lines(ledger) == ["a", "nap", "b"]
