"""``magent run --json --stream`` (issue 12 item 6): the model's text as it arrives, as JSON
lines between the events, for a UI built on the stream; the last line stays the AgentResult,
and the deltas never reach events.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import invoke
from support.engine import task_dir, write


def talker(folder: Path) -> Path:
    write(folder, "talk.yaml", """
        responses:
          - content: "Let me look."
            tool_calls: [{name: kv.set, arguments: {key: seen, value: "yes"}}]
          - content: "Tidy holds everything and clears a desk fast."
        """)
    return write(folder, "talker.yaml", """
        name: talker
        role: answers
        system_prompt: Answer briefly.
        tools: [kv.*]
        llm_config: {model: scripted, script: talk.yaml}
        """)


def test_json_stream_interleaves_text_deltas_with_events(tmp_path: Path) -> None:
    r = invoke("run", str(talker(tmp_path)), "-t", "sum up", "--json", "--stream")
    assert r.code == 0, r.err
    lines = [json.loads(line) for line in r.out.splitlines()]
    result = lines[-1]
    assert result["status"] == "completed" and result["output"] == "Tidy holds everything and clears a desk fast."
    # The pieces before each model call's record join to its reply.
    replies = [i for i, line in enumerate(lines) if line.get("type") == "llm_call"]
    assert len(replies) == 2
    start = 0
    for at in replies:
        mine = [line for line in lines[start:at] if line.get("type") == "text_delta"]
        assert "".join(d["text"] for d in mine) == lines[at]["response"]["content"]
        assert len(mine) > 1 and all(d["node"] == "talker" and d["agent"] == "talker" for d in mine)
        start = at
    assert not any(line.get("type") == "text_delta" for line in lines[start:])
    # Nothing of them on disk: events.jsonl and the trace hold the replies once, as llm_call.
    on_disk = task_dir(result["task_id"]).events_file.read_text()
    assert "text_delta" not in on_disk


def test_json_without_stream_has_no_deltas(tmp_path: Path) -> None:
    r = invoke("run", str(talker(tmp_path)), "-t", "sum up", "--json")
    assert r.code == 0, r.err
    assert "text_delta" not in r.out


def test_stream_without_json_is_a_usage_error(tmp_path: Path, magent_home: Path) -> None:
    r = invoke("run", str(talker(tmp_path)), "-t", "sum up", "--stream")
    assert r.code == 2
    assert r.err.strip().splitlines() == ["magent: error: --stream goes with --json (the terminal view "
                                          "streams the answer already)"]
    assert not (magent_home / "tasks").exists() or not any((magent_home / "tasks").iterdir())


def test_chat_json_stream_streams_the_follow_up(tmp_path: Path) -> None:
    write(tmp_path, "talk.yaml", """
        responses:
          - content: "Tidy holds everything."
          - content: "Tidy clears desks fast."
        """)
    agent = write(tmp_path, "talker.yaml", """
        name: talker
        role: answers
        system_prompt: Answer briefly.
        llm_config: {model: scripted, script: talk.yaml}
        """)
    first = invoke("chat", str(agent), "sum up", "--json")
    task_id = json.loads(first.out.splitlines()[-1])["task_id"]
    r = invoke("chat", task_id[:8], "shorter", "--json", "--stream")
    assert r.code == 0, r.err
    lines = [json.loads(line) for line in r.out.splitlines()]
    assert lines[0]["type"] == "run_started" and lines[0]["follow_up"] == "shorter"
    deltas = [line["text"] for line in lines if line.get("type") == "text_delta"]
    assert "".join(deltas) == "Tidy clears desks fast." and len(deltas) > 1
    assert lines[-1]["type"] == "result" and lines[-1]["output"] == "Tidy clears desks fast."
