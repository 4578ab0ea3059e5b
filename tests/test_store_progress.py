"""Node progress in checkpoints: each session's progress names its kind (schema 19), is validated
when read, and a task written at schema 18 (progress as untyped keys) still shows, resumes and
finishes without running anything twice."""

from __future__ import annotations

import json
from pathlib import Path

from magent.models import SCHEMA_VERSION
from magent.store.checkpoints import canonical_hash
from support.cli import invoke
from support.crashflow import ledger_lines, only_task, write_ledger_servers
from support.engine import checkpoint_numbers, kv_store, task_dir, write
from support.parallelflow import make_parallel
from support.planflow import make_plan_flow


def as_schema_18(task_id: str) -> dict[str, bytes]:
    """Rewrite the task's checkpoints as magent 18 wrote them: progress without its ``kind`` (an
    empty one left out), hashed again. Returns the files as rewritten."""
    td = task_dir(task_id)

    def untagged(progress: dict) -> dict:
        assert "kind" in progress
        return {k: v for k, v in progress.items() if k != "kind"}

    for n in checkpoint_numbers(task_id):
        path = td.checkpoints.path(n)
        doc = json.loads(path.read_text())
        doc.pop("sha256")
        doc["schema_version"] = 18
        if "node_progress" in doc:
            doc["node_progress"] = untagged(doc["node_progress"])
            if not doc["node_progress"]:
                del doc["node_progress"]
        for session in doc.get("sessions", []):
            if "progress" in session:
                session["progress"] = untagged(session["progress"])
                if not session["progress"]:
                    del session["progress"]
        doc["sha256"] = canonical_hash(doc)
        path.write_text(json.dumps(doc, separators=(",", ":")))
    return {p.name: p.read_bytes() for p in td.path.glob("checkpoint_*.json")}


def paused(flow: Path, task: str, env: dict[str, str], home: Path) -> str:
    """Run ``flow`` until it pauses; its task's id."""
    result = invoke("run", str(flow), "-t", task, "--no-input", env=env)
    assert result.code == 3, result.err
    return only_task(home)


def shown(task_id: str, sequence: int | None = None) -> dict:
    args = ["checkpoints", "show", task_id] + ([str(sequence)] if sequence is not None else []) + ["--json"]
    result = invoke(*args)
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_a_schema_18_task_paused_in_a_fan_out_branch_resumes_and_runs_nothing_twice(
        tmp_path: Path, magent_home: Path) -> None:
    flow = make_parallel(tmp_path, right_pause=True)
    ledger = tmp_path / "ledger.txt"
    env = {"LEDGER": str(ledger)}
    task_id = paused(flow, "pause in a branch", env, magent_home)
    old = as_schema_18(task_id)
    cp = shown(task_id)
    assert cp["schema_version"] == SCHEMA_VERSION
    assert cp["node_progress"]["kind"] == "fan_out"                  # the main session waits at the fan-out
    assert sorted(cp["node_progress"]["fanout"]["branches"]) == ["left", "right"]
    right = next(s for s in cp["sessions"] if s["key"] == "branch:right")
    assert right["position"] == "check" and (right["progress"]["kind"], right["progress"]["entered"]) == ("node", True)
    listed = json.loads(invoke("checkpoints", "list", task_id, "--json").out)["checkpoints"]
    assert not any(row["corrupt"] for row in listed)
    done = invoke("resume", task_id, "--approve", "--no-input", env=env)
    assert done.code == 0, done.err
    assert sorted(ledger_lines(ledger)) == ["L1", "R1", "R2", "x", "y", "z"]
    assert kv_store(task_id) == {"final": ["recorded x", "recorded y", "recorded z"]}
    td = task_dir(task_id)
    assert {name: (td.path / name).read_bytes() for name in old} == old    # never rewritten
    newest = json.loads(td.checkpoints.path(checkpoint_numbers(task_id)[-1]).read_text())
    assert newest["schema_version"] == SCHEMA_VERSION


