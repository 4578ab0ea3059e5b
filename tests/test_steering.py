"""Steering a running task from another process (issue 32): a message the model reads at its
next turn, a pause, a cancel; each a control signal a second process writes without the run's
lock and the run applies once, in order, at a safe point. Real ``magent run`` subprocesses."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from magent.store.signals import numbers
from support.cli import invoke, run
from support.engine import task_dir
from support.steerflow import HI, injections, main_path, make_flow, request_after_injection, start, wait_for

def test_a_message_to_a_running_task_reaches_the_model_at_its_next_turn(tmp_path: Path, magent_home: Path) -> None:
    proc = start(make_flow(tmp_path, turns=4))
    task_id = wait_for(magent_home, '"tool":"shell.run"', proc)
    steered = invoke("chat", task_id[:8], HI, "--wait")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert steered.code == 0, steered.err
    assert steered.out.splitlines() == [
        f"task {task_id[:8]} is running: message queued (signal 1); the agent reads it at its next turn",
        "all done"]  # --wait: the agent's next answer
    assert f"✉ operator said: {HI}" in out  # the run's live view shows it arriving
    # One injection entry in the conversation, the model sees it as a user message next turn.
    assert injections(main_path(task_id)) == [(1, HI)]
    assert HI in request_after_injection(task_id)
    report = tmp_path / "trace.html"  # the HTML report says it too
    assert invoke("trace", task_id, "--html", str(report)).code == 0
    assert f"operator said: {HI}" in report.read_text()
    td = task_dir(task_id)
    assert td.checkpoints.read(td.checkpoints.last_number()).signals_applied == 1
    assert json.loads((td.path / "signals" / "000001.json").read_text())["kind"] == "message"


def test_pause_then_approve_and_cancel_a_running_task(tmp_path: Path, magent_home: Path) -> None:
    proc = start(make_flow(tmp_path, turns=8, server=True))
    task_id = wait_for(magent_home, '"tool":"shell.run"', proc)
    paused = invoke("tasks", "pause", task_id[:8])
    out, err = proc.communicate(timeout=60)
    assert paused.code == 0, paused.err
    assert paused.out == f"task {task_id[:8]} paused; go on with: magent resume {task_id[:8]} --approve\n"
    assert proc.returncode == 3, err
    assert "✉ operator asked to pause" in out and "Paused by an operator" in out
    td = task_dir(task_id)
    cp = td.checkpoints.read(td.checkpoints.last_number())
    assert cp.awaiting_human and cp.human_request.kind == "operator" and cp.signals_applied == 1
    assert td.load_task().status.value == "awaiting_human"
    # A second pause of a task that is not running is refused in one line.
    again = invoke("tasks", "pause", task_id[:8])
    assert again.code == 2 and again.err.strip() == (
        f"magent: error: task {task_id[:8]} is not running (awaiting_human); there is nothing to pause")

    resumed = start_resume(task_id)
    wait_for(magent_home, '"type":"human_decision"', resumed)
    deadline = time.time() + 20
    while not children(resumed.pid) and time.time() < deadline:  # its MCP server (a group of its own)
        time.sleep(0.05)
    started = children(resumed.pid)
    assert started
    cancelled = invoke("tasks", "cancel", task_id[:8])
    out, err = resumed.communicate(timeout=60)
    assert cancelled.code == 0, cancelled.err
    assert cancelled.out == f"task {task_id} cancelled\n"
    assert "✉ operator asked to cancel" in out and "cancelled" in out
    task = td.load_task()
    assert task.status.value == "cancelled" and task.error == "cancelled by a person"
    for pgid in [resumed.pid, *started]:  # nothing is left of the run's groups: no server, no tool
        with pytest.raises(ProcessLookupError):
            os.killpg(pgid, 0)
    steps = invoke("trace", task_id).out
    assert "operator asked to pause" in steps and "operator asked to cancel" in steps


def children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (zombies aside)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry))
    return found


def start_resume(task_id: str):  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-m", "magent", "resume", task_id, "--approve", "--no-input"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_steering_a_task_that_is_not_running_says_what_to_do(tmp_path: Path, magent_home: Path) -> None:
    flow = make_flow(tmp_path, turns=1, nap=0)
    done = run("run", str(flow), "-t", "do the work", "--no-input")
    assert done.code == 0, done.err
    (task_id,) = [p.name for p in (magent_home / "tasks").iterdir()]
    r = invoke("tasks", "pause", task_id[:8])
    assert r.code == 2 and r.err.strip() == (
        f"magent: error: task {task_id[:8]} is not running (completed); there is nothing to pause")
    import magent
    from magent.errors import TaskStateError

    with pytest.raises(TaskStateError, match="is not running; `magent chat"):
        magent.steer(task_id, "hello")
    assert numbers(task_dir(task_id).path) == []


def test_the_python_api_steers_and_pauses_a_running_task(tmp_path: Path, magent_home: Path) -> None:
    import asyncio

    import magent

    proc = start(make_flow(tmp_path, turns=8))
    task_id = wait_for(magent_home, '"tool":"shell.run"', proc)

    async def steer_then_pause():  # type: ignore[no-untyped-def]
        sent = await magent.asteer(task_id, HI)
        return sent, await magent.apause(task_id)

    sent, paused = asyncio.run(steer_then_pause())
    proc.communicate(timeout=60)
    assert (sent.task_id, sent.signal, sent.kind) == (task_id, 1, "message")
    assert paused.status.value == "awaiting_human" and paused.pause.kind == "operator"
    assert injections(main_path(task_id)) == [(1, HI)]
    td = task_dir(task_id)
    last = td.checkpoints.last_number()
    assert td.checkpoints.read(last).signals_applied == 2
    # A fork from the pause starts a signal folder of its own (its signals are numbered from 1).
    forked = invoke("resume", task_id[:8], "--from-checkpoint", str(last), "--approve", "--no-input")
    assert forked.code == 0, forked.err
    fork = next(p.name for p in (magent_home / "tasks").iterdir() if p.name != task_id)
    assert task_dir(fork).checkpoints.read(0).signals_applied == 0


def test_a_signal_is_never_written_through_a_link(tmp_path: Path, magent_home: Path) -> None:
    from magent.errors import SymlinkError
    from magent.store.signals import send

    task = tmp_path / "task"
    task.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (task / "signals").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SymlinkError, match="is a symbolic link"):
        send(task, "message", "hello")
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_in_a_terminal_the_run_shows_the_message_arrive_and_pauses_inline(tmp_path: Path, magent_home: Path) -> None:
    from support.terminal import Terminal

    term = Terminal("run", str(make_flow(tmp_path, turns=8)), "-t", "do the work")
    term.expect("→ shell.run")
    task_id = next((magent_home / "tasks").iterdir()).name
    assert invoke("chat", task_id[:8], HI).code == 0
    term.expect("✉ operator said:")  # (styled: the message follows the label's colour codes)
    term.expect(HI)
    assert invoke("tasks", "pause", task_id[:8], "--no-wait").out.startswith(f"task {task_id[:8]}: pause sent")
    term.expect("✉ operator asked to pause")
    term.expect("Paused by an operator")
    term.expect("[a]pprove / [l]ater")  # in a terminal the run asks inline
    term.type("a")
    term.expect("message (optional):")
    term.type("")
    term.expect("all done")
    assert term.finish() == 0
    assert task_dir(task_id).load_task().status.value == "completed"
    assert HI in request_after_injection(task_id)
