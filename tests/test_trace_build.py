"""trace.json: seed 002's TraceLog built from events, with seed 003's action records and attempts."""

from __future__ import annotations

import json
from pathlib import Path

from magent.models import TraceLog
from magent.schema import SCHEMA_VERSION
from magent.testing import QueueModel
from magent.tools.function import FunctionProvider, ToolFailure
from magent.trace import attempts, build_trace, compress_actions, hydrate, write_trace
from support.cli import invoke
from support.engine import agent_yaml, events, resume_with, run_with, task_dir, write

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(target: str, *args: str) -> str:
    result = invoke("run", str(EXAMPLES / target), "-t", "example task", "--no-input", *args)
    assert result.code in (0, 3), result.out + result.err
    return result.out.splitlines()[0].split()[1]


def trace_of(task_id: str) -> TraceLog:
    return TraceLog.model_validate_json((task_dir(task_id).trace_file).read_text())


def agent_home(tmp_path: Path, tools: str = "[t.*]", extra: str = "") -> Path:
    return write(tmp_path, "worker.yaml", agent_yaml("worker", tools, extra))


def test_write_review_trace_has_nodes_turns_llm_calls_and_tool_calls() -> None:
    task_id = run_example("workflows/write_review.yaml")
    trace = trace_of(task_id)
    shape = [(s.step_name, s.kind, s.iteration) for s in trace.steps]
    assert shape == [("write", "agent", None), ("write:0", "agent", 0), ("write:1", "agent", 1),
                     ("review", "reflection", None), ("write", "agent", None), ("write:0", "agent", 0),
                     ("review", "reflection", None)]
    first_turn = trace.steps[1]
    assert [c.model for c in first_turn.llm_calls] == ["scripted"]
    call = first_turn.llm_calls[0]
    assert call.tokens_in > 0 and call.tokens_out > 0 and call.stop_reason == "tool_calls"
    (tool,) = first_turn.tool_calls
    assert (tool.server, tool.tool, tool.arguments, tool.outcome) == ("kv", "set", {"key": "title", "value": "Tidy"}, "SUCCESS")
    assert tool.result["text"] == "stored title" and tool.result["entry_id"]
    review = trace.steps[3]
    assert "verdict revise (round 1/3)" in review.message and "→ write" in review.message
    assert "verdict pass" in trace.steps[6].message and "→ END" in trace.steps[6].message
    assert trace.steps[4].message.startswith("visit 2")
    assert trace.usage_by_model["scripted"].calls == 5
    assert sum(c.tokens_in for s in trace.steps for c in s.llm_calls) == trace.usage_by_model["scripted"].input


def test_action_records_are_one_per_react_turn_and_attempts_are_derived() -> None:
    task_id = run_example("workflows/write_review.yaml")
    trace = trace_of(task_id)
    assert [a.iteration for a in trace.actions] == [0, 1, 0]
    assert trace.actions[0].thinking == "Let me save a working title before drafting."
    assert [c.name for c in trace.actions[0].tool_calls] == ["kv.set"]
    assert attempts(trace) == ['kv.set(key="title", value="Tidy") → SUCCESS']
    # On disk the action record and its turn's step each read on their own (schema 18)
    raw = json.loads(task_dir(task_id).trace_file.read_text())
    assert raw["actions"][0]["tool_calls"][0] == {"name": "kv.set", "args": {"key": "title", "value": "Tidy"},
                                                  "result": "stored title"}
    assert raw["actions"][0]["iteration"] == 0 and raw["actions"][0]["timestamp"] == trace.actions[0].timestamp \
        .isoformat().replace("+00:00", "Z")
    assert raw["actions"][0]["thinking"] == "Let me save a working title before drafting."
    turn = next(s for s in raw["steps"] if s.get("iteration") == 0)
    assert "attempts" not in raw
    assert (turn["step_name"], turn["message"], turn["kind"]) == ("write:0", "calls kv.set", "agent")


