"""AgentResult, complete (issue 33 item 5, seed 004's contract): ``session_id``, per-call
``model_calls``, ``actions``, ``memory_deltas``, ``diagnostics``, ``retry_info``, ``metrics``,
``seed`` and ``deterministic`` — read from the trace, the same from ``magent run --json`` and
from the API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import magent
from support.cli import invoke
from support.engine import write
from support.openai_stub import STUB_KEY, OpenAIStub


def keeper(folder: Path) -> Path:
    write(folder, "keeper.script.yaml", """
        responses:
          - content: Saving it.
            tool_calls:
              - {name: kv.set, arguments: {key: city, value: Lyon}}
              - {name: memory.remember, arguments: {content: "The office moved to Lyon"}}
          - content: Stored.
        """)
    return write(folder, "keeper.yaml", """
        name: keeper
        role: stores things
        system_prompt: Store what you are told.
        tools: [kv.set, memory.remember]
        budget: {max_model_calls: 5}
        llm_config: {model: scripted, script: keeper.script.yaml}
        """)


def test_the_json_line_and_the_api_give_the_same_complete_result(tmp_path: Path, magent_home: Path) -> None:
    r = invoke("run", str(keeper(tmp_path)), "-t", "Remember that the office moved to Lyon", "--json")
    assert r.code == 0, r.err
    line = json.loads(r.out.strip().splitlines()[-1])
    api = magent.task(line["task_id"])
    assert line == api.model_dump(mode="json")  # the CLI's last line is the API's object

    assert api.session_id == "main"
    # every model call, with the step of `magent trace` that holds its request
    assert [(c.model, c.provider, c.stop_reason, c.agent, c.node) for c in api.model_calls] == [
        ("scripted", "scripted", "tool_calls", "keeper", "keeper"), ("scripted", "scripted", "stop", "keeper", "keeper")]
    assert all(c.tokens_in > 0 for c in api.model_calls)
    shown = invoke("trace", api.task_id[:8], "--step", str(api.model_calls[1].step), "--request")
    assert shown.code == 0 and "Store what you are told." in shown.out
    # every tool call, with its input and output
    assert [(a.server, a.tool, a.arguments, a.outcome) for a in api.actions] == [
        ("kv", "set", {"key": "city", "value": "Lyon"}, "SUCCESS"),
        ("memory", "remember", {"content": "The office moved to Lyon"}, "SUCCESS")]
    assert api.actions[0].result["text"] == "stored city" and api.actions[0].step == api.model_calls[0].step
    # what it changed: long-term memory and the task's key-value store
    deltas = [(d.store, d.op, d.value) for d in api.memory_deltas]
    assert deltas == [("memory", "store", "The office moved to Lyon"), ("kv", "set", "Lyon")]
    assert api.memory_deltas[0].scope and api.memory_deltas[0].key
    assert api.metrics.tool_calls == {"kv.set": 1, "memory.remember": 1}
    assert set(api.metrics.tool_latency_ms) == {"kv.set", "memory.remember"}
    assert api.metrics.duration_ms is not None and api.metrics.duration_ms >= 0
    assert (api.retry_info.attempts, api.retry_info.last_error) == (0, None)
    assert api.diagnostics.warnings == []
    assert [Path(p).name for p in api.diagnostics.traces] == ["trace.json", "events.jsonl"]
    assert api.seed is None and api.deterministic is True


def test_retries_and_warnings_are_in_the_result(tmp_path: Path, magent_home: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STUB_TEST_KEY", STUB_KEY)
    with OpenAIStub() as stub:
        stub.error(429, retry_after=0.1)
        stub.text("Hello.")
        agent = write(tmp_path, "talker.yaml", f"""
            name: talker
            role: answers
            system_prompt: Answer briefly.
            llm_config:
              model: openai/stub-model
              endpoint: {stub.url}
              api_key: ${{STUB_TEST_KEY}}
              max_retries: 2
            """)
        r = invoke("run", str(agent), "-t", "Say hello", "--set", "mood=cheerful", "--json")
    assert r.code == 0, r.err
    line = json.loads(r.out.strip().splitlines()[-1])
    assert line == magent.task(line["task_id"]).model_dump(mode="json")
    failed, answered = line["model_calls"]
    assert failed["error"].startswith("rate limited (HTTP 429)") and answered["error"] is None
    assert failed["step"] == answered["step"]
    assert line["retry_info"]["attempts"] == 1 and line["retry_info"]["last_error"].startswith("rate limited")
    assert line["deterministic"] is False
    (warning,) = line["diagnostics"]["warnings"]
    assert warning.startswith("metadata.mood was set, but nothing in agent 'talker' reads it")
    assert line["actions"] == [] and line["memory_deltas"] == []
