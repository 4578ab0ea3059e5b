"""Steering a task while its sub-agents run (issue 32): a message goes to the conversation that
runs (or the one ``--session`` names), a pause or a cancel stops the sub-agents at their next
turn instead of waiting for them to finish. Real ``magent run`` subprocesses."""

from __future__ import annotations

from pathlib import Path

from support.cli import invoke
from support.engine import task_dir
from support.steerflow import HI, make_lead, request_after_injection, session_of, start, wait_for


def test_a_message_goes_to_the_sub_agent_that_runs(tmp_path: Path, magent_home: Path) -> None:
    proc = start(make_lead(tmp_path))
    task_id = wait_for(magent_home, '"tool":"shell.run"', proc)  # the worker runs; the lead waits
    steered = invoke("chat", task_id[:8], HI, "--wait")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert steered.code == 0, steered.err
    assert steered.out.splitlines()[1] == "worker done"  # --wait: the answer of the one that took it
    worker = session_of(task_id, "worker")
    (injection,) = [e for e in task_dir(task_id).entries.load().values() if e.entry_type == "injection"]
    assert (injection.session, injection.content) == (worker, HI)
    assert HI in request_after_injection(task_id)  # the worker's next model call carries it
    assert "lead done" in out


def test_session_names_the_conversation_and_a_wrong_name_is_refused(tmp_path: Path, magent_home: Path) -> None:
    proc = start(make_lead(tmp_path))
    task_id = wait_for(magent_home, '"tool":"shell.run"', proc)
    wrong = invoke("chat", task_id[:8], HI, "--session", "nosuch")
    named = invoke("chat", task_id[:8], HI, "--session", "worker", "--json")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    worker = session_of(task_id, "worker")
    assert wrong.code == 2 and wrong.err.strip() == (
        f"magent: error: no open session of task {task_id[:8]} is 'nosuch'; open now: main, worker ({worker[:8]})")
    assert named.code == 0, named.err
    (injection,) = [e for e in task_dir(task_id).entries.load().values() if e.entry_type == "injection"]
    assert injection.session == worker and injection.signal == 1  # the refused one wrote no signal
    stopped = invoke("chat", task_id[:8], "more", "--session", "worker")
    assert stopped.code == 2 and "--session goes with a running task" in stopped.err


def test_pause_and_cancel_stop_running_sub_agents_at_their_next_turn(tmp_path: Path, magent_home: Path) -> None:
    flow = make_lead(tmp_path, turns=30, both=True)  # two sub-agents, ~20 s of work each
    proc = start(flow)
    task_id = wait_for(magent_home, '"tool":"shell.run"', proc)
    paused = invoke("tasks", "pause", task_id[:8])
    out, err = proc.communicate(timeout=30)
    assert paused.code == 0 and proc.returncode == 3, err
    td = task_dir(task_id)
    cp = td.checkpoints.read(td.checkpoints.last_number())
    assert cp.human_request.kind == "operator"
    assert cp.human_request.session in {session_of(task_id, "worker"), session_of(task_id, "helper")}
    assert {s.agent for s in cp.sessions} == {"worker", "helper"}  # both open, to go on from where they were

    resumed = start_resume(task_id)
    wait_for(magent_home, '"type":"human_decision"', resumed)
    cancelled = invoke("tasks", "cancel", task_id[:8])
    out, err = resumed.communicate(timeout=30)
    assert cancelled.code == 0, cancelled.err
    assert td.load_task().status.value == "cancelled"
    assert "worker done" not in out and "helper done" not in out  # neither ran to its end


def start_resume(task_id: str):  # type: ignore[no-untyped-def]
    from test_steering import start_resume as start_it

    return start_it(task_id)
