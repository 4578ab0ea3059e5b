"""The litellm adapter against a real local OpenAI-compatible server (tests/support/openai_stub)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from magent.errors import ConfigError, LLMError
from magent.llm.base import LLMRequest, ToolSpec
from magent.llm.factory import make_client, preflight, warm_import
from magent.llm.litellm_client import LiteLLMClient, safe_name
from magent.models import LLMConfig, Message, ToolCall
from magent.models.agent import FallbackModel
from support.openai_stub import STUB_KEY, STUB_MODEL, OpenAIStub, refused_url

KV_GET = ToolSpec(name="kv.get", description="Read a key.",
                  parameters={"type": "object", "properties": {"key": {"type": "string"}},
                              "required": ["key"]})


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    warm_import()  # litellm's first call imports ~1 s of modules; keep that out of timed tests


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


class Sleeps:
    """A fast stand-in for asyncio.sleep that remembers the delays asked for."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def ask(stub: OpenAIStub, **over) -> LLMRequest:  # type: ignore[no-untyped-def]
    fields = dict(model=STUB_MODEL, messages=[Message(role="user", content="hello?")],
                  system="Be brief.", endpoint=stub.url, api_key=STUB_KEY, timeout=60,
                  max_retries=2)
    fields.update(over)
    return LLMRequest(**fields)


def complete(request: LLMRequest, client: LiteLLMClient | None = None, on_token=None):  # type: ignore[no-untyped-def]
    return asyncio.run((client or LiteLLMClient(base_delay=0.01)).complete(request, on_token))


def listening(text: str) -> None:
    """A token sink: with one, the reply is asked for as a stream; without, whole."""


def test_text_reply_streams_tokens_and_records_usage(stub: OpenAIStub) -> None:
    stub.text("The answer is forty two.", usage=(31, 6))
    pieces: list[str] = []
    reply = complete(ask(stub), on_token=pieces.append)
    assert reply.content == "The answer is forty two."
    assert len(pieces) > 1 and "".join(pieces) == reply.content
    assert (reply.tokens_in, reply.tokens_out) == (31, 6)
    assert (reply.model, reply.provider, reply.stop_reason) == (STUB_MODEL, "openai", "stop")
    assert reply.cost is None  # stub-model is not in litellm's price map: unknown, no exception
    assert reply.retries == [] and reply.tool_calls == []
    [sent] = stub.requests
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert sent["messages"] == [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "hello?"}]


def test_a_local_endpoint_needs_no_api_key(stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    stub.text("no key needed")
    assert complete(ask(stub, api_key=None, max_retries=0)).content == "no key needed"


def test_known_model_is_priced(stub: OpenAIStub) -> None:
    stub.text("hi", usage=(1000, 1000))
    reply = complete(ask(stub, model="openai/gpt-4o-mini"))
    assert reply.cost == pytest.approx(0.00015 + 0.0006)


def test_tool_call_round_trip_maps_names(stub: OpenAIStub) -> None:
    stub.tool_call("kv__get", {"key": "greeting"}, content="Looking.")
    history = [
        Message(role="user", content="read a and greeting"),
        Message(role="assistant", tool_calls=[ToolCall(id="c1", server="kv", tool="get",
                                                       arguments={"key": "a"})]),
        Message(role="tool", tool_call_id="c1", name="kv.get", content="1"),
    ]
    reply = complete(ask(stub, messages=history, tools=[KV_GET]))
    [call] = reply.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_stub_1_0", "kv.get", {"key": "greeting"})
    assert reply.content == "Looking." and reply.stop_reason == "tool_calls"
    sent = stub.requests[0]
    assert [t["function"]["name"] for t in sent["tools"]] == ["kv__get"]
    assert sent["tools"][0]["function"]["parameters"] == KV_GET.parameters
    assert sent["messages"][2]["tool_calls"][0]["function"] == {"name": "kv__get",
                                                                 "arguments": '{"key": "a"}'}
    assert sent["messages"][3] == {"role": "tool", "tool_call_id": "c1", "content": "1"}


@pytest.mark.parametrize("sink", [listening, None], ids=["streamed", "whole"])
def test_tool_calls_without_ids_get_unique_ones(stub: OpenAIStub, sink) -> None:  # type: ignore[no-untyped-def]
    stub.tool_call("kv__get", {"key": "a"}, more=[("kv__get", {"key": "b"})], with_ids=False)
    stub.tool_call("kv__get", {"key": "c"}, with_ids=False)
    ids = [c.id for c in complete(ask(stub, tools=[KV_GET]), on_token=sink).tool_calls]
    ids += [c.id for c in complete(ask(stub, tools=[KV_GET]), on_token=sink).tool_calls]
    assert len(set(ids)) == 3 and all(ids)
    assert [bool(r.get("stream")) for r in stub.requests] == [sink is not None] * 2


def test_stub_answers_non_streaming_requests_too(stub: OpenAIStub) -> None:
    from magent.llm.litellm_client import load_litellm

    stub.tool_call("kv__get", {"key": "a"}, content="Looking.")
    reply = asyncio.run(load_litellm().acompletion(
        model=STUB_MODEL, api_base=stub.url, api_key=STUB_KEY, max_retries=0,
        messages=[{"role": "user", "content": "hi"}]))
    message = reply.choices[0].message
    assert message.content == "Looking."
    assert message.tool_calls[0].function.name == "kv__get"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (11, 7)
    assert stub.requests[0].get("stream") in (None, False)


def test_provider_safe_names() -> None:
    assert safe_name("kv.get") == "kv__get"
    assert safe_name("my-server.read_file") == "my-server__read_file"
    odd = safe_name("files.read file/now")
    long = safe_name("s." + "x" * 80)
    import re
    for name in (odd, long):
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name)
    assert odd != safe_name("files.read_file_now")


