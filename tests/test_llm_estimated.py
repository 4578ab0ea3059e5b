"""Tokens magent estimated because the server sent no usage (Ollama's ``/v1``, a local
OpenAI-compatible server) are marked as estimates wherever tokens show: the ``llm_call`` event,
the usage sums (task.json, trace.json), ``magent trace``, the live view, ``tasks show``, the
API's result and ``--json``. Tokens the provider reported carry no mark. Recorded replies
replayed on 127.0.0.1 (tests/fixtures/providers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.cli import invoke, run
from support.engine import task_dir
from support.replay_server import ReplayServer
from test_providers_replay import keeper

pytestmark = pytest.mark.slow


def run_against(tmp_path: Path, fixture: str, model: str, suffix: str, *flags: str) -> Any:
    with ReplayServer(fixture) as server:
        result = invoke("run", str(keeper(tmp_path, model, server.url + suffix)), "-t", "Remember the city Lyon",
                        "--no-input", *flags)
    assert result.code == 0, result.out + result.err
    return result


def test_tokens_a_server_did_not_report_are_marked_as_estimates(tmp_path: Path) -> None:
    streamed = [json.loads(line) for line in
                run_against(tmp_path, "ollama_v1_no_usage_stream", "openai/llama3.1", "/v1", "--json", "--stream").out.splitlines()]
    calls = [e for e in streamed if e.get("type") == "llm_call"]
    assert len(calls) == 2 and all(c["estimated"] is True and c["tokens_in"] > 0 for c in calls), calls
    result = streamed[-1]  # --json's last line: the API's result
    assert result["token_usage"]["estimated"] == 2
    task_id = result["task_id"]

    from magent.api import task

    assert task(task_id).token_usage.estimated == 2
    td = task_dir(task_id)
    assert td.load_task().usage.estimated == 2
    trace = json.loads((td.path / "trace.json").read_text())
    assert [u["estimated"] for u in trace["usage_by_model"].values()] == [2]
    assert [c.get("estimated") for s in trace["steps"] for c in s.get("llm_calls") or []] == [True, True]

    shown = invoke("trace", task_id).out
    assert shown.count(" tokens (estimated) · ") == 2, shown
    assert "~ estimated for 2 of 2 calls: the server sent no usage" in shown, shown
    usage = td.load_task().usage
    assert f"~{usage.input:,}" in shown and f"~{usage.output:,}" in shown, shown
    step = invoke("trace", task_id, "--step", "2").out  # the first model turn, whole
    assert f" {calls[0]['tokens_out']} out (estimated) · " in step, step
    as_json = json.loads(invoke("trace", task_id, "--json").out)
    assert [c["estimated"] for s in as_json["steps"] for c in s["llm_calls"]] == [True, True]

    details = invoke("tasks", "show", task_id).out
    assert f"{usage.input} in / {usage.output} out (estimated)" in details, details
    assert json.loads(invoke("tasks", "show", task_id, "--json").out)["usage"]["estimated"] == 2


def test_the_live_view_marks_an_estimated_call_and_the_run_s_total(tmp_path: Path) -> None:
    out = run_against(tmp_path, "ollama_v1_no_usage_stream", "openai/llama3.1", "/v1").out
    assert out.count(" tokens (estimated) · ") == 3, out  # each call, and the run's total


def test_tokens_the_provider_reported_carry_no_mark(tmp_path: Path) -> None:
    streamed = [json.loads(line) for line in
                run_against(tmp_path, "openai_chat_tool_stream", "openai/gpt-4o-mini", "/v1", "--json", "--stream").out.splitlines()]
    assert not [e for e in streamed if "estimated" in e], streamed
    result = streamed[-1]
    assert result["token_usage"]["estimated"] == 0
    td = task_dir(result["task_id"])
    assert "estimated" not in (td.path / "task.json").read_text()
    assert "estimated" not in (td.path / "trace.json").read_text()
    for shown in (invoke("trace", result["task_id"]).out, invoke("tasks", "show", result["task_id"]).out):
        assert "estimated" not in shown and "~" not in shown, shown


def test_the_trace_s_tables_per_agent_and_per_session_mark_estimated_tokens() -> None:
    from magent.trace import sessionview
    from magent.trace.view import _Tree

    steps = [{"agent": "local", "session": "s1", "llm_calls": [{"tokens_in": 1200, "tokens_out": 40, "estimated": True}]},
             {"agent": "cloud", "llm_calls": [{"tokens_in": 1500, "tokens_out": 30, "cost": 0.001}]}]
    agents = sessionview.by_agent(steps)
    assert (agents["local"]["estimated"], agents["cloud"]["estimated"]) == (1, 0)
    assert _Tree._row("local", agents["local"], 6).split()[2:4] == ["~1,200", "~40"]
    assert _Tree._row("cloud", agents["cloud"], 6).split()[2:4] == ["1,500", "30"]
    sessions = {"s1": {"usage": {"calls": 1, "input": 1200, "output": 40, "cost": 0.0, "estimated": 1}},
                "s2": {"parent_session": "s1", "usage": {"calls": 2, "input": 10, "output": 4, "cost": 0.0}}}
    assert sessionview.rolled_up(sessions)["s1"]["estimated"] == 1


def test_a_killed_run_s_usage_counted_from_its_events_keeps_the_mark(tmp_path: Path, magent_home: Path) -> None:
    with ReplayServer("ollama_v1_no_usage_stream") as server:
        killed = run("run", str(keeper(tmp_path, "openai/llama3.1", server.url + "/v1")), "-t", "Remember the city Lyon",
                     "--no-input", env={"MAGENT_FAILPOINT": "after_checkpoint@3"})  # after the first turn
    assert killed.code == -9, killed.out + killed.err
    (task_id,) = [p.name for p in (magent_home / "tasks").iterdir()]
    assert "estimated" not in (task_dir(task_id).path / "task.json").read_text()  # (its usage: not yet written)
    details = invoke("tasks", "show", task_id).out
    assert " out (estimated)" in details, details
    assert json.loads(invoke("tasks", "show", task_id, "--json").out)["usage"]["estimated"] == 1
