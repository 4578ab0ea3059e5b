"""Parallel branches: fan-out edges that meet at a join, and map nodes over a list in State."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from magent.tools.function import FunctionProvider
from support.cli import invoke
from support.crashflow import ledger_lines, only_task
from support.engine import agent_yaml, checkpoint_numbers, events, kv_store, run_with, task_dir, write
from support.parallelflow import make_parallel
from magent.testing import FunctionModel


def test_a_fan_out_runs_branches_in_their_own_sessions_and_the_join_sees_every_output(
        tmp_path: Path, magent_home: Path) -> None:
    flow = make_parallel(tmp_path)
    ledger = tmp_path / "ledger.txt"
    result = invoke("run", str(flow), "-t", "do everything", env={"LEDGER": str(ledger)})
    assert result.code == 0, result.err
    task_id = only_task(magent_home)
    td = task_dir(task_id)
    assert sorted(ledger_lines(ledger)) == ["L1", "R1", "R2", "x", "y", "z"]
    kv = kv_store(task_id)
    assert kv == {"final": ["recorded x", "recorded y", "recorded z"]}   # the map's answers, in item order
    evs = events(task_id)
    branches = {e.field("key"): e.field("session") for e in evs
                if e.type == "session_started" and e.field("kind") == "branch"}
    assert set(branches) == {"branch:left", "branch:right"}
    entries = td.entries.load()
    plan_answer = next(e for e in entries.values() if e.node == "plan" and e.role == "assistant")
    for key, sid in branches.items():
        mine = [e for e in entries.values() if e.session == sid]
        assert mine[0].parent_id == plan_answer.id     # a branch continues the conversation so far
        assert mine[-1].content == ("left done" if key == "branch:left" else "right done")
    join = next(e for e in entries.values() if e.node == "merge" and e.session is None and e.role == "user")
    assert join.content.startswith("The parallel branches have finished.")
    assert "## left\nleft done" in join.content and "## right\nright done" in join.content
    fan = next(e for e in evs if e.type == "fan_out")
    assert fan.node == "plan" and fan.field("targets") == ["left", "right"] and fan.field("join") == "merge"
    # The branches' own nodes ran in their sessions.
    started = [(e.node, e.field("session")) for e in evs if e.type == "node_started"]
    assert ("left", branches["branch:left"]) in started and ("right", branches["branch:right"]) in started
    assert [n for n, s in started if s is None] == ["plan", "merge", "items", "record"]
    reasons = [td.checkpoints.read(n).reason for n in checkpoint_numbers(task_id)]
    assert reasons.count("fan_out") == 1 and reasons.count("branch_end") == 2 and reasons.count("join") == 1
    cp = td.checkpoints.read(checkpoint_numbers(task_id)[reasons.index("fan_out")])
    assert sorted(s.key for s in cp.sessions) == ["branch:left", "branch:right"]
    assert {s.position for s in cp.sessions} == {"left", "right"} and {s.stop_at for s in cp.sessions} == {"merge"}


def meeting_flow(folder: Path, *, items: int = 0, max_concurrency: int = 2) -> Path:
    """Branches (or items) that each call meet.wait: it returns once two callers are inside it."""
    for name in ("a", "b"):
        write(folder, f"{name}.script.yaml", """
responses:
  - tool_calls: [{name: meet.wait, arguments: {}}]
  - content: met
""")
        write(folder, f"{name}.yaml", agent_yaml(name, tools="[meet.*]"))
    write(folder, "start.script.yaml", "responses:\n  - content: go\n")
    write(folder, "start.yaml", agent_yaml("start"))
    write(folder, "end.script.yaml", "responses:\n  - content: all met\n")
    write(folder, "end.yaml", agent_yaml("end"))
    return write(folder, "meet.yaml", f"""
name: meet
entry_point: start
nodes:
  start: {{type: agent, agent: start}}
  a: {{type: agent, agent: a}}
  b: {{type: agent, agent: b}}
  spread: {{type: map, agent: a, over: metadata.things, max_concurrency: {max_concurrency}}}
  end: {{type: agent, agent: end}}
