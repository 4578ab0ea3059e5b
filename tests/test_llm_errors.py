"""Provider errors in one line of magent's words with the provider's own message: Anthropic's
overload (HTTP 529, or an error event mid-stream) named as such and retried, a JSON error body
quoted by litellm as bytes read for its message, a 404 naming the URL called."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.cli import invoke
from support.engine import events
from support.replay_server import ReplayServer
from test_providers_replay import keeper

ANTHROPIC = "anthropic/claude-sonnet-4-5-20250929"


def failed_attempts(task_id: str) -> list[str]:
    return [e.field("error") for e in events(task_id) if e.type == "llm_call" and e.field("error")]


@pytest.mark.slow
def test_an_overloaded_provider_is_named_so_and_retried(tmp_path: Path) -> None:
    with ReplayServer("anthropic_overloaded", "anthropic_messages_tool_stream") as server:
        agent = keeper(tmp_path, ANTHROPIC, server.url, extra="")
        agent.write_text(agent.read_text().replace("max_retries: 1", "max_retries: 2"))
        result = invoke("run", str(agent), "-t", "Remember Lyon", "--no-input")
    assert result.code == 0, result.out + result.err
    task_id = result.out.split()[1]
    assert failed_attempts(task_id) == [
        "the provider is overloaded (HTTP 529): Overloaded",
        "the provider is overloaded (in the middle of its reply): Overloaded"]
    assert "HTTP 500" not in result.out + result.err


def test_an_error_body_is_read_for_its_message_not_shown_as_bytes(tmp_path: Path) -> None:
    # Anthropic's error shape (https://docs.anthropic.com/en/api/errors), for a model it does not serve
    body = {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-nonexistent"},
            "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}
    with ReplayServer() as server:
        server.add({"when": {"path": "/v1/messages"}, "status": 404, "json": body})
        result = invoke("run", str(keeper(tmp_path, ANTHROPIC, server.url)), "-t", "hi", "--no-input")
    said = result.out + result.err
    assert result.code == 1
    assert "model or endpoint not found (HTTP 404): model: claude-nonexistent;" in said
    assert "b'" not in said and "AnthropicError" not in said and '"type"' not in said


def test_a_bad_request_shows_the_providers_words(tmp_path: Path) -> None:
    body = {"type": "error", "error": {"type": "invalid_request_error",
                                       "message": "max_tokens: 100000 > 64000, which is the maximum"}}
    with ReplayServer() as server:
        server.add({"when": {"path": "/v1/messages"}, "status": 400, "json": body})
        result = invoke("run", str(keeper(tmp_path, ANTHROPIC, server.url)), "-t", "hi", "--no-input")
    said = result.out + result.err
    assert "request rejected (HTTP 400): max_tokens: 100000 > 64000, which is the maximum" in said
    assert "b'" not in said
