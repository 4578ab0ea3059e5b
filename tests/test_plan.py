"""Plan nodes (seed 000 hierarchical planning): a plan checked and sent back when invalid, levels
of subtasks side by side with their dependencies' results, retries, one revision, then a person."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from magent.engine.planning import PlanError, levels, read_plan
from support.cli import invoke
from support.crashflow import ledger_lines, only_task
from support.engine import agent_yaml, checkpoint_numbers, events, kv_store, task_dir, write
from support.planflow import make_plan_flow

WORKERS = ["researcher", "writer"]


def test_a_plan_runs_by_levels_with_dependency_results_retries_and_is_revised_once(
        tmp_path: Path, magent_home: Path) -> None:
    flow = make_plan_flow(tmp_path)
    ledger = tmp_path / "ledger.txt"
    result = invoke("run", str(flow), "-t", "write the report", env={"LEDGER": str(ledger)})
    assert result.code == 0, result.err
    task_id = only_task(magent_home)
    td = task_dir(task_id)
    assert kv_store(task_id) == {"final": "Final report: A is 1, B is 2."}
    # The facts ran once (kept by the revision), the flaky draft twice (a retry), the writer's once.
    assert ledger_lines(ledger)[:2] in (["A", "B"], ["B", "A"])
    assert ledger_lines(ledger)[2:] == ["flaky", "flaky", "draft"]
    evs = events(task_id)
    invalid = [e for e in evs if e.type == "plan_invalid"]
    assert len(invalid) == 1 and "cycle: facts_a → draft → facts_a" in invalid[0].field("error")
    entries = list(td.entries.load().values())
    assert any(e.content.startswith("That plan cannot be used: the dependencies form a cycle") for e in entries)
    plans = [e for e in evs if e.type == "plan"]
    assert [p.field("revision") for p in plans] == [0, 1]
    assert plans[0].field("levels") == [["facts_a", "facts_b"], ["draft"]]
    # The two facts ran at the same time: both sessions opened before either finished.
    order = [(e.type, e.field("key")) for e in evs if e.type in ("session_started", "session_finished")]
    opened = [i for i, (t, k) in enumerate(order) if t == "session_started" and k and k.startswith("subtask:facts")]
    first_done = next(i for i, (t, _) in enumerate(order) if t == "session_finished" and i > opened[0])
    assert opened[1] < first_done
    # The writer got the results of what it depends on.
    writer_task = next(e for e in entries if e.role == "user" and e.content.startswith("Draft the report")
                       and e.session and e.parent_id is None and e.session in {
                           x.field("session") for x in evs if x.type == "session_started" and x.field("agent") == "writer"})
    assert "## facts_a\nfact A is 1" in writer_task.content and "## facts_b\nfact B is 2" in writer_task.content
    retried = [(e.field("subtask"), e.field("status")) for e in evs if e.type == "subtask_finished"]
    assert retried.count(("draft", "retrying")) == 1 and retried.count(("draft", "failed")) == 1
    assert retried.count(("draft", "completed")) == 1
    assert [e.field("reason") for e in evs if e.type == "plan_revising"] == [
        "subtask 'draft' (flaky) failed 2 time(s): agent 'flaky' reached max_iterations (1) without a final answer"]
    # The plan, its revision and each subtask's status are in State.
    cp = td.checkpoints.read(checkpoint_numbers(task_id)[-1])
    record = cp.state.metadata["plan"]
    assert record["revision"] == 1 and [s["agent"] for s in record["plan"]] == ["researcher", "researcher", "writer"]
    assert record["revisions"][0]["plan"][2]["agent"] == "flaky"
    assert record["subtasks"]["draft"] == {"status": "completed", "agent": "writer", "attempts": 0,
                                           "result": "report: A=1, B=2"}
    assert record["subtasks"]["facts_a"]["result"] == "fact A is 1"
    assert record["result"] == "Final report: A is 1, B is 2."


def test_a_plan_that_still_fails_after_its_revision_pauses_for_a_person(tmp_path: Path, magent_home: Path) -> None:
    flow = make_plan_flow(tmp_path, revise_ok=False)
    ledger = tmp_path / "ledger.txt"
    env = {"LEDGER": str(ledger)}
    paused = invoke("run", str(flow), "-t", "write the report", "--no-input", env=env)
    assert paused.code == 3, paused.err
    task_id = only_task(magent_home)
    cp = task_dir(task_id).checkpoints.read(checkpoint_numbers(task_id)[-1])
    assert cp.human_request.kind == "plan_failed" and cp.human_request.allowed_actions == ["approve", "reject"]
    assert "subtask 'draft' (flaky) failed 2 time(s)" in cp.human_request.question
    done = invoke("resume", task_id, "--approve", "--message", "try harder", env=env)
    assert done.code == 0, done.err
    assert kv_store(task_id) == {"final": "Final report: A is 1, B is 2."}
    assert sorted(ledger_lines(ledger)) == ["A", "B"] + ["flaky"] * 4   # the facts were not run again
    # --reject fails the node, saying why.
    other = tmp_path / "again"
    flow = make_plan_flow(other, revise_ok=False)
    paused = invoke("run", str(flow), "-t", "write the report", "--no-input", env=env)
    second = paused.out.split()[1]
    rejected = invoke("resume", second, "--reject", "--message", "stop", env=env)
    assert rejected.code == 1
    assert task_dir(second).load_task().error.startswith(
        "plan node 'plan': a person rejected going on after subtask 'draft' (flaky) failed 2 time(s)")


def test_a_planner_that_never_gives_a_valid_plan_fails_the_node_saying_why(tmp_path: Path) -> None:
    write(tmp_path, "planner.script.yaml", "responses:\n" + "  - content: I would rather not plan.\n" * 3)
    write(tmp_path, "planner.yaml", agent_yaml("planner"))
    write(tmp_path, "researcher.script.yaml", "responses:\n  - content: done\n")
    write(tmp_path, "researcher.yaml", agent_yaml("researcher"))
    path = write(tmp_path, "flow.yaml", """
