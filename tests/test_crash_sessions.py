"""Crash tests inside child sessions: SIGKILL at exact points in a sub-agent's run (failpoints)
and a real kill -9 while a sub-agent's tool call is in flight, then ``magent resume``.

The lead delegates to two sub-agents in turn (worker: ledger a and b; scribe: ledger c).
Resumed, the task must end exactly as an uninterrupted run does: same result and kv, every
ledger line once (no finished tool call or finished sub-agent run again), contiguous
checkpoints, every call answered once in every session's history.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli import invoke
from support.crashflow import (
    histories_are_whole, killed_and_resumed, killed_in_nap_then_paused, ledger_lines, run_whole,
)
from support.delegateflow import make_delegation
from support.engine import all_files_parse, checkpoint_numbers, kv_store, task_dir

POINTS = [
    ("after_assistant_entry", 1),   # the lead asked for the worker; no child yet
    ("before_checkpoint", 3),       # the child's first entry written, its checkpoint not
    ("after_checkpoint", 3),        # the child is open in a checkpoint, nothing done yet
    ("after_assistant_entry", 2),   # the worker's first turn is on disk
    ("after_tool_intent", 1), ("after_tool_call", 1), ("after_tool_entry", 2),
    ("after_checkpoint", 4), ("after_tool_call", 3), ("after_tool_entry", 3),
    ("after_assistant_entry", 4),   # the worker's final answer written, its caller not told
    ("after_tool_entry", 4),        # the caller has the answer; no checkpoint since
    ("after_assistant_entry", 6),   # inside the second sub-agent: the first one is done
    ("after_tool_call", 4), ("after_tool_entry", 6), ("after_node_end", 1),
]


def assert_same_end_state(task_id: str, ledger: Path) -> None:
    td = task_dir(task_id)
    task = td.load_task()
    assert task.status.value == "completed" and task.result == "stored final"
    assert kv_store(task_id) == {"k1": 1, "final": "lead done"}
    assert ledger_lines(ledger) == ["a", "b", "c"]          # every finished call ran exactly once
    numbers = checkpoint_numbers(task_id)
    assert numbers == list(range(len(numbers)))
    last = td.checkpoints.read(numbers[-1])
    assert last.sessions == []                               # no session left open
    lead = td.full_state(last).messages
    assert [m.content for m in lead if m.role == "tool"] == ["all done", "scribed"]
    # Each sub-agent that finished: one history whose calls are each answered once.
    finished = [e for e in td.read_events() if e.type == "session_finished" and e.field("status") == "completed"]
    assert sorted(e.field("agent") for e in finished) == ["scribe", "worker"]
    histories_are_whole(td, finished)
    trace = json.loads(td.trace_file.read_text())
    statuses = {s["agent"]: s["status"] for s in trace["sub_agent_sessions"].values() if s["status"] == "completed"}
    assert statuses == {"worker": "completed", "scribe": "completed"}
    all_files_parse(td.path.parent.parent)


@pytest.mark.parametrize("point, nth", POINTS, ids=[f"{p}@{n}" for p, n in POINTS])
def test_killed_inside_a_sub_agent_resumes_to_the_same_end(point: str, nth: int, tmp_path: Path,
                                                          magent_home: Path) -> None:
    task_id, ledger = killed_and_resumed(make_delegation(tmp_path), magent_home, point, nth, "delegate",
                                         in_child=True)
    assert_same_end_state(task_id, ledger)


def test_an_uninterrupted_run_ends_in_the_same_state(tmp_path: Path, magent_home: Path) -> None:
    assert_same_end_state(*run_whole(make_delegation(tmp_path), magent_home, "delegate"))


def test_sigkill_while_a_sub_agent_naps_then_resume(tmp_path: Path, magent_home: Path) -> None:
    """A real kill -9 (no failpoint) during a sub-agent's MCP call: resume asks about that call
    in the sub-agent's session, then finishes without repeating anything."""
    task_id, ledger, cp = killed_in_nap_then_paused(make_delegation(tmp_path, nap=600), magent_home, "nap")
    assert cp.human_request.session == cp.sessions[0].session_id and cp.sessions[0].agent == "worker"
    finished = invoke("resume", task_id, "--reject", "--message", "no second nap", env={"LEDGER": str(ledger)})
    assert finished.code == 0, finished.err
    assert ledger_lines(ledger) == ["a", "b", "c"]
    worker = [e for e in task_dir(task_id).entries.load().values()
              if e.role == "tool" and e.name == "ledger.nap"]
    assert len(worker) == 1 and "a person declined this call: no second nap" in worker[0].content