def test_garbage_comes_back_instead_of_raising(stub: OpenAIStub) -> None:
    stub.tool_call("kv__get", '{"key": "a"', more=[("nosuch__tool", {"x": 1})])
    stub.empty()
    bad = complete(ask(stub, tools=[KV_GET]))
    first, second = bad.tool_calls
    assert (first.name, first.arguments, first.raw_arguments) == ("kv.get", None, '{"key": "a"')
    assert (second.name, second.arguments) == ("nosuch.tool", {"x": 1})  # not offered: still returned
    empty = complete(ask(stub))  # a whole reply that says nothing: the engine asks again
    assert (empty.content, empty.tool_calls, empty.stop_reason) == ("", [], "stop")


def test_a_stream_cut_without_a_finish_reason_is_retried(stub: OpenAIStub) -> None:
    stub.cut("The answer is forty").text("The answer is forty two.")
    pieces: list[str] = []
    reply = complete(ask(stub), on_token=pieces.append)
    assert reply.content == "The answer is forty two." and reply.stop_reason == "stop"
    assert len(stub.received) == 2
    assert reply.retries[0].startswith(f"{STUB_MODEL} attempt 1: the stream was cut off: it ended "
                                       "without a finish reason after 19 characters; retrying in")
    stub.cut("half")
    with pytest.raises(LLMError) as err:
        complete(ask(stub, max_retries=0), on_token=listening)
    assert str(err.value) == (f"model '{STUB_MODEL}' at {stub.url}: the stream was cut off: it ended "
                              "without a finish reason after 4 characters (1 attempt)")


class _Chunk:
    """A stream chunk in the OpenAI shape litellm hands out."""

    def __init__(self, text: str) -> None:
        delta = type("Delta", (), {"content": text, "tool_calls": None})()
        self.choices = [type("Choice", (), {"finish_reason": None, "delta": delta})()]
        self.usage = None


async def _stream_then(error: BaseException):
    for piece in ("The answer ", "is"):
        yield _Chunk(piece)
    raise error


@pytest.mark.parametrize("error", [RuntimeError("Stream ended before a finish_reason was received"),
                                   ValueError("any words a library version picks"),
                                   ConnectionResetError("peer reset")])