def test_results_are_stored_once_and_read_back_at_about_1000_characters(tmp_path: Path) -> None:
    tools = FunctionProvider("t")
    tools.add("dump", lambda: "x" * 5000 + "THE END", "dump")
    model = QueueModel([{"tool_calls": [{"name": "t.dump", "arguments": {}}]}, "done"])
    outcome = run_with(model, agent_home(tmp_path), providers=[tools])
    td = task_dir(outcome.task_id)
    on_disk = json.loads(td.trace_file.read_text())
    stored = on_disk["steps"][1]["tool_calls"][0]["result"]
    # trace.json keeps a preview that says so, and the entry's id: the text is stored once, in the entry
    assert stored == {"text": "x" * 200 + "… [4807 more characters]", "preview": True,
                      "entry_id": stored["entry_id"]}
    assert "x" * 201 not in td.trace_file.read_text()
    assert td.entries.load()[stored["entry_id"]].content.endswith("THE END")
    # what magent shows (and prints with --json) carries the seed's ~1,000 characters
    shown = invoke("trace", outcome.task_id, "--json")
    assert shown.code == 0
    result = json.loads(shown.out)["steps"][1]["tool_calls"][0]["result"]
    assert result["text"].startswith("x" * 1000) and "more characters" in result["text"]
    assert len(result["text"]) < 1100 and "preview" not in result
    action_call = json.loads(shown.out)["actions"][0]["tool_calls"][0]
    assert action_call["result"].startswith("x" * 1000)


def test_failed_and_parallel_calls_keep_their_order_and_outcomes(tmp_path: Path) -> None:
    tools = FunctionProvider("t")

    async def slow(n: int) -> str:
        import asyncio

        await asyncio.sleep(0.05 * (3 - n))  # the first asked finishes last
        return f"page {n}"

    def broken() -> str:
        raise ToolFailure("disk full")

    tools.add("read", slow, "read", {"type": "object", "properties": {"n": {"type": "integer"}}})
    tools.add("broken", broken, "fails")
    model = QueueModel([{"tool_calls": [{"name": "t.read", "arguments": {"n": 1}},
                                        {"name": "t.broken", "arguments": {}},
                                        {"name": "t.read", "arguments": {"n": 2}}]},
                        "done"])
    outcome = run_with(model, agent_home(tmp_path), providers=[tools])
    trace = trace_of(outcome.task_id)
    node, turn = trace.steps[0], trace.steps[1]
    assert [(c.tool, c.arguments, c.outcome) for c in turn.tool_calls] == [
        ("read", {"n": 1}, "SUCCESS"), ("broken", {}, "FAILURE"), ("read", {"n": 2}, "SUCCESS")]
    assert turn.tool_calls[0].result["text"] == "page 1" and turn.tool_calls[1].error == "disk full"
    assert turn.status == "warning" and node.status == "warning"
    assert turn.duration_ms >= 100  # from the model's reply to the last result
    assert compress_actions(trace.actions) == ["t.read(n=1) → SUCCESS", "t.broken() → FAILURE",
                                               "t.read(n=2) → SUCCESS"]


def test_a_pause_for_tool_approval_then_resume_fills_the_waiting_call(tmp_path: Path) -> None:
    tools = FunctionProvider("t")
    tools.add("send", lambda to: f"sent to {to}", "send mail",
              {"type": "object", "properties": {"to": {"type": "string"}}}, needs_approval=True)
    replies = [{"tool_calls": [{"name": "t.send", "arguments": {"to": "bob"}}]}, "sent it"]
    paused = run_with(QueueModel(replies), agent_home(tmp_path), providers=[tools])
    assert paused.status.value == "awaiting_human"
    trace = trace_of(paused.task_id)
    assert trace.steps[1].tool_calls[0].result is None  # asked for, not run yet
    assert trace.steps[-1].step_name == "awaiting_human" and "tool_approval" in trace.steps[-1].message

    done = resume_with(QueueModel(replies[1:]), paused.task_id, "approve", "fine", providers=[tools])
    assert done.status.value == "completed"
    trace = trace_of(paused.task_id)
    names = [s.step_name for s in trace.steps]
    assert names == ["worker", "worker:0", "awaiting_human", "resumed", "human_decision", "worker:1"]
    assert trace.steps[1].tool_calls[0].result["text"].endswith("sent to bob")
    assert trace.steps[4].message == "a person chose approve: fine"


def test_build_trace_accepts_event_models_and_validates(tmp_path: Path) -> None:
    task_id = run_example("agents/note_taker.yaml")
    built = build_trace(task_id, events(task_id))
    assert isinstance(built, TraceLog)
    on_disk = trace_of(task_id)
    assert [s.step_name for s in built.steps] == [s.step_name for s in on_disk.steps]
    # write_trace rewrites trace.json from events.jsonl (what the engine calls when a run stops).
    task_dir(task_id).trace_file.unlink()
    again = write_trace(task_dir(task_id))
    assert [s.step_name for s in again.steps] == [s.step_name for s in on_disk.steps]
    assert task_dir(task_id).trace_file.exists()


