"""A task's control channel (issue 32): signals another process writes without the run's lock,
applied by the run once and in order at its safe points, across kills. Real ``magent run``
subprocesses killed with SIGKILL at each point of a signal's life."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from magent.store.signals import pending, send
from support.cli import run
from support.engine import task_dir
from support.steerflow import HI, injections, main_path, make_flow, request_after_injection, start, wait_for

def test_signals_are_numbered_in_the_order_sent(tmp_path: Path) -> None:
    assert [send(tmp_path, "message", f"m{i}") for i in range(3)] + [send(tmp_path, "cancel")] == [1, 2, 3, 4]
    assert sorted(p.name for p in (tmp_path / "signals").iterdir()) == [".send.lock",
        "000001.json", "000002.json", "000003.json", "000004.json"]  # (no temp file left)
    assert [(s["signal"], s["kind"], s.get("text")) for s in pending(tmp_path, 2)] == [(3, "message", "m2"), (4, "cancel", None)]


# kills at each point of a signal's life: it is applied exactly once


def _steered_then_killed(tmp_path: Path, home: Path, failpoint: str | None, nap: float = 0.6) -> str:
    proc = start(make_flow(tmp_path, turns=4, nap=nap), env={"MAGENT_FAILPOINT": failpoint} if failpoint else None)
    task_id = wait_for(home, '"tool":"shell.run"', proc)
    send(task_dir(task_id).path, "message", HI)  # (this test is the second process)
    if failpoint is None:  # written, not applied: killed while the tool still sleeps
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    resumed = run("resume", task_id[:8], "--no-input")
    assert resumed.code == 0, resumed.err
    assert task_dir(task_id).load_task().status.value == "completed"
    return task_id


@pytest.mark.parametrize("failpoint", [None, "after_injection", "after_signals_applied"])
def test_a_kill_at_any_point_of_a_signal_applies_it_exactly_once(tmp_path: Path, magent_home: Path,
                                                                  failpoint: str | None) -> None:
    task_id = _steered_then_killed(tmp_path, magent_home, failpoint, nap=3 if failpoint is None else 0.6)
    assert injections(main_path(task_id)) == [(1, HI)]  # once in the conversation the model sees
    assert HI in request_after_injection(task_id)
    td = task_dir(task_id)
    assert td.checkpoints.read(td.checkpoints.last_number()).signals_applied == 1
    written = injections(td.entries.load().values())
    # Killed after its checkpoint: never applied again. Killed before it: the entry the killed
    # run wrote is off every checkpoint's path, and the resumed run applies the signal anew.
    assert len(written) == (2 if failpoint == "after_injection" else 1)