def test_a_stream_that_fails_after_some_text_is_cut_whatever_the_library_says(error: Exception) -> None:
    """magent tells a cut stream from what it received, not from a dependency's message."""
    import litellm

    from magent.llm.failures import cut_mid_stream, describe
    from magent.llm.stream import Collected, collect, incomplete

    got = Collected()
    with pytest.raises(type(error)):
        asyncio.run(collect(_stream_then(error), None, got))
    assert got.text == "The answer is" and got.finish is None
    assert cut_mid_stream(error, got, litellm)
    assert incomplete(None, got, None) == ("the stream was cut off: it ended without a finish "
                                           "reason after 13 characters")
    # before any text it is not a cut reply; a stalled stream is a timeout, named as such
    assert not cut_mid_stream(error, Collected(), litellm)
    assert not cut_mid_stream(asyncio.TimeoutError(), got, litellm)
    assert describe(asyncio.TimeoutError(), 5, litellm)[0] == "timed out after 5 s"


@pytest.mark.parametrize("content_type", ["text/html", "application/json"])
def test_a_200_whose_body_is_not_a_completion_is_a_failed_attempt(stub: OpenAIStub,
                                                                  content_type: str) -> None:
    stub.garbage(content_type=content_type).text("a real answer")
    reply = complete(ask(stub), on_token=listening)
    assert reply.content == "a real answer"
    what = f"{stub.url} answered HTTP 200 with a body that is not a completion (Content-Type: {content_type})"
    assert reply.retries[0].startswith(f"{STUB_MODEL} attempt 1: {what}; retrying in")
    stub.garbage(content_type=content_type).garbage(content_type=content_type)
    with pytest.raises(LLMError) as err:
        complete(ask(stub, max_retries=1), on_token=listening)
    assert str(err.value) == f"model '{STUB_MODEL}': {what} (2 attempts)"  # the endpoint is named


def test_a_whole_reply_that_is_not_a_completion_is_a_failed_attempt(stub: OpenAIStub) -> None:
    stub.garbage(content_type="application/json").garbage(content_type="text/html").text("a real answer")
    reply = complete(ask(stub, max_retries=2))
    assert reply.content == "a real answer" and reply.attempt == 3
    assert [bool(r.get("stream")) for r in stub.requests] == [False] * 3
    assert reply.retries[0].startswith(f"{STUB_MODEL} attempt 1: the reply is not valid JSON (Expecting value: "
                                       "character 0): the endpoint answered with something other than a completion;")
    assert "stream" not in reply.retries[0]
    assert reply.retries[1].startswith(f"{STUB_MODEL} attempt 2: ") and "retrying in" in reply.retries[1]


def test_broken_json_in_a_stream_is_named_for_what_it_is(stub: OpenAIStub) -> None:
    stub.broken("Some text").text("recovered")
    reply = complete(ask(stub), on_token=listening)
    assert reply.content == "recovered"
    [retry] = reply.retries
    assert "the stream broke: the server sent a chunk that is not valid JSON (" in retry
    assert ": character 47 of the chunk)" in retry  # where the chunk breaks, in magent's words
    assert "HTTP 500" not in retry and "server error" not in retry


def test_a_refused_connection_says_the_endpoint_could_not_be_reached() -> None:
    url = refused_url()
    sleeps = Sleeps()
    with pytest.raises(LLMError) as err:
        complete(LLMRequest(model=STUB_MODEL, messages=[Message(role="user", content="hi")],
                            endpoint=url, api_key=STUB_KEY, max_retries=1),
                 client=LiteLLMClient(sleep=sleeps))
    assert str(err.value) == f"model '{STUB_MODEL}': could not reach {url} (connection refused) (2 attempts)"
    assert len(sleeps.delays) == 1  # refused is transient (a server starting up): retried


def test_rate_limit_waits_for_retry_after(stub: OpenAIStub) -> None:
    stub.error(429, retry_after=1, message="slow down").text("ok now")
    reply = complete(ask(stub), client=LiteLLMClient(base_delay=0.01))  # real sleep
    assert reply.content == "ok now"
    first, second = stub.received
    assert second.at - first.at >= 0.95  # the server's Retry-After, not the 0.01 s backoff
    assert reply.retries == [f"{STUB_MODEL} attempt 1: rate limited (HTTP 429): slow down; "
                             "retrying in 1.0 s"]


