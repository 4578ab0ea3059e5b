"""A budget pause survives ``kill -9``, and budgets count what a killed run spent
(issue 12 item 3). Real processes, real SIGKILL."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from support.cli import invoke, run
from support.crashflow import only_task
from support.engine import all_files_parse, kv_store, task_dir
from test_budget import agent, pause_of

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("point", [
    "before_pause@1",          # the limit is reached, the pause not yet written
    "after_checkpoint@5",      # the pause's checkpoint is written, task.json still says running
    "after_tool_entry@2",      # mid-run, before the limit: what it spent after its checkpoint counts
    "after_assistant_entry@2",
])
def test_a_budget_pause_survives_kill_9(tmp_path: Path, magent_home: Path, point: str) -> None:
    flow = agent(tmp_path, "{max_model_calls: 2}")
    killed = run("run", str(flow), "-t", "go", env={"MAGENT_FAILPOINT": point})
    assert killed.code == -signal.SIGKILL, (killed.out, killed.err)
    task_id = only_task(magent_home)
    all_files_parse(magent_home)

    again = invoke("resume", task_id[:8])
    assert again.code == 3, again.out + again.err
    assert "budget reached: max_model_calls 2 for agent worker (used 2), at node worker" in again.out
    assert pause_of(task_id)["used"] == 2
    assert kv_store(task_id) == {"a": "1", "b": "2"}

    done = invoke("resume", task_id[:8], "--approve", "--budget", "max_model_calls=5")
    assert done.code == 0, done.out + done.err
    task = task_dir(task_id).load_task()
    assert task.result == "Done." and task.usage.calls == 4
    assert kv_store(task_id) == {"a": "1", "b": "2", "c": "3", "d": "4"}


def test_a_kill_after_the_pause_is_answered_keeps_the_raised_limit(tmp_path: Path, magent_home: Path) -> None:
    flow = agent(tmp_path, "{max_model_calls: 2}")
    assert invoke("run", str(flow), "-t", "go").code == 3
    task_id = only_task(magent_home)
    killed = run("resume", task_id[:8], "--approve", "--budget", "max_model_calls=5",
                 env={"MAGENT_FAILPOINT": "after_checkpoint@1"})
    assert killed.code == -signal.SIGKILL
    done = invoke("resume", task_id[:8])  # the raise is in task.json: no new pause
    assert done.code == 0, done.out + done.err
    assert task_dir(task_id).load_task().result == "Done."
