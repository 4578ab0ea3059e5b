"""Agents as tools: ``sub_agents`` delegation in child sessions with isolated histories."""

from __future__ import annotations

import json
from pathlib import Path

from magent.models.session import MAIN_SESSION
from support.cli import invoke
from support.crashflow import ledger_lines, only_task
from support.delegateflow import make_delegation
from support.engine import (
    agent_yaml, all_files_parse, checkpoint_numbers, events, kv_store, task_dir, write,
)


def test_a_sub_agent_works_in_its_own_session_and_its_answer_is_the_tool_result(tmp_path: Path,
                                                                                 magent_home: Path) -> None:
    flow = make_delegation(tmp_path)
    ledger = tmp_path / "ledger.txt"
    result = invoke("run", str(flow), "-t", "the lead's own task", env={"LEDGER": str(ledger)})
    assert result.code == 0, result.err
    task_id = only_task(magent_home)
    td = task_dir(task_id)
    assert td.load_task().result == "stored final"
    assert kv_store(task_id) == {"k1": 1, "final": "lead done"}
    assert ledger_lines(ledger) == ["a", "b", "c"]
    entries = list(td.entries.load().values())
    firsts = {e.session: e for e in reversed(entries) if e.session}
    assert len(firsts) == 2
    (child,) = [sid for sid, first in firsts.items() if "Put a and b" in first.content]
    mine = [e for e in entries if e.session == child]
    # Isolated: the child's history starts with the call's task, not the lead's conversation.
    assert mine[0].parent_id is None and mine[0].role == "user" and mine[0].name == "lead"
    assert mine[0].content == "Put a and b in the ledger, and k1 in kv."
    assert all("the lead's own task" not in e.content for e in mine)
    assert mine[-1].role == "assistant" and mine[-1].content == "all done"
    # The lead sees each sub-agent's answer as the result of its agents.NAME call.
    lead_results = [e for e in entries if e.session is None and e.role == "tool"]
    assert [e.content for e in lead_results] == ["all done", "scribed"]
    assert [e.name for e in lead_results] == ["agents.worker", "agents.scribe"]
    # The child was open in checkpoints while it ran, and is not once it finished.
    cps = [td.checkpoints.read(n) for n in checkpoint_numbers(task_id)]
    open_in = [cp for cp in cps if cp.sessions and cp.sessions[0].session_id == child]
    assert open_in and all(len(cp.sessions) == 1 for cp in cps if cp.sessions)
    assert open_in[0].reason == "session_start" and open_in[0].sessions[0].agent == "worker"
    assert open_in[0].sessions[0].parent == MAIN_SESSION and open_in[0].sessions[0].depth == 1
    assert not cps[-1].sessions
    # Events of the child carry its session; its model calls are its own agent's.
    evs = events(task_id)
    child_calls = [e for e in evs if e.type == "llm_call" and e.field("session") == child]
    assert [e.field("agent") for e in child_calls] == ["worker"] * 3
    assert [e.field("agent") for e in evs if e.type == "llm_call" and not e.field("session")] == ["lead"] * 3
    started = [e for e in evs if e.type == "session_started"]
    finished = [e for e in evs if e.type == "session_finished"]
    assert [e.field("agent") for e in started] == ["worker", "scribe"]
    assert [e.field("session") for e in started][0] == child
    assert finished[0].field("status") == "completed" and finished[0].field("output") == "all done"
    trace = json.loads(td.trace_file.read_text())
    info = trace["sub_agent_sessions"][child]
    assert info["agent"] == "worker" and info["status"] == "completed" and info["message_count"] == 7
    all_files_parse(magent_home)
    shown = invoke("tasks", "show", task_id)
    assert "sessions     2 besides the main conversation" in shown.out
    assert f"{child[:8]} worker completed agent · node lead · 7 messages · 3 model calls" in shown.out
    during = open_in[1].sequence
    at = invoke("checkpoints", "show", task_id, str(during))
    assert "open sessions   1" in at.out and f"{child[:8]} worker running agent · node lead" in at.out
    as_json = json.loads(invoke("checkpoints", "show", task_id, str(during), "--json").out)
    assert as_json["sessions"][0]["session_id"] == child