def test_server_error_is_retried_with_growing_backoff(stub: OpenAIStub) -> None:
    stub.error(500).error(503).text("recovered")
    sleeps = Sleeps()
    reply = complete(ask(stub), client=LiteLLMClient(base_delay=1.0, sleep=sleeps))
    assert reply.content == "recovered"
    assert len(stub.received) == 3 and len(reply.retries) == 2
    assert "HTTP 500" in reply.retries[0] and "HTTP 503" in reply.retries[1]
    first, second = sleeps.delays
    assert 0.5 <= first <= 1.5 and 1.0 <= second <= 3.0  # 1 s, 2 s, with ±50 % jitter


def test_timeout_is_retried(stub: OpenAIStub) -> None:
    stub.hang(600).text("awake")  # only the 1 s timeout can end the first request
    reply = complete(ask(stub, timeout=1))
    assert reply.content == "awake"
    assert "timed out after 1 s" in reply.retries[0]


def test_a_stream_that_stalls_midway_times_out_and_is_retried(stub: OpenAIStub) -> None:
    stub.stall("one two three", 30).text("all of it")
    pieces: list[str] = []
    reply = complete(ask(stub, timeout=1), on_token=pieces.append)
    assert reply.content == "all of it"
    assert pieces[0] == "one"  # the first word came, then nothing until the timeout
    assert "timed out after 1 s" in reply.retries[0]


def test_retries_exhausted_then_fallback_is_used_and_recorded(stub: OpenAIStub) -> None:
    stub.error(500).error(500).text("from the fallback")
    reply = complete(ask(stub, max_retries=1, fallback_model="openai/stub-fallback"))
    assert reply.content == "from the fallback"
    assert reply.model == "openai/stub-fallback"
    assert [r["model"] for r in stub.requests] == ["stub-model", "stub-model", "stub-fallback"]
    assert len(reply.retries) == 2
    assert reply.retries[1].endswith(f"giving up on {STUB_MODEL}")


def test_a_fallback_with_its_own_endpoint_and_key_is_asked_there(stub: OpenAIStub) -> None:
    stub.error(500).error(500)
    with OpenAIStub() as other:
        other.text("from the other server")
        fallback = FallbackModel(model="openai/other-model", endpoint=other.url, api_key="sk-other-key")
        reply = complete(ask(stub, max_retries=1, fallback_model=fallback))
    assert (reply.content, reply.model) == ("from the other server", "openai/other-model")
    assert [r.headers.get("authorization") for r in stub.received] == [f"Bearer {STUB_KEY}"] * 2
    [asked] = other.received
    assert asked.headers.get("authorization") == "Bearer sk-other-key" and asked["model"] == "other-model"


def test_a_fallback_string_shares_the_endpoint_and_key_only_with_its_own_provider() -> None:
    from magent.llm.litellm_client import Target, targets

    local = "http://127.0.0.1:8080/v1"
    assert targets("openai/big", local, "k", "openai/small") == [
        Target("openai/big", local, "k"), Target("openai/small", local, "k")]  # the same server
    assert targets("openai/big", local, "k", "anthropic/claude-3-haiku-20240307")[1] == \
        Target("anthropic/claude-3-haiku-20240307", None, None)  # never the primary's key
    assert targets("openai/big", local, "k", FallbackModel(model="openai/big", endpoint="http://b/v1")) == [
        Target("openai/big", local, "k"), Target("openai/big", "http://b/v1", None)]
    assert targets("openai/big", None, None, None) == [Target("openai/big")]


def test_everything_spent_is_one_clear_line(stub: OpenAIStub) -> None:
    for _ in range(4):
        stub.error(502)
    with pytest.raises(LLMError) as err:
        complete(ask(stub, max_retries=1, fallback_model="openai/stub-fallback"))
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"model '{STUB_MODEL}' at {stub.url}: server error (HTTP 502)")
    assert f"(2 attempts); then model 'openai/stub-fallback' at {stub.url}: server error (HTTP 502)" in message
    assert len(stub.received) == 4


def test_auth_error_is_not_retried(stub: OpenAIStub) -> None:
    stub.error(401, message="Incorrect API key provided").text("never sent")
    with pytest.raises(LLMError) as err:
        complete(ask(stub, fallback_model="openai/stub-fallback"))
    assert str(err.value) == (f"model '{STUB_MODEL}' at {stub.url}: authentication failed (HTTP 401): "
                              "Incorrect API key provided (not retried)")
    assert len(stub.received) == 1 and stub.pending == 1


