"""A batch over a model no price map knows reads "cost unknown", as every other view says it,
never $0.0000 (issue 34)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.batchflow import write_inputs
from support.cli import invoke
from support.engine import write
from support.openai_stub import STUB_KEY, STUB_MODEL, OpenAIStub


@pytest.mark.slow
def test_an_unpriced_models_batch_costs_unknown_not_zero(tmp_path: Path, magent_home: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STUB_TEST_KEY", STUB_KEY)
    rows = write_inputs(tmp_path / "rows.jsonl", [{"task": "one"}, {"task": "two"}])
    with OpenAIStub() as stub:
        stub.text("first", usage=(20, 3)).text("second", usage=(20, 3))
        agent = write(tmp_path, "local.yaml", f"""
            name: local
            role: answers
            system_prompt: Answer.
            tools: []
            llm_config: {{model: {STUB_MODEL}, endpoint: "{stub.url}", api_key: "${{STUB_TEST_KEY}}"}}
            """)
        ran = invoke("batch", str(agent), "--inputs", str(rows), "--concurrency", "1")
    assert ran.code == 0, ran.out + ran.err
    closing = ran.out.strip().splitlines()[-1]
    assert "2 completed" in closing and "46 tokens, cost unknown" in closing, closing
    assert "$0.0000" not in ran.out
    (batch,) = [p.name for p in (magent_home / "batches").iterdir() if not p.name.startswith(".")]
    shown = invoke("batch", "show", batch[:8])
    assert "46 tokens, cost unknown" in shown.out and "$0.0000" not in shown.out, shown.out
    as_json = json.loads(invoke("batch", "show", batch[:8], "--json").out)
    assert as_json["unpriced"] == 2 and as_json["cost"] == 0
