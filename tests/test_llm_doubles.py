"""magent.testing: QueueModel, FunctionModel and client_factory."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from magent.errors import LLMError
from magent.llm.base import LLMRequest, LLMResponse, LLMToolCall
from magent.models import LLMConfig, Message
from magent.testing import FunctionModel, QueueModel, client_factory


def ask(text: str, model: str = "test-model") -> LLMRequest:
    return LLMRequest(model=model, messages=[Message(role="user", content=text)], agent="helper")


def test_queue_model_plays_strings_dicts_and_responses_in_order() -> None:
    given = LLMResponse(content="as given", model="m1", provider="p1", tokens_in=5, tokens_out=2,
                        tool_calls=[LLMToolCall(id="x", name="kv.get", arguments={"key": "k"})])
    model = QueueModel([
        "plain text",
        {"content": "calling", "tool_calls": [{"name": "kv.get", "arguments": {"key": "a"}},
                                              {"name": "kv.set", "arguments": "{oops"}],
         "usage": {"input": 40, "output": 3}},
        given,
    ])
    first = asyncio.run(model.complete(ask("one")))
    assert (first.content, first.tool_calls, first.stop_reason) == ("plain text", [], "stop")
    assert first.model == "test-model" and first.tokens_out == 3  # ceil(10 / 4)

    second = asyncio.run(model.complete(ask("two")))
    assert second.content == "calling" and second.stop_reason == "tool_calls"
    good, bad = second.tool_calls
    assert (good.id, good.name, good.arguments) == ("call_queue_2_1", "kv.get", {"key": "a"})
    assert (bad.id, bad.arguments, bad.raw_arguments) == ("call_queue_2_2", None, "{oops")
    assert (second.tokens_in, second.tokens_out) == (40, 3)

    third = asyncio.run(model.complete(ask("three")))
    # A copy (the test's object stays untouched), with the time the call took filled in: how
    # long that was depends on the machine, so it is left out of the comparison.
    assert dataclasses.replace(third, latency_ms=0) == given and third is not given and given.latency_ms == 0
    assert [r.messages[0].content for r in model.requests] == ["one", "two", "three"]
    assert model.remaining == 0


def test_a_given_response_is_played_exactly_however_long_the_call_takes() -> None:
    """Issue 10, case 25: a response the test gave is not stamped with the time the call took
    (the comparison above failed on a loaded machine, where that time was not 0 ms)."""
    given = LLMResponse(content="as given", model="m1", provider="p1", latency_ms=0)

    async def slowly(request: LLMRequest) -> LLMResponse:
        await asyncio.sleep(0.05)
        return given

    played = asyncio.run(FunctionModel(slowly).complete(ask("one")))
    assert played == given
    built = asyncio.run(FunctionModel(lambda request: asyncio.sleep(0.05, result="built")).complete(ask("two")))
    assert built.content == "built" and built.latency_ms >= 50  # a built one carries the time it took


def test_queue_model_running_out_is_an_llm_error() -> None:
    model = QueueModel(["only one"])
    asyncio.run(model.complete(ask("a")))
    with pytest.raises(LLMError, match=r"QueueModel has no response #2: it was given 1"):
        asyncio.run(model.complete(ask("b")))


def test_requests_are_recorded_as_they_were_sent() -> None:
    model = QueueModel(["ok"])
    request = ask("original")
    asyncio.run(model.complete(request))
    request.messages.append(Message(role="user", content="added later"))
    assert len(model.requests[0].messages) == 1


def test_doubles_stream_content_to_on_token() -> None:
    pieces: list[str] = []
    reply = asyncio.run(QueueModel(["three small words"]).complete(ask("x"), on_token=pieces.append))
    assert pieces == ["three ", "small ", "words"] and "".join(pieces) == reply.content


def test_function_model_decides_each_reply_sync_or_async() -> None:
    def echo(request: LLMRequest) -> str:
        return f"you said {request.messages[-1].content}"

    async def call_tool(request: LLMRequest) -> dict:
        await asyncio.sleep(0)
        return {"tool_calls": [{"name": "kv.get", "arguments": {"key": request.agent}}]}

    assert asyncio.run(FunctionModel(echo).complete(ask("hi"))).content == "you said hi"
    model = FunctionModel(call_tool, tools=False)
    reply = asyncio.run(model.complete(ask("hi")))
    assert reply.tool_calls[0].arguments == {"key": "helper"}
    assert model.supports_tools("anything") is False
    assert len(model.requests) == 1


def test_a_bad_reply_is_a_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match="unknown reply field"):
        asyncio.run(QueueModel([{"text": "typo"}]).complete(ask("x")))
    with pytest.raises(TypeError, match="not int"):
        asyncio.run(FunctionModel(lambda r: 42).complete(ask("x")))  # type: ignore[arg-type,return-value]


def test_client_factory_returns_the_double_for_every_agent(tmp_path: Path) -> None:
    model = QueueModel(["a"])
    factory = client_factory(model)
    config = LLMConfig(model="openai/gpt-4o-mini")
    assert factory(config, agent="x", base_dir=tmp_path, cursors={}) is model
    assert factory(LLMConfig(model="scripted", script="s.yaml"), agent="y", base_dir=tmp_path,
                   cursors={}) is model
