"""litellm's model map is asked once per model, not once per call (issue 34): an unpriced model's
lookups search the whole map, and a batch makes thousands of calls."""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from typing import Any

import pytest

from magent.llm.base import LLMRequest, ToolSpec
from magent.models import Message
from support.openai_stub import STUB_KEY, OpenAIStub

MODEL = "openai/stub-lookups"
"""A model no price map has, named for this test alone (the answers are kept per process)."""


@pytest.mark.slow
def test_many_calls_to_an_unpriced_model_ask_the_map_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from magent.llm import litellm_client

    litellm = litellm_client.load_litellm()
    asked: Counter[str] = Counter()
    for name in ("cost_per_token", "get_model_info", "get_llm_provider", "supports_response_schema",
                 "supports_function_calling"):
        real = getattr(litellm, name)

        def counted(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            if sys._getframe(1).f_globals.get("__name__", "").startswith("magent."):  # litellm's own: not ours
                asked[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(litellm, name, counted)
    client = litellm_client.LiteLLMClient()
    calls = 12
    with OpenAIStub() as stub:
        for i in range(calls):
            stub.tool_call("kv__set", {"key": f"k{i}", "value": "v"})

        async def all_calls() -> list:
            replies = []
            for i in range(calls):
                request = LLMRequest(model=MODEL, endpoint=stub.url, api_key=STUB_KEY, system="Work.",
                                     messages=[Message(role="user", content=f"job {i}")],
                                     tools=[ToolSpec(name="kv.set", description="Set a key.", parameters={
                                         "type": "object", "properties": {"key": {"type": "string"}}})],
                                     output_schema={"type": "object"})
                replies.append(await client.complete(request))
                assert client.tool_support(MODEL)[0] and client.context_window(MODEL) is None
            return replies

        replies = asyncio.run(all_calls())
    # every reply is whole, and its cost is unknown (None), never $0
    assert [r.tool_calls[0].arguments for r in replies] == [{"key": f"k{i}", "value": "v"} for i in range(calls)]
    assert all(r.cost is None and r.tokens_in == 11 for r in replies)
    # magent asked each question of the map at most once for the model, not once per call
    assert asked and max(asked.values()) <= 2, asked
