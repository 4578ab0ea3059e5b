"""A sweep that runs the moment a command lets go of its task still leaves the command its result.

``--retention-days 0`` makes a finished task due at once: the sweep here runs inside the
command, right after the task's lock is released and before the command returns, every time.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from magent.store.locks import Lock
from support.cli import invoke

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "workflows"


@pytest.fixture
def sweep_on_release(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """From now on, each release of a task's lock is followed at once by a retention sweep."""
    from magent import api

    reports: list[dict] = []
    release = Lock.release
    sweeping = False

    def release_then_sweep(self: Lock) -> None:
        nonlocal sweeping
        release(self)
        if sweeping or not self.what.startswith("task "):
            return
        sweeping = True  # (the sweep takes and lets go of locks too)
        try:
            reports.append(api.sweep().as_dict())
        finally:
            sweeping = False

    monkeypatch.setattr(Lock, "release", release_then_sweep)
    return reports


def _paused(magent_home: Path) -> str:
    paused = invoke("run", str(EXAMPLES / "triage.yaml"), "-t", "the app crashes", "--set", "priority=high",
                    "--set", "ticket=crash", "--retention-days", "0", "--json", "--no-input")
    assert paused.code == 3, paused.err
    return json.loads(paused.out.splitlines()[-1])["task_id"]


def _removed(magent_home: Path, task_id: str) -> None:
    assert not (magent_home / "tasks" / task_id).exists(), "the sweep did not remove the task"


def test_a_run_swept_as_it_ends_exits_0_with_its_answer(magent_home: Path, sweep_on_release) -> None:
    done = invoke("run", str(EXAMPLES / "write_review.yaml"), "-t", "a haiku", "--retention-days", "0", "--json",
                  "--no-input")
    assert done.code == 0, done.err
    result = json.loads(done.out.splitlines()[-1])
    assert result["type"] == "result" and result["status"] == "completed" and result["output"]
    _removed(magent_home, result["task_id"])
    plain = invoke("run", str(EXAMPLES / "write_review.yaml"), "-t", "a haiku", "--retention-days", "0",
                   "--no-input")
    assert plain.code == 0 and plain.err == "", plain.err
    assert "completed" in plain.out


def test_a_resume_swept_as_it_ends_exits_0_with_its_result(magent_home: Path, sweep_on_release) -> None:
    task_id = _paused(magent_home)
    done = invoke("resume", task_id, "--approve", "--json", "--no-input")
    assert done.code == 0, done.err
    result = json.loads(done.out.splitlines()[-1])
    assert result["task_id"] == task_id and result["status"] == "completed"
    _removed(magent_home, task_id)


def test_a_cancel_swept_as_it_ends_says_cancelled(magent_home: Path, sweep_on_release) -> None:
    task_id = _paused(magent_home)
    done = invoke("tasks", "cancel", task_id)
    assert done.code == 0, done.err
    assert f"task {task_id} cancelled" in done.out
    _removed(magent_home, task_id)
