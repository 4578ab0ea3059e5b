"""The scripted model: plays a YAML file of responses, keeps its place in an engine-owned dict."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from magent.errors import ConfigError, LLMError
from magent.llm.base import LLMRequest
from magent.llm.factory import make_client, preflight
from magent.llm.scripted import InputCounter, ScriptedClient
from magent.models import LLMConfig, Message
from magent.models.state import ToolCall

SCRIPT = """\
responses:
  - content: "Let me look that up."
    tool_calls:
      - name: kv.get
        arguments: {key: greeting}
      - name: http.fetch
        arguments: '{"url": "http://127.0.0.1/x"}'
  - content: "The greeting is hello."
    usage: {input: 120, output: 9}
  - tool_calls:
      - name: kv.set
        arguments: "{key: not json"
"""


def request(text: str = "what is the greeting?") -> LLMRequest:
    return LLMRequest(model="scripted", messages=[Message(role="user", content=text)],
                      system="You are terse.", agent="writer")


def write(tmp_path: Path, text: str = SCRIPT, name: str = "script.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_plays_responses_in_order_with_deterministic_ids(tmp_path: Path) -> None:
    cursors: dict[str, int] = {}
    client = ScriptedClient(write(tmp_path), agent="writer", cursors=cursors)

    first = asyncio.run(client.complete(request()))
    assert first.content == "Let me look that up."
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("call_writer_1_1", "kv.get", {"key": "greeting"}),
        ("call_writer_1_2", "http.fetch", {"url": "http://127.0.0.1/x"}),
    ]
    assert first.stop_reason == "tool_calls"
    assert (first.model, first.provider, first.cost) == ("scripted", "scripted", 0.0)
    # no usage in the script: ceil(chars / 4) of what went in and came out
    chars_in = len("You are terse.") + len("what is the greeting?")
    assert first.tokens_in == -(-chars_in // 4)
    assert first.tokens_out > 0
    assert cursors == {"writer": 1}

    second = asyncio.run(client.complete(request()))
    assert second.content == "The greeting is hello."
    assert second.tool_calls == []
    assert second.stop_reason == "stop"
    assert (second.tokens_in, second.tokens_out) == (120, 9)
    assert cursors == {"writer": 2}


def test_the_estimate_counts_each_request_s_own_messages_whatever_lists_came_before() -> None:
    """A request's conversation is counted from its own messages. A list built for one request
    and freed before the next often leaves its address to the next request's list (as a
    reflection's critic gets a new one each round): the count once took the new list for the
    old one and went on from its count, so two identical runs could report different input
    tokens."""
    counter = InputCounter()
    m = [Message(role="user", content=t) for t in ("a" * 40, "b" * 40, "c" * 400, "d" * 400, "e" * 4)]
    first = [m[0], m[1]]
    assert counter.chars(first) == 80
    del first
    second = [m[2], m[3], m[4]]  # in CPython, usually the list object ``first`` was
    assert counter.chars(second) == 804
    second.append(m[0])  # the same list grown: only the new message is counted
    assert counter.chars(second) == 844


def test_string_arguments_that_are_not_json_come_back_raw(tmp_path: Path) -> None:
    client = ScriptedClient(write(tmp_path), agent="writer", cursors={"writer": 2})
    reply = asyncio.run(client.complete(request()))
    assert reply.content == ""
    [call] = reply.tool_calls
    assert call.name == "kv.set"
    assert call.arguments is None
    assert call.raw_arguments == "{key: not json"


def test_streams_content_word_by_word(tmp_path: Path) -> None:
    client = ScriptedClient(write(tmp_path), agent="writer", cursors={"writer": 1})
    pieces: list[str] = []
    reply = asyncio.run(client.complete(request(), on_token=pieces.append))
    assert len(pieces) == 4
    assert "".join(pieces) == reply.content == "The greeting is hello."


def test_cursor_survives_a_new_client_as_a_checkpoint_would_restore_it(tmp_path: Path) -> None:
    path = write(tmp_path)
    cursors: dict[str, int] = {}
    asyncio.run(ScriptedClient(path, agent="writer", cursors=cursors).complete(request()))
    # the engine stores the dict in a checkpoint and reads it back after a restart
    restored = json.loads(json.dumps(cursors))
    again = ScriptedClient(path, agent="writer", cursors=restored)
    assert asyncio.run(again.complete(request())).content == "The greeting is hello."
    assert restored == {"writer": 2}


def test_each_agent_has_its_own_place_in_the_same_script(tmp_path: Path) -> None:
    path = write(tmp_path)
    cursors: dict[str, int] = {}
    writer = ScriptedClient(path, agent="writer", cursors=cursors)
    critic = ScriptedClient(path, agent="critic", cursors=cursors)
    asyncio.run(writer.complete(request()))
    asyncio.run(writer.complete(request()))
    assert asyncio.run(critic.complete(request())).content == "Let me look that up."
    assert cursors == {"writer": 2, "critic": 1}


def test_running_out_is_a_clear_llm_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    client = ScriptedClient(write(tmp_path), agent="writer", cursors={"writer": 3})
    with pytest.raises(LLMError) as err:
        asyncio.run(client.complete(request()))
    assert str(err.value) == "scripted model of agent 'writer' has no response #4: script.yaml has 3"


@pytest.mark.parametrize("text, where, says", [
    ("responses:\n  - content: hi\n    tool_calls:\n      - nme: kv.get\n",
     "script.yaml:4:9: responses[0].tool_calls[0].nme:", "did you mean 'name'"),
    ("responses:\n  - content: hi\n  - usage: {input: 1, output: 2}\n",
     "script.yaml:3:5: responses[1]:", "needs content and/or tool_calls"),
    ("responses:\n  - tool_calls:\n      - name: kv.get\n        arguments: 5\n",
     "script.yaml:4:9: responses[0].tool_calls[0].arguments:", "must be a mapping or a string"),
    ("responses:\n  - content: [1, 2\n", "script.yaml:3:1:", "a '[' begins a list that is not closed"),
    ("responses: []\n", "script.yaml:1:", "responses:"),
    ("replies:\n  - content: hi\n", "script.yaml:1:1: replies:", "unknown field 'replies'"),
])
def test_malformed_script_names_file_line_and_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    text: str, where: str, says: str) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, text)
    config = LLMConfig(model="scripted", script="script.yaml")
    with pytest.raises(ConfigError) as err:
        preflight(config, agent="writer", base_dir=tmp_path)
    assert str(err.value).startswith(where)
    assert says in str(err.value)
    assert "\n" not in str(err.value)


def test_make_client_resolves_the_script_next_to_the_agent_file(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    (agents / "scripts").mkdir(parents=True)
    write(agents / "scripts", name="writer.yaml")
    config = LLMConfig(model="scripted", script="scripts/writer.yaml")
    preflight(config, agent="writer", base_dir=agents)
    client = make_client(config, agent="writer", base_dir=agents, cursors={})
    assert client.supports_tools("scripted") is True
    assert asyncio.run(client.complete(request())).content == "Let me look that up."


def test_missing_script_fails_preflight(tmp_path: Path) -> None:
    config = LLMConfig(model="scripted", script="nowhere.yaml")
    with pytest.raises(ConfigError) as err:
        preflight(config, agent="writer", base_dir=tmp_path)
    assert "nowhere.yaml" in str(err.value) and "file not found" in str(err.value)
    with pytest.raises(ConfigError, match="needs a 'script' file"):
        preflight(LLMConfig(model="scripted"), agent="writer", base_dir=tmp_path)


def test_a_scripted_run_never_imports_litellm(tmp_path: Path) -> None:
    write(tmp_path)
    code = textwrap.dedent(f"""
        import asyncio, sys
        from pathlib import Path
        import magent.llm, magent.testing
        from magent.llm.base import LLMRequest
        from magent.llm.factory import make_client, preflight
        from magent.models import LLMConfig, Message
        config = LLMConfig(model="scripted", script="script.yaml")
        base = Path({str(tmp_path)!r})
        preflight(config, agent="writer", base_dir=base)
        client = make_client(config, agent="writer", base_dir=base, cursors={{}})
        request = LLMRequest(model="scripted", messages=[Message(role="user", content="hi")])
        reply = asyncio.run(client.complete(request, on_token=lambda t: None))
        assert reply.tool_calls[0].name == "kv.get"
        print("litellm" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_a_reply_can_quote_the_tool_results_it_was_given(tmp_path: Path) -> None:
    """``quote_results``: the reply reads the results since the model last spoke, as a model would."""
    script = tmp_path / "s.yaml"
    script.write_text('responses:\n  - content: "It is {results[0][time]:.5} and {results[1]}."\n'
                      '    quote_results: true\n  - content: "{results[2]}"\n    quote_results: true\n')
    said = [Message(role="user", content="time?"), Message(role="assistant", content="looking"),
            Message(role="tool", content='{"time": "09:30:00"}'), Message(role="tool", content="sunny")]
    client = ScriptedClient(script, agent="a", cursors={})
    reply = asyncio.run(client.complete(LLMRequest(model="scripted", messages=said)))
    assert reply.content == "It is 09:30 and sunny."
    with pytest.raises(LLMError, match="names a result the tools did not give"):
        asyncio.run(client.complete(LLMRequest(model="scripted", messages=said)))


def test_quoted_results_follow_the_calls_not_the_order_they_landed_in(tmp_path: Path) -> None:
    """Two calls run side by side and the second one's result was written first (the world
    clock example then failed, now and then): ``results[0]`` is still the first call's."""
    script = tmp_path / "s.yaml"
    script.write_text('responses:\n  - content: "{results[0][time]} then {results[1]}"\n    quote_results: true\n')
    calls = [ToolCall(id="c1", server="clock", tool="now"), ToolCall(id="c2", server="sky", tool="weather")]
    said = [Message(role="user", content="time?"), Message(role="assistant", content="", tool_calls=calls),
            Message(role="tool", tool_call_id="c2", content="sunny"),
            Message(role="tool", tool_call_id="c1", content='{"time": "09:30"}')]
    reply = asyncio.run(ScriptedClient(script, agent="a", cursors={}).complete(LLMRequest(model="scripted", messages=said)))
    assert reply.content == "09:30 then sunny"
