"""One place for defaults: MAGENT_MODEL / config/defaults.yaml, and ``magent config show|path``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from magent.engine.graph import from_snapshot, load_target
from support.cli import invoke
from support.engine import events, write
from support.openai_stub import STUB_KEY, OpenAIStub

NO_MODEL = """
name: helper
role: helps
system_prompt: Answer briefly.
"""


def settings() -> dict[str, dict]:
    r = invoke("config", "show", "--json")
    assert r.code == 0, r.err
    return {s["name"]: s for s in json.loads(r.out)}


def test_an_agent_without_a_model_runs_on_the_default_model_and_endpoint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = write(tmp_path, "helper.yaml", NO_MODEL)
    with OpenAIStub() as stub:
        stub.text("Hello from the default model.")
        monkeypatch.setenv("MAGENT_MODEL", "openai/stub-model")
        monkeypatch.setenv("MAGENT_ENDPOINT", stub.url)
        monkeypatch.setenv("OPENAI_API_KEY", STUB_KEY)
        result = invoke("run", str(agent), "-t", "Say hello")
        sent = stub.requests
    assert result.code == 0, result.out + result.err
    assert len(sent) == 1 and sent[0]["model"] == "stub-model"
    (call,) = [e for e in events(result.out.split()[1]) if e.type == "llm_call"]
    assert call.field("model") == "openai/stub-model"


def test_the_environment_beats_the_file_and_the_agent_beats_both(
        tmp_path: Path, magent_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = write(tmp_path, "helper.yaml", NO_MODEL)
    own = write(tmp_path, "own.yaml", NO_MODEL.replace("name: helper", "name: own")
                + "llm_config: {model: anthropic/claude-3-5-haiku-20241022}\n")
    (magent_home / "config").mkdir(parents=True)
    (magent_home / "config" / "defaults.yaml").write_text(
        "model: openai/gpt-4o-mini\nendpoint: http://127.0.0.1:8080/v1\n")
    cfg = load_target(str(agent)).agent("helper").llm_config
    assert (cfg.model, cfg.endpoint) == ("openai/gpt-4o-mini", "http://127.0.0.1:8080/v1")
    assert settings()["model"]["source"] == str(magent_home / "config" / "defaults.yaml")
    monkeypatch.setenv("MAGENT_MODEL", "ollama/llama3.2")
    cfg = load_target(str(agent)).agent("helper").llm_config
    assert (cfg.model, cfg.endpoint) == ("ollama/llama3.2", None)  # the file's endpoint went with its model
    assert (settings()["model"]["value"], settings()["model"]["source"]) == ("ollama/llama3.2", "MAGENT_MODEL")
    mine = load_target(str(own)).agent("own").llm_config
    assert (mine.model, mine.endpoint) == ("anthropic/claude-3-5-haiku-20241022", None)


def test_a_task_keeps_the_default_model_it_started_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workflow = write(tmp_path, "flow.yaml", """
        name: flow
        entry_point: ask
        agents:
          helper: {name: helper, role: helps, system_prompt: Answer briefly.}
        nodes:
          ask: {type: agent, agent: helper}
        """)
    monkeypatch.setenv("MAGENT_MODEL", "openai/first-model")
    snapshot = load_target(str(workflow)).snapshot
    assert snapshot["defaults"] == {"model": "openai/first-model", "endpoint": None}
    monkeypatch.setenv("MAGENT_MODEL", "openai/changed-since")
    assert from_snapshot(snapshot).agent("helper").llm_config.model == "openai/first-model"
    named = write(tmp_path, "named.yaml", NO_MODEL.replace("name: helper", "name: named")
                  + "llm_config: {model: openai/own-model}\n")
    assert "defaults" not in load_target(str(named)).snapshot   # only a task that uses them keeps them


def test_no_model_anywhere_is_one_clear_error(tmp_path: Path) -> None:
    agent = write(tmp_path, "helper.yaml", NO_MODEL)
    r = invoke("validate", str(agent))
    assert r.code == 2
    assert r.err == (f"magent: error: invalid agent: {agent}:1:1: no model: name one in llm_config.model, "
                     "or set a default with MAGENT_MODEL or model in config/defaults.yaml (see magent config show)\n")


def test_config_show_says_where_each_setting_comes_from(magent_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = settings()
    assert fresh["home"] == {"name": "home", "value": str(magent_home), "source": "MAGENT_HOME"}
    assert fresh["model"]["value"] is None and fresh["model"]["source"].startswith("not set")
    assert fresh["retention.default_days"] == {"name": "retention.default_days", "value": 7,
                                               "source": "built-in default"}
    assert fresh["cost_map"]["value"] == "bundled with litellm"
    invoke("init")
    (magent_home / "config" / "retention_policy.yaml").write_text("default_days: 30\n")
    monkeypatch.setenv("MAGENT_ENDPOINT", "http://127.0.0.1:11434")
    monkeypatch.setenv("MAGENT_MODEL", "ollama/llama3.2")
    now = settings()
    assert now["retention.default_days"]["value"] == 30
    assert now["retention.default_days"]["source"] == str(magent_home / "config" / "retention_policy.yaml")
    assert (now["endpoint"]["value"], now["endpoint"]["source"]) == ("http://127.0.0.1:11434", "MAGENT_ENDPOINT")
    shown = invoke("config", "show")
    assert shown.out.splitlines()[0].split() == ["SETTING", "VALUE", "FROM"]
    assert "ollama/llama3.2" in shown.out and "MAGENT_MODEL" in shown.out
    assert invoke("config", "path").out == f"{magent_home}\n"


def test_a_mistake_in_defaults_yaml_names_the_line_and_field(magent_home: Path) -> None:
    (magent_home / "config").mkdir(parents=True)
    (magent_home / "config" / "defaults.yaml").write_text("# mine\nmodle: openai/gpt-4o-mini\n")
    r = invoke("config", "show")
    assert r.code == 2 and r.err.count("\n") == 1
    assert "defaults.yaml:2:1: modle" in r.err and "'model'" in r.err
    v = invoke("validate", str(magent_home / "config" / "defaults.yaml"))
    assert v.code == 2