def test_errors_warnings_and_failed_runs_are_steps(tmp_path: Path) -> None:
    model = QueueModel([{"tool_calls": [{"name": "t.missing", "arguments": {}}]}])  # then runs out
    outcome = run_with(model, agent_home(tmp_path, tools="[kv.*]"))
    assert outcome.status.value == "failed"
    trace = trace_of(outcome.task_id)
    assert trace.steps[-1].step_name == "error" and trace.steps[-1].status == "error"
    assert trace.steps[0].status == "error" and "did not finish" in trace.steps[0].message
    refused = trace.steps[1].tool_calls[0]
    assert refused.outcome == "ERROR" and refused.tool == "missing"


def test_a_compact_trace_of_schemas_6_to_17_reads_back_whole() -> None:
    """Schemas 6 to 17 left out of trace.json what reading gave back exactly (a step named after
    its agent, a call routed to another tool, an action whose answer came after failed attempts
    and a short result kept what differed; a turn's agent, model, provider and stop reason were
    left out when they were its node, the previous call's and what its tool calls told, written
    even as defaults when they differed; its node when it was the previous turn's; its iteration
    when it followed the previous turn's at its node; its time in milliseconds). ``small`` is
    what the schema 17 writer made of ``doc``; the migration to 18 puts it all back."""
    from magent.store.migrations import migrate

    def turn(name: str, message: str, ts: str, calls: list, llm: list, agent: str = "n", iteration: int = 0) -> dict:
        return {"step_name": name, "message": message, "timestamp": ts, "agent": agent, "kind": "agent",
                "node": "n", "iteration": iteration, "tool_calls": calls, "llm_calls": llm}

    call = {"call_id": "c1", "server": "kv", "tool": "get", "arguments": {"key": "a"},
            "result": {"text": "y" * 500, "entry_id": "e1"}}
    moved = {"call_id": "c2", "server": "kv", "tool": "get_v2", "arguments": {"key": "a"},
             "result": {"text": "short", "entry_id": "e2", "requested": "kv.get"}}
    doc = {"steps": [
        {"step_name": "n", "message": "→ END", "timestamp": "2026-01-01T00:00:00Z", "kind": "agent", "node": "n"},
        turn("n:0", "calls kv.get", "2026-01-01T00:00:01.500000Z", [call],
             [{"model": "m", "provider": "p", "latency_ms": 250, "stop_reason": "tool_calls"}]),
        turn("helper:0", "calls kv.get", "2026-01-01T00:00:02Z", [moved],
             [{"model": "m", "provider": "p", "error": "timeout", "latency_ms": 9, "stop_reason": None},
              {"model": "m2", "provider": "p", "latency_ms": 10, "stop_reason": None}], agent="helper"),
        turn("n:1", "", "2026-01-01T00:00:03Z", [],
             [{"model": "m2", "provider": "", "latency_ms": 10, "stop_reason": "stop"}], agent="", iteration=1),
    ], "actions": [
        {"iteration": 0, "timestamp": "2026-01-01T00:00:01.750000Z", "thinking": "a",
         "tool_calls": [{"name": "kv.get", "args": {"key": "a"}, "result": "y" * 500}]},
        {"iteration": 0, "timestamp": "2026-01-01T00:00:02.050000Z", "thinking": "b",
         "tool_calls": [{"name": "kv.get", "args": {"key": "a"}, "result": "short"}]},
        {"iteration": 1, "timestamp": "2026-01-01T00:00:03.010000Z", "thinking": "c", "tool_calls": []},
    ]}
    small = {"steps": [
        {"step_name": "n", "message": "\u2192 END", "timestamp": "2026-01-01T00:00:00Z", "kind": "agent", "node": "n"},
        {"timestamp": "2026-01-01T00:00:01.500Z", "node": "n", "iteration": 0, "tool_calls": [
            {"call_id": "c1", "server": "kv", "tool": "get", "arguments": {"key": "a"}, "result": {"entry_id": "e1"}}],
         "llm_calls": [{"model": "m", "provider": "p", "latency_ms": 250}]},
        {"step_name": "helper:0", "message": "calls kv.get", "timestamp": "2026-01-01T00:00:02Z", "agent": "helper",
         "iteration": 0, "tool_calls": [{"call_id": "c2", "server": "kv", "tool": "get_v2", "arguments": {"key": "a"},
                                         "result": {"text": "short", "entry_id": "e2", "requested": "kv.get"}}],
         "llm_calls": [{"error": "timeout", "latency_ms": 9}, {"model": "m2", "latency_ms": 10, "stop_reason": None}]},
        {"message": "", "timestamp": "2026-01-01T00:00:03Z", "agent": "", "tool_calls": [],
         "llm_calls": [{"provider": "", "latency_ms": 10}]}],
        "actions": [{"thinking": "a"}, {"timestamp": "2026-01-01T00:00:02.050000Z", "thinking": "b",
                                        "tool_calls": [{"name": "kv.get", "args": {"key": "a"}}]}, {"thinking": "c"}],
        "schema_version": 17}
    back = migrate("trace", small)
    assert back.pop("schema_version") == SCHEMA_VERSION
    for want in doc["actions"]:
        for c in want["tool_calls"]:
            del c["result"]                                  # the actions' copies: hydrate's part
    doc["steps"][1]["tool_calls"][0]["result"].pop("text")   # the entry's text: restore_results' part
    assert back == doc


