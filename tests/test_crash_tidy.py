"""What a killed run leaves in its task goes when a command next opens the task (issue 30): its
lock files and the temp files of its writes (the committer's spare checkpoint file among them).
A live run's are never touched: only a task that no process holds is tidied."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from support.cli import invoke, run
from support.crashflow import make_flow, only_task, wait_for_nap

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "workflows"
READS = [("trace",), ("trace", "--json"), ("tasks", "show"), ("tasks", "list")]


def temp_files(task: Path) -> list[str]:
    """The temp files in a task's directory (``.NAME.PID.RAND.tmp``), as ``ls -a`` shows them."""
    return sorted(p.name for p in [*task.iterdir(), *task.glob("artifacts/*")] if p.name.endswith(".tmp"))


def _read(command: tuple[str, ...], task_id: str) -> None:
    shown = invoke(*command, *([] if command == ("tasks", "list") else [task_id]))
    assert shown.code == 0, shown.err


@pytest.mark.parametrize("command", READS, ids=" ".join)
def test_a_run_killed_as_it_completes_leaves_no_temp_file_once_read(command: tuple[str, ...],
                                                                    magent_home: Path) -> None:
    killed = run("run", str(EXAMPLES / "write_review.yaml"), "-t", "a desk tray", "--no-input",
                 env={"MAGENT_FAILPOINT": "before_trace"})
    assert killed.code == -signal.SIGKILL, (killed.code, killed.err)
    task_id = only_task(magent_home)
    task = magent_home / "tasks" / task_id
    assert json.loads((task / "task.json").read_text())["status"] == "completed"
    assert temp_files(task), "the kill was meant to leave the spare checkpoint file"
    _read(command, task_id)
    assert temp_files(task) == []
    assert list((magent_home / "locks").iterdir()) == []
    assert invoke("tasks", "show", task_id).code == 0   # and the task reads as before
    assert invoke("trace", task_id).code == 0


def test_a_live_runs_temp_files_are_left_to_it(magent_home: Path, tmp_path: Path) -> None:
    flow = make_flow(tmp_path, nap=120)
    env = {**os.environ, "LEDGER": str(tmp_path / "ledger.txt")}
    proc = subprocess.Popen([sys.executable, "-m", "magent", "run", str(flow), "-t", "nap"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_nap(magent_home, proc)
        task = magent_home / "tasks" / only_task(magent_home)
        held = temp_files(task)
        assert held, "a live run in sync mode keeps a spare checkpoint file ready"
        for command in READS:
            _read(command, task.name)
        assert temp_files(task) == held
        assert proc.poll() is None
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
