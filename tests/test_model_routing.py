"""Models per turn (issue 33 item 3): ``llm_config.models`` with routing rules by turn kind, by a
condition over State and by budget; each call records the rule that chose its model, the trace
and the request view show it, a killed run resumes on the same choice, and mistakes in the rules
are config errors at file:line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.cli import invoke
from support.engine import events, task_dir, write
from support.openai_stub import OpenAIStub


def router(folder: Path, url: str, routing: str, *, budget: str = "") -> Path:
    return write(folder, "router.yaml", f"""
        name: router
        role: stores things
        system_prompt: Store what you are told, then confirm.
        tools: [kv.set]
        llm_config:
          models: [openai/big-model, openai/small-model]
          endpoint: {url}
          api_key: sk-stub
          max_retries: 0
          routing:
        {routing}
        {budget}
        """)


def calls(task_id: str) -> list[tuple[str, str | None]]:
    return [(e.field("model"), e.field("route")) for e in events(task_id) if e.type == "llm_call"]


def sent_models(stub: OpenAIStub) -> list[str]:
    return [r["model"] for r in stub.requests]


def test_tool_result_turns_go_to_the_cheaper_model(tmp_path: Path, magent_home: Path) -> None:
    with OpenAIStub() as stub:
        stub.tool_call("kv__set", {"key": "city", "value": "Lyon"})
        stub.text("Stored: Lyon.")
        agent = router(tmp_path, stub.url, "    - {turn: tool_result, model: 1}")
        result = invoke("run", str(agent), "-t", "Remember the city Lyon")
        assert result.code == 0, result.out + result.err
        assert sent_models(stub) == ["big-model", "small-model"]
    assert "small-model · 11→7 tokens · cost unknown" in result.out  # the live view says why
    assert "chosen by routing[0] turn tool_result" in result.out
    task_id = result.out.split()[1]
    assert calls(task_id) == [("openai/big-model", "primary (no rule matched)"),
                              ("openai/small-model", "routing[0] turn tool_result")]
    routed = [(e.field("iteration"), e.field("index"), e.field("rule"))
              for e in events(task_id) if e.type == "model_routed"]
    assert routed == [(0, 0, "primary (no rule matched)"), (1, 1, "routing[0] turn tool_result")]
    shown = invoke("trace", task_id[:8])
    assert "small-model" in shown.out and "chosen by routing[0] turn tool_result" in shown.out
    trace = json.loads((task_dir(task_id).path / "trace.json").read_text())
    routes = [c.get("route") for s in trace["steps"] for c in s.get("llm_calls") or []]
    assert routes == ["primary (no rule matched)", "routing[0] turn tool_result"]
    step = next(i for i, s in enumerate(trace["steps"], 1)
                if any(c.get("route", "").startswith("routing[0]") for c in s.get("llm_calls") or []))
    request = invoke("trace", task_id[:8], "--step", str(step), "--request")
    assert request.code == 0, request.err
    assert "sent to small-model" in request.out or "sent to openai/small-model" in request.out
    assert "model chosen by routing[0] turn tool_result" in request.out
    html = invoke("trace", task_id[:8], "--html", str(tmp_path / "report.html"))
    assert html.code == 0, html.err
    assert "routing[0] turn tool_result" in (tmp_path / "report.html").read_text()


def test_a_condition_over_state_chooses_the_model(tmp_path: Path, magent_home: Path) -> None:
    with OpenAIStub() as stub:
        stub.text("Fine.").text("Fine again.")
        agent = router(tmp_path, stub.url, "    - {when: \"metadata.tier == 'cheap'\", model: openai/small-model}")
        assert invoke("run", str(agent), "-t", "Hello").code == 0
        assert invoke("run", str(agent), "-t", "Hello", "--set", "tier=cheap").code == 0
        assert sent_models(stub) == ["big-model", "small-model"]


def test_a_budget_downgrades_the_model_instead_of_pausing(tmp_path: Path, magent_home: Path) -> None:
    with OpenAIStub() as stub:
        stub.tool_call("kv__set", {"key": "a", "value": "1"})
        stub.tool_call("kv__set", {"key": "b", "value": "2"})
        stub.text("Stored both.")
        agent = router(tmp_path, stub.url, "    - {budget: 60, model: 1}", budget="budget: {max_model_calls: 3}")
        result = invoke("run", str(agent), "-t", "Store a=1 and b=2")
        assert result.code == 0, result.out + result.err  # not paused at the limit
        assert sent_models(stub) == ["big-model", "big-model", "small-model"]
    task_id = result.out.split()[1]
    last = calls(task_id)[-1]
    assert last == ("openai/small-model", "routing[0] budget max_model_calls 2 of 3 (67% ≥ 60%)")
    assert "chosen by routing[0] budget max_model_calls 2 of 3" in invoke("trace", task_id[:8]).out


def test_an_answer_sent_back_is_given_again_by_the_final_model(tmp_path: Path, magent_home: Path) -> None:
    with OpenAIStub() as stub:
        stub.text("Normal, I think.").text('{"priority": "normal"}')
        agent = router(tmp_path, stub.url, "    - {turn: final, model: 1}",
                       budget='output_schema: {type: object, required: [priority]}')
        result = invoke("run", str(agent), "-t", "Sort this ticket")
        assert result.code == 0, result.out + result.err
        assert sent_models(stub) == ["big-model", "small-model"]  # the schema check sent the first back
    assert calls(result.out.split()[1])[-1] == ("openai/small-model", "routing[0] turn final")


@pytest.mark.slow
def test_a_run_killed_during_a_routed_call_resumes_on_the_same_model(tmp_path: Path, magent_home: Path) -> None:
    with OpenAIStub() as stub:
        stub.tool_call("kv__set", {"key": "city", "value": "Lyon"})
        stub.hang(600)
        agent = router(tmp_path, stub.url, "    - {turn: tool_result, model: 1}")
        proc = subprocess.Popen([sys.executable, "-m", "magent", "run", str(agent), "-t", "Remember Lyon"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
        try:
            deadline = time.time() + 240
            while len(stub.requests) < 2:  # the routed call is in flight
                assert time.time() < deadline and proc.poll() is None
                time.sleep(0.05)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
        (task_id,) = [p.name for p in (magent_home / "tasks").iterdir()]
        # the choice was on disk before the call: the killed call's model and its rule
        routed = [e for e in events(task_id) if e.type == "model_routed"]
        assert [(e.field("model"), e.field("rule")) for e in routed][-1] == \
            ("openai/small-model", "routing[0] turn tool_result")
        stub.text("Stored: Lyon.")
        done = invoke("resume", task_id[:8])
        assert done.code == 0, done.out + done.err
        assert sent_models(stub) == ["big-model", "small-model", "small-model"]
    assert calls(task_id)[-1] == ("openai/small-model", "routing[0] turn tool_result")


@pytest.mark.parametrize(("rules", "where", "said"), [
    ("    - {turn: tool_result, model: 2}", ":11:", "llm_config.routing[0].model: no model 2 in models "
                                                 "(they are 0: openai/big-model, 1: openai/small-model)"),
    ("    - {turn: tool_result, model: openai/smal-model}", ":11:",
     "model 'openai/smal-model' is not one of models (did you mean 'openai/small-model'?"),
    ("    - {turn: tool_result, budget: 50, model: 1}", ":11:",
     "a routing rule gives exactly one of turn, when or budget (this one gives turn and budget)"),
    ("    - {when: \"metadata.x = 1\", model: 1}", ":11:", "llm_config.routing[0].when: condition does not parse"),
    ("    - {turn: last, model: 1}", ":11:", "llm_config.routing[0].turn:"),
    ("    - {tunr: first, model: 1}", ":11:", "unknown field 'tunr' (did you mean 'turn'?)"),
])
def test_a_rule_that_cannot_work_is_a_config_error_at_its_line(tmp_path: Path, magent_home: Path, rules: str,
                                                               where: str, said: str) -> None:
    agent = router(tmp_path, "http://127.0.0.1:9/v1", rules)
    for command in (("validate", str(agent)), ("run", str(agent), "-t", "hi")):
        result = invoke(*command)
        assert result.code == 2, result.out + result.err
        assert f"router.yaml{where}" in result.err and said in result.err, result.err
        assert "Traceback" not in result.err
    assert not (magent_home / "tasks").exists() or not any((magent_home / "tasks").iterdir())


def test_the_docs_routing_config_loads_as_written(tmp_path: Path) -> None:
    import re

    from magent.config import load_agent

    text = (Path(__file__).resolve().parent.parent / "docs" / "guides" / "providers.md").read_text()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "routing:" in b and "tool_result" in b)
    agent = write(tmp_path, "routed.yaml", "name: routed\nrole: r\nsystem_prompt: s\n" + block)
    config = load_agent(agent).agent.llm_config
    assert config.model == "openai/gpt-4o" and [r.turn or r.when or r.budget for r in config.routing] == [
        "tool_result", "metadata.tier == 'cheap'", 80]


def test_turn_kinds() -> None:
    from magent.engine.routing import turn_kinds
    from magent.models import Message, ToolCall

    asked = Message(role="user", content="Sort it")
    answer = Message(role="assistant", content="Normal.")
    called = Message(role="assistant", tool_calls=[ToolCall(id="c1", server="kv", tool="get", arguments={})])
    result = Message(role="tool", content="x", tool_call_id="c1")
    assert turn_kinds([asked], 0, 10) == {"first"}
    assert turn_kinds([asked, called, result], 1, 10) == {"tool_result"}
    assert turn_kinds([asked, called, result], 9, 10) == {"tool_result", "final"}  # the last turn allowed
    sent_back = Message(role="user", name="magent", content="does not fit output_schema")
    assert turn_kinds([asked, answer, sent_back], 1, 10) == {"final"}
    follow_up = Message(role="user", content="And the other one?")  # a person's next question
    assert turn_kinds([asked, answer, follow_up], 1, 10) == set()
    nudge = Message(role="user", content="Your reply was empty.")
    assert turn_kinds([asked, Message(role="assistant", content=""), nudge], 1, 10) == {"final"}
