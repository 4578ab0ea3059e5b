"""Tool calling that is told, not guessed: an agent's mode (native or text) comes from what the
agent says and what litellm knows, and the live view and the trace say which, and why text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from magent.llm.litellm_client import LiteLLMClient
from support.cli import invoke
from support.engine import events, kv_store
from support.replay_server import ReplayServer, fixture
from test_providers_replay import keeper


@pytest.mark.slow
def test_ollama_chat_with_auto_sends_tools_natively_and_says_so(tmp_path: Path) -> None:
    with ReplayServer("ollama_chat_tool_stream") as server:
        result = invoke("run", str(keeper(tmp_path, "ollama_chat/llama3.1", server.url)), "-t", "Remember Lyon",
                        "--no-input")
        sent = [json.loads(r.text) for r in server.received]
    assert result.code == 0, result.out + result.err
    task_id = result.out.split()[1]
    assert [t["function"]["name"] for t in sent[0]["tools"]] == ["kv__set"]
    assert "Action Input" not in json.dumps(sent[0]["messages"])  # no text-format instructions
    (mode,) = [e for e in events(task_id) if e.type == "tool_mode"]
    assert (mode.field("mode"), mode.field("setting")) == ("native", "auto")
    assert "ollama/llama3.1" in mode.field("reason")
    assert "tools: native" in invoke("trace", task_id).out


def text_turns() -> list[dict]:
    """The Ollama /v1 recording's replies with ReAct text for their content (no tool calls)."""
    call, answer = (dict(i) for i in fixture("ollama_v1_no_usage_stream")["interactions"])
    first = json.loads(json.dumps(answer))
    first["when"] = call["when"]
    first["sse"][0]["choices"][0]["delta"]["content"] = "Thought: I store it.\nAction: kv.set\n"
    first["sse"][1]["choices"][0]["delta"]["content"] = 'Action Input: {"key": "city", "value": "Lyon"}'
    answer = json.loads(json.dumps(answer))
    answer["sse"][0]["choices"][0]["delta"]["content"] = "Final Answer: Stored"
    return [first, answer]


@pytest.mark.slow
def test_text_mode_is_shown_with_why(tmp_path: Path) -> None:
    with ReplayServer() as server:
        server.add(*text_turns())
        agent = keeper(tmp_path, "openai/llama3.1", server.url + "/v1", extra="tool_calling: text")
        result = invoke("run", str(agent), "-t", "Remember Lyon", "--no-input")
        sent = [json.loads(r.text) for r in server.received]
    assert result.code == 0, result.out + result.err
    task_id = result.out.split()[1]
    assert kv_store(task_id) == {"city": "Lyon"} and "tools" not in sent[0]
    assert "tools in the text format (Thought/Action): the agent says tool_calling: text" in result.out
    shown = invoke("trace", task_id).out
    assert "tools: text" in shown and "tools in the text format: the agent says tool_calling: text" in shown


def test_auto_falls_back_to_text_only_for_a_reason_it_names() -> None:
    client = LiteLLMClient()
    assert client.tool_support("ollama/llama2") == (
        False, "litellm's model map says ollama/llama2 does not call functions")
    native, why = client.tool_support("hosted_vllm/my-finetune")
    assert native and why == "litellm does not know hosted_vllm/my-finetune; hosted_vllm servers take tools"
    native, why = client.tool_support("ollama_chat/llama3.1")
    assert native and "ollama/llama3.1 calls functions" in why
