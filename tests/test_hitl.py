"""Human in the loop: pauses, resume with decisions, cancel, time travel, replay (issue 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from magent.models import TaskStatus
from support.cli import invoke, run
from support.engine import all_files_parse, home_snapshot, kv_store, task_dir
from support.holders import hold_task

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PUBLISH = str(EXAMPLES / "workflows/publish.yaml")
TRIAGE = str(EXAMPLES / "workflows/triage.yaml")


def start(target: str, *args: str) -> str:
    result = invoke("run", target, "-t", "Announce the Friday closure", "--no-input", *args)
    assert result.code == 3, result.out + result.err
    return result.out.split()[1]


def kv(task_id: str) -> dict:
    return kv_store(task_id)


def test_pause_prints_the_commands_and_survives_a_new_process(magent_home: Path) -> None:
    result = run("run", PUBLISH, "-t", "Announce the Friday closure")  # a subprocess: stdin is not a tty
    assert result.code == 3
    task_id = result.out.split()[1]
    assert f"magent resume {task_id} --approve" in result.out
    assert f"magent resume {task_id} --reject --message TEXT" in result.out
    assert f"magent resume {task_id} --modify FILE" in result.out
    td = task_dir(task_id)
    assert td.load_task().status == TaskStatus.awaiting_human
    cp = td.checkpoints.read(td.checkpoints.numbers()[-1])
    assert cp.awaiting_human and cp.human_request.question == "Publish this announcement?"
    assert cp.human_request.output.startswith("Hi all!")
    resumed = run("resume", task_id[:8], "--approve")   # another process, later
    assert resumed.code == 0, resumed.err
    assert kv(task_id)["published"].startswith("Hi all! The office is closed on Friday")
    task = td.load_task()
    assert task.status == TaskStatus.completed
    # the result is what the person approved (the workflow's `result: approve`), not "stored published"
    assert task.result == "Hi all! The office is closed on Friday. Enjoy the long weekend!"
    assert resumed.out.rstrip().endswith(task.result)


def test_reject_routes_back_then_a_second_reject_fails_with_the_message(magent_home: Path) -> None:
    task_id = start(PUBLISH)
    first = invoke("resume", task_id, "--reject", "--message", "Say which Friday")
    assert first.code == 3
    td = task_dir(task_id)
    state = td.full_state(td.checkpoints.read(td.checkpoints.numbers()[-1]))
    assert "[a person, reject] Say which Friday" in [m.content for m in state.messages]
    assert state.metadata["human"]["action"] == "reject"
    second = invoke("resume", task_id, "--reject", "--message", "still wrong")
    assert second.code == 1
    task = td.load_task()
    assert task.status == TaskStatus.failed
    assert task.error == "rejected by a person at 'approve': still wrong"
    assert "published" not in kv(task_id)


def test_modify_applies_state_updates_from_a_file(magent_home: Path, tmp_path: Path) -> None:
    task_id = start(PUBLISH)
    edits = tmp_path / "edits.yaml"
    edits.write_text("metadata:\n  last_output: Office closed Friday 28 Nov.\n  reviewer: sam\n")
    result = invoke("resume", task_id, "--modify", str(edits), "--message", "tightened")
    assert result.code == 0, result.err
    assert kv(task_id)["published"] == "Office closed Friday 28 Nov."
    td = task_dir(task_id)
    assert td.load_task().result == "Office closed Friday 28 Nov."   # the edited text
    last = td.checkpoints.read(td.checkpoints.numbers()[-1])
    assert last.state.metadata["reviewer"] == "sam"
    decisions = [e for e in td.read_events() if e.type == "human_decision"]
    assert decisions[0].field("action") == "modify" and decisions[0].field("message") == "tightened"


def test_approval_gate_pauses_after_its_node(magent_home: Path) -> None:
    task_id = start(TRIAGE, "--set", "ticket=checkout down", "--set", "priority=high")
    cp = task_dir(task_id).checkpoints.read(task_dir(task_id).checkpoints.numbers()[-1])
    assert cp.human_request.kind == "approval" and cp.position == "escalate" and cp.node_done
    assert invoke("resume", task_id, "--approve").code == 0
    assert task_dir(task_id).load_task().result.startswith("URGENT")


@pytest.mark.parametrize("args, message", [
    (["--approve"], "is completed; nothing to resume"),
    (["--reject", "--message", "x"], "is completed; nothing to resume"),
    ([], "is completed; nothing to resume"),
])
def test_answering_again_or_resuming_a_completed_task_is_an_error(magent_home: Path, args, message) -> None:
    task_id = start(PUBLISH)
    assert invoke("resume", task_id, "--approve").code == 0
    before = home_snapshot(magent_home)
    result = invoke("resume", task_id, *args)
    assert result.code == 2 and message in result.err
    assert home_snapshot(magent_home) == before


def test_bad_resume_input_changes_nothing(magent_home: Path, tmp_path: Path) -> None:
    task_id = start(PUBLISH)
    done = invoke("run", str(EXAMPLES / "agents/note_taker.yaml"), "-t", "x").out.split()[1]
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("metadata: {a: 1\n")
    bad_field = tmp_path / "field.yaml"
    bad_field.write_text("routing_key: [1, 2]\n")
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("metdata: {a: 1}\n")
    before = home_snapshot(magent_home)
    cases = [
        (["resume", "0000dead", "--approve"], "no task matches"),
        (["resume", "../../etc", "--approve"], "is not a task id"),
        (["resume", task_id, "--modify", str(bad_yaml)], "bad.yaml:"),
        (["resume", task_id, "--modify", str(bad_field)], "routing_key"),
        (["resume", task_id, "--modify", str(unknown)], "unknown State field 'metdata'"),
        (["resume", task_id, "--from-checkpoint", "999"], "has no checkpoint 999"),
        (["resume", done, "--approve"], "is completed"),
        (["resume", task_id, "--approve", "--reject"], "only one of"),
        (["resume", task_id, "--message", "hi"], "--message goes with"),
        (["resume", task_id], "waiting for a person"),
    ]
    for args, message in cases:
        result = invoke(*args)
        assert result.code == 2, (args, result.out, result.err)
        assert message in result.err, (args, result.err)
        assert "Traceback" not in result.err
        assert home_snapshot(magent_home) == before, args


def test_cancel_a_paused_task(magent_home: Path) -> None:
    task_id = start(PUBLISH)
    assert invoke("tasks", "cancel", task_id[:8]).code == 0
    assert task_dir(task_id).load_task().status == TaskStatus.cancelled
    again = invoke("resume", task_id, "--approve")
    assert again.code == 2 and "cancelled" in again.err
    assert invoke("tasks", "cancel", task_id).code == 2


def test_time_travel_forks_a_new_task_from_a_checkpoint(magent_home: Path) -> None:
    task_id = start(TRIAGE, "--set", "ticket=checkout down", "--set", "priority=high")
    td = task_dir(task_id)
    route_done = next(n for n in td.checkpoints.numbers()
                      if td.checkpoints.read(n).position == "route" and td.checkpoints.read(n).node_done)
    result = invoke("resume", task_id, "--from-checkpoint", str(route_done), "--set", "priority=low")
    assert result.code == 0, result.out + result.err
    child_id = result.out.split()[1]
    assert child_id != task_id
    child = task_dir(child_id).load_task()
    assert child.parent_task_id == task_id and child.parent_checkpoint == route_done
    assert child.result.startswith("Thanks for the report")        # the low-priority branch
    parent = td.load_task()
    assert parent.status == TaskStatus.awaiting_human             # the original is untouched
    assert [f.task_id for f in parent.forks] == [child_id]
    listing = invoke("checkpoints", "list", task_id)
    assert f"forked → {child_id[:8]}" in listing.out
    child_listing = invoke("checkpoints", "list", child_id)
    assert f"forked from task {task_id[:8]} at checkpoint {route_done}" in child_listing.out
    # the branch's conversation starts from the parent's entries at that checkpoint
    parent_cp = td.checkpoints.read(route_done)
    child_first = task_dir(child_id).checkpoints.read(0)
    assert child_first.leaf_entry_id == parent_cp.leaf_entry_id


@pytest.mark.parametrize("target, args, decisions", [
    ("agents/note_taker.yaml", [], []),
    ("workflows/write_review.yaml", [], []),
    ("workflows/publish.yaml", [], [["--reject", "--message", "which Friday?"], ["--approve"]]),
])
def test_replay_of_a_finished_example_matches(magent_home: Path, target, args, decisions) -> None:
    result = invoke("run", str(EXAMPLES / target), "-t", "x", "--no-input", *args)
    task_id = result.out.split()[1]
    for decision in decisions:
        invoke("resume", task_id, *decision)
    assert task_dir(task_id).load_task().status == TaskStatus.completed
    report = invoke("replay", task_id)
    assert report.code == 0, report.out + report.err
    assert report.out.startswith("replay matched:")


def test_replay_reports_the_first_divergence(magent_home: Path) -> None:
    task_id = invoke("run", str(EXAMPLES / "agents/note_taker.yaml"), "-t", "x").out.split()[1]
    entries_file = task_dir(task_id).entries.path
    # Tamper with the record: the model's second reply (in the conversation, where events.jsonl
    # points for it) now reads a key that was never stored.
    changed = []
    for line in entries_file.read_text().splitlines():
        entry = json.loads(line)
        for call in entry.get("tool_calls") or []:
            if call["tool"] == "get":
                call["arguments"] = {"key": "nope"}
        changed.append(json.dumps(entry))
    entries_file.write_text("\n".join(changed) + "\n")
    report = invoke("replay", task_id, "--json")
    assert report.code == 1
    doc = json.loads(report.out)
    assert not doc["matched"]
    # placed at a step of the original's trace, as `magent trace` numbers them
    assert doc["step"] == 3
    assert doc["divergence"].startswith("step 3 of the original's trace (a tool call at node 'note_taker'): "
                                        "arguments: recorded ")
    assert '"nope"' in doc["divergence"]
    assert "kv.get" in invoke("trace", task_id, "--step", "3").out
    assert f"see: magent trace {task_id[:8]} --step 3" in invoke("replay", task_id).out


def test_a_second_resume_of_the_same_task_fails_at_once_naming_the_holder(magent_home: Path) -> None:
    task_id = start(PUBLISH)
    with hold_task(task_id) as holder:  # it never lets go by itself: a waiting resume would hang
        result = invoke("resume", task_id, "--approve")
        assert result.code == 2
        assert f"pid {holder.pid}" in result.err
    assert invoke("resume", task_id, "--approve").code == 0   # the killed holder released it
    all_files_parse(magent_home)


def test_a_result_naming_no_node_is_refused_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "workflows").mkdir()
    flow = tmp_path / "workflows" / "flow.yaml"
    flow.write_text(Path(PUBLISH).read_text().replace("result: approve", "result: [draft, aprove]"))
    (tmp_path / "agents").symlink_to(EXAMPLES / "agents")
    checked = invoke("validate", str(flow))
    assert checked.code == 2
    assert "result[1]" in checked.err and "'aprove' is not a node" in checked.err