def test_the_step_tree_reads_back_only_the_results_it_shows(tmp_path: Path) -> None:
    from magent.store.tasks import Store
    from magent.trace.load import load_view
    from magent.trace.view import tree_lines

    tools = FunctionProvider("t")
    tools.add("page", lambda n=0: f"page {n} " + "y" * 2000, "page",
              {"type": "object", "properties": {"n": {"type": "integer"}}})
    turns = [{"tool_calls": [{"name": "t.page", "arguments": {"n": n}}]} for n in range(20)]
    outcome = run_with(QueueModel([*turns, "done"]), agent_home(tmp_path, extra="max_iterations: 30\n"),
                       providers=[tools])
    view = load_view(Store().task(outcome.task_id))
    assert view.source == "trace.json" and len(view.unfilled) == 20
    text = "".join("".join(t for t, _ in line) + "\n" for line in tree_lines(view))
    assert "page 0 yyy" in text and "page 19 yyy" in text and "page 10 " not in text   # folded
    assert len(view.unfilled) == 20 - 7   # only the 4 first and 3 last (+ the answer) turns were read back
    whole = view.doc                              # and the whole trace still has every one
    results = [c["result"]["text"] for s in whole["steps"] for c in s.get("tool_calls") or []]
    assert [r.split(" y")[0] for r in results] == [f"page {n}" for n in range(20)] and not view.unfilled
    assert whole["actions"][10]["tool_calls"][0]["result"].startswith("page 10 yy")
    assert text == invoke("trace", outcome.task_id).out


def test_a_few_results_are_found_in_the_entries_as_the_whole_file_would_find_them(tmp_path: Path) -> None:
    from magent.trace.load import fill_results

    lines = [{"id": "a1", "content": "first"}, {"id": "b2", "parent_id": "a1", "content": "names a1"},
             "not json a1", {"id": "a1", "content": "again"}, ["a1"], {"id": "c3", "content": "c"}]
    path = tmp_path / "entries.jsonl"
    path.write_text("".join((json.dumps(x) if not isinstance(x, str) else x) + "\n" for x in lines)
                    + '{"id": "c3", "content": "torn')
    few = {"a1": [{}], "c3": [{}], "zz": [{}]}
    every = {k: [{}] for k in [*few, *(f"x{n}" for n in range(20))]}   # more than FEW: every line read
    fill_results(few, path)
    fill_results(every, path)
    assert few == {k: every[k] for k in few} == {"a1": [{"text": "again"}], "c3": [{"text": "c"}], "zz": [{}]}


def test_entries_as_magent_writes_them_are_found_by_their_leading_id(tmp_path: Path) -> None:
    from magent.trace.load import fill_results

    lines = [{"id": "a1", "content": "first"}, {"id": "b2", "parent_id": "a1", "content": "names a1"},
             '{"id":"a1', '{"id":"a1","content":"not closed}', {"id": "a1", "content": "again"},
             {"role": "user", "id": "c3", "content": "id not first"}, {"id": "c3x", "content": "a longer id"}]
    path = tmp_path / "entries.jsonl"
    path.write_text("".join((json.dumps(x, separators=(",", ":")) if not isinstance(x, str) else x) + "\n"
                            for x in lines) + '{"id":"c3","content":"torn')
    few = {"a1": [{}], "c3": [{}], "b2": [{}], "zz": [{}]}
    every = {k: [{}] for k in [*few, *(f"x{n}" for n in range(20))]}   # more than FEW: every line read
    fill_results(few, path)
    fill_results(every, path)
    assert few == {k: every[k] for k in few} == {
        "a1": [{"text": "again"}], "c3": [{"text": "id not first"}], "b2": [{"text": "names a1"}], "zz": [{}]}
