"""OpenTelemetry's model attributes of a real provider's call: ``gen_ai.request.model`` is the model
name sent (not litellm's ``openai/...`` string), ``gen_ai.response.model`` the one the response
named; its ``gen_ai.usage.*`` carry the cache-read, cache-write and reasoning parts the provider
reported, and ``magent.usage.estimated`` marks counts the server did not send. Recorded replies
replayed on 127.0.0.1, spans read back by a real OTLP receiver (live, and with ``--otlp``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.cli import invoke
from support.otlp_receiver import Receiver
from support.replay_server import ReplayServer
from test_providers_replay import keeper

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("fixture, model, suffix, sent, answered", [
    ("openai_chat_tool_stream", "openai/gpt-4o-mini", "/v1", "gpt-4o-mini", "gpt-4o-mini-2024-07-18"),
    ("anthropic_messages_tool_stream", "anthropic/claude-sonnet-4-5-20250929", "",
     "claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929"),
], ids=["openai", "anthropic"])
def test_chat_spans_name_the_model_sent_and_the_model_that_answered(
        fixture: str, model: str, suffix: str, sent: str, answered: str, tmp_path: Path, magent_home: Path) -> None:
    with ReplayServer(fixture) as server:
        agent = keeper(tmp_path, model, server.url + suffix)
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


PARTS = ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_creation.input_tokens",
         "gen_ai.usage.reasoning.output_tokens", "magent.usage.estimated")


@pytest.mark.parametrize("fixture, model, suffix, expected", [
    ("anthropic_messages_tool_stream", "anthropic/claude-sonnet-4-5-20250929", "",
     [{"gen_ai.usage.cache_creation.input_tokens": 4000}, {"gen_ai.usage.cache_read.input_tokens": 4000}]),
    ("openai_chat_parallel_reasoning_stream", "openai/o3-mini", "/v1",
     [{"gen_ai.usage.reasoning.output_tokens": 192}, {"gen_ai.usage.reasoning.output_tokens": 64}]),
    ("ollama_v1_no_usage_stream", "openai/llama3.1", "/v1", [{"magent.usage.estimated": True}] * 2),
    ("openai_chat_tool_stream", "openai/gpt-4o-mini", "/v1", [{}, {"gen_ai.usage.cache_read.input_tokens": 1024}]),
], ids=["anthropic-cache", "openai-reasoning", "no-usage", "openai-cached"])
def test_chat_spans_carry_the_usage_parts_and_mark_estimates_live_and_afterwards(
        fixture: str, model: str, suffix: str, expected: list, tmp_path: Path, magent_home: Path) -> None:
    with ReplayServer(fixture) as server, Receiver() as live:
        agent = keeper(tmp_path, model, server.url + suffix)
        result = invoke("run", str(agent), "-t", "Remember the city Lyon", "--no-input",
                        env={"OTEL_EXPORTER_OTLP_ENDPOINT": live.url})
        assert result.code == 0 and "warning" not in result.err, result.out + result.err
        live_spans = list(live.spans)
    task_id = result.out.split()[1]
    with Receiver() as later:
        assert invoke("trace", task_id, "--otlp", later.url).code == 0
        later_spans = list(later.spans)
    for spans in (live_spans, later_spans):
        chats = sorted((s for s in spans if s["attributes"].get("gen_ai.operation.name") == "chat"),
                       key=lambda s: s["start"])
        assert [{k: c["attributes"][k] for k in PARTS if k in c["attributes"]} for c in chats] == expected
        assert all(c["attributes"]["gen_ai.usage.input_tokens"] > 0 for c in chats)
        (run,) = [s for s in spans if s["parent_span_id"] is None]  # the task's totals: estimated calls
        assert run["attributes"].get("magent.task.estimated_calls") == (2 if fixture == "ollama_v1_no_usage_stream" else None)
