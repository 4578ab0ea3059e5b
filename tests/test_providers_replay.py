"""Real provider wire formats, replayed on 127.0.0.1 (tests/support/replay_server.py): each provider
runs a real ``magent run`` of an agent with a tool call against its recorded replies, is killed after
its first turn, resumed, and traced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli import invoke, run
from support.engine import events, kv_store, task_dir, write
from support.replay_server import ReplayServer

# (fixture, model, the endpoint's path as the provider's docs or local server give it, key variable)
PROVIDERS = [
    ("openai_chat_tool_stream", "openai/gpt-4o-mini", "/v1"),
    ("anthropic_messages_tool_stream", "anthropic/claude-sonnet-4-5-20250929", ""),
    ("gemini_tool_stream", "gemini/gemini-2.5-flash", "/v1beta"),
    ("ollama_chat_tool_stream", "ollama_chat/llama3.1", ""),
    ("ollama_v1_no_usage_stream", "openai/llama3.1", "/v1"),
]


def keeper(folder: Path, model: str, endpoint: str, extra: str = "") -> Path:
    return write(folder, "keeper.yaml", f"""
        name: keeper
        role: stores things
        system_prompt: Store what you are told, then confirm.
        tools: [kv.set]
        llm_config:
          model: {model}
          endpoint: {endpoint}
          api_key: test-key-not-real
          max_retries: 1
        {extra}
        """)


def traced_as_sent(task_id: str) -> dict:
    """The request of the run's first model call (step 3) as ``magent trace --request`` shows it,
    once ``magent trace`` has shown the run's tool call."""
    shown = invoke("trace", task_id)
    assert shown.code == 0 and "kv.set" in shown.out, shown.out
    asked = invoke("trace", task_id, "--step", "3", "--request", "--json")
    assert asked.code == 0, asked.out + asked.err
    [sent] = json.loads(asked.out)
    return sent["request"]


def llm_calls(task_id: str) -> list:
    return [e for e in events(task_id) if e.type == "llm_call" and e.field("error") is None]


@pytest.mark.slow
@pytest.mark.parametrize("name,model,suffix", PROVIDERS, ids=[p[0] for p in PROVIDERS])
def test_a_provider_run_with_a_tool_call_a_kill_a_resume_and_a_trace(
        name: str, model: str, suffix: str, tmp_path: Path, magent_home: Path) -> None:
    with ReplayServer(name) as server:
        agent = keeper(tmp_path, model, server.url + suffix)
        # killed once the first turn (the tool call and its result) is checkpointed
        killed = run("run", str(agent), "-t", "Remember the city Lyon", "--no-input",
                     env={"MAGENT_FAILPOINT": "after_checkpoint@2"})
        assert killed.code == -9, killed.out + killed.err
        (task_id,) = [p.name for p in (magent_home / "tasks").iterdir()]
        resumed = invoke("resume", task_id, "--no-input")
        assert resumed.code == 0, resumed.out + resumed.err
        assert server.pending == 0, [r.path for r in server.received]
    assert kv_store(task_id) == {"city": "Lyon"}
    assert task_dir(task_id).load_task().result == "Stored: Lyon."
    # the tool result went back to the model in the provider's own format
    assert "stored city" in server.received[-1].text
    calls = llm_calls(task_id)
    assert len(calls) == 2 and calls[0].field("stop_reason") == "tool_calls"
    assert all(c.field("tokens_in") and c.field("tokens_out") for c in calls)
    assert traced_as_sent(task_id)["stream"] is True  # the live view read the text as it came