edges:
  - {{from: start, to: [a, b]}}
  - {{from: a, to: end}}
  - {{from: b, to: end}}
  - {{from: end, to: spread}}
""")


def meeting_point(size: int = 2) -> tuple[FunctionProvider, dict]:
    """A tool whose calls return together once ``size`` of them are waiting: sequential
    callers would never meet (each gives up after 60 s and says so)."""
    seen = {"inside": 0, "peak": 0}
    arrived: list[asyncio.Event] = []

    async def wait() -> str:
        seen["inside"] += 1
        seen["peak"] = max(seen["peak"], seen["inside"])
        me = asyncio.Event()
        arrived.append(me)
        if len(arrived) % size == 0:
            for event in arrived[-size:]:
                event.set()
        try:
            await asyncio.wait_for(me.wait(), 60)
            return "together"
        except asyncio.TimeoutError:
            return "alone"
        finally:
            seen["inside"] -= 1

    provider = FunctionProvider("meet")
    provider.add("wait", wait, "Wait for the others.", timeout_seconds=120)
    return provider, seen


def test_branches_and_map_items_run_at_the_same_time_within_max_concurrency(tmp_path: Path) -> None:
    flow = meeting_flow(tmp_path, max_concurrency=2)
    provider, seen = meeting_point(2)
    from magent.engine.context import RunOptions
    from magent.engine.graph import load_target
    from magent.engine.session import start_run

    graph = load_target(str(flow))
    outcome = asyncio.run(start_run(graph, "meet", initial={"metadata": {"things": [1, 2, 3, 4]}},
                                    options=RunOptions(extra_providers=[provider])))
    assert outcome.status.value == "completed", outcome.error
    results = [e.content for e in task_dir(outcome.task_id).entries.load().values() if e.name == "meet.wait"]
    assert results == ["together"] * 6          # two branches, then four items two by two
    assert seen["peak"] == 2                     # and never more than max_concurrency at once
    state = task_dir(outcome.task_id).full_state(task_dir(outcome.task_id).checkpoints.read(
        checkpoint_numbers(outcome.task_id)[-1]))
    assert state.metadata["spread"] == ["met"] * 4


@pytest.mark.parametrize("edges, message", [
    ("  - {from: s, to: [a, b]}\n  - {from: a, to: END}\n  - {from: b, to: END}\n",
     "fan-out s → [a, b]: the branches never meet"),
    ("  - {from: s, to: [a, b]}\n  - {from: a, to: j}\n  - {from: b, to: j, condition: \"routing_key == 'x'\"}\n"
     "  - {from: b, to: END}\n  - {from: j, to: END}\n",
     "fan-out s → [a, b]: the branch from 'b' can end the run (at 'b') without reaching 'j'"),
    ("  - {from: s, to: [a, b]}\n  - {from: a, to: b}\n  - {from: b, to: j}\n  - {from: j, to: END}\n",
     "fan-out s → [a, b]: 'b' is where the branches meet, so it cannot also be a branch"),
    ("  - {from: s, to: [a, b]}\n  - {from: a, to: c}\n  - {from: b, to: c}\n  - {from: c, to: j}\n"
     "  - {from: j, to: END}\n",
     None),
    ("  - {from: s, to: [a, a]}\n  - {from: a, to: j}\n",
     "a fan-out names each branch once; repeated: a"),
    ("  - {from: s, to: [a, END]}\n  - {from: a, to: j}\n",
     "END cannot be a branch of a fan-out"),
])
def test_fan_outs_that_cannot_join_are_validate_errors(tmp_path: Path, edges: str, message: str | None) -> None:
    write(tmp_path, "x.script.yaml", "responses:\n  - content: hi\n")
    write(tmp_path, "x.yaml", agent_yaml("x"))
    used = [n for n in ("s", "a", "b", "c", "j") if f" {n}," in edges or f" {n}}}" in edges
            or f"[{n}," in edges or f" {n}]" in edges]
    nodes = "".join(f"  {n}: {{type: agent, agent: x}}\n" for n in used)
    path = write(tmp_path, "flow.yaml", f"name: flow\nentry_point: s\nnodes:\n{nodes}edges:\n{edges}")
    result = invoke("validate", str(path))
    if message is None:
        # a and b both run c before j: c is where they meet, so c is the join (not j)
        assert result.code == 0, result.err
        graph = invoke("graph", str(path))
        assert "⇉ a, b  in parallel, joining at c" in graph.out and "⋈ waits for the branches a, b" in graph.out
        return
    assert result.code == 2
    assert message in result.err and "flow.yaml" in result.err and "edges" in result.err


def test_a_failed_branch_fails_the_run_or_is_reported_to_the_join(tmp_path: Path) -> None:
    write(tmp_path, "ok.script.yaml", "responses:\n  - content: fine\n")
    write(tmp_path, "ok.yaml", agent_yaml("ok"))
    write(tmp_path, "bad.script.yaml", "responses:\n  - tool_calls: [{name: kv.get, arguments: {key: none}}]\n")
    write(tmp_path, "bad.yaml", agent_yaml("bad", extra="max_iterations: 1\n"))
    write(tmp_path, "join.script.yaml", "responses:\n  - content: joined\n")
    write(tmp_path, "join.yaml", agent_yaml("join"))
    for policy in ("fail", "collect"):
        path = write(tmp_path, f"{policy}.yaml", f"""
