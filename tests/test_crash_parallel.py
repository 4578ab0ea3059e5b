"""Crash tests between parallel branches: SIGKILL at points inside a fan-out (two branches at
once) and inside a map (items two at a time), and a real kill -9 while one branch's tool call is
in flight, then ``magent resume`` to the same end as an uninterrupted run.

Which branch reaches a failpoint first depends on scheduling; the verdict does not: every
finished tool call ran once, finished branches and items were not run again, and the task ends
with the same answers, contiguous checkpoints and no session left open.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.cli import invoke
from support.crashflow import (
    histories_are_whole, killed_and_resumed, killed_in_nap_then_paused, ledger_lines, run_whole,
)
from support.engine import all_files_parse, checkpoint_numbers, kv_store, task_dir
from support.parallelflow import make_parallel

POINTS = [
    ("after_checkpoint", 5),        # the fan-out's branches are open, neither has acted
    ("after_assistant_entry", 3),   # a branch's first turn is on disk
    ("after_tool_intent", 1), ("after_tool_call", 1), ("after_tool_entry", 1),
    ("after_tool_call", 2), ("after_node_end", 2),       # one branch's node is done, the other's not
    ("after_checkpoint", 9), ("after_node_end", 3),
    ("after_checkpoint", 14),       # around the join
    ("after_assistant_entry", 9),   # inside the map: items run two at a time
    ("after_tool_call", 4), ("after_tool_call", 5), ("after_tool_entry", 5),
    ("after_checkpoint", 23), ("after_tool_call", 6), ("after_node_end", 5),
]
LINES = ["L1", "R1", "R2", "x", "y", "z"]


def assert_same_end_state(task_id: str, ledger: Path) -> None:
    td = task_dir(task_id)
    task = td.load_task()
    assert task.status.value == "completed" and task.result == "stored final"
    assert kv_store(task_id) == {"final": ["recorded x", "recorded y", "recorded z"]}
    assert sorted(ledger_lines(ledger)) == LINES          # every finished call ran exactly once
    numbers = checkpoint_numbers(task_id)
    assert numbers == list(range(len(numbers)))
    assert td.checkpoints.read(numbers[-1]).sessions == []
    done = [e for e in td.read_events() if e.type == "session_finished" and e.field("status") == "completed"]
    # Two branches and three items finished, each once.
    assert len(done) == 5 and len({e.field("session") for e in done}) == 5
    histories_are_whole(td, done)
    all_files_parse(td.path.parent.parent)


@pytest.mark.parametrize("point, nth", POINTS, ids=[f"{p}@{n}" for p, n in POINTS])
def test_killed_between_parallel_branches_resumes_to_the_same_end(point: str, nth: int, tmp_path: Path,
                                                                 magent_home: Path) -> None:
    task_id, ledger = killed_and_resumed(make_parallel(tmp_path), magent_home, point, nth, "parallel")
    assert_same_end_state(task_id, ledger)


def test_an_uninterrupted_parallel_run_ends_in_the_same_state(tmp_path: Path, magent_home: Path) -> None:
    assert_same_end_state(*run_whole(make_parallel(tmp_path), magent_home, "parallel"))


def test_sigkill_while_one_branch_naps_and_the_other_has_finished(tmp_path: Path, magent_home: Path) -> None:
    """A real kill -9 (no failpoint) during the right branch's MCP call; resume asks about that
    call in the right branch's session, and the left branch is not run again."""
    task_id, ledger, cp = killed_in_nap_then_paused(make_parallel(tmp_path, nap=600), magent_home, "nap")
    right = next(s for s in cp.sessions if s.key == "branch:right")
    assert cp.human_request.session == right.session_id
    finished = invoke("resume", task_id, "--reject", "--message", "no second nap", env={"LEDGER": str(ledger)})
    assert finished.code == 0, finished.err
    assert_same_end_state(task_id, ledger)
