"""OpenTelemetry's model attributes of a real provider's call: ``gen_ai.request.model`` is the model
name sent (not litellm's ``openai/...`` string), ``gen_ai.response.model`` the one the response
named. Recorded replies replayed on 127.0.0.1, spans read back by a real OTLP receiver."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.cli import invoke
from support.engine import write
from support.otlp_receiver import Receiver
from support.replay_server import ReplayServer

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("fixture, model, suffix, sent, answered", [
    ("openai_chat_tool_stream", "openai/gpt-4o-mini", "/v1", "gpt-4o-mini", "gpt-4o-mini-2024-07-18"),
    ("anthropic_messages_tool_stream", "anthropic/claude-sonnet-4-5-20250929", "",
     "claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929"),
], ids=["openai", "anthropic"])
def test_chat_spans_name_the_model_sent_and_the_model_that_answered(
        fixture: str, model: str, suffix: str, sent: str, answered: str, tmp_path: Path, magent_home: Path) -> None:
    with ReplayServer(fixture) as server:
        agent = write(tmp_path, "keeper.yaml", f"""
            name: keeper
            role: stores things
            system_prompt: Store what you are told, then confirm.
            tools: [kv.set]
            llm_config: {{model: {model}, endpoint: '{server.url + suffix}', api_key: test-key-not-real}}
            """)
        result = invoke("run", str(agent), "-t", "Remember the city Lyon", "--no-input")
        assert result.code == 0, result.out + result.err
    task_id = result.out.split()[1]
    with Receiver() as receiver:
        assert invoke("trace", task_id, "--otlp", receiver.url).code == 0
        chats = [s for s in receiver.spans if s["attributes"].get("gen_ai.operation.name") == "chat"]
    assert len(chats) == 2
    for chat in chats:
        assert chat["attributes"]["gen_ai.request.model"] == sent
        assert chat["attributes"]["gen_ai.response.model"] == answered