name: {policy}
entry_point: s
nodes:
  s: {{type: agent, agent: ok}}
  a: {{type: agent, agent: ok}}
  b: {{type: agent, agent: bad}}
  j: {{type: agent, agent: join}}
edges:
  - {{from: s, to: [a, b], on_error: {policy}}}
  - {{from: a, to: j}}
  - {{from: b, to: j}}
""")
        result = invoke("run", str(path), "-t", "try")
        task_id = result.out.split()[1]
        td = task_dir(task_id)
        if policy == "fail":
            assert result.code == 1
            assert td.load_task().error == ("branch 'b' of the fan-out from 's' failed: agent 'bad' reached "
                                            "max_iterations (1) without a final answer")
        else:
            assert result.code == 0, result.err
            join = next(e for e in td.entries.load().values() if e.node == "j" and e.role == "user")
            assert "## a\nfine" in join.content
            assert "## b (failed)\nagent 'bad' reached max_iterations (1)" in join.content


def test_map_collects_item_errors_or_fails_naming_the_item(tmp_path: Path, magent_home: Path) -> None:
    ledger = tmp_path / "ledger.txt"
    flow = make_parallel(tmp_path, item_error=True, on_error="collect")
    result = invoke("run", str(flow), "-t", "collect", env={"LEDGER": str(ledger)})
    assert result.code == 0, result.err
    task_id = only_task(magent_home)
    kv = kv_store(task_id)
    assert kv["final"][0] == "recorded x" and kv["final"][2] == "recorded z"
    assert kv["final"][1] == {"error": "agent 'itemizer' reached max_iterations (2) without a final answer"}
    failed = make_parallel(tmp_path / "f", item_error=True, on_error="fail")
    result = invoke("run", str(failed), "-t", "fail", env={"LEDGER": str(ledger)})
    assert result.code == 1
    task = task_dir(result.out.split()[1]).load_task()
    assert task.error == ("map node 'items': item 1 failed: agent 'itemizer' reached max_iterations (2) "
                          "without a final answer")


@pytest.mark.parametrize("metadata, message", [
    ({}, "map node 'spread': over metadata.things: State has no metadata.things (set it with --set, "
         "a tool node's output_key, or a map's output_key)"),
    ({"things": "a, b"}, "map node 'spread': over metadata.things: expected a list, found text ('a, b')"),
    ({"things": {"a": 1}}, "map node 'spread': over metadata.things: expected a list, found a mapping"),
])
def test_a_map_over_something_that_is_not_a_list_fails_the_node_saying_what_and_where(
        tmp_path: Path, metadata: dict, message: str) -> None:
    flow = meeting_flow(tmp_path)
    graph_text = (tmp_path / "meet.yaml").read_text().replace("  - {from: start, to: [a, b]}\n  - {from: a, to: end}\n"
                                                               "  - {from: b, to: end}\n", "  - {from: start, to: end}\n")
    graph_text = graph_text.replace("  a: {type: agent, agent: a}\n  b: {type: agent, agent: b}\n", "")
    flow.write_text(graph_text)
    model = FunctionModel(lambda request: "ok")
    provider, _ = meeting_point()
    outcome = run_with(model, flow, initial={"metadata": metadata} if metadata else None, providers=[provider])
    assert outcome.status.value == "failed"
    assert outcome.error == message


def test_map_over_a_bad_state_path_is_a_validate_error(tmp_path: Path) -> None:
    write(tmp_path, "x.script.yaml", "responses:\n  - content: hi\n")
    write(tmp_path, "x.yaml", agent_yaml("x"))
    path = write(tmp_path, "flow.yaml", """
