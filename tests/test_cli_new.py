"""``magent new agent|workflow NAME``: commented files that validate and run as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.cli import invoke
from support.engine import events
from support.openai_stub import STUB_KEY, OpenAIStub


@pytest.fixture
def stub_default_model(monkeypatch: pytest.MonkeyPatch):
    with OpenAIStub() as stub:
        monkeypatch.setenv("MAGENT_MODEL", "openai/stub-model")
        monkeypatch.setenv("MAGENT_ENDPOINT", stub.url)
        monkeypatch.setenv("OPENAI_API_KEY", STUB_KEY)
        yield stub


def test_a_new_agent_validates_and_explains_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    r = invoke("new", "agent", "support_bot")
    assert r.code == 0 and r.out.startswith("wrote support_bot.yaml\n")
    text = (tmp_path / "support_bot.yaml").read_text()
    assert "model: openai/gpt-4o-mini" in text and "# endpoint:" in text and "# api_key: ${MY_API_KEY}" in text
    assert sum(1 for line in text.splitlines() if "#" in line) >= 10      # it explains its fields
    assert invoke("validate", "support_bot.yaml").out.startswith("ok  agent")
    mine = invoke("new", "agent", "local", "--model", "ollama/llama3.2", "--dir", "agents")
    assert mine.code == 0 and "model: ollama/llama3.2" in (tmp_path / "agents" / "local.yaml").read_text()


def test_a_new_agent_runs_on_the_default_model(tmp_path: Path, stub_default_model: OpenAIStub) -> None:
    r = invoke("new", "agent", "helper", "--dir", str(tmp_path))
    assert r.code == 0
    assert "# model: openai/gpt-4o-mini   # unset: the default model (now openai/stub-model" \
           in (tmp_path / "helper.yaml").read_text()
    stub_default_model.text("Glad to help.")
    ran = invoke("run", str(tmp_path / "helper.yaml"), "-t", "Say hi")
    assert ran.code == 0, ran.out + ran.err
    assert "Glad to help." in ran.out


def test_a_new_workflow_validates_and_runs_its_review_loop(tmp_path: Path, stub_default_model: OpenAIStub) -> None:
    r = invoke("new", "workflow", "answer_review", "--dir", str(tmp_path))
    assert r.code == 0
    path = tmp_path / "answer_review.yaml"
    assert invoke("validate", str(path)).out.startswith("ok  workflow")
    (stub_default_model.text("Paris.")
     .text('{"verdict": "revise", "feedback": "Say it is the capital of France."}')
     .text("Paris is the capital of France.")
     .text('{"verdict": "pass", "feedback": "Correct and short."}'))
    ran = invoke("run", str(path), "-t", "What is the capital of France?")
    assert ran.code == 0, ran.out + ran.err
    verdicts = [e.field("verdict") for e in events(ran.out.split()[1]) if e.type == "reflection"]
    assert verdicts == ["revise", "pass"]


def test_new_refuses_a_bad_name_and_an_existing_file(tmp_path: Path) -> None:
    bad = invoke("new", "agent", "Support Bot", "--dir", str(tmp_path))
    assert bad.code == 2 and "'Support Bot' is not a usable name" in bad.err
    assert invoke("new", "workflow", "flow", "--dir", str(tmp_path)).code == 0
    (tmp_path / "flow.yaml").write_text("mine\n")
    again = invoke("new", "workflow", "flow", "--dir", str(tmp_path))
    assert again.code == 2 and "already exists (--force replaces it)" in again.err
    assert (tmp_path / "flow.yaml").read_text() == "mine\n"
    assert invoke("new", "workflow", "flow", "--dir", str(tmp_path), "--force").code == 0
    assert (tmp_path / "flow.yaml").read_text().startswith("# A workflow")


def test_new_refuses_a_name_with_a_trailing_newline(tmp_path: Path) -> None:
    bad = invoke("new", "agent", "bot\n", "--dir", str(tmp_path))
    assert bad.code == 2 and "is not a usable name" in bad.err
    assert list(tmp_path.iterdir()) == []