name: flow
entry_point: p
nodes:
  p: {type: plan, agent: planner, workers: [researcher], max_plan_attempts: 3}
""")
    result = invoke("run", str(path), "-t", "plan it")
    assert result.code == 1
    task = task_dir(result.out.split()[1]).load_task()
    assert task.error == ("plan node 'p': no valid plan from 'planner' after 3 answers; the last: the answer "
                          "has no JSON object; reply with the plan as one JSON object {\"subtasks\": [{\"id\", "
                          "\"description\", \"agent\", \"depends_on\"}], \"success_criteria\"}")


def test_a_plan_node_naming_an_unknown_worker_is_a_validate_error(tmp_path: Path) -> None:
    write(tmp_path, "planner.script.yaml", "responses:\n  - content: hi\n")
    write(tmp_path, "planner.yaml", agent_yaml("planner"))
    path = write(tmp_path, "flow.yaml", """
name: flow
entry_point: p
nodes:
  p: {type: plan, agent: planner, workers: [ghost]}
""")
    result = invoke("validate", str(path))
    assert result.code == 2
    assert "ghost" in result.err and "nodes.p.workers" in result.err and "flow.yaml" in result.err


def plan_text(*subtasks: dict) -> str:
    return json.dumps({"subtasks": list(subtasks)})


@pytest.mark.parametrize("text, message", [
    ("no plan here", "the answer has no JSON object"),
    (plan_text({"id": "a", "description": "x", "agent": "ghost"}),
     "subtask 'a' names agent 'ghost', which is not one of the workers: researcher, writer"),
    (plan_text({"id": "a", "description": "x", "agent": "writer", "depends_on": ["z"]}),
     "subtask 'a' depends on 'z', which is not a subtask of the plan (ids: a)"),
    (plan_text({"id": "a", "description": "x", "agent": "writer"}, {"id": "a", "description": "y", "agent": "writer"}),
     "subtask ids must be unique; repeated: a"),
    (plan_text({"id": "a", "description": "x", "agent": "writer", "depends_on": ["b"]},
               {"id": "b", "description": "y", "agent": "writer", "depends_on": ["c"]},
               {"id": "c", "description": "z", "agent": "writer", "depends_on": ["a"]}),
     "the dependencies form a cycle: a → b → c → a"),
    (json.dumps({"subtasks": []}), "subtasks: expected at least 1 item, got []"),
    (plan_text({"id": "a", "agent": "writer"}), "subtasks/0: 'description' is required"),
])
def test_an_invalid_plan_is_described_for_the_model(text: str, message: str) -> None:
    with pytest.raises(PlanError) as caught:
        read_plan(text, WORKERS, max_subtasks=5)
    assert message in str(caught.value)


def test_levels_follow_the_dependencies_in_plan_order() -> None:
    plan = read_plan(plan_text(
        {"id": "d", "description": "x", "agent": "writer", "depends_on": ["b", "c"]},
        {"id": "a", "description": "x", "agent": "writer"},
        {"id": "b", "description": "x", "agent": "writer", "depends_on": ["a"]},
        {"id": "c", "description": "x", "agent": "writer"},
    ), WORKERS, max_subtasks=5)
    assert levels(plan["subtasks"]) == [["a", "c"], ["b"], ["d"]]


def test_a_tool_that_needs_approval_inside_a_subtask_pauses_the_task_and_approve_continues_it(
        tmp_path: Path, magent_home: Path) -> None:
    flow = make_plan_flow(tmp_path)
    (tmp_path / "mcp.yaml").write_text((tmp_path / "mcp.yaml").read_text().rstrip()
                                       + "\n    tools: {append: {needs_approval: true}}\n")
    ledger = tmp_path / "ledger.txt"
    env = {"LEDGER": str(ledger)}
    result = invoke("run", str(flow), "-t", "write the report", "--no-input", env=env)
    task_id = only_task(magent_home)
    pauses = []
    while result.code == 3:
        cp = task_dir(task_id).checkpoints.read(checkpoint_numbers(task_id)[-1])
        assert cp.human_request.kind == "tool_approval"
        subtask = next(s for s in cp.sessions if s.session_id == cp.human_request.session)
        pauses.append((subtask.key.split("#")[0], cp.human_request.details["arguments"]["line"]))
        result = invoke("resume", task_id, "--approve", env=env)
    assert result.code == 0, result.err
    # Each call paused once, in the session of its subtask, and ran once after its approval.
    assert sorted(pauses) == [("subtask:draft", "draft"), ("subtask:draft", "flaky"), ("subtask:draft", "flaky"),
                              ("subtask:facts_a", "A"), ("subtask:facts_b", "B")]
    assert sorted(ledger_lines(ledger)) == ["A", "B", "draft", "flaky", "flaky"]
    assert kv_store(task_id) == {"final": "Final report: A is 1, B is 2."}