@pytest.mark.slow
@pytest.mark.parametrize("name,model,suffix", PROVIDERS, ids=[p[0] for p in PROVIDERS])
def test_a_provider_workflow_with_a_reflection_resumed_after_a_kill(
        name: str, model: str, suffix: str, tmp_path: Path, magent_home: Path) -> None:
    """The same small workflow on every provider: an agent's tool call, a reflection by a critic
    on the same model (its verdict a recorded text reply), and a resume after a kill."""
    with ReplayServer(name) as server:
        # (the critic reads no text as it comes: its verdict is asked for whole)
        server.load(name.replace("_tool_stream", "").replace("_stream", "") + "_verdict")
        agent = keeper(tmp_path, model, server.url + suffix)
        critic = write(tmp_path, "critic.yaml", f"""
            name: critic
            role: judges
            system_prompt: Judge strictly.
            llm_config:
              model: {model}
              endpoint: {server.url + suffix}
              api_key: test-key-not-real
              max_retries: 1
            """)
        flow = write(tmp_path, "flow.yaml", f"""
            name: keep_and_review
            entry_point: keep
            nodes:
              keep: {{type: agent, agent: keeper}}
              review: {{type: reflection, critic: critic, criteria: Names the city., max_rounds: 1}}
            edges:
              - {{from: keep, to: review}}
              - {{from: review, to: END}}
            """)
        killed = run("run", str(flow), "-t", "Remember the city Lyon", "--no-input",
                     env={"MAGENT_FAILPOINT": "after_checkpoint@3"})   # after the tool turn
        assert killed.code == -9, killed.out + killed.err
        (task_id,) = [p.name for p in (magent_home / "tasks").iterdir()]
        assert kv_store(task_id) == {"city": "Lyon"} and len(server.received) == 1   # the call ran
        resumed = invoke("resume", task_id, "--no-input", "--json", "--stream")  # streamed, as recorded
        assert resumed.code == 0, resumed.out + resumed.err
        assert server.pending == 0, [r.path for r in server.received]
    assert kv_store(task_id) == {"city": "Lyon"}
    assert task_dir(task_id).load_task().result == "Stored: Lyon."
    verdicts = [e for e in events(task_id) if e.type == "reflection"]
    assert verdicts and verdicts[-1].field("verdict") == "pass", [e.type for e in events(task_id)]
    shown = invoke("trace", task_id)
    assert shown.code == 0 and "verdict pass" in shown.out, shown.out


# Whole (not streamed) replies, as recorded: (fixture, model, path, the second reply's cached prompt tokens)
WHOLE = [
    ("openai_chat_tool", "openai/gpt-4o-mini", "/v1", 1024),
    ("anthropic_messages_tool", "anthropic/claude-sonnet-4-5-20250929", "", 4000),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,model,suffix,cached", WHOLE, ids=[p[0] for p in WHOLE])
def test_a_run_nobody_reads_as_it_comes_asks_for_whole_replies(
        name: str, model: str, suffix: str, cached: int, tmp_path: Path, magent_home: Path) -> None:
    """``--json`` without ``--stream`` (like a batch row, or the API without ``on_token``) has no one
    reading the text as it arrives: each model call asks for the whole reply, and the run, its
    usage and its trace are what a streamed run's are."""
    with ReplayServer(name) as server:
        result = invoke("run", str(keeper(tmp_path, model, server.url + suffix)), "-t", "Remember the city Lyon",
                        "--no-input", "--json")
        assert result.code == 0, result.out + result.err
        assert server.pending == 0, [r.path for r in server.received]
    assert [r.body.get("stream") in (None, False) for r in server.received] == [True, True]
    assert "stored city" in server.received[-1].text  # the tool result, in the provider's own format
    lines = [json.loads(line) for line in result.out.splitlines()]
    assert not [e for e in lines if e.get("type") == "text_delta"]
    task_id = lines[-1]["task_id"]
    assert kv_store(task_id) == {"city": "Lyon"}
    assert task_dir(task_id).load_task().result == "Stored: Lyon."
    calls = llm_calls(task_id)
    assert [c.field("stop_reason") for c in calls] == ["tool_calls", "stop"]
    assert all(c.field("tokens_in") and c.field("tokens_out") and not c.field("estimated") for c in calls)
    assert calls[1].field("cache_read") == cached
    assert traced_as_sent(task_id)["stream"] is False  # nobody read it as it came: asked whole


def test_a_reply_nothing_fits_is_a_loud_400(tmp_path: Path) -> None:
    with ReplayServer() as server:
        agent = keeper(tmp_path, "openai/gpt-4o-mini", server.url + "/v1")
        result = invoke("run", str(agent), "-t", "Remember the city Lyon", "--no-input")
    assert result.code == 1
    assert "no recorded reply fits POST /v1/chat/completions" in result.out + result.err
    assert json.loads(server.received[0].text)["model"] == "gpt-4o-mini"
