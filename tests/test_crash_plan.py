"""Crash tests in the middle of a plan: SIGKILL while the planner writes the plan, while a level's
two subtasks run side by side, between a failed subtask and its retry, around the revision and the
synthesis, and a real kill -9 while a subtask's tool call is in flight; then ``magent resume`` to
the same end as an uninterrupted run: no finished subtask or tool call runs again.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from support.cli import invoke
from support.crashflow import (
    histories_are_whole, killed_and_resumed, killed_in_nap_then_paused, ledger_lines, run_whole,
)
from support.engine import all_files_parse, checkpoint_numbers, kv_store, task_dir
from support.planflow import make_plan_flow

POINTS = [
    ("after_checkpoint", 2),        # the planner's session is open
    ("after_assistant_entry", 1),   # its first (invalid) plan is on disk
    ("after_checkpoint", 5),        # the plan is in progress, no subtask has started
    ("after_assistant_entry", 3),   # mid-level: one fact's first turn is on disk
    ("after_tool_intent", 1), ("after_tool_call", 2), ("after_tool_entry", 1),
    ("after_checkpoint", 10),       # mid-level: one fact done or both running
    ("after_tool_call", 3),         # the flaky draft's call ran, its result is not recorded
    ("after_checkpoint", 14), ("after_checkpoint", 17),   # around the retry and the revision
    ("after_assistant_entry", 9), ("after_tool_call", 5),  # the writer
    ("after_assistant_entry", 12),  # the synthesis
    ("after_node_end", 1),
]
LINES = Counter({"A": 1, "B": 1, "flaky": 2, "draft": 1})
RESULT = "Final report: A is 1, B is 2."


def ran_already(task_id: str, ledger: Path, line: str) -> bool:
    """Whether a recovered call ran: a line the ledger holds more often than the recorded
    results of its calls ran once more."""
    evs = task_dir(task_id).read_events()
    # (scripted call ids repeat from one session to the next: a call is its session and id)
    answered = {(e.field("session"), e.field("call_id")) for e in evs if e.type == "tool_result"}
    recorded = {(e.field("session"), e.field("call_id")) for e in evs if e.type == "tool_call"
                and (e.field("arguments") or {}).get("line") == line
                and (e.field("session"), e.field("call_id")) in answered}
    return ledger_lines(ledger).count(line) > len(recorded)


def assert_same_end_state(task_id: str, ledger: Path) -> None:
    td = task_dir(task_id)
    task = td.load_task()
    assert task.status.value == "completed" and task.result == "stored final"
    assert kv_store(task_id) == {"final": RESULT}
    assert Counter(ledger_lines(ledger)) == LINES          # every finished call ran exactly once
    numbers = checkpoint_numbers(task_id)
    assert numbers == list(range(len(numbers)))
    last = td.checkpoints.read(numbers[-1])
    assert last.sessions == []
    record = last.state.metadata["plan"]
    assert {sid: s["status"] for sid, s in record["subtasks"].items()} == {
        "facts_a": "completed", "facts_b": "completed", "draft": "completed"}
    assert record["revision"] == 1 and record["result"] == RESULT
    evs = td.read_events()
    done = Counter(e.field("subtask") for e in evs if e.type == "subtask_finished" and e.field("status") == "completed")
    assert done == {"facts_a": 1, "facts_b": 1, "draft": 1}      # no finished subtask ran again
    histories_are_whole(td, [e for e in evs if e.type == "session_finished" and e.field("status") == "completed"])
    all_files_parse(td.path.parent.parent)


@pytest.mark.parametrize("point, nth", POINTS, ids=[f"{p}@{n}" for p, n in POINTS])
def test_killed_in_the_middle_of_a_plan_resumes_to_the_same_end(point: str, nth: int, tmp_path: Path,
                                                                magent_home: Path) -> None:
    task_id, ledger = killed_and_resumed(make_plan_flow(tmp_path), magent_home, point, nth, "write the report",
                                         ran=ran_already)
    assert_same_end_state(task_id, ledger)


def test_an_uninterrupted_plan_ends_in_the_same_state(tmp_path: Path, magent_home: Path) -> None:
    assert_same_end_state(*run_whole(make_plan_flow(tmp_path), magent_home, "write the report"))


def test_sigkill_while_a_subtask_naps_and_its_sibling_has_finished(tmp_path: Path, magent_home: Path) -> None:
    """A real kill -9 (no failpoint) during fact B's MCP call; resume asks about that call in
    fact B's session, and fact A is not run again."""
    task_id, ledger, cp = killed_in_nap_then_paused(make_plan_flow(tmp_path, nap=600), magent_home,
                                                    "write the report")
    nap_session = next(s for s in cp.sessions if s.key.startswith("subtask:facts_b"))
    assert cp.human_request.session == nap_session.session_id
    finished = invoke("resume", task_id, "--reject", "--message", "no second nap", env={"LEDGER": str(ledger)})
    assert finished.code == 0, finished.err
    assert_same_end_state(task_id, ledger)
