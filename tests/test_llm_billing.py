"""Usage and cost as the provider bills them, from real recorded replies (tests/fixtures/providers):
cache reads, cache writes and reasoning tokens kept apart, and the cost computed from all of them.

The prices are litellm's local price map (litellm 1.110.2, LITELLM_LOCAL_MODEL_COST_MAP=True),
checked by hand:

- claude-sonnet-4-5-20250929: input $3/M, output $15/M, cache read $0.30/M, cache write $3.75/M.
  Second reply: input_tokens 20, cache_read_input_tokens 4000, output_tokens 5
  = 20 x 3e-6 + 4000 x 0.3e-6 + 5 x 15e-6 = 0.00006 + 0.0012 + 0.000075 = $0.001335
  (priced as 4,020 full-rate input tokens it was 4020 x 3e-6 + 0.000075 = $0.012135).
  First reply: input_tokens 20, cache_creation_input_tokens 4000, output_tokens 82
  = 0.00006 + 4000 x 3.75e-6 + 82 x 15e-6 = 0.00006 + 0.015 + 0.00123 = $0.01629.
- gpt-4o-mini: input $0.15/M, cached input $0.075/M, output $0.60/M.
  Second reply: prompt_tokens 1100 of which cached_tokens 1024, completion_tokens 5
  = 76 x 1.5e-7 + 1024 x 7.5e-8 + 5 x 6e-7 = 0.0000114 + 0.0000768 + 0.000003 = $0.0000912
  (priced as 1,100 full-rate tokens it was 0.000165 + 0.000003 = $0.000168).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli import invoke
from support.engine import events, kv_store, task_dir
from support.replay_server import ReplayServer
from test_providers_replay import keeper


def answered(task_id: str) -> list:
    return [e for e in events(task_id) if e.type == "llm_call" and e.field("error") is None]


def run_against(tmp_path: Path, fixture: str, model: str, suffix: str) -> str:
    with ReplayServer(fixture) as server:
        result = invoke("run", str(keeper(tmp_path, model, server.url + suffix)), "-t", "Remember Lyon",
                        "--no-input")
    assert result.code == 0, result.out + result.err
    return result.out.split()[1]


@pytest.mark.slow
def test_anthropic_cache_reads_and_writes_are_priced_at_their_own_rates(tmp_path: Path) -> None:
    task_id = run_against(tmp_path, "anthropic_messages_tool_stream", "anthropic/claude-sonnet-4-5-20250929", "")
    first, second = answered(task_id)
    assert (first.field("tokens_in"), first.field("cache_write"), first.field("cache_read")) == (4020, 4000, None)
    assert (second.field("tokens_in"), second.field("cache_read"), second.field("tokens_out")) == (4020, 4000, 5)
    assert second.field("cost") == pytest.approx(0.001335)
    assert first.field("cost") == pytest.approx(0.01629)
    # the totals keep them apart too: the checkpoint, task.json, the trace, tasks show, the API
    td = task_dir(task_id)
    usage = td.load_task().usage
    assert (usage.input, usage.cache_read, usage.cache_write, usage.output) == (8040, 4000, 4000, 87)
    assert usage.cost == pytest.approx(0.01629 + 0.001335)
    trace = json.loads((td.path / "trace.json").read_text())
    (by_model,) = trace["usage_by_model"].values()
    assert (by_model["cache_read"], by_model["cache_write"]) == (4000, 4000)
    shown = invoke("trace", task_id)
    assert "4,000 cache read" in shown.out and "4,000 cache write" in shown.out, shown.out
    details = invoke("tasks", "show", task_id)
    assert "4,000 cache read" in details.out and "$0.0176" in details.out, details.out
    as_json = json.loads(invoke("tasks", "show", task_id, "--json").out)
    assert as_json["usage"]["cache_read"] == 4000

    from magent.api import task

    result = task(task_id)
    assert (result.token_usage.cache_read, result.token_usage.cache_write) == (4000, 4000)


@pytest.mark.slow
def test_openai_cached_prompt_tokens_are_priced_at_the_cached_rate(tmp_path: Path) -> None:
    task_id = run_against(tmp_path, "openai_chat_tool_stream", "openai/gpt-4o-mini", "/v1")
    _, second = answered(task_id)
    assert (second.field("tokens_in"), second.field("cache_read"), second.field("tokens_out")) == (1100, 1024, 5)
    assert second.field("cost") == pytest.approx(0.0000912)


@pytest.mark.slow
def test_reasoning_tokens_are_counted_apart_and_parallel_calls_all_run(tmp_path: Path) -> None:
    task_id = run_against(tmp_path, "openai_chat_parallel_reasoning_stream", "openai/o3-mini", "/v1")
    assert kv_store(task_id) == {"city": "Lyon", "country": "France"}
    first, second = answered(task_id)
    assert (first.field("tokens_out"), first.field("reasoning")) == (210, 192)
    assert task_dir(task_id).load_task().usage.reasoning == 192 + 64
    assert "256 reasoning" in invoke("trace", task_id).out


@pytest.mark.slow
def test_gemini_thoughts_and_cached_content_are_kept_apart(tmp_path: Path) -> None:
    task_id = run_against(tmp_path, "gemini_tool_stream", "gemini/gemini-2.5-flash", "/v1beta")
    first, second = answered(task_id)
    # candidatesTokenCount 10 + thoughtsTokenCount 110: thoughts are billed as output
    assert (first.field("tokens_out"), first.field("reasoning")) == (120, 110)
    assert (second.field("tokens_in"), second.field("cache_read")) == (2055, 2000)
