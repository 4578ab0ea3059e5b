"""One meaning of ``endpoint``: the base URL a provider's docs or local server shows works for
every provider, or the 404 names the URL magent called and what to change."""

from __future__ import annotations

from pathlib import Path

import pytest

from magent.llm.endpoints import base_url
from support.cli import invoke
from support.replay_server import ReplayServer
from test_providers_replay import keeper


@pytest.mark.parametrize("provider,given,wanted", [
    ("anthropic", "https://api.anthropic.com/v1", "https://api.anthropic.com"),
    ("anthropic", "https://api.anthropic.com/v1/", "https://api.anthropic.com"),
    ("anthropic", "https://api.anthropic.com", "https://api.anthropic.com"),
    ("gemini", "https://generativelanguage.googleapis.com", "https://generativelanguage.googleapis.com/v1beta"),
    ("gemini", "https://generativelanguage.googleapis.com/v1beta", "https://generativelanguage.googleapis.com/v1beta"),
    ("ollama_chat", "http://localhost:11434/v1", "http://localhost:11434"),
    ("ollama_chat", "http://localhost:11434/api", "http://localhost:11434"),
    ("ollama", "http://localhost:11434", "http://localhost:11434"),
    ("openai", "http://localhost:8000/v1", "http://localhost:8000/v1"),
    ("hosted_vllm", "http://localhost:8000", "http://localhost:8000"),
])
def test_the_url_from_the_docs_becomes_the_base_litellm_wants(provider: str, given: str, wanted: str) -> None:
    assert base_url(provider, given) == wanted


@pytest.mark.slow
@pytest.mark.parametrize("fixture,model,suffix,path", [
    ("anthropic_messages_tool_stream", "anthropic/claude-sonnet-4-5-20250929", "/v1", "/v1/messages"),
    ("gemini_tool_stream", "gemini/gemini-2.5-flash", "", "/v1beta/models/gemini-2.5-flash:streamGenerateContent"),
    ("ollama_chat_tool_stream", "ollama_chat/llama3.1", "/v1", "/api/chat"),
])
def test_a_copied_endpoint_reaches_the_provider(fixture: str, model: str, suffix: str, path: str,
                                                 tmp_path: Path) -> None:
    with ReplayServer(fixture) as server:
        result = invoke("run", str(keeper(tmp_path, model, server.url + suffix)), "-t", "Remember Lyon",
                        "--no-input")
    assert result.code == 0, result.out + result.err
    assert {r.path.split("?")[0] for r in server.received} == {path}


def test_a_404_names_the_url_called_and_what_to_change(tmp_path: Path) -> None:
    # vLLM's server (FastAPI) answers a path it does not serve with this body
    with ReplayServer() as server:
        server.add({"when": {"path": "/chat/completions"}, "status": 404, "json": {"detail": "Not Found"}})
        result = invoke("run", str(keeper(tmp_path, "hosted_vllm/qwen2.5", server.url)), "-t", "hi",
                        "--no-input")
    assert result.code == 1
    said = result.out + result.err
    assert f"model or endpoint not found (HTTP 404): Not Found; magent called POST {server.url}/chat/completions" in said
    assert f"try endpoint {server.url}/v1" in said