def test_a_schema_18_plan_paused_for_a_person_resumes_with_its_finished_subtasks(
        tmp_path: Path, magent_home: Path) -> None:
    flow = make_plan_flow(tmp_path, revise_ok=False)
    ledger = tmp_path / "ledger.txt"
    env = {"LEDGER": str(ledger)}
    task_id = paused(flow, "write the report", env, magent_home)
    as_schema_18(task_id)
    progress = shown(task_id)["node_progress"]
    assert progress["kind"] == "plan" and progress["plan"]["revision"] == 1
    assert progress["plan"]["status"]["facts_a"]["status"] == "completed"
    done = invoke("resume", task_id, "--approve", "--message", "try harder", env=env)
    assert done.code == 0, done.err
    assert kv_store(task_id) == {"final": "Final report: A is 1, B is 2."}
    assert sorted(ledger_lines(ledger)) == ["A", "B"] + ["flaky"] * 4     # the facts were not run again


def approval_flow(folder: Path) -> Path:
    """A tool node whose tool needs a person's approval, then an agent that answers."""
    mcp = write_ledger_servers(folder)
    mcp.write_text(mcp.read_text().rstrip() + "\n    tools: {append: {needs_approval: true}}\n")
    write(folder, "closer.script.yaml", "responses:\n  - content: written\n")
    write(folder, "closer.yaml", """
        name: closer
        role: says it is done
        system_prompt: Say it is done.
        llm_config: {model: scripted, script: closer.script.yaml}
        """)
    return write(folder, "approve.yaml", """
        name: approve
        mcp_servers: mcp.yaml
        entry_point: append
        nodes:
          append: {type: tool, tool: ledger.append, arguments: {line: T}}
          close: {type: agent, agent: closer}
        edges:
          - {from: append, to: close}
        """)


def test_a_schema_18_tool_node_waiting_for_approval_runs_its_call_once(tmp_path: Path, magent_home: Path) -> None:
    """At schema 18 a tool node paused before its call kept only ``entered``: nothing in its keys
    says it is a tool node's, the pause does."""
    flow = approval_flow(tmp_path)
    ledger = tmp_path / "ledger.txt"
    env = {"LEDGER": str(ledger)}
    task_id = paused(flow, "append T", env, magent_home)
    as_schema_18(task_id)
    cp = shown(task_id)
    assert cp["human_request"]["kind"] == "tool_approval"
    assert (cp["node_progress"]["kind"], cp["node_progress"]["decisions"]) == ("tool", {})
    done = invoke("resume", task_id, "--approve", "--no-input", env=env)
    assert done.code == 0, done.err
    assert ledger_lines(ledger) == ["T"]
    assert task_dir(task_id).load_task().result == "written"


def test_progress_that_does_not_fit_its_kind_is_corrupt_and_recovery_falls_back(
        tmp_path: Path, magent_home: Path) -> None:
    flow = approval_flow(tmp_path)
    env = {"LEDGER": str(tmp_path / "ledger.txt")}
    task_id = paused(flow, "append T", env, magent_home)
    td = task_dir(task_id)
    last = checkpoint_numbers(task_id)[-1]
    path = td.checkpoints.path(last)
    doc = json.loads(path.read_text())
    doc.pop("sha256")
    doc["node_progress"] = {"kind": "tool", "entered": True, "iteration": 2}   # a tool node has no turns
    doc["sha256"] = canonical_hash(doc)
    path.write_text(json.dumps(doc))
    rows = json.loads(invoke("checkpoints", "list", task_id, "--json").out)["checkpoints"]
    assert [r["sequence"] for r in rows if r["corrupt"]] == [last]
    cp, notes = td.checkpoints.latest(repair=False)
    assert cp is not None and cp.sequence == last - 1
    assert f"checkpoint_{last:03d}.json: node_progress.tool.iteration" in notes[0]
