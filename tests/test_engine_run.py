"""What a run does and leaves on disk: examples, JSON output, failures as observations, limits."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from magent.models import TaskStatus, TraceLog
from magent.testing import FunctionModel, QueueModel
from magent.tools.function import FunctionProvider
from support.cli import invoke
from support.engine import (
    agent_yaml, all_files_parse, checkpoint_numbers, events, kv_store, run_with, task_dir, write,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("target, args, code, status", [
    ("agents/note_taker.yaml", [], 0, "completed"),
    ("workflows/write_review.yaml", [], 0, "completed"),
    ("workflows/triage.yaml", ["--set", "ticket=login broken"], 0, "completed"),
    ("workflows/triage.yaml", ["--set", "ticket=checkout down", "--set", "priority=high"], 3, "awaiting_human"),
    ("workflows/publish.yaml", [], 3, "awaiting_human"),
])
def test_every_example_runs_offline(target: str, args: list[str], code: int, status: str,
                                    magent_home: Path) -> None:
    result = invoke("run", str(EXAMPLES / target), "-t", "example task", "--no-input", *args)
    assert result.code == code, result.out + result.err
    first = result.out.splitlines()[0]
    assert first.startswith("task ")
    task_id = first.split()[1]
    task = task_dir(task_id).load_task()
    assert task.status.value == status
    all_files_parse(magent_home)
    TraceLog.model_validate_json((magent_home / "tasks" / task_id / "trace.json").read_text())


def test_json_output_is_one_event_per_line_ending_with_the_result(magent_home: Path) -> None:
    result = invoke("run", str(EXAMPLES / "workflows/write_review.yaml"), "-t", "copy", "--json")
    assert result.code == 0
    lines = [json.loads(line) for line in result.out.splitlines()]
    assert lines[0]["type"] == "run_started" and lines[0]["task_id"]
    assert lines[-1]["type"] == "result" and lines[-1]["status"] == "completed" and lines[-1]["success"]
    assert "20 cm" in lines[-1]["output"] and lines[-1]["task_id"] == lines[0]["task_id"]
    types = [line["type"] for line in lines]
    assert {"node_started", "llm_call", "tool_call", "tool_result", "reflection", "run_finished"} <= set(types)
    verdicts = [line["verdict"] for line in lines if line["type"] == "reflection"]
    assert verdicts == ["revise", "pass"]


def test_quiet_prints_only_the_answer(magent_home: Path) -> None:
    result = invoke("run", str(EXAMPLES / "agents/note_taker.yaml"), "-t", "remember", "--quiet")
    assert result.code == 0
    assert result.out.strip() == "Noted: the meeting is on Thursday at 10:00 in room 4."


def test_reflection_feedback_reaches_the_writer(tmp_path: Path) -> None:
    write(tmp_path, "writer.yaml", agent_yaml("writer", "[]"))
    write(tmp_path, "critic.yaml", agent_yaml("critic", "[]"))
    flow = write(tmp_path, "flow.yaml", """
        name: loop
        entry_point: w
        nodes:
          w: {type: agent, agent: writer}
          r: {type: reflection, critic: critic, criteria: must mention owls, max_rounds: 2}
        edges:
          - {from: w, to: r}
          - {from: r, to: w, condition: "routing_key == 'revise'"}
          - {from: r, to: END}
        """)
    seen: list[str] = []

    def reply(request):
        seen.append(request.agent)
        if request.agent == "critic":
            return '{"verdict": "revise", "feedback": "mention owls"}'
        return "draft " + str(len(seen))

    outcome = run_with(FunctionModel(reply), flow)
    # two rounds, then max_rounds: routing_key 'max_rounds' does not loop, the run ends
    assert outcome.status == TaskStatus.completed
    assert seen == ["writer", "critic", "writer", "critic"]
    td = task_dir(outcome.task_id)
    last = td.checkpoints.read(td.checkpoints.numbers()[-1])
    state = td.full_state(last)
    assert state.routing_key == "max_rounds"
    feedback = [m.content for m in state.messages if m.name == "critic"]
    assert feedback == ["Reviewer feedback (round 1, revise): mention owls"]


def test_checkpoints_are_contiguous_small_and_entries_hold_the_conversation(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", agent_yaml("a", extra="max_iterations: 30\n"))
    path = tmp_path / "a.yaml"
    calls = [{"content": f"turn {i}", "tool_calls": [{"name": "kv.set", "arguments": {"key": f"k{i}", "value": "x" * 5000}}]}
             for i in range(20)] + ["done"]
    outcome = run_with(QueueModel(calls), path)
    assert outcome.status == TaskStatus.completed and outcome.result == "done"
    td = task_dir(outcome.task_id)
    numbers = checkpoint_numbers(outcome.task_id)
    assert numbers == list(range(len(numbers)))
    cps = [td.checkpoints.read(n) for n in numbers]
    turns = [c for c in cps if c.reason == "llm_turn"]
    assert len(turns) == 20
    sizes = [td.checkpoints.path(c.sequence).stat().st_size for c in turns]
    assert max(sizes) - min(sizes) < 0.1 * min(sizes)  # the conversation is not in checkpoints
    state = td.full_state(cps[-1])
    assert [m.role for m in state.messages[:3]] == ["user", "assistant", "tool"]
    assert len(state.messages) == 1 + 20 * 2 + 1
    assert all(c.state.messages == [] for c in cps)
    raw = json.loads(td.checkpoints.path(numbers[-1]).read_text())
    assert "messages" not in raw["state"] and raw["sha256"]


def test_a_model_that_runs_out_fails_the_task_clearly(magent_home: Path, tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", agent_yaml("a"))
    write(tmp_path, "a.script.yaml", """
        responses:
          - tool_calls: [{name: kv.set, arguments: {key: a, value: 1}}]
        """)
    result = invoke("run", str(tmp_path / "a.yaml"), "-t", "x")
    assert result.code == 1
    task_id = result.out.split()[1]
    task = task_dir(task_id).load_task()
    assert task.status == TaskStatus.failed and "no response #2" in task.error


def test_max_iterations_ends_the_node_with_a_clear_failure(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", agent_yaml("a", extra="max_iterations: 3\n"))
    loop = FunctionModel(lambda r: {"tool_calls": [{"name": "kv.list", "arguments": {}}]})
    outcome = run_with(loop, tmp_path / "a.yaml")
    assert outcome.status == TaskStatus.failed
    assert outcome.error == "agent 'a' reached max_iterations (3) without a final answer"


def test_tool_failures_and_model_garbage_become_observations(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", agent_yaml("a", "[kv.get, kv.set]"))
    model = QueueModel([
        {"tool_calls": [{"name": "kv.get", "arguments": {"key": "missing"}}]},        # tool fails
        {"tool_calls": [{"name": "kv.delete", "arguments": {"key": "x"}}]},           # not allowed
        {"tool_calls": [{"name": "web.search", "arguments": {"q": "x"}}]},            # hallucinated
        {"tool_calls": [{"name": "kv.set", "arguments": "{not json"}]},               # invalid JSON
        {"tool_calls": [{"name": "kv.set", "arguments": {"kee": "a"}}]},              # schema violation
        "",                                                                          # empty reply
        "finished",
    ])
    outcome = run_with(model, tmp_path / "a.yaml")
    assert outcome.status == TaskStatus.completed and outcome.result == "finished"
    results = [e for e in events(outcome.task_id) if e.type == "tool_result"]
    assert [r.field("outcome") for r in results] == ["FAILURE", "ERROR", "ERROR", "ERROR", "ERROR"]
    observations = [m.content for m in model.requests[-1].messages if m.role == "tool"]
    assert "no key 'missing'" in observations[0]
    assert "not allowed" in observations[1] and "kv.get, kv.set" in observations[1]
    assert "does not exist" in observations[2] and "kv.get, kv.set" in observations[2]
    assert "not a JSON object" in observations[3]
    assert "'key' is required" in observations[4]
    nudges = [m.content for m in model.requests[-1].messages if m.role == "user"]
    assert any("reply was empty" in n for n in nudges)


def test_tool_calls_from_one_response_run_concurrently(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", agent_yaml("a", "[slow.*]"))
    started: list[int] = []
    all_in = asyncio.Event()

    async def meet(n: int) -> str:
        # Each call waits for the other two to start: run one after another, the first
        # would wait alone (bounded, so a regression fails instead of hanging).
        started.append(n)
        if len(started) == 3:
            all_in.set()
        try:
            await asyncio.wait_for(all_in.wait(), timeout=30)
        except asyncio.TimeoutError:
            return "alone"
        return "together"

    slow = FunctionProvider("slow")
    slow.add("meet", meet, "Meet the others.", {"type": "object", "properties": {"n": {"type": "integer"}}})
    model = QueueModel([{"tool_calls": [{"name": "slow.meet", "arguments": {"n": n}} for n in (1, 2, 3)]}, "ok"])
    outcome = run_with(model, tmp_path / "a.yaml", providers=[slow])
    assert outcome.status == TaskStatus.completed
    results = [e for e in events(outcome.task_id) if e.type == "tool_result"]
    assert [e.field("outcome") for e in results] == ["SUCCESS"] * 3
    assert sorted(started) == [1, 2, 3]
    assert [e.field("result") for e in results] == ["together"] * 3


def test_text_format_react_for_models_without_function_calling(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", agent_yaml("a", "[kv.*]", extra="tool_calling: text\n"))
    model = QueueModel([
        'Thought: store it\nAction: kv.set\nAction Input: {"key": "city", "value": "Lyon"}',
        "Thought: read back\nAction: kv.get\nAction Input: {\"key\": \"city\"}",
        "Thought: I know it\nFinal Answer: Lyon",
    ])
    outcome = run_with(model, tmp_path / "a.yaml")
    assert outcome.result == "Lyon"
    second = model.requests[1]
    assert second.tools == [] and "Action Input" in second.system
    assert any(m.content == "Observation: stored city" for m in second.messages)
    assert "Observation: Lyon" in [m.content for m in model.requests[2].messages]


def test_max_calls_per_turn_refuses_the_extra_calls(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", agent_yaml("a", "[kv.*]", extra="max_calls_per_turn: 1\n"))
    model = QueueModel([{"tool_calls": [{"name": "kv.set", "arguments": {"key": "a", "value": 1}},
                                        {"name": "kv.set", "arguments": {"key": "b", "value": 2}}]}, "ok"])
    outcome = run_with(model, tmp_path / "a.yaml")
    results = {e.field("outcome"): e for e in events(outcome.task_id) if e.type == "tool_result"}
    assert sorted(results) == ["ERROR", "SUCCESS"]
    assert "at most 1 tool call" in results["ERROR"].field("result")
    assert kv_store(outcome.task_id) == {"a": 1}   # the first call ran, the second was refused


def test_run_options_are_recorded(magent_home: Path) -> None:
    result = invoke("run", str(EXAMPLES / "workflows/triage.yaml"), "-t", "t", "--set", "ticket=hello",
                    "--set", "team.name=ops", "--tag", "critical", "--tag", "demo", "--retention-days", "30")
    task_id = result.out.split()[1]
    td = task_dir(task_id)
    task = td.load_task()
    assert task.tags == ["critical", "demo"] and task.retention_days == 30
    first = td.checkpoints.read(0)
    assert first.state.metadata == {"ticket": "hello", "team": {"name": "ops"}}


def test_an_unknown_model_string_fails_before_any_call(magent_home: Path) -> None:
    result = invoke("run", str(EXAMPLES / "agents/note_taker.yaml"), "-t", "x", "--model", "nosuchprovider/xyz")
    assert result.code == 2
    assert "unknown model 'nosuchprovider/xyz'" in result.err
    assert not (magent_home / "tasks").exists() or not any((magent_home / "tasks").iterdir())


def test_resume_prints_only_the_answer_with_quiet(magent_home: Path) -> None:
    paused = invoke("run", str(EXAMPLES / "workflows/publish.yaml"), "-t", "Publish a note", "--no-input")
    assert paused.code == 3, paused.err
    task_id = paused.out.split()[1]
    resumed = invoke("resume", task_id[:8], "--approve", "--quiet")
    assert resumed.code == 0, resumed.err
    answer = task_dir(task_id).load_task().result
    assert answer and resumed.out.strip() == answer  # no live view, no summary: the answer alone
    assert f"task {task_id}" in resumed.err


def test_live_only_events_keep_their_numbers_whether_or_not_anyone_watches(magent_home: Path) -> None:
    """A run nobody watches does not build its checkpoint notices, but they still take their
    ``seq``: events.jsonl numbers its lines as a watched run's does, gaps included."""
    watched = invoke("run", str(EXAMPLES / "workflows/write_review.yaml"), "-t", "copy", "--json")
    assert watched.code == 0
    live = [json.loads(line) for line in watched.out.splitlines()]
    task_id = live[0]["task_id"]
    shown = {line["seq"]: line["type"] for line in live if "seq" in line}
    kept = [(e.seq, e.type) for e in events(task_id)]
    assert {seq for seq, kind in shown.items() if kind == "checkpoint"}
    assert kept == [(seq, kind) for seq, kind in sorted(shown.items()) if kind not in ("checkpoint", "llm_started")]
    from magent.engine.session import start_run
    from magent.engine.graph import load_target

    unwatched = asyncio.run(start_run(load_target(str(EXAMPLES / "workflows/write_review.yaml")), "copy"))
    assert unwatched.status == TaskStatus.completed
    assert [(e.seq, e.type) for e in events(unwatched.task_id)] == kept


def test_a_node_context_sees_the_tool_registry_once_the_servers_have_started() -> None:
    """A node's context reads the run's own ``deps``: tools started after it was made (the first
    node that may call one starts them) are the ones it calls; before that, asking is an error."""
    from types import SimpleNamespace

    from magent.engine.context import NodeContext, RunDeps

    deps = RunDeps(**{name: object() for name in ("graph", "needs", "task", "task_dir", "bus", "options",
                                                   "redactor", "pins")})  # type: ignore[arg-type]
    run = SimpleNamespace(deps=deps, models=object(), checkpoints=object())
    ctx = NodeContext(run, SimpleNamespace(is_main=True, id="main"))  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="tool servers have not been started"):
        ctx.deps.tools()
    registry = object()
    deps.registry = registry  # type: ignore[assignment]
    assert ctx.deps.tools() is registry