name: flow
entry_point: m
nodes:
  m: {type: map, agent: x, over: files}
""")
    result = invoke("validate", str(path))
    assert result.code == 2
    assert "nodes.m.over" in result.err and "'files' is not a list in State: write metadata.NAME" in result.err


def test_a_pause_inside_a_branch_pauses_the_task_and_approve_continues_that_branch(
        tmp_path: Path, magent_home: Path) -> None:
    flow = make_parallel(tmp_path, right_pause=True)
    ledger = tmp_path / "ledger.txt"
    env = {"LEDGER": str(ledger)}
    paused = invoke("run", str(flow), "-t", "pause in a branch", "--no-input", env=env)
    assert paused.code == 3, paused.err
    task_id = only_task(magent_home)
    td = task_dir(task_id)
    cp = td.checkpoints.read(checkpoint_numbers(task_id)[-1])
    assert cp.human_request.kind == "human_node" and cp.human_request.node == "check"
    right = next(s for s in cp.sessions if s.key == "branch:right")
    assert cp.human_request.session == right.session_id and right.position == "check"
    assert cp.position == "plan" and cp.node_progress.kind == "fan_out"   # the main session waits at the fan-out
    shown = invoke("checkpoints", "show", task_id)
    assert "open sessions" in shown.out and "branch:right running branch" in shown.out
    done = invoke("resume", task_id, "--approve", "--message", "right looks fine", "--no-input", env=env)
    assert done.code == 0, done.err
    assert sorted(ledger_lines(ledger)) == ["L1", "R1", "R2", "x", "y", "z"]    # nothing ran twice
    right_entries = [e for e in td.entries.load().values() if e.session == right.session_id]
    assert any(e.content == "[a person, approve] right looks fine" for e in right_entries)
    decision = next(e for e in events(task_id) if e.type == "human_decision")
    assert decision.field("session") == right.session_id


def test_time_travel_forks_with_the_sessions_as_they_were(tmp_path: Path, magent_home: Path) -> None:
    flow = make_parallel(tmp_path)
    ledger = tmp_path / "ledger.txt"
    env = {"LEDGER": str(ledger)}
    assert invoke("run", str(flow), "-t", "fork me", env=env).code == 0
    task_id = only_task(magent_home)
    td = task_dir(task_id)
    cps = [td.checkpoints.read(n) for n in checkpoint_numbers(task_id)]
    mid = next(cp for cp in cps if cp.reason == "branch_end")       # one branch done, one still open
    (finished,) = mid.node_progress.fanout.done
    (still_open,) = mid.sessions
    before = len(ledger_lines(ledger))
    forked = invoke("resume", task_id, "--from-checkpoint", str(mid.sequence), env=env)
    assert forked.code == 0, forked.err
    fork_id = forked.out.split()[1]
    fork = task_dir(fork_id)
    first = fork.checkpoints.read(0)
    assert [s.session_id for s in first.sessions] == [still_open.session_id]   # the same open session
    added = ledger_lines(ledger)[before:]
    assert ("L1" in added) == (finished != "left")            # the finished branch did not run again
    assert sorted(x for x in added if x in "xyz") == ["x", "y", "z"]
    assert kv_store(fork_id)["final"] == ["recorded x", "recorded y", "recorded z"]
    open_history = [e for e in fork.entries.load().values() if e.session == still_open.session_id]
    assert open_history[-1].content in ("left done", "right done")
