"""How a reply ended decides what it is: a reply cut at the output limit is continued or fails,
never silently the answer; a refusal or a content filter fails the node at once (or pauses for a
person), never loops. Real provider replies, replayed on 127.0.0.1 (tests/support/replay_server.py;
the fixtures in tests/fixtures/providers cite their recordings)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli import invoke
from support.engine import events, task_dir, write
from support.replay_server import ReplayServer, fixture

OPENAI = ("openai/gpt-4o-mini", "/v1")
ANTHROPIC = ("anthropic/claude-sonnet-4-5-20250929", "")
GEMINI = ("gemini/gemini-2.5-flash", "/v1beta")


def secretary(folder: Path, model: str, endpoint: str, extra: str = "") -> Path:
    return write(folder, "secretary.yaml", f"""
        name: secretary
        role: answers questions about meetings
        system_prompt: Answer in one sentence.
        llm_config:
          model: {model}
          endpoint: {endpoint}
          api_key: test-key-not-real
          max_tokens: 12
          max_retries: 0
        {extra}
        """)


def only_task(home: Path) -> str:
    (task_id,) = [p.name for p in (home / "tasks").iterdir()]
    return task_id


def model_calls(task_id: str) -> list:
    return [e for e in events(task_id) if e.type == "llm_call" and not e.field("error")]


def test_a_reply_cut_at_max_tokens_is_continued_and_joined(tmp_path: Path, magent_home: Path) -> None:
    with ReplayServer("openai_chat_length_stream") as server:
        result = invoke("run", str(secretary(tmp_path, OPENAI[0], server.url + OPENAI[1])),
                        "-t", "When is the meeting?", "--no-input")
        assert server.pending == 0
    assert result.code == 0, result.out + result.err
    task_id = only_task(magent_home)
    assert task_dir(task_id).load_task().result == "The meeting is on Thursday at 10:00 in room 4."
    second = json.loads(server.received[1].text)["messages"]
    assert second[-2] == {"role": "assistant", "content": "The meeting is on Thursday at 10:00 in ro"}
    assert second[-1]["role"] == "user" and "cut off at the output limit" in second[-1]["content"]
    assert [c.field("stop_reason") for c in model_calls(task_id)] == ["length", "stop"]


def test_a_reply_still_cut_after_two_continuations_fails_naming_the_limit(tmp_path: Path,
                                                                          magent_home: Path) -> None:
    with ReplayServer("anthropic_max_tokens_stream") as server:
        result = invoke("run", str(secretary(tmp_path, ANTHROPIC[0], server.url + ANTHROPIC[1])),
                        "-t", "When is the meeting?", "--no-input")
    assert result.code == 1, result.out + result.err
    assert len(server.received) == 3  # the reply, then two continuations
    error = task_dir(only_task(magent_home)).load_task().error
    assert error == ("agent 'secretary': the reply of model anthropic/claude-sonnet-4-5-20250929 was cut off "
                     "at the output limit (llm_config.max_tokens: 12) after 2 continuations; raise max_tokens "
                     "or ask for a shorter answer")
    assert "Thursday at 10:00 in ro" not in result.out.splitlines()[-1]  # never shown as the answer


def test_on_truncation_fail_fails_at_the_first_cut(tmp_path: Path, magent_home: Path) -> None:
    with ReplayServer("gemini_max_tokens_stream") as server:
        agent = secretary(tmp_path, GEMINI[0], server.url + GEMINI[1], extra="on_truncation: fail")
        result = invoke("run", str(agent), "-t", "When is the meeting?", "--no-input")
    assert result.code == 1, result.out + result.err
    assert len(server.received) == 1
    task = task_dir(only_task(magent_home)).load_task()
    assert task.error == ("agent 'secretary': the reply of model gemini/gemini-2.5-flash was cut off at the "
                          "output limit (llm_config.max_tokens: 12); on_truncation is fail")
    assert task.error in result.out


@pytest.mark.parametrize("name, target, said", [
    ("openai_chat_refusal_stream", OPENAI,
     "the model refused to answer: \"I'm sorry, I can't help with that request.\""),
    ("openai_chat_content_filter_stream", OPENAI,
     "the provider's content filter blocked the reply (finish reason content_filter)"),
    ("gemini_safety_stream", GEMINI,
     "the provider's content filter blocked the reply (finish reason content_filter)"),
    ("gemini_prompt_blocked_stream", GEMINI,
     "the provider's content filter blocked the reply (finish reason content_filter)"),
], ids=["openai-refusal", "openai-content-filter", "gemini-safety", "gemini-prompt-blocked"])
def test_a_refusal_or_a_content_filter_fails_the_node_at_once(name: str, target: tuple, said: str,
                                                              tmp_path: Path, magent_home: Path) -> None:
    with ReplayServer(name) as server:
        result = invoke("run", str(secretary(tmp_path, target[0], server.url + target[1])),
                        "-t", "When is the meeting?", "--no-input")
    assert result.code == 1, result.out + result.err
    assert len(server.received) == 1  # never "Your reply was empty" and again
    task_id = only_task(magent_home)
    error = task_dir(task_id).load_task().error
    assert error == f"agent 'secretary': {said} (model {target[0]})"
    kinds = [e.field("error_type") for e in events(task_id) if e.type == "error"]
    assert kinds == ["refusal"]


def test_on_refusal_pause_asks_a_person_and_approve_asks_the_model_again(tmp_path: Path,
                                                                         magent_home: Path) -> None:
    answer = {k: v for k, v in fixture("openai_chat_tool_stream")["interactions"][1].items() if k != "when"}
    with ReplayServer("openai_chat_refusal_stream") as server:
        server.add(answer)  # the recorded text answer ("Stored: Lyon.") for the second ask
        agent = secretary(tmp_path, OPENAI[0], server.url + OPENAI[1], extra="on_refusal: pause")
        paused = invoke("run", str(agent), "-t", "When is the meeting?", "--no-input")
        assert paused.code == 3, paused.out + paused.err
        task_id = only_task(magent_home)
        checkpoints = task_dir(task_id).checkpoints
        request = checkpoints.read(checkpoints.last_number()).human_request
        assert request.kind == "refusal" and "the model refused to answer" in request.question
        resumed = invoke("resume", task_id, "--approve", "--message", "It is a public calendar.", "--no-input")
        assert resumed.code == 0, resumed.out + resumed.err
    assert task_dir(task_id).load_task().result == "Stored: Lyon."
    sent = json.loads(server.received[1].text)["messages"]
    assert sent[-2]["content"] == "I'm sorry, I can't help with that request."
    assert sent[-1]["content"] == "[a person, approve] It is a public calendar."


def test_on_truncation_and_on_refusal_are_checked_when_loading(tmp_path: Path) -> None:
    agent = secretary(tmp_path, *OPENAI, extra="on_truncation: retry")
    result = invoke("validate", str(agent))
    assert result.code == 2
    assert "on_truncation" in result.err and "Traceback" not in result.err
