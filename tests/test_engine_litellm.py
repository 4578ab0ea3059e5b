"""A run through the real litellm adapter, against a local OpenAI-compatible server on 127.0.0.1:
native tool calling, a rate limit retried, usage and cost recorded, the key kept off disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli import invoke
from support.engine import events, kv_store, task_dir, write
from support.openai_stub import STUB_KEY, OpenAIStub


@pytest.mark.slow
def test_a_real_model_run_through_litellm(tmp_path: Path, magent_home: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STUB_TEST_KEY", STUB_KEY)
    with OpenAIStub() as stub:
        stub.error(429, retry_after=0.2)
        stub.tool_call("kv__set", {"key": "city", "value": "Lyon"}, content="Storing it.")
        stub.text("Stored: Lyon.", usage=(40, 5))
        agent = write(tmp_path, "keeper.yaml", f"""
            name: keeper
            role: stores things
            system_prompt: Store what you are told, then confirm.
            tools: [kv.set]
            llm_config:
              model: openai/stub-model
              endpoint: {stub.url}
              api_key: ${{STUB_TEST_KEY}}
              max_retries: 2
            """)
        result = invoke("run", str(agent), "-t", "Remember the city Lyon")
        sent = stub.requests
    assert result.code == 0, result.out + result.err
    task_id = result.out.split()[1]
    # what the model was offered and told
    offered = [t["function"]["name"] for t in sent[-1].get("tools", [])]
    assert offered == ["kv__set"]
    assert sent[-1]["messages"][0] == {"role": "system", "content": "Store what you are told, then confirm."}
    assert any(m.get("role") == "tool" and m.get("content") == "stored city" for m in sent[-1]["messages"])
    # what the run recorded
    calls = [e for e in events(task_id) if e.type == "llm_call"]
    assert len(calls) == 2
    assert calls[0].field("provider") == "openai" and calls[0].field("retries")   # the 429, retried
    assert calls[1].field("tokens_in") == 40 and calls[1].field("tokens_out") == 5
    assert all(c.field("cost") is not None and c.field("latency_ms") is not None for c in calls)
    assert kv_store(task_id) == {"city": "Lyon"}
    td = task_dir(task_id)
    last = td.checkpoints.read(td.checkpoints.numbers()[-1])
    (key,) = last.usage_by_model
    assert "stub-model" in key and last.usage_by_model[key].calls == 2
    for path in magent_home.rglob("*"):
        if path.is_file():
            assert STUB_KEY.encode() not in path.read_bytes(), path