def test_bad_request_is_not_retried(stub: OpenAIStub) -> None:
    stub.error(400, message="context too long")
    with pytest.raises(LLMError, match=r"request rejected \(HTTP 400\): context too long"):
        complete(ask(stub))
    assert len(stub.received) == 1


@pytest.mark.parametrize("endpoint", [None, "https://api.openai.com/v1", "http://10.0.0.5:8000/v1"])
def test_forbid_remote_guard_refuses_before_any_io(stub: OpenAIStub, endpoint: str | None) -> None:
    stub.text("should not be asked")
    with pytest.raises(LLMError) as err:
        complete(ask(stub, model="openai/gpt-4o-mini", endpoint=endpoint))
    assert "MAGENT_FORBID_REMOTE_LLM=1 allows only endpoints on 127.0.0.1/localhost" in str(err.value)
    assert stub.received == []


def test_forbid_remote_guard_allows_loopback_and_can_be_off(stub: OpenAIStub,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    stub.text("local is fine")
    assert complete(ask(stub, endpoint=stub.url.replace("127.0.0.1", "localhost"))).content == \
        "local is fine"
    from magent.llm.litellm_client import check_endpoint_allowed

    with pytest.raises(LLMError):
        check_endpoint_allowed("openai/gpt-4o-mini", None)
    monkeypatch.delenv("MAGENT_FORBID_REMOTE_LLM")
    check_endpoint_allowed("openai/gpt-4o-mini", None)  # no guard outside the test suite


def test_supports_tools_never_raises() -> None:
    client = LiteLLMClient()
    assert client.supports_tools("openai/gpt-4o-mini") is True
    assert client.supports_tools(STUB_MODEL) is True  # unknown to litellm, OpenAI-compatible
    assert client.supports_tools("ollama/llama3") is False
    assert client.supports_tools("foo/bar") in (True, False)


def test_make_client_shares_one_litellm_client(tmp_path: Path) -> None:
    config = LLMConfig(model=STUB_MODEL, endpoint="http://127.0.0.1:9/v1")
    a = make_client(config, agent="a", base_dir=tmp_path, cursors={})
    b = make_client(config, agent="b", base_dir=tmp_path, cursors={})
    assert isinstance(a, LiteLLMClient) and a is b


def test_preflight_unknown_model(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigError) as err:
        preflight(LLMConfig(model="foo/bar"), agent="x", base_dir=tmp_path)
    assert str(err.value).startswith("agent 'x': unknown model 'foo/bar'")
    with pytest.raises(ConfigError, match="agent 'x': unknown model 'llama3'"):
        preflight(LLMConfig(model="openai/gpt-4o-mini", fallback_model="llama3", api_key="k"),
                  agent="x", base_dir=tmp_path)
    out, errout = capfd.readouterr()
    assert out == "" and errout == ""  # no litellm banners ("Provider List", "Give Feedback")


def test_preflight_missing_key_names_the_variable(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError) as err:
        preflight(LLMConfig(model="openai/gpt-4o-mini"), agent="x", base_dir=tmp_path)
    assert str(err.value) == "agent 'x': model 'openai/gpt-4o-mini' needs OPENAI_API_KEY, which is not set"
    # an explicit key, an endpoint, or the variable itself make it fine
    preflight(LLMConfig(model="openai/gpt-4o-mini", api_key="sk-x"), agent="x", base_dir=tmp_path)
    preflight(LLMConfig(model="openai/local", endpoint="http://127.0.0.1:8000/v1"), agent="x",
              base_dir=tmp_path)
    preflight(LLMConfig(model="ollama/llama3"), agent="x", base_dir=tmp_path)  # needs no key
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    preflight(LLMConfig(model="openai/gpt-4o-mini"), agent="x", base_dir=tmp_path)


def test_a_failing_call_prints_nothing_of_litellms_own(stub: OpenAIStub,
                                                       capfd: pytest.CaptureFixture[str]) -> None:
    """A user sees only magent's output: no banners or log lines from litellm."""
    stub.error(401, message="bad key")
    with pytest.raises(LLMError):
        complete(ask(stub, max_retries=0))
    with pytest.raises(LLMError):
        complete(ask(stub, model="foo/bar"))  # litellm cannot route it: a banner, normally
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
