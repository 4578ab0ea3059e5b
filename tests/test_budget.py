"""Usage budgets (issue 12 item 3): limits on an agent, a workflow or a run; reaching one
pauses the task for a person (who raises it and goes on) or fails it; the counts are the
task's, across resumes and sub-agent sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import magent
from magent.errors import UsageError
from support.cli import invoke
from support.engine import home_snapshot, kv_store, task_dir, write

SCRIPT = """
responses:
  - content: "Let me look."
    tool_calls: [{name: kv.set, arguments: {key: a, value: "1"}}]
  - content: "Once more."
    tool_calls: [{name: kv.set, arguments: {key: b, value: "2"}}]
  - content: "And again."
    tool_calls: [{name: kv.set, arguments: {key: c, value: "3"}}, {name: kv.set, arguments: {key: d, value: "4"}}]
  - content: "Done."
"""


def agent(folder: Path, budget: str = "") -> Path:
    write(folder, "work.yaml", SCRIPT)
    extra = f"budget: {budget}\n" if budget else ""
    return write(folder, "worker.yaml", f"""
name: worker
role: works
system_prompt: Work.
tools: [kv.*]
llm_config: {{model: scripted, script: work.yaml}}
{extra}""")


def pause_of(task_id: str) -> dict:
    td = task_dir(task_id)
    cp = td.checkpoints.read(td.checkpoints.last_number())
    assert cp.awaiting_human and cp.human_request.kind == "budget"
    return cp.human_request.details


def test_an_agent_budget_pauses_and_a_person_raises_it(tmp_path: Path, magent_home: Path) -> None:
    r = invoke("run", str(agent(tmp_path, "{max_model_calls: 2}")), "-t", "go", "--no-input")
    assert r.code == 3, r.err
    task_id = r.out.split()[1]
    # The live view says which limit, for whom, where, and the figures; and how to go on.
    assert "budget reached: max_model_calls 2 for agent worker (used 2), at node worker" in r.out
    assert f"magent resume {task_id} --approve --budget max_model_calls=N" in r.out
    assert pause_of(task_id) == {"limit": "max_model_calls", "value": 2, "used": 2,
                                 "scope": "agent:worker", "agent": "worker"}
    assert kv_store(task_id) == {"a": "1", "b": "2"}  # both turns' tools ran, no third call

    # Approving without raising it: refused, nothing written.
    before = home_snapshot(magent_home)
    r = invoke("resume", task_id[:8], "--approve")
    assert r.code == 2
    assert r.err.strip().splitlines()[-1] == ("magent: error: the budget is still reached: max_model_calls 2, "
                                              "used 2; raise it with --budget max_model_calls=N (N above 2) to go on")
    assert home_snapshot(magent_home) == before

    # Raised to 3: one more call, counted across the resume, then the limit again.
    r = invoke("resume", task_id[:8], "--approve", "--budget", "max_model_calls=3")
    assert r.code == 3, r.err
    assert pause_of(task_id)["used"] == 3
    result = magent.resume(task_id, approve=True, budget={"max_model_calls": 10})
    assert result.status.value == "completed" and result.output == "Done."
    assert kv_store(task_id) == {"a": "1", "b": "2", "c": "3", "d": "4"}
    snapshot = task_dir(task_id).load_task().config_snapshot["options"]
    assert snapshot["agent_budgets"] == {"worker": {"max_model_calls": 10}}
    # The trace says it too.
    trace = invoke("trace", task_id[:8]).out
    assert trace.count("waiting for a person (budget): budget reached: max_model_calls") == 2


def test_a_run_budget_that_fails_the_task(tmp_path: Path) -> None:
    r = invoke("run", str(agent(tmp_path)), "-t", "go", "--budget", "max_tokens=30,on_exceeded=fail", "--json")
    assert r.code == 1
    lines = [json.loads(line) for line in r.out.splitlines()]
    reached = [line for line in lines if line.get("type") == "budget_reached"]
    assert len(reached) == 1 and reached[0]["limit"] == "max_tokens" and reached[0]["scope"] == "task"
    assert reached[0]["node"] == "worker" and reached[0]["used"] >= 30 and reached[0]["action"] == "fail"
    result = lines[-1]
    assert result["status"] == "failed" and result["error"]["type"] == "budget"
    assert result["error"]["message"].startswith("budget reached: max_tokens 30 for the task (used ")
    # The failed task continues once the limit is raised.
    again = invoke("resume", result["task_id"][:8], "--budget", "max_tokens=100000")
    assert again.code == 0, again.err
    assert task_dir(result["task_id"]).load_task().result == "Done."


def test_a_tool_call_limit_stops_before_the_turn_that_would_go_over(tmp_path: Path) -> None:
    result = magent.run(agent(tmp_path), "go", budget="max_tool_calls=3")
    assert result.status.value == "awaiting_human"
    # The third turn asks for two calls; one is left: neither runs before a person decides.
    assert pause_of(result.task_id) == {"limit": "max_tool_calls", "value": 3, "used": 4, "scope": "task",
                                        "agent": "worker"}
    assert kv_store(result.task_id) == {"a": "1", "b": "2"}
    done = magent.resume(result.task_id, approve=True, budget="max_tool_calls=4")
    assert done.status.value == "completed"
    assert kv_store(result.task_id) == {"a": "1", "b": "2", "c": "3", "d": "4"}


def test_a_person_can_stop_at_the_limit(tmp_path: Path) -> None:
    result = magent.run(agent(tmp_path), "go", budget={"max_model_calls": 1})
    stopped = magent.resume(result.task_id, reject=True, message="too dear")
    assert stopped.status.value == "failed"
    assert "a person stopped the run at the budget limit" in stopped.error.message


def test_a_workflow_budget_counts_sub_agent_sessions(tmp_path: Path) -> None:
    write(tmp_path, "lead.script.yaml", """
        responses:
          - tool_calls: [{name: agents.helper, arguments: {task: "count"}}]
          - content: "lead done"
        """)
    write(tmp_path, "helper.script.yaml", """
        responses:
          - content: "one"
            tool_calls: [{name: kv.set, arguments: {key: x, value: "1"}}]
          - content: "helper done"
        """)
    write(tmp_path, "lead.yaml", "name: lead\nrole: leads\nsystem_prompt: Lead.\nsub_agents: [helper]\n"
                                 "llm_config: {model: scripted, script: lead.script.yaml}\n")
    write(tmp_path, "helper.yaml", "name: helper\nrole: helps\nsystem_prompt: Help.\ntools: [kv.*]\n"
                                   "llm_config: {model: scripted, script: helper.script.yaml}\n")
    flow = write(tmp_path, "flow.yaml", """
        name: led
        entry_point: lead
        budget: {max_model_calls: 2}
        nodes:
          lead: {type: agent, agent: lead}
        """)
    result = magent.run(flow, "go")
    assert result.status.value == "awaiting_human"
    details = pause_of(result.task_id)
    # The lead's first call and the helper's first: the helper's second call is the third.
    assert details["scope"] == "task" and details["used"] == 2 and details["agent"] == "helper"
    done = magent.resume(result.task_id, approve=True, budget="max_model_calls=4")
    assert done.status.value == "completed" and done.output == "lead done"
    assert done.answered_calls == len(done.model_calls) == 4


@pytest.mark.parametrize("flag,message", [
    ("max_tokens=-5", "--budget: max_tokens must be above 0, not '-5'"),
    ("max_tokens=lots", "--budget: max_tokens must be a whole number, not 'lots'"),
    ("max_cost_usd=abc", "--budget: max_cost_usd must be a number, not 'abc'"),
    ("max_cost_usd=nan", "--budget: max_cost_usd must be above 0, not 'nan'"),
    ("max_money=3", "--budget: unknown limit 'max_money' (limits: max_tokens, max_cost_usd, "
                    "max_model_calls, max_tool_calls, on_exceeded)"),
    ("max_tokens", "--budget: 'max_tokens' is not NAME=VALUE (e.g. max_tokens=50000,max_cost_usd=1)"),
])
def test_a_bad_budget_is_one_line_and_writes_nothing(tmp_path: Path, magent_home: Path, flag: str,
                                                     message: str) -> None:
    r = invoke("run", str(agent(tmp_path)), "-t", "go", "--budget", flag)
    assert r.code == 2
    assert r.err.strip().splitlines() == [f"magent: error: {message}"]
    assert not (magent_home / "tasks").exists() or not any((magent_home / "tasks").iterdir())
    with pytest.raises(UsageError):
        magent.run(agent(tmp_path), "go", budget=flag)


def test_a_bad_budget_in_yaml_is_a_validate_error(tmp_path: Path) -> None:
    r = invoke("validate", str(agent(tmp_path, "{max_tokens: -1}")))
    assert r.code == 2 and "budget.max_tokens" in r.err
    r = invoke("validate", str(agent(tmp_path, "{max_cost_usd: lots}")))
    assert r.code == 2 and "budget.max_cost_usd" in r.err


def test_the_meter_counts_as_setting_each_field_would() -> None:
    """The meter adds into its ``Spent`` models' dicts: the counts, and the fields pydantic notes as
    set, are what ``spent.tokens += n``... leave."""
    from types import SimpleNamespace

    from magent.engine.budget import Meter
    from magent.models.budget import Spent

    run = SimpleNamespace(state=SimpleNamespace(sessions={}),
                          deps=SimpleNamespace(graph=SimpleNamespace(nodes={"n": SimpleNamespace(agent_name="w")})))
    meter = Meter(run)  # type: ignore[arg-type]
    expected = {"task": Spent(), "agent:w": Spent()}
    events = [{"type": "llm_call", "node": "n", "agent": "w", "tokens_in": 7, "tokens_out": 2, "cost": 0.25},
              {"type": "tool_call", "node": "n", "call_id": "c"},
              {"type": "llm_call", "node": "n", "agent": "w", "tokens_in": 1, "tokens_out": 1, "cost": None},
              {"type": "llm_call", "node": "n", "agent": "w", "error": "timed out"}]
    for doc in events:
        meter.observe(doc)
        for spent in expected.values():
            if doc["type"] == "tool_call":
                spent.tool_calls += 1
            elif not doc.get("error"):
                spent.tokens += doc["tokens_in"] + doc["tokens_out"]
                spent.cost_usd += doc["cost"] or 0.0
                spent.model_calls += 1
        assert meter.spent == expected
        assert {k: s.model_fields_set for k, s in meter.spent.items()} == \
            {k: s.model_fields_set for k, s in expected.items()}
    assert meter.spent["task"].model_dump() == {"tokens": 11, "cost_usd": 0.25, "model_calls": 2, "tool_calls": 1}


def test_the_budgets_in_force_are_made_again_only_when_what_they_come_from_changes() -> None:
    from types import SimpleNamespace

    from magent.engine.budget import Meter, limits
    from magent.models.budget import Budget

    options: dict = {"budget": {"max_tokens": 500}}
    worker = SimpleNamespace(agent=SimpleNamespace(budget=Budget(max_tool_calls=3)))
    graph = SimpleNamespace(workflow=SimpleNamespace(budget=Budget(max_model_calls=9)),
                            agents={"worker": worker}, nodes={})
    run = SimpleNamespace(deps=SimpleNamespace(task=SimpleNamespace(config_snapshot={"options": options}), graph=graph),
                          state=SimpleNamespace(sessions={}))
    run.meter = Meter(run)  # type: ignore[arg-type]

    def seen() -> list:
        return [(scope, b.limits()) for scope, b in limits(run, "worker")]  # type: ignore[arg-type]

    assert seen() == [("task", {"max_tokens": 500, "max_model_calls": 9}), ("agent:worker", {"max_tool_calls": 3})]
    assert limits(run, "worker") is limits(run, "worker")  # type: ignore[arg-type]
    options["budget"]["max_tokens"] = 800  # a person raised it (in place)
    options["agent_budgets"] = {"worker": {"max_tool_calls": 5}}
    assert seen() == [("task", {"max_tokens": 800, "max_model_calls": 9}), ("agent:worker", {"max_tool_calls": 5})]
    graph.workflow.budget = None
    worker.agent.budget = Budget(max_tool_calls=4, max_tokens=100)
    assert seen() == [("task", {"max_tokens": 800}), ("agent:worker", {"max_tokens": 100, "max_tool_calls": 5})]
    assert [(s, b.limits()) for s, b in limits(run, None)] == [("task", {"max_tokens": 800})]  # type: ignore[arg-type]