def test_a_failing_sub_agent_is_an_observation_and_the_caller_goes_on(tmp_path: Path) -> None:
    write(tmp_path, "boss.script.yaml", """
responses:
  - tool_calls: [{name: agents.flaky, arguments: {task: "look it up"}}]
  - tool_calls: [{name: agents.flaky, arguments: {}}]
  - content: "I will answer myself: 42"
""")
    write(tmp_path, "flaky.script.yaml", """
responses:
  - tool_calls: [{name: kv.get, arguments: {key: nothing}}]
  - tool_calls: [{name: kv.get, arguments: {key: nothing}}]
""")
    write(tmp_path, "boss.yaml", agent_yaml("boss", extra="sub_agents: [flaky]\n"))
    write(tmp_path, "flaky.yaml", agent_yaml("flaky", extra="max_iterations: 1\n"))
    result = invoke("run", str(tmp_path / "boss.yaml"), "-t", "find the answer")
    assert result.code == 0, result.err
    task_id = result.out.split()[1]
    td = task_dir(task_id)
    assert td.load_task().result == "I will answer myself: 42"
    observations = [e.content for e in td.entries.load().values() if e.session is None and e.role == "tool"]
    assert observations[0].startswith("[FAILURE] agent 'flaky' failed: agent 'flaky' reached max_iterations (1)")
    assert observations[1] == "[ERROR] agents.flaky needs a 'task' argument: the instruction for the agent, as text"
    finished = [e for e in events(task_id) if e.type == "session_finished"]
    assert [e.field("status") for e in finished] == ["failed"]


def test_delegation_nests_to_the_depth_limit_then_the_call_is_refused(tmp_path: Path) -> None:
    # An agent that delegates to itself: each level plays the same script in its own session.
    write(tmp_path, "echo.script.yaml", """
responses:
  - tool_calls: [{name: agents.echo, arguments: {task: "go one deeper"}}]
  - content: "back up"
""")
    write(tmp_path, "echo.yaml", agent_yaml("echo", extra="sub_agents: [echo]\n"))
    result = invoke("run", str(tmp_path / "echo.yaml"), "-t", "recurse")
    assert result.code == 0, result.err
    task_id = result.out.split()[1]
    started = [e for e in events(task_id) if e.type == "session_started"]
    assert [e.field("depth") for e in started] == [1, 2, 3]          # default max_delegation_depth
    refused = [e.content for e in task_dir(task_id).entries.load().values()
               if e.role == "tool" and e.content.startswith("[ERROR] cannot call agents.echo")]
    assert len(refused) == 1
    assert "sub-agents nest at most 3 deep (echo → echo → echo → echo is already 3 deep" in refused[0]


def test_an_unknown_sub_agent_is_a_validate_error(tmp_path: Path) -> None:
    write(tmp_path, "boss.yaml", agent_yaml("boss", extra="sub_agents: [ghost]\n"))
    write(tmp_path, "boss.script.yaml", "responses:\n  - content: hi\n")
    result = invoke("validate", str(tmp_path / "boss.yaml"))
    assert result.code == 2
    assert "sub_agents" in result.err and "no agent 'ghost'" in result.err


def test_a_tool_approval_inside_sub_agents_pauses_the_task_and_approve_continues_that_session(
        tmp_path: Path, magent_home: Path) -> None:
    flow = make_delegation(tmp_path, approve=True, at_once=True)  # both sub-agents from one turn of the lead
    ledger = tmp_path / "ledger.txt"
    env = {"LEDGER": str(ledger)}
    result = invoke("run", str(flow), "-t", "needs approvals", "--no-input", env=env)
    task_id = only_task(magent_home)
    asked = []
    sessions: list[str] = []
    while result.code == 3:
        td = task_dir(task_id)
        cp = td.checkpoints.read(checkpoint_numbers(task_id)[-1])
        request = cp.human_request
        assert request.kind == "tool_approval" and request.session is not None
        open_ids = {s.session_id: s.agent for s in cp.sessions}
        assert request.session in open_ids                  # the session that asked is open
        asked.append((open_ids[request.session], request.details["arguments"]["line"]))
        sessions.append(request.session)
        assert len(asked) < 6, asked
        result = invoke("resume", task_id, "--approve", "--no-input", env=env)
    assert result.code == 0, result.err
    assert sorted(asked) == [("scribe", "c"), ("worker", "a"), ("worker", "b")]
    pauses = [e for e in map(json.loads, task_dir(task_id).events_file.read_text().splitlines())
              if e["type"] == "awaiting_human"]
    assert [e.get("session") for e in pauses] == sessions      # each pause names its session
    assert sorted(ledger_lines(ledger)) == ["a", "b", "c"]
    td = task_dir(task_id)
    assert kv_store(task_id) == {"k1": 1, "final": "lead done"}
    lead = td.full_state(td.checkpoints.read(checkpoint_numbers(task_id)[-1])).messages
    assert sorted(m.content for m in lead if m.role == "tool") == ["all done", "scribed"]
