"""``magent trace ID --step N --request``: the exact request a model call sent, for any step,
with each distinct system prompt and tool set stored once per task."""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import invoke
from support.engine import write

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _run(*args: str) -> str:
    result = invoke("run", *args, "--no-input")
    assert result.code in (0, 3), result.out + result.err
    return result.out.split()[1]


def _request(task_id: str, step: int) -> list[dict]:
    result = invoke("trace", task_id, "--step", str(step), "--request", "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def _pieces(home: Path, task_id: str) -> list[dict]:
    text = (home / "tasks" / task_id / "requests.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def test_a_react_turn_shows_system_prompt_conversation_tools_and_parameters(magent_home: Path) -> None:
    task_id = _run(str(EXAMPLES / "agents/note_taker.yaml"), "-t", "Remember the meeting")
    [call] = _request(task_id, 3)  # turn 1: after one kv.set call and its result
    assert call["agent"] == "note_taker" and call["iteration"] == 1
    body = call["request"]
    assert body["model"] == "scripted" and body["temperature"] == 0.7 and body["stream"] is True
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "tool"]
    assert body["messages"][0]["content"].startswith("You are a careful assistant with a key-value store")
    assert body["messages"][1]["content"] == "Remember the meeting"
    [sent_call] = body["messages"][2]["tool_calls"]
    assert sent_call["function"]["name"] == "kv__set"  # the provider-safe name, as sent
    assert body["messages"][3]["tool_call_id"] == sent_call["id"]
    assert body["messages"][3]["content"] == "stored meeting"
    assert sorted(t["function"]["name"] for t in body["tools"]) == ["kv__delete", "kv__get", "kv__list", "kv__set"]
    assert call["settings"] == {"timeout": 120, "max_retries": 3}

    shown = invoke("trace", task_id, "--step", "3", "--request")
    assert shown.code == 0
    for text in ("step 3 · model call 1 of 1 · note_taker · turn 1", "sent to scripted", "system  stored once as",
                 "Remember the meeting", '→ kv__set {"key": "meeting"', "tools (4)", "kv__get  Read the value"):
        assert text in shown.out, text


def test_three_turns_store_the_system_prompt_and_the_tool_set_once(magent_home: Path) -> None:
    task_id = _run(str(EXAMPLES / "agents/note_taker.yaml"), "-t", "Remember the meeting")
    calls = [_request(task_id, n)[0] for n in (2, 3, 4)]
    assert len({c["stored"]["system"] for c in calls}) == 1 and len({c["stored"]["tools"] for c in calls}) == 1
    assert [len(c["request"]["messages"]) for c in calls] == [2, 4, 6]
    assert sorted(p["kind"] for p in _pieces(magent_home, task_id)) == ["params", "system", "tools"]


def test_a_resumed_task_does_not_store_its_prompts_again(magent_home: Path) -> None:
    task_id = _run(str(EXAMPLES / "workflows/publish.yaml"), "-t", "Office closed Friday")
    assert invoke("resume", task_id, "--reject", "--message", "Say which Friday", "--no-input").code == 3
    assert invoke("resume", task_id, "--approve", "--no-input").code == 0
    hashes = [p["hash"] for p in _pieces(magent_home, task_id)]
    assert len(hashes) == len(set(hashes))
    assert [p["kind"] for p in _pieces(magent_home, task_id)].count("system") == 1


def test_text_mode_shows_the_tool_instructions_and_observations_the_model_read(
        magent_home: Path, tmp_path: Path) -> None:
    agent = (EXAMPLES / "agents/note_taker.yaml").read_text() + "tool_calling: text\n"
    write(tmp_path, "note_taker.yaml", agent.replace("script: scripts/", f"script: {EXAMPLES}/agents/scripts/"))
    task_id = _run(str(tmp_path / "note_taker.yaml"), "-t", "Remember the meeting")
    [call] = _request(task_id, 3)
    body = call["request"]
    assert "tools" not in body and call["settings"]["text_mode"] is True
    assert "You can use these tools:" in body["messages"][0]["content"]
    assert "- kv.set: Store a value" in body["messages"][0]["content"]
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert body["messages"][3]["content"].startswith("Observation: ")
    assert "text mode" in invoke("trace", task_id, "--step", "3", "--request").out


def test_a_critic_request_is_its_own_prompt_with_the_output_and_criteria(magent_home: Path) -> None:
    task_id = _run(str(EXAMPLES / "workflows/write_review.yaml"), "-t", "copy for Tidy")
    steps = json.loads(invoke("trace", task_id, "--json").out)["steps"]
    review = next(n for n, s in enumerate(steps, 1) if s.get("kind") == "reflection")
    [call] = _request(task_id, review)
    body = call["request"]
    assert call["agent"] == "critic" and body["max_tokens"] == 1024 and body["temperature"] == 0
    [system, user] = body["messages"]
    assert system["content"].startswith("You are a strict editor.")
    assert "Criteria:\nOne or two sentences" in user["content"] and "Output:\n" in user["content"]
    assert "messages" in call["stored"]


def test_steps_without_a_model_call_and_a_request_without_a_step_are_usage_errors(magent_home: Path) -> None:
    task_id = _run(str(EXAMPLES / "agents/note_taker.yaml"), "-t", "Remember")
    node_step = invoke("trace", task_id, "--step", "1", "--request")
    assert node_step.code == 2
    assert "step 1 of task" in node_step.err and "made no model call (steps with model calls: 2, 3, 4)" in node_step.err
    assert invoke("trace", task_id, "--request").code == 2
    assert invoke("trace", task_id, "--step", "99", "--request").code == 2


def test_a_call_recorded_without_its_request_says_so(magent_home: Path) -> None:
    task_id = _run(str(EXAMPLES / "agents/note_taker.yaml"), "-t", "Remember")
    events = magent_home / "tasks" / task_id / "events.jsonl"
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    for line in lines:
        line.pop("request", None)  # as a magent before this feature wrote them
    events.write_text("".join(json.dumps(line) + "\n" for line in lines))
    shown = invoke("trace", task_id, "--step", "2", "--request")
    assert shown.code == 0 and "not recorded" in shown.out


def test_a_prompt_stored_once_is_stored_again_when_it_changes_or_a_new_secret_must_be_masked(tmp_path: Path) -> None:
    """The record of a call knows the prompt, tools and parameters it stored before by what they
    were made from: a changed prompt, and the same prompt once the run learns a secret it holds,
    are new pieces (masked)."""
    from magent.engine.sent import record
    from magent.llm.base import LLMRequest, ToolSpec
    from magent.redact import Redactor
    from magent.store.requests import RequestLog

    pieces, redactor = RequestLog(tmp_path / "requests.jsonl"), Redactor(set(), ())
    tools = [ToolSpec(name="kv.get", description="Read a key.", parameters={"type": "object"})]

    def sent(system: str) -> dict:
        return record(LLMRequest(model="scripted", messages=[], system=system, tools=tools,
                                 conversation_leaf="e1"), pieces, redactor)

    first, again = sent("Use the token tok-12345678."), sent("Use the token tok-12345678.")
    assert first == again and len(pieces.load()) == 3
    changed = sent("Use no token.")
    assert changed != first and len(pieces.load()) == 5       # a new prompt, new parameters
    redactor.add({"tok-12345678"})
    masked = sent("Use the token tok-12345678.")
    assert masked != first and "Use the token [REDACTED]." in pieces.load().values()
    pieces.close()
